//! The `/` and `@` popup as the state keeps it: recomputed after every edit, its keys, and what
//! completing an item does (the popup's items and its kinds are `crate::app::completion`'s).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{AppEffect, AppState};
use crate::app::completion::{agent_slash_items, slash_items, Popup, PopupItem, PopupKind};
use crate::app::list::ListSelection;
use crate::app::mentions::{self, FileIndex};

impl AppState {
    /// Recomputes the popup for the input as it is now; may ask for the file list.
    pub(crate) fn refresh_popup(&mut self) -> Vec<AppEffect> {
        let previous_popup = self.popup.take();
        let previous_kind = previous_popup.as_ref().map(|popup| popup.kind.clone());
        let previous = previous_popup.map(|popup| popup.selection);
        let text = self.composer.text();
        if self.popup_dismissed_for.as_deref() == Some(text.as_str()) {
            return Vec::new();
        }
        self.popup_dismissed_for = None;
        let before = self.composer.before_cursor();
        let mut effects = Vec::new();
        if text.starts_with('/') && !text.contains(char::is_whitespace) {
            let mut items = slash_items(&text);
            items.extend(agent_slash_items(
                &text,
                &self.agent_status.commands,
                &self.provider,
            ));
            self.popup = Some(Popup {
                kind: PopupKind::Slash,
                replaces: before.chars().count(),
                items,
                selection: ListSelection::default(),
                empty_note: "no such command",
            });
        } else if let Some(query) = mentions::mention_before_cursor(&before)
            // After `path:` the user is typing a line range, not a file.
            .filter(|query| !query.contains(':'))
        {
            let mention_starts = !matches!(previous_kind, Some(PopupKind::Mention));
            match self.files {
                FileIndex::NotListed => {
                    self.files = FileIndex::Listing;
                    effects.push(AppEffect::ListFiles);
                }
                // Each new mention lists again (files come and go); the old list serves until
                // the new one arrives.
                FileIndex::Listed(_) if mention_starts => effects.push(AppEffect::ListFiles),
                FileIndex::Listed(_) | FileIndex::Listing => {}
            }
            let items = mentions::rank(query, self.files.files(), mentions::MAX_SUGGESTIONS + 1)
                .into_iter()
                // The folder just completed is not offered again: what is in it is (a file
                // typed whole still is: Tab or Enter takes it).
                .filter(|path| !(mentions::is_folder(path) && path == query))
                .take(mentions::MAX_SUGGESTIONS)
                .map(|path| PopupItem {
                    completion: mentions::mention_text(&path),
                    label: path,
                    key: String::new(),
                    detail: String::new(),
                    action: None,
                    agent: false,
                })
                .collect();
            self.popup = Some(Popup {
                kind: PopupKind::Mention,
                replaces: query.chars().count() + 1,
                items,
                selection: ListSelection::default(),
                empty_note: if self.files == FileIndex::Listing {
                    "listing files…"
                } else {
                    match self.files_cut_from {
                        Some(_) => "no matching file among the paths listed (the list is cut)",
                        None => "no matching file",
                    }
                },
            });
        }
        // Keep the selection while the same list is being narrowed.
        if let (Some(popup), Some(selection)) = (self.popup.as_mut(), previous) {
            if selection.selected < popup.items.len() {
                popup.selection = selection;
            }
        }
        effects
    }

    /// The file list was cut: `found` paths (at least) where it keeps
    /// [`mentions::MAX_FILES`]. Said once.
    pub(crate) fn on_file_list_cut(&mut self, found: usize) {
        if self.files_cut_from.is_none() {
            self.notice(
                crate::app::transcript::NoticeLevel::Info,
                format!(
                    "This folder has more than {} files and folders (at least {found}): `@` lists the {} shallowest.",
                    mentions::MAX_FILES,
                    mentions::MAX_FILES
                ),
            );
        }
        self.files_cut_from = Some(found);
    }

    /// The file list arrived (see `AppEffect::ListFiles`).
    pub fn on_files_listed(&mut self, files: Vec<String>) -> Vec<AppEffect> {
        self.files = FileIndex::Listed(files);
        if self.popup.is_some() {
            return self.refresh_popup();
        }
        Vec::new()
    }

    /// Keys for a visible popup; None when the key is not the popup's (it goes to the input).
    pub(crate) fn on_popup_key(&mut self, key: KeyEvent) -> Option<Vec<AppEffect>> {
        let popup = self.popup.as_mut()?;
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Esc => {
                self.popup = None;
                self.popup_dismissed_for = Some(self.composer.text());
                Some(Vec::new())
            }
            KeyCode::Tab if plain => Some(self.complete_selected(false)),
            KeyCode::Enter if plain && !popup.items.is_empty() => {
                Some(self.complete_selected(true))
            }
            KeyCode::Up
            | KeyCode::Down
            | KeyCode::BackTab
            | KeyCode::PageUp
            | KeyCode::PageDown => {
                let count = popup.items.len();
                popup.selection.on_key(key, count);
                Some(Vec::new())
            }
            KeyCode::Char('p' | 'n') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                let count = popup.items.len();
                popup.selection.on_key(key, count);
                Some(Vec::new())
            }
            _ => None,
        }
    }

    /// Completes the selected item; `run`: Enter on a `/` command runs it (`/provider` with no
    /// name opens the picker).
    fn complete_selected(&mut self, run: bool) -> Vec<AppEffect> {
        let Some(popup) = self.popup.take() else {
            return Vec::new();
        };
        let Some(item) = popup.items.get(popup.selection.selected).cloned() else {
            return Vec::new();
        };
        match (popup.kind, item.action) {
            (PopupKind::Slash, Some(action)) if run => {
                self.composer.set_text("");
                self.perform(action, None)
            }
            // The agent's command that takes nothing more: Enter sends it to the agent.
            (PopupKind::Slash, None) if run && item.agent && !item.completion.ends_with(' ') => {
                self.composer
                    .replace_before_cursor(popup.replaces, &item.completion);
                self.submit()
            }
            // An image file is attached rather than mentioned.
            (PopupKind::Mention, _) if crate::attachment::has_image_name(&item.label) => {
                self.attach_mentioned(popup.replaces, &item.label, &item.completion)
            }
            (PopupKind::Mention, _) if !mentions::is_folder(&item.label) => {
                self.composer
                    .replace_before_cursor(popup.replaces, &item.completion);
                // The file is chosen: the popup stays shut (Enter now sends) until the text
                // changes; `:10-20` or a space can follow the path directly.
                self.popup_dismissed_for = Some(self.composer.text());
                Vec::new()
            }
            _ => {
                // A `/command`, or a folder: the popup goes on (into the folder).
                self.composer
                    .replace_before_cursor(popup.replaces, &item.completion);
                self.refresh_popup()
            }
        }
    }
}
