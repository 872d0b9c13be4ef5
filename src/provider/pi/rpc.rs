//! pi's RPC mode (`pi --mode rpc`) as a long-lived, two-way transport: one pi process per
//! conversation, commands on its stdin, responses correlated by `id` (they can come out of
//! order), events mapped by the same [`PiMapper`](super::mapper::PiMapper) as JSON mode.
//!
//! Invariants (protocols/pi/README.md §8):
//! - One attempt = one `prompt` on the live process; its stream ends at `agent_end` (or when
//!   the process dies) with exactly one terminal message, composed by the runner's
//!   [`AttemptMapping`] as for one-shot attempts.
//! - pi's own auto-retry is off (`set_auto_retry`): only the orchestrator retries.
//! - Retry never duplicates: a failed attempt stays in pi's memory, so the process is ended
//!   (before the terminal message, so nothing it writes races the rollback) and the next
//!   attempt starts pi again on the restored session file. After any rollback the orchestrator
//!   calls [`Provider::session_restored`], which does the same.
//! - The stop runs stage 0 first: `abort`, then up to [`ABORT_GRACE`] for `agent_end`. If the
//!   turn does not end, the process layer's three-stage stop runs on the whole tree and the next
//!   attempt starts pi again on the same session file. Nothing pi or its tools started
//!   outlives a stop: the tree kill sweeps what pi leaves.
//! - The process ends when the provider is dropped (stdin closed, then the three-stage stop).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::provider::runner::{spawn_attempt, AttemptSink};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::process::{self, ExitReport, Line, StopControl, StopProgress};
use crate::provider::runner::{self, progress_changed, sleep_until_opt, AttemptMapping, EndedBy};
use crate::provider::{
    AgentStream, AttemptRequest, Backend, Interjection, Provider, SessionCheckpoint, SessionRef,
};
use crate::stream::{failure_reason, notice_kind, AgentMessage, Failure, StopStage};

/// Stage 0 of the stop: how long an `abort` may take to end the turn.
pub(crate) const ABORT_GRACE: Duration = Duration::from_secs(2);
/// How long a starting pi may take to answer `get_state` (a cold start is about 1.2 s).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// After a failed attempt, how long pi may take to exit once its stdin is closed.
const EXIT_AFTER_CLOSE: Duration = Duration::from_secs(2);
/// After the process exits, how long its stdout may stay open (a grandchild holding it).
const STDOUT_DRAIN_AFTER_EXIT: Duration = Duration::from_millis(1000);

/// What pi's steering queues hold (its `queue_update` event), for the UI.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentQueue {
    pub steering: Vec<String>,
    pub follow_up: Vec<String>,
}

/// The RPC transport of a pi-speaking backend (pi itself, or the demo agent).
pub struct RpcProvider {
    backend: Arc<dyn Backend>,
    /// The live process; locked by the attempt that uses it.
    live: Arc<tokio::sync::Mutex<Option<RpcSession>>>,
    /// Set after a rollback of the session file: the live process must not be reused.
    stale: Arc<AtomicBool>,
    /// The running attempt's command writer, for steer and follow-up.
    commands: Arc<Mutex<Option<CommandWriter>>>,
    queue: watch::Sender<AgentQueue>,
    status: watch::Sender<AgentStatus>,
}

/// pi's model, thinking level, session cost and tokens (`get_state`, `get_session_stats`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentStatus {
    pub model: Option<String>,
    pub thinking_level: Option<String>,
    pub cost_usd: Option<f64>,
    pub tokens: Option<u64>,
}

impl RpcProvider {
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        Self {
            backend,
            live: Arc::new(tokio::sync::Mutex::new(None)),
            stale: Arc::new(AtomicBool::new(false)),
            commands: Arc::new(Mutex::new(None)),
            queue: watch::channel(AgentQueue::default()).0,
            status: watch::channel(AgentStatus::default()).0,
        }
    }

    /// pi's queued steering and follow-up messages, as its `queue_update` events tell.
    pub fn queue(&self) -> watch::Receiver<AgentQueue> {
        self.queue.subscribe()
    }

    /// pi's model and thinking level, and the session's cost and tokens so far.
    pub fn status(&self) -> watch::Receiver<AgentStatus> {
        self.status.subscribe()
    }
}

