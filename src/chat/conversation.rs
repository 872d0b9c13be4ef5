//! Starting an orchestrator for a conversation (new, or one `--resume` / `/resume` reopened:
//! the transcript shown again, the agent session continued), and retiring the one it replaces
//! (the replacing is `switching`'s).

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::app::resume;
use crate::app::state::AppState;
use crate::cli::AgentArgs;
use crate::config::{Config, RetryPolicy, Transport};
use crate::launch::resolve_provider;
use crate::orchestrator::{
    spawn_orchestrator, Command, OrchestratorEvent, OrchestratorHandle, OrchestratorOptions,
};
use crate::process::timings::SHUTDOWN_LIMIT;
use crate::provider::{
    build_provider_with, configured_settings, default_chat_transport, settings_overridden,
    AgentSetting, SessionRef,
};
use crate::session_log::lock::ConversationLock;
use crate::session_log::{ConversationSummary, Origin};
use crate::startup::{self, LogTarget};

use super::app_event::AppEvent;

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
        let (settings, command_line) = match resolve_provider(&self.agent, &self.config) {
            Ok(choice) if choice.name == name => (choice.settings, Some(&self.agent)),
            _ => (self.config.provider_settings(name), None),
        };
        let resumed = match &conversation {
            ConversationLog::Resume(summary, _) => Some(summary.as_ref()),
            ConversationLog::New => None,
        };
        let start = ConversationStart::of(resumed, command_line, &self.config, name);
        let transport = start
            .transport
            .unwrap_or_else(|| default_chat_transport(name, &settings));
        let provider = build_provider_with(name, &settings, transport)?;
        let capabilities = provider.capabilities();
        let (target, first_turn) = match conversation {
            ConversationLog::New => (
                LogTarget::New {
                    provider: name.to_owned(),
                    origin: Origin::Chat,
                    start: crate::session_log::ConversationStart {
                        transport: Some(transport),
                        settings: start.settings.clone(),
                    },
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
        let snapshots = session_log.as_ref().map(|log| {
            crate::snapshot::SnapshotSetup::for_log(
                std::env::current_dir().unwrap_or_default(),
                log.path(),
                self.config.snapshots.clone(),
            )
        });
        let handle = spawn_orchestrator(OrchestratorOptions {
            provider,
            policy,
            session,
            cwd: None,
            scenario: self.scenario.clone(),
            session_log: session_log.map(|log| log as Arc<dyn crate::orchestrator::Recorder>),
            first_turn,
            settings: start.settings.clone(),
            snapshots,
        });
        Ok(Started {
            handle,
            capabilities,
            model: start.model(),
            conversation,
            snapshot_dir,
            overridden: start.overridden,
        })
    }
}

/// A started orchestrator, with what the chat shows about it.
pub(super) struct Started {
    pub(super) handle: OrchestratorHandle,
    /// What the provider's transport lets agentty do (steering, images, ...).
    pub(super) capabilities: crate::provider::Capabilities,
    pub(super) model: Option<String>,
    /// The conversation it writes to.
    pub(super) conversation: Option<Conversation>,
    /// Where that conversation's snapshots are kept (`/diff` reads them).
    pub(super) snapshot_dir: Option<PathBuf>,
    /// What the command line changed of a resumed conversation's transport and settings, in
    /// words for a notice (empty: nothing, or a new conversation).
    pub(super) overridden: Vec<String>,
}

/// How a conversation talks to its agent: a new one as the command line, else the config, says;
/// a resumed one as its log says (the transport, the model and mode it started with, the
/// settings chosen since), the command line over it (each change said).
struct ConversationStart {
    /// `None`: the provider's default.
    transport: Option<Transport>,
    settings: Vec<AgentSetting>,
    overridden: Vec<String>,
}

impl ConversationStart {
    fn of(
        resumed: Option<&ConversationSummary>,
        command_line: Option<&AgentArgs>,
        config: &Config,
        name: &str,
    ) -> Self {
        let configured = config.provider_settings(name);
        let from_command_line = |agent: &AgentArgs| {
            (
                agent.transport,
                agent.model.clone().map(AgentSetting::Model),
            )
        };
        let (cli_transport, cli_model) = command_line.map(from_command_line).unwrap_or_default();
        let Some(summary) = resumed else {
            return Self {
                transport: cli_transport.or(configured.chosen_transport()),
                settings: settings_overridden(configured_settings(&configured), cli_model),
                overridden: Vec::new(),
            };
        };
        let mut overridden = Vec::new();
        if let (Some(given), Some(logged)) = (cli_transport, summary.transport) {
            if given != logged {
                overridden.push(format!(
                    "--transport {}: this conversation ran over {} (a model or mode it chose \
                     comes back where {} has them)",
                    given.name(),
                    logged.name(),
                    given.name()
                ));
            }
        }
        let logged_model = summary.settings.iter().find_map(|setting| match setting {
            AgentSetting::Model(model) => Some(model.as_str()),
            _ => None,
        });
        if let (Some(AgentSetting::Model(given)), Some(logged)) = (&cli_model, logged_model) {
            if given != logged {
                overridden.push(format!("--model {given}: this conversation used {logged}"));
            }
        }
        // The config's start, under what the conversation started with and chose since, under
        // what the command line says now.
        let settings = settings_overridden(
            settings_overridden(configured_settings(&configured), summary.settings.clone()),
            cli_model,
        );
        Self {
            transport: cli_transport
                .or(summary.transport)
                .or(configured.chosen_transport()),
            settings,
            overridden,
        }
    }

    /// The model it starts with, where one is set (the status bar shows it until the agent
    /// reports its own).
    fn model(&self) -> Option<String> {
        self.settings.iter().find_map(|setting| match setting {
            AgentSetting::Model(model) => Some(model.clone()),
            _ => None,
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(transport: Option<Transport>, settings: Vec<AgentSetting>) -> ConversationSummary {
        let mut summary = crate::session_log::tests_summary("demo");
        summary.transport = transport;
        summary.settings = settings;
        summary
    }

    fn model(id: &str) -> AgentSetting {
        AgentSetting::Model(id.into())
    }

    #[test]
    fn a_resume_goes_on_as_the_log_says_and_the_command_line_overrides_with_a_notice() {
        let config = Config::default();
        let logged = summary(
            Some(Transport::Acp),
            vec![
                model("demo-acp-2"),
                AgentSetting::Mode("accept-edits".into()),
            ],
        );
        // A plain --resume: the log's transport, model and mode.
        let plain = AgentArgs::default();
        let start = ConversationStart::of(Some(&logged), Some(&plain), &config, "demo");
        assert_eq!(start.transport, Some(Transport::Acp));
        assert_eq!(start.settings, logged.settings);
        assert_eq!(start.model().as_deref(), Some("demo-acp-2"));
        assert!(start.overridden.is_empty());
        // The command line wins, and says what it changed.
        let given = AgentArgs {
            transport: Some(Transport::Json),
            model: Some("demo-x".into()),
            ..AgentArgs::default()
        };
        let start = ConversationStart::of(Some(&logged), Some(&given), &config, "demo");
        assert_eq!(start.transport, Some(Transport::Json));
        assert_eq!(start.model().as_deref(), Some("demo-x"));
        assert!(start
            .settings
            .contains(&AgentSetting::Mode("accept-edits".into())));
        assert_eq!(
            start.overridden,
            [
                "--transport json: this conversation ran over acp (a model or mode it chose \
                 comes back where json has them)",
                "--model demo-x: this conversation used demo-acp-2"
            ]
        );
        // The same values again change nothing and say nothing.
        let same = AgentArgs {
            transport: Some(Transport::Acp),
            model: Some("demo-acp-2".into()),
            ..AgentArgs::default()
        };
        let start = ConversationStart::of(Some(&logged), Some(&same), &config, "demo");
        assert!(start.overridden.is_empty());
        // A log from before the transport was kept: the config's, else the default.
        let old = summary(None, Vec::new());
        let start = ConversationStart::of(Some(&old), Some(&plain), &config, "demo");
        assert_eq!(start.transport, None);
        // A new conversation: the command line, else the config.
        let start = ConversationStart::of(None, Some(&given), &config, "demo");
        assert_eq!(start.transport, Some(Transport::Json));
        assert_eq!(start.settings, [model("demo-x")]);
    }
}
