//! A long-lived agent process (pi's RPC mode, an ACP agent): commands written on its stdin by
//! a task that owns it, its stdout routed, its exit awaited; and the staged stop of a turn on
//! it ([`InBandStop`]).
//!
//! The router task reads stdout: a response somebody waits for goes to that waiter (the
//! transport's [`ResponseRouter`] knows which); every other line goes, in order, to whoever
//! reads the process's items (the attempt that plays the turn); the exit report comes last.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::process::{self, ExitReport, Line, SpawnSpec, StopControl, StopProgress, TreeIdentity};
use crate::provider::runner::AttemptSink;
use crate::provider::runner::{self, EndedBy};
use crate::provider::{AttemptRequest, SessionRef};
use crate::stream::{AgentMessage, StopStage};

/// After the process exits, how long its stdout may stay open (a grandchild holding it).
const STDOUT_DRAIN_AFTER_EXIT: Duration = Duration::from_millis(1000);
/// How many routed lines may wait for the attempt before the router waits too.
const ITEM_BUFFER: usize = 512;

/// Hands a response line to the request that waits for it.
pub(crate) trait ResponseRouter: Send + Sync + 'static {
    /// True when `line` was a response somebody waited for (and it has been delivered).
    fn deliver(&self, line: &Line) -> bool;
}

/// What the router hands the reader of the process.
pub(crate) enum LiveItem {
    Line(Line),
    /// The process is gone (stdout drained).
    Exited(ExitReport),
}

/// One running agent process that takes commands on stdin.
pub(crate) struct LiveProcess {
    /// Lines for the agent's stdin; dropping every sender closes it.
    pub(crate) commands: mpsc::UnboundedSender<String>,
    pub(crate) items: mpsc::Receiver<LiveItem>,
    pub(crate) stderr_lines: mpsc::Receiver<String>,
    stderr_tail: Arc<Mutex<process::StderrTail>>,
    /// The process's own stop (the three signal stages).
    pub(crate) process_stop: StopControl,
    pub(crate) tree: TreeIdentity,
    /// The process has exited; it cannot take another command.
    pub(crate) exited: Option<ExitReport>,
}

impl LiveProcess {
    /// Starts `spec` with its stdin a pipe; `Err` says why it could not start.
    pub(crate) fn start(
        spec: &SpawnSpec,
        router: impl ResponseRouter,
        what: &str,
    ) -> Result<Self, String> {
        if let Some(message) = runner::start_problem(spec) {
            return Err(message);
        }
        let process_stop = StopControl::new();
        let (agent, stdin) = process::spawn_with_stdin(spec, process_stop.clone())
            .map_err(|error| error.to_string())?;
        tracing::info!(pid = agent.pid, command = %spec.display(), "{what} started");
        let (commands, lines) = mpsc::unbounded_channel();
        tokio::spawn(process::write_lines(stdin, lines));
        let (items_tx, items) = mpsc::channel(ITEM_BUFFER);
        let process::AgentProcess {
            stdout,
            stderr_lines,
            stderr_tail,
            exit,
            tree,
            ..
        } = agent;
        tokio::spawn(route(stdout, exit, router, items_tx));
        Ok(Self {
            commands,
            items,
            stderr_lines,
            stderr_tail,
            process_stop,
            tree,
            exited: None,
        })
    }

    /// Drops what came while nobody read (the agent's chatter between turns) and says whether
    /// the process still runs.
    pub(crate) fn is_running(&mut self) -> bool {
        while let Ok(item) = self.items.try_recv() {
            match item {
                LiveItem::Line(line) => {
                    tracing::debug!(line = %line.text, "agent line between turns")
                }
                LiveItem::Exited(report) => self.exited = Some(report),
            }
        }
        self.exited.is_none()
    }

    /// A new turn begins on this process: its failure reports the stderr it wrote, not what
    /// earlier turns left in the tail.
    pub(crate) fn forget_stderr(&mut self) {
        while self.stderr_lines.try_recv().is_ok() {}
        if let Ok(mut tail) = self.stderr_tail.lock() {
            tail.clear();
        }
    }

    pub(crate) fn stderr_text(&self) -> String {
        self.stderr_tail
            .lock()
            .map(|tail| tail.text())
            .unwrap_or_default()
    }

    /// Waits until the process is gone (the router sends its exit report last).
    pub(crate) async fn wait_exit(&mut self) -> ExitReport {
        if let Some(report) = self.exited {
            return report;
        }
        while let Some(item) = self.items.recv().await {
            if let LiveItem::Exited(report) = item {
                self.exited = Some(report);
                return report;
            }
        }
        ExitReport::default()
    }

    /// Ends the process and waits for it: stdin closed, then after `exit_after_close` the
    /// three-stage stop (for agents that do not exit on EOF).
    pub(crate) async fn close(mut self, exit_after_close: Duration) {
        let (closed, _) = mpsc::unbounded_channel();
        self.commands = closed;
        if tokio::time::timeout(exit_after_close, self.wait_exit())
            .await
            .is_err()
        {
            self.process_stop.stop();
            self.wait_exit().await;
        }
    }
}

