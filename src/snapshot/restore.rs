//! Undo: putting back the paths a turn changed, as they were before it.
//!
//! A path is put back only if it is still as the turn left it (same type, mode and content, or
//! still absent); one changed since (by the user, another tool) is a conflict, overwritten only
//! when the caller says the user agreed. Nothing is written through a symbolic link or outside
//! the tree. A file is written to a temporary name beside it and renamed into place, the
//! temporary named after the restore's journal (`journal`), so that after a crash the next
//! launch finds and removes it.

use std::collections::HashSet;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use xxhash_rust::xxh3::xxh3_128;

use super::changes::reported_paths;
use super::manifest::{bytes_path, display_path, Entry, EntryKind, Manifest, PathBytes};
use super::scan::{kind_of, read_entry, stat_entry};
use super::store::Store;
use super::SnapshotLimits;

/// Bytes of a current file read to compare it with the turn's result.
const COMPARE_LIMIT: u64 = 256 * 1024 * 1024;

/// What an undo did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct UndoOutcome {
    /// Put back as before the turn (recreated or rewritten).
    pub restored: Vec<String>,
    /// Of `restored`, those the turn had deleted (recreated): undoing a rewind deletes them
    /// again, where it brings the others back as the rewind found them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) recreated: Vec<String>,
    /// Created by the turn, deleted again.
    pub(crate) removed: Vec<String>,
    /// Changed since the turn: left as they are (nothing was undone while there are any,
    /// unless overwriting was asked for).
    pub(crate) conflicts: Vec<String>,
    /// Could not be put back, with why.
    pub(crate) failed: Vec<(String, String)>,
    /// Other agentty processes ran a turn in the tree at the same time: the `conflicts` are
    /// every path the turn seems to have changed, asked about before any is touched.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) shared_with: Vec<u32>,
}

impl UndoOutcome {
    pub(crate) fn changed_anything(&self) -> bool {
        !(self.restored.is_empty() && self.removed.is_empty())
    }

    /// Files changed since the turn stopped it: nothing was written, the user is asked.
    pub(crate) fn stopped_by_conflicts(&self) -> bool {
        !self.conflicts.is_empty() && !self.changed_anything() && self.failed.is_empty()
    }
}

/// The paths that differ between `before` and `after`, whose state now is neither (changed
/// since by someone else).
pub(crate) fn conflicts(root: &Path, before: &Manifest, after: &Manifest) -> Vec<PathBytes> {
    before
        .changed_paths(after)
        .into_iter()
        .filter(|path| {
            !is_as(root, path, after.entries.get(*path))
                && !is_as(root, path, before.entries.get(*path))
        })
        .map(<[u8]>::to_vec)
        .collect()
}

