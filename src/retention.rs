//! Session-log retention: old conversations are deleted so that logs never fill a disk.
//!
//! A conversation's files are its log (`<stem>.jsonl`), its raw-line sidecar
//! (`<stem>.raw.zst`), the torn fragments set aside from it (`<stem>.torn`), its lock
//! (`<stem>.lock`) and the folder of its working-tree snapshots (`snapshots/<stem>/`, beside the
//! sessions folder, when that is named `sessions` as in the state dir); they are kept or
//! deleted together, and the snapshots count towards the total. Snapshots whose log was never
//! written (a chat closed before its first prompt) go by the same rules. A conversation goes when it was last
//! written longer ago than `max_age_days`, or, newest first, once the conversations before it
//! add up to more than `max_total_mb`. The log in use is never deleted (it still counts towards
//! the total), nor one whose lock another agentty holds, and nothing but those kinds of file
//! in the sessions folder is ever touched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::config::SessionLogRetention;

/// What one pruning deleted.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Pruned {
    /// The logs (`.jsonl`, or an orphan sidecar) whose conversations were deleted.
    pub(crate) conversations: Vec<PathBuf>,
    pub(crate) bytes_freed: u64,
}

struct Conversation {
    files: Vec<PathBuf>,
    /// Its snapshot folder, deleted whole.
    snapshots: Option<PathBuf>,
    bytes: u64,
    last_written: SystemTime,
}

/// Deletes the conversations in `dir` that `policy` no longer keeps, never `in_use` (the log
/// being written now). `now` is passed in so tests need no clock. Problems are logged; a file
/// that cannot be deleted is left and the rest goes on.
pub(crate) fn prune_session_logs(
    dir: &Path,
    in_use: Option<&Path>,
    policy: &SessionLogRetention,
    now: SystemTime,
) -> Pruned {
    let mut pruned = Pruned::default();
    let mut conversations = conversations_in(dir);
    // Newest first: the total is counted from the most recent conversation backwards.
    conversations.sort_by_key(|(_, conversation)| std::cmp::Reverse(conversation.last_written));
    let in_use_stem = in_use.map(stem_of);
    let max_age = Duration::from_secs(policy.max_age_days.saturating_mul(24 * 60 * 60));
    let max_total = policy.max_total_mb.saturating_mul(1024 * 1024);
    // The conversation in use is kept whatever its size or age, and counts first.
    let mut kept_bytes: u64 = conversations
        .iter()
        .filter(|(stem, _)| Some(stem) == in_use_stem.as_ref())
        .map(|(_, conversation)| conversation.bytes)
        .sum();
    for (stem, conversation) in conversations {
        if Some(&stem) == in_use_stem.as_ref() {
            continue;
        }
        let too_old = policy.max_age_days > 0
            && now
                .duration_since(conversation.last_written)
                .is_ok_and(|age| age > max_age);
        let over_total =
            policy.max_total_mb > 0 && kept_bytes.saturating_add(conversation.bytes) > max_total;
        // Another agentty writing it uses it too.
        if !(too_old || over_total) || crate::session_log::lock::is_held(&stem) {
            kept_bytes = kept_bytes.saturating_add(conversation.bytes);
            continue;
        }
        for file in &conversation.files {
            match std::fs::remove_file(file) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => {
                    tracing::warn!(%error, file = %file.display(), "cannot delete an old session log")
                }
            }
        }
        if let Some(folder) = &conversation.snapshots {
            // Does not follow links: only the folder's own entries go.
            if let Err(error) = std::fs::remove_dir_all(folder) {
                tracing::warn!(%error, folder = %folder.display(), "cannot delete old snapshots");
            }
        }
        tracing::info!(log = %stem.display(), too_old, over_total, "old session log deleted");
        pruned.bytes_freed += conversation.bytes;
        pruned.conversations.push(
            conversation
                .files
                .first()
                .or(conversation.snapshots.as_ref())
                .cloned()
                .unwrap_or(stem),
        );
    }
    pruned
}