impl Provider for RpcProvider {
    fn name(&self) -> &str {
        self.backend.name()
    }

    fn execute(&self, request: AttemptRequest, stop: StopControl) -> AgentStream {
        let attempt = |sink| RpcAttempt {
            backend: self.backend.clone(),
            live: self.live.clone(),
            stale: self.stale.clone(),
            commands: self.commands.clone(),
            queue: self.queue.clone(),
            status: self.status.clone(),
            sink,
            stop: stop.clone(),
        };
        spawn_attempt(stop.clone(), move |sink| attempt(sink).run(request))
    }

    fn checkpoint(&self, request: &AttemptRequest) -> Option<SessionCheckpoint> {
        let SessionRef::Resume(id) = &request.session else {
            return None;
        };
        let path = self.backend.session_file(id, request)?;
        SessionCheckpoint::capture(path, self.backend.session_companions(request))
            .map_err(|error| tracing::warn!(%error, "cannot read the agent's session file"))
            .ok()
    }

    fn can_interject(&self) -> bool {
        true
    }

    fn interject(&self, kind: Interjection, text: &str) -> bool {
        let Ok(commands) = self.commands.lock() else {
            return false;
        };
        let Some(writer) = commands.as_ref() else {
            return false;
        };
        let (command, id_prefix) = match kind {
            Interjection::Steer => ("steer", "steer"),
            Interjection::FollowUp => ("follow_up", "follow"),
        };
        writer.send(id_prefix, json!({"type": command, "message": text}))
    }

    fn session_restored(&self) {
        self.stale.store(true, Ordering::SeqCst);
    }

    fn warm_up(&self, request: AttemptRequest) {
        let backend = self.backend.clone();
        let live = self.live.clone();
        let status = self.status.clone();
        tokio::spawn(async move {
            let mut slot = live.lock().await;
            if slot.is_some() {
                return;
            }
            match RpcSession::start(backend.as_ref(), &request, &status).await {
                Ok(session) => *slot = Some(session),
                // The first prompt starts pi again and reports the failure in its stream.
                Err(terminal) => {
                    tracing::warn!(?terminal, "pi did not start ahead of the first prompt")
                }
            }
        });
    }

    fn agent_queue(&self) -> Option<watch::Receiver<AgentQueue>> {
        Some(self.queue())
    }

    fn agent_status(&self) -> Option<watch::Receiver<AgentStatus>> {
        Some(self.status())
    }
}

impl Drop for RpcProvider {
    fn drop(&mut self) {
        // With no attempt running, end the process now; a running attempt holds `live`, and
        // the process ends when that attempt lets go of it (see `RpcSession`'s drop).
        if let Ok(mut live) = self.live.try_lock() {
            live.take();
        }
    }
}

/// Writes commands on pi's stdin (through a task that owns it) and correlates responses.
#[derive(Clone)]
struct CommandWriter {
    lines: mpsc::UnboundedSender<String>,
    pending: Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>,
    next_id: Arc<AtomicU64>,
}

impl CommandWriter {
    fn next_id(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends a command whose response nobody waits for (a failure becomes a notice).
    fn send(&self, prefix: &str, mut command: Value) -> bool {
        command["id"] = Value::String(self.next_id(prefix));
        self.lines.send(command.to_string()).is_ok()
    }

    /// Sends a command; the receiver gets its response.
    fn request(&self, prefix: &str, mut command: Value) -> oneshot::Receiver<Value> {
        let id = self.next_id(prefix);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id.clone(), tx);
        }
        command["id"] = Value::String(id);
        let _ = self.lines.send(command.to_string());
        rx
    }
}

/// What the router hands the attempt that reads the process.
enum SessionItem {
    /// An event line (or a response nobody waited for).
    Line(Line),
    /// The process is gone (stdout drained).
    Exited(ExitReport),
}

