//! Session logs written by `agentty run`, read back: `agentty replay` reproduces the stream
//! they recorded exactly, for a new log (raw lines in the compressed sidecar) and for a log
//! written by the release before it (raw lines inline); resume reads neither's raw lines; and a
//! turn that echoes a 30 kB paste stays small on disk.

#[path = "../../benches/support/pi_stream.rs"]
mod pi_stream;

use std::path::{Path, PathBuf};
use std::process::Command;

use agentty::session_log::{read_session_log, LogEntry};

fn agentty(state: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentty"));
    command.env("AGENTTY_STATE_DIR", state);
    command
}

/// Runs `agentty run` and returns its stdout and the one session log it wrote.
fn run(state: &Path, args: &[&str]) -> (String, PathBuf) {
    let output = agentty(state).arg("run").args(args).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let logs: Vec<PathBuf> = std::fs::read_dir(state.join("sessions"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "jsonl")
        })
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    (String::from_utf8(output.stdout).unwrap(), logs[0].clone())
}

fn replay(state: &Path, log: &Path) -> String {
    let output = agentty(state).arg("replay").arg(log).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The shared stream a log recorded, as JSON lines.
fn recorded_stream(log: &Path) -> String {
    read_session_log(log)
        .unwrap()
        .iter()
        .filter_map(|entry| match entry {
            LogEntry::Message { message, .. } => Some(format!("{}\n", message.to_json_line())),
            _ => None,
        })
        .collect()
}

/// A stream with each run of consecutive text deltas of one kind joined into one: the log
/// joins deltas that arrive together (a crash-safe window), so its boundaries are its own,
/// while the text is the same.
fn joined_deltas(stream: &str) -> String {
    let mut out: Vec<serde_json::Value> = Vec::new();
    for line in stream.lines() {
        let message: serde_json::Value = serde_json::from_str(line).unwrap();
        let kind = message["type"].as_str().unwrap_or_default().to_owned();
        let joins = matches!(kind.as_str(), "assistant" | "assistant.thinking")
            && out.last().is_some_and(|last| last["type"] == kind);
        if joins {
            let last = out.last_mut().unwrap();
            let text = format!(
                "{}{}",
                last["delta"].as_str().unwrap(),
                message["delta"].as_str().unwrap()
            );
            last["delta"] = serde_json::Value::from(text);
        } else {
            out.push(message);
        }
    }
    out.iter().map(|message| format!("{message}\n")).collect()
}

/// A stream without what the shared stream gained after the previous release: the
/// `assistant.thinking` deltas and the usage's `model` and `reasoning_tokens`.
fn without_later_additions(stream: &str) -> String {
    stream
        .lines()
        .filter_map(|line| {
            let mut message: serde_json::Value = serde_json::from_str(line).unwrap();
            if message["type"] == "assistant.thinking" {
                return None;
            }
            if let Some(usage) = message
                .get_mut("usage")
                .and_then(|usage| usage.as_object_mut())
            {
                usage.remove("model");
                usage.remove("reasoning_tokens");
            }
            Some(format!(
                "{}\n",
                agentty::stream::AgentMessage::from_json_line(&message.to_string())
                    .unwrap()
                    .to_json_line()
            ))
        })
        .collect()
}

fn log_size(log: &Path) -> u64 {
    let sidecar = agentty::session_log::raw::sidecar_path(log);
    std::fs::metadata(log).unwrap().len() + std::fs::metadata(sidecar).map_or(0, |m| m.len())
}

#[test]
fn a_new_log_keeps_raw_lines_in_the_sidecar_and_replays_exactly() {
    let state = tempfile::tempdir().unwrap();
    let (stdout, log) = run(
        state.path(),
        &["--provider", "demo", "--scenario", "thinking", "hi"],
    );
    assert!(
        stdout.contains("\"type\":\"assistant.thought\""),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("\"kind\":\"raw\""), "raw lines left inline");
    assert!(agentty::session_log::raw::sidecar_path(&log).exists());
    assert_eq!(
        joined_deltas(&recorded_stream(&log)),
        joined_deltas(&stdout)
    );
    assert_eq!(replay(state.path(), &log), stdout);
    let sidecar = agentty::session_log::raw::sidecar_path(&log);
    assert_eq!(replay(state.path(), &sidecar), stdout);
}

#[test]
fn a_log_written_by_the_previous_release_still_replays_and_resumes() {
    let state = tempfile::tempdir().unwrap();
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/session_log_v1.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("\"kind\":\"raw\""),
        "the fixture is an old log"
    );
    let stream = recorded_stream(&log);
    assert!(stream.contains("\"type\":\"assistant.thought\""));
    // The mapper has learnt more since the old release wrote this log (live thinking deltas,
    // the model in the usage): the replay is the recorded stream plus only those additions.
    assert_eq!(without_later_additions(&replay(state.path(), &log)), stream);

    let entries = read_session_log(&log).unwrap();
    assert!(entries
        .iter()
        .all(|entry| !matches!(entry, LogEntry::Raw { .. })));
    let summary = agentty::session_log::read_summary(&log).expect("a conversation");
    assert_eq!(summary.provider, "demo");
    assert!(summary.session_id.is_some());
    let resumed = agentty::app::resume::load(summary).unwrap();
    assert!(!resumed.events.is_empty());
}

