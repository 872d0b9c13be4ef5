//! `agentty run` as scripts use it: JSON lines on stdout, exit statuses, and signals to agentty
//! that stop the agent's whole tree.

use crate::support::script_agent;

use std::process::{Command, Stdio};

use agentty::stream::{AgentMessage, StopStage};
use script_agent::{assert_all_gone, pid_script, read_pids_blocking};

fn agentty() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentty"));
    command.env(
        "AGENTTY_STATE_DIR",
        std::env::temp_dir().join("agentty-test-state"),
    );
    command
}

fn parse_stream(stdout: &[u8]) -> Vec<AgentMessage> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| {
            AgentMessage::from_json_line(line)
                .unwrap_or_else(|error| panic!("bad line {line:?}: {error}"))
        })
        .collect()
}

#[test]
fn usage_errors_exit_2() {
    let no_prompt = agentty().arg("run").output().unwrap();
    assert_eq!(no_prompt.status.code(), Some(2));
    let bad_provider = agentty()
        .args(["run", "--provider", "nope", "hi"])
        .output()
        .unwrap();
    assert_eq!(bad_provider.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_provider.stderr).contains("unknown provider `nope`"));
}

#[test]
fn a_missing_agent_binary_prints_start_failed_and_exits_1() {
    let output = agentty()
        .args([
            "run",
            "--provider",
            "pi",
            "--agent-bin",
            "/nonexistent/pi",
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let messages = parse_stream(&output.stdout);
    let [AgentMessage::Failed(failure)] = messages.as_slice() else {
        panic!("expected one terminal.failed line, got {messages:?}");
    };
    assert_eq!(failure.reason, "start_failed");
}

/// Runs `agentty run` on an agent script that starts a setsid'd tool child and a grandchild
/// in its group, sends `signal` to agentty, and checks the stream, the exit status and that
/// no process is left.
fn signal_mid_turn_leaves_nothing_behind(signal: nix::sys::signal::Signal) {
    signal_mid_turn_leaves_nothing_behind_when(signal, false);
}

/// As above; with `sigint_ignored`, agentty starts with SIGINT ignored.
fn signal_mid_turn_leaves_nothing_behind_when(
    signal: nix::sys::signal::Signal,
    sigint_ignored: bool,
) {
    use std::os::unix::process::CommandExt;
    let agent = pid_script(|pids| {
        format!(
            "setsid sleep 300 &\ntool=$!\nsleep 300 &\necho \"$$ $tool $!\" > '{pids}'\nwhile :; do sleep 0.05; done"
        )
    });
    let mut command = agentty();
    command
        .args(["run", "--provider", "demo", "--agent-bin"])
        .arg(&agent.script)
        .arg("hello")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if sigint_ignored {
        // SAFETY: signal(2) is async-signal-safe, as required between fork and exec.
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                Ok(())
            });
        }
    }
    let child = command.spawn().unwrap();
    let pids = read_pids_blocking(&agent.pid_file);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130));
    let messages = parse_stream(&output.stdout);
    assert!(
        matches!(
            messages.last(),
            Some(AgentMessage::Cancelled {
                stop_stage: StopStage::Interrupt,
                ..
            })
        ),
        "{messages:?}"
    );
    assert_eq!(pids.len(), 3);
    assert_all_gone(&pids, &format!("agentty's {signal}"));
}

/// `agentty run … &` in a script starts agentty with SIGINT ignored (a shell without job
/// control does that to background commands), and an ignored signal stays ignored across
/// `exec`: the agent still stops at the interrupt, not after the grace.
#[test]
fn an_agentty_started_with_sigint_ignored_still_interrupts_its_agent() {
    signal_mid_turn_leaves_nothing_behind_when(nix::sys::signal::Signal::SIGTERM, true);
}

#[test]
fn sigterm_to_agentty_mid_turn_stops_the_agent_tree() {
    signal_mid_turn_leaves_nothing_behind(nix::sys::signal::Signal::SIGTERM);
}

#[test]
fn sigint_to_agentty_mid_turn_stops_the_agent_tree() {
    signal_mid_turn_leaves_nothing_behind(nix::sys::signal::Signal::SIGINT);
}

#[test]
fn sighup_to_agentty_mid_turn_stops_the_agent_tree() {
    signal_mid_turn_leaves_nothing_behind(nix::sys::signal::Signal::SIGHUP);
}

/// SIGQUIT's default action would dump core and leave the agent running.
#[test]
fn sigquit_to_agentty_mid_turn_stops_the_agent_tree() {
    signal_mid_turn_leaves_nothing_behind(nix::sys::signal::Signal::SIGQUIT);
}

/// Whatever the agent writes, `agentty run`'s JSON lines hold no raw control character: C1
/// controls (U+009B is a CSI to many terminals) and bidirectional overrides are escaped like
/// ESC is, and the text reads back the same.
#[test]
fn json_lines_escape_c1_and_bidi_controls() {
    let dir = tempfile::tempdir().unwrap();
    let text = "red\u{9b}31m \u{202e}desrever\u{202c} \u{1b}[2J done";
    let stream = [
        serde_json::json!({"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}),
        serde_json::json!({"type":"agent_start"}),
        serde_json::json!({"type":"message_end","message":{"role":"assistant",
            "content":[{"type":"text","text":text}],"stopReason":"stop"}}),
        serde_json::json!({"type":"agent_end","messages":[]}),
    ]
    .map(|line| line.to_string())
    .join("\n");
    let capture = dir.path().join("stream.jsonl");
    std::fs::write(&capture, format!("{stream}\n")).unwrap();
    let agent = crate::support::script_agent::write_script(
        dir.path(),
        "agent",
        &format!("cat '{}'", capture.display()),
    );
    let output = agentty()
        .args(["run", "--provider", "pi", "--agent-bin"])
        .arg(&agent)
        .arg("go")
        .env("AGENTTY_STATE_DIR", dir.path().join("state"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let raw: Vec<char> = stdout
        .chars()
        .filter(|ch| {
            (ch.is_control() && *ch != '\n')
                || ('\u{202a}'..='\u{202e}').contains(ch)
                || ('\u{2066}'..='\u{2069}').contains(ch)
        })
        .collect();
    assert!(raw.is_empty(), "raw controls {raw:?} in:\n{stdout}");
    for escaped in ["\\u009b", "\\u202e", "\\u001b"] {
        assert!(stdout.contains(escaped), "{escaped} in:\n{stdout}");
    }
    let answer: String = parse_stream(stdout.as_bytes())
        .iter()
        .filter_map(|message| message.assistant_delta().map(str::to_owned))
        .collect();
    assert_eq!(answer, text);
}