/// One live `pi --mode rpc` process.
struct RpcSession {
    writer: CommandWriter,
    items: mpsc::Receiver<SessionItem>,
    stderr_lines: mpsc::Receiver<String>,
    stderr_tail: Arc<Mutex<process::StderrTail>>,
    /// The process's own stop (the three signal stages).
    process_stop: StopControl,
    session_id: Option<String>,
    session_file: Option<String>,
    /// The process has exited; it cannot take another prompt.
    exited: Option<ExitReport>,
    /// The session it was started for, and whether it has had a prompt yet (a process
    /// started ahead of the first prompt serves that prompt's session).
    started_for: SessionRef,
    prompted: bool,
}

impl RpcSession {
    /// Starts pi for `request.session` and asks it for its state; `Err` is the terminal message.
    async fn start(
        backend: &dyn Backend,
        request: &AttemptRequest,
        status: &watch::Sender<AgentStatus>,
    ) -> Result<Self, AgentMessage> {
        let Some(spec) = backend.rpc_spawn_spec(request) else {
            return Err(runner::start_failed(format!(
                "the {} backend has no RPC mode",
                backend.name()
            )));
        };
        if let Some(message) = runner::start_problem(&spec) {
            return Err(runner::start_failed(message));
        }
        let process_stop = StopControl::new();
        let (agent, stdin) = process::spawn_with_stdin(&spec, process_stop.clone())
            .map_err(|error| runner::start_failed(error.to_string()))?;
        tracing::info!(pid = agent.pid, command = %spec.display(), "rpc agent started");
        let (lines_tx, lines_rx) = mpsc::unbounded_channel();
        tokio::spawn(process::write_lines(stdin, lines_rx));
        let writer = CommandWriter {
            lines: lines_tx,
            pending: Arc::new(Mutex::new(HashMap::new())),
            next_id: Arc::new(AtomicU64::new(1)),
        };
        let (items_tx, items) = mpsc::channel(512);
        let process::AgentProcess {
            stdout,
            stderr_lines,
            stderr_tail,
            exit,
            ..
        } = agent;
        tokio::spawn(route(stdout, exit, writer.pending.clone(), items_tx));
        let mut session = Self {
            writer,
            items,
            stderr_lines,
            stderr_tail,
            process_stop,
            session_id: None,
            session_file: None,
            exited: None,
            started_for: request.session.clone(),
            prompted: false,
        };
        session
            .writer
            .send("retry", json!({"type": "set_auto_retry", "enabled": false}));
        let state = session
            .writer
            .request("state", json!({"type": "get_state"}));
        match session.await_response(state, START_TIMEOUT).await {
            Ok(state) => {
                let data = &state["data"];
                session.session_id = data["sessionId"].as_str().map(str::to_owned);
                session.session_file = data["sessionFile"].as_str().map(str::to_owned);
                status.send_modify(|status| {
                    status.model = data["model"]["id"].as_str().map(str::to_owned);
                    status.thinking_level = data["thinkingLevel"].as_str().map(str::to_owned);
                });
                Ok(session)
            }
            Err(report) => {
                let report = match report {
                    Some(report) => report,
                    None => {
                        session.process_stop.kill_now();
                        session.wait_exit().await
                    }
                };
                let mapping = AttemptMapping::new(backend.mapper(request));
                let mut out = Vec::new();
                let mut terminal =
                    mapping.finish(&report, EndedBy::Exit, session.stderr_text(), &mut out);
                if let AgentMessage::Failed(failure) = &mut terminal {
                    if failure.reason == failure_reason::NO_COMPLETION {
                        failure.reason = failure_reason::START_FAILED.into();
                        let said = failure.stderr.lines().find(|line| !line.trim().is_empty());
                        failure.message = match said {
                            Some(said) => format!("pi in RPC mode did not start: {}", said.trim()),
                            None => "pi in RPC mode ended without answering get_state (an agent \
                                     that speaks only pi's JSON mode needs --transport json)"
                                .to_owned(),
                        };
                    }
                }
                if request.session != SessionRef::New {
                    runner::mark_lost_session(&mut terminal, backend.lost_session_phrases());
                }
                Err(terminal)
            }
        }
    }

