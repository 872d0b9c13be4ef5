//! Finding and killing everything an agent started.
//!
//! A process-group kill is not enough: pi's bash tool starts its children with `setsid`, and a
//! double-forked daemon leaves the agent's tree altogether. Every agent is therefore spawned
//! with a unique marker in its environment, which all its descendants inherit; the tree is the
//! union of (a) processes carrying the marker, (b) the agent's process group and (c) the
//! agent's descendants by parent PID. On Linux agentty also makes itself a child subreaper, so
//! orphans re-parent to it (not to init) and their zombies are reaped here.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;

use super::proc_table::{carries_marker, read_proc_table, ProcEntry};

/// The identity of one agent's process tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TreeIdentity {
    /// The agent's PID, also its process group id.
    pub(crate) root: i32,
    pub(crate) marker: String,
}

fn members_in(tree: &TreeIdentity, entries: &[ProcEntry]) -> Vec<ProcEntry> {
    let own_pid = std::process::id() as i32;
    let mut in_tree: HashSet<i32> = HashSet::new();
    for entry in entries {
        if entry.pid == own_pid {
            continue;
        }
        if entry.pid == tree.root
            || entry.pgrp == tree.root
            || carries_marker(entry.pid, &tree.marker)
        {
            in_tree.insert(entry.pid);
        }
    }
    // Descendants by parent PID (covers children that cleared their environment).
    loop {
        let before = in_tree.len();
        for entry in entries {
            if entry.pid != own_pid && in_tree.contains(&entry.ppid) {
                in_tree.insert(entry.pid);
            }
        }
        if in_tree.len() == before {
            break;
        }
    }
    entries
        .iter()
        .filter(|entry| in_tree.contains(&entry.pid))
        .copied()
        .collect()
}

/// Sends `signal` to the agent's process group (which reaches everything that did not leave it).
pub(crate) fn signal_group(tree: &TreeIdentity, signal: Signal) {
    let _ = killpg(Pid::from_raw(tree.root), signal);
}

/// Sends `signal` to the process group of every live agent (job control: SIGTSTP, SIGCONT).
pub(crate) fn signal_all_groups(signal: Signal) {
    let trees = match LIVE_TREES.lock() {
        Ok(trees) => trees.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    };
    for tree in &trees {
        signal_group(tree, signal);
    }
}

/// SIGKILLs every process of the tree until none is left or `deadline` passes. Returns the
/// number of processes still alive at the end (0 on success).
///
/// One empty scan is not proof: a process caught inside `execve` (e.g. a tool child going
/// `setsid` -> `exec`) can hide its environment for an instant. So the tree counts as gone only
/// after two empty scans in a row, and every PID once seen is re-checked in each round.
pub(crate) fn kill_tree(tree: &TreeIdentity, deadline: Instant) -> usize {
    let mut seen: HashSet<i32> = HashSet::new();
    let mut empty_scans = 0;
    loop {
        signal_group(tree, Signal::SIGKILL);
        let table = read_proc_table();
        let mut alive = 0;
        for entry in members_in(tree, &table) {
            seen.insert(entry.pid);
        }
        for entry in &table {
            if seen.contains(&entry.pid) && !entry.zombie {
                alive += 1;
                let _ = kill(Pid::from_raw(entry.pid), Signal::SIGKILL);
            }
        }
        reap_adopted(tree.root, &seen);
        empty_scans = if alive == 0 { empty_scans + 1 } else { 0 };
        if empty_scans >= 2 || Instant::now() >= deadline {
            return alive;
        }
        std::thread::sleep(Duration::from_millis(if alive == 0 { 10 } else { 5 }));
    }
}

/// The live processes of the tree besides its root (the agent itself).
pub(crate) fn descendants(tree: &TreeIdentity) -> HashSet<i32> {
    members_in(tree, &read_proc_table())
        .into_iter()
        .filter(|entry| entry.pid != tree.root && !entry.zombie)
        .map(|entry| entry.pid)
        .collect()
}

