//! What an agentty that died without stopping its agents left running, ended by the next one.
//!
//! An agent dies with agentty (its parent-death signal), but the tools it started do not:
//! after a SIGKILL of agentty, a `sleep 300` or a build a tool started runs on, re-parented
//! to init, and nothing alive knows it. So while an agent runs, agentty keeps a record of its
//! tree marker (see `tree`) in the state dir, with its own pid and start time; the record goes
//! when the tree is gone. A launch that finds a record whose owner is no longer alive (no
//! process with that pid, or one that started at another time: the pid was reused) ends every
//! process that still carries the marker, and the descendants of those, then drops the
//! record. Only the marker identifies them: the dead agent's pid and process group may belong
//! to someone else by now.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::proc_table::{carries_marker, read_proc_table};

/// Where this agentty records its agents' markers (set once by the binary).
static RECORDS: OnceLock<PathBuf> = OnceLock::new();

use super::timings::REAP_LIMIT;

/// What a launch ended.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Reaped {
    /// Processes ended.
    pub(crate) processes: usize,
    /// The agentty processes (pids) that had left them.
    pub(crate) owners: Vec<u32>,
}

impl Reaped {
    /// What the user is told, when anything was ended.
    pub(crate) fn notice(&self) -> Option<String> {
        if self.processes == 0 {
            return None;
        }
        let owners = self
            .owners
            .iter()
            .map(|pid| pid.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let (count, verb) = match self.processes {
            1 => ("1 process".to_owned(), "was"),
            many => (format!("{many} processes"), "were"),
        };
        Some(format!(
            "An earlier agentty (pid {owners}) ended without stopping its agents: {count} they \
             left running {verb} ended."
        ))
    }
}

/// Ends what dead agentty processes left behind according to the records in `dir`, then
/// records this agentty's own agents there from now on.
pub(crate) fn reap_and_record_in(dir: &Path) -> Reaped {
    let reaped = reap_orphans(dir, Instant::now() + REAP_LIMIT);
    let _ = RECORDS.set(dir.to_path_buf());
    reaped
}

/// One record: `<owner pid> <owner start time> <agent pid>`, in a file named by the marker.
#[derive(Debug, PartialEq, Eq)]
struct Record {
    owner: u32,
    owner_started: u64,
}

fn parse_record(text: &str) -> Option<Record> {
    let mut fields = text.split_whitespace();
    Some(Record {
        owner: fields.next()?.parse().ok()?,
        owner_started: fields.next()?.parse().ok()?,
    })
}

/// Records the tree with `marker` and root `root` that just started (when this agentty records
/// at all). A record that cannot be written is logged: the tree is still killed by every path
/// that kills trees.
pub(crate) fn record(marker: &str, root: i32) {
    let Some(dir) = RECORDS.get() else {
        return;
    };
    let own = std::process::id();
    let Some(started) = start_time(own as i32) else {
        return;
    };
    let written = crate::logging::private_state_dir(dir).and_then(|()| {
        use std::io::Write;
        let mut file = crate::files::no_follow()
            .write(true)
            .create_new(true)
            .open(dir.join(marker))?;
        writeln!(file, "{own} {started} {root}")
    });
    if let Err(error) = written {
        tracing::warn!(%error, dir = %dir.display(), "cannot record an agent's tree marker");
    }
}

/// Drops the record of the tree with `marker`, which is gone.
pub(crate) fn forget(marker: &str) {
    if let Some(dir) = RECORDS.get() {
        let _ = std::fs::remove_file(dir.join(marker));
    }
}

/// The start time of process `pid` (clock ticks after boot, `/proc/PID/stat` field 22).
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces): state is field 3.
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(22 - 3)?
        .parse()
        .ok()
}

/// Whether the agentty that wrote `record` still runs.
fn owner_alive(record: &Record) -> bool {
    start_time(record.owner as i32) == Some(record.owner_started)
}

/// Ends the trees of every record in `dir` whose owner is dead, and drops those records.
pub(crate) fn reap_orphans(dir: &Path, deadline: Instant) -> Reaped {
    let mut reaped = Reaped::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return reaped;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(marker) = path.file_name().and_then(|name| name.to_str()) else {
            continue;
        };
        // Markers are hex uuids; anything else is not a record.
        if marker.is_empty() || !marker.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            continue;
        }
        let Some(record) = crate::files::read_text_limited(&path, 256)
            .ok()
            .and_then(|text| parse_record(&text))
        else {
            let _ = std::fs::remove_file(&path);
            continue;
        };
        if owner_alive(&record) {
            continue;
        }
        let ended = kill_marked(marker, deadline);
        if ended > 0 {
            tracing::warn!(
                owner = record.owner,
                ended,
                "ended processes an agentty that died left running"
            );
            reaped.processes += ended;
            if !reaped.owners.contains(&record.owner) {
                reaped.owners.push(record.owner);
            }
        }
        let _ = std::fs::remove_file(&path);
    }
    reaped
}

/// SIGKILLs every process carrying `marker`, and their descendants, until two scans in a row
/// find none or `deadline` passes. Returns how many were killed.
fn kill_marked(marker: &str, deadline: Instant) -> usize {
    let own = std::process::id() as i32;
    let mut killed: HashSet<i32> = HashSet::new();
    let mut empty_scans = 0;
    loop {
        let table = read_proc_table();
        let mut found: HashSet<i32> = table
            .iter()
            .filter(|entry| entry.pid != own && !entry.zombie)
            .filter(|entry| carries_marker(entry.pid, marker))
            .map(|entry| entry.pid)
            .collect();
        loop {
            let before = found.len();
            for entry in &table {
                if entry.pid != own && !entry.zombie && found.contains(&entry.ppid) {
                    found.insert(entry.pid);
                }
            }
            if found.len() == before {
                break;
            }
        }
        for pid in &found {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
            killed.insert(*pid);
        }
        empty_scans = if found.is_empty() { empty_scans + 1 } else { 0 };
        if empty_scans >= 2 || Instant::now() >= deadline {
            return killed.len();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_parse_and_a_live_owner_is_recognised_by_pid_and_start_time() {
        let own = std::process::id();
        let started = start_time(own as i32).unwrap();
        let record = parse_record(&format!("{own} {started} 42\n")).unwrap();
        assert!(owner_alive(&record));
        // The same pid, started at another time: reused, so the owner is dead.
        assert!(!owner_alive(&Record {
            owner: own,
            owner_started: started + 1
        }));
        assert_eq!(parse_record("garbage"), None);
    }

    #[test]
    fn the_notice_counts_what_was_ended() {
        assert_eq!(Reaped::default().notice(), None);
        let notice = Reaped {
            processes: 2,
            owners: vec![41],
        }
        .notice()
        .unwrap();
        assert_eq!(
            notice,
            "An earlier agentty (pid 41) ended without stopping its agents: 2 processes they \
             left running were ended."
        );
    }

    #[test]
    fn a_live_owners_record_is_left_alone_and_junk_records_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let own = std::process::id();
        let started = start_time(own as i32).unwrap();
        let live = dir.path().join("abc123");
        std::fs::write(&live, format!("{own} {started} 1\n")).unwrap();
        let junk = dir.path().join("def456");
        std::fs::write(&junk, "not a record").unwrap();
        let other = dir.path().join("notes.txt");
        std::fs::write(&other, "kept").unwrap();
        let reaped = reap_orphans(dir.path(), Instant::now() + Duration::from_secs(1));
        assert_eq!(reaped, Reaped::default());
        assert!(live.exists());
        assert!(!junk.exists());
        assert!(other.exists());
    }
}
