//! How the caller of an agent process asks it to stop, and watches the three-stage stop move
//! on. It lives with the process layer that carries the stop out; the layers above use it.

use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

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

    pub(crate) fn kill_now(&self) {
        self.stop.cancel();
        self.kill.cancel();
    }

    pub(crate) fn is_stop_requested(&self) -> bool {
        self.stop.is_cancelled()
    }

    pub(crate) fn stop_token(&self) -> &CancellationToken {
        &self.stop
    }

    pub(crate) fn kill_token(&self) -> &CancellationToken {
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
