//! Keys while an overlay is open: each overlay's handler, one per overlay.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{AppEffect, AppState};
use crate::app::conversation_picker::PickerOutcome;
use crate::app::list::{scroll_key, ListSelection};
use crate::app::menu::{Action, Overlay};
use crate::app::transcript::NoticeLevel;
use crate::orchestrator::Command;
use crate::provider::PROVIDER_NAMES;

impl AppState {
    pub(super) fn on_overlay_key(&mut self, key: KeyEvent) -> Vec<AppEffect> {
        let Some(overlay) = self.overlay.take() else {
            return Vec::new();
        };
        let up = matches!(key.code, KeyCode::Up | KeyCode::BackTab)
            || (key.code == KeyCode::Char('p') && key.modifiers.contains(KeyModifiers::CONTROL));
        let down = matches!(key.code, KeyCode::Down | KeyCode::Tab)
            || (key.code == KeyCode::Char('n') && key.modifiers.contains(KeyModifiers::CONTROL));
        match overlay {
            Overlay::Menu { selected } => {
                let count = Action::ALL.len();
                let mut list = ListSelection::at(selected);
                match key.code {
                    KeyCode::Esc => {}
                    KeyCode::Enter => {
                        return self.perform(Action::ALL[selected.min(count - 1)], None)
                    }
                    _ => {
                        list.on_key(key, count);
                        self.overlay = Some(Overlay::Menu {
                            selected: list.selected,
                        });
                    }
                }
            }
            Overlay::Help { scroll } => {
                if !matches!(
                    key.code,
                    KeyCode::Esc | KeyCode::Enter | KeyCode::F(1) | KeyCode::Char('q')
                ) {
                    let limit = self
                        .help_scroll_limit
                        .get()
                        .min(crate::app::keymap::KEYMAP.len() * 4);
                    let scroll = scroll.min(limit);
                    let scroll = scroll_key(key, scroll, limit + 1).unwrap_or(scroll);
                    self.overlay = Some(Overlay::Help { scroll });
                }
            }
            Overlay::ProviderPicker { selected } => {
                let count = PROVIDER_NAMES.len();
                let mut list = ListSelection::at(selected);
                match key.code {
                    KeyCode::Esc => {}
                    KeyCode::Enter => {
                        let name = PROVIDER_NAMES[selected.min(count - 1)];
                        if name == self.provider {
                            return Vec::new();
                        }
                        return self.switch_provider(name);
                    }
                    _ => {
                        list.on_key(key, count);
                        self.overlay = Some(Overlay::ProviderPicker {
                            selected: list.selected,
                        });
                    }
                }
            }
            Overlay::HistorySearch {
                mut query,
                selected,
            } => {
                let matches = self.history_matches(&query);
                let mut list = ListSelection::at(selected);
                match key.code {
                    KeyCode::Esc => {}
                    KeyCode::Enter | KeyCode::Tab => {
                        if let Some(prompt) = matches.get(selected) {
                            self.composer.set_text(prompt);
                        }
                    }
                    KeyCode::Char('r') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                        // Ctrl+R again: the next older match, as in a shell.
                        list.selected = (selected + 1).min(matches.len().saturating_sub(1));
                        self.overlay = Some(Overlay::HistorySearch {
                            query,
                            selected: list.selected,
                        });
                    }
                    KeyCode::Backspace => {
                        query.pop();
                        self.overlay = Some(Overlay::HistorySearch { query, selected: 0 });
                    }
                    KeyCode::Char(ch)
                        if !key
                            .modifiers
                            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
                    {
                        query.push(ch);
                        self.overlay = Some(Overlay::HistorySearch { query, selected: 0 });
                    }
                    _ => {
                        list.on_key(key, matches.len());
                        self.overlay = Some(Overlay::HistorySearch {
                            query,
                            selected: list.selected,
                        });
                    }
                }
            }
            Overlay::Conversations(mut picker) => match picker.on_key(key) {
                PickerOutcome::Open => self.overlay = Some(Overlay::Conversations(picker)),
                PickerOutcome::Close => {}
                PickerOutcome::Chosen(summary) => {
                    if picker.current.as_deref() == Some(summary.id.as_str()) {
                        self.notice(NoticeLevel::Info, "That is the conversation you are in.");
                        return Vec::new();
                    }
                    return vec![AppEffect::ResumeConversation(summary)];
                }
            },
            Overlay::Settings(mut draft) => match key.code {
                KeyCode::Esc if draft.typing.is_some() => {
                    draft.typing = None;
                    draft.problem = None;
                    self.overlay = Some(Overlay::Settings(draft));
                }
                KeyCode::Esc => {}
                KeyCode::Enter => {
                    if draft.typing.is_some() {
                        // Enter ends the typing; a second Enter saves.
                        draft.commit_typing();
                        self.overlay = Some(Overlay::Settings(draft));
                        return Vec::new();
                    }
                    if let Err(problems) = draft.policy.validate() {
                        draft.problem = Some(
                            problems
                                .iter()
                                .map(ToString::to_string)
                                .collect::<Vec<_>>()
                                .join("; "),
                        );
                        self.overlay = Some(Overlay::Settings(draft));
                        return Vec::new();
                    }
                    let policy = draft.policy;
                    self.retry_policy = policy.clone();
                    let command = AppEffect::Command(Command::SetRetryPolicy(policy.clone()));
                    if self.config_path.is_none() {
                        // One notice per save: here, or from the save's result.
                        self.notice(
                            NoticeLevel::Info,
                            "Retry policy changed for this run (no config file location is known)",
                        );
                        return vec![command];
                    }
                    return vec![command, AppEffect::SaveRetryPolicy(policy)];
                }
                KeyCode::Backspace if draft.typing.is_some() => {
                    draft.backspace();
                    self.overlay = Some(Overlay::Settings(draft));
                }
                KeyCode::Char(ch) if draft.type_char(ch) => {
                    self.overlay = Some(Overlay::Settings(draft));
                }
                KeyCode::Left | KeyCode::Char('-') => {
                    draft.typing = None;
                    draft.adjust(false);
                    self.overlay = Some(Overlay::Settings(draft));
                }
                KeyCode::Right | KeyCode::Char('+') | KeyCode::Char(' ') => {
                    draft.typing = None;
                    draft.adjust(true);
                    self.overlay = Some(Overlay::Settings(draft));
                }
                _ => {
                    if (up || down) && draft.commit_typing() {
                        draft.move_selection(down);
                    }
                    self.overlay = Some(Overlay::Settings(draft));
                }
            },
        }
        Vec::new()
    }
}
