//! Which paths a snapshot covers, with their metadata: the whole walk of the tree (`.gitignore`
//! honoured, also outside git; never into `.git` and the like, agentty's own state or
//! `[snapshots] exclude`), and the walk that starts from the last snapshot instead.
//!
//! That one works as git's index and untracked cache do: every known path is `lstat`ed once,
//! and only a folder whose times changed since (a name in it came or went) is read again; a
//! folder new since is walked whole. An ignore file that changed means the rules did: then the
//! whole tree is walked. So an unchanged tree costs a `stat` a path, not a walk.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::manifest::{bytes_path, os_bytes, Entry, EntryKind, Manifest, PathBytes};
use std::os::unix::fs::MetadataExt;

use super::manifest::{Content, NotKept};
use super::store::Store;
use super::SnapshotLimits;

/// A file written this close to a snapshot's start may have been written again within the
/// same timestamp tick (the kernel's file clock is coarse): its metadata is not trusted.
pub(crate) const CLOCK_SLACK_NS: i64 = 50_000_000;

/// What is walked and how much is kept.
pub(crate) struct Walk<'a> {
    pub(crate) root: &'a Path,
    pub(crate) store: &'a Store,
    pub(crate) limits: &'a SnapshotLimits,
    /// Paths never walked (`[snapshots] exclude`, gitignore syntax).
    pub(crate) exclude: &'a ignore::gitignore::Gitignore,
}

/// The `[snapshots] exclude` patterns as a matcher (gitignore syntax, from the tree's root).
pub(crate) fn exclude_matcher(root: &Path, patterns: &[String]) -> ignore::gitignore::Gitignore {
    let mut builder = ignore::gitignore::GitignoreBuilder::new(root);
    for pattern in patterns {
        if let Err(error) = builder.add_line(None, pattern) {
            tracing::warn!(%error, pattern, "a [snapshots] exclude pattern is not valid");
        }
    }
    builder.build().unwrap_or_else(|error| {
        tracing::warn!(%error, "the [snapshots] exclude patterns cannot be used");
        ignore::gitignore::Gitignore::empty()
    })
}

pub(crate) fn stat_entry(kind: EntryKind, metadata: &std::fs::Metadata) -> Entry {
    Entry {
        kind,
        mode: metadata.mode() & 0o7777,
        // A folder's size means nothing; its times say when a name in it came or went (the
        // next walk lists again only the folders whose times changed).
        size: if kind == EntryKind::Dir {
            0
        } else {
            metadata.len()
        },
        mtime_ns: mtime_ns(metadata),
        ctime_ns: metadata.ctime() * 1_000_000_000 + metadata.ctime_nsec(),
        ino: metadata.ino(),
        content: Content::NotKept(NotKept::Unreadable),
    }
}

/// The kind of what is at `path` now (never following a link); `None` for what a snapshot does
/// not keep (a FIFO, a device).
pub(crate) fn kind_of(metadata: &std::fs::Metadata) -> Option<EntryKind> {
    let kind = metadata.file_type();
    if kind.is_file() {
        Some(EntryKind::File)
    } else if kind.is_symlink() {
        Some(EntryKind::Symlink)
    } else if kind.is_dir() {
        Some(EntryKind::Dir)
    } else {
        None
    }
}

pub(crate) fn mtime_ns(metadata: &std::fs::Metadata) -> i64 {
    metadata.mtime() * 1_000_000_000 + metadata.mtime_nsec()
}

/// Folders of version control systems (and a worktree's `.git` file): the tools' own, never
/// the user's files, and never something a turn's undo should touch.
const VCS_DIRS: [&[u8]; 4] = [b".git", b".hg", b".svn", b".jj"];

/// Files whose change changes what is ignored.
const IGNORE_FILES: [&[u8]; 2] = [b".gitignore", b".ignore"];

/// Whether the last name of `path` is an ignore file's.
fn is_ignore_file(path: &[u8]) -> bool {
    let name = path.rsplit(|byte| *byte == b'/').next().unwrap_or_default();
    IGNORE_FILES.contains(&name)
}