/// SIGKILLs the processes of the tree that are not in `keep` (nor the root), with their own
/// process groups (a tool started in a group of its own), until none is left or `deadline`
/// passes: what an agent left running after it ended a turn. Returns how many were killed.
pub(crate) fn kill_descendants_except(
    tree: &TreeIdentity,
    keep: &HashSet<i32>,
    deadline: Instant,
) -> usize {
    let mut killed: HashSet<i32> = HashSet::new();
    loop {
        let strays: Vec<i32> = descendants(tree)
            .into_iter()
            .filter(|pid| !keep.contains(pid))
            .collect();
        if strays.is_empty() || Instant::now() >= deadline {
            reap_adopted(tree.root, &killed);
            return killed.len();
        }
        for pid in strays {
            let pid = Pid::from_raw(pid);
            if nix::unistd::getpgid(Some(pid)).ok() == Some(pid) {
                let _ = killpg(pid, Signal::SIGKILL);
            }
            let _ = kill(pid, Signal::SIGKILL);
            killed.insert(pid.as_raw());
        }
        reap_adopted(tree.root, &killed);
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Reaps zombies that became our children as subreaper. A zombie has no environment left to
/// match, so as subreaper every zombie child is reaped except the roots of live agents (their
/// own `Child` handles reap them); without it only `candidates` of this tree are.
fn reap_adopted(agent_pid: i32, candidates: &HashSet<i32>) {
    let own_pid = std::process::id() as i32;
    let subreaper = IS_SUBREAPER.load(Ordering::Relaxed);
    let live_roots: HashSet<i32> = match LIVE_TREES.lock() {
        Ok(trees) => trees.iter().map(|tree| tree.root).collect(),
        Err(poisoned) => poisoned.into_inner().iter().map(|tree| tree.root).collect(),
    };
    for entry in read_proc_table() {
        let ours =
            candidates.contains(&entry.pid) || (subreaper && !live_roots.contains(&entry.pid));
        if entry.zombie && entry.ppid == own_pid && entry.pid != agent_pid && ours {
            let _ = waitpid(Pid::from_raw(entry.pid), Some(WaitPidFlag::WNOHANG));
        }
    }
}

/// Set once agentty is a subreaper: then every child it did not spawn itself is an adopted
/// orphan of an agent.
static IS_SUBREAPER: AtomicBool = AtomicBool::new(false);

/// Makes agentty a child subreaper (Linux): orphaned descendants of its agents re-parent to it.
/// Only the binary calls this; a test harness that spawns children of its own should not.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only sets a flag on this process.
    unsafe {
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 {
            IS_SUBREAPER.store(true, Ordering::Relaxed);
        }
    }
}

/// Agents alive right now, so that agentty's own exit paths (panic, signals) can kill them
/// synchronously, without the async runtime.
static LIVE_TREES: Mutex<Vec<TreeIdentity>> = Mutex::new(Vec::new());

/// A new agent's tree: killed by agentty's own exit paths, and recorded on disk so that the
/// next launch can end what it leaves if agentty dies without doing so (`orphans`).
pub(crate) fn register(tree: &TreeIdentity) {
    if let Ok(mut trees) = LIVE_TREES.lock() {
        trees.push(tree.clone());
    }
    super::orphans::record(&tree.marker, tree.root);
}

/// A tree that is gone.
pub(crate) fn unregister(tree: &TreeIdentity) {
    if let Ok(mut trees) = LIVE_TREES.lock() {
        trees.retain(|live| live != tree);
    }
    super::orphans::forget(&tree.marker);
}

/// Kills every live agent tree at once. For the last moments of agentty (panic hook, fatal
/// signal); the normal path is the three-stage stop.
pub fn kill_all_trees_now() -> usize {
    let trees = match LIVE_TREES.lock() {
        Ok(trees) => trees.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    };
    let deadline = Instant::now() + super::timings::TREE_KILL_DEADLINE;
    trees.iter().map(|tree| kill_tree(tree, deadline)).sum()
}
