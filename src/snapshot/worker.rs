//! The store on a thread of its own, for the orchestrator: jobs run one after another in the
//! order given (a turn's snapshot before its end, an undo after both), and the replies come
//! back on a tokio channel the orchestrator's loop selects on. The thread ends when the worker
//! is dropped (after the job it is running).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc as std_mpsc;
use std::time::SystemTime;

use tokio::sync::mpsc;

use super::restore::{undo, UndoOutcome};
use super::scan::{scan, Guard, ScanReport};
use super::store::{Manifest, Store};
use super::{after_name, before_name, turn_changes, FileChange, SnapshotLimits};

type Turn = u64;

enum Job {
    /// The tree as it is, kept in memory only: the next snapshot reads only what changed.
    Baseline,
    /// The tree before turn `turn`, whose request went out at `since`.
    Begin { turn: Turn, since: SystemTime },
    /// The tree after turn `turn`, and what it changed.
    End { turn: Turn },
    /// Put back what turn `turn` changed.
    Undo { turn: Turn, overwrite: bool },
    /// Put the tree back as it was before turn `turn` (what it and every later turn changed).
    Rewind { turn: Turn, overwrite: bool },
    /// Bring back what the rewind to before turn `turn` put back.
    UndoRewind { turn: Turn, overwrite: bool },
}

/// What a job found.
#[derive(Debug, Clone, PartialEq)]
pub enum SnapshotReply {
    /// The baseline is taken: a turn's snapshot now reads only what changed since (for
    /// benchmarks and tests; the orchestrator never waits for it).
    Ready,
    /// The snapshot before `turn` is kept; `notice`: what it could not keep.
    Began { turn: Turn, notice: Option<String> },
    Ended {
        turn: Turn,
        changes: Vec<FileChange>,
        notice: Option<String>,
    },
    Undone {
        turn: Turn,
        outcome: Result<UndoOutcome, String>,
    },
    Rewound {
        turn: Turn,
        outcome: Result<UndoOutcome, String>,
    },
    RewindUndone {
        turn: Turn,
        outcome: Result<UndoOutcome, String>,
    },
}

pub struct SnapshotWorker {
    jobs: std_mpsc::Sender<Job>,
    replies: mpsc::UnboundedReceiver<SnapshotReply>,
}

impl SnapshotWorker {
    /// Starts the thread for the tree at `root`, keeping its store in `dir`, and takes the
    /// baseline at once (while the user types the first prompt).
    pub fn start(root: PathBuf, dir: PathBuf, limits: SnapshotLimits) -> Self {
        let (jobs, job_rx) = std_mpsc::channel();
        let (reply_tx, replies) = mpsc::unbounded_channel();
        let mut state = WorkerState {
            root,
            store: Store::new(dir),
            limits,
            latest: None,
            latest_done: None,
            before: HashMap::new(),
            told_over_total: false,
        };
        let spawned = crate::background::spawn("agentty-snapshots", move || {
            while let Ok(job) = job_rx.recv() {
                if reply_tx.send(state.run(job)).is_err() {
                    break;
                }
            }
        });
        if let Err(error) = spawned {
            tracing::warn!(%error, "cannot start the snapshot thread; no snapshots");
        }
        let worker = Self { jobs, replies };
        worker.send(Job::Baseline);
        worker
    }

    fn send(&self, job: Job) {
        // The thread ends only with the worker (or could not start: then nothing is taken,
        // and no reply will come; the caller waits for none it was not promised).
        let _ = self.jobs.send(job);
    }

    pub fn begin(&self, turn: Turn, since: SystemTime) {
        self.send(Job::Begin { turn, since });
    }

    pub fn end(&self, turn: Turn) {
        self.send(Job::End { turn });
    }

    pub(crate) fn undo(&self, turn: Turn, overwrite: bool) {
        self.send(Job::Undo { turn, overwrite });
    }

    pub(crate) fn rewind(&self, turn: Turn, overwrite: bool) {
        self.send(Job::Rewind { turn, overwrite });
    }

    pub(crate) fn undo_rewind(&self, turn: Turn, overwrite: bool) {
        self.send(Job::UndoRewind { turn, overwrite });
    }

    /// The next reply; `None` once the thread is gone (it could not start, or panicked):
    /// no reply will come for what was asked.
    pub async fn next(&mut self) -> Option<SnapshotReply> {
        self.replies.recv().await
    }
}

struct WorkerState {
    root: PathBuf,
    store: Store,
    limits: SnapshotLimits,
    /// The last snapshot taken: the cache of the next.
    latest: Option<Manifest>,
    /// When the walk of `latest` ended, for a snapshot taken between turns (the baseline, a
    /// turn's "after"): what it read then predates a request sent later.
    latest_done: Option<SystemTime>,
    /// The snapshot before each turn still running.
    before: HashMap<Turn, Manifest>,
    told_over_total: bool,
}