    /// Waits for a response, while keeping stray lines; `Err(Some)` when the process exited,
    /// `Err(None)` on timeout.
    async fn await_response(
        &mut self,
        mut response: oneshot::Receiver<Value>,
        timeout: Duration,
    ) -> Result<Value, Option<ExitReport>> {
        let deadline = Instant::now() + timeout;
        loop {
            tokio::select! {
                value = &mut response => return value.map_err(|_| None),
                item = self.items.recv() => match item {
                    Some(SessionItem::Line(line)) => {
                        tracing::debug!(line = %line.text, "rpc line before the prompt");
                    }
                    Some(SessionItem::Exited(report)) => {
                        self.exited = Some(report);
                        return Err(Some(report));
                    }
                    None => return Err(Some(ExitReport::default())),
                },
                _ = tokio::time::sleep_until(deadline) => return Err(None),
            }
        }
    }

    /// Does this live process hold the session `session` names (and is it still running)?
    fn serves(&mut self, session: &SessionRef) -> bool {
        // Between turns nobody reads: what came meanwhile is pi's idle chatter, or its exit.
        while let Ok(item) = self.items.try_recv() {
            match item {
                SessionItem::Line(line) => {
                    tracing::debug!(line = %line.text, "rpc line between turns");
                }
                SessionItem::Exited(report) => self.exited = Some(report),
            }
        }
        if self.exited.is_some() {
            return false;
        }
        if !self.prompted && *session == self.started_for {
            return true;
        }
        match session {
            SessionRef::Resume(id) => {
                self.session_id.as_deref() == Some(id.as_str())
                    || self.session_file.as_deref() == Some(id.as_str())
            }
            SessionRef::New | SessionRef::ContinueLatest => false,
        }
    }

    fn stderr_text(&self) -> String {
        self.stderr_tail
            .lock()
            .map(|tail| tail.text())
            .unwrap_or_default()
    }

    /// Waits until the process is gone (the router sends its exit report last).
    async fn wait_exit(&mut self) -> ExitReport {
        if let Some(report) = self.exited {
            return report;
        }
        while let Some(item) = self.items.recv().await {
            if let SessionItem::Exited(report) = item {
                self.exited = Some(report);
                return report;
            }
        }
        ExitReport::default()
    }

    /// Ends the process and waits for it: stdin closed (pi exits at once), else the
    /// three-stage stop after [`EXIT_AFTER_CLOSE`].
    async fn close(mut self) {
        let (lines, _) = mpsc::unbounded_channel();
        // Dropping the writer's last sender closes pi's stdin.
        self.writer.lines = lines;
        if let Ok(mut pending) = self.writer.pending.lock() {
            pending.clear();
        }
        if tokio::time::timeout(EXIT_AFTER_CLOSE, self.wait_exit())
            .await
            .is_err()
        {
            self.process_stop.stop();
            self.wait_exit().await;
        }
    }
}

impl Drop for RpcSession {
    /// Nobody will send pi another prompt: stdin closes with the writer (pi exits at once),
    /// and the three-stage stop makes sure, sweeping whatever pi's tools left behind.
    fn drop(&mut self) {
        if self.exited.is_none() {
            self.process_stop.stop();
        }
    }
}

/// Reads pi's stdout: responses someone waits for go to them, everything else to the attempt;
/// the exit report comes last.
async fn route(
    mut stdout: process::LineReader<tokio::process::ChildStdout>,
    mut exit: oneshot::Receiver<ExitReport>,
    pending: Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>,
    items: mpsc::Sender<SessionItem>,
) {
    let mut report: Option<ExitReport> = None;
    let mut drain_deadline = Instant::now();
    loop {
        tokio::select! {
            line = stdout.next_line() => match line {
                Ok(Some(line)) => {
                    if let Some(waiter) = waiting_for(&pending, &line) {
                        if let Ok(value) = serde_json::from_str(&line.text) {
                            let _ = waiter.send(value);
                        }
                        continue;
                    }
                    if items.send(SessionItem::Line(line)).await.is_err() {
                        // The session was dropped; the process layer stops pi.
                    }
                }
                Ok(None) | Err(_) => break,
            },
            exited = &mut exit, if report.is_none() => {
                report = Some(exited.unwrap_or_default());
                drain_deadline = Instant::now() + STDOUT_DRAIN_AFTER_EXIT;
            }
            _ = tokio::time::sleep_until(drain_deadline), if report.is_some() => break,
        }
    }
    let report = match report {
        Some(report) => report,
        None => exit.await.unwrap_or_default(),
    };
    let _ = items.send(SessionItem::Exited(report)).await;
}