/// The conversations in `dir`, by stem (the path without `.jsonl` / `.raw.zst`).
fn conversations_in(dir: &Path) -> Vec<(PathBuf, Conversation)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut by_stem: BTreeMap<PathBuf, Conversation> = BTreeMap::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(stem) = log_stem(&path) else {
            continue;
        };
        let Ok(metadata) = entry.metadata() else {
            continue;
        };
        if !metadata.is_file() {
            continue;
        }
        let conversation = by_stem.entry(stem).or_insert_with(Conversation::empty);
        let written = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        conversation.bytes += metadata.len();
        conversation.last_written = conversation.last_written.max(written);
        // The log itself first, so it names the conversation.
        if path
            .extension()
            .is_some_and(|extension| extension == "jsonl")
        {
            conversation.files.insert(0, path);
        } else {
            conversation.files.push(path);
        }
    }
    let snapshots_root = (dir.file_name().and_then(|name| name.to_str()) == Some("sessions"))
        .then(|| crate::snapshot::root_beside(dir));
    for entry in snapshots_root
        .and_then(|root| std::fs::read_dir(root).ok())
        .into_iter()
        .flatten()
        .flatten()
    {
        // A link is not a conversation's folder: never followed, never deleted through.
        if !entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            continue;
        }
        let (bytes, newest) = folder_usage(&entry.path());
        let conversation = by_stem
            .entry(dir.join(entry.file_name()))
            .or_insert_with(Conversation::empty);
        conversation.bytes += bytes;
        conversation.last_written = conversation.last_written.max(newest);
        conversation.snapshots = Some(entry.path());
    }
    by_stem.into_iter().collect()
}

impl Conversation {
    fn empty() -> Self {
        Self {
            files: Vec::new(),
            snapshots: None,
            bytes: 0,
            last_written: SystemTime::UNIX_EPOCH,
        }
    }
}

/// The files that belong to a conversation besides its log, by the suffix after its stem: the
/// raw-line sidecar, the torn fragments set aside (`session_log::torn`) and its lock file
/// (`session_log::lock`).
const COMPANION_SUFFIXES: [&str; 3] = [".raw.zst", ".torn", ".lock"];

/// The bytes of the files under `folder` and the newest time a file in it was written (links
/// are counted as themselves, never followed).
fn folder_usage(folder: &Path) -> (u64, SystemTime) {
    let mut bytes = 0;
    let mut newest = SystemTime::UNIX_EPOCH;
    let mut pending = vec![folder.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(metadata) = std::fs::symlink_metadata(entry.path()) else {
                continue;
            };
            if metadata.is_dir() {
                pending.push(entry.path());
            } else {
                bytes += metadata.len();
            }
            if metadata.is_file() {
                newest = newest.max(metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH));
            }
        }
    }
    (bytes, newest)
}

/// `<stem>` for `<stem>.jsonl` and its companions; `None` for any other file.
fn log_stem(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    if name.ends_with(".jsonl") {
        return Some(path.with_extension(""));
    }
    COMPANION_SUFFIXES
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .map(|stem| path.with_file_name(stem))
}

