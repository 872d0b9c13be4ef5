//! Walking the tree into a [`Manifest`]: which paths there are, and their bytes in the store.
//!
//! As git's index does, the previous manifest is a stat cache: a path whose size, times, inode
//! and mode are unchanged since it was read is neither read nor hashed again (unless it was
//! written so close to that read that the clock could not tell the two apart). The walk itself
//! runs on two threads, and so does the reading of what changed.
//!
//! A file that changes while it is read (its metadata differs before and after) is read again,
//! so a snapshot never keeps half of one write and the metadata of the next.

use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::SystemTime;

use super::listing::{self, Found};
pub(crate) use super::listing::{
    exclude_matcher, kind_of, mtime_ns, stat_entry, Walk, CLOCK_SLACK_NS,
};
use super::manifest::{
    bytes_path, os_bytes, Content, Entry, EntryKind, Manifest, NotKept, PathBytes,
};
use super::store::is_disk_full;

/// How often a file that keeps changing while it is read is read again before it is given up.
const READ_TRIES: usize = 3;

/// The blob of a folder (it has no content of its own).
pub(crate) const NO_CONTENT: u128 = 0;

/// For a snapshot taken while an agent may already be working (its request was sent without
/// waiting for the walk): what was written after `since` is taken from `baseline` (the last
/// snapshot before), as it was before the agent could touch it.
pub(crate) struct Guard<'a> {
    pub(crate) since: SystemTime,
    pub(crate) baseline: &'a Manifest,
    /// When the baseline's walk ended: when that is before `since`, what it read is how the
    /// tree was before the turn, however recent a file's times.
    pub(crate) baseline_done: Option<SystemTime>,
}

/// What a walk could not keep, and what it cost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ScanReport {
    /// Files (and links) in the tree, kept or not.
    pub(crate) files: u64,
    /// Files not kept, by why.
    pub(crate) not_kept: Vec<(NotKept, u64)>,
    /// Bytes read and stored in this walk (files unchanged since the cache cost none).
    pub(crate) bytes_read: u64,
    /// Files read (not taken from the cache).
    pub(crate) files_read: u64,
}

impl ScanReport {
    fn count(&mut self, why: NotKept) {
        match self.not_kept.iter_mut().find(|(kind, _)| *kind == why) {
            Some((_, count)) => *count += 1,
            None => self.not_kept.push((why, 1)),
        }
    }
}

/// Walks the tree and stores what is new. `cache` (the previous snapshot) spares reading files
/// whose metadata has not changed; `guard` see [`Guard`].
pub(crate) fn scan(
    walk: &Walk<'_>,
    cache: Option<&Manifest>,
    guard: Option<Guard<'_>>,
) -> (Manifest, ScanReport) {
    let taken_at_ns = ns(SystemTime::now());
    // With a stat cache, only what changed is listed again (`None`: the ignore rules changed,
    // or there is no cache: the whole tree is walked).
    let mut found = cache
        .filter(|cache| !cache.entries.is_empty())
        .and_then(|cache| listing::relist(walk, cache))
        .unwrap_or_else(|| listing::list_all(walk));
    found.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let since_ns = guard.as_ref().map(|guard| ns(guard.since) - CLOCK_SLACK_NS);
    let mut report = ScanReport::default();
    let (mut kept_bytes, mut kept_files) = (0u64, 0u64);
    let mut to_read: Vec<(PathBytes, Entry)> = Vec::new();
    // In path order: the map is built from it at once.
    let mut entries: Vec<(PathBytes, Entry)> = Vec::with_capacity(found.len());
    for Found {
        path,
        mut entry,
        cached,
    } in found
    {
        if entry.kind == EntryKind::Dir {
            entry.content = Content::Kept(NO_CONTENT);
            entries.push((path, entry));
            continue;
        }
        report.files += 1;
        if let (Some(guard), Some(since)) = (&guard, since_ns) {
            if entry.mtime_ns >= since || entry.ctime_ns >= since {
                // Written since the turn began: as it was before, or not there before.
                if let Some(before) = guard.baseline.entries.get(&path) {
                    let read_before_the_turn =
                        guard.baseline_done.is_some_and(|done| done <= guard.since);
                    let read_too_late = !read_before_the_turn
                        && (before.mtime_ns >= since || before.ctime_ns >= since);
                    let mut before = before.clone();
                    if read_too_late && before.kind != EntryKind::Dir {
                        // The baseline itself read it after the agent wrote it: how it was
                        // before is unknown, and said so (never "restored" to the agent's).
                        before.content = Content::NotKept(NotKept::ChangedBeforeRead);
                    }
                    entries.push((path, before));
                }
                continue;
            }
        }
        let cached = cached.unwrap_or_else(|| {
            cache.and_then(|cache| {
                let cached = cache.entries.get(&path)?;
                let trusted = cached.same_stat(&entry)
                    && entry.mtime_ns < cache.taken_at_ns - CLOCK_SLACK_NS
                    && entry.ctime_ns < cache.taken_at_ns - CLOCK_SLACK_NS;
                trusted.then_some(cached.content)
            })
        });
        if walk.limits.max_files() <= kept_files {
            entry.content = Content::NotKept(NotKept::OverFileCount);
        } else if entry.size > walk.limits.max_file_bytes() && entry.kind == EntryKind::File {
            entry.content = Content::NotKept(NotKept::TooBig);
        } else if kept_bytes.saturating_add(entry.size) > walk.limits.max_total_bytes() {
            entry.content = Content::NotKept(NotKept::OverTotal);
        } else {
            match cached {
                Some(Content::Kept(blob)) => entry.content = Content::Kept(blob),
                // Not kept last time (unreadable, a full disk): tried again.
                Some(Content::NotKept(_)) | None => {
                    to_read.push((path.clone(), entry.clone()));
                }
            }
            kept_files += 1;
            kept_bytes += entry.size;
        }
        entries.push((path, entry));
    }
    let mut manifest = Manifest {
        taken_at_ns,
        entries: entries.into_iter().collect(),
    };
    for (path, entry) in read_all(walk, to_read, &mut report) {
        manifest.entries.insert(path, entry);
    }
    for entry in manifest.entries.values() {
        if let Some(why) = entry.not_kept() {
            report.count(why);
        }
    }
    if let (Some(guard), Some(since)) = (&guard, since_ns) {
        // Gone now, but its folder changed since the turn began: deleted by the agent, so it
        // was there before.
        for (path, before) in &guard.baseline.entries {
            if manifest.entries.contains_key(path) {
                continue;
            }
            let full = walk.root.join(bytes_path(path));
            let folder = full.parent().unwrap_or(walk.root);
            let folder_changed = std::fs::symlink_metadata(folder)
                .map(|metadata| mtime_ns(&metadata) >= since)
                .unwrap_or(true);
            if folder_changed {
                manifest.entries.insert(path.clone(), before.clone());
            }
        }
    }
    (manifest, report)
}

