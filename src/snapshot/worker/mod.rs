//! The store on a thread of its own, for the orchestrator: jobs run one after another in the
//! order given (a turn's snapshot before its end, an undo after both), and the replies come
//! back on a tokio channel the orchestrator's loop selects on. The thread ends when the worker
//! is dropped (after the job it is running).
//!
//! One walk a turn: the walk at a turn's end is the next turn's stat cache, and is kept in the
//! tree's store, so the next conversation (or `agentty run`) in the same tree starts from it.
//!
//! Here: the thread, its jobs and the walks they share; the turn's snapshots are in `turns`,
//! putting files back in `restores`.

use std::collections::{BTreeSet, HashMap};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tokio::sync::mpsc;

use super::journal::{self, InterruptedRestore};
use super::manifest::{BlobId, Manifest};
use super::records::Records;
use super::restore::UndoOutcome;
use super::scan::{exclude_matcher, scan, Guard, ScanReport, Walk};
use super::store::Store;
use super::watch::Watcher;
use super::{FileChange, SnapshotLimits, SnapshotSetup};

mod restores;
mod turns;

type Turn = u64;

enum Job {
    /// The tree as it is (and any restore a crash interrupted).
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
    /// Finish (or roll back) the interrupted restore `id`.
    Resolve { id: String, finish: bool },
}

/// What a job found.
#[derive(Debug, Clone, PartialEq)]
pub enum SnapshotReply {
    /// The baseline is taken; `notice`: what it could not keep (said as the chat opens).
    Ready { notice: Option<String> },
    /// Restores a crash interrupted in this tree (before `Ready`).
    Interrupted(Vec<InterruptedRestore>),
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
    /// An interrupted restore was finished (or rolled back).
    Resolved {
        id: String,
        finish: bool,
        outcome: Result<UndoOutcome, String>,
    },
}

pub struct SnapshotWorker {
    jobs: std_mpsc::Sender<Job>,
    replies: mpsc::UnboundedReceiver<SnapshotReply>,
    /// When the latest turn's request went out, read by a turn's "after" walk that may run
    /// while the next turn's agent already writes.
    next_since: Arc<Mutex<Option<SystemTime>>>,
}

impl SnapshotWorker {
    /// Starts the thread for the tree and store of `setup`, and takes the baseline at once.
    pub fn start(setup: SnapshotSetup) -> Self {
        let (jobs, job_rx) = std_mpsc::channel();
        let (reply_tx, replies) = mpsc::unbounded_channel();
        let store = Store::for_tree(&setup.state, &setup.root);
        let exclude = exclude_matcher(&setup.root, &setup.limits.exclude_patterns());
        let next_since = Arc::new(Mutex::new(None));
        let mut state = WorkerState {
            next_since: next_since.clone(),
            records: Records::new(setup.dir, store.clone()),
            root: setup.root,
            store,
            limits: setup.limits,
            exclude,
            latest: None,
            before: HashMap::new(),
            told: BTreeSet::new(),
            interrupted: Vec::new(),
            watcher: None,
        };
        let spawned = crate::background::spawn("agentty-snapshots", move || {
            while let Ok(job) = job_rx.recv() {
                for reply in state.run(job) {
                    if reply_tx.send(reply).is_err() {
                        return;
                    }
                }
            }
        });
        if let Err(error) = spawned {
            tracing::warn!(%error, "cannot start the snapshot thread; no snapshots");
        }
        let worker = Self {
            jobs,
            replies,
            next_since,
        };
        worker.send(Job::Baseline);
        worker
    }

    fn send(&self, job: Job) {
        // The thread ends only with the worker (or could not start: then nothing is taken,
        // and no reply will come; the caller waits for none it was not promised).
        let _ = self.jobs.send(job);
    }

    /// A turn's request went out at `since` (its "before" walk is asked for later).
    pub fn turn_started(&self, since: SystemTime) {
        if let Ok(mut next) = self.next_since.lock() {
            *next = Some(since);
        }
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

    pub(crate) fn resolve(&self, id: String, finish: bool) {
        self.send(Job::Resolve { id, finish });
    }

    /// The next reply; `None` once the thread is gone (it could not start, or panicked):
    /// no reply will come for what was asked.
    pub async fn next(&mut self) -> Option<SnapshotReply> {
        self.replies.recv().await
    }
}

/// The last walk of the tree: the next one's stat cache.
struct Latest {
    manifest: Arc<Manifest>,
    id: Option<BlobId>,
    depth: u32,
    /// When its walk ended, if it was taken between turns (the baseline, a turn's end): what it
    /// read then predates a request sent later.
    done_between_turns: Option<SystemTime>,
}

struct WorkerState {
    root: std::path::PathBuf,
    store: Store,
    records: Records,
    limits: SnapshotLimits,
    exclude: ignore::gitignore::Gitignore,
    latest: Option<Latest>,
    /// The snapshot before each turn still running, with its id, and when its request went.
    before: HashMap<Turn, (Arc<Manifest>, Option<BlobId>, SystemTime)>,
    /// The limits already said in this conversation (each once).
    told: BTreeSet<u8>,
    interrupted: Vec<journal::JournalRecord>,
    next_since: Arc<Mutex<Option<SystemTime>>>,
    /// The tree's folders, watched since the last walk between turns ([`Watcher`]).
    watcher: Option<Watcher>,
}

impl WorkerState {
    /// Watches the folders of `manifest` (and the root) from now on; `None` when they cannot be.
    fn watch(&self, manifest: &Manifest) -> Option<Watcher> {
        let mut watcher = Watcher::new()?;
        watcher.watch(&self.root);
        for (path, entry) in &manifest.entries {
            if entry.kind == super::manifest::EntryKind::Dir {
                watcher.watch(&self.root.join(super::manifest::bytes_path(path)));
            }
        }
        Some(watcher)
    }