/// One path found, before its content is known.
pub(crate) struct Found {
    pub(crate) path: PathBytes,
    pub(crate) entry: Entry,
    /// What the stat cache says of it, when the walk already knows: `Some(Some(content))` its
    /// content is the cached one (unchanged, not written close to that walk), `Some(None)` it
    /// must be read, `None` not looked up yet.
    pub(crate) cached: Option<Option<super::manifest::Content>>,
}

/// The walker from `start` (a folder of the tree), with every rule of a snapshot.
fn walker(walk: &Walk<'_>, start: &Path, max_depth: Option<usize>) -> ignore::WalkBuilder {
    // agentty's own state (logs, snapshots) when it lies inside the tree: never the agent's
    // change, and a snapshot must not hold itself.
    let state_dir = walk.store.anchor().to_path_buf();
    let private: Vec<PathBuf> = [state_dir.canonicalize().ok(), Some(state_dir)]
        .into_iter()
        .flatten()
        .collect();
    let exclude = walk.exclude.clone();
    let mut builder = ignore::WalkBuilder::new(start);
    builder
        .hidden(false)
        .parents(true)
        .ignore(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        // `.gitignore` counts outside a git repository too.
        .require_git(false)
        .follow_links(false)
        .max_depth(max_depth)
        .filter_entry(move |entry| {
            let name = os_bytes(Path::new(entry.file_name()));
            if VCS_DIRS.contains(&name) || private.iter().any(|dir| entry.path() == dir) {
                return false;
            }
            // Its folders were judged on the way down: the entry's own path is enough.
            let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
            !exclude.matched(entry.path(), is_dir).is_ignore()
        });
    builder
}

/// What one walked entry is, relative to the tree's root (`None`: not something kept).
fn found(root: &Path, entry: &ignore::DirEntry) -> Option<Found> {
    let kind = entry.file_type()?;
    if !(kind.is_file() || kind.is_symlink() || kind.is_dir()) {
        // FIFOs, sockets and devices are no content.
        return None;
    }
    let relative = entry.path().strip_prefix(root).ok()?;
    if relative.as_os_str().is_empty() {
        return None;
    }
    let metadata = std::fs::symlink_metadata(entry.path()).ok()?;
    Some(Found {
        path: os_bytes(relative).to_vec(),
        entry: stat_entry(kind_of(&metadata)?, &metadata),
        cached: None,
    })
}

/// Every path of the tree, walked on two threads.
pub(crate) fn list_all(walk: &Walk<'_>) -> Vec<Found> {
    let root = walk.root.to_path_buf();
    let all = Mutex::new(Vec::new());
    walker(walk, &root, None)
        .threads(2)
        .build_parallel()
        .run(|| {
            struct Batch<'a> {
                found: Vec<Found>,
                all: &'a Mutex<Vec<Found>>,
            }
            impl Drop for Batch<'_> {
                fn drop(&mut self) {
                    if let Ok(mut all) = self.all.lock() {
                        all.append(&mut self.found);
                    }
                }
            }
            let root = root.clone();
            let mut batch = Batch {
                found: Vec::new(),
                all: &all,
            };
            Box::new(move |entry| {
                if let Some(path) = entry.ok().and_then(|entry| found(&root, &entry)) {
                    batch.found.push(path);
                }
                ignore::WalkState::Continue
            })
        });
    all.into_inner().unwrap_or_default()
}

/// The paths under the folder `start` of the tree (relative), `max_depth` deep.
fn list_under(walk: &Walk<'_>, start: &[u8], max_depth: Option<usize>) -> Vec<Found> {
    let from = walk.root.join(bytes_path(start));
    walker(walk, &from, max_depth)
        .build()
        .filter_map(|entry| found(walk.root, &entry.ok()?))
        .filter(|found| found.path != start)
        .collect()
}

/// What the known paths are now, by one `lstat` each (on two threads), with the folders whose
/// times changed.
struct Restat {
    found: Vec<Found>,
    changed_dirs: Vec<PathBytes>,
    new_dirs: Vec<PathBytes>,
    ignore_rules_changed: bool,
}

