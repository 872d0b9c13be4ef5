//! Job control in `agentty run`: SIGTSTP suspends agentty and the agent's process group (which
//! the terminal's SIGTSTP never reaches, the agent having a group of its own), SIGCONT
//! continues both, and the turn streams on as if nothing happened.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(30);

fn process_state(pid: i32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next())
        .unwrap_or('?')
}

/// Demo agents whose environment carries `marker`.
fn agents_with(marker: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if environ
            .split(|byte| *byte == 0)
            .any(|variable| variable == marker.as_bytes())
            && String::from_utf8_lossy(&cmdline).contains("demo-agent")
        {
            pids.push(pid);
        }
    }
    pids
}

fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(started.elapsed() < WAIT, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigtstp_suspends_the_agent_with_agentty_and_sigcont_resumes_both() {
    let state = tempfile::tempdir().unwrap();
    let marker = format!("AGENTTY_STATE_DIR={}", state.path().display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args([
            "run",
            "--provider",
            "demo",
            "--scenario",
            "slow",
            "count slowly",
        ])
        .env("AGENTTY_STATE_DIR", state.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // The first assistant delta: the agent is running.
    for line in lines.by_ref() {
        if line.unwrap().contains("\"assistant\"") {
            break;
        }
    }
    let agents = agents_with(&marker);
    assert!(!agents.is_empty(), "the demo agent runs");
    // SAFETY: signalling the process this test started.
    unsafe { libc::kill(pid, libc::SIGTSTP) };
    wait_until("agentty is stopped", || process_state(pid) == 'T');
    for agent in &agents {
        wait_until("the agent is stopped", || process_state(*agent) == 'T');
    }
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    wait_until("agentty runs again", || process_state(pid) != 'T');
    for agent in &agents {
        wait_until("the agent runs again", || process_state(*agent) != 'T');
    }
    // Streaming again after the resume; then a normal stop ends the (long) turn.
    let next = lines.next().expect("more output").unwrap();
    assert!(next.contains("\"assistant\""), "{next}");
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(
        rest.last()
            .is_some_and(|line| line.contains("terminal.cancelled")),
        "{rest:?}"
    );
    assert_eq!(child.wait().unwrap().code(), Some(130));
}
