//! One attempt, for any backend: spawn, map every line, end with exactly one terminal message.
//!
//! The terminal message is decided here and only here, from three facts: whether the user
//! stopped the attempt, what the agent's own stream said (the mapper's outcome), and how the
//! process exited. Mappers stay pure and never have to get "exactly one terminal" right.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::errors;
use super::{
    AgentOutcome, AgentStream, AttemptRequest, Backend, ExitFacts, LineVerdict, Mapper, Provider,
    SessionCheckpoint, StopControl,
};
use crate::process::{self, ExitReport, Line, LineRef};
use crate::stream::{AgentMessage, Failure, FailureReason, StopStage};

/// After the agent exits, how long its stdout may stay open (a grandchild holding the pipe).
const STDOUT_DRAIN_AFTER_EXIT: Duration = Duration::from_millis(1000);
/// How long an agent may keep running after it said it was done, or after it closed stdout.
pub(crate) const LINGER_AFTER_DONE: Duration = Duration::from_secs(3);
/// Bounds on the invalid lines kept for diagnostics.
pub const MAX_INVALID_LINES: usize = 100;
/// The most assistant text an attempt keeps for its failure's diagnostics.
pub(crate) const MAX_FAILURE_TEXT: usize = 4 * 1024 * 1024;
pub(crate) const MAX_INVALID_LINE_BYTES: usize = 2048;

/// Starts one attempt on a background task and returns its stream.
pub(crate) fn run_attempt(
    backend: Arc<dyn Backend>,
    request: AttemptRequest,
    stop: StopControl,
) -> AgentStream {
    spawn_attempt(stop.clone(), move |sink| async move {
        let mut attempt = Attempt { sink, stop };
        attempt.run(backend.as_ref(), &request).await;
    })
}

/// Runs `attempt` on a task of its own, handing it the sending end of a new stream, and returns
/// the stream.
pub(crate) fn spawn_attempt<Fut>(
    stop: StopControl,
    attempt: impl FnOnce(AttemptSink) -> Fut,
) -> AgentStream
where
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(512);
    tokio::spawn(attempt(AttemptSink {
        tx,
        receiver_gone: false,
        stop,
    }));
    futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|message| (message, rx))
    })
    .boxed()
}

/// The sending end of one attempt's stream. When nobody listens any more the attempt is
/// stopped (the agent must not run on unobserved) and nothing more is sent.
pub(crate) struct AttemptSink {
    tx: mpsc::Sender<AgentMessage>,
    receiver_gone: bool,
    stop: StopControl,
}

impl AttemptSink {
    pub(crate) async fn flush(&mut self, out: &mut Vec<AgentMessage>) {
        for message in out.drain(..) {
            self.send(message).await;
        }
    }

    pub(crate) async fn send(&mut self, message: AgentMessage) {
        if self.receiver_gone {
            return;
        }
        if self.tx.send(message).await.is_err() {
            self.receiver_gone = true;
            self.stop.stop();
        }
    }
}

struct Attempt {
    sink: AttemptSink,
    stop: StopControl,
}

