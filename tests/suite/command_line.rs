//! The command line as people type it, each checked on the real binary: `--version`, shell
//! completions, `agentty run -` (the prompt from stdin), `agentty run --format text`, a failed
//! turn said on stderr, and a reader that closes the pipe early.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `agentty ARGS` with a state dir and config dir of its own (the user's config is not read).
fn agentty(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentty"));
    command
        .args(args)
        .env("AGENTTY_STATE_DIR", dir.join("state"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("HOME", dir);
    command
}

fn run(dir: &Path, args: &[&str]) -> Output {
    agentty(dir, args).stdin(Stdio::null()).output().unwrap()
}

/// The answer of a JSON-lines run: its `assistant` deltas, joined.
fn answer_of(stdout: &[u8]) -> String {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|message| message["type"] == "assistant")
        .map(|message| message["delta"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn version_prints_the_crate_version() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["--version"]);
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        stdout.trim(),
        format!("agentty {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn completions_are_printed_for_bash_zsh_and_fish() {
    let dir = tempfile::tempdir().unwrap();
    for (shell, marker) in [
        ("bash", "complete -F _agentty"),
        ("zsh", "#compdef agentty"),
        ("fish", "complete -c agentty"),
    ] {
        let output = run(dir.path(), &["completions", shell]);
        assert_eq!(output.status.code(), Some(0), "{shell}");
        let script = String::from_utf8_lossy(&output.stdout);
        assert!(script.contains(marker), "{shell}: {script}");
        // The subcommands and flags are in it.
        for word in ["run", "provider", "resume", "completions"] {
            assert!(script.contains(word), "{shell} lacks {word}");
        }
    }
    let unknown = run(dir.path(), &["completions", "tcsh"]);
    assert_eq!(unknown.status.code(), Some(2));
}

#[test]
fn run_dash_reads_the_prompt_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = agentty(dir.path(), &["run", "--provider", "demo", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"the prompt came through the pipe\nand its second line\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer = answer_of(&output.stdout);
    // The demo agent quotes the prompt it was sent.
    assert!(
        answer.contains("the prompt came through the pipe"),
        "{answer}"
    );
    assert!(answer.contains("and its second line"), "{answer}");
}

#[test]
fn run_dash_with_an_empty_stdin_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["run", "--provider", "demo", "-"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("agentty: empty prompt"), "{stderr}");
}

#[test]
fn run_format_text_prints_the_answer_alone() {
    let dir = tempfile::tempdir().unwrap();
    let json = run(dir.path(), &["run", "--provider", "demo", "say hello"]);
    let text = run(
        dir.path(),
        &["run", "--format", "text", "--provider", "demo", "say hello"],
    );
    assert_eq!(text.status.code(), Some(0));
    let printed = String::from_utf8_lossy(&text.stdout);
    let answer = answer_of(&json.stdout);
    assert!(answer.contains("You wrote:"), "{answer}");
    // The same answer (its session line differs from run to run), as plain text.
    let strip_session = |text: &str| {
        text.lines()
            .filter(|line| !line.contains("in session"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip_session(&printed), strip_session(answer.trim_end()));
    assert!(!printed.contains("\"type\""), "{printed}");
}

#[test]
fn run_format_text_says_a_failure_on_stderr_with_the_same_status() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(
        dir.path(),
        &[
            "run",
            "--format",
            "text",
            "--provider",
            "demo",
            "--scenario",
            "auth-error",
            "hi",
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty(), "{:?}", output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("401 Incorrect API key"), "{stderr}");
}

#[test]
fn a_failed_run_says_why_on_stderr_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(
        dir.path(),
        &[
            "run",
            "--provider",
            "demo",
            "--scenario",
            "auth-error",
            "hi",
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr.trim_end().lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with("agentty: the turn failed (agent_error): ")
            && lines[0].contains("401 Incorrect API key"),
        "{stderr}"
    );
    // stdout still ends with the terminal message.
    let last = String::from_utf8_lossy(&output.stdout)
        .lines()
        .last()
        .map(str::to_owned)
        .unwrap_or_default();
    assert!(last.contains("\"terminal.failed\""), "{last}");
}

#[test]
fn a_closed_stdout_stops_the_agent_and_exits_141_not_130() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = agentty(
        dir.path(),
        &["run", "--provider", "demo", "--scenario", "slow", "go"],
    )
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let started = Instant::now();
    {
        // `| head -2`: two lines read, then the pipe closed.
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        for _ in 0..2 {
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            assert!(line.starts_with('{'), "{line}");
        }
    }
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "agentty kept running after its reader left"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(141));
}

/// `demo-agent --help` says everything an installed binary offers: every mode (Codex's
/// app-server among them) and every mode's scenarios, from the binary itself (no `assets/`
/// path), and none of the chat's options, which the demo agent does not take.
#[test]
fn demo_agent_help_lists_every_mode_and_scenario_and_no_chat_option() {
    let dir = tempfile::tempdir().unwrap();
    let output = agentty(dir.path(), &["demo-agent", "--help"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for said in [
        "codex-app-server",
        "claude-stream",
        "--mode acp:",
        "permission-delayed",
        "cut-stream",
        "--mode codex-app-server: hello, think, tool, write, slow, sleep, flaky",
        "rate-limit",
        "flaky-twice",
    ] {
        assert!(help.contains(said), "{said:?} missing:\n{help}");
    }
    for not_said in [
        "assets/scenarios",
        "--provider <",
        "--transport <",
        "--agent-bin",
        "--model",
        "--config",
    ] {
        assert!(!help.contains(not_said), "{not_said:?} listed:\n{help}");
    }
    // The agent options given before `run` still count.
    let output = agentty(
        dir.path(),
        &["--provider", "demo", "run", "--max-attempts", "1", "hi"],
    )
    .output()
    .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains(r#""provider":"demo""#));
}

/// agentty's own lines are written fallibly: with nobody left to read its stderr, a run still
/// ends with the status it earned (a usage error's 2), never a panic's 101.
#[test]
fn a_closed_stderr_is_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = agentty(dir.path(), &["run", "--provider", "no-such-agent", "hi"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(writer)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
}
