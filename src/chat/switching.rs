//! Replacing the chat's orchestrator (and with it, for `/new` and `/resume`, its state): a
//! provider switch, a new conversation, a conversation `/resume` reopened (its log read off the
//! loop). The orchestrators themselves are started in `conversation`.

use crate::app::resume;
use crate::app::state::{AppState, StartupInfo};
use crate::app::transcript::NoticeLevel;
use crate::provider::SessionRef;
use crate::session_log::ConversationSummary;
use crate::view::ChatView;

use super::app_event::AppEvent;
use super::conversation::{retire, ConversationLog, Reopened, Started};
use super::event_loop::ChatLoop;

impl ChatLoop {
    pub(super) fn switch_provider(&mut self, name: &str) {
        let policy = self.state.retry_policy.clone();
        match self
            .launch
            .orchestrator(name, policy, SessionRef::New, ConversationLog::New)
        {
            Ok(started) => self.replace_orchestrator(started),
            Err(error) => self.state.show_notice(NoticeLevel::Error, &error),
        }
    }

    fn replace_orchestrator(&mut self, started: Started) {
        let previous = std::mem::replace(&mut self.orchestrator, started.handle);
        retire(previous);
        self.conversation = started.conversation;
        self.snapshot_dir = started.snapshot_dir;
        self.orchestrator_open = true;
        self.state
            .on_agent_started(started.capabilities, started.model);
        for change in &started.overridden {
            self.state.show_notice(NoticeLevel::Info, change);
        }
    }

    /// A fresh chat for `provider`: a new transcript (with `notice`) and, started by the caller,
    /// a new orchestrator.
    fn fresh_state(&self, provider: &str, model: Option<String>) -> AppState {
        let mut state = AppState::new(StartupInfo {
            provider: provider.to_owned(),
            model,
            retry_policy: self.state.retry_policy.clone(),
            config_path: self.state.config_path.clone(),
            warnings: Vec::new(),
        });
        state.set_notify(self.state.notify);
        state.set_theme(self.state.theme, self.state.terminal_background);
        if let Some(installed) = self.state.installed_agents.clone() {
            state.on_agents_checked(installed);
        }
        state
    }

    /// Starts a new conversation on the current provider: empty transcript, new agent
    /// session, and a new log once the first prompt is sent.
    pub(super) fn new_conversation(&mut self) {
        let provider = self.state.provider.clone();
        let policy = self.state.retry_policy.clone();
        match self
            .launch
            .orchestrator(&provider, policy, SessionRef::New, ConversationLog::New)
        {
            Ok(started) => {
                let mut state = self.fresh_state(&provider, started.model.clone());
                state.show_notice(
                    NoticeLevel::Info,
                    "New conversation: the next prompt starts a fresh agent session (/resume reopens earlier ones)",
                );
                self.replace_state(state);
                self.replace_orchestrator(started);
            }
            Err(error) => self.state.show_notice(NoticeLevel::Error, &error),
        }
    }

    /// Shows a conversation's transcript again and continues its agent session, on the
    /// provider it ran on; one that another agentty writes is shown read-only, and the next
    /// prompt starts a new conversation.
    pub(super) fn resume_conversation(&mut self, summary: ConversationSummary) {
        // Reading the log (and taking its lock) is disk work: off the loop.
        let events = self.app_events.clone();
        tokio::task::spawn_blocking(move || {
            let reopened = resume::reopen(summary);
            let _ = events.send(AppEvent::ConversationReopened(Box::new(reopened)));
        });
    }

    /// Goes on with the conversation `/resume` reopened (see [`Self::resume_conversation`]).
    pub(super) fn continue_reopened(
        &mut self,
        reopened: Result<(resume::ResumedConversation, resume::Access), String>,
    ) {
        let (resumed, access) = match reopened {
            Ok(reopened) => reopened,
            Err(message) => {
                self.state.show_notice(NoticeLevel::Warning, &message);
                return;
            }
        };
        let summary = resumed.summary.clone();
        if let resume::Access::ReadOnly { pid } = access {
            if pid == Some(std::process::id()) {
                // This agentty's previous orchestrator has not let go of it yet.
                self.state.show_notice(
                    NoticeLevel::Info,
                    &format!(
                        "Conversation {} is still being closed; try /resume again in a moment",
                        resume::short(&summary.id)
                    ),
                );
                return;
            }
        }
        let (shown, conversation, session) = Reopened::new(resumed, access);
        let policy = self.state.retry_policy.clone();
        match self
            .launch
            .orchestrator(&summary.provider, policy, session, conversation)
        {
            Ok(started) => {
                let mut state = self.fresh_state(&summary.provider, started.model.clone());
                shown.show(&mut state);
                self.replace_state(state);
                self.replace_orchestrator(started);
            }
            Err(error) => self.state.show_notice(NoticeLevel::Error, &error),
        }
    }

    fn replace_state(&mut self, state: AppState) {
        self.state = state;
        // Cell ids restart with the new transcript: no cached layout may carry over.
        self.view = ChatView::default();
    }
}
