//! The conversation's settings on the driver's side: a change the user asks for goes to the
//! agent, and becomes the conversation's (logged, carried by every later attempt) only once
//! the agent reports that it holds it.

use super::Driver;
use crate::orchestrator::OrchestratorEvent;
use crate::provider::{settings_overridden, AgentSetting, AgentStatus};

impl Driver {
    pub(super) fn change_setting(&mut self, setting: AgentSetting) {
        self.settings_asked.retain(|kept| !kept.same_kind(&setting));
        if self.options.provider.change_setting(setting.clone()) {
            self.settings_asked.push(setting);
        } else {
            tracing::warn!(?setting, "the agent cannot change this setting now");
        }
    }

    /// A setting the user asked for that the agent now holds is the conversation's: logged,
    /// and carried by every later attempt (a restarted agent is set to it again).
    pub(super) fn follow_settings(&mut self, status: &AgentStatus) {
        if status.refusals > self.refusals_seen {
            self.refusals_seen = status.refusals;
            self.settings_asked.clear();
        }
        let (taken, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.settings_asked)
            .into_iter()
            .partition(|setting| setting.is_held_by(status));
        self.settings_asked = waiting;
        for setting in taken {
            self.settings =
                settings_overridden(std::mem::take(&mut self.settings), [setting.clone()]);
            self.emit(OrchestratorEvent::SettingChosen(setting));
        }
    }
}
