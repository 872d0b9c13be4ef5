//! What changed between two snapshots: the `turn.changes` summary (line counts) and the
//! unified diff `/diff` shows.

use std::collections::BTreeMap;
use std::time::Duration;

use similar::{ChangeTag, DiffOp, TextDiff};

use super::store::{Entry, EntryKind, Manifest, Store};
use super::{ChangeStatus, DiffLineKind, FileChange, FileDiffView};

/// A diff gives up refining after this long (similar then falls back to a coarser diff), so a
/// huge rewrite never holds anything up.
const DIFF_DEADLINE: Duration = Duration::from_millis(300);
/// Lines of context around each change.
const CONTEXT: usize = 3;
/// Bytes of a stored file read back for counting or showing.
const READ_LIMIT: u64 = 64 * 1024 * 1024;

/// The paths whose content, kind or mode differ, sorted.
pub(crate) fn changed_paths(before: &Manifest, after: &Manifest) -> Vec<String> {
    let mut paths: Vec<String> = before
        .entries
        .iter()
        .filter(|(path, entry)| {
            after
                .entries
                .get(*path)
                .is_none_or(|now| !entry.same_content(now))
        })
        .map(|(path, _)| path.clone())
        .collect();
    paths.extend(
        after
            .entries
            .keys()
            .filter(|path| !before.entries.contains_key(*path))
            .cloned(),
    );
    paths.sort();
    paths
}

/// Each changed file with its status and line counts.
pub(crate) fn turn_changes(store: &Store, before: &Manifest, after: &Manifest) -> Vec<FileChange> {
    changed_paths(before, after)
        .into_iter()
        .map(|path| {
            let old = before.entries.get(&path);
            let new = after.entries.get(&path);
            let view = file_view(store, &path, old, new, false);
            FileChange {
                path,
                status: view.status,
                added: view.added,
                removed: view.removed,
                too_big: view.too_big,
            }
        })
        .collect()
}

/// Per path, the first "before" and the last "after" over a run of turns (oldest first, each
/// its two snapshots): what the turns changed together.
pub(crate) fn compose(turns: &[(Manifest, Manifest)]) -> (Manifest, Manifest) {
    let mut first_before: BTreeMap<String, Option<Entry>> = BTreeMap::new();
    let mut last_after: BTreeMap<String, Option<Entry>> = BTreeMap::new();
    for (before, after) in turns {
        for path in changed_paths(before, after) {
            first_before
                .entry(path.clone())
                .or_insert_with(|| before.entries.get(&path).cloned());
            last_after.insert(path.clone(), after.entries.get(&path).cloned());
        }
    }
    let collect = |map: BTreeMap<String, Option<Entry>>| Manifest {
        taken_at_ns: 0,
        entries: map
            .into_iter()
            .filter_map(|(path, entry)| entry.map(|entry| (path, entry)))
            .collect(),
    };
    (collect(first_before), collect(last_after))
}

/// The unified diff of every changed file.
pub(crate) fn diff_files(store: &Store, before: &Manifest, after: &Manifest) -> Vec<FileDiffView> {
    changed_paths(before, after)
        .into_iter()
        .map(|path| {
            let view = file_view(
                store,
                &path,
                before.entries.get(&path),
                after.entries.get(&path),
                true,
            );
            FileDiffView {
                path,
                status: view.status,
                added: view.added,
                removed: view.removed,
                lines: view.lines,
            }
        })
        .collect()
}

struct View {
    status: ChangeStatus,
    added: u64,
    removed: u64,
    too_big: bool,
    lines: Vec<(DiffLineKind, String)>,
}

/// The content of one side: `Ok(None)` absent, `Err(())` there but not kept.
fn content(store: &Store, entry: Option<&Entry>) -> Result<Option<(EntryKind, Vec<u8>)>, ()> {
    let Some(entry) = entry else {
        return Ok(None);
    };
    let blob = entry.blob.as_deref().ok_or(())?;
    store
        .blob(blob, READ_LIMIT)
        .map(|bytes| Some((entry.kind, bytes)))
        .map_err(|error| tracing::warn!(%error, "cannot read a snapshot blob"))
}

fn is_text(bytes: &[u8]) -> bool {
    !bytes.contains(&0) && std::str::from_utf8(bytes).is_ok()
}

fn file_view(
    store: &Store,
    _path: &str,
    old: Option<&Entry>,
    new: Option<&Entry>,
    with_lines: bool,
) -> View {
    let plain_status = match (old, new) {
        (None, _) => ChangeStatus::Created,
        (_, None) => ChangeStatus::Deleted,
        _ => ChangeStatus::Modified,
    };
    let (old_content, new_content) = match (content(store, old), content(store, new)) {
        (Ok(old), Ok(new)) => (old, new),
        _ => {
            return View {
                status: plain_status,
                added: 0,
                removed: 0,
                too_big: true,
                lines: vec![(
                    DiffLineKind::Note,
                    "too big to keep (see [snapshots] in the config): not shown, cannot be undone"
                        .to_owned(),
                )],
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
            too_big: false,
            lines: vec![(
                DiffLineKind::Note,
                format!("binary file {}", plain_status.as_str()),
            )],
        };
    }
    let text = |side: &Option<(EntryKind, Vec<u8>)>| -> String {
        match side {
            Some((EntryKind::Symlink, target)) => {
                format!("→ {}\n", String::from_utf8_lossy(target))
            }
            Some((EntryKind::File, bytes)) => String::from_utf8_lossy(bytes).into_owned(),
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
        if old_text == new_text {
            lines.push((DiffLineKind::Note, "permissions changed".to_owned()));
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
        too_big: false,
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
