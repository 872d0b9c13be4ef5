//! The hostile-agent catalogue, measured end to end: each agent runs under
//! `agentty run --provider demo --agent-bin <script>` (the pi mapper reads it), and the table
//! gives agentty's peak RSS (VmHWM, polled), the terminal message, the exit status, and how many
//! processes the agent left behind (found by a marker in their environment) — the target is 0.
//! Agents that must be stopped get SIGTERM (to agentty) after 500 ms.
//!
//! Run: `cargo bench --bench hostile`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Case {
    name: &'static str,
    script: &'static str,
    stop_after: Option<Duration>,
}

const CASES: &[Case] = &[
    Case { name: "non-JSON lines (100k)", script: "i=0; while [ $i -lt 100000 ]; do echo \"garbage line $i\"; i=$((i+1)); done", stop_after: None },
    Case { name: "JSON without type (100k)", script: "yes '{\"no\":\"type\"}' | head -n 100000", stop_after: None },
    Case { name: "64 MiB line, no newline", script: "head -c 67108864 /dev/zero | tr '\\0' x", stop_after: None },
    Case { name: "invalid UTF-8 (100k lines)", script: "yes \"$(printf '\\377\\376 bad')\" | head -n 100000", stop_after: None },
    Case { name: "NUL bytes (100k lines)", script: "yes \"$(printf 'a')\" | head -n 100000 | tr a '\\0'", stop_after: None },
    Case { name: "\\r-only line endings", script: "yes '{\"type\":\"agent_start\"}' | head -n 100000 | tr '\\n' '\\r'", stop_after: None },
    Case { name: "escape sequences in text", script: "yes '{\"type\":\"message_update\",\"assistantMessageEvent\":{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":\"\\u001b[2J\\u001b]0;t\\u0007\"}}' | head -n 100000", stop_after: None },
    Case { name: "100 MiB stderr flood", script: "head -c 104857600 /dev/zero | tr '\\0' e >&2", stop_after: None },
    Case { name: "closes stdout, stays alive", script: "exec >&-; exec sleep 300", stop_after: None },
    Case { name: "never exits after completion", script: "echo '{\"type\":\"agent_start\"}'; echo '{\"type\":\"message_end\",\"message\":{\"role\":\"assistant\",\"content\":[],\"stopReason\":\"stop\"}}'; echo '{\"type\":\"agent_end\",\"messages\":[]}'; exec sleep 300", stop_after: None },
    Case { name: "ignores SIGINT and SIGTERM", script: "trap '' INT TERM; while :; do sleep 0.05; done", stop_after: Some(Duration::from_millis(500)) },
    Case { name: "tool child called setsid", script: "setsid sleep 300 & exec sleep 300", stop_after: Some(Duration::from_millis(500)) },
    Case { name: "double-forked daemon, then exits", script: "( setsid sleep 300 & ); sleep 0.2", stop_after: None },
    Case { name: "exits between SIGINT and SIGKILL", script: "trap 'sleep 1; exit 0' INT; while :; do sleep 0.05; done", stop_after: Some(Duration::from_millis(500)) },
];

fn processes_marked(marker: &str) -> usize {
    let own = std::process::id();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != own)
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            !zombie
                && std::fs::read(format!("/proc/{pid}/environ"))
                    .map(|environ| {
                        environ
                            .windows(marker.len())
                            .any(|window| window == marker.as_bytes())
                    })
                    .unwrap_or(false)
        })
        .count()
}

fn run_case(dir: &Path, index: usize, case: &Case) -> String {
    let script = dir.join(format!("agent-{index}"));
    std::fs::write(&script, format!("#!/bin/sh\n{}\n", case.script)).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let marker = format!("AGENTTY_HOSTILE_CASE={}-{index}", std::process::id());
    let (key, value) = marker.split_once('=').unwrap();
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(["run", "--provider", "demo", "--agent-bin"])
        .arg(&script)
        .arg("go")
        .env(key, value)
        .env("AGENTTY_STATE_DIR", dir.join("state"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .last()
            .unwrap_or_default()
    });
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    let mut signalled = false;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if let Some(after) = case.stop_after {
            if !signalled && started.elapsed() >= after {
                signalled = true;
                // SAFETY: signalling our own child.
                unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            }
        }
        let hwm = std::fs::read_to_string(&status_file)
            .unwrap_or_default()
            .lines()
            .find(|line| line.starts_with("VmHWM:"))
            .and_then(|line| line.split_whitespace().nth(1)?.parse::<u64>().ok())
            .unwrap_or(0);
        peak_kib = peak_kib.max(hwm);
        std::thread::sleep(Duration::from_millis(2));
    };
    let last = reader.join().unwrap();
    let terminal = serde_json::from_str::<serde_json::Value>(&last)
        .ok()
        .map(|value| {
            let kind = value["type"].as_str().unwrap_or("?").to_owned();
            match value["reason"].as_str().or(value["stop_stage"].as_str()) {
                Some(detail) => format!("{kind} ({detail})"),
                None => kind,
            }
        })
        .unwrap_or_else(|| "no terminal line".into());
    std::thread::sleep(Duration::from_millis(100));
    format!(
        "| {} | {:.1} MiB | {} | {} | {:.2} s | {} |",
        case.name,
        peak_kib as f64 / 1024.0,
        terminal,
        status
            .code()
            .map_or("signal".into(), |code| code.to_string()),
        started.elapsed().as_secs_f64(),
        processes_marked(&marker)
    )
}

fn main() {
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    println!("| agent | agentty peak RSS | terminal message | exit | wall | processes left |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for (index, case) in CASES.iter().enumerate() {
        println!("{}", run_case(dir.path(), index, case));
    }
}