/// Reads and stores the files that need it, on two threads; each with its content (or why not).
fn read_all(
    walk: &Walk<'_>,
    to_read: Vec<(PathBytes, Entry)>,
    report: &mut ScanReport,
) -> Vec<(PathBytes, Entry)> {
    if to_read.is_empty() {
        return Vec::new();
    }
    let half = to_read.len().div_ceil(2);
    let mut chunks: Vec<Vec<(PathBytes, Entry)>> = Vec::new();
    let mut rest = to_read;
    let second = rest.split_off(half.min(rest.len()));
    chunks.push(rest);
    if !second.is_empty() {
        chunks.push(second);
    }
    // Per thread: its paths with their content, the bytes and files it read.
    type Read = (Vec<(PathBytes, Entry)>, u64, u64);
    let results: Vec<Read> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    let (mut bytes, mut files) = (0u64, 0u64);
                    let done: Vec<(PathBytes, Entry)> = chunk
                        .into_iter()
                        .map(|(path, entry)| {
                            let entry = read_one(walk, &path, entry, &mut bytes);
                            files += 1;
                            (path, entry)
                        })
                        .collect();
                    (done, bytes, files)
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|handle| handle.join().ok())
            .collect()
    });
    let mut out = Vec::new();
    for (done, bytes, files) in results {
        report.bytes_read += bytes;
        report.files_read += files;
        out.extend(done);
    }
    out
}

/// Reads one path into the store: its entry with the content kept, or why not. A file whose
/// metadata changed while it was read is read again (its entry takes the new metadata).
fn read_one(walk: &Walk<'_>, path: &[u8], mut entry: Entry, bytes_read: &mut u64) -> Entry {
    let full = walk.root.join(bytes_path(path));
    for _ in 0..READ_TRIES {
        let bytes = match read_entry(&full, entry.kind, walk.limits.max_file_bytes()) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::FileTooLarge => {
                entry.content = Content::NotKept(NotKept::TooBig);
                return entry;
            }
            Err(_) => {
                entry.content = Content::NotKept(NotKept::Unreadable);
                return entry;
            }
        };
        let after = match std::fs::symlink_metadata(&full) {
            Ok(metadata) => stat_entry(entry.kind, &metadata),
            Err(_) => {
                entry.content = Content::NotKept(NotKept::Unreadable);
                return entry;
            }
        };
        if !after.same_stat(&entry) {
            // Written while it was read: what was read may be half of it. Again, as it is now.
            entry = after;
            continue;
        }
        *bytes_read += bytes.len() as u64;
        entry.content = match walk.store.put_blob(&bytes) {
            Ok(blob) => Content::Kept(blob),
            Err(error) if is_disk_full(&error) => Content::NotKept(NotKept::StoreFull),
            Err(error) => {
                tracing::warn!(%error, "cannot store a snapshot blob");
                Content::NotKept(NotKept::StoreFailed)
            }
        };
        return entry;
    }
    entry.content = Content::NotKept(NotKept::Unreadable);
    entry
}

/// A file's bytes (never through a link, never blocking on a FIFO put in its place), or a
/// link's target. Past `limit`: `FileTooLarge`.
pub(crate) fn read_entry(path: &Path, kind: EntryKind, limit: u64) -> io::Result<Vec<u8>> {
    match kind {
        EntryKind::Dir => Ok(Vec::new()),
        EntryKind::Symlink => Ok(os_bytes(&std::fs::read_link(path)?).to_vec()),
        EntryKind::File => {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(path)?;
            let metadata = file.metadata()?;
            if !metadata.is_file() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a regular file",
                ));
            }
            let mut bytes = Vec::with_capacity(metadata.len().min(limit) as usize);
            file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
            if bytes.len() as u64 > limit {
                return Err(io::Error::new(io::ErrorKind::FileTooLarge, "too big"));
            }
            Ok(bytes)
        }
    }
}

pub(crate) fn ns(time: SystemTime) -> i64 {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(since) => since.as_nanos() as i64,
        Err(before) => -(before.duration().as_nanos() as i64),
    }
}
