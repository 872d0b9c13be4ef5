//! Providers: one attempt of one agent CLI, mapped into the shared stream.
//!
//! A provider never retries. Its stream always ends with exactly one `terminal.*` message, and
//! a failed start is such a message (`start_failed`), never an error return. Retry policy lives
//! in the orchestrator only.

pub mod acp;
mod agent_status;
pub mod checkpoint;
pub mod claude;
pub mod codex;
pub(crate) mod common;
pub(crate) mod config_mirror;
pub(crate) mod configured;
pub mod demo;
pub mod errors;
pub mod gemini;
pub mod http_status;
pub(crate) mod live_process;
pub mod mapper;
pub mod pi;
pub mod reconcile;
pub mod runner;
pub(crate) mod session_header;
pub(crate) mod tool_calls;

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;

use crate::config::ProviderSettings;
pub use crate::config::Transport;
use crate::process::SpawnSpec;
pub use crate::process::{StopControl, StopProgress};
use crate::stream::AgentMessage;
pub use agent_status::{
    configured_settings, settings_overridden, AgentQueue, AgentSetting, AgentStatus, ModeChoice,
    ModelChoice,
};
pub use checkpoint::SessionCheckpoint;
pub use mapper::{AgentOutcome, ExitFacts, LineVerdict, Mapper};

/// The stream of one attempt. It ends with exactly one terminal message.
pub type AgentStream = BoxStream<'static, AgentMessage>;

/// Which agent session an attempt belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SessionRef {
    /// Start a new agent session.
    #[default]
    New,
    /// Continue the agent CLI's most recent session (`--continue`).
    ContinueLatest,
    /// Continue the given session (an id, or for pi also a session file path).
    Resume(String),
}

/// Everything one attempt needs to know.
#[derive(Debug, Clone, Default)]
pub struct AttemptRequest {
    pub prompt: String,
    pub session: SessionRef,
    /// The agent's working directory; `None` means agentty's own.
    pub cwd: Option<PathBuf>,
    /// The conversation's settings (model, mode, thinking level) a long-lived agent is set to
    /// whenever its session opens (a new process, a reload), where it lists them.
    pub settings: Vec<AgentSetting>,
    /// 1-based attempt number within the turn (the demo agent's `flaky` scenario reads it).
    pub attempt: u32,
    /// Demo scenario name (only the demo provider uses it).
    pub scenario: Option<String>,
    /// Receives every raw stdout line of the agent (for the session log).
    pub raw_line_tap: Option<RawLineTap>,
}

/// A sink for the agent's raw stdout lines (the session log). The attempt awaits each record,
/// so a sink that bounds its buffer slows the reading of the agent instead of growing memory.
/// The line is lent: a sink that keeps it copies it (into a buffer it can reuse).
#[derive(Clone)]
pub struct RawLineTap(Arc<RecordRawLine>);

type RecordRawLine = dyn for<'a> Fn(&'a str) -> BoxFuture<'a, ()> + Send + Sync;

impl RawLineTap {
    pub fn new<F>(tap: F) -> Self
    where
        F: for<'a> Fn(&'a str) -> BoxFuture<'a, ()> + Send + Sync + 'static,
    {
        Self(Arc::new(tap))
    }

    pub async fn record(&self, line: &str) {
        (self.0)(line).await;
    }
}

impl std::fmt::Debug for RawLineTap {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("RawLineTap")
    }
}