impl WorkerState {
    fn run(&mut self, job: Job) -> SnapshotReply {
        match job {
            Job::Baseline => {
                let (manifest, report) = scan(&self.root, &self.store, &self.limits, None, None);
                tracing::info!(
                    files = manifest.entries.len(),
                    bytes = report.bytes_read,
                    "snapshot baseline taken"
                );
                self.latest = Some(manifest);
                self.latest_done = Some(SystemTime::now());
                SnapshotReply::Ready
            }
            Job::Begin { turn, since } => {
                let empty = Manifest::default();
                let baseline = self.latest.take();
                let (manifest, report) = scan(
                    &self.root,
                    &self.store,
                    &self.limits,
                    baseline.as_ref(),
                    Some(Guard {
                        since,
                        baseline: baseline.as_ref().unwrap_or(&empty),
                        baseline_done: self.latest_done.take(),
                    }),
                );
                let notice = self.limits_notice(&report);
                if let Err(error) = self.store.save_manifest(&before_name(turn), &manifest) {
                    tracing::warn!(%error, "cannot save a snapshot");
                }
                self.before.insert(turn, manifest.clone());
                self.latest = Some(manifest);
                SnapshotReply::Began { turn, notice }
            }
            Job::End { turn } => {
                let before = match self.before.remove(&turn) {
                    Some(before) => before,
                    None => self.latest.clone().unwrap_or_default(),
                };
                let (after, report) =
                    scan(&self.root, &self.store, &self.limits, Some(&before), None);
                if let Err(error) = self.store.save_manifest(&after_name(turn), &after) {
                    tracing::warn!(%error, "cannot save a snapshot");
                }
                let changes = turn_changes(&self.store, &before, &after);
                let too_big: Vec<&str> = changes
                    .iter()
                    .filter(|change| change.too_big)
                    .map(|change| change.path.as_str())
                    .collect();
                let notice = if too_big.is_empty() {
                    self.limits_notice(&report)
                } else {
                    Some(format!(
                        "Changed but too big to keep (limits: [snapshots] max_file_kb = {}, max_total_mb = {}): {}. /diff cannot show and /undo cannot restore {}.",
                        self.limits.max_file_kb,
                        self.limits.max_total_mb,
                        too_big.join(", "),
                        if too_big.len() == 1 { "it" } else { "them" }
                    ))
                };
                self.latest = Some(after);
                self.latest_done = Some(SystemTime::now());
                SnapshotReply::Ended {
                    turn,
                    changes,
                    notice,
                }
            }
            Job::Undo { turn, overwrite } => {
                let outcome = self
                    .store
                    .manifest(&before_name(turn))
                    .and_then(|before| Ok((before, self.store.manifest(&after_name(turn))?)))
                    .map(|(before, after)| {
                        undo(&self.root, &self.store, &before, &after, overwrite)
                    })
                    .map_err(|error| format!("the snapshots of that turn cannot be read: {error}"));
                if matches!(&outcome, Ok(done) if !done.stopped_by_conflicts()) {
                    self.keep_taken_back(&[turn]);
                }
                SnapshotReply::Undone { turn, outcome }
            }
            Job::Rewind { turn, overwrite } => {
                let outcome = self.rewind(turn, overwrite);
                SnapshotReply::Rewound { turn, outcome }
            }
            Job::UndoRewind { turn, overwrite } => {
                let outcome = self.undo_rewind(turn, overwrite);
                SnapshotReply::RewindUndone { turn, outcome }
            }
        }
    }

    /// Undoes turn `turn` and every later one together: each file as before the first turn
    /// that changed it, if it is as the last one that changed it left it.
    fn rewind(&self, turn: Turn, overwrite: bool) -> Result<UndoOutcome, String> {
        // Turns already undone are left out (their files are as before them).
        let turns = self.store.turns_from(turn);
        if self.store.manifest(&before_name(turn)).is_err() {
            return Err(format!(
                "no snapshot of the tree before turn {turn} is kept"
            ));
        }
        let pairs = turns
            .iter()
            .map(|turn| {
                let before = self.store.manifest(&before_name(*turn))?;
                Ok((before, self.store.manifest(&after_name(*turn))?))
            })
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|error| format!("the snapshots cannot be read: {error}"))?;
        let (before, after) = super::compose(&pairs);
        let outcome = undo(&self.root, &self.store, &before, &after, overwrite);
        if !outcome.stopped_by_conflicts() {
            // Kept so the rewind can be undone; its turns no longer count for a later one.
            if let Err(error) = self.store.save_rewind(turn, &turns) {
                tracing::warn!(%error, "cannot keep what a rewind took back");
            }
            self.keep_taken_back(&turns);
        }
        Ok(outcome)
    }

    /// Undoes the rewind to before `turn`: each file it put back as the last of its turns
    /// left it, if it is still as the rewind left it.
    fn undo_rewind(&self, turn: Turn, overwrite: bool) -> Result<UndoOutcome, String> {
        let turns = self
            .store
            .rewind_record(turn)
            .map_err(|error| format!("what the rewind took back is not kept ({error})"))?;
        let pairs = turns
            .iter()
            .map(|turn| {
                let before = self.store.manifest(&before_name(*turn))?;
                Ok((before, self.store.manifest(&after_name(*turn))?))
            })
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|error| format!("the snapshots cannot be read: {error}"))?;
        let (before, after) = super::compose(&pairs);
        // The rewind's undo, the other way round: from "before" back to "after".
        let outcome = undo(&self.root, &self.store, &after, &before, overwrite);
        if !outcome.stopped_by_conflicts() {
            self.store.forget_rewind(turn);
            if let Err(error) = self.store.mark_taken_back(&turns, false) {
                tracing::warn!(%error, "cannot mark turns brought back");
            }
        }
        Ok(outcome)
    }

    fn keep_taken_back(&self, turns: &[Turn]) {
        if let Err(error) = self.store.mark_taken_back(turns, true) {
            tracing::warn!(%error, "cannot mark turns taken back");
        }
    }

    /// Once per conversation: the snapshot was full, so later files are not kept.
    fn limits_notice(&mut self, report: &ScanReport) -> Option<String> {
        if report.over_total == 0 || self.told_over_total {
            return None;
        }
        self.told_over_total = true;
        Some(format!(
            "The working tree is larger than a snapshot keeps ([snapshots] max_total_mb = {}, max_files = {}): {} files are not kept, so their changes cannot be shown or undone.",
            self.limits.max_total_mb, self.limits.max_files, report.over_total
        ))
    }
}
