//! One live ACP agent process: JSON-RPC 2.0 over its stdio, one object per line.
//!
//! The router task reads the agent's stdout: a response to a request someone waits for
//! (`initialize`, `session/new`, `session/load`) goes to that waiter; everything else (updates,
//! the agent's own requests, the prompt's answer, responses to ids nobody used) goes to the
//! attempt that reads the turn, in order; the exit report comes last. Commands are written by a
//! task that owns stdin.

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::connection::{Connection, Waiters};
use super::mapper::{id_key, AcpMapper, RpcError, RpcHead};
use super::settings::AcpShared;
use crate::process::Line;
use crate::provider::live_process::{LiveItem, LiveProcess, LiveSession, ResponseRouter};
use crate::provider::runner::{self, AttemptMapping, EndedBy};
use crate::provider::{AgentSetting, AttemptRequest, Backend, SessionRef};
use crate::stream::{AgentMessage, FailureReason};

/// How long a starting agent may take to answer `initialize` and open its session (the Claude
/// adapter starts Claude Code inside `session/new`: about 1.2 s here, far more on a cold disk).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// After `session/load`, how long the agent must be quiet before its history replay counts
/// as over (Gemini CLI replays a long session in a few milliseconds).
const HISTORY_QUIET: Duration = Duration::from_millis(100);
/// The longest a history replay may hold up the first prompt.
const HISTORY_LIMIT: Duration = Duration::from_secs(5);
/// The ACP version agentty speaks.
const PROTOCOL_VERSION: u64 = 1;

/// Responses to `initialize`, `session/new` and `session/load` (and settings) go to their
/// waiters. The router also follows the agent's mode, which the agent may change at any time
/// (`current_mode_update`, between turns too), before the line goes on to the turn.
struct JsonRpcRouter {
    waiters: Waiters,
    shared: AcpShared,
}

impl JsonRpcRouter {
    fn follow_mode(&self, line: &Line) {
        if memchr::memmem::find(line.text.as_bytes(), b"\"current_mode_update\"").is_none() {
            return;
        }
        let Ok(message) = serde_json::from_str::<Value>(&line.text) else {
            return;
        };
        if let Ok(notification) =
            serde_json::from_value::<acp::SessionNotification>(message["params"].clone())
        {
            if let acp::SessionUpdate::CurrentModeUpdate(update) = notification.update {
                self.shared.saw_mode(update.current_mode_id.to_string());
            }
        }
    }
}

impl ResponseRouter for JsonRpcRouter {
    fn deliver(&self, line: &Line) -> bool {
        self.follow_mode(line);
        // During a turn nobody waits: the turn's lines are not parsed twice.
        if self
            .waiters
            .lock()
            .map_or(true, |waiters| waiters.is_empty())
        {
            return false;
        }
        let Some(head) = RpcHead::parse(&line.text).filter(RpcHead::is_response) else {
            return false;
        };
        let Some(key) = head.id.as_ref().map(id_key) else {
            return false;
        };
        let waiter = self
            .waiters
            .lock()
            .ok()
            .and_then(|mut waiters| waiters.remove(&key));
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(head);
                true
            }
            None => false,
        }
    }
}

/// One live ACP agent with its session open.
pub(super) struct AcpSession {
    pub(super) connection: Connection,
    pub(super) process: LiveProcess,
    pub(super) session_id: String,
    /// The session it was started for, and whether it has had a prompt yet.
    started_for: SessionRef,
    pub(super) prompted: bool,
    /// The session was loaded (not created): its first turn continues a conversation.
    pub(super) loaded: bool,
    /// The backend it runs for, and the request it was started for (to load a session again).
    backend: Arc<dyn Backend>,
    request: AttemptRequest,
    /// What the provider shows of the session and how it reaches it between turns.
    shared: AcpShared,
}

/// Why a start failed: the terminal message for the attempt.
pub(super) type StartFailure = AgentMessage;

impl AcpSession {
    /// Starts the agent, initialises it and opens (or loads) `request.session`.
    pub(super) async fn start(
        backend: Arc<dyn Backend>,
        request: &AttemptRequest,
        shared: AcpShared,
    ) -> Result<Self, StartFailure> {
        let Some(mut spec) = backend.acp_spawn_spec(request) else {
            return Err(runner::start_failed(format!(
                "the {} provider has no ACP transport",
                backend.name()
            )));
        };
        if spec.cwd.is_none() {
            spec.cwd = request.cwd.clone();
        }
        if let SessionRef::Resume(id) = &request.session {
            backend.prepare_session_load(id, request);
        }
        let waiters = Waiters::default();
        let router = JsonRpcRouter {
            waiters: waiters.clone(),
            shared: shared.clone(),
        };
        let process =
            LiveProcess::start(&spec, router, "ACP agent").map_err(runner::start_failed)?;
        let connection = Connection {
            lines: process.commands.clone(),
            waiters,
            next_id: Arc::new(AtomicU64::new(0)),
        };
        let mut session = Self {
            connection,
            process,
            session_id: String::new(),
            started_for: request.session.clone(),
            prompted: false,
            loaded: false,
            backend,
            request: request.clone(),
            shared,
        };
        match session.open(request).await {
            Ok(()) => {
                session.apply_settings(&request.settings).await;
                session.publish();
                Ok(session)
            }
            Err(failure) => Err(session.start_failure(failure).await),
        }
    }