/// The waiter of a response line, if it is one somebody waits for.
fn waiting_for(
    pending: &Mutex<HashMap<String, oneshot::Sender<Value>>>,
    line: &Line,
) -> Option<oneshot::Sender<Value>> {
    if !line.text.contains("\"response\"") {
        return None;
    }
    let head: ResponseHead = serde_json::from_str(&line.text).ok()?;
    if head.kind != "response" {
        return None;
    }
    pending.lock().ok()?.remove(head.id.as_deref()?)
}

#[derive(serde::Deserialize)]
struct ResponseHead {
    #[serde(rename = "type")]
    kind: String,
    id: Option<String>,
}

/// One attempt on the live process.
struct RpcAttempt {
    backend: Arc<dyn Backend>,
    live: Arc<tokio::sync::Mutex<Option<RpcSession>>>,
    stale: Arc<AtomicBool>,
    commands: Arc<Mutex<Option<CommandWriter>>>,
    queue: watch::Sender<AgentQueue>,
    status: watch::Sender<AgentStatus>,
    sink: AttemptSink,
    stop: StopControl,
}

/// How the attempt's turn ended.
enum TurnEnd {
    /// `agent_end`: the process stays.
    AgentEnd,
    /// The process died (by itself, or by the signal stages of our stop).
    Exited(ExitReport),
}

impl RpcAttempt {
    async fn run(mut self, request: AttemptRequest) {
        let live = self.live.clone();
        let mut slot = live.lock().await;
        if self.stop.is_stop_requested() {
            self.sink
                .send(AgentMessage::Cancelled {
                    stop_stage: StopStage::Interrupt,
                    elapsed_ms: 0,
                })
                .await;
            return;
        }
        let stale = self.stale.swap(false, Ordering::SeqCst);
        let reuse = !stale
            && slot
                .as_mut()
                .is_some_and(|session| session.serves(&request.session));
        if !reuse {
            if let Some(old) = slot.take() {
                old.close().await;
            }
            match RpcSession::start(self.backend.as_ref(), &request, &self.status).await {
                Ok(session) => *slot = Some(session),
                Err(terminal) => {
                    self.sink.send(terminal).await;
                    return;
                }
            }
        }
        let Some(session) = slot.as_mut() else {
            return;
        };
        let resumed = session.prompted || request.session != SessionRef::New;
        session.prompted = true;
        let provider = self.backend.name().to_owned();
        self.sink
            .send(match session.session_id.clone() {
                Some(session_id) if resumed => AgentMessage::SessionResumed {
                    provider,
                    session_id,
                },
                session_id => AgentMessage::SessionStarted {
                    provider,
                    session_id,
                },
            })
            .await;
        let (terminal, keep) = self.play_turn(session, &request).await;
        if let Ok(mut commands) = self.commands.lock() {
            *commands = None;
        }
        if !keep {
            // A new pi starts with an empty queue; what this one held is lost with it.
            self.queue.send_replace(AgentQueue::default());
            if let Some(session) = slot.take() {
                session.close().await;
            }
        }
        let completed = matches!(terminal, AgentMessage::Completed { .. });
        self.sink.send(terminal).await;
        // After the terminal message, so the turn's end is not held up by it.
        if let Some(session) = slot.as_mut().filter(|_| completed) {
            self.refresh_stats(session).await;
        }
    }

