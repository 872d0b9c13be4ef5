//! The turn's snapshots: the baseline as the chat opens, the tree before a turn and after it,
//! with what the turn changed and what could not be kept.

use std::sync::Arc;
use std::time::SystemTime;

use super::super::changes::turn_changes;
use super::super::journal::{self, InterruptedRestore};
use super::super::manifest::{BlobId, Manifest, NotKept};
use super::super::records::TurnRecord;
use super::super::scan::{ns, Guard, ScanReport};
use super::super::{activity, FileChange};
use super::{Latest, SnapshotReply, Turn, WorkerState};

impl WorkerState {
    /// The tree as it is, and any restore a crash interrupted in it (found first).
    pub(super) fn baseline(&mut self) -> Vec<SnapshotReply> {
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
            let keep: Vec<BlobId> = self.latest.iter().filter_map(|latest| latest.id).collect();
            let deleted = super::super::collect::collect(
                &self.store,
                snapshots,
                &keep,
                super::super::collect::GRACE,
            );
            if deleted > 0 {
                tracing::info!(deleted, "snapshot files no conversation needs were deleted");
            }
        }
        replies.push(SnapshotReply::Ready {
            notice: self.limits_notice(&report, None),
        });
        replies
    }

    /// The tree before turn `turn`, whose request went out at `since`.
    pub(super) fn begin(&mut self, turn: Turn, since: SystemTime) -> Vec<SnapshotReply> {
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

    /// The tree after turn `turn`, and what it changed (what other agentty turns changed
    /// meanwhile set apart: [`activity`]).
    pub(super) fn end(&mut self, turn: Turn) -> SnapshotReply {
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
        // What the next turn's agent may already be writing is not this turn's.
        let (after, report, _) = self.walk_settled(&before, since);
        let (after, after_id) = self.keep(after, true);
        let window = (ns(since), ns(SystemTime::now()));
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

    /// What a walk could not keep because of a limit, said once per conversation per limit.
    pub(super) fn limits_notice(
        &mut self,
        report: &ScanReport,
        _turn: Option<Turn>,
    ) -> Option<String> {
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
