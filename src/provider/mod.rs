//! Providers: one attempt of one agent CLI, mapped into the shared stream.
//!
//! A provider never retries. Its stream always ends with exactly one `terminal.*` message, and
//! a failed start is such a message (`start_failed`), never an error return. Retry policy lives
//! in the orchestrator only.

pub mod claude;
pub mod codex;
pub(crate) mod common;
pub mod demo;
pub mod gemini;
pub mod mapper;
pub mod pi;
pub mod reconcile;
pub mod runner;
pub mod select;

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::config::ProviderSettings;
use crate::process::SpawnSpec;
use crate::stream::AgentMessage;
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
    fn name(&self) -> &'static str;
    fn spawn_spec(&self, request: &AttemptRequest) -> SpawnSpec;
    fn mapper(&self, request: &AttemptRequest) -> Box<dyn Mapper>;
}

/// How the caller asks a running attempt to stop, and watches the stop progress.
///
/// Cloning shares the same stop. `stop()` starts the three-stage stop; a second `stop()` (or
/// `kill_now()`) skips the rest of the grace period.
#[derive(Debug, Clone)]
pub struct StopControl {
    stop: CancellationToken,
    kill: CancellationToken,
    progress: Arc<watch::Sender<StopProgress>>,
}

/// Where the three-stage stop is, for the status bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StopProgress {
    #[default]
    Running,
    /// Ctrl+C byte / SIGINT sent.
    Interrupting,
    /// Waiting for the agent to exit on its own (up to 2 s).
    Waiting,
    /// SIGKILL sent to the whole tree; confirming it is gone.
    Killing,
    /// The agent is gone.
    Stopped,
}

impl Default for StopControl {
    fn default() -> Self {
        Self::new()
    }
}

impl StopControl {
    pub fn new() -> Self {
        let (progress, _) = watch::channel(StopProgress::Running);
        Self {
            stop: CancellationToken::new(),
            kill: CancellationToken::new(),
            progress: Arc::new(progress),
        }
    }

    /// Requests the stop; a repeated request escalates to the kill.
    pub fn stop(&self) {
        if self.stop.is_cancelled() {
            self.kill.cancel();
        }
        self.stop.cancel();
    }

    pub fn kill_now(&self) {
        self.stop.cancel();
        self.kill.cancel();
    }

    pub fn is_stop_requested(&self) -> bool {
        self.stop.is_cancelled()
    }

    pub fn stop_token(&self) -> &CancellationToken {
        &self.stop
    }

    pub fn kill_token(&self) -> &CancellationToken {
        &self.kill
    }

    pub fn subscribe(&self) -> watch::Receiver<StopProgress> {
        self.progress.subscribe()
    }

    pub fn progress(&self) -> StopProgress {
        *self.progress.borrow()
    }

    pub(crate) fn set_progress(&self, progress: StopProgress) {
        self.progress.send_replace(progress);
    }
}

/// One agent CLI, behind the single-attempt contract.
pub trait Provider: Send + Sync {
    fn name(&self) -> &str;
    /// Starts one attempt. Never fails: every failure is the stream's terminal message.
    fn execute(&self, request: AttemptRequest, stop: StopControl) -> AgentStream;
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

    pub fn from_backend(backend: Arc<dyn Backend>) -> Self {
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
}

/// Names accepted by `--provider`.
pub const PROVIDER_NAMES: [&str; 5] = ["pi", "claude", "codex", "gemini", "demo"];

/// Builds the backend for `name` from its settings.
pub fn build_backend(name: &str, settings: &ProviderSettings) -> Option<Arc<dyn Backend>> {
    let settings = settings.clone();
    let backend: Arc<dyn Backend> = match name {
        "pi" => Arc::new(pi::PiBackend::new(settings)),
        "demo" => Arc::new(demo::DemoBackend::new(settings)),
        "claude" => Arc::new(claude::ClaudeBackend::new(settings)),
        "codex" => Arc::new(codex::CodexBackend::new(settings)),
        "gemini" => Arc::new(gemini::GeminiBackend::new(settings)),
        _ => return None,
    };
    Some(backend)
}

/// Builds the provider for `name` from its settings.
pub fn build_provider(name: &str, settings: &ProviderSettings) -> Option<Arc<dyn Provider>> {
    let backend = build_backend(name, settings)?;
    Some(Arc::new(CliProvider { backend }))
}
