//! Restores are journaled: before an undo, a rewind or a rewind's undo writes a file of the
//! tree, a journal in the tree's store says what it puts back (the two states, as manifests of
//! the store) and names the temporary files it writes beside its targets. It is removed once
//! the restore is done. A journal left by an agentty that is gone is an interrupted restore:
//! the next launch in that tree removes its temporary files, tells how far it got (each path is
//! either as before, as after, or changed by someone since), and offers to finish it or roll it
//! back — never taking agentty's own writes for the user's.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::manifest::{BlobId, Manifest};
use super::restore::{is_as, temporary_beside, undo, UndoOutcome};
use super::store::Store;

/// What a restore was doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RestoreKind {
    Undo,
    Rewind,
    UndoRewind,
}

/// A restore's journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JournalRecord {
    pub(crate) id: String,
    pub(crate) kind: RestoreKind,
    /// The turn it undid, or rewound to before.
    pub(crate) turn: u64,
    /// The turns whose changes it took back (or brought back).
    pub(crate) turns: Vec<u64>,
    /// The conversation's own snapshot folder (its records).
    pub(crate) conversation: PathBuf,
    pub(crate) pid: u32,
    /// The state it puts back, and the state it leaves (manifest ids, hex).
    target: String,
    left: String,
}

/// An interrupted restore, as the chat offers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterruptedRestore {
    pub(crate) id: String,
    pub(crate) kind: RestoreKind,
    pub(crate) turn: u64,
    /// Paths already put back, still to do, and changed since by someone else.
    pub(crate) done: usize,
    pub(crate) pending: usize,
    pub(crate) changed_since: usize,
}

impl InterruptedRestore {
    /// What it was and how far it got, in a sentence.
    pub fn describe(&self) -> String {
        let what = match self.kind {
            RestoreKind::Undo => format!("An undo of turn {}", self.turn),
            RestoreKind::Rewind => format!("A rewind to before turn {}", self.turn),
            RestoreKind::UndoRewind => format!("The undo of a rewind to before turn {}", self.turn),
        };
        let total = self.done + self.pending + self.changed_since;
        let mut text = format!(
            "{what} was interrupted: {} of {total} files put back",
            self.done
        );
        if self.changed_since > 0 {
            text.push_str(&format!(
                ", {} changed since by another program (left alone either way)",
                self.changed_since
            ));
        }
        text.push('.');
        text
    }
}

fn journal_dir(store: &Store) -> PathBuf {
    store.dir().join("journal")
}

fn journal_path(store: &Store, id: &str) -> PathBuf {
    journal_dir(store).join(format!("{id}.json"))
}

/// A restore under way: its journal is removed when it is dropped after [`Journal::done`].
pub(crate) struct Journal {
    path: PathBuf,
    pub(crate) id: String,
}

impl Journal {
    /// Writes the journal of a restore from `left` to `target` (both kept in the store first).
    pub(crate) fn begin(
        store: &Store,
        kind: RestoreKind,
        turn: u64,
        turns: Vec<u64>,
        conversation: &Path,
        target: &Manifest,
        left: &Manifest,
    ) -> io::Result<Self> {
        let id = format!(
            "{}-{}",
            std::process::id(),
            super::scan::ns(std::time::SystemTime::now())
        );
        let (target_id, _) = store.save_manifest(target, None)?;
        let (left_id, _) = store.save_manifest(left, None)?;
        let record = JournalRecord {
            id: id.clone(),
            kind,
            turn,
            turns,
            conversation: conversation.to_path_buf(),
            pid: std::process::id(),
            target: format!("{target_id:032x}"),
            left: format!("{left_id:032x}"),
        };
        let path = journal_path(store, &id);
        let json = serde_json::to_vec(&record).map_err(io::Error::other)?;
        store.write_durably(&path, &json)?;
        Ok(Self { path, id })
    }

    /// The restore is over: the journal goes.
    pub(crate) fn done(self) {
        if let Err(error) = std::fs::remove_file(&self.path) {
            tracing::warn!(%error, "cannot remove a restore's journal");
        }
    }
}