    /// Sends the prompt and reads the turn; returns its terminal message and whether the
    /// process may serve the next attempt.
    async fn play_turn(
        &mut self,
        session: &mut RpcSession,
        request: &AttemptRequest,
    ) -> (AgentMessage, bool) {
        let mut mapping = AttemptMapping::new(self.backend.mapper(request));
        let mut out = Vec::new();
        let mut prompt_response = session.writer.request(
            "prompt",
            json!({"type": "prompt", "message": request.prompt}),
        );
        if let Ok(mut commands) = self.commands.lock() {
            *commands = Some(session.writer.clone());
        }
        let mut prompt_answered = false;
        let mut abort: Option<Instant> = None;
        let mut escalated: Option<watch::Receiver<StopProgress>> = None;
        let mut prompt_refused: Option<String> = None;
        let end = loop {
            let abort_deadline = abort.map(|sent| sent + ABORT_GRACE);
            tokio::select! {
                item = session.items.recv() => match item {
                    Some(SessionItem::Line(line)) => {
                        if let Some(tap) = &request.raw_line_tap {
                            tap.record(&line.text).await;
                        }
                        if self.side_line(&line, session).await {
                            continue;
                        }
                        mapping.map_line(&line, &mut out);
                        self.sink.flush(&mut out).await;
                        if is_agent_end(&line.text) {
                            break TurnEnd::AgentEnd;
                        }
                    }
                    Some(SessionItem::Exited(report)) => {
                        session.exited = Some(report);
                        break TurnEnd::Exited(report);
                    }
                    None => break TurnEnd::Exited(ExitReport::default()),
                },
                Some(line) = session.stderr_lines.recv() => {
                    mapping.map_stderr_line(&line, &mut out);
                    self.sink.flush(&mut out).await;
                }
                response = &mut prompt_response, if !prompt_answered => {
                    prompt_answered = true;
                    if let Ok(response) = response {
                        if response["success"] != Value::Bool(true) {
                            prompt_refused = Some(
                                response["error"].as_str().unwrap_or("pi refused the prompt").to_owned(),
                            );
                            break TurnEnd::AgentEnd;
                        }
                    }
                }
                _ = self.stop.stop_token().cancelled(), if abort.is_none() => {
                    tracing::info!("stopping the turn in-band (abort)");
                    self.stop.set_progress(StopProgress::Interrupting);
                    session.writer.send("abort", json!({"type": "abort"}));
                    abort = Some(Instant::now());
                }
                _ = sleep_until_opt(abort_deadline), if abort.is_some() && escalated.is_none() => {
                    tracing::warn!("pi did not end the turn after abort; stopping the process");
                    escalated = Some(session.process_stop.subscribe());
                    session.process_stop.stop();
                }
                _ = self.stop.kill_token().cancelled(), if abort.is_some() && !session.process_stop.kill_token().is_cancelled() => {
                    if escalated.is_none() {
                        escalated = Some(session.process_stop.subscribe());
                    }
                    session.process_stop.kill_now();
                }
                changed = progress_changed(&mut escalated) => {
                    if let Some(progress) = changed {
                        if progress != StopProgress::Stopped {
                            self.stop.set_progress(progress);
                        }
                    }
                }
            }
        };
        while let Ok(line) = session.stderr_lines.try_recv() {
            mapping.map_stderr_line(&line, &mut out);
        }
        let stderr = session.stderr_text();
        if let Some(error) = prompt_refused {
            self.sink.flush(&mut out).await;
            return (
                AgentMessage::Failed(Failure {
                    reason: failure_reason::AGENT_ERROR.into(),
                    message: format!("pi refused the prompt: {error}"),
                    stderr,
                    ..Failure::default()
                }),
                true,
            );
        }
        let (report, ended_by, keep) = match end {
            TurnEnd::AgentEnd => {
                let report = ExitReport {
                    exit_code: Some(0),
                    ..ExitReport::default()
                };
                let ended_by = match abort {
                    Some(sent) => EndedBy::UserStop {
                        stage: StopStage::Interrupt,
                        elapsed_ms: sent.elapsed().as_millis() as u64,
                    },
                    None => EndedBy::Exit,
                };
                (report, ended_by, true)
            }
            TurnEnd::Exited(report) => {
                let ended_by = match (abort, report.stopped) {
                    (Some(sent), Some((stage, _))) => EndedBy::UserStop {
                        stage,
                        elapsed_ms: sent.elapsed().as_millis() as u64,
                    },
                    (Some(sent), None) => EndedBy::UserStop {
                        stage: StopStage::Grace,
                        elapsed_ms: sent.elapsed().as_millis() as u64,
                    },
                    (None, _) => EndedBy::Exit,
                };
                (report, ended_by, false)
            }
        };
        if abort.is_some() {
            self.stop.set_progress(StopProgress::Stopped);
        }
        let terminal = mapping.finish(&report, ended_by, stderr, &mut out);
        self.sink.flush(&mut out).await;
        // A failed attempt stays in pi's memory: never continue on it (retry never duplicates).
        let keep = keep && !matches!(terminal, AgentMessage::Failed(_));
        (terminal, keep)
    }

