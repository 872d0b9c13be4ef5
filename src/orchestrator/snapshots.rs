//! The driver's side of the working tree's snapshots (`crate::snapshot`'s thread): when each
//! walk is asked for, what waits for one, and what the replies become.
//!
//! - The baseline is taken as the conversation opens. The first prompt's request waits for it
//!   (a prompt sent before could be answered by an agent that writes before the walk has read
//!   the files: their "before" would be the agent's): in the chat the user is typing meanwhile,
//!   and with the tree's stat cache kept from the last run it is a walk of `stat`s. A stop or a
//!   shutdown asked meanwhile ends that turn at once.
//! - A turn's "before" is walked beside its request, once the model has answered (what the
//!   agent wrote meanwhile is taken from the previous walk); its "after" once it has ended.
//!   Nothing waits for the "after": the next turn's request goes at once, and the UI is told the
//!   walk runs (`SnapshotBusy`), so it never says "idle" before the turn's summary is in.

use std::collections::VecDeque;
use std::time::SystemTime;

use super::{Driver, Effect, Input};
use crate::orchestrator::{OrchestratorEvent, SnapshotBusy, TurnId};
use crate::snapshot::{SnapshotReply, SnapshotWorker};
use crate::stream::{AgentMessage, NoticeKind, StopStage};

/// The snapshot thread and what the driver knows of it.
pub(super) struct Snapshots {
    pub(super) worker: SnapshotWorker,
    /// The turn whose "before" snapshot was asked for and whose "after" is still to come.
    open_turn: Option<TurnId>,
    /// The turns whose "after" snapshot was asked for and has not come back, oldest first.
    awaiting_end: VecDeque<TurnId>,
    /// The turn whose "before" snapshot waits for the model's first answer, and when its
    /// request went out ([`Driver::take_due_snapshot`]).
    begin_due: Option<(TurnId, SystemTime)>,
    /// The baseline (taken when the conversation opens) is not done yet.
    baseline_pending: bool,
    /// The first turn of this run: the launch's notices are said under the turn before it.
    first_turn: TurnId,
}

impl Snapshots {
    pub(super) fn start(setup: crate::snapshot::SnapshotSetup, first_turn: TurnId) -> Self {
        Self {
            worker: SnapshotWorker::start(setup),
            open_turn: None,
            awaiting_end: VecDeque::new(),
            begin_due: None,
            baseline_pending: true,
            first_turn,
        }
    }
}

/// A start of an attempt set aside until the baseline is taken, with the effects after it.
pub(super) struct Deferred {
    pub(super) effects: VecDeque<Effect>,
}

impl Deferred {
    /// The attempt it holds back, if any.
    fn held_attempt(&self) -> Option<(TurnId, u32)> {
        self.effects.iter().find_map(|effect| match effect {
            Effect::StartAttempt { turn, attempt, .. }
            | Effect::StartCompaction { turn, attempt, .. } => Some((*turn, *attempt)),
            _ => None,
        })
    }
}

impl Driver {
    /// What the snapshot thread is doing that the UI must not call idle.
    fn snapshot_busy(&self) -> Option<SnapshotBusy> {
        let snapshots = self.snapshots.as_ref()?;
        if snapshots.baseline_pending {
            return Some(SnapshotBusy::Baseline);
        }
        snapshots
            .awaiting_end
            .front()
            .map(|turn| SnapshotBusy::TurnEnd { turn: *turn })
    }

    fn tell_snapshot_busy(&mut self) {
        let busy = self.snapshot_busy();
        self.emit(OrchestratorEvent::SnapshotBusy(busy));
    }

    /// Asks for the snapshot before turn `turn`'s first request, which goes out at once: the
    /// snapshot is taken beside it (what the agent writes meanwhile is taken from the previous
    /// snapshot), so Enter never waits for a walk of the tree.
    pub(super) fn snapshot_before(&mut self, turn: TurnId) {
        if let Some(snapshots) = self.snapshots.as_mut() {
            let since = SystemTime::now();
            snapshots.open_turn = Some(turn);
            snapshots.begin_due = Some((turn, since));
            snapshots.worker.turn_started(since);
        }
    }

    /// Starts the walk of the "before" snapshot asked for: once the model has answered (the
    /// request is out, and the walk no longer competes with the agent for a core while it
    /// sends it), or before anything else the snapshot thread is asked. Correct whenever it
    /// runs: what the agent wrote since the request is taken from the previous snapshot.
    pub(super) fn take_due_snapshot(&mut self) {
        if let Some(snapshots) = self.snapshots.as_mut() {
            if let Some((turn, since)) = snapshots.begin_due.take() {
                snapshots.worker.begin(turn, since);
            }
        }
    }

    /// Asks for the snapshot after turn `turn` (the turn has ended: nothing waits for it; its
    /// `turn.changes` follows).
    pub(super) fn snapshot_after(&mut self, turn: TurnId) {
        self.take_due_snapshot();
        let Some(snapshots) = self.snapshots.as_mut() else {
            return;
        };
        if snapshots.open_turn == Some(turn) {
            snapshots.open_turn = None;
            snapshots.awaiting_end.push_back(turn);
            snapshots.worker.end(turn);
            self.tell_snapshot_busy();
        }
    }

    /// The first request waits for the baseline.
    pub(super) fn awaiting_baseline(&self) -> bool {
        self.snapshots
            .as_ref()
            .is_some_and(|snapshots| snapshots.baseline_pending)
    }