impl Attempt {
    async fn run(&mut self, backend: &dyn Backend, request: &AttemptRequest) {
        let spec = backend.spawn_spec(request).unlogged(&request.prompt);
        if let Some(message) = start_problem(&spec) {
            self.sink.send(start_failed(message)).await;
            return;
        }
        if self.stop.is_stop_requested() {
            // Stopped before it started: nothing to stop.
            self.sink
                .send(AgentMessage::Cancelled {
                    stop_stage: StopStage::Cancel,
                    elapsed_ms: 0,
                })
                .await;
            return;
        }
        let mut agent = match process::spawn(&spec, self.stop.clone()) {
            Ok(agent) => agent,
            Err(error) => {
                self.sink.send(start_failed(error.to_string())).await;
                return;
            }
        };
        tracing::info!(pid = agent.pid, command = %spec.display(), "agent started");
        let mut mapping = AttemptMapping::new(backend.mapper(request));
        let mut out = Vec::new();

        let mut stdout_open = true;
        let mut exit: Option<ExitReport> = None;
        let mut drain_deadline = Instant::now();
        let mut linger_deadline: Option<Instant> = None;
        let mut stopped_for_lingering = false;

        loop {
            if !stdout_open && exit.is_some() {
                break;
            }
            if linger_deadline.is_none() && (!stdout_open || mapping.outcome_reported()) {
                linger_deadline = Some(Instant::now() + LINGER_AFTER_DONE);
            }
            tokio::select! {
                line = agent.stdout.next_line_ref(), if stdout_open => match line {
                    Ok(Some(line)) => {
                        mapping.map_line_ref(&line, &mut out);
                        self.sink.flush(&mut out).await;
                        if let Some(tap) = &request.raw_line_tap {
                            tap.record(&line.text).await;
                        }
                    }
                    Ok(None) | Err(_) => stdout_open = false,
                },
                Some(line) = agent.stderr_lines.recv() => {
                    mapping.map_stderr_line(&line, &mut out);
                    self.sink.flush(&mut out).await;
                }
                report = &mut agent.exit, if exit.is_none() => {
                    exit = Some(report.unwrap_or_default());
                    drain_deadline = Instant::now() + STDOUT_DRAIN_AFTER_EXIT;
                }
                _ = tokio::time::sleep_until(drain_deadline), if exit.is_some() && stdout_open => {
                    tracing::warn!("agent stdout still open after exit; no longer waiting for it");
                    stdout_open = false;
                }
                _ = sleep_until_opt(linger_deadline), if exit.is_none() && !self.stop.is_stop_requested() => {
                    tracing::warn!("agent kept running after it was done; stopping it");
                    stopped_for_lingering = true;
                    self.stop.stop();
                }
            }
        }
        while let Ok(line) = agent.stderr_lines.try_recv() {
            mapping.map_stderr_line(&line, &mut out);
        }
        let report = exit.unwrap_or_default();
        let ended_by = match report.stopped {
            Some(_) if stopped_for_lingering => EndedBy::StoppedForLingering,
            Some((stage, elapsed_ms)) => EndedBy::UserStop { stage, elapsed_ms },
            None => EndedBy::Exit,
        };
        let stderr = agent
            .stderr_tail
            .lock()
            .map(|tail| tail.text())
            .unwrap_or_default();
        let session_id = mapping.session_id().map(str::to_owned);
        let mut terminal = mapping.finish(&report, ended_by, stderr, &mut out);
        if request.session != super::SessionRef::New {
            mark_lost_session(&mut terminal, backend.lost_session_phrases());
        }
        if let (EndedBy::UserStop { .. }, Some(session_id)) = (ended_by, session_id) {
            backend.keep_stopped_prompt(&session_id, request);
        }
        self.sink.flush(&mut out).await;
        self.sink.send(terminal).await;
    }
}

/// A failure that says the CLI could not find the session it was asked to continue becomes
/// `session_lost`, so that the orchestrator continues in a fresh session instead of failing
/// every later turn the same way.
pub(crate) fn mark_lost_session(terminal: &mut AgentMessage, phrases: &[&str]) {
    let AgentMessage::Failed(failure) = terminal else {
        return;
    };
    let says_lost = |text: &str| {
        let text = text.to_lowercase();
        phrases
            .iter()
            .any(|phrase| text.contains(&phrase.to_lowercase()))
    };
    if says_lost(&failure.message) || says_lost(&failure.stderr) {
        failure.reason = FailureReason::SessionLost;
    }
}

/// What ended the agent process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndedBy {
    /// It exited by itself.
    Exit,
    /// The user's stop ended it, at this stage.
    UserStop { stage: StopStage, elapsed_ms: u64 },
    /// It kept running after it was done (or after closing stdout) and we stopped it.
    StoppedForLingering,
}

/// The IO-free part of an attempt: maps lines, keeps the diagnostics (text so far, invalid
/// lines), and composes the one terminal message. `agentty replay` uses it too.
pub struct AttemptMapping {
    mapper: Box<dyn Mapper>,
    /// The assistant deltas of this attempt, for `terminal.failed.text`, up to
    /// [`MAX_FAILURE_TEXT`] (an agent that floods must not grow memory without end).
    text: String,
    /// Bytes of assistant text past [`MAX_FAILURE_TEXT`], not kept.
    text_dropped: usize,
    invalid_lines: Vec<String>,
    invalid_count: usize,
    /// The agent session the attempt said it runs in.
    session_id: Option<String>,
}