/// A backend knows how to start its CLI and how to read it; the runner does the rest.
pub trait Backend: Send + Sync + 'static {
    /// The `--provider` name (`pi`, `claude`, ...).
    fn name(&self) -> &str;
    fn spawn_spec(&self, request: &AttemptRequest) -> SpawnSpec;
    fn mapper(&self, request: &AttemptRequest) -> Box<dyn Mapper>;
    /// Where the CLI keeps the stored session `session_id` for this request, if this backend
    /// knows (see [`checkpoint`]). `None` means a failed attempt cannot be undone, so a retry
    /// runs in a fresh agent session.
    fn session_file(&self, session_id: &str, request: &AttemptRequest) -> Option<PathBuf> {
        let _ = (session_id, request);
        None
    }
    /// Files the CLI updates along with a session, restored with it (see [`checkpoint`]).
    fn session_companions(&self, request: &AttemptRequest) -> Vec<PathBuf> {
        let _ = request;
        Vec::new()
    }
    /// A new process is about to load the stored session `session_id` (a long-lived
    /// transport's restart after a stop, a failure or a resume): put its files the way that
    /// process loads them whole. Nothing to do for most CLIs.
    fn prepare_session_load(&self, session_id: &str, request: &AttemptRequest) {
        let _ = (session_id, request);
    }
    /// The user stopped an attempt that ran in the stored session `session_id`: make sure the
    /// session keeps the stopped prompt, as the CLI keeps it when stopped in a later turn, so
    /// that the next turn's request carries it (pi writes nothing before the model's first
    /// answer). Nothing to do for most CLIs.
    fn keep_stopped_prompt(&self, session_id: &str, request: &AttemptRequest) {
        let _ = (session_id, request);
    }
    /// What the CLI prints when it cannot find the session it was asked to continue; a failure
    /// that says so is reported as `session_lost`.
    fn lost_session_phrases(&self) -> &'static [&'static str] {
        &[]
    }
    /// How to start the CLI as a long-lived process that takes commands on stdin (pi's
    /// `--mode rpc`), for `request.session`; `None`: this backend has no such mode.
    fn rpc_spawn_spec(&self, request: &AttemptRequest) -> Option<SpawnSpec> {
        let _ = request;
        None
    }
    /// How to start the CLI in Claude Code's long-lived stream-json mode with the control
    /// protocol on stdio; `None`: this backend has no such mode.
    fn stream_spawn_spec(&self, request: &AttemptRequest) -> Option<SpawnSpec> {
        let _ = request;
        None
    }
    /// How to start the agent speaking the Agent Client Protocol (`gemini --acp`, an ACP
    /// adapter); `None`: this backend has no ACP agent (or its adapter is not installed).
    fn acp_spawn_spec(&self, request: &AttemptRequest) -> Option<SpawnSpec> {
        let _ = request;
        None
    }
    /// How to start Codex's `app-server` (JSON-RPC over stdio) for `request`; `None`: this
    /// backend has no such mode.
    fn app_server_spawn_spec(&self, request: &AttemptRequest) -> Option<SpawnSpec> {
        let _ = request;
        None
    }
    /// Why there is no ACP agent to run (see [`Backend::acp_spawn_spec`]), and the way out.
    fn acp_unavailable(&self) -> String {
        format!(
            "the {} provider has no ACP transport (use --transport json)",
            self.name()
        )
    }
    /// How this backend's ACP agent departs from the protocol.
    fn acp_quirks(&self, request: &AttemptRequest) -> acp::AcpQuirks {
        let _ = request;
        acp::AcpQuirks::default()
    }
}

/// A message for the agent while its turn runs (long-lived transports only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interjection {
    /// Delivered after the current tool call (pi `steer`).
    Steer,
    /// Delivered after the turn (pi `follow_up`).
    FollowUp,
}

/// The transport the chat uses for `name` unless told otherwise: the best the backend has.
/// pi's RPC mode and ACP are long-lived and two-way (no cold start per turn, in-band stop;
/// steering for pi, permission prompts for ACP): Gemini speaks ACP itself, Claude Code and
/// Codex through their ACP adapters when one is installed; the rest run one-shot.
pub(crate) fn default_chat_transport(name: &str, settings: &ProviderSettings) -> Transport {
    if let Some(protocol) = settings.protocol {
        return protocol;
    }
    match ProviderKind::from_name(name) {
        Some(ProviderKind::Pi) => Transport::Rpc,
        Some(ProviderKind::Gemini) => Transport::Acp,
        // Codex's own two-way mode; its ACP adapter where the user configured one.
        Some(ProviderKind::Codex) if settings.acp_command.is_none() => Transport::AppServer,
        // Claude Code's own two-way mode, unless the user configured its ACP adapter.
        Some(ProviderKind::Claude) if settings.acp_command.is_none() => Transport::Stream,
        Some(ProviderKind::Claude | ProviderKind::Codex) => {
            let has_adapter = build_backend(name, settings).is_some_and(|backend| {
                backend.acp_spawn_spec(&AttemptRequest::default()).is_some()
            });
            if has_adapter {
                Transport::Acp
            } else {
                Transport::Json
            }
        }
        Some(ProviderKind::Demo) | None => Transport::Json,
    }
}

/// The transport `agentty run` uses for `name` unless told otherwise: one that can honour
/// `--permissions` where the CLI has one (Claude Code's stream-json mode, Codex's app-server:
/// their one-shot modes cannot ask), else the one-shot JSON mode (a single prompt gains nothing
/// from a long-lived process).
pub(crate) fn default_run_transport(name: &str, settings: &ProviderSettings) -> Transport {
    if let Some(transport) = settings.chosen_transport() {
        return transport;
    }
    match ProviderKind::from_name(name) {
        Some(ProviderKind::Claude | ProviderKind::Codex) => default_chat_transport(name, settings),
        _ => Transport::Json,
    }
}

