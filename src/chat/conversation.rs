//! Starting an orchestrator for a conversation, and replacing it: a provider switch, `/new`,
//! `/resume` (the transcript shown again, the agent session continued).

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::app::resume;
use crate::app::state::{AppState, StartupInfo};
use crate::app::transcript::NoticeLevel;
use crate::cli::AgentArgs;
use crate::config::{Config, RetryPolicy};
use crate::launch::resolve_provider;
use crate::orchestrator::{
    spawn_orchestrator, Command, OrchestratorEvent, OrchestratorHandle, OrchestratorOptions,
};
use crate::process::timings::SHUTDOWN_LIMIT;
use crate::provider::{
    build_provider_with, configured_settings, default_chat_transport, settings_overridden,
    SessionRef,
};
use crate::session_log::lock::ConversationLock;
use crate::session_log::{ConversationSummary, Origin};
use crate::startup::{self, LogTarget};
use crate::view::ChatView;

use super::effects::AppEvent;
use super::event_loop::ChatLoop;

/// Everything needed to start (or restart, on a provider switch) an orchestrator.
pub(super) struct Launch {
    pub(super) config: Config,
    pub(super) agent: AgentArgs,
    pub(super) scenario: Option<String>,
    /// Where a session log's write failures are told.
    pub(super) app_events: mpsc::UnboundedSender<AppEvent>,
}

/// Which conversation an orchestrator writes to.
pub(super) enum ConversationLog {
    /// A new conversation (its log appears with its first prompt).
    New,
    /// A conversation being resumed: its log is appended to (under its lock, when it could be
    /// taken), its turns numbered on.
    Resume(Box<ConversationSummary>, Option<ConversationLock>),
}

impl Launch {
    /// Starts an orchestrator for provider `name`, writing the conversation's log.
    pub(super) fn orchestrator(
        &self,
        name: &str,
        policy: RetryPolicy,
        session: SessionRef,
        conversation: ConversationLog,
    ) -> Result<Started, String> {
        // The command-line overrides (--agent-bin, --model, ...) belong to the provider they
        // were given for; another provider gets its configured settings.
        let settings = match resolve_provider(&self.agent, &self.config) {
            Ok(choice) if choice.name == name => choice.settings,
            _ => self.config.provider_settings(name),
        };
        let transport = settings
            .chosen_transport()
            .unwrap_or_else(|| default_chat_transport(name, &settings));
        let provider = build_provider_with(name, &settings, transport)?;
        let steers = provider.can_interject();
        let transport = provider.transport();
        // The config's start, then what the user chose in the conversation being resumed.
        let chosen = match &conversation {
            ConversationLog::Resume(summary, _) => summary.settings.clone(),
            ConversationLog::New => Vec::new(),
        };
        let conversation_settings = settings_overridden(configured_settings(&settings), chosen);
        let (target, first_turn) = match conversation {
            ConversationLog::New => (
                LogTarget::New {
                    provider: name.to_owned(),
                    origin: Origin::Chat,
                },
                1,
            ),
            ConversationLog::Resume(summary, lock) => (
                LogTarget::Resume {
                    path: summary.path.clone(),
                    id: summary.id.clone(),
                    lock,
                },
                summary.last_turn + 1,
            ),
        };
        let app_events = self.app_events.clone();
        let session_log = startup::open_session_log(
            target,
            &self.config,
            Box::new(move |failure| {
                let _ = app_events.send(AppEvent::LogNotSaved(failure.message()));
            }),
        );
        let conversation = session_log.as_ref().map(|log| Conversation {
            id: log.conversation_id().to_owned(),
            log: log.path().to_path_buf(),
        });
        let snapshot_dir = session_log
            .as_ref()
            .map(|log| crate::snapshot::dir_for_log(log.path()));
        let snapshots = snapshot_dir
            .clone()
            .map(|dir| crate::snapshot::SnapshotSetup {
                root: std::env::current_dir().unwrap_or_default(),
                dir,
                limits: self.config.snapshots.clone(),
            });
        let handle = spawn_orchestrator(OrchestratorOptions {
            provider,
            policy,
            session,
            cwd: None,
            scenario: self.scenario.clone(),
            session_log: session_log.map(|log| log as Arc<dyn crate::orchestrator::Recorder>),
            first_turn,
            settings: conversation_settings,
            snapshots,
            baseline_before_first_turn: false,
        });
        Ok(Started {
            handle,
            steers,
            transport,
            model: settings.model,
            conversation,
            snapshot_dir,
        })
    }
}

