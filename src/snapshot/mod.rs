//! Snapshots of the working tree, kept in agentty's state dir: what each turn changed, `/diff`
//! and `/undo`.
//!
//! Invariants:
//! - The user's tree and repository are only read, never written, except by an undo the user
//!   asked for: no commit, ref, stash, index change or object in `.git`, no file in the tree.
//!   Everything is kept in the state dir (`snapshots/<the log's stem>/`), so it follows the
//!   session logs' retention, and it works the same outside a git repository.
//! - Content-addressed: a file's bytes are stored once per conversation (zstd, named by their
//!   128-bit XXH3), and a file whose size, times, inode and mode have not changed since the last
//!   snapshot is not even read again, so an unchanged tree costs a walk.
//! - The walk honours `.gitignore` (also outside git), `.ignore` and git's excludes, never
//!   enters `.git`, never follows a symbolic link (a link is kept as its target text), and stops
//!   keeping bytes past the configured limits: such a file is recorded by its metadata only,
//!   so a change to it is still seen but cannot be shown or undone, and the caller says so.
//! - A restore writes only inside the tree: a path that goes through a symbolic link (which
//!   could point out of the tree) is refused.
//!
//! Nothing here knows of turns or the UI: `worker` runs the store on a thread of its own for
//! the orchestrator, in order, so a snapshot never races an undo.

mod changes;
mod restore;
mod scan;
mod store;
mod worker;

#[cfg(test)]
mod tests;

pub(crate) use changes::{compose, diff_files, turn_changes};
pub use restore::UndoOutcome;
pub(crate) use store::{Manifest, Store};
pub use worker::{SnapshotReply, SnapshotWorker};

use serde::{Deserialize, Serialize};

pub(crate) use crate::stream::{ChangeStatus, FileChange};
use std::path::{Path, PathBuf};

/// How much a snapshot keeps (`[snapshots]` in the config). 0 turns a limit off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SnapshotLimits {
    /// Snapshots are taken at all.
    pub(crate) enabled: bool,
    /// A file larger than this many kilobytes is not kept (its change is seen, not undone).
    pub(crate) max_file_kb: u64,
    /// A snapshot keeps at most this many megabytes of files (counted before compression).
    pub(crate) max_total_mb: u64,
    /// A snapshot keeps at most this many files.
    pub(crate) max_files: u64,
}

impl Default for SnapshotLimits {
    fn default() -> Self {
        Self {
            enabled: true,
            max_file_kb: 1024,
            max_total_mb: 256,
            max_files: 20_000,
        }
    }
}

impl SnapshotLimits {
    fn max_file_bytes(&self) -> u64 {
        limit(self.max_file_kb, 1024)
    }

    fn max_total_bytes(&self) -> u64 {
        limit(self.max_total_mb, 1024 * 1024)
    }

    fn max_files(&self) -> u64 {
        limit(self.max_files, 1)
    }
}

fn limit(value: u64, unit: u64) -> u64 {
    if value == 0 {
        u64::MAX
    } else {
        value.saturating_mul(unit)
    }
}

/// One line of a file's unified diff, for the `/diff` view to colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DiffLineKind {
    /// `@@ -a,b +c,d @@`
    Hunk,
    Context,
    Added,
    Removed,
    /// Why there is no diff to show (binary, too big, a symbolic link).
    Note,
}

/// A file's part of a `/diff`: its header facts and its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileDiffView {
    pub(crate) path: String,
    pub(crate) status: ChangeStatus,
    pub(crate) added: u64,
    pub(crate) removed: u64,
    pub(crate) lines: Vec<(DiffLineKind, String)>,
}

/// Where a conversation's snapshots live: `<state dir>/snapshots/<its log's stem>`, named after
/// its log so they go with it (`retention`), and outside the sessions folder so a full disk
/// there never costs the log its room.
pub(crate) fn dir_for_log(log: &Path) -> PathBuf {
    let sessions = log.parent().unwrap_or(Path::new(""));
    let stem = log.file_stem().unwrap_or_default();
    root_beside(sessions).join(stem)
}

/// The folder of every conversation's snapshots, beside the sessions folder.
pub(crate) fn root_beside(sessions: &Path) -> PathBuf {
    sessions.with_file_name(SNAPSHOTS_DIR)
}

/// The name of the snapshots folder in the state dir.
pub(crate) const SNAPSHOTS_DIR: &str = "snapshots";

/// The manifest names of a turn's two snapshots.
pub(crate) fn before_name(turn: u64) -> String {
    format!("{turn}-before")
}

pub(crate) fn after_name(turn: u64) -> String {
    format!("{turn}-after")
}

/// Where an orchestrator keeps the snapshots of which tree.
#[derive(Debug, Clone)]
pub struct SnapshotSetup {
    /// The working tree (the agent's working directory).
    pub root: PathBuf,
    /// The conversation's store ([`dir_for_log`]).
    pub dir: PathBuf,
    pub limits: SnapshotLimits,
}

/// What an undo did, in a sentence for the transcript and the log.
pub fn describe_undo(outcome: &Result<UndoOutcome, String>) -> String {
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(why) => return format!("Nothing undone: {why}."),
    };
    let list = |paths: &[String]| paths.join(", ");
    let mut parts = Vec::new();
    if outcome.stopped_by_conflicts() {
        return format!(
            "Nothing undone: changed since the turn: {}.",
            list(&outcome.conflicts)
        );
    }
    if !outcome.restored.is_empty() {
        parts.push(format!("put back {}", list(&outcome.restored)));
    }
    if !outcome.removed.is_empty() {
        parts.push(format!(
            "removed {} (created by the turn)",
            list(&outcome.removed)
        ));
    }
    if !outcome.failed.is_empty() {
        let failed: Vec<String> = outcome
            .failed
            .iter()
            .map(|(path, why)| format!("{path} ({why})"))
            .collect();
        parts.push(format!("could not put back {}", failed.join(", ")));
    }
    if parts.is_empty() {
        return "Nothing to undo: the files are as before the turn.".to_owned();
    }
    format!("Undone: {}.", parts.join("; "))
}

/// The diffs `/diff` shows, read from the store in `dir`: what the turns `turns` (oldest first)
/// changed together, and what turn `last` changed alone.
pub(crate) fn load_diffs(
    dir: &Path,
    turns: &[u64],
    last: u64,
) -> Result<(Vec<FileDiffView>, Vec<FileDiffView>), String> {
    let store = Store::new(dir);
    let pair = |turn: u64| -> Result<(Manifest, Manifest), String> {
        let read = |name: String| {
            store
                .manifest(&name)
                .map_err(|error| format!("the snapshot {name} cannot be read: {error}"))
        };
        Ok((read(before_name(turn))?, read(after_name(turn))?))
    };
    let pairs = turns
        .iter()
        .map(|turn| pair(*turn))
        .collect::<Result<Vec<_>, String>>()?;
    let (before, after) = compose(&pairs);
    let conversation = diff_files(&store, &before, &after);
    let (before, after) = pair(last)?;
    Ok((conversation, diff_files(&store, &before, &after)))
}
