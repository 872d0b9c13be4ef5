//! Undo: putting back the files a turn changed, as they were before it.
//!
//! A file is put back only if it is still as the turn left it (same content, or still absent);
//! one changed since (by the user, another tool) is a conflict, overwritten only when the
//! caller says the user agreed. Nothing is written through a symbolic link or outside the tree.

use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use xxhash_rust::xxh3::xxh3_128;

use super::changes::changed_paths;
use super::scan::{read_entry, stat_entry};
use super::store::{Entry, EntryKind, Manifest, Store};

/// Bytes of a current file read to compare it with the turn's result.
const COMPARE_LIMIT: u64 = 256 * 1024 * 1024;

/// What an undo did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct UndoOutcome {
    /// Put back as before the turn (recreated or rewritten).
    pub restored: Vec<String>,
    /// Created by the turn, deleted again.
    pub(crate) removed: Vec<String>,
    /// Changed since the turn: left as they are (nothing was undone while there are any,
    /// unless overwriting was asked for).
    pub(crate) conflicts: Vec<String>,
    /// Could not be put back, with why.
    pub(crate) failed: Vec<(String, String)>,
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

/// Puts the paths that differ between `before` and `after` back as in `before`, under `root`.
/// With conflicts and `overwrite` false, nothing is written and the conflicts are returned.
pub(crate) fn undo(
    root: &Path,
    store: &Store,
    before: &Manifest,
    after: &Manifest,
    overwrite: bool,
) -> UndoOutcome {
    let mut outcome = UndoOutcome::default();
    let paths = changed_paths(before, after);
    for path in &paths {
        if !is_as_left(root, path, after.entries.get(path)) {
            outcome.conflicts.push(path.clone());
        }
    }
    if !outcome.conflicts.is_empty() && !overwrite {
        return outcome;
    }
    for path in paths {
        match put_back(root, store, &path, before.entries.get(&path)) {
            Ok(true) => outcome.restored.push(path),
            Ok(false) => outcome.removed.push(path),
            Err(error) => outcome.failed.push((path, error.to_string())),
        }
    }
    outcome
}

/// Whether the file at `path` is still as the snapshot `entry` has it (`None`: absent).
fn is_as_left(root: &Path, path: &str, entry: Option<&Entry>) -> bool {
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
    let kind = if metadata.is_file() {
        EntryKind::File
    } else if metadata.file_type().is_symlink() {
        EntryKind::Symlink
    } else {
        return false;
    };
    let now = stat_entry(kind, &metadata);
    match &entry.blob {
        // Not kept: the metadata is all there is to compare.
        None => now.same_stat(entry),
        Some(blob) => {
            now.kind == entry.kind
                && read_entry(&full, kind, COMPARE_LIMIT)
                    .is_ok_and(|bytes| format!("{:032x}", xxh3_128(&bytes)) == *blob)
        }
    }
}

/// `root/path`, when `path` is a plain relative path (no `..`, not absolute).
fn inside(root: &Path, path: &str) -> Option<PathBuf> {
    let relative = Path::new(path);
    relative
        .components()
        .all(|part| matches!(part, Component::Normal(_)))
        .then(|| root.join(relative))
}

/// Makes `path`'s folders (real folders, never through a link) and returns the full path.
fn safe_parent(root: &Path, path: &str) -> io::Result<PathBuf> {
    let full = inside(root, path)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a path inside the tree"))?;
    let mut folder = root.to_path_buf();
    let parts: Vec<Component> = Path::new(path).components().collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        folder.push(part);
        match std::fs::symlink_metadata(&folder) {
            Ok(metadata) if metadata.is_dir() => {}
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{} is not a folder (a symbolic link or a file); not written through it",
                        folder.strip_prefix(root).unwrap_or(&folder).display()
                    ),
                ))
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                std::fs::create_dir(&folder)?;
            }
            Err(error) => return Err(error),
        }
    }
    Ok(full)
}

/// Puts `path` back as `entry` has it (`None`: removes it). True when something was written.
fn put_back(root: &Path, store: &Store, path: &str, entry: Option<&Entry>) -> io::Result<bool> {
    let full = safe_parent(root, path)?;
    let Some(entry) = entry else {
        match std::fs::symlink_metadata(&full) {
            Ok(metadata) if metadata.is_dir() => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a folder is there now; left as it is",
                ))
            }
            Ok(_) => std::fs::remove_file(&full)?,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
        return Ok(false);
    };
    let blob = entry.blob.as_deref().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "it was too big to keep before the turn",
        )
    })?;
    let bytes = store.blob(blob, u64::MAX)?;
    let folder = full.parent().unwrap_or(root);
    let temporary = folder.join(format!(
        ".{}.agentty-undo.{}",
        full.file_name()
            .and_then(|name| name.to_str())
            .unwrap_or("file"),
        std::process::id()
    ));
    let written = (|| {
        match entry.kind {
            EntryKind::Symlink => {
                use std::os::unix::ffi::OsStrExt;
                std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&bytes), &temporary)?;
            }
            EntryKind::File => {
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
    written.map(|()| true)
}
