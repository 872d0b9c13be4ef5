//! The store on a thread of its own, for the orchestrator: jobs run one after another in the
//! order given (a turn's snapshot before its end, an undo after both), and the replies come
//! back on a tokio channel the orchestrator's loop selects on. The thread ends when the worker
//! is dropped (after the job it is running).
//!
//! One walk a turn: the walk at a turn's end is the next turn's stat cache, and is kept in the
//! tree's store, so the next conversation (or `agentty run`) in the same tree starts from it.

use std::collections::{BTreeSet, HashMap};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tokio::sync::mpsc;

use super::changes::turn_changes;
use super::journal::{self, InterruptedRestore, Journal, RestoreKind};
use super::manifest::{BlobId, Manifest, NotKept};
use super::records::{Records, TurnRecord};
use super::restore::{undo, UndoOutcome};
use super::scan::{exclude_matcher, scan, Guard, ScanReport, Walk};
use super::store::Store;
use super::watch::Watcher;
use super::{activity, FileChange, SnapshotLimits, SnapshotSetup};

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
            Job::Baseline => {
                let mut replies = Vec::new();
                self.interrupted = journal::interrupted(&self.store);
                let found: Vec<InterruptedRestore> = self
                    .interrupted
                    .iter()
                    .filter_map(|record| journal::examine(&self.root, &self.store, record).ok())
                    .collect();
                if !found.is_empty() {
                    replies.push(SnapshotReply::Interrupted(found));
                }
                let cached = self.store.latest(self.rules());
                if let Some((manifest, id, depth)) = cached {
                    self.latest = Some(Latest {
                        manifest: Arc::new(manifest),
                        id: Some(id),
                        depth,
                        done_between_turns: None,
                    });
                }
                let cache = self.latest.as_ref().map(|latest| latest.manifest.clone());
                // Watched from before the walk (a cold walk is not: the next turn walks again).
                let mut watcher = cache.as_deref().and_then(|cache| self.watch(cache));
                let (manifest, report) = self.walk(cache.as_deref(), None);
                if let Some(cache) = cache.as_deref() {
                    self.watch_new(&mut watcher, cache, &manifest);
                }
                self.watcher = watcher;
                tracing::info!(
                    files = report.files,
                    read = report.files_read,
                    bytes = report.bytes_read,
                    "snapshot baseline taken"
                );
                self.keep(manifest, true);
                if let Err(error) = self.records.link(&self.limits) {
                    tracing::warn!(%error, "cannot record the conversation's snapshot store");
                }
                if let Some(snapshots) = self.records.dir().parent() {
                    let keep: Vec<BlobId> =
                        self.latest.iter().filter_map(|latest| latest.id).collect();
                    let deleted = super::collect::collect(
                        &self.store,
                        snapshots,
                        &keep,
                        super::collect::GRACE,
                    );
                    if deleted > 0 {
                        tracing::info!(
                            deleted,
                            "snapshot files no conversation needs were deleted"
                        );
                    }
                }
                replies.push(SnapshotReply::Ready {
                    notice: self.limits_notice(&report, None),
                });
                replies
            }
            Job::Begin { turn, since } => {
                // Nothing happened in the tree since the last walk between turns: that walk is
                // this turn's "before", and no other is needed.
                let quiet = self.watcher.take().is_some_and(|watcher| watcher.quiet());
                if let Some(latest) = self
                    .latest
                    .as_ref()
                    .filter(|latest| quiet && latest.done_between_turns.is_some())
                {
                    let kept = (latest.manifest.clone(), latest.id, since);
                    activity::began(&self.store, since);
                    self.before.insert(turn, kept);
                    return vec![SnapshotReply::Began { turn, notice: None }];
                }
                let latest = self.latest.take();
                let empty = Manifest::default();
                let baseline = latest.as_ref().map(|latest| latest.manifest.clone());
                let (manifest, report) = self.walk(
                    baseline.as_deref(),
                    Some(Guard {
                        since,
                        baseline: baseline.as_deref().unwrap_or(&empty),
                        baseline_done: latest.as_ref().and_then(|latest| latest.done_between_turns),
                    }),
                );
                self.latest = latest;
                let notice = self.limits_notice(&report, None);
                let (manifest, id) = self.keep(manifest, false);
                activity::began(&self.store, since);
                self.before.insert(turn, (manifest, id, since));
                vec![SnapshotReply::Began { turn, notice }]
            }
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

    fn end(&mut self, turn: Turn) -> SnapshotReply {
        let (before, before_id, since) = match self.before.remove(&turn) {
            Some(before) => before,
            None => {
                let latest = self.latest.as_ref();
                (
                    latest
                        .map(|latest| latest.manifest.clone())
                        .unwrap_or_default(),
                    latest.and_then(|latest| latest.id),
                    SystemTime::now(),
                )
            }
        };
        // The next turn's agent may already be writing: what it wrote is not this turn's. A
        // request sent while the walk ran makes it walk again, guarded (the stat cache makes
        // the second walk cheap).
        let next_turn = || {
            self.next_since
                .lock()
                .ok()
                .and_then(|next| *next)
                .filter(|next| *next > since)
        };
        let mut next = next_turn();
        let mut watcher = self.watch(&before);
        let (after, report) = loop {
            let guard = next.map(|next| Guard {
                since: next,
                baseline: &before,
                baseline_done: None,
            });
            let walked = self.walk(Some(&before), guard);
            let now = next_turn();
            if now == next {
                break walked;
            }
            next = now;
        };
        self.watch_new(&mut watcher, &before, &after);
        // A next turn already under way wrote meanwhile: its "before" is walked.
        self.watcher = watcher.filter(|_| next.is_none());
        let (after, after_id) = self.keep(after, true);
        let window = (super::scan::ns(since), super::scan::ns(SystemTime::now()));
        // What other agentty turns in this tree did meanwhile is theirs, not this turn's.
        let foreign = activity::overlapping(&self.store, window.0, window.1);
        let mut before_id = before_id;
        let mut apart = activity::Apart::default();
        let before = if foreign.is_empty() {
            before
        } else {
            let mut mine = before.as_ref().clone();
            apart = activity::set_apart(&self.store, &mut mine, &after, &foreign);
            if !apart.theirs.is_empty() {
                let depth = self.latest.as_ref().map_or(0, |latest| latest.depth);
                let base = after_id.map(|id| (after.as_ref(), id, depth));
                before_id = self.store.save_manifest(&mine, base).ok().map(|(id, _)| id);
            }
            Arc::new(mine)
        };
        let changes = turn_changes(&self.store, &self.limits, &before, &after);
        activity::ended(&self.store, since, before_id.zip(after_id));
        let foreign = apart.unresolved;
        if let (Some(before_id), Some(after_id)) = (before_id, after_id) {
            let record = TurnRecord::new(before_id, after_id, foreign.clone(), window);
            if let Err(error) = self.records.save_turn(turn, &record) {
                tracing::warn!(%error, "cannot keep the turn's snapshots");
            }
        }
        let not_kept: Vec<&FileChange> = changes.iter().filter(|change| change.too_big).collect();
        let mut notices = Vec::new();
        if !not_kept.is_empty() {
            let listed: Vec<String> = not_kept
                .iter()
                .take(20)
                .map(|change| {
                    format!(
                        "{} ({})",
                        change.path,
                        change.not_kept.as_deref().unwrap_or("not kept")
                    )
                })
                .collect();
            let more = not_kept.len().saturating_sub(listed.len());
            notices.push(format!(
                "Changed but not kept, so /diff cannot show and /undo cannot restore {}: {}{}.",
                if not_kept.len() == 1 { "it" } else { "them" },
                listed.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ));
        } else if let Some(notice) = self.limits_notice(&report, None) {
            notices.push(notice);
        }
        if !foreign.is_empty() && !changes.is_empty() {
            notices.push(format!(
                "Another agentty (pid {}) ran a turn in this folder at the same time: some of these changes may be its own, so /undo asks before touching any.",
                foreign
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !apart.theirs.is_empty() {
            let (files, pids): (usize, Vec<String>) =
                apart
                    .theirs
                    .iter()
                    .fold((0, Vec::new()), |(files, mut pids), (pid, count)| {
                        pids.push(pid.to_string());
                        (files + count, pids)
                    });
            notices.push(format!(
                "{files} file{} changed meanwhile by another agentty's turn in this folder (pid {}) {} not counted as this turn's.",
                if files == 1 { "" } else { "s" },
                pids.join(", "),
                if files == 1 { "is" } else { "are" },
            ));
        }
        SnapshotReply::Ended {
            turn,
            changes,
            notice: (!notices.is_empty()).then(|| notices.join(" ")),
        }
    }

    /// The two manifests of turn `turn`, and the other agentty processes whose part in its
    /// change could not be told apart from its own ([`activity`]).
    fn turn_pair(&self, turn: Turn) -> std::io::Result<(Manifest, Manifest, Vec<u32>)> {
        let record = self.records.turn(turn)?;
        let (before, after) = record.ids()?;
        let (mut before, after) = (self.store.manifest(before)?, self.store.manifest(after)?);
        let foreign = self.still_shared(&record, &mut before, &after);
        Ok((before, after, foreign))
    }

    /// The other agentty processes of `record` whose part still cannot be told apart: a turn
    /// that was running when this one ended may have said what it changed since (its part is
    /// then taken out of `before`); one whose record is gone cannot be told apart.
    fn still_shared(
        &self,
        record: &TurnRecord,
        before: &mut Manifest,
        after: &Manifest,
    ) -> Vec<u32> {
        let Some((start, until)) = record.window.filter(|_| !record.foreign.is_empty()) else {
            return record.foreign.clone();
        };
        let turns: Vec<activity::ForeignTurn> = activity::overlapping(&self.store, start, until)
            .into_iter()
            .filter(|turn| record.foreign.contains(&turn.pid))
            .collect();
        let mut left = activity::set_apart(&self.store, before, after, &turns).unresolved;
        left.extend(
            record
                .foreign
                .iter()
                .filter(|pid| !turns.iter().any(|turn| turn.pid == **pid)),
        );
        left.sort_unstable();
        left.dedup();
        left
    }

    /// Runs a restore from `left` to `target` under a journal.
    fn restore(
        &mut self,
        kind: RestoreKind,
        turn: Turn,
        turns: Vec<Turn>,
        target: &Manifest,
        left: &Manifest,
        overwrite: bool,
    ) -> Result<UndoOutcome, String> {
        let (target, left) = only_changed(target, left);
        if !overwrite && !super::restore::conflicts(&self.root, &target, &left).is_empty() {
            // Nothing is written (nor journaled): the conflicts are asked about.
            return Ok(undo(
                &self.root,
                &self.store,
                &self.limits,
                &target,
                &left,
                false,
                "none",
            ));
        }
        let journal = Journal::begin(
            &self.store,
            kind,
            turn,
            turns,
            self.records.dir(),
            &target,
            &left,
        )
        .map_err(|error| format!("the restore's journal cannot be written ({error})"))?;
        let started = SystemTime::now();
        let outcome = undo(
            &self.root,
            &self.store,
            &self.limits,
            &target,
            &left,
            overwrite,
            &journal.id,
        );
        journal.done();
        if outcome.changed_anything() || !outcome.failed.is_empty() {
            self.walk_after_restore(started, Some((&target, &left)));
        }
        Ok(outcome)
    }

    /// The tree as a restore begun at `started` left it becomes the latest walk: the next
    /// turn's stat cache, and what its "before" takes a file from when the agent wrote it before
    /// the walk read it (without this, that was the tree before the restore: a turn after an
    /// `/undo` whose agent wrote at once had its edits taken for "before", and missed). What
    /// the restore meant to write (`target` where it differs from `left`) is the walk's guard
    /// baseline, should the next request go out meanwhile.
    fn walk_after_restore(
        &mut self,
        started: SystemTime,
        restored: Option<(&Manifest, &Manifest)>,
    ) {
        let Some(latest) = self.latest.as_ref() else {
            return;
        };
        let mut expected = latest.manifest.as_ref().clone();
        if let Some((target, left)) = restored {
            for path in left.entries.keys() {
                if !target.entries.contains_key(path) {
                    expected.entries.remove(path);
                }
            }
            for (path, entry) in &target.entries {
                expected.entries.insert(path.clone(), entry.clone());
            }
        }
        let next_turn = || {
            self.next_since
                .lock()
                .ok()
                .and_then(|next| *next)
                .filter(|next| *next > started)
        };
        let mut watcher = self.watch(&expected);
        let mut next = next_turn();
        let (manifest, _) = loop {
            let guard = next.map(|next| Guard {
                since: next,
                baseline: &expected,
                baseline_done: None,
            });
            let walked = self.walk(Some(&expected), guard);
            let now = next_turn();
            if now == next {
                break walked;
            }
            next = now;
        };
        self.watch_new(&mut watcher, &expected, &manifest);
        self.watcher = watcher.filter(|_| next.is_none());
        self.keep(manifest, next.is_none());
    }

    fn undo(&mut self, turn: Turn, overwrite: bool) -> Result<UndoOutcome, String> {
        let (before, after, foreign) = self
            .turn_pair(turn)
            .map_err(|error| format!("the snapshots of that turn cannot be read: {error}"))?;
        if !foreign.is_empty() && !overwrite {
            // Another agentty's turn ran meanwhile: what looks like this turn's may be its.
            let (before, after) = only_changed(&before, &after);
            let mut outcome = UndoOutcome {
                shared_with: foreign,
                ..UndoOutcome::default()
            };
            // Nothing is written: every path the turn seems to have changed is asked about.
            outcome.conflicts = super::changes::reported_paths(&before, &after)
                .iter()
                .map(|path| super::manifest::display_path(path))
                .collect();
            return Ok(outcome);
        }
        let outcome = self.restore(
            RestoreKind::Undo,
            turn,
            vec![turn],
            &before,
            &after,
            overwrite,
        )?;
        if !outcome.stopped_by_conflicts() {
            self.keep_taken_back(&[turn], true);
        }
        Ok(outcome)
    }

    /// The composed pair of `turns` (each file as before the first that changed it, and as the
    /// last left it).
    fn composed(&self, turns: &[Turn]) -> Result<(Manifest, Manifest), String> {
        let pairs = turns
            .iter()
            .map(|turn| {
                self.turn_pair(*turn)
                    .map(|(before, after, _)| (before, after))
            })
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|error| format!("the snapshots cannot be read: {error}"))?;
        Ok(super::compose(&pairs))
    }

    /// Undoes turn `turn` and every later one together: each file as before the first turn
    /// that changed it, if it is as the last one that changed it left it.
    fn rewind(&mut self, turn: Turn, overwrite: bool) -> Result<UndoOutcome, String> {
        // Turns already undone are left out (their files are as before them).
        let turns = self.records.turns_from(turn);
        if self.records.turn(turn).is_err() && turns.is_empty() {
            return Err(format!(
                "no snapshot of the tree before turn {turn} is kept"
            ));
        }
        let (before, after) = self.composed(&turns)?;
        let outcome = self.restore(
            RestoreKind::Rewind,
            turn,
            turns.clone(),
            &before,
            &after,
            overwrite,
        )?;
        if !outcome.stopped_by_conflicts() {
            // Kept so the rewind can be undone; its turns no longer count for a later one.
            if let Err(error) = self.records.save_rewind(turn, &turns) {
                tracing::warn!(%error, "cannot keep what a rewind took back");
            }
            self.keep_taken_back(&turns, true);
        }
        Ok(outcome)
    }

    /// Undoes the rewind to before `turn`: each file it put back as the last of its turns
    /// left it, if it is still as the rewind left it.
    fn undo_rewind(&mut self, turn: Turn, overwrite: bool) -> Result<UndoOutcome, String> {
        let turns = self
            .records
            .rewind_record(turn)
            .map_err(|error| format!("what the rewind took back is not kept ({error})"))?;
        let (before, after) = self.composed(&turns)?;
        // The rewind's undo, the other way round: from "before" back to "after".
        let outcome = self.restore(
            RestoreKind::UndoRewind,
            turn,
            turns.clone(),
            &after,
            &before,
            overwrite,
        )?;
        if !outcome.stopped_by_conflicts() {
            self.records.forget_rewind(turn);
            self.keep_taken_back(&turns, false);
        }
        Ok(outcome)
    }

    fn resolve(&mut self, id: &str, finish: bool) -> Result<UndoOutcome, String> {
        let Some(index) = self.interrupted.iter().position(|record| record.id == id) else {
            return Err("that interrupted restore is no longer pending".to_owned());
        };
        let record = self.interrupted.remove(index);
        let started = SystemTime::now();
        let outcome = journal::resolve(&self.root, &self.store, &self.limits, &record, finish)
            .map_err(|error| format!("its journal cannot be read: {error}"))?;
        if outcome.changed_anything() {
            self.walk_after_restore(started, None);
        }
        if finish {
            // What the restore was for now holds: its conversation's records say so.
            if let Ok(records) = Records::open(&record.conversation, self.store.anchor()) {
                let marked = match record.kind {
                    RestoreKind::Undo => records.mark_taken_back(&record.turns, true),
                    RestoreKind::Rewind => records
                        .save_rewind(record.turn, &record.turns)
                        .and_then(|()| records.mark_taken_back(&record.turns, true)),
                    RestoreKind::UndoRewind => {
                        records.forget_rewind(record.turn);
                        records.mark_taken_back(&record.turns, false)
                    }
                };
                if let Err(error) = marked {
                    tracing::warn!(%error, "cannot record a finished restore");
                }
            }
        }
        Ok(outcome)
    }

    fn keep_taken_back(&self, turns: &[Turn], taken_back: bool) {
        if let Err(error) = self.records.mark_taken_back(turns, taken_back) {
            tracing::warn!(%error, "cannot mark turns taken back");
        }
    }

    /// What a walk could not keep because of a limit, said once per conversation per limit.
    fn limits_notice(&mut self, report: &ScanReport, _turn: Option<Turn>) -> Option<String> {
        let mut parts = Vec::new();
        for (why, count) in &report.not_kept {
            let code = *why as u8;
            let said = match why {
                NotKept::OverFileCount
                | NotKept::OverTotal
                | NotKept::StoreFull
                | NotKept::StoreFailed => !self.told.insert(code),
                // Files over the size limit, unreadable ones: said where they change.
                _ => true,
            };
            if said {
                continue;
            }
            parts.push(format!(
                "{count} file{} not kept ({})",
                if *count == 1 { "" } else { "s" },
                why.reason(&self.limits)
            ));
        }
        if parts.is_empty() {
            return None;
        }
        Some(format!(
            "The snapshot of this folder ({} files) is incomplete: {}. Changes to those files are seen but cannot be shown or undone.",
            report.files,
            parts.join("; ")
        ))
    }
}

/// `target` and `left` restricted to the paths where they differ (what a restore touches).
fn only_changed(target: &Manifest, left: &Manifest) -> (Manifest, Manifest) {
    let paths = target.changed_paths(left);
    let restrict = |manifest: &Manifest| Manifest {
        taken_at_ns: manifest.taken_at_ns,
        entries: paths
            .iter()
            .filter_map(|path| Some((path.to_vec(), manifest.entries.get(*path)?.clone())))
            .collect(),
    };
    (restrict(target), restrict(left))
}
