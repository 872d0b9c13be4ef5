//! Putting files back: a turn's undo, a rewind and its undo, each under a journal, and an
//! interrupted restore finished or rolled back; then the tree as the restore left it is walked.

use std::time::SystemTime;

use super::super::activity;
use super::super::journal::{self, Journal, RestoreKind};
use super::super::manifest::Manifest;
use super::super::records::{Records, TurnRecord};
use super::super::restore::{undo, UndoOutcome};
use super::{Turn, WorkerState};

impl WorkerState {
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
        if !overwrite && !super::super::restore::conflicts(&self.root, &target, &left).is_empty() {
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
        let (manifest, _, next_under_way) = self.walk_settled(&expected, started);
        self.keep(manifest, !next_under_way);
    }

    pub(super) fn undo(&mut self, turn: Turn, overwrite: bool) -> Result<UndoOutcome, String> {
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
            outcome.conflicts = super::super::changes::reported_paths(&before, &after)
                .iter()
                .map(|path| super::super::manifest::display_path(path))
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
        Ok(super::super::compose(&pairs))
    }

    /// Undoes turn `turn` and every later one together: each file as before the first turn
    /// that changed it, if it is as the last one that changed it left it.
    pub(super) fn rewind(&mut self, turn: Turn, overwrite: bool) -> Result<UndoOutcome, String> {
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
    pub(super) fn undo_rewind(
        &mut self,
        turn: Turn,
        overwrite: bool,
    ) -> Result<UndoOutcome, String> {
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

    pub(super) fn resolve(&mut self, id: &str, finish: bool) -> Result<UndoOutcome, String> {
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
