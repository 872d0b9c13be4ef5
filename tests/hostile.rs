//! The hostile-agent catalogue at the process and runner level: whatever the agent does, the
//! stream ends with exactly one terminal message, memory stays bounded, and no process is left.
//! (Cases that need a stop or a flood are in tests/process.rs and tests/line_memory.rs.)

#[path = "support/script_agent.rs"]
mod script_agent;

use std::time::{Duration, Instant};

use agentty::provider::{Provider, StopControl};
use agentty::stream::{AgentMessage, StopStage};
use script_agent::*;

const COMPLETED: &str = r#"{"type":"terminal.completed","stop_reason":"stop"}"#;

#[tokio::test]
async fn invalid_utf8_nul_bytes_and_cr_only_line_endings_are_survived() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "agent",
        &format!(
            r#"printf '\377\376 not utf-8\n'
printf 'nul\000inside\n'
printf '{{"type":"assistant","delta":"one"}}\r{{"type":"assistant","delta":"two"}}\r'
printf '{{"type":"assistant","delta":"caf\303\251"}}\r\n'
echo '{COMPLETED}'"#
        ),
    );
    let messages = run_script(&script, "hi").await;
    assert!(
        matches!(terminal(&messages), AgentMessage::Completed { .. }),
        "{messages:?}"
    );
    let text: String = messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::Assistant { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "onetwocafé");
}

#[tokio::test]
async fn invalid_lines_are_reported_with_replacement_characters_when_the_attempt_fails() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "agent",
        "printf '\\377bad\\n'\nprintf 'nul\\000x\\n'\nexit 2",
    );
    let messages = run_script(&script, "hi").await;
    let AgentMessage::Failed(failure) = terminal(&messages) else {
        panic!("expected terminal.failed, got {messages:?}");
    };
    assert_eq!(failure.invalid_output_lines, ["\u{fffd}bad", "nul\0x"]);
}

#[tokio::test]
async fn thousands_of_invalid_lines_keep_a_bounded_sample() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "agent",
        "i=0\nwhile [ $i -lt 5000 ]; do echo \"garbage $i\"; i=$((i+1)); done\nexit 1",
    );
    let messages = run_script(&script, "hi").await;
    let AgentMessage::Failed(failure) = terminal(&messages) else {
        panic!("expected terminal.failed, got {messages:?}");
    };
    let kept = &failure.invalid_output_lines;
    assert_eq!(kept.len(), agentty::provider::runner::MAX_INVALID_LINES + 1);
    assert_eq!(kept[0], "garbage 0");
    assert_eq!(kept.last().unwrap(), "[… 4900 more invalid lines not kept]");
}

#[tokio::test]
async fn an_agent_that_exits_between_our_sigint_and_sigkill_ends_in_the_grace_stage() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    // Ignores the interrupt, then gives up on its own after about a second.
    let script = write_script(
        dir.path(),
        "agent",
        &format!(
            "trap 'sleep 1; exit 0' INT\necho $$ > '{}'\nwhile :; do sleep 0.05; done",
            pid_file.display()
        ),
    );
    let stop = StopControl::new();
    let collecting = tokio::spawn(collect(
        provider_for(&script).execute(request("go"), stop.clone()),
    ));
    let pids = read_pids(&pid_file).await;
    let started = Instant::now();
    stop.stop();
    let messages = collecting.await.unwrap();
    let AgentMessage::Cancelled {
        stop_stage,
        elapsed_ms,
    } = terminal(&messages)
    else {
        panic!("expected terminal.cancelled, got {messages:?}");
    };
    assert_eq!(*stop_stage, StopStage::Grace);
    assert!((250..2000).contains(elapsed_ms), "{elapsed_ms} ms");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(process_gone(pids[0]));
}

#[tokio::test]
async fn escape_sequences_pass_through_the_stream_unchanged_for_the_ui_to_neutralise() {
    // The stream carries the agent's text as data; the view layer neutralises it (tested there).
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "agent",
        &format!(
            r#"echo '{{"type":"assistant","delta":"\u001b[2J\u001b]0;pwned\u0007"}}'
echo '{COMPLETED}'"#
        ),
    );
    let messages = run_script(&script, "hi").await;
    assert_eq!(
        messages[0],
        AgentMessage::Assistant {
            delta: "\u{1b}[2J\u{1b}]0;pwned\u{7}".into()
        }
    );
    // On the wire (headless output) the control characters are JSON-escaped, never raw.
    let line = messages[0].to_json_line();
    assert!(
        !line.contains('\u{1b}') && line.contains("\\u001b[2J"),
        "{line}"
    );
}
