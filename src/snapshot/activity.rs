//! Which agentty processes ran a turn in the tree, when, and what each changed:
//! `activity/<pid>-<start ns>` in the tree's store, holding, once the turn is over, its end and
//! the ids of its two manifests (`<end ns> <before> <after>`).
//!
//! Two agentty instances in one folder see each other's turns here, and a turn's change is
//! told apart from the other's by the other's own journal of its turn window: when this turn
//! ends, each turn of another agentty that overlapped it and has ended is read back (its two
//! manifests, in the shared store), and a path whose whole change in this turn is what those
//! turns did (as before the first of them that changed it, as the last left it) is theirs, not
//! this turn's: it is left out of this turn's "before", so neither its summary, `/diff`, `/undo`
//! nor `/rewind` counts it. What cannot be told apart is never guessed: another turn still
//! running when this one ends (its changes are not known yet), or a path both changed, keeps
//! the turn marked shared, and its undo asks before touching anything — unless by the time of
//! the undo the other turn has ended and its part can be told apart then.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use super::manifest::{BlobId, Entry, Manifest, PathBytes};
use super::scan::ns;
use super::store::Store;

/// Records older than this (ended) are removed by the next turn that looks.
const KEEP: Duration = Duration::from_secs(3600);

fn dir(store: &Store) -> PathBuf {
    store.dir().join("activity")
}

fn own_name(since: SystemTime) -> String {
    format!("{}-{}", std::process::id(), ns(since))
}

/// This process began a turn at `since`.
pub(crate) fn began(store: &Store, since: SystemTime) {
    if let Err(error) = store.write_atomically(&dir(store).join(own_name(since)), b"") {
        tracing::warn!(%error, "cannot record the turn's activity");
    }
}

/// This process's turn begun at `since` ended, its change being `ids` (before, after).
pub(crate) fn ended(store: &Store, since: SystemTime, ids: Option<(BlobId, BlobId)>) {
    let mut text = ns(SystemTime::now()).to_string();
    if let Some((before, after)) = ids {
        text.push_str(&format!(" {before:032x} {after:032x}"));
    }
    if let Err(error) = store.write_atomically(&dir(store).join(own_name(since)), text.as_bytes()) {
        tracing::warn!(%error, "cannot record the turn's activity");
    }
}

/// A turn of another agentty that overlapped this one.
#[derive(Debug, Clone)]
pub(crate) struct ForeignTurn {
    pub(crate) pid: u32,
    began: i64,
    /// Its two manifests, once it has ended and said them.
    ids: Option<(BlobId, BlobId)>,
}

/// The turns of other agentty processes that overlapped the window `start..=until` (ns; a turn
/// still running overlaps up to now), oldest first. Ended records older than [`KEEP`] and
/// those of an agentty that died mid-turn are removed on the way.
pub(crate) fn overlapping(store: &Store, start: i64, until: i64) -> Vec<ForeignTurn> {
    let now = ns(SystemTime::now());
    let Ok(entries) = std::fs::read_dir(dir(store)) else {
        return Vec::new();
    };
    let mut turns = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, began)) = name
            .to_str()
            .and_then(|name| name.split_once('-'))
            .and_then(|(pid, began)| Some((pid.parse::<u32>().ok()?, began.parse::<i64>().ok()?)))
        else {
            continue;
        };
        let text = crate::files::read_text_limited(&entry.path(), 128).unwrap_or_default();
        let mut fields = text.split_whitespace();
        let ended = fields.next().and_then(|end| end.parse::<i64>().ok());
        let hex = |field: Option<&str>| u128::from_str_radix(field?, 16).ok();
        let ids = hex(fields.next()).zip(hex(fields.next()));
        if let Some(ended) = ended {
            if now - ended > KEEP.as_nanos() as i64 {
                let _ = std::fs::remove_file(entry.path());
                continue;
            }
        }
        if pid == std::process::id() {
            continue;
        }
        if ended.is_none() && !alive(pid) {
            // Its agentty died mid-turn: that turn is over, what it did unknown.
            let _ = std::fs::remove_file(entry.path());
            continue;
        }
        if began <= until && ended.unwrap_or(now) >= start {
            turns.push(ForeignTurn {
                pid,
                began,
                ids: ids.filter(|_| ended.is_some()),
            });
        }
    }
    turns.sort_by_key(|turn| (turn.began, turn.pid));
    turns
}

/// How a turn's change was told apart from other agentty turns' ([`set_apart`]).
#[derive(Debug, Default)]
pub(crate) struct Apart {
    /// Paths whose change was another agentty's, per pid.
    pub(crate) theirs: BTreeMap<u32, usize>,
    /// The agentty processes whose part could not be told (still running, unreadable, or that
    /// changed a path this turn changed differently): the undo asks.
    pub(crate) unresolved: Vec<u32>,
}

/// Takes out of `before` (this turn's change being `before` → `after`) every path whose whole
/// change is the `foreign` turns' (see the module's doc): in the result it is as in `after`.
pub(crate) fn set_apart(
    store: &Store,
    before: &mut Manifest,
    after: &Manifest,
    foreign: &[ForeignTurn],
) -> Apart {
    let mut apart = Apart::default();
    let mine: HashSet<PathBytes> = before
        .changed_paths(after)
        .into_iter()
        .map(<[u8]>::to_vec)
        .collect();
    // Per path the foreign turns changed that this turn changed too: as before the first of
    // them, as the last left it, and who.
    type Theirs = (Option<Entry>, Option<Entry>, Vec<u32>);
    let mut theirs: BTreeMap<PathBytes, Theirs> = BTreeMap::new();
    for turn in foreign {
        let read = |(first, last): (BlobId, BlobId)| -> std::io::Result<(Manifest, Manifest)> {
            Ok((store.manifest(first)?, store.manifest(last)?))
        };
        let Some((their_before, their_after)) = turn.ids.and_then(|ids| read(ids).ok()) else {
            apart.unresolved.push(turn.pid);
            continue;
        };
        for path in their_before.changed_paths(&their_after) {
            if !mine.contains(path) {
                continue;
            }
            let seen = theirs
                .entry(path.to_vec())
                .or_insert_with(|| (their_before.entries.get(path).cloned(), None, Vec::new()));
            seen.1 = their_after.entries.get(path).cloned();
            seen.2.push(turn.pid);
        }
    }
    let same = |one: Option<&Entry>, other: Option<&Entry>| match (one, other) {
        (None, None) => true,
        (Some(one), Some(other)) => one.same_state(other),
        _ => false,
    };
    for (path, (first, last, mut pids)) in theirs {
        pids.sort_unstable();
        pids.dedup();
        let whole = same(first.as_ref(), before.entries.get(&path))
            && same(last.as_ref(), after.entries.get(&path));
        if !whole {
            apart.unresolved.extend(pids);
            continue;
        }
        match after.entries.get(&path) {
            Some(entry) => before.entries.insert(path, entry.clone()),
            None => before.entries.remove(&path),
        };
        for pid in pids {
            *apart.theirs.entry(pid).or_default() += 1;
        }
    }
    apart.unresolved.sort_unstable();
    apart.unresolved.dedup();
    apart
}

/// Whether process `pid` exists.
pub(crate) fn alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // Signal 0 checks only that the process exists (EPERM: it does, another user's).
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
