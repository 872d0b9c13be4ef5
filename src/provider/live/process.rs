//! A long-lived agent process: commands written on its stdin by a task that owns it, its stdout
//! routed, its exit awaited.
//!
//! The router task reads stdout: a response somebody waits for goes to that waiter (the
//! transport's [`ResponseRouter`] knows which); every other line goes, in order, to whoever
//! reads the process's items (the attempt that plays the turn); the exit report comes last.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::process::timings::{STDOUT_DRAIN_AFTER_EXIT, STRAY_KILL_DEADLINE};
use crate::process::{self, ExitReport, Line, SpawnSpec, StopControl, TreeIdentity};
use crate::provider::runner;

/// How many routed lines may wait for the attempt before the router waits too.
const ITEM_BUFFER: usize = 512;
/// The longest a stopped start waits for the agent it killed to be gone.
const KILLED_START_EXIT: Duration = Duration::from_secs(2);

tokio::task_local! {
    /// The processes started by the start that runs in this task (see [`Starting`]).
    static STARTING: Starting;
}

/// The processes a start spawns, so that a stop can end them while the start waits on an
/// agent that never answers (the start's own future, dropped, cannot say which they are).
#[derive(Clone, Default)]
pub(crate) struct Starting(Arc<Mutex<Vec<StopControl>>>);

impl Starting {
    /// Runs `start`, every process it starts recorded here.
    pub(crate) async fn run<F: std::future::Future>(&self, start: F) -> F::Output {
        STARTING.scope(self.clone(), start).await
    }

    /// Kills every process the start spawned, at once (it never became the user's agent: there
    /// is no turn to cancel), and waits a moment for them to be gone.
    pub(crate) async fn kill_all(&self) {
        let stops: Vec<StopControl> = self
            .0
            .lock()
            .map(|mut stops| std::mem::take(&mut *stops))
            .unwrap_or_default();
        for stop in stops {
            let mut progress = stop.subscribe();
            stop.kill_now();
            let gone = progress.wait_for(|progress| *progress == process::StopProgress::Stopped);
            let _ = tokio::time::timeout(KILLED_START_EXIT, gone).await;
        }
    }

    fn record(&self, stop: &StopControl) {
        if let Ok(mut stops) = self.0.lock() {
            stops.push(stop.clone());
        }
    }
}

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

/// Why a reply did not come.
#[derive(Debug, Clone, Copy)]
pub(crate) enum NoReply {
    /// The process ended first (its report is in [`LiveProcess::exited`]).
    Exited,
    /// Not within the time allowed (or its waiter was dropped: the process is going away).
    TimedOut,
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
        let _ = STARTING.try_with(|starting| starting.record(&process_stop));
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

    /// Waits up to `timeout` for `reply` (a response the router hands over), dropping the
    /// other lines meanwhile (a session's announcements, a loaded session's history).
    pub(crate) async fn await_reply<T>(
        &mut self,
        mut reply: oneshot::Receiver<T>,
        timeout: Duration,
        what: &str,
    ) -> Result<T, NoReply> {
        let deadline = Instant::now() + timeout;
        loop {
            tokio::select! {
                answer = &mut reply => return answer.map_err(|_| NoReply::TimedOut),
                item = self.items.recv() => match item {
                    Some(LiveItem::Line(line)) => {
                        tracing::debug!(line = %line.text, what, "agent line while waiting for a reply");
                    }
                    Some(LiveItem::Exited(report)) => {
                        self.exited = Some(report);
                        return Err(NoReply::Exited);
                    }
                    None => return Err(NoReply::Exited),
                },
                _ = tokio::time::sleep_until(deadline) => return Err(NoReply::TimedOut),
            }
        }
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

    /// The processes the agent runs now (its helpers, before a turn adds its tools). A scan
    /// of /proc, off the async threads.
    pub(crate) async fn descendants(&self) -> HashSet<i32> {
        let tree = self.tree.clone();
        tokio::task::spawn_blocking(move || process::tree::descendants(&tree))
            .await
            .unwrap_or_default()
    }

    /// Kills what the agent runs besides `helpers` (the tools a stopped turn left running, in a
    /// process that stays); returns how many.
    pub(crate) async fn kill_all_but(&self, helpers: HashSet<i32>) -> usize {
        let tree = self.tree.clone();
        tokio::task::spawn_blocking(move || {
            process::tree::kill_descendants_except(
                &tree,
                &helpers,
                std::time::Instant::now() + STRAY_KILL_DEADLINE,
            )
        })
        .await
        .unwrap_or_default()
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
