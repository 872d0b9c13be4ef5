//! Walking the tree into a [`Manifest`]: which files there are, and their bytes in the store.

use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::SystemTime;

use super::store::{Entry, EntryKind, Manifest, Store};
use super::SnapshotLimits;

/// A file written this close to a snapshot's start may have been written again within the
/// same timestamp tick (the kernel's file clock is coarse): its metadata is not trusted.
const CLOCK_SLACK_NS: i128 = 50_000_000;

/// Folders of version control systems (and a worktree's `.git` file): the tools' own, never
/// the user's files, and never something a turn's undo should touch.
const VCS_DIRS: [&str; 4] = [".git", ".hg", ".svn", ".jj"];

/// For a snapshot taken while an agent may already be working (a turn's request was sent
/// without waiting for it): what was written after `since` is taken from `baseline` (the last
/// snapshot before), as it was before the agent could touch it.
pub(crate) struct Guard<'a> {
    pub(crate) since: SystemTime,
    pub(crate) baseline: &'a Manifest,
    /// When the baseline's walk ended, if it was taken between turns: when that is before
    /// `since`, what it read is how the tree was before the turn, however recent a file's
    /// times (the user may have saved it a moment before sending).
    pub(crate) baseline_done: Option<SystemTime>,
}

/// What a snapshot could not keep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ScanReport {
    /// Files over the per-file limit.
    pub(crate) too_big: Vec<String>,
    /// Files left out because the snapshot was full (total size or file count).
    pub(crate) over_total: usize,
    /// Files that could not be read (permissions, vanished); recorded without content.
    pub(crate) unreadable: usize,
    /// Bytes read and stored in this walk (files unchanged since `cache` cost none).
    pub(crate) bytes_read: u64,
}

/// Walks `root` and stores what is new. `cache` (the previous snapshot) spares reading files
/// whose metadata has not changed; `guard` see [`Guard`].
pub(crate) fn scan(
    root: &Path,
    store: &Store,
    limits: &SnapshotLimits,
    cache: Option<&Manifest>,
    guard: Option<Guard<'_>>,
) -> (Manifest, ScanReport) {
    let taken_at_ns = ns(SystemTime::now());
    let since_ns = guard.as_ref().map(|guard| ns(guard.since) - CLOCK_SLACK_NS);
    let mut manifest = Manifest {
        taken_at_ns,
        ..Manifest::default()
    };
    let mut report = ScanReport::default();
    let mut kept_bytes: u64 = 0;
    let mut kept_files: u64 = 0;
    // agentty's own state (logs, these snapshots) when it lies inside the tree: never the
    // agent's change, and a snapshot must not hold itself.
    let state_dir = crate::logging::state_dir();
    let private: Vec<std::path::PathBuf> = [state_dir.canonicalize().ok(), Some(state_dir)]
        .into_iter()
        .flatten()
        .collect();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .parents(true)
        .ignore(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        // `.gitignore` counts outside a git repository too.
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| {
            let vcs = entry
                .file_name()
                .to_str()
                .is_some_and(|name| VCS_DIRS.contains(&name));
            !vcs && !private.iter().any(|dir| entry.path() == dir)
        })
        .build();
    for entry in walker {
        let Ok(entry) = entry else {
            report.unreadable += 1;
            continue;
        };
        let Some(kind) = entry.file_type() else {
            continue;
        };
        let kind = if kind.is_file() {
            EntryKind::File
        } else if kind.is_symlink() {
            EntryKind::Symlink
        } else {
            // Folders are implied by their files; FIFOs, sockets and devices are no content.
            continue;
        };
        let Some(relative) = relative_path(root, entry.path()) else {
            continue;
        };
        let Ok(metadata) = std::fs::symlink_metadata(entry.path()) else {
            report.unreadable += 1;
            continue;
        };
        let mut stat = stat_entry(kind, &metadata);
        if let (Some(guard), Some(since)) = (&guard, since_ns) {
            if stat.mtime_ns >= since || stat.ctime_ns >= since {
                // Written since the turn began: as it was before, or not there before.
                if let Some(before) = guard.baseline.entries.get(&relative) {
                    let read_before_the_turn =
                        guard.baseline_done.is_some_and(|done| done <= guard.since);
                    let read_too_late = !read_before_the_turn
                        && (before.mtime_ns >= since || before.ctime_ns >= since);
                    let mut before = before.clone();
                    if read_too_late {
                        // The baseline itself read it after the agent wrote it (a first turn
                        // sent before the baseline was done): how it was before is unknown.
                        // Kept by its metadata only, so it is never "restored" to the agent's
                        // version.
                        before.blob = None;
                    }
                    manifest.entries.insert(relative, before);
                }
                continue;
            }
        }
        let cached = cache
            .and_then(|cache| cache.entries.get(&relative).map(|entry| (cache, entry)))
            .filter(|(cache, entry)| {
                entry.blob.is_some()
                    && entry.same_stat(&stat)
                    && stat.mtime_ns < cache.taken_at_ns - CLOCK_SLACK_NS
                    && stat.ctime_ns < cache.taken_at_ns - CLOCK_SLACK_NS
            });
        let fits = |size: u64, kept_bytes: u64, kept_files: u64| {
            kept_files < limits.max_files()
                && kept_bytes.saturating_add(size) <= limits.max_total_bytes()
        };
        if let Some((_, cached)) = cached {
            if fits(stat.size, kept_bytes, kept_files) {
                kept_bytes += stat.size;
                kept_files += 1;
                stat.blob = cached.blob.clone();
            } else {
                report.over_total += 1;
            }
        } else if stat.size > limits.max_file_bytes() {
            report.too_big.push(relative.clone());
        } else if !fits(stat.size, kept_bytes, kept_files) {
            report.over_total += 1;
        } else {
            match read_entry(entry.path(), kind, limits.max_file_bytes()) {
                Ok(bytes) => match store.put_blob(&bytes) {
                    Ok(blob) => {
                        kept_bytes += bytes.len() as u64;
                        kept_files += 1;
                        report.bytes_read += bytes.len() as u64;
                        stat.size = bytes.len() as u64;
                        stat.blob = Some(blob);
                    }
                    Err(error) => {
                        tracing::warn!(%error, "cannot store a snapshot blob");
                        report.unreadable += 1;
                    }
                },
                Err(_) => report.unreadable += 1,
            }
        }
        manifest.entries.insert(relative, stat);
    }
    if let (Some(guard), Some(since)) = (&guard, since_ns) {
        // Gone now, but its folder changed since the turn began: deleted by the agent, so it
        // was there before.
        for (path, before) in &guard.baseline.entries {
            if manifest.entries.contains_key(path) {
                continue;
            }
            let folder = root.join(path);
            let folder = folder.parent().unwrap_or(root);
            let folder_changed = std::fs::symlink_metadata(folder)
                .map(|metadata| folder_mtime(&metadata) >= since)
                .unwrap_or(true);
            if folder_changed {
                manifest.entries.insert(path.clone(), before.clone());
            }
        }
    }
    (manifest, report)
}