impl Drop for LiveProcess {
    /// Nobody will send the agent another command: the three-stage stop ends it and
    /// whatever its tools left behind.
    fn drop(&mut self) {
        if self.exited.is_none() {
            self.process_stop.stop();
        }
    }
}

async fn route(
    mut stdout: process::LineReader<tokio::process::ChildStdout>,
    mut exit: oneshot::Receiver<ExitReport>,
    router: impl ResponseRouter,
    items: mpsc::Sender<LiveItem>,
) {
    let mut report: Option<ExitReport> = None;
    let mut drain_deadline = Instant::now();
    loop {
        tokio::select! {
            line = stdout.next_line() => match line {
                Ok(Some(line)) => {
                    if router.deliver(&line) {
                        continue;
                    }
                    // A dropped reader means the process is being ended; keep draining.
                    let _ = items.send(LiveItem::Line(line)).await;
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
    let _ = items.send(LiveItem::Exited(report)).await;
}

/// A live process with an agent session open in it, as the transports keep it between turns.
pub(crate) trait LiveSession: Send + Sized {
    /// Does it hold `session` (and does it still run)?
    fn serves(&mut self, session: &SessionRef) -> bool;
    /// Ends it and waits for it.
    fn close(self) -> impl std::future::Future<Output = ()> + Send;
    /// The agent's stored session was restored from a checkpoint: re-reads it in this process
    /// for `request` instead of starting another (an agent that can switch to a session
    /// file); false when it cannot, and the process is then replaced.
    fn reload(
        &mut self,
        request: &AttemptRequest,
    ) -> impl std::future::Future<Output = bool> + Send {
        let _ = request;
        async { false }
    }
    /// Opens a new agent session for `request` in this process instead of starting another
    /// (an agent that holds several sessions); false when it cannot.
    fn open_new(
        &mut self,
        request: &AttemptRequest,
    ) -> impl std::future::Future<Output = bool> + Send {
        let _ = request;
        async { false }
    }
}

/// The session an attempt claimed ([`LiveSlot::claim`]), locked until the attempt lets go.
pub(crate) type ClaimedSession<S> = tokio::sync::OwnedMutexGuard<Option<S>>;

/// Where a long-lived transport keeps its session between attempts (a handle: clones share
/// it).
pub(crate) struct LiveSlot<S> {
    live: Arc<tokio::sync::Mutex<Option<S>>>,
    /// Set after a rollback of the stored session: the live process must not be reused.
    stale: Arc<AtomicBool>,
}

impl<S> Clone for LiveSlot<S> {
    fn clone(&self) -> Self {
        Self {
            live: self.live.clone(),
            stale: self.stale.clone(),
        }
    }
}

impl<S: LiveSession + 'static> LiveSlot<S> {
    pub(crate) fn new() -> Self {
        Self {
            live: Arc::new(tokio::sync::Mutex::new(None)),
            stale: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The agent's stored session was restored: what the live process holds is out of date.
    pub(crate) fn mark_stale(&self) {
        self.stale.store(true, Ordering::SeqCst);
    }

    /// Starts the session ahead of the first prompt, unless one is there; a failure is only
    /// logged (the first prompt starts it again and reports the failure in its stream).
    pub(crate) fn warm_up<F>(&self, start: F, what: &'static str)
    where
        F: std::future::Future<Output = Result<S, AgentMessage>> + Send + 'static,
    {
        let live = self.live.clone();
        tokio::spawn(async move {
            let mut slot = live.lock().await;
            if slot.is_some() {
                return;
            }
            match start.await {
                Ok(session) => *slot = Some(session),
                Err(terminal) => {
                    tracing::warn!(?terminal, "{what} did not start ahead of the first prompt")
                }
            }
        });
    }

    /// The session an attempt runs on, locked for the attempt: the one kept when it serves
    /// `request`'s session and no rollback made it stale, else a new one from `start` (the old
    /// one closed first). `None` when the attempt is over already, its terminal message sent:
    /// stopped before it began, or `start` failed.
    pub(crate) async fn claim<F, Fut>(
        &self,
        request: &AttemptRequest,
        stop: &StopControl,
        sink: &mut AttemptSink,
        start: F,
    ) -> Option<ClaimedSession<S>>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<S, AgentMessage>>,
    {
        let mut slot = self.live.clone().lock_owned().await;
        if stop.is_stop_requested() {
            sink.send(AgentMessage::Cancelled {
                stop_stage: StopStage::Cancel,
                elapsed_ms: 0,
            })
            .await;
            return None;
        }
        let stale = self.stale.swap(false, Ordering::SeqCst);
        let serves = slot
            .as_mut()
            .is_some_and(|session| session.serves(&request.session));
        let mut reuse = serves && !stale;
        if serves && stale {
            // The restored file is what the process must hold: re-read where it can.
            if let Some(session) = slot.as_mut() {
                reuse = session.reload(request).await;
            }
        }
        if !reuse && !stale && request.session == SessionRef::New {
            // A fresh session needs no fresh process where the agent can open another.
            if let Some(session) = slot.as_mut() {
                reuse = session.open_new(request).await;
            }
        }
        if !reuse {
            if let Some(old) = slot.take() {
                old.close().await;
            }
            match start().await {
                Ok(session) => *slot = Some(session),
                Err(terminal) => {
                    sink.send(terminal).await;
                    return None;
                }
            }
        }
        Some(slot)
    }

    /// The provider goes away: with no attempt running the process ends now; a running
    /// attempt holds the slot, and the process ends when that attempt lets go of it.
    pub(crate) fn release_if_idle(&self) {
        if let Ok(mut live) = self.live.try_lock() {
            live.take();
        }
    }
}

/// How a turn on a live process ended.
pub(crate) enum TurnEnd {
    /// The agent said the turn is over: the process stays.
    Answered,
    /// The process died (by itself, or by the signal stages of a stop).
    Exited(ExitReport),
}

/// The staged stop of one turn on a live process. Stage 0 is in-band: when the user stops
/// the attempt ([`InBandStop::requested`]) the transport sends its cancel command and says so
/// ([`InBandStop::sent`]); from then on a task watches: if the turn has not ended `grace`
/// later, the process layer's signal stages run on the agent's tree, a second stop kills at
/// once, and the stages' progress is reported as the attempt's. The task ends with the turn.
pub(crate) struct InBandStop {
    attempt: StopControl,
    process: StopControl,
    grace: Duration,
    sent: Option<Instant>,
    escalation: Option<tokio::task::JoinHandle<()>>,
}

impl InBandStop {
    pub(crate) fn new(attempt: StopControl, process: StopControl, grace: Duration) -> Self {
        Self {
            attempt,
            process,
            grace,
            sent: None,
            escalation: None,
        }
    }

    /// Resolves once the user asks to stop the attempt (select on it while `!is_sent()`).
    pub(crate) fn requested(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.attempt.stop_token().clone().cancelled_owned()
    }

    /// The transport sent its in-band cancel now: the escalation starts watching.
    pub(crate) fn sent(&mut self) {
        self.attempt.set_progress(StopProgress::Interrupting);
        self.sent = Some(Instant::now());
        self.escalation = Some(tokio::spawn(escalate(
            self.attempt.clone(),
            self.process.clone(),
            self.grace,
        )));
    }

    pub(crate) fn is_sent(&self) -> bool {
        self.sent.is_some()
    }

    /// How `end` ended the attempt: the exit report to compose the terminal message from, who
    /// ended it, and whether the process may serve the next attempt.
    pub(crate) fn outcome(&mut self, end: TurnEnd) -> (ExitReport, EndedBy, bool) {
        // The turn is over: a process that stays must not be stopped by a late escalation.
        if let Some(escalation) = self.escalation.take() {
            escalation.abort();
        }
        if self.sent.is_some() {
            self.attempt.set_progress(StopProgress::Stopped);
        }
        let elapsed_ms = |sent: Instant| sent.elapsed().as_millis() as u64;
        match end {
            TurnEnd::Answered => {
                let report = ExitReport {
                    exit_code: Some(0),
                    ..ExitReport::default()
                };
                let ended_by = match self.sent {
                    Some(sent) => EndedBy::UserStop {
                        stage: StopStage::Cancel,
                        elapsed_ms: elapsed_ms(sent),
                    },
                    None => EndedBy::Exit,
                };
                (report, ended_by, true)
            }
            TurnEnd::Exited(report) => {
                let ended_by = match (self.sent, report.stopped) {
                    (Some(sent), Some((stage, _))) => EndedBy::UserStop {
                        stage,
                        elapsed_ms: elapsed_ms(sent),
                    },
                    (Some(sent), None) => EndedBy::UserStop {
                        stage: StopStage::Grace,
                        elapsed_ms: elapsed_ms(sent),
                    },
                    (None, _) => EndedBy::Exit,
                };
                (report, ended_by, false)
            }
        }
    }
}

impl Drop for InBandStop {
    fn drop(&mut self) {
        if let Some(escalation) = self.escalation.take() {
            escalation.abort();
        }
    }
}

/// After an in-band cancel: the signal stages when `grace` runs out (or at once on a second
/// stop), their progress passed on as the attempt's.
async fn escalate(attempt: StopControl, process: StopControl, grace: Duration) {
    let mut progress = process.subscribe();
    tokio::select! {
        _ = tokio::time::sleep(grace) => {
            tracing::warn!("the agent did not end the turn in-band; stopping the process");
            process.stop();
        }
        _ = attempt.kill_token().cancelled() => process.kill_now(),
    }
    loop {
        tokio::select! {
            changed = progress.changed() => {
                if changed.is_err() {
                    return;
                }
                let now = *progress.borrow_and_update();
                if now != StopProgress::Stopped {
                    attempt.set_progress(now);
                }
            }
            _ = attempt.kill_token().cancelled(), if !process.kill_token().is_cancelled() => {
                process.kill_now();
            }
        }
    }
}
