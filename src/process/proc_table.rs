//! Reading the process table from /proc: every process with its parent, group and state, and
//! whether a process carries an agent's tree marker in its environment (see `tree`).

/// The environment variable holding an agent's tree marker.
pub(crate) const TREE_MARKER_VAR: &str = "AGENTTY_AGENT_TREE";

/// One process as /proc shows it.
#[derive(Debug, Clone, Copy)]
pub(super) struct ProcEntry {
    pub(super) pid: i32,
    pub(super) ppid: i32,
    pub(super) pgrp: i32,
    pub(super) zombie: bool,
}

/// Every process as /proc shows it now.
pub(super) fn read_proc_table() -> Vec<ProcEntry> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let name = entry.ok()?.file_name();
        let pid: i32 = name.to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        parse_stat(pid, &stat)
    })
    .collect()
}

/// Parses `/proc/PID/stat`; the command name may hold spaces and parentheses, so fields are
/// counted from the last `)`.
fn parse_stat(pid: i32, stat: &str) -> Option<ProcEntry> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(ProcEntry {
        pid,
        ppid,
        pgrp,
        zombie: state == "Z" || state == "X",
    })
}

/// Whether process `pid` has `marker` in its environment (gone or unreadable: no).
pub(super) fn carries_marker(pid: i32, marker: &str) -> bool {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let needle = format!("{TREE_MARKER_VAR}={marker}");
    environ
        .split(|byte| *byte == 0)
        .any(|entry| entry == needle.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parsing_survives_odd_command_names() {
        let entry = parse_stat(42, "42 (a) b (c)) S 7 42 42 0 -1").unwrap();
        assert_eq!((entry.ppid, entry.pgrp, entry.zombie), (7, 42, false));
        let zombie = parse_stat(43, "43 (x) Z 1 43 43").unwrap();
        assert!(zombie.zombie);
    }
}