/// The measure: echoing a 30 kB paste (about 3,750 updates, two cumulative snapshots in
/// each) wrote 111 MB of log; the target is at most 2 MB.
#[test]
fn a_turn_that_echoes_a_30_kb_paste_logs_under_2_mb_and_replays_exactly() {
    let state = tempfile::tempdir().unwrap();
    let lines = pi_stream::pi_stream(30 * 1024, 3750);
    let raw_bytes: usize = lines.iter().map(|line| line.len() + 1).sum();
    let stream = state.path().join("echo.jsonl");
    std::fs::write(&stream, lines.join("\n") + "\n").unwrap();
    let agent = state.path().join("agent.sh");
    std::fs::write(
        &agent,
        format!("#!/bin/sh\nexec cat '{}'\n", stream.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();

    let (stdout, log) = run(
        state.path(),
        &[
            "--provider",
            "pi",
            "--agent-bin",
            agent.to_str().unwrap(),
            "echo",
        ],
    );
    let size = log_size(&log);
    eprintln!(
        "30 kB echo: raw stream {raw_bytes} bytes, session log {size} bytes ({} in the sidecar)",
        size - std::fs::metadata(&log).unwrap().len()
    );
    assert!(
        raw_bytes > 100_000_000 / 2,
        "the stream is the issue's size"
    );
    assert!(size <= 2_000_000, "session log of {size} bytes");
    assert_eq!(
        joined_deltas(&recorded_stream(&log)),
        joined_deltas(&stdout)
    );
    assert_eq!(replay(state.path(), &log), stdout);
}

/// `agentty replay` of a log whose sidecar is missing or damaged says so, and makes up no end.
#[test]
fn replay_says_when_the_sidecar_is_missing_or_damaged_and_invents_no_ending() {
    let state = tempfile::tempdir().unwrap();
    // A long answer, so that the sidecar is long enough to cut in two.
    let (stdout, log) = run(
        state.path(),
        &["--provider", "demo", "--scenario", "markdown", "hi"],
    );
    let sidecar = agentty::session_log::raw::sidecar_path(&log);
    let whole = std::fs::read(&sidecar).unwrap();

    // Damaged: cut in the middle, as a crash (or a full disk) leaves it.
    std::fs::write(&sidecar, &whole[..whole.len() / 2]).unwrap();
    let output = agentty(state.path())
        .arg("replay")
        .arg(&log)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let replayed = String::from_utf8(output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is damaged"), "{stderr}");
    assert!(stderr.contains(sidecar.to_str().unwrap()), "{stderr}");
    assert!(
        !replayed.contains("terminal."),
        "no ending made up:\n{replayed}"
    );
    assert!(
        stdout.starts_with(&replayed),
        "what could be read is what was recorded"
    );

    // Missing.
    std::fs::remove_file(&sidecar).unwrap();
    let output = agentty(state.path())
        .arg("replay")
        .arg(&log)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("are missing"), "{stderr}");
    assert!(stderr.contains(sidecar.to_str().unwrap()), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "",
        "nothing made up"
    );
}
