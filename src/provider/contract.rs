//! The contract between the orchestrator and every backend: what one attempt is asked
//! ([`AttemptRequest`]), what it gives back ([`AgentStream`]), the traits a backend
//! ([`Backend`]) and a transport ([`Provider`]) implement, and the agent CLIs agentty knows
//! ([`ProviderKind`]: names, install commands). What a backend and a transport can do is data
//! they declare (`capabilities`); the shared status types are in `agent_status`. Every backend
//! imports this; this imports no backend and names no transport's protocol (the factory is
//! `super::registry`).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;

use super::agent_status::{AgentQueue, AgentSetting, AgentStatus};
use super::capabilities::{Capabilities, Interjection, LiveTransport, Quirks};
use super::checkpoint::{BranchPoint, SessionCheckpoint};
use super::mapper::Mapper;
use crate::config::Transport;
use crate::process::{SpawnSpec, StopControl};
use crate::stream::AgentMessage;

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
    /// Images sent with the prompt (only to transports that take them; the app refuses the
    /// others before sending). Every attempt of the turn sends the same ones.
    pub images: Vec<crate::attachment::ImageAttachment>,
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

impl AttemptRequest {
    /// The directory the agent works in, as a protocol names it: the request's, else
    /// agentty's own.
    pub(crate) fn working_dir(&self) -> String {
        self.cwd
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"))
            .display()
            .to_string()
    }
}

/// A sink for the agent's raw stdout lines (the session log). The attempt awaits each record,
/// so a sink that bounds its buffer slows the reading of the agent instead of growing memory.
/// The line is lent: a sink that keeps it copies it (into a buffer it can reuse).
#[derive(Clone)]
pub struct RawLineTap(Arc<RecordRawLine>);

type RecordRawLine = dyn for<'a> Fn(&'a str) -> BoxFuture<'a, ()> + Send + Sync;

impl RawLineTap {
    pub(crate) fn new<F>(tap: F) -> Self
    where
        F: for<'a> Fn(&'a str) -> BoxFuture<'a, ()> + Send + Sync + 'static,
    {
        Self(Arc::new(tap))
    }

    pub(crate) async fn record(&self, line: &str) {
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
    /// knows (see [`super::checkpoint`]). `None` means a failed attempt cannot be undone: the
    /// conversation goes on in the session as it is, and the user is told.
    fn session_file(&self, session_id: &str, request: &AttemptRequest) -> Option<PathBuf> {
        let _ = (session_id, request);
        None
    }
    /// Whether the CLI writes a turn to its session file only after reporting the turn's end
    /// (Claude Code, also under its ACP adapter): a checkpoint right after waits for the write.
    fn writes_session_after_turn(&self) -> bool {
        false
    }
    /// Files the CLI updates along with a session, restored with it (see [`super::checkpoint`]).
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
    /// The running agent has loaded the stored session `session_id`: tidy what the load left
    /// that a later launch of the CLI would misread. Nothing to do for most CLIs.
    fn session_loaded(&self, session_id: &str, request: &AttemptRequest) {
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
    /// The long-lived, two-way transports this backend speaks (declared once, when it is
    /// built), each ready or saying why it cannot run; the one-shot JSON mode is
    /// [`Backend::spawn_spec`]'s.
    fn live_transports(&self) -> Vec<LiveTransport> {
        Vec::new()
    }
    /// How to start the CLI speaking `transport` (one of [`Backend::live_transports`]) for
    /// `request`; `None` for a transport it does not speak.
    fn live_spawn_spec(&self, transport: Transport, request: &AttemptRequest) -> Option<SpawnSpec> {
        let _ = (transport, request);
        None
    }
    /// How this backend's agent departs from `transport`'s protocol.
    fn quirks(&self, transport: Transport, request: &AttemptRequest) -> Quirks {
        let _ = (transport, request);
        Quirks::default()
    }
    /// The user stopped a turn after the agent had written `texts` (steering it took from its
    /// queue but never answered) into its session file `session_file`: take them out, so that
    /// no later request carries them. Returns how many it took out. Nothing to do for most CLIs.
    fn take_back_unanswered(&self, session_file: &Path, texts: &[String]) -> io::Result<usize> {
        let _ = (session_file, texts);
        Ok(0)
    }
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
    /// What this provider's transport lets agentty do (declared as data).
    fn capabilities(&self) -> Capabilities {
        Capabilities::ONE_SHOT
    }
    /// How this provider talks to its agent (for the status bar and help).
    fn transport(&self) -> Transport {
        self.capabilities().transport
    }
    /// Whether the transport sends images with a prompt (an ACP agent says so itself, in
    /// [`AgentStatus::accepts_images`], once it is initialised).
    fn accepts_images(&self) -> bool {
        self.capabilities().images.taken()
    }
    /// Whether [`Provider::interject`] can reach a running turn (else prompts wait in the queue).
    fn can_interject(&self) -> bool {
        self.capabilities().steers()
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
        self.capabilities().permission_feedback
    }
    /// The orchestrator restored the agent's stored session from a checkpoint: whatever the
    /// provider holds of it in memory is out of date.
    fn session_restored(&self) {}
    /// The conversation goes back to `point` (a checkpoint the agent holds itself): the next
    /// attempt continues the agent's history branched there, the history as it is now kept
    /// unchanged. `None` drops a branch not yet made (the rewind was undone). False where the
    /// agent cannot branch its history.
    fn branch_session(&self, _point: Option<&BranchPoint>) -> bool {
        false
    }
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
    /// Whether [`Provider::compact`] can compact the agent's conversation now (asked when the
    /// user asks, so an agent that announces its commands later can say so then).
    fn can_compact(&self) -> bool {
        false
    }
    /// Compacts the agent's conversation in `request.session` (`instructions`: what the
    /// summary should keep): an attempt like [`Provider::execute`]'s, its stream ending with
    /// one terminal message, the result said in a `compacted` notice (see
    /// [`super::compaction`]). Only called when [`Provider::can_compact`].
    fn compact(
        &self,
        request: AttemptRequest,
        instructions: Option<String>,
        stop: StopControl,
    ) -> AgentStream {
        let _ = (request, instructions, stop);
        super::compaction::unavailable_stream(self.name(), self.transport())
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
    pub(crate) const fn name(self) -> &'static str {
        match self {
            ProviderKind::Pi => "pi",
            ProviderKind::Claude => "claude",
            ProviderKind::Codex => "codex",
            ProviderKind::Gemini => "gemini",
            ProviderKind::Demo => "demo",
        }
    }

    /// The agent as the user knows it.
    pub(crate) const fn display_name(self) -> &'static str {
        match self {
            ProviderKind::Pi => "pi",
            ProviderKind::Claude => "Claude Code",
            ProviderKind::Codex => "Codex",
            ProviderKind::Gemini => "Gemini CLI",
            ProviderKind::Demo => "the demo agent",
        }
    }

    /// How the agent CLI is installed (`None`: the demo agent is agentty's own).
    pub(crate) const fn install_command(self) -> Option<&'static str> {
        match self {
            ProviderKind::Pi => Some("npm install -g @mariozechner/pi-coding-agent"),
            ProviderKind::Claude => Some("npm install -g @anthropic-ai/claude-code"),
            ProviderKind::Codex => Some("npm install -g @openai/codex"),
            ProviderKind::Gemini => Some("npm install -g @google/gemini-cli"),
            ProviderKind::Demo => None,
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<ProviderKind> {
        ProviderKind::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
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