    /// `session/new` for `request`; the session id, or why not.
    async fn new_session(&mut self, request: &AttemptRequest) -> Result<String, OpenFailure> {
        let new = self.connection.request(
            "session/new",
            json!({"cwd": session_cwd(request), "mcpServers": []}),
        );
        let created = self.await_result("session/new", new).await?;
        self.shared.saw_choices(&created);
        match created["sessionId"].as_str() {
            Some(id) => Ok(id.to_owned()),
            None => Err(OpenFailure::Refused(format!(
                "session/new answered without a sessionId: {created}"
            ))),
        }
    }

    /// `initialize`, then `session/new` or `session/load`.
    async fn open(&mut self, request: &AttemptRequest) -> Result<(), OpenFailure> {
        let initialize = self.connection.request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                // Only what agentty implements fully: no file system, no terminals.
                "clientCapabilities": {
                    "fs": {"readTextFile": false, "writeTextFile": false},
                    "terminal": false
                },
                "clientInfo": {"name": "agentty", "version": env!("CARGO_PKG_VERSION")}
            }),
        );
        let initialized = self.await_result("initialize", initialize).await?;
        let can_load = initialized["agentCapabilities"]["loadSession"] == Value::Bool(true);
        self.shared.saw_prompt_capabilities(&initialized);
        let cwd = session_cwd(request);
        match &request.session {
            SessionRef::Resume(id) if can_load => self.load_session(id, &cwd).await,
            SessionRef::Resume(_) => Err(OpenFailure::Lost(
                "the agent cannot load a session (no loadSession capability)".to_owned(),
            )),
            SessionRef::New | SessionRef::ContinueLatest => {
                self.session_id = self.new_session(request).await?;
                Ok(())
            }
        }
    }

    /// `session/load` of `id`, its replayed history skipped.
    async fn load_session(&mut self, id: &str, cwd: &str) -> Result<(), OpenFailure> {
        let load = self.connection.request(
            "session/load",
            json!({"sessionId": id, "cwd": cwd, "mcpServers": []}),
        );
        match self.await_result("session/load", load).await {
            Ok(loaded) => {
                self.shared.saw_choices(&loaded);
                self.session_id = id.to_owned();
                self.loaded = true;
                self.skip_replayed_history().await;
                Ok(())
            }
            Err(OpenFailure::Refused(error)) => Err(OpenFailure::Lost(error)),
            Err(other) => Err(other),
        }
    }

    /// The conversation's settings, on the session just opened (an adapter starts each
    /// session on its default model and mode, a restarted one too).
    async fn apply_settings(&self, settings: &[AgentSetting]) {
        self.shared
            .apply(&self.connection, &self.session_id, settings)
            .await;
    }

    /// The provider reaches this session between turns from now on.
    fn publish(&self) {
        self.shared
            .publish(self.connection.clone(), self.session_id.clone());
    }

    /// Waits for the response to `method`, while dropping what else comes (a loaded session's
    /// history, the agent's announcements).
    async fn await_result(
        &mut self,
        method: &str,
        mut response: oneshot::Receiver<RpcHead>,
    ) -> Result<Value, OpenFailure> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            tokio::select! {
                head = &mut response => {
                    let Ok(head) = head else {
                        return Err(OpenFailure::Exited);
                    };
                    return match head.error {
                        Some(error) => Err(OpenFailure::Refused(describe(method, &error))),
                        None => Ok(head.result.unwrap_or(Value::Null)),
                    };
                }
                item = self.process.items.recv() => match item {
                    Some(LiveItem::Line(line)) => {
                        tracing::debug!(line = %line.text, method, "ACP line while opening the session");
                    }
                    Some(LiveItem::Exited(report)) => {
                        self.process.exited = Some(report);
                        return Err(OpenFailure::Exited);
                    }
                    None => return Err(OpenFailure::Exited),
                },
                _ = tokio::time::sleep_until(deadline) => {
                    return Err(OpenFailure::Refused(format!(
                        "the agent did not answer {method} within {} s",
                        START_TIMEOUT.as_secs()
                    )));
                }
            }
        }
    }

    /// A loaded session's history, replayed as `session/update`s, is what the transcript
    /// already holds: it is dropped, never taken for the next turn's answer. The protocol
    /// replays before answering `session/load`, and `await_result` drops that; Gemini CLI
    /// answers first and replays after (its `streamHistory` is not awaited), so whatever comes
    /// until the agent has been quiet for [`HISTORY_QUIET`] is history too.
    async fn skip_replayed_history(&mut self) {
        let deadline = Instant::now() + HISTORY_LIMIT;
        let mut skipped = 0usize;
        loop {
            let quiet = tokio::time::sleep(HISTORY_QUIET);
            tokio::select! {
                item = self.process.items.recv() => match item {
                    Some(LiveItem::Line(line)) => {
                        skipped += 1;
                        tracing::debug!(line = %line.text, "ACP history replayed after session/load; skipped");
                    }
                    Some(LiveItem::Exited(report)) => {
                        self.process.exited = Some(report);
                        break;
                    }
                    None => break,
                },
                _ = quiet => break,
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        if skipped > 0 {
            tracing::info!(
                skipped,
                "skipped the history the agent replayed after session/load"
            );
        }
    }

    /// The terminal message of a start that failed; the process is ended.
    async fn start_failure(mut self, failure: OpenFailure) -> AgentMessage {
        if self.process.exited.is_none() {
            self.process.process_stop.kill_now();
        }
        let report = self.process.wait_exit().await;
        let stderr = self.process.stderr_text();
        let mapping = AttemptMapping::new(Box::new(AcpMapper::new(None)));
        let mut out = Vec::new();
        let mut terminal = mapping.finish(&report, EndedBy::Exit, stderr, &mut out);
        if let AgentMessage::Failed(failed) = &mut terminal {
            match failure {
                OpenFailure::Exited => {
                    failed.reason = FailureReason::StartFailed;
                    let said = failed
                        .stderr
                        .lines()
                        .rev()
                        .find(|line| !line.trim().is_empty())
                        .map(str::trim)
                        .unwrap_or("it exited before answering initialize");
                    failed.message = format!("the ACP agent did not start: {said}");
                }
                OpenFailure::Refused(message) => {
                    failed.reason = FailureReason::StartFailed;
                    failed.message = message;
                }
                OpenFailure::Lost(message) => {
                    failed.reason = FailureReason::SessionLost;
                    failed.message = message;
                }
            }
        }
        terminal
    }
}

impl LiveSession for AcpSession {
    /// Does this live process hold `session` (and is it still running)?
    fn serves(&mut self, session: &SessionRef) -> bool {
        if !self.process.is_running() {
            return false;
        }
        if !self.prompted && *session == self.started_for {
            return true;
        }
        matches!(session, SessionRef::Resume(id) if *id == self.session_id)
    }

    /// The restored session file read again by the running agent (`session/load` of the
    /// session it holds), where the agent is known to re-read it ([`super::AcpQuirks`]).
    async fn reload(&mut self, attempt: &AttemptRequest) -> bool {
        let session = SessionRef::Resume(self.session_id.clone());
        let request = AttemptRequest {
            session: session.clone(),
            ..self.request.clone()
        };
        if !self.backend.acp_quirks(&request).reloads_in_process || !self.process.is_running() {
            return false;
        }
        self.backend
            .prepare_session_load(&self.session_id, &request);
        let id = self.session_id.clone();
        match self.load_session(&id, &session_cwd(&request)).await {
            Ok(()) => {
                tracing::info!(session = %id, "the ACP agent re-read the restored session");
                self.apply_settings(&attempt.settings).await;
                self.publish();
                self.prompted = false;
                self.process.forget_stderr();
                true
            }
            Err(_) => false,
        }
    }

    /// `session/new` in the running agent: a retry in a fresh session, or a new conversation,
    /// costs no cold start.
    async fn open_new(&mut self, request: &AttemptRequest) -> bool {
        if !self.process.is_running() {
            return false;
        }
        match self.new_session(request).await {
            Ok(id) => {
                tracing::info!(session = %id, "a new ACP session in the running agent");
                self.session_id = id;
                self.apply_settings(&request.settings).await;
                self.publish();
                self.started_for = request.session.clone();
                self.prompted = false;
                self.process.forget_stderr();
                self.loaded = false;
                true
            }
            Err(_) => false,
        }
    }

    /// Ends the agent: stdin closed, then the three-stage stop (the Claude and Codex adapters
    /// do not exit on EOF), and waits for it.
    async fn close(self) {
        let Self {
            connection,
            process,
            ..
        } = self;
        drop(connection);
        process
            .close(crate::process::timings::EXIT_AFTER_CLOSE_ACP)
            .await;
    }
}

/// Why opening the session failed.
enum OpenFailure {
    /// The process ended first.
    Exited,
    /// The agent answered with an error (or not at all).
    Refused(String),
    /// The agent cannot continue the session asked for.
    Lost(String),
}

/// The working directory a session is opened in: the request's, else agentty's own.
fn session_cwd(request: &AttemptRequest) -> String {
    request
        .cwd
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| Path::new("/").to_path_buf())
        .display()
        .to_string()
}

fn describe(method: &str, error: &RpcError) -> String {
    format!("the agent refused {method}: {}", error.describe())
}
