//! Keys while an overlay is open: the overlay answers the key itself ([`OverlayPane::on_key`]:
//! stay open, close, or ask for something); here the chat carries out what each asks.

use std::time::Instant;

use crossterm::event::KeyEvent;

use super::{AppEffect, AppState};
use crate::app::menu::Overlay;
use crate::app::pane::{OverlayPane, Step};
use crate::app::settings::SettingsChoice;
use crate::app::transcript::NoticeLevel;
use crate::config::NotifyMode;
use crate::orchestrator::Command;

impl AppState {
    pub(super) fn on_overlay_key(&mut self, key: KeyEvent, now: Option<Instant>) -> Vec<AppEffect> {
        let Some(overlay) = self.overlay.take() else {
            return Vec::new();
        };
        match overlay {
            Overlay::Menu(mut menu) => {
                let step = menu.on_key(key, now, ());
                match self.settle(step, menu, Overlay::Menu) {
                    Some(action) => self.perform(action, None),
                    None => Vec::new(),
                }
            }
            Overlay::Help(mut help) => {
                let step = help.on_key(key, now, ());
                self.settle(step, help, Overlay::Help);
                Vec::new()
            }
            Overlay::ProviderPicker(mut picker) => {
                let step = picker.on_key(key, now, ());
                match self.settle(step, picker, Overlay::ProviderPicker) {
                    Some(name) if name != self.provider => self.switch_provider(name),
                    _ => Vec::new(),
                }
            }
            Overlay::HistorySearch(mut search) => {
                let matches = self.history_matches(&search.query);
                let step = search.on_key(key, now, &matches);
                if let Some(prompt) = self.settle(step, search, Overlay::HistorySearch) {
                    self.composer.set_text(&prompt);
                }
                Vec::new()
            }
            Overlay::Conversations(mut picker) => {
                let current = picker.current.clone();
                let step = picker.on_key(key, now, ());
                match self.settle(step, picker, Overlay::Conversations) {
                    Some(summary) if current.as_deref() == Some(summary.id.as_str()) => {
                        self.notice(NoticeLevel::Info, "That is the conversation you are in.");
                        Vec::new()
                    }
                    Some(summary) => vec![AppEffect::ResumeConversation(*summary)],
                    None => Vec::new(),
                }
            }
            Overlay::Settings(mut draft) => {
                let step = draft.on_key(key, now, ());
                match self.settle(step, draft, Overlay::Settings) {
                    Some(choice) => self.save_settings(choice),
                    None => Vec::new(),
                }
            }
            Overlay::ModelPicker(mut picker) => {
                let step = picker.on_key(key, now, &self.agent_status.models);
                match self.settle(step, picker, Overlay::ModelPicker) {
                    Some(request) => self.on_model_request(request),
                    None => Vec::new(),
                }
            }
            Overlay::ModePicker(mut picker) => {
                let step = picker.on_key(key, now, &self.agent_status.modes);
                match self.settle(step, picker, Overlay::ModePicker) {
                    Some(mode) => self.choose_mode(mode),
                    None => Vec::new(),
                }
            }
            Overlay::Diff(mut view) => {
                let step = view.on_key(key, now, ());
                match self.settle(step, view, Overlay::Diff) {
                    Some(never) => match never {},
                    None => Vec::new(),
                }
            }
            Overlay::ConfirmUndo(mut confirm) => {
                let step = confirm.on_key(key, now, ());
                match self.settle(step, confirm.clone(), Overlay::ConfirmUndo) {
                    Some(answer) => self.on_undo_answer(confirm, answer),
                    None => Vec::new(),
                }
            }
            Overlay::Rewind(mut picker) => {
                let step = picker.on_key(key, now, ());
                match self.settle(step, picker, Overlay::Rewind) {
                    Some(request) => self.on_rewind_request(request),
                    None => Vec::new(),
                }
            }
            Overlay::InterruptedRestore(mut prompt) => {
                let step = prompt.on_key(key, now, ());
                match self.settle(step, prompt.clone(), Overlay::InterruptedRestore) {
                    Some(answer) => self.on_restore_answer(prompt, answer),
                    None => Vec::new(),
                }
            }
        }
    }

    /// Puts the overlay back if its step keeps it open; what it asks, if anything.
    fn settle<P, R>(&mut self, step: Step<R>, pane: P, open: fn(P) -> Overlay) -> Option<R> {
        match step {
            Step::Open => {
                self.overlay = Some(open(pane));
                None
            }
            Step::Close => None,
            Step::Done(request) => Some(request),
            Step::Ask(request) => {
                self.overlay = Some(open(pane));
                Some(request)
            }
        }
    }

    /// Enter in the settings: applies what they chose now (the next frame draws in the new
    /// colours), and saves it where a config file is known: the theme, the notification mode
    /// and the retry policy, each only when it changed.
    fn save_settings(&mut self, choice: SettingsChoice) -> Vec<AppEffect> {
        let SettingsChoice {
            policy,
            notify,
            theme,
        } = choice;
        let mut effects = Vec::new();
        if theme != self.theme {
            self.theme = theme;
            self.notice(
                NoticeLevel::Info,
                format!(
                    "Colours: {}",
                    crate::app::settings::SettingsField::theme_value(theme)
                ),
            );
            if self.config_path.is_some() {
                effects.push(AppEffect::SaveTheme(theme));
            }
        }
        if notify != self.notify {
            self.notify = notify;
            self.notice(
                NoticeLevel::Info,
                format!("Notifications: {}", notify_label(notify)),
            );
            if self.config_path.is_some() {
                effects.push(AppEffect::SaveNotify(notify));
            }
        }
        if policy == self.retry_policy {
            return effects;
        }
        self.retry_policy = policy.clone();
        let command = AppEffect::Command(Command::SetRetryPolicy(policy.clone()));
        effects.push(command);
        if self.config_path.is_none() {
            // One notice per save: here, or from the save's result.
            self.notice(
                NoticeLevel::Info,
                "Retry policy changed for this run (no config file location is known)",
            );
            return effects;
        }
        effects.push(AppEffect::SaveRetryPolicy(policy));
        effects
    }
}

/// What the settings call a notification mode.
fn notify_label(mode: NotifyMode) -> &'static str {
    crate::app::settings::SettingsField::notify_value(mode)
}
