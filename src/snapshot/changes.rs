//! What changed between two snapshots: the `turn.changes` summary (line counts) and the
//! unified diff `/diff` shows.

use std::collections::BTreeMap;
use std::time::Duration;

use similar::{ChangeTag, DiffOp, TextDiff};

use super::manifest::{display_path, Entry, EntryKind, Manifest, PathBytes};
use super::store::Store;
use super::{ChangeStatus, DiffLineKind, FileChange, FileDiffView, SnapshotLimits};

/// A diff gives up refining after this long (similar then falls back to a coarser diff), so a
/// huge rewrite never holds anything up.
const DIFF_DEADLINE: Duration = Duration::from_millis(300);
/// Lines of context around each change.
const CONTEXT: usize = 3;
/// Bytes of a stored file read back for counting or showing.
const READ_LIMIT: u64 = 64 * 1024 * 1024;

/// The paths a summary names: every changed file or link, and a folder only when its own state
/// changed (its mode, its type) or when it was made or removed with nothing changed inside it
/// (its files say the rest).
pub(crate) fn reported_paths(before: &Manifest, after: &Manifest) -> Vec<PathBytes> {
    let changed = before.changed_paths(after);
    let is_dir = |path: &[u8]| {
        [before.entries.get(path), after.entries.get(path)]
            .iter()
            .flatten()
            .all(|entry| entry.kind == EntryKind::Dir)
    };
    let mut reported = Vec::with_capacity(changed.len());
    for (index, path) in changed.iter().enumerate() {
        if !is_dir(path) {
            reported.push(path.to_vec());
            continue;
        }
        let both = before.entries.contains_key(*path) && after.entries.contains_key(*path);
        let mut folder = path.to_vec();
        folder.push(b'/');
        let later = &changed[index + 1..];
        let first_inside = later.partition_point(|next| *next < folder.as_slice());
        let inside = later
            .get(first_inside)
            .is_some_and(|next| next.starts_with(&folder));
        if both || !inside {
            reported.push(path.to_vec());
        }
    }
    reported
}

/// Each changed path with its status and line counts.
pub(crate) fn turn_changes(
    store: &Store,
    limits: &SnapshotLimits,
    before: &Manifest,
    after: &Manifest,
) -> Vec<FileChange> {
    reported_paths(before, after)
        .into_iter()
        .map(|path| {
            let old = before.entries.get(&path);
            let new = after.entries.get(&path);
            let view = file_view(store, limits, old, new, false);
            FileChange {
                path: shown_path(&path, old, new),
                status: view.status,
                added: view.added,
                removed: view.removed,
                too_big: view.not_kept.is_some(),
                not_kept: view.not_kept,
                detail: detail(old, new),
            }
        })
        .collect()
}

/// A path as the summary names it: a folder with a trailing `/`.
fn shown_path(path: &[u8], old: Option<&Entry>, new: Option<&Entry>) -> String {
    let text = display_path(path);
    if [old, new]
        .iter()
        .flatten()
        .all(|entry| entry.kind == EntryKind::Dir)
    {
        text + "/"
    } else {
        text
    }
}

fn kind_name(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::File => "file",
        EntryKind::Symlink => "symbolic link",
        EntryKind::Dir => "folder",
    }
}

/// A change of type or permissions, in words.
fn detail(old: Option<&Entry>, new: Option<&Entry>) -> Option<String> {
    let (old, new) = (old?, new?);
    if old.kind != new.kind {
        return Some(format!("{} → {}", kind_name(old.kind), kind_name(new.kind)));
    }
    (old.mode != new.mode && old.kind != EntryKind::Symlink)
        .then(|| format!("mode {:o} → {:o}", old.mode, new.mode))
}

/// Per path, the first "before" and the last "after" over a run of turns (oldest first, each
/// its two snapshots): what the turns changed together.
pub(crate) fn compose(turns: &[(Manifest, Manifest)]) -> (Manifest, Manifest) {
    let mut first_before: BTreeMap<PathBytes, Option<Entry>> = BTreeMap::new();
    let mut last_after: BTreeMap<PathBytes, Option<Entry>> = BTreeMap::new();
    for (before, after) in turns {
        for path in before.changed_paths(after) {
            first_before
                .entry(path.to_vec())
                .or_insert_with(|| before.entries.get(path).cloned());
            last_after.insert(path.to_vec(), after.entries.get(path).cloned());
        }
    }
    let collect = |map: BTreeMap<PathBytes, Option<Entry>>| Manifest {
        taken_at_ns: 0,
        entries: map
            .into_iter()
            .filter_map(|(path, entry)| entry.map(|entry| (path, entry)))
            .collect(),
    };
    (collect(first_before), collect(last_after))
}

/// The unified diff of every changed path.
pub(crate) fn diff_files(
    store: &Store,
    limits: &SnapshotLimits,
    before: &Manifest,
    after: &Manifest,
) -> Vec<FileDiffView> {
    reported_paths(before, after)
        .into_iter()
        .map(|path| {
            let old = before.entries.get(&path);
            let new = after.entries.get(&path);
            let view = file_view(store, limits, old, new, true);
            let mut lines = view.lines;
            if let Some(detail) = detail(old, new) {
                lines.insert(0, (DiffLineKind::Note, detail));
            }
            FileDiffView {
                path: shown_path(&path, old, new),
                status: view.status,
                added: view.added,
                removed: view.removed,
                lines,
            }
        })
        .collect()
}