fn folder_mtime(metadata: &std::fs::Metadata) -> i128 {
    i128::from(metadata.mtime()) * 1_000_000_000 + i128::from(metadata.mtime_nsec())
}

/// `path` relative to `root`, `/`-separated; `None` for the root itself or a name that is not
/// UTF-8 (it cannot be written in a manifest or a message).
pub(crate) fn relative_path(root: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(root).ok()?;
    if relative.as_os_str().is_empty() {
        return None;
    }
    let parts: Option<Vec<&str>> = relative
        .components()
        .map(|part| part.as_os_str().to_str())
        .collect();
    Some(parts?.join("/"))
}

pub(crate) fn stat_entry(kind: EntryKind, metadata: &std::fs::Metadata) -> Entry {
    Entry {
        kind,
        mode: metadata.mode() & 0o7777,
        size: metadata.len(),
        mtime_ns: i128::from(metadata.mtime()) * 1_000_000_000 + i128::from(metadata.mtime_nsec()),
        ctime_ns: i128::from(metadata.ctime()) * 1_000_000_000 + i128::from(metadata.ctime_nsec()),
        ino: metadata.ino(),
        blob: None,
    }
}

/// A file's bytes (never through a link, never blocking on a FIFO put in its place), or a
/// link's target.
pub(crate) fn read_entry(path: &Path, kind: EntryKind, limit: u64) -> io::Result<Vec<u8>> {
    match kind {
        EntryKind::Symlink => {
            use std::os::unix::ffi::OsStrExt;
            Ok(std::fs::read_link(path)?.as_os_str().as_bytes().to_vec())
        }
        EntryKind::File => {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(path)?;
            if !file.metadata()?.is_file() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a regular file",
                ));
            }
            let mut bytes = Vec::new();
            file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
            if bytes.len() as u64 > limit {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "too big"));
            }
            Ok(bytes)
        }
    }
}

fn ns(time: SystemTime) -> i128 {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(since) => since.as_nanos() as i128,
        Err(before) => -(before.duration().as_nanos() as i128),
    }
}