    /// Also watches the folders of `after` that `before` did not have.
    fn watch_new(&self, watcher: &mut Option<Watcher>, before: &Manifest, after: &Manifest) {
        let Some(watcher) = watcher.as_mut() else {
            return;
        };
        for (path, entry) in &after.entries {
            if entry.kind == super::manifest::EntryKind::Dir && !before.entries.contains_key(path) {
                watcher.watch(&self.root.join(super::manifest::bytes_path(path)));
            }
        }
    }

    fn walk(&self, cache: Option<&Manifest>, guard: Option<Guard<'_>>) -> (Manifest, ScanReport) {
        let walk = Walk {
            root: &self.root,
            store: &self.store,
            limits: &self.limits,
            exclude: &self.exclude,
        };
        scan(&walk, cache, guard)
    }

    /// Walks the tree from `expected` (its stat cache) as it was left at `from`. The next
    /// turn's agent may already be writing: what it wrote is not in this walk, so a request
    /// sent after `from` guards the walk, and one sent while it ran makes it walk again, guarded
    /// (the stat cache makes the second walk cheap). The folders are watched from before the
    /// walk, unless a next turn was under way (its "before" is then walked); returns whether
    /// one was.
    fn walk_settled(
        &mut self,
        expected: &Manifest,
        from: SystemTime,
    ) -> (Manifest, ScanReport, bool) {
        let next_turn = || {
            self.next_since
                .lock()
                .ok()
                .and_then(|next| *next)
                .filter(|next| *next > from)
        };
        let mut next = next_turn();
        let mut watcher = self.watch(expected);
        let (walked, report) = loop {
            let guard = next.map(|next| Guard {
                since: next,
                baseline: expected,
                baseline_done: None,
            });
            let walked = self.walk(Some(expected), guard);
            let now = next_turn();
            if now == next {
                break walked;
            }
            next = now;
        };
        self.watch_new(&mut watcher, expected, &walked);
        self.watcher = watcher.filter(|_| next.is_none());
        (walked, report, next.is_some())
    }

    /// Keeps `manifest` in the store (as a delta from the latest walk where that is small) and
    /// makes it the latest; returns its id (`None`: it could not be written).
    fn keep(&mut self, manifest: Manifest, between_turns: bool) -> (Arc<Manifest>, Option<BlobId>) {
        let base = self
            .latest
            .as_ref()
            .and_then(|latest| Some((latest.manifest.as_ref(), latest.id?, latest.depth)));
        let saved = self.store.save_manifest(&manifest, base);
        let (id, depth) = match saved {
            Ok((id, depth)) => {
                let rules = self.rules();
                if let Err(error) = self
                    .store
                    .set_latest(id, depth, manifest.taken_at_ns, rules)
                {
                    tracing::warn!(%error, "cannot record the latest snapshot");
                }
                (Some(id), depth)
            }
            Err(error) => {
                tracing::warn!(%error, "cannot save a snapshot");
                (None, 0)
            }
        };
        let manifest = Arc::new(manifest);
        self.latest = Some(Latest {
            manifest: manifest.clone(),
            id,
            depth,
            done_between_turns: between_turns.then(SystemTime::now),
        });
        (manifest, id)
    }

    /// The exclusions a walk goes by, as a hash (a cache walked by others is not used).
    fn rules(&self) -> u64 {
        xxhash_rust::xxh3::xxh3_64(self.limits.exclude_patterns().join("\n").as_bytes())
    }

    fn run(&mut self, job: Job) -> Vec<SnapshotReply> {
        match job {
            Job::Baseline => self.baseline(),
            Job::Begin { turn, since } => self.begin(turn, since),
            Job::End { turn } => vec![self.end(turn)],
            Job::Undo { turn, overwrite } => {
                let outcome = self.undo(turn, overwrite);
                vec![SnapshotReply::Undone { turn, outcome }]
            }
            Job::Rewind { turn, overwrite } => {
                let outcome = self.rewind(turn, overwrite);
                vec![SnapshotReply::Rewound { turn, outcome }]
            }
            Job::UndoRewind { turn, overwrite } => {
                let outcome = self.undo_rewind(turn, overwrite);
                vec![SnapshotReply::RewindUndone { turn, outcome }]
            }
            Job::Resolve { id, finish } => {
                let outcome = self.resolve(&id, finish);
                vec![SnapshotReply::Resolved {
                    id,
                    finish,
                    outcome,
                }]
            }
        }
    }
}