impl AttemptMapping {
    pub fn new(mapper: Box<dyn Mapper>) -> Self {
        Self {
            mapper,
            text: String::new(),
            text_dropped: 0,
            invalid_lines: Vec::new(),
            invalid_count: 0,
            session_id: None,
        }
    }

    /// The agent session the attempt said it runs in, if it said so.
    pub(crate) fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    pub fn outcome_reported(&self) -> bool {
        self.mapper.outcome_reported()
    }

    pub fn map_line(&mut self, line: &Line, out: &mut Vec<AgentMessage>) {
        self.map_line_ref(&line.as_line_ref(), out);
    }

    /// [`Self::map_line`] for a line lent by the reader.
    pub(crate) fn map_line_ref(&mut self, line: &LineRef<'_>, out: &mut Vec<AgentMessage>) {
        if line.truncated {
            self.keep_invalid(format!(
                "[line of {} bytes cut] {}",
                line.original_len, line.text
            ));
            return;
        }
        let first_new = out.len();
        match self.mapper.map_line(&line.text, out) {
            LineVerdict::Event => {}
            LineVerdict::Ignored => tracing::debug!(line = %line.text, "ignored agent event"),
            LineVerdict::Invalid => self.keep_invalid(line.text.clone().into_owned()),
        }
        self.account(out, first_new);
    }

    /// A line the client wrote to the agent (see [`Mapper::map_client_line`]).
    pub fn map_client_line(&mut self, line: &str, out: &mut Vec<AgentMessage>) {
        let first_new = out.len();
        self.mapper.map_client_line(line, out);
        self.account(out, first_new);
    }

    pub fn map_stderr_line(&mut self, line: &str, out: &mut Vec<AgentMessage>) {
        let first_new = out.len();
        self.mapper.map_stderr_line(line, out);
        self.account(out, first_new);
    }

    /// Drops terminal messages a mapper must not produce, and records the assistant text.
    fn account(&mut self, out: &mut Vec<AgentMessage>, first_new: usize) {
        let mut index = first_new;
        while index < out.len() {
            if out[index].is_terminal() {
                tracing::error!(message = ?out[index], "mapper produced a terminal message; dropped");
                out.remove(index);
                continue;
            }
            if let AgentMessage::SessionStarted {
                session_id: Some(id),
                ..
            }
            | AgentMessage::SessionResumed { session_id: id, .. } = &out[index]
            {
                self.session_id = Some(id.clone());
            }
            if let AgentMessage::Assistant { delta } = &out[index] {
                if self.text_dropped == 0 && self.text.len() + delta.len() <= MAX_FAILURE_TEXT {
                    self.text.push_str(delta);
                } else {
                    self.text_dropped += delta.len();
                }
            }
            index += 1;
        }
    }

    fn keep_invalid(&mut self, mut line: String) {
        self.invalid_count += 1;
        if self.invalid_lines.len() >= MAX_INVALID_LINES {
            return;
        }
        if line.len() > MAX_INVALID_LINE_BYTES {
            let mut cut = MAX_INVALID_LINE_BYTES;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line.push('…');
        }
        self.invalid_lines.push(line);
    }