    /// The stream ends (`ShutDown`) only after the last turn's `turn.changes`.
    pub(super) fn awaiting_snapshot_after(&self) -> bool {
        self.snapshots
            .as_ref()
            .is_some_and(|snapshots| !snapshots.awaiting_end.is_empty())
    }

    /// A stop (or a shutdown) of the attempt held back for the baseline: it never started, so
    /// it ends here, cancelled, and the machine goes on.
    pub(super) fn cancel_held_attempt(&mut self, turn: TurnId, attempt: u32) -> bool {
        let held = self
            .deferred
            .as_ref()
            .and_then(Deferred::held_attempt)
            .is_some_and(|held| held == (turn, attempt));
        if !held {
            return false;
        }
        if let Some(deferred) = self.deferred.as_mut() {
            deferred.effects.retain(|effect| {
                !matches!(effect, Effect::StartAttempt { turn: t, attempt: a, .. }
                    | Effect::StartCompaction { turn: t, attempt: a, .. } if (*t, *a) == (turn, attempt))
            });
        }
        if let Some(snapshots) = self.snapshots.as_mut() {
            if snapshots.open_turn == Some(turn) {
                snapshots.open_turn = None;
                snapshots.begin_due = None;
            }
        }
        self.feedback.push_back(Input::Agent {
            turn,
            attempt,
            message: AgentMessage::Cancelled {
                stop_stage: StopStage::Cancel,
                elapsed_ms: 0,
            },
        });
        true
    }

    pub(super) fn emit_snapshot_notice(&mut self, turn: TurnId, message: String) {
        self.emit(OrchestratorEvent::Notice {
            turn,
            kind: NoticeKind::Snapshot,
            message,
        });
    }

    /// Handles the snapshot thread's answer and goes on with what waited for it; true once
    /// the machine has exited.
    pub(super) fn on_snapshot_reply(&mut self, reply: Option<SnapshotReply>) -> bool {
        let Some(reply) = reply else {
            tracing::warn!("the snapshot thread is gone; no more snapshots");
            self.snapshots = None;
            self.tell_snapshot_busy();
            return self.resume_deferred();
        };
        let Some(snapshots) = self.snapshots.as_mut() else {
            return false;
        };
        match reply {
            SnapshotReply::Interrupted(found) => {
                self.emit(OrchestratorEvent::RestoresInterrupted(found));
                false
            }
            SnapshotReply::Ready { notice } => {
                snapshots.baseline_pending = false;
                let turn = snapshots.first_turn.saturating_sub(1);
                if let Some(message) = notice {
                    self.emit_snapshot_notice(turn, message);
                }
                self.tell_snapshot_busy();
                self.resume_deferred()
            }
            SnapshotReply::Began { turn, notice } => {
                if let Some(message) = notice {
                    self.emit_snapshot_notice(turn, message);
                }
                false
            }
            SnapshotReply::Ended {
                turn,
                changes,
                notice,
            } => {
                snapshots.awaiting_end.retain(|waiting| *waiting != turn);
                if !changes.is_empty() {
                    self.emit(OrchestratorEvent::TurnChanges {
                        turn,
                        files: changes,
                    });
                }
                if let Some(message) = notice {
                    self.emit_snapshot_notice(turn, message);
                }
                self.tell_snapshot_busy();
                self.resume_deferred()
            }
            SnapshotReply::Undone { turn, outcome } => {
                self.emit(OrchestratorEvent::Undone { turn, outcome });
                false
            }
            SnapshotReply::Rewound { turn, outcome } => {
                self.files_rewound(turn, outcome, false);
                false
            }
            SnapshotReply::RewindUndone { turn, outcome } => {
                self.files_rewound(turn, outcome, true);
                false
            }
            SnapshotReply::Resolved {
                id,
                finish,
                outcome,
            } => {
                self.emit(OrchestratorEvent::RestoreResolved {
                    id,
                    finish,
                    outcome,
                });
                false
            }
        }
    }

    /// `/undo`'s effect: the snapshot thread puts the turn's files back.
    pub(super) fn undo_turn(&mut self, turn: TurnId, overwrite: bool) {
        match &self.snapshots {
            Some(snapshots) => snapshots.worker.undo(turn, overwrite),
            None => self.emit(OrchestratorEvent::Undone {
                turn,
                outcome: Err(
                    "no snapshots are kept ([snapshots] enabled = false in the config, \
                              --no-snapshots, or they could not be taken)"
                        .to_owned(),
                ),
            }),
        }
    }

    /// Finishes (or rolls back) a restore a crash interrupted, unless a turn runs.
    pub(super) fn resolve_restore(&mut self, id: String, finish: bool) {
        match (&self.snapshots, &self.live) {
            (Some(snapshots), None) => snapshots.worker.resolve(id, finish),
            (_, Some(_)) => self.emit(OrchestratorEvent::RestoreResolved {
                id,
                finish,
                outcome: Err("a turn is running; once it has ended".to_owned()),
            }),
            (None, None) => self.emit(OrchestratorEvent::RestoreResolved {
                id,
                finish,
                outcome: Err("no snapshots are kept".to_owned()),
            }),
        }
    }
}

/// The snapshot thread's next answer; pending for ever without the thread.
pub(super) async fn next_snapshot_reply(
    snapshots: &mut Option<Snapshots>,
) -> Option<SnapshotReply> {
    match snapshots.as_mut() {
        Some(snapshots) => snapshots.worker.next().await,
        None => std::future::pending().await,
    }
}