/// Puts the paths that differ between `before` and `after` back as in `before`, under `root`.
/// With conflicts and `overwrite` false, nothing is written and the conflicts are returned.
/// `journal` names the temporary files (see the module's doc); `limits`, those in force, are
/// named where a file was not kept because of one.
pub(crate) fn undo(
    root: &Path,
    store: &Store,
    limits: &SnapshotLimits,
    before: &Manifest,
    after: &Manifest,
    overwrite: bool,
    journal: &str,
) -> UndoOutcome {
    let mut outcome = UndoOutcome::default();
    let reported: HashSet<PathBytes> = reported_paths(before, after).into_iter().collect();
    let shown = |path: &[u8], entry: Option<&Entry>| {
        let text = display_path(path);
        let dir = entry
            .or(after.entries.get(path))
            .is_some_and(|entry| entry.kind == EntryKind::Dir);
        if dir {
            text + "/"
        } else {
            text
        }
    };
    // A path already as before (put back by an earlier restore that was cut short, or by
    // hand) needs nothing, and is no conflict.
    let paths: Vec<&[u8]> = before
        .changed_paths(after)
        .into_iter()
        .filter(|path| !is_as(root, path, before.entries.get(*path)))
        .collect();
    for path in &paths {
        if !is_as(root, path, after.entries.get(*path)) {
            outcome
                .conflicts
                .push(shown(path, before.entries.get(*path)));
        }
    }
    if !outcome.conflicts.is_empty() && !overwrite {
        return outcome;
    }
    let mut failed: HashSet<&[u8]> = HashSet::new();
    // Deepest first: what the turn made inside a folder goes before the folder.
    for path in paths.iter().rev() {
        let target = before.entries.get(*path);
        let result = match target {
            None => remove(root, path).map(|()| true),
            // A folder where a file goes back: it must go first (once empty).
            Some(entry) if entry.kind != EntryKind::Dir => clear_folder(root, path).map(|()| false),
            Some(_) => Ok(false),
        };
        match result {
            Ok(true) if reported.contains(*path) => {
                outcome.removed.push(shown(path, after.entries.get(*path)))
            }
            Ok(_) => {}
            Err(error) => {
                failed.insert(path);
                outcome
                    .failed
                    .push((shown(path, target), error.to_string()));
            }
        }
    }
    // Shallowest first: a folder before what goes into it.
    for path in &paths {
        let Some(entry) = before.entries.get(*path) else {
            continue;
        };
        if failed.contains(path) {
            continue;
        }
        match put_back(root, store, limits, path, entry, journal) {
            Ok(()) if reported.contains(*path) => {
                if !after.entries.contains_key(*path) {
                    outcome.recreated.push(shown(path, Some(entry)));
                }
                outcome.restored.push(shown(path, Some(entry)))
            }
            Ok(()) => {}
            Err(error) => outcome
                .failed
                .push((shown(path, Some(entry)), error.to_string())),
        }
    }
    // Said in path order, whatever order they were done in.
    outcome.removed.sort();
    outcome.failed.sort();
    outcome
}

/// Whether the path is now as `entry` has it (`None`: absent): type, mode and content.
pub(crate) fn is_as(root: &Path, path: &[u8], entry: Option<&Entry>) -> bool {
    let Some(full) = inside(root, path) else {
        return false;
    };
    let metadata = std::fs::symlink_metadata(&full);
    let Some(entry) = entry else {
        return matches!(&metadata, Err(error) if error.kind() == io::ErrorKind::NotFound);
    };
    let Ok(metadata) = metadata else {
        return false;
    };
    let Some(kind) = kind_of(&metadata) else {
        return false;
    };
    let now = stat_entry(kind, &metadata);
    if now.kind != entry.kind || (now.mode != entry.mode && kind != EntryKind::Symlink) {
        return false;
    }
    match entry.blob() {
        _ if kind == EntryKind::Dir => true,
        // Not kept: the metadata is all there is to compare.
        None => now.same_stat(entry),
        Some(blob) => {
            read_entry(&full, kind, COMPARE_LIMIT).is_ok_and(|bytes| xxh3_128(&bytes) == blob)
        }
    }
}

/// `root/path`, when `path` is a plain relative path (no `..`, not absolute).
fn inside(root: &Path, path: &[u8]) -> Option<PathBuf> {
    let relative = bytes_path(path);
    relative
        .components()
        .all(|part| matches!(part, Component::Normal(_)))
        .then(|| root.join(relative))
}

/// Makes `path`'s folders (real folders, never through a link) and returns the full path.
fn safe_parent(root: &Path, path: &[u8]) -> io::Result<PathBuf> {
    let full = inside(root, path)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a path inside the tree"))?;
    real_parents(root, path, true)?;
    Ok(full)
}

