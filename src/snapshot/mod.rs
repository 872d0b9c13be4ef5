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

mod activity;
mod changes;
mod collect;
mod journal;
mod listing;
mod manifest;
mod records;
mod restore;
mod scan;
mod store;
mod watch;
mod worker;

#[cfg(test)]
mod tests;

pub(crate) use changes::{compose, diff_files};
pub use journal::{InterruptedRestore, RestoreKind};
pub use restore::UndoOutcome;
pub use worker::{SnapshotReply, SnapshotWorker};

use serde::{Deserialize, Serialize};

pub(crate) use crate::stream::{ChangeStatus, FileChange};
use std::path::{Path, PathBuf};

/// Paths agents keep their own state in, inside a project: never snapshot, never put back by
/// `/undo` or `/rewind` (gitignore syntax, from the tree's root). The one list of them: add an
/// agent's here. `[snapshots] exclude` in the config adds to it (`!pattern` takes one back).
pub(crate) const DEFAULT_EXCLUDE: &[&str] = &[
    // Claude Code rewrites its project-local settings itself when a permission is always
    // allowed. (pi, Codex and Gemini CLI keep their sessions under the home folder, not in the
    // project: see the protocol notes.)
    "/.claude/settings.local.json",
];

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
    /// Paths never snapshot nor put back, in addition to [`DEFAULT_EXCLUDE`].
    pub(crate) exclude: Vec<String>,
}

impl Default for SnapshotLimits {
    fn default() -> Self {
        Self {
            enabled: true,
            max_file_kb: 1024,
            max_total_mb: 1024,
            max_files: 100_000,
            exclude: Vec::new(),
        }
    }
}

impl SnapshotLimits {
    /// Snapshots off (`agentty run --no-snapshots`).
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Every path excluded: the defaults, then the config's.
    pub(crate) fn exclude_patterns(&self) -> Vec<String> {
        DEFAULT_EXCLUDE
            .iter()
            .map(|pattern| (*pattern).to_owned())
            .chain(self.exclude.iter().cloned())
            .collect()
    }

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

/// Where a conversation's own snapshot records live: `<state dir>/snapshots/<its log's
/// stem>`, named after its log so they go with it (`retention`), and outside the sessions folder
/// so a full disk there never costs the log its room. The files themselves are in the store of
/// the working tree (`<state dir>/trees/`), shared by the conversations in that tree.
pub(crate) fn dir_for_log(log: &Path) -> PathBuf {
    let sessions = log.parent().unwrap_or(Path::new(""));
    let stem = log.file_stem().unwrap_or_default();
    root_beside(sessions).join(stem)
}

/// The folder of every conversation's snapshot records, beside the sessions folder.
pub(crate) fn root_beside(sessions: &Path) -> PathBuf {
    sessions.with_file_name(SNAPSHOTS_DIR)
}

/// The name of the snapshots folder in the state dir.
pub(crate) const SNAPSHOTS_DIR: &str = "snapshots";

/// Where an orchestrator keeps the snapshots of which tree.
#[derive(Debug, Clone)]
pub struct SnapshotSetup {
    /// The working tree (the agent's working directory).
    pub root: PathBuf,
    /// The conversation's own records ([`dir_for_log`]).
    pub dir: PathBuf,
    /// agentty's state dir: the tree stores are in it, and no folder of a path in it is
    /// written through a link.
    pub state: PathBuf,
    pub limits: SnapshotLimits,
}

impl SnapshotSetup {
    /// The setup for a conversation whose log is `log`, in the state dir that holds it.
    pub fn for_log(root: PathBuf, log: &Path, limits: SnapshotLimits) -> Self {
        let dir = dir_for_log(log);
        let state = state_of(&dir);
        Self {
            root,
            dir,
            state,
            limits,
        }
    }
}

/// The state dir a conversation's records folder is in (`<state>/snapshots/<stem>`).
fn state_of(dir: &Path) -> PathBuf {
    dir.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// What an undo did, in a sentence for the transcript and the log.
pub fn describe_undo(outcome: &Result<UndoOutcome, String>) -> String {
    describe_undo_of(outcome, None)
}

/// What an undo did, naming what was undone where the caller knows it ("Undone (prompt 2
/// “fix it”): put back a.rs.").
pub(crate) fn describe_undo_of(
    outcome: &Result<UndoOutcome, String>,
    what: Option<&str>,
) -> String {
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(why) => return format!("Nothing undone: {why}."),
    };
    let list = |paths: &[String]| fold_list(paths.iter().map(String::as_str));
    let mut parts = Vec::new();
    if outcome.stopped_by_conflicts() && !outcome.shared_with.is_empty() {
        return format!(
            "Nothing undone: another agentty ran a turn in this folder at the same time, so these may be its changes: {}.",
            list(&outcome.conflicts)
        );
    }
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
        parts.push(format!(
            "could not put back {}",
            fold_list(failed.iter().map(String::as_str))
        ));
    }
    if parts.is_empty() {
        return "Nothing to undo: the files are as before the turn.".to_owned();
    }
    match what {
        Some(what) => format!("Undone ({what}): {}.", parts.join("; ")),
        None => format!("Undone: {}.", parts.join("; ")),
    }
}

/// Names in a sentence: the first few, then how many more (a turn may change thousands).
pub(crate) fn fold_list<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> String {
    const SHOWN: usize = 12;
    let total = names.len();
    let shown: Vec<&str> = names.take(SHOWN).collect();
    if total > SHOWN {
        format!("{} and {} more", shown.join(", "), total - SHOWN)
    } else {
        shown.join(", ")
    }
}

/// The diffs `/diff` shows, read from the conversation's records in `dir`: what the turns
/// `turns` (oldest first) changed together, and what turn `last` changed alone.
pub(crate) fn load_diffs(
    dir: &Path,
    turns: &[u64],
    last: u64,
) -> Result<(Vec<FileDiffView>, Vec<FileDiffView>), String> {
    let records = records::Records::open(dir, &state_of(dir))
        .map_err(|error| format!("the conversation's snapshots cannot be found: {error}"))?;
    let store = records.store();
    let pair = |turn: u64| -> Result<(manifest::Manifest, manifest::Manifest), String> {
        let read = || -> std::io::Result<_> {
            let (before, after) = records.turn(turn)?.ids()?;
            Ok((store.manifest(before)?, store.manifest(after)?))
        };
        read().map_err(|error| format!("the snapshots of turn {turn} cannot be read: {error}"))
    };
    let limits = records.limits();
    let pairs = turns
        .iter()
        .map(|turn| pair(*turn))
        .collect::<Result<Vec<_>, String>>()?;
    let (before, after) = compose(&pairs);
    drop(pairs);
    let conversation = diff_files(store, &limits, &before, &after);
    let (before, after) = pair(last)?;
    let (before, after) = (changes_only(&before, &after), changes_only(&after, &before));
    Ok((conversation, diff_files(store, &limits, &before, &after)))
}

/// `manifest` restricted to the paths where it differs from `other`.
fn changes_only(manifest: &manifest::Manifest, other: &manifest::Manifest) -> manifest::Manifest {
    manifest::Manifest {
        taken_at_ns: manifest.taken_at_ns,
        entries: manifest
            .changed_paths(other)
            .into_iter()
            .filter_map(|path| Some((path.to_vec(), manifest.entries.get(path)?.clone())))
            .collect(),
    }
}