/// A started orchestrator, with what the chat shows about it.
pub(super) struct Started {
    pub(super) handle: OrchestratorHandle,
    /// The provider can steer a running turn (Enter steers, Alt+Enter follows up).
    pub(super) steers: bool,
    /// How the provider talks to its agent.
    pub(super) transport: crate::config::Transport,
    pub(super) model: Option<String>,
    /// The conversation it writes to.
    pub(super) conversation: Option<Conversation>,
    /// Where that conversation's snapshots are kept (`/diff` reads them).
    pub(super) snapshot_dir: Option<PathBuf>,
}

/// The conversation a chat writes.
#[derive(Debug, Clone)]
pub(super) struct Conversation {
    pub(super) id: String,
    /// Its session log (it appears with the first prompt).
    pub(super) log: PathBuf,
}

impl Conversation {
    /// The id `/resume` and `--resume` compare.
    pub(super) fn id(conversation: &Option<Conversation>) -> Option<String> {
        conversation
            .as_ref()
            .map(|conversation| conversation.id.clone())
    }
}

/// The agent session a resumed conversation continues.
pub(super) fn session_of(summary: &ConversationSummary) -> SessionRef {
    summary
        .session_id
        .clone()
        .map_or(SessionRef::New, SessionRef::Resume)
}

/// A reopened conversation, as the chat shows it.
pub(super) enum Reopened {
    /// This chat continues it: appends to its log, continues its agent session.
    Continued(resume::ResumedConversation),
    /// Another agentty (pid) writes it: shown read-only; the next prompt starts a new one.
    ReadOnly(resume::ResumedConversation, Option<u32>),
}

impl Reopened {
    /// How the chat goes on with a conversation reopened with `access`: what it shows, the
    /// log it writes, and the agent session its next prompt continues.
    pub(super) fn new(
        resumed: resume::ResumedConversation,
        access: resume::Access,
    ) -> (Reopened, ConversationLog, SessionRef) {
        match access {
            resume::Access::Append(lock) => {
                let summary = resumed.summary.clone();
                let session = session_of(&summary);
                (
                    Reopened::Continued(resumed),
                    ConversationLog::Resume(Box::new(summary), lock),
                    session,
                )
            }
            resume::Access::ReadOnly { pid } => (
                Reopened::ReadOnly(resumed, pid),
                ConversationLog::New,
                SessionRef::New,
            ),
        }
    }

    pub(super) fn show(self, state: &mut AppState) {
        match self {
            Reopened::Continued(resumed) => resume::show_resumed(state, resumed),
            Reopened::ReadOnly(resumed, pid) => resume::show_read_only(state, resumed, pid),
        }
    }
}

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
            .on_agent_started(started.steers, started.transport, started.model);
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

/// Shuts an orchestrator down in the background, draining its events until it is gone.
pub(super) fn retire(mut orchestrator: OrchestratorHandle) {
    let _ = orchestrator.commands.send(Command::Shutdown);
    tokio::spawn(async move {
        let drained = tokio::time::timeout(SHUTDOWN_LIMIT, async {
            while let Some(event) = orchestrator.events.recv().await {
                if event == OrchestratorEvent::ShutDown {
                    break;
                }
            }
        })
        .await;
        if drained.is_err() {
            tracing::warn!("the previous orchestrator did not shut down in time");
        }
    });
}
