//! What the chat is doing now, as the status bar says it: idle, a snapshot being taken, a turn
//! starting, working (which phase, for how long, how long silent), stopping (how far the stop
//! has got), retrying, waiting for an answer, or quitting.

use std::time::{Duration, Instant};

use super::{AppState, StopState};
use crate::app::activity::AgentPhase;
use crate::provider::StopProgress;

/// What the chat is doing, for the status bar.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Activity {
    Idle,
    /// No turn runs, but the working tree's snapshot is being taken (the baseline, or the one
    /// that sums up the last turn).
    Snapshotting(crate::orchestrator::SnapshotBusy),
    /// A prompt is on its way and the orchestrator has not said its turn started.
    Starting,
    /// A turn runs: what its agent is doing, and for how long it has been doing it.
    Working {
        phase: AgentPhase,
        elapsed: Duration,
        /// The agent has said nothing for this long while it should be answering.
        silent: Option<Duration>,
    },
    Stopping {
        stage: StopStatus,
    },
    Retrying {
        remaining: Duration,
    },
    /// The agent waits for the user's answer to a permission request (`waiting` of them).
    WaitingForAnswer {
        waiting: usize,
    },
    /// Leaving; the stop stage while the agent is still being stopped.
    Quitting {
        stage: Option<StopStatus>,
    },
}

/// How far the stop the user asked for has got.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum StopStatus {
    /// Asked for; the orchestrator has not reported a stage yet.
    Requested,
    Interrupting,
    /// The grace period after the interrupt, this long so far.
    Waiting {
        elapsed: Duration,
    },
    Killing,
    Stopped,
}

impl StopStatus {
    pub(super) fn at(stop: StopState, now: Instant) -> Self {
        match stop.progress {
            StopProgress::Running => Self::Requested,
            StopProgress::Interrupting => Self::Interrupting,
            StopProgress::Waiting => Self::Waiting {
                elapsed: now.saturating_duration_since(stop.since),
            },
            StopProgress::Killing => Self::Killing,
            StopProgress::Stopped => Self::Stopped,
        }
    }
}

impl AppState {
    pub(crate) fn activity(&self, now: Instant) -> Activity {
        if self.quitting {
            return Activity::Quitting {
                stage: self
                    .turn
                    .as_ref()
                    .and_then(|turn| turn.stop)
                    .map(|stop| StopStatus::at(stop, now)),
            };
        }
        let Some(turn) = &self.turn else {
            return match self.prompt_in_flight {
                None => match self.snapshot_busy {
                    Some(busy) => Activity::Snapshotting(busy),
                    None => Activity::Idle,
                },
                Some(false) => Activity::Starting,
                Some(true) => Activity::Stopping {
                    stage: StopStatus::Requested,
                },
            };
        };
        if let Some(stop) = turn.stop {
            return Activity::Stopping {
                stage: StopStatus::at(stop, now),
            };
        }
        if self.snapshot_busy == Some(crate::orchestrator::SnapshotBusy::Baseline)
            && !turn.stop_requested
        {
            // The prompt waits for the working tree's first snapshot: the agent has not got it.
            return Activity::Snapshotting(crate::orchestrator::SnapshotBusy::Baseline);
        }
        if turn.stop_requested {
            return Activity::Stopping {
                stage: StopStatus::Requested,
            };
        }
        if !self.permission_prompts.is_empty() {
            return Activity::WaitingForAnswer {
                waiting: self.permission_prompts.len(),
            };
        }
        if let Some((_, deadline)) = turn.retry {
            return Activity::Retrying {
                remaining: deadline.saturating_duration_since(now),
            };
        }
        let (phase, elapsed) = match &self.phase {
            Some(tracker) if turn.compaction => (AgentPhase::Compacting, tracker.current(now).1),
            Some(tracker) => {
                let (phase, elapsed) = tracker.current(now);
                (phase.clone(), elapsed)
            }
            None => (
                AgentPhase::Working,
                now.saturating_duration_since(turn.started),
            ),
        };
        let silent = match &self.phase {
            Some(tracker) if !turn.compaction => tracker.silent(now),
            _ => None,
        };
        Activity::Working {
            phase,
            elapsed,
            silent,
        }
    }
}