/// Whether the agent asks agentty before acting over `transport` (so that a permission
/// policy applies).
pub(crate) fn asks_permission(transport: Transport) -> bool {
    matches!(
        transport,
        Transport::Acp | Transport::AppServer | Transport::Stream
    )
}

/// Why `--permissions` cannot be honoured on `transport` for `name` (a one-shot mode of a CLI
/// that has permission prompts and cannot ask agentty), when the user gave it; `None`: fine.
pub(crate) fn permissions_not_honoured(
    name: &str,
    transport: Transport,
    permissions_given: bool,
) -> Option<String> {
    let claude_one_shot =
        ProviderKind::from_name(name) == Some(ProviderKind::Claude) && transport == Transport::Json;
    (permissions_given && claude_one_shot).then(|| {
        "--permissions cannot be honoured with --transport json: Claude Code's one-shot mode \
         cannot ask agentty, it refuses every tool that needs permission. Use --transport stream \
         (the default for claude), or allow tools with Claude Code's own flags in \
         [providers.claude] args (for example --allowedTools or --permission-mode acceptEdits)."
            .to_owned()
    })
}

/// One agent CLI, behind the single-attempt contract.
pub trait Provider: Send + Sync {
    fn name(&self) -> &str;
    /// Starts one attempt. Never fails: every failure is the stream's terminal message.
    fn execute(&self, request: AttemptRequest, stop: StopControl) -> AgentStream;
    /// The agent's stored session that `request` continues, as it is now; `None` when it cannot
    /// be found (a new session has nothing to undo, and the orchestrator knows that).
    fn checkpoint(&self, request: &AttemptRequest) -> Option<SessionCheckpoint> {
        let _ = request;
        None
    }
    /// How this provider talks to its agent (for the status bar and help).
    fn transport(&self) -> Transport {
        Transport::Json
    }
    /// Whether [`Provider::interject`] can reach a running turn (else prompts wait in the queue).
    fn can_interject(&self) -> bool {
        false
    }
    /// Hands `text` to the running turn; false when there is none or the transport cannot.
    fn interject(&self, kind: Interjection, text: &str) -> bool {
        let _ = (kind, text);
        false
    }
    /// The user's answer to permission request `id` of the running attempt (an option id it
    /// offered, or `None` for cancelled), with what to do instead when the user said (sent with
    /// the answer when [`Provider::takes_permission_feedback`]); false when no such request
    /// waits.
    fn answer_permission(&self, id: &str, option: Option<String>, message: Option<String>) -> bool {
        let _ = (id, option, message);
        false
    }
    /// Asks the agent to change `setting`; false when this transport cannot (or no agent runs
    /// to ask). The outcome arrives in [`Provider::agent_status`]: the new value, or the
    /// agent's refusal.
    fn change_setting(&self, setting: AgentSetting) -> bool {
        let _ = setting;
        false
    }
    /// Whether the protocol carries the user's note with a rejection (else the orchestrator
    /// sends it as the next prompt).
    fn takes_permission_feedback(&self) -> bool {
        false
    }
    /// The orchestrator restored the agent's stored session from a checkpoint: whatever the
    /// provider holds of it in memory is out of date.
    fn session_restored(&self) {}
    /// The conversation is open and will send `request`'s session its first prompt: a
    /// long-lived transport may start its process now, so that the prompt finds it running.
    fn warm_up(&self, request: AttemptRequest) {
        let _ = request;
    }
    /// The agent's own queue of steering / follow-up messages, for transports that have one.
    fn agent_queue(&self) -> Option<tokio::sync::watch::Receiver<AgentQueue>> {
        None
    }
    /// The agent's model, thinking level, cost and tokens, for transports that report them.
    fn agent_status(&self) -> Option<tokio::sync::watch::Receiver<AgentStatus>> {
        None
    }
}

/// The provider for any backend: spawn, map, end with exactly one terminal message.
pub struct CliProvider {
    backend: Arc<dyn Backend>,
}

impl CliProvider {
    pub fn new(backend: impl Backend) -> Self {
        Self {
            backend: Arc::new(backend),
        }
    }

    /// The provider for a backend that is shared (with an RPC provider, say).
    pub fn from_arc(backend: Arc<dyn Backend>) -> Self {
        Self { backend }
    }
}

impl Provider for CliProvider {
    fn name(&self) -> &str {
        self.backend.name()
    }

    fn execute(&self, request: AttemptRequest, stop: StopControl) -> AgentStream {
        runner::run_attempt(self.backend.clone(), request, stop)
    }

