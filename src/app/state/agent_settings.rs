//! The agent's settings in the user's hands: `/model` (the agent's own list of models) and
//! Shift+Tab (its next mode where it has modes, else its next thinking level). A change is asked of the agent (`ChangeSetting`) and
//! shown once the agent confirms it in its status; a refusal is shown as the agent worded it.
//! Where the agent lists nothing, the picker says so instead of offering nothing.

use super::{AppEffect, AppState};
use crate::app::agent_status::{AgentValue, ShownAgentStatus, ShownModel};
use crate::app::completion::PopupKind;
use crate::app::menu::Overlay;
use crate::app::mode_picker::ModePicker;
use crate::app::model_picker::{next_level, ModelPicker, ModelRequest};
use crate::app::transcript::NoticeLevel;
use crate::orchestrator::Command;
use crate::provider::AgentSetting;
use crate::provider::AgentStatus;

impl AppState {
    /// `/model`: the picker, on the current model.
    pub(super) fn open_model_picker(&mut self) -> Vec<AppEffect> {
        let current = self.current_model_choice().map(|model| model.id.clone());
        let picker = ModelPicker::new(&self.agent_status.models, current.as_ref());
        self.open_overlay(Overlay::ModelPicker(picker))
    }

    /// The model the agent runs, among those it lists.
    pub(crate) fn current_model_choice(&self) -> Option<&ShownModel> {
        self.agent_status.current_model()
    }

    /// What the model picker asks: a model (the picker closed), or the next thinking level (it
    /// stays open).
    pub(super) fn on_model_request(&mut self, request: ModelRequest) -> Vec<AppEffect> {
        match request {
            ModelRequest::Choose(id) => {
                if self
                    .current_model_choice()
                    .is_some_and(|model| model.id.raw() == id)
                {
                    return Vec::new();
                }
                self.ask_setting(AgentSetting::Model(id))
            }
            ModelRequest::NextThinkingLevel => self.cycle_thinking_level(),
        }
    }

    /// Shift+Tab: the agent's next mode (Claude Code's habit) where it has modes, never a most
    /// permissive one (those take `/permissions` and an explicit yes); else the current model's
    /// next thinking level (pi's habit).
    pub(super) fn cycle_mode_or_thinking_level(&mut self) -> Vec<AppEffect> {
        let status = &self.agent_status;
        if status.modes.is_empty() {
            return self.cycle_thinking_level();
        }
        let ids: Vec<String> = status
            .modes
            .iter()
            .filter(|mode| mode.most_permissive.is_none())
            .map(|mode| mode.id.raw().to_owned())
            .collect();
        match next_level(&ids, status.mode.as_ref().map(AgentValue::raw)) {
            Some(mode) => self.ask_setting(AgentSetting::Mode(mode)),
            None => Vec::new(),
        }
    }

    /// `/permissions`' picker of the agent's modes, where it has modes.
    pub(super) fn open_mode_picker(&mut self) -> Vec<AppEffect> {
        let picker = ModePicker::new(&self.agent_status.modes, self.agent_status.mode.as_ref());
        self.open_overlay(Overlay::ModePicker(picker))
    }

    /// A mode chosen in `/permissions` (a most permissive one only after the user said yes).
    pub(super) fn choose_mode(&mut self, mode: String) -> Vec<AppEffect> {
        if self
            .agent_status
            .mode
            .as_ref()
            .is_some_and(|current| current.raw() == mode)
        {
            return Vec::new();
        }
        self.ask_setting(AgentSetting::Mode(mode))
    }

    /// The current model's next thinking level; where there is none, it says so.
    pub(super) fn cycle_thinking_level(&mut self) -> Vec<AppEffect> {
        let status = &self.agent_status;
        let levels: Vec<String> = status
            .thinking_levels
            .iter()
            .map(|level| level.raw().to_owned())
            .collect();
        // A level asked for and not yet confirmed is the one the next press steps from (a
        // second Shift+Tab before the agent answers the first goes on, not back).
        let current = match &self.pending_setting {
            Some(AgentSetting::ThinkingLevel(level)) => Some(level.as_str()),
            _ => status.thinking_level.as_ref().map(AgentValue::raw),
        };
        let Some(level) = next_level(&levels, current) else {
            let why = if status.models.is_empty() {
                format!(
                    "The {} agent reports no modes or thinking levels here: nothing to cycle.",
                    self.provider
                )
            } else {
                "The current model takes no thinking level: nothing to cycle.".to_owned()
            };
            self.show_notice(NoticeLevel::Info, &why);
            return Vec::new();
        };
        self.ask_setting(AgentSetting::ThinkingLevel(level))
    }

    fn ask_setting(&mut self, setting: AgentSetting) -> Vec<AppEffect> {
        self.pending_setting = Some(setting.clone());
        vec![AppEffect::Command(Command::ChangeSetting(setting))]
    }

    /// The agent's status: kept (what is shown of it made inert); a change the user asked for
    /// and the agent made, or a refusal, is said once.
    pub(super) fn on_agent_status(&mut self, status: AgentStatus) {
        let refused = status.refusals > self.agent_status.refusals;
        let switched = self
            .agent_status
            .model
            .as_ref()
            .is_some_and(|before| status.model.as_deref() != Some(before.raw()));
        if switched {
            // The model the agent reported was the one before: until it reports again, the
            // chosen one is what is known.
            self.usage_book.model = None;
        }
        let commands_changed = self.agent_status.commands.len() != status.commands.len()
            || self
                .agent_status
                .commands
                .iter()
                .zip(&status.commands)
                .any(|(shown, new)| shown.name != new.name);
        self.agent_status = ShownAgentStatus::from(status);
        // The agent's commands arrived (or changed) while the `/` popup is open: it shows them.
        if commands_changed && matches!(&self.popup, Some(popup) if popup.kind == PopupKind::Slash)
        {
            self.refresh_popup();
        }
        if refused {
            self.pending_setting = None;
            let refusal = self.agent_status.refusal.clone().unwrap_or_default();
            self.show_notice(
                NoticeLevel::Warning,
                &format!("The agent did not change it: {refusal}"),
            );
            return;
        }
        let done = match &self.pending_setting {
            Some(AgentSetting::Model(id)) => self
                .current_model_choice()
                .filter(|model| model.id.raw() == id)
                .map(|model| format!("Model: {} — from the agent's next request on", model.name)),
            Some(AgentSetting::ThinkingLevel(level)) => self
                .agent_status
                .thinking_level
                .as_ref()
                .filter(|current| current.raw() == level)
                .map(|level| format!("Thinking level: {level}")),
            Some(AgentSetting::Mode(id)) => self
                .agent_status
                .current_mode()
                .filter(|mode| mode.id.raw() == id)
                .map(|mode| match &mode.most_permissive {
                    Some(allows) => format!("Mode: {} — {allows}", mode.name),
                    None => format!("Mode: {}", mode.name),
                }),
            None => None,
        };
        if let Some(done) = done {
            self.pending_setting = None;
            self.show_notice(NoticeLevel::Info, &done);
        }
    }
}