    /// Flushes the mapper and composes the terminal message: the user's stop wins; then what
    /// the agent said went wrong; then how the process died; then what the agent said was done.
    pub fn finish(
        mut self,
        report: &ExitReport,
        ended_by: EndedBy,
        stderr: String,
        out: &mut Vec<AgentMessage>,
    ) -> AgentMessage {
        let facts = ExitFacts {
            exit_code: report.exit_code,
            signal: report.signal,
            stopped_by_us: !matches!(ended_by, EndedBy::Exit),
        };
        let first_new = out.len();
        let outcome = self.mapper.finish(facts, out);
        self.account(out, first_new);
        if let EndedBy::UserStop { stage, elapsed_ms } = ended_by {
            return AgentMessage::Cancelled {
                stop_stage: stage,
                elapsed_ms,
            };
        }
        let lingered = ended_by == EndedBy::StoppedForLingering;
        if self.invalid_count > self.invalid_lines.len() {
            let more = self.invalid_count - self.invalid_lines.len();
            self.invalid_lines
                .push(format!("[… {more} more invalid lines not kept]"));
        }
        let stderr_headline = errors::stderr_headline(&stderr).unwrap_or_default();
        let mut failure = Failure {
            exit_code: report.exit_code,
            signal: report.signal,
            text: match std::mem::take(&mut self.text_dropped) {
                0 => std::mem::take(&mut self.text),
                dropped => format!(
                    "{}\n[… {dropped} more bytes of text not kept]",
                    std::mem::take(&mut self.text)
                ),
            },
            stderr,
            invalid_output_lines: std::mem::take(&mut self.invalid_lines),
            ..Failure::default()
        };
        match outcome {
            AgentOutcome::Failed {
                reason,
                message,
                http_status,
            } => {
                failure.reason = reason;
                failure.message = errors::describe_agent_error(&message);
                failure.http_status = http_status;
            }
            AgentOutcome::Completed { stop_reason, usage }
                if lingered || report.exit_code == Some(0) =>
            {
                if self.invalid_count > 0 {
                    tracing::debug!(lines = ?failure.invalid_output_lines, "invalid agent lines in a completed attempt");
                }
                return AgentMessage::Completed { stop_reason, usage };
            }
            _ if lingered => {
                failure.reason = FailureReason::Stalled;
                failure.message =
                    "the agent closed its output but kept running; it was stopped".into();
            }
            _ if report.signal.is_some() => {
                let signal = report.signal.unwrap_or_default();
                failure.reason = FailureReason::KilledBySignal;
                failure.message = format!(
                    "the agent was killed by signal {signal} ({})",
                    signal_name(signal)
                );
                append_detail(&mut failure.message, &stderr_headline);
            }
            _ if report.exit_code.is_some_and(|code| code != 0) => {
                failure.reason = FailureReason::ExitNonzero;
                // The agent's own error says more than its exit status (which stays in the
                // failure's `exit_code`); the status is the headline only when nothing else is.
                failure.message = if stderr_headline.is_empty() {
                    format!(
                        "the agent exited with status {}",
                        report.exit_code.unwrap_or_default()
                    )
                } else {
                    stderr_headline
                };
            }
            AgentOutcome::Completed { stop_reason, usage } => {
                return AgentMessage::Completed { stop_reason, usage }
            }
            AgentOutcome::Aborted | AgentOutcome::Unfinished => {
                failure.reason = FailureReason::NoCompletion;
                failure.message = "the agent exited without reporting that it finished".into();
                append_detail(&mut failure.message, &stderr_headline);
            }
        }
        AgentMessage::Failed(failure)
    }
}

fn append_detail(message: &mut String, detail: &str) {
    if !detail.is_empty() {
        message.push_str(": ");
        message.push_str(detail);
    }
}

/// Sleeps until `deadline`; pending forever without one.
async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => futures::future::pending().await,
    }
}

pub(crate) fn start_failed(message: String) -> AgentMessage {
    AgentMessage::Failed(Failure {
        reason: FailureReason::StartFailed,
        message,
        ..Failure::default()
    })
}

/// Problems a spawn error would describe badly (a missing working directory looks like a
/// missing binary to `execve`).
pub(crate) fn start_problem(spec: &process::SpawnSpec) -> Option<String> {
    if let Some(cwd) = &spec.cwd {
        if !cwd.is_dir() {
            return Some(format!(
                "cannot start `{}`: working directory {} does not exist",
                spec.program.to_string_lossy(),
                cwd.display()
            ));
        }
    }
    None
}

fn signal_name(signal: i32) -> &'static str {
    nix::sys::signal::Signal::try_from(signal)
        .map(|signal| signal.as_str())
        .unwrap_or("unknown signal")
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
        run_attempt(self.backend.clone(), request, stop)
    }

    fn checkpoint(&self, request: &AttemptRequest) -> Option<SessionCheckpoint> {
        SessionCheckpoint::of_session(self.backend.as_ref(), request)
    }
}