fn stem_of(log: &Path) -> PathBuf {
    log_stem(log).unwrap_or_else(|| log.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session_log::raw::sidecar_path;

    const DAY: Duration = Duration::from_secs(24 * 60 * 60);

    /// Writes `<name>.jsonl` (and a sidecar) of `bytes` each, last written `age` ago.
    fn conversation(dir: &Path, name: &str, bytes: usize, age: Duration, now: SystemTime) {
        let log = dir.join(format!("{name}.jsonl"));
        for path in [log.clone(), sidecar_path(&log)] {
            std::fs::write(&path, vec![b'x'; bytes]).unwrap();
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(now - age).unwrap();
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn old_conversations_go_with_their_sidecars_and_the_one_in_use_stays() {
        let dir = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        conversation(dir.path(), "1-old", 10, 40 * DAY, now);
        let torn = dir.path().join("1-old.torn");
        std::fs::write(&torn, "{\"ki\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&torn)
            .unwrap()
            .set_modified(now - 40 * DAY)
            .unwrap();
        conversation(dir.path(), "2-in-use", 10, 50 * DAY, now);
        conversation(dir.path(), "3-recent", 10, DAY, now);
        std::fs::write(dir.path().join("notes.txt"), "not a log").unwrap();
        let policy = SessionLogRetention {
            max_age_days: 30,
            max_total_mb: 0,
        };
        let pruned = prune_session_logs(
            dir.path(),
            Some(&dir.path().join("2-in-use.jsonl")),
            &policy,
            now,
        );
        assert_eq!(pruned.conversations, [dir.path().join("1-old.jsonl")]);
        assert_eq!(pruned.bytes_freed, 25);
        assert_eq!(
            names(dir.path()),
            [
                "2-in-use.jsonl",
                "2-in-use.raw.zst",
                "3-recent.jsonl",
                "3-recent.raw.zst",
                "notes.txt"
            ]
        );
    }

    #[test]
    fn a_conversation_another_agentty_writes_is_kept_and_its_lock_goes_with_it_later() {
        let dir = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        conversation(dir.path(), "1-old", 10, 40 * DAY, now);
        let log = dir.path().join("1-old.jsonl");
        let lock = crate::session_log::lock::ConversationLock::acquire(&log).unwrap();
        // Only the lock keeps it: its file is as old as the rest.
        std::fs::File::options()
            .write(true)
            .open(dir.path().join("1-old.lock"))
            .unwrap()
            .set_modified(now - 40 * DAY)
            .unwrap();
        let policy = SessionLogRetention {
            max_age_days: 30,
            max_total_mb: 0,
        };
        let kept = prune_session_logs(dir.path(), None, &policy, now);
        assert_eq!(kept, Pruned::default());
        drop(lock);
        let pruned = prune_session_logs(dir.path(), None, &policy, now);
        assert_eq!(pruned.conversations, [log]);
        assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
    }

    #[test]
    fn over_the_total_the_oldest_go_first() {
        let dir = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let half_mb = 512 * 1024;
        // Each conversation is 1 MiB (log + sidecar); the limit is 2 MiB.
        conversation(dir.path(), "a", half_mb, 3 * DAY, now);
        conversation(dir.path(), "b", half_mb, 2 * DAY, now);
        conversation(dir.path(), "c", half_mb, DAY, now);
        // The oldest is in use: it is kept and counts, so the middle one goes.
        let policy = SessionLogRetention {
            max_age_days: 0,
            max_total_mb: 2,
        };
        let pruned =
            prune_session_logs(dir.path(), Some(&dir.path().join("a.jsonl")), &policy, now);
        assert_eq!(pruned.conversations, [dir.path().join("b.jsonl")]);
        assert_eq!(
            names(dir.path()),
            ["a.jsonl", "a.raw.zst", "c.jsonl", "c.raw.zst"]
        );
        // Nothing in use: the oldest goes.
        conversation(dir.path(), "b", half_mb, 2 * DAY, now);
        let pruned = prune_session_logs(dir.path(), None, &policy, now);
        assert_eq!(pruned.conversations, [dir.path().join("a.jsonl")]);
    }

    #[test]
    fn the_defaults_keep_a_month_and_a_gigabyte_and_zero_turns_a_limit_off() {
        let dir = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        conversation(dir.path(), "a", 10, 29 * DAY, now);
        conversation(dir.path(), "b", 10, 31 * DAY, now);
        let kept = prune_session_logs(
            dir.path(),
            None,
            &SessionLogRetention {
                max_age_days: 0,
                max_total_mb: 0,
            },
            now,
        );
        assert_eq!(kept, Pruned::default());
        let pruned = prune_session_logs(dir.path(), None, &SessionLogRetention::default(), now);
        assert_eq!(pruned.conversations, [dir.path().join("b.jsonl")]);
    }

    #[test]
    fn snapshots_go_with_their_conversation_and_count_towards_the_total() {
        let state = tempfile::tempdir().unwrap();
        let dir = state.path().join("sessions");
        std::fs::create_dir(&dir).unwrap();
        let now = SystemTime::now();
        conversation(&dir, "1-old", 10, 40 * DAY, now);
        conversation(&dir, "2-new", 10, DAY, now);
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep.txt"), "not ours").unwrap();
        // "0-never": a chat closed before its first prompt left snapshots and no log.
        for (name, age) in [("0-never", 40 * DAY), ("1-old", 40 * DAY), ("2-new", DAY)] {
            let blobs = state.path().join(format!("snapshots/{name}/blobs/ab"));
            std::fs::create_dir_all(&blobs).unwrap();
            let blob = blobs.join("cdef");
            std::fs::write(&blob, vec![b'z'; 100]).unwrap();
            std::fs::File::options()
                .write(true)
                .open(&blob)
                .unwrap()
                .set_modified(now - age)
                .unwrap();
            // A link out of the folder is deleted as a link, its target left alone.
            std::os::unix::fs::symlink(outside.path(), blobs.join("link")).unwrap();
        }
        let policy = SessionLogRetention {
            max_age_days: 30,
            max_total_mb: 0,
        };
        let pruned = prune_session_logs(&dir, None, &policy, now);
        assert_eq!(
            pruned.conversations,
            [
                state.path().join("snapshots/0-never"),
                dir.join("1-old.jsonl")
            ]
        );
        assert!(pruned.bytes_freed >= 220, "{pruned:?}");
        assert_eq!(names(&dir), ["2-new.jsonl", "2-new.raw.zst"]);
        assert_eq!(names(&state.path().join("snapshots")), ["2-new"]);
        assert!(outside.path().join("keep.txt").exists());
    }

    #[test]
    fn the_limits_are_read_from_the_config_file() {
        let (config, warnings) = crate::config::parse(
            "[session_logs]\nmax_age_days = 7\nmax_total_mb = 0\n",
            Path::new("config.toml"),
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            config.session_logs,
            SessionLogRetention {
                max_age_days: 7,
                max_total_mb: 0
            }
        );
    }
}