fn restat(walk: &Walk<'_>, entries: &[(&PathBytes, &Entry)], trusted_before: i64) -> Restat {
    let mut out = Restat {
        found: Vec::with_capacity(entries.len()),
        changed_dirs: Vec::new(),
        new_dirs: Vec::new(),
        ignore_rules_changed: false,
    };
    // One buffer for every full path: `root/` then the relative path.
    let mut full: Vec<u8> = os_bytes(walk.root).to_vec();
    full.push(b'/');
    let root_len = full.len();
    for (path, old) in entries {
        full.truncate(root_len);
        full.extend_from_slice(path);
        let metadata = std::fs::symlink_metadata(bytes_path(&full));
        let is_ignore_file = is_ignore_file(path);
        let Ok(metadata) = metadata else {
            // Gone (its folder's times changed too, and say so).
            out.ignore_rules_changed |= is_ignore_file;
            continue;
        };
        let Some(kind) = kind_of(&metadata) else {
            continue;
        };
        let entry = stat_entry(kind, &metadata);
        let changed = !entry.same_stat(old)
            || entry.mtime_ns >= trusted_before
            || entry.ctime_ns >= trusted_before;
        if is_ignore_file && changed {
            out.ignore_rules_changed = true;
        }
        if kind == EntryKind::Dir {
            if old.kind != EntryKind::Dir {
                out.new_dirs.push((*path).clone());
            } else if changed {
                out.changed_dirs.push((*path).clone());
            }
        }
        let trusted = entry.same_stat(old)
            && entry.mtime_ns < trusted_before
            && entry.ctime_ns < trusted_before;
        out.found.push(Found {
            path: (*path).clone(),
            entry,
            cached: Some(trusted.then_some(old.content)),
        });
    }
    out
}

/// The tree's paths now, from the last snapshot `cache`: `None` when the whole tree must be
/// walked (the ignore rules changed).
pub(crate) fn relist(walk: &Walk<'_>, cache: &Manifest) -> Option<Vec<Found>> {
    let trusted_before = cache.taken_at_ns - CLOCK_SLACK_NS;
    let entries: Vec<(&PathBytes, &Entry)> = cache.entries.iter().collect();
    let half = entries.len().div_ceil(2);
    let (first, second) = entries.split_at(half);
    let parts: Vec<Restat> = std::thread::scope(|scope| {
        let handles: Vec<_> = [first, second]
            .into_iter()
            .map(|part| scope.spawn(move || restat(walk, part, trusted_before)))
            .collect();
        handles
            .into_iter()
            .filter_map(|handle| handle.join().ok())
            .collect()
    });
    if parts.len() != 2 {
        return None;
    }
    let mut found = Vec::with_capacity(entries.len());
    // The root has no entry of its own: its names are always listed again (one `readdir`).
    let mut changed_dirs: Vec<PathBytes> = vec![Vec::new()];
    let mut new_dirs = Vec::new();
    for part in parts {
        if part.ignore_rules_changed {
            return None;
        }
        found.extend(part.found);
        changed_dirs.extend(part.changed_dirs);
        new_dirs.extend(part.new_dirs);
    }
    for dir in &changed_dirs {
        for child in list_under(walk, dir, Some(1)) {
            if cache.entries.contains_key(&child.path) {
                continue;
            }
            if is_ignore_file(&child.path) {
                // A new ignore file: the rules changed.
                return None;
            }
            if child.entry.kind == EntryKind::Dir {
                new_dirs.push(child.path.clone());
            }
            found.push(Found {
                cached: Some(None),
                ..child
            });
        }
    }
    for dir in &new_dirs {
        for child in list_under(walk, dir, None) {
            if is_ignore_file(&child.path) {
                return None;
            }
            if !cache.entries.contains_key(&child.path) {
                found.push(Found {
                    cached: Some(None),
                    ..child
                });
            }
        }
    }
    Some(found)
}
