//! Keys while an overlay is open: each overlay's handler, one per overlay.

use crossterm::event::{KeyCode, KeyEvent};

use super::{AppEffect, AppState};
use crate::app::conversation_picker::{ConversationPicker, PickerOutcome};
use crate::app::history_search::{HistorySearch, HistorySearchOutcome};
use crate::app::list::{scroll_key, ListSelection};
use crate::app::menu::{Action, Overlay};
use crate::app::settings::{SettingsDraft, SettingsOutcome};
use crate::app::transcript::NoticeLevel;
use crate::orchestrator::Command;
use crate::provider::PROVIDER_NAMES;

impl AppState {
    pub(super) fn on_overlay_key(&mut self, key: KeyEvent) -> Vec<AppEffect> {
        let Some(overlay) = self.overlay.take() else {
            return Vec::new();
        };
        match overlay {
            Overlay::Menu { selected } => self.on_menu_key(selected, key),
            Overlay::Help { scroll } => self.on_help_key(scroll, key),
            Overlay::ProviderPicker { selected } => self.on_provider_picker_key(selected, key),
            Overlay::HistorySearch(search) => self.on_history_search_key(search, key),
            Overlay::Conversations(picker) => self.on_conversations_key(picker, key),
            Overlay::Settings(draft) => self.on_settings_key(draft, key),
            Overlay::ModelPicker(picker) => self.on_model_picker_key(picker, key),
            Overlay::Diff(view) => self.on_diff_key(view, key),
            Overlay::ConfirmUndo(confirm) => self.on_confirm_undo_key(confirm, key),
            Overlay::Rewind(picker) => self.on_rewind_key(picker, key),
        }
    }

    /// The action menu: Enter runs the selected action.
    fn on_menu_key(&mut self, selected: usize, key: KeyEvent) -> Vec<AppEffect> {
        let count = Action::ALL.len();
        let mut list = ListSelection::at(selected);
        match key.code {
            KeyCode::Esc => {}
            KeyCode::Enter => return self.perform(Action::ALL[selected.min(count - 1)], None),
            _ => {
                list.on_key(key, count);
                self.overlay = Some(Overlay::Menu {
                    selected: list.selected,
                });
            }
        }
        Vec::new()
    }

    /// The key help: scrolling keys scroll it; Esc, Enter, F1 and q close it.
    fn on_help_key(&mut self, scroll: usize, key: KeyEvent) -> Vec<AppEffect> {
        if !matches!(
            key.code,
            KeyCode::Esc | KeyCode::Enter | KeyCode::F(1) | KeyCode::Char('q')
        ) {
            let limit = self
                .help_scroll_limit
                .get()
                .min(crate::app::keymap::help_len() * 4);
            let scroll = scroll.min(limit);
            let scroll = scroll_key(key, scroll, limit + 1).unwrap_or(scroll);
            self.overlay = Some(Overlay::Help { scroll });
        }
        Vec::new()
    }

    /// The provider picker: Enter switches to the selected provider.
    fn on_provider_picker_key(&mut self, selected: usize, key: KeyEvent) -> Vec<AppEffect> {
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
        Vec::new()
    }

    /// Ctrl+R: typing narrows the earlier prompts; Enter or Tab puts the selected one in the
    /// editor.
    fn on_history_search_key(
        &mut self,
        mut search: HistorySearch,
        key: KeyEvent,
    ) -> Vec<AppEffect> {
        let matches = self.history_matches(&search.query);
        match search.on_key(key, &matches) {
            HistorySearchOutcome::Open => self.overlay = Some(Overlay::HistorySearch(search)),
            HistorySearchOutcome::Close => {}
            HistorySearchOutcome::Chosen(prompt) => self.composer.set_text(&prompt),
        }
        Vec::new()
    }

    /// The `/resume` picker: Enter reopens the chosen conversation.
    fn on_conversations_key(
        &mut self,
        mut picker: ConversationPicker,
        key: KeyEvent,
    ) -> Vec<AppEffect> {
        match picker.on_key(key) {
            PickerOutcome::Open => self.overlay = Some(Overlay::Conversations(picker)),
            PickerOutcome::Close => {}
            PickerOutcome::Chosen(summary) => {
                if picker.current.as_deref() == Some(summary.id.as_str()) {
                    self.notice(NoticeLevel::Info, "That is the conversation you are in.");
                    return Vec::new();
                }
                return vec![AppEffect::ResumeConversation(*summary)];
            }
        }
        Vec::new()
    }

    /// The settings: arrows and typed numbers edit the retry policy; Enter saves it.
    fn on_settings_key(&mut self, mut draft: SettingsDraft, key: KeyEvent) -> Vec<AppEffect> {
        match draft.on_key(key) {
            SettingsOutcome::Open => self.overlay = Some(Overlay::Settings(draft)),
            SettingsOutcome::Close => {}
            SettingsOutcome::Save(policy) => {
                let mut effects = Vec::new();
                if draft.notify != self.notify {
                    self.notify = draft.notify;
                    self.notice(
                        NoticeLevel::Info,
                        format!("Notifications: {}", notify_label(draft.notify)),
                    );
                    if self.config_path.is_some() {
                        effects.push(AppEffect::SaveNotify(draft.notify));
                    }
                }
                if policy == self.retry_policy {
                    return effects;
                }
                self.retry_policy = policy.clone();
                let command = AppEffect::Command(Command::SetRetryPolicy(policy.clone()));
                if self.config_path.is_none() {
                    // One notice per save: here, or from the save's result.
                    self.notice(
                        NoticeLevel::Info,
                        "Retry policy changed for this run (no config file location is known)",
                    );
                    effects.push(command);
                    return effects;
                }
                effects.extend([command, AppEffect::SaveRetryPolicy(policy)]);
                return effects;
            }
        }
        Vec::new()
    }
}

/// What the settings call a notification mode.
fn notify_label(mode: crate::config::NotifyMode) -> &'static str {
    crate::app::settings::SettingsField::notify_value(mode)
}
