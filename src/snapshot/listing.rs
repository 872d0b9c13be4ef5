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
use super::scan::{kind_of, stat_entry, Walk, CLOCK_SLACK_NS};

/// Folders of version control systems (and a worktree's `.git` file): the tools' own, never
/// the user's files, and never something a turn's undo should touch.
const VCS_DIRS: [&[u8]; 4] = [b".git", b".hg", b".svn", b".jj"];

/// Files whose change changes what is ignored.
const IGNORE_FILES: [&[u8]; 2] = [b".gitignore", b".ignore"];

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
        let is_ignore_file = IGNORE_FILES.iter().any(|name| {
            path.ends_with(name)
                && (path.len() == name.len() || path[path.len() - name.len() - 1] == b'/')
        });
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
            let name = child
                .path
                .rsplit(|byte| *byte == b'/')
                .next()
                .unwrap_or_default();
            if IGNORE_FILES.contains(&name) {
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
            let name = child
                .path
                .rsplit(|byte| *byte == b'/')
                .next()
                .unwrap_or_default();
            if IGNORE_FILES.contains(&name) {
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