    fn checkpoint(&self, request: &AttemptRequest) -> Option<SessionCheckpoint> {
        SessionCheckpoint::of_session(self.backend.as_ref(), request)
    }
}

/// The agent CLIs agentty has a backend for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ProviderKind {
    Pi,
    Claude,
    Codex,
    Gemini,
    Demo,
}

impl ProviderKind {
    pub(crate) const ALL: [ProviderKind; 5] = [
        ProviderKind::Pi,
        ProviderKind::Claude,
        ProviderKind::Codex,
        ProviderKind::Gemini,
        ProviderKind::Demo,
    ];

    /// The `--provider` name.
    pub const fn name(self) -> &'static str {
        match self {
            ProviderKind::Pi => "pi",
            ProviderKind::Claude => "claude",
            ProviderKind::Codex => "codex",
            ProviderKind::Gemini => "gemini",
            ProviderKind::Demo => "demo",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<ProviderKind> {
        ProviderKind::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
    }

    pub fn backend(self, settings: &ProviderSettings) -> Arc<dyn Backend> {
        let settings = settings.clone();
        match self {
            ProviderKind::Pi => Arc::new(pi::PiBackend::new(settings)),
            ProviderKind::Demo => Arc::new(demo::DemoBackend::new(settings)),
            ProviderKind::Claude => Arc::new(claude::ClaudeBackend::new(settings)),
            ProviderKind::Codex => Arc::new(codex::CodexBackend::new(settings)),
            ProviderKind::Gemini => Arc::new(gemini::GeminiBackend::new(settings)),
        }
    }
}

/// Names accepted by `--provider` (besides providers defined in the config).
pub(crate) const PROVIDER_NAMES: [&str; 5] = {
    let mut names = [""; 5];
    let mut index = 0;
    while index < names.len() {
        names[index] = ProviderKind::ALL[index].name();
        index += 1;
    }
    names
};

/// Builds the backend for `name` from its settings: a built-in one, or an ACP agent defined
/// in the config.
pub fn build_backend(name: &str, settings: &ProviderSettings) -> Option<Arc<dyn Backend>> {
    if let Some(kind) = ProviderKind::from_name(name) {
        return Some(kind.backend(settings));
    }
    if settings.protocol == Some(Transport::Acp) {
        return configured::ConfiguredAcpBackend::new(name, settings)
            .map(|backend| Arc::new(backend) as Arc<dyn Backend>);
    }
    None
}

/// How each real agent CLI is installed.
pub(crate) const INSTALL_COMMANDS: [(&str, &str); 4] = [
    ("pi", "npm install -g @mariozechner/pi-coding-agent"),
    ("claude", "npm install -g @anthropic-ai/claude-code"),
    ("codex", "npm install -g @openai/codex"),
    ("gemini", "npm install -g @google/gemini-cli"),
];

/// Why the built-in agent CLI `name` cannot run, and how to install it, when the program its
/// settings start (`command`, else the CLI's own name) is neither on PATH nor an executable
/// file; `None` when it is there (or `name` is not one of the real CLIs).
pub(crate) fn not_installed(name: &str, settings: &ProviderSettings) -> Option<String> {
    let (_, install) = INSTALL_COMMANDS.iter().find(|(cli, _)| *cli == name)?;
    let program = build_backend(name, settings)?
        .spawn_spec(&AttemptRequest::default())
        .program;
    let path = std::path::Path::new(&program);
    let found = if path.components().count() > 1 {
        crate::process::is_executable(path)
    } else {
        crate::process::find_on_path(&program.to_string_lossy()).is_some()
    };
    (!found).then(|| {
        format!(
            "{name} is not installed: `{}` is not on PATH. Install it with `{install}`, then \
             restart agentty or pick it again with /provider; /provider switches to another agent",
            program.to_string_lossy()
        )
    })
}

/// Builds the provider for `name` from its settings, with the one-shot transport.
pub fn build_provider(name: &str, settings: &ProviderSettings) -> Option<Arc<dyn Provider>> {
    let backend = build_backend(name, settings)?;
    Some(Arc::new(CliProvider { backend }))
}

/// Builds the provider for `name` with `transport`; `Err` says why that transport is not
/// available (the backend has no RPC mode).
pub fn build_provider_with(
    name: &str,
    settings: &ProviderSettings,
    transport: Transport,
) -> Result<Arc<dyn Provider>, String> {
    let backend = build_backend(name, settings).ok_or_else(|| match &settings.protocol {
        None if settings.command.is_some() => format!(
            "the provider `{name}` in the config needs `protocol = \"acp\"` (agentty runs \
             any Agent Client Protocol agent; other protocols need a built-in backend)"
        ),
        _ => format!(
            "unknown provider `{name}` (choose one of {}, or define it in the config)",
            PROVIDER_NAMES.join(", ")
        ),
    })?;
    if ProviderKind::from_name(name).is_none() && transport != Transport::Acp {
        return Err(format!(
            "the provider `{name}` speaks only ACP (use --transport acp, or none)"
        ));
    }
    let policy = settings
        .permissions
        .unwrap_or(crate::config::PermissionPolicy::Ask);
    provider_on(backend, transport, policy)
}

/// The provider that runs `backend` over `transport` (`policy`: how a two-way transport
/// answers permission requests); `Err` says why the backend cannot use that transport.
pub fn provider_on(
    backend: Arc<dyn Backend>,
    transport: Transport,
    policy: crate::config::PermissionPolicy,
) -> Result<Arc<dyn Provider>, String> {
    let name = backend.name().to_owned();
    match transport {
        Transport::Json => Ok(Arc::new(CliProvider { backend })),
        Transport::Rpc => {
            let probe = AttemptRequest::default();
            if backend.rpc_spawn_spec(&probe).is_none() {
                return Err(format!(
                    "the {name} provider has no RPC transport (use --transport json)"
                ));
            }
            Ok(Arc::new(pi::rpc::RpcProvider::new(backend)))
        }
        Transport::Acp => {
            let probe = AttemptRequest::default();
            if backend.acp_spawn_spec(&probe).is_none() {
                return Err(backend.acp_unavailable());
            }
            Ok(Arc::new(acp::AcpProvider::new(backend, policy)))
        }
        Transport::AppServer => {
            if backend
                .app_server_spawn_spec(&AttemptRequest::default())
                .is_none()
            {
                return Err(format!(
                    "the {name} provider has no app-server transport (it is Codex's; use \
                     --transport json)"
                ));
            }
            Ok(Arc::new(codex::app_server::AppServerProvider::new(
                backend, policy,
            )))
        }
        Transport::Stream => {
            if backend
                .stream_spawn_spec(&AttemptRequest::default())
                .is_none()
            {
                return Err(format!(
                    "the {name} provider has no stream transport (Claude Code's stream-json \
                     mode; use --transport json)"
                ));
            }
            Ok(Arc::new(claude::stream::StreamProvider::new(
                backend, policy,
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_acp_command(command: &str) -> ProviderSettings {
        ProviderSettings {
            acp_command: Some(command.into()),
            ..ProviderSettings::default()
        }
    }

    #[test]
    fn the_chat_talks_to_each_agent_the_best_way_it_has() {
        let none = ProviderSettings::default();
        assert_eq!(default_chat_transport("pi", &none), Transport::Rpc);
        assert_eq!(default_chat_transport("gemini", &none), Transport::Acp);
        assert_eq!(default_chat_transport("demo", &none), Transport::Json);
        assert_eq!(default_chat_transport("codex", &none), Transport::AppServer);
        assert_eq!(default_run_transport("codex", &none), Transport::AppServer);
        assert_eq!(default_run_transport("pi", &none), Transport::Json);
        // Claude Code's own two-way mode, in the chat and in `agentty run`.
        assert_eq!(default_chat_transport("claude", &none), Transport::Stream);
        assert_eq!(default_run_transport("claude", &none), Transport::Stream);
        assert!(permissions_not_honoured("claude", Transport::Json, true).is_some());
        assert!(permissions_not_honoured("claude", Transport::Json, false).is_none());
        assert!(permissions_not_honoured("claude", Transport::Stream, true).is_none());
        assert!(permissions_not_honoured("pi", Transport::Json, true).is_none());
        // Claude Code and Codex over their ACP adapters when one is configured (or on PATH).
        for name in ["claude", "codex"] {
            assert_eq!(
                default_chat_transport(name, &with_acp_command("/opt/adapter")),
                Transport::Acp,
                "{name}"
            );
        }
        // A provider defined in the config speaks what it says.
        let configured = ProviderSettings {
            protocol: Some(Transport::Acp),
            command: Some("/opt/agent".into()),
            ..ProviderSettings::default()
        };
        assert_eq!(default_chat_transport("mine", &configured), Transport::Acp);
        assert!(build_provider_with("mine", &configured, Transport::Acp).is_ok());
        assert!(build_provider_with("mine", &configured, Transport::Json).is_err());
        let unknown = build_provider_with("nope", &none, Transport::Json);
        assert!(unknown.is_err_and(|message| message.contains("unknown provider `nope`")));
    }
}
