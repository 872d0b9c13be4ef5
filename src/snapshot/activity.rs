//! Which agentty processes ran a turn in the tree, and when: `activity/<pid>-<start ns>` in the
//! tree's store, holding the turn's end once it is over. Two agentty instances in one folder
//! see each other's turns here: a file written during this turn may be the other's change, so
//! the turn's undo asks before touching anything.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

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

/// This process's turn begun at `since` ended: records it, and returns the other processes
/// whose turns overlapped it.
pub(crate) fn ended(store: &Store, since: SystemTime) -> Vec<u32> {
    let now = ns(SystemTime::now());
    let own = own_name(since);
    if let Err(error) = store.write_atomically(&dir(store).join(&own), now.to_string().as_bytes()) {
        tracing::warn!(%error, "cannot record the turn's activity");
    }
    let start = ns(since);
    let Ok(entries) = std::fs::read_dir(dir(store)) else {
        return Vec::new();
    };
    let mut others = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, began)) = name
            .to_str()
            .and_then(|name| name.split_once('-'))
            .and_then(|(pid, began)| Some((pid.parse::<u32>().ok()?, began.parse::<i64>().ok()?)))
        else {
            continue;
        };
        let ended = crate::files::read_text_limited(&entry.path(), 64)
            .ok()
            .and_then(|text| text.trim().parse::<i64>().ok());
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
            // Its agentty died mid-turn: that turn is over.
            let _ = std::fs::remove_file(entry.path());
            continue;
        }
        // Still running (or its agentty died mid-turn): up to now.
        let until = ended.unwrap_or(now);
        if began <= now && until >= start {
            others.push(pid);
        }
    }
    others.sort_unstable();
    others.dedup();
    others
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