struct View {
    status: ChangeStatus,
    added: u64,
    removed: u64,
    not_kept: Option<String>,
    lines: Vec<(DiffLineKind, String)>,
}

/// The content of one side: `Ok(None)` absent (or a folder), `Err(why)` there but not kept.
fn content(
    store: &Store,
    limits: &SnapshotLimits,
    entry: Option<&Entry>,
) -> Result<Option<(EntryKind, Vec<u8>)>, String> {
    let Some(entry) = entry.filter(|entry| entry.kind != EntryKind::Dir) else {
        return Ok(None);
    };
    if let Some(why) = entry.not_kept() {
        return Err(why.reason(limits));
    }
    let blob = entry.blob().ok_or_else(String::new)?;
    store
        .blob(blob, READ_LIMIT)
        .map(|bytes| Some((entry.kind, bytes)))
        .map_err(|error| {
            tracing::warn!(%error, "cannot read a snapshot blob");
            format!("its stored copy cannot be read ({error})")
        })
}

fn is_text(bytes: &[u8]) -> bool {
    !bytes.contains(&0) && std::str::from_utf8(bytes).is_ok()
}

fn file_view(
    store: &Store,
    limits: &SnapshotLimits,
    old: Option<&Entry>,
    new: Option<&Entry>,
    with_lines: bool,
) -> View {
    let plain_status = match (old, new) {
        (None, _) => ChangeStatus::Created,
        (_, None) => ChangeStatus::Deleted,
        _ => ChangeStatus::Modified,
    };
    let (old_content, new_content) =
        match (content(store, limits, old), content(store, limits, new)) {
            (Ok(old), Ok(new)) => (old, new),
            (Err(why), _) | (_, Err(why)) => {
                return View {
                    status: plain_status,
                    added: 0,
                    removed: 0,
                    lines: vec![(
                        DiffLineKind::Note,
                        format!("not kept: {why}; not shown, cannot be undone"),
                    )],
                    not_kept: Some(why),
                }
            }
        };
    let link = [&old_content, &new_content]
        .iter()
        .any(|side| matches!(side, Some((EntryKind::Symlink, _))));
    let binary = [&old_content, &new_content]
        .iter()
        .any(|side| side.as_ref().is_some_and(|(_, bytes)| !is_text(bytes)));
    if binary {
        return View {
            status: ChangeStatus::Binary,
            added: 0,
            removed: 0,
            not_kept: None,
            lines: vec![(
                DiffLineKind::Note,
                format!("binary file {}", plain_status.as_str()),
            )],
        };
    }
    let text = |side: &Option<(EntryKind, Vec<u8>)>| -> String {
        match side {
            Some((EntryKind::Symlink, target)) => format!("→ {}\n", display_path(target)),
            Some((_, bytes)) => String::from_utf8_lossy(bytes).into_owned(),
            None => String::new(),
        }
    };
    let (old_text, new_text) = (text(&old_content), text(&new_content));
    let diff = TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(&old_text, &new_text);
    let (mut added, mut removed) = (0, 0);
    for op in diff.ops() {
        for change in diff.iter_changes(op) {
            match change.tag() {
                ChangeTag::Insert => added += 1,
                ChangeTag::Delete => removed += 1,
                ChangeTag::Equal => {}
            }
        }
    }
    let mut lines = Vec::new();
    if with_lines {
        if link {
            lines.push((DiffLineKind::Note, "symbolic link".to_owned()));
        }
        for group in diff.grouped_ops(CONTEXT) {
            lines.push((DiffLineKind::Hunk, hunk_header(&group)));
            for op in &group {
                for change in diff.iter_changes(op) {
                    let kind = match change.tag() {
                        ChangeTag::Insert => DiffLineKind::Added,
                        ChangeTag::Delete => DiffLineKind::Removed,
                        ChangeTag::Equal => DiffLineKind::Context,
                    };
                    let mut text = change.to_string_lossy().into_owned();
                    if text.ends_with('\n') {
                        text.pop();
                    } else if kind != DiffLineKind::Context {
                        text.push_str("  ⏎ no newline at end of file");
                    }
                    lines.push((kind, text));
                }
            }
        }
    }
    View {
        status: plain_status,
        added,
        removed,
        not_kept: None,
        lines,
    }
}

/// `@@ -a,b +c,d @@` for a group of ops, 1-based as `diff -u` writes it.
fn hunk_header(group: &[DiffOp]) -> String {
    let (Some(first), Some(last)) = (group.first(), group.last()) else {
        return "@@".to_owned();
    };
    let old = first.old_range().start..last.old_range().end;
    let new = first.new_range().start..last.new_range().end;
    let range = |range: std::ops::Range<usize>| {
        let len = range.len();
        let start = if len == 0 {
            range.start
        } else {
            range.start + 1
        };
        format!("{start},{len}")
    };
    format!("@@ -{} +{} @@", range(old), range(new))
}