/// The journals of restores whose agentty is gone.
pub(crate) fn interrupted(store: &Store) -> Vec<JournalRecord> {
    let Ok(entries) = std::fs::read_dir(journal_dir(store)) else {
        return Vec::new();
    };
    let mut records: Vec<JournalRecord> = entries
        .flatten()
        .filter_map(|entry| {
            let bytes = crate::files::read_limited(&entry.path(), 1024 * 1024).ok()?;
            serde_json::from_slice::<JournalRecord>(&bytes).ok()
        })
        .filter(|record| record.pid == std::process::id() || !super::activity::alive(record.pid))
        .collect();
    records.sort_by(|a, b| a.id.cmp(&b.id));
    records
}

fn parse_id(hex: &str) -> io::Result<BlobId> {
    u128::from_str_radix(hex, 16)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a damaged restore journal"))
}

/// The two states of an interrupted restore: what it puts back, what it leaves.
fn states(store: &Store, record: &JournalRecord) -> io::Result<(Manifest, Manifest)> {
    Ok((
        store.manifest(parse_id(&record.target)?)?,
        store.manifest(parse_id(&record.left)?)?,
    ))
}

/// Removes the temporary files an interrupted restore left beside its targets, and says how
/// far it got.
pub(crate) fn examine(
    root: &Path,
    store: &Store,
    record: &JournalRecord,
) -> io::Result<InterruptedRestore> {
    let (target, left) = states(store, record)?;
    let (mut done, mut pending, mut changed_since) = (0, 0, 0);
    for path in target.changed_paths(&left) {
        let full = root.join(super::manifest::bytes_path(path));
        let _ = std::fs::remove_file(temporary_beside(&full, &record.id));
        if is_as(root, path, target.entries.get(path)) {
            done += 1;
        } else if is_as(root, path, left.entries.get(path)) {
            pending += 1;
        } else {
            changed_since += 1;
        }
    }
    Ok(InterruptedRestore {
        id: record.id.clone(),
        kind: record.kind,
        turn: record.turn,
        done,
        pending,
        changed_since,
    })
}

/// Finishes an interrupted restore (`finish`) or rolls back what it did, then forgets it. Paths
/// changed since by someone else are left alone either way.
pub(crate) fn resolve(
    root: &Path,
    store: &Store,
    limits: &super::SnapshotLimits,
    record: &JournalRecord,
    finish: bool,
) -> io::Result<UndoOutcome> {
    let (target, left) = states(store, record)?;
    let restrict = |manifest: &Manifest, paths: &[Vec<u8>]| Manifest {
        taken_at_ns: 0,
        entries: paths
            .iter()
            .filter_map(|path| Some((path.clone(), manifest.entries.get(path)?.clone())))
            .collect(),
    };
    let changed: Vec<Vec<u8>> = target
        .changed_paths(&left)
        .into_iter()
        .map(<[u8]>::to_vec)
        .collect();
    // Finishing goes on from where the restore stopped (what is still as it left it);
    // rolling back takes back what it did (what is already as it put back).
    let (to, from) = if finish {
        (&target, &left)
    } else {
        (&left, &target)
    };
    let remaining: Vec<Vec<u8>> = changed
        .into_iter()
        .filter(|path| is_as(root, path, from.entries.get(path)))
        .collect();
    let outcome = undo(
        root,
        store,
        limits,
        &restrict(to, &remaining),
        &restrict(from, &remaining),
        false,
        &record.id,
    );
    let _ = std::fs::remove_file(journal_path(store, &record.id));
    Ok(outcome)
}

/// The manifests the journals in `store` name (kept until their restores are resolved).
pub(crate) fn referenced(store: &Store) -> Vec<BlobId> {
    let Ok(entries) = std::fs::read_dir(journal_dir(store)) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let bytes = crate::files::read_limited(&entry.path(), 1024 * 1024).ok()?;
            serde_json::from_slice::<JournalRecord>(&bytes).ok()
        })
        .flat_map(|record| [parse_id(&record.target), parse_id(&record.left)])
        .filter_map(Result::ok)
        .collect()
}
