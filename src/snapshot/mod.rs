//! Snapshots of the working tree, kept in agentty's state dir: what each turn changed, `/diff`
//! and `/undo`.
//!
//! Invariants:
//! - The user's tree and repository are only read, never written, except by an undo the user
//!   asked for: no commit, ref, stash, index change or object in `.git`, no file in the tree.
//!   Everything is kept next to the conversation's log (`<stem>.snapshots/`), so it follows the
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

pub(crate) use changes::{changed_paths, compose, diff_files, turn_changes};
pub(crate) use restore::{undo, UndoOutcome};
pub(crate) use scan::{scan, Guard, ScanReport};
pub(crate) use store::{Entry, EntryKind, Manifest, Store};
pub(crate) use worker::{SnapshotReply, SnapshotWorker};

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How much a snapshot keeps (`[snapshots]` in the config). 0 turns a limit off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SnapshotLimits {
    /// Snapshots are taken at all.
    pub enabled: bool,
    /// A file larger than this many kilobytes is not kept (its change is seen, not undone).
    pub max_file_kb: u64,
    /// A snapshot keeps at most this many megabytes of files (counted before compression).
    pub max_total_mb: u64,
    /// A snapshot keeps at most this many files.
    pub max_files: u64,
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

/// How a file changed in a turn (`turn.changes`' `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeStatus {
    Created,
    Modified,
    Deleted,
    /// A file that is not text, created, changed or deleted: no line counts.
    Binary,
}

impl ChangeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeStatus::Created => "created",
            ChangeStatus::Modified => "modified",
            ChangeStatus::Deleted => "deleted",
            ChangeStatus::Binary => "binary",
        }
    }
}

/// One file a turn changed, with its line counts (0 for a binary file or one not kept).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// Relative to the working directory, `/`-separated.
    pub path: String,
    pub status: ChangeStatus,
    pub added: u64,
    pub removed: u64,
    /// Its content before or after was over the snapshot limits: the change is seen, but it
    /// cannot be shown or undone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub too_big: bool,
}

/// One line of a file's unified diff, for the `/diff` view to colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffLineKind {
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
pub struct FileDiffView {
    pub path: String,
    pub status: ChangeStatus,
    pub added: u64,
    pub removed: u64,
    pub lines: Vec<(DiffLineKind, String)>,
}

/// Where a conversation's snapshots live: beside its log, so they go with it.
pub(crate) fn dir_for_log(log: &Path) -> PathBuf {
    let mut name = log
        .file_stem()
        .map(|stem| stem.to_os_string())
        .unwrap_or_default();
    name.push(SNAPSHOTS_SUFFIX);
    log.with_file_name(name)
}

/// The suffix of a conversation's snapshot folder after its log's stem.
pub(crate) const SNAPSHOTS_SUFFIX: &str = ".snapshots";

/// The manifest names of a turn's two snapshots.
pub(crate) fn before_name(turn: u64) -> String {
    format!("{turn}-before")
}

pub(crate) fn after_name(turn: u64) -> String {
    format!("{turn}-after")
}