    /// Lines that are not the turn's events: pi's queue, and responses nobody waited for.
    /// Returns true when the line was handled here.
    async fn side_line(&mut self, line: &Line, session: &RpcSession) -> bool {
        if !line.text.contains("\"queue_update\"") && !line.text.contains("\"response\"") {
            return false;
        }
        let Ok(value) = serde_json::from_str::<Value>(&line.text) else {
            return false;
        };
        match value["type"].as_str() {
            Some("queue_update") => {
                let strings = |key: &str| -> Vec<String> {
                    value[key]
                        .as_array()
                        .map(|items| {
                            items
                                .iter()
                                .filter_map(|item| item.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default()
                };
                let now = AgentQueue {
                    steering: strings("steering"),
                    follow_up: strings("followUp"),
                };
                let before = self.queue.send_replace(now.clone());
                // What left pi's queue was delivered (abort does not clear it).
                for (kind, was, is) in [
                    (
                        notice_kind::STEER_DELIVERED,
                        &before.steering,
                        &now.steering,
                    ),
                    (
                        notice_kind::FOLLOW_UP_DELIVERED,
                        &before.follow_up,
                        &now.follow_up,
                    ),
                ] {
                    for text in delivered(was, is) {
                        self.sink.send(AgentMessage::notice(kind, text)).await;
                    }
                }
                true
            }
            Some("response") => {
                if value["success"] == Value::Bool(false) {
                    let command = value["command"].as_str().unwrap_or("command");
                    let error = value["error"].as_str().unwrap_or("no reason given");
                    self.sink
                        .send(AgentMessage::notice(
                            notice_kind::WARNING,
                            format!("pi refused `{command}`: {error}"),
                        ))
                        .await;
                }
                let _ = session;
                true
            }
            _ => false,
        }
    }

    /// Asks pi for the session's cost and tokens after a turn (for the status bar).
    async fn refresh_stats(&mut self, session: &mut RpcSession) {
        let stats = session
            .writer
            .request("stats", json!({"type": "get_session_stats"}));
        if let Ok(stats) = session
            .await_response(stats, Duration::from_millis(500))
            .await
        {
            let data = &stats["data"];
            self.status.send_modify(|status| {
                status.cost_usd = data["cost"].as_f64();
                status.tokens = data["tokens"]["total"].as_u64();
            });
        }
    }
}

/// The messages of `was` no longer in `is` (each counted once: the same text may be queued
/// twice).
fn delivered(was: &[String], is: &[String]) -> Vec<String> {
    let mut left = is.to_vec();
    let mut gone = Vec::new();
    for text in was {
        match left.iter().position(|still| still == text) {
            Some(index) => {
                left.remove(index);
            }
            None => gone.push(text.clone()),
        }
    }
    gone
}

fn is_agent_end(line: &str) -> bool {
    line.contains("\"agent_end\"")
        && serde_json::from_str::<ResponseHead>(line).is_ok_and(|head| head.kind == "agent_end")
}

#[cfg(test)]
mod tests {
    use super::delivered;

    fn texts(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| (*item).to_owned()).collect()
    }

    #[test]
    fn what_left_the_queue_was_delivered_once_per_copy() {
        assert_eq!(delivered(&texts(&["a", "b"]), &texts(&["b"])), ["a"]);
        assert_eq!(delivered(&texts(&["a", "a"]), &texts(&["a"])), ["a"]);
        assert!(delivered(&texts(&["a"]), &texts(&["a", "c"])).is_empty());
        assert!(delivered(&[], &[]).is_empty());
    }
}