/// Whether every folder on the way to `path` is a real folder (`Ok(false)`: one is missing,
/// unless `make` makes it); a link or a file on the way is an error: nothing is done through
/// it ([`crate::files::real_folder`]).
fn real_parents(root: &Path, path: &[u8], make: bool) -> io::Result<bool> {
    let mut folder = root.to_path_buf();
    let parts: Vec<Component> = bytes_path(path).components().collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        folder.push(part);
        let shown = || {
            display_path(super::manifest::os_bytes(
                folder.strip_prefix(root).unwrap_or(&folder),
            ))
        };
        if !crate::files::real_folder(&folder, make.then_some(0o777), &shown)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Removes what is at `path` (a folder only when empty).
fn remove(root: &Path, path: &[u8]) -> io::Result<()> {
    let full = inside(root, path)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a path inside the tree"))?;
    if !real_parents(root, path, false)? {
        return Ok(());
    }
    match std::fs::symlink_metadata(&full) {
        Ok(metadata) if metadata.is_dir() => std::fs::remove_dir(&full).map_err(|error| {
            if error.raw_os_error() == Some(libc::ENOTEMPTY) {
                io::Error::new(
                    io::ErrorKind::DirectoryNotEmpty,
                    "the folder holds files the turn did not make; left as it is",
                )
            } else {
                error
            }
        }),
        Ok(_) => std::fs::remove_file(&full),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error),
    }
}

/// Removes an (empty) folder at `path`, if one is there.
fn clear_folder(root: &Path, path: &[u8]) -> io::Result<()> {
    let Some(full) = inside(root, path) else {
        return Ok(());
    };
    // A link on the way is put back as a folder first (shallowest first): nothing is here.
    if !real_parents(root, path, false).unwrap_or(false) {
        return Ok(());
    }
    match std::fs::symlink_metadata(&full) {
        Ok(metadata) if metadata.is_dir() => remove(root, path),
        _ => Ok(()),
    }
}

/// The temporary name a restore writes `full` through (beside it, so the rename is atomic).
pub(crate) fn temporary_beside(full: &Path, journal: &str) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let mut name = b".".to_vec();
    name.extend_from_slice(
        full.file_name()
            .map_or(b"file".as_slice(), |name| name.as_bytes()),
    );
    name.extend_from_slice(format!(".agentty-restore.{journal}").as_bytes());
    full.with_file_name(std::ffi::OsStr::from_bytes(&name))
}

/// Puts `path` back as `entry` has it.
fn put_back(
    root: &Path,
    store: &Store,
    limits: &SnapshotLimits,
    path: &[u8],
    entry: &Entry,
    journal: &str,
) -> io::Result<()> {
    let full = safe_parent(root, path)?;
    if entry.kind == EntryKind::Dir {
        match std::fs::symlink_metadata(&full) {
            Ok(metadata) if metadata.is_dir() => {}
            Ok(_) => {
                std::fs::remove_file(&full)?;
                std::fs::DirBuilder::new().mode(entry.mode).create(&full)?;
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                std::fs::DirBuilder::new().mode(entry.mode).create(&full)?;
            }
            Err(error) => return Err(error),
        }
        return std::fs::set_permissions(&full, std::fs::Permissions::from_mode(entry.mode));
    }
    let Some(blob) = entry.blob() else {
        let why = entry
            .not_kept()
            .map_or("it was not kept".to_owned(), |why| {
                format!("not kept before the turn: {}", why.reason(limits))
            });
        return Err(io::Error::new(io::ErrorKind::InvalidData, why));
    };
    let bytes = store.blob(blob, u64::MAX)?;
    let temporary = temporary_beside(&full, journal);
    let _ = std::fs::remove_file(&temporary);
    let written = (|| {
        match entry.kind {
            EntryKind::Symlink => {
                std::os::unix::fs::symlink(bytes_path(&bytes), &temporary)?;
            }
            EntryKind::File | EntryKind::Dir => {
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .custom_flags(libc::O_NOFOLLOW)
                    .mode(entry.mode)
                    .open(&temporary)?;
                file.write_all(&bytes)?;
                file.set_permissions(std::fs::Permissions::from_mode(entry.mode))?;
            }
        }
        if std::fs::symlink_metadata(&full).is_ok_and(|metadata| metadata.is_dir()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a folder is there now; left as it is",
            ));
        }
        // A rename replaces a link itself, never what it points to.
        std::fs::rename(&temporary, &full)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}
