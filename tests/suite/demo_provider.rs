//! The demo provider end to end: the real binary runs its own demo agent as a child process and
//! maps it through the real pi mapper.

use std::process::Command;

use agentty::stream::AgentMessage;
use serde_json::Value;

fn agentty(args: &[&str]) -> std::process::Output {
    let state = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(args)
        .env("AGENTTY_STATE_DIR", state.path())
        .env("AGENTTY_DEMO_STATE_DIR", state.path())
        .env("AGENTTY_DEMO_TIME_SCALE", "0.02")
        .output()
        .unwrap()
}

fn stream(output: &std::process::Output) -> Vec<AgentMessage> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| AgentMessage::from_json_line(line).unwrap())
        .collect()
}

use agentty::stream::assistant_text;

/// The text of each assistant `message_end` the demo agent itself printed.
fn agent_texts(scenario: &str, prompt: &str) -> Vec<String> {
    let raw = agentty(&[
        "demo-agent",
        "--mode",
        "json",
        "--scenario",
        scenario,
        prompt,
    ]);
    String::from_utf8_lossy(&raw.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "message_end" && event["message"]["role"] == "assistant")
        .flat_map(|event| {
            event["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|block| block["type"] == "text")
                .map(|block| block["text"].as_str().unwrap_or_default().to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn run_on_the_demo_provider_prints_a_valid_stream_ending_completed() {
    let output = agentty(&["run", "--provider", "demo", "hi"]);
    assert_eq!(output.status.code(), Some(0));
    let messages = stream(&output);
    assert!(
        matches!(messages.first(), Some(AgentMessage::SessionStarted { provider, .. }) if provider == "demo")
    );
    assert!(matches!(
        messages.last(),
        Some(AgentMessage::Completed { .. })
    ));
    assert_eq!(
        messages
            .iter()
            .filter(|message| message.is_terminal())
            .count(),
        1
    );
    assert!(
        assistant_text(&messages).contains("> hi"),
        "the answer quotes the prompt"
    );
}

#[test]
fn the_legacy_replay_scenario_maps_to_its_text_without_duplicates() {
    // Older pi replays the first message's text at the start of the message after the tool
    // turn, so the last message holds the whole answer and the first is its prefix.
    let texts = agent_texts("legacy-replay", "hi");
    let [first, last] = texts.as_slice() else {
        panic!("expected two assistant messages, got {texts:?}");
    };
    assert!(last.starts_with(first.as_str()) && last.len() > first.len());
    let output = agentty(&[
        "run",
        "--provider",
        "demo",
        "--scenario",
        "legacy-replay",
        "hi",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let messages = stream(&output);
    let shown = assistant_text(&messages);
    assert_eq!(&shown, last);
    assert_eq!(shown.matches(first.as_str()).count(), 1);
    assert!(messages
        .iter()
        .any(|message| matches!(message, AgentMessage::ToolCall { .. })));
}

#[test]
fn every_scenario_ends_with_exactly_one_terminal_message() {
    for (scenario, exit) in [
        ("hello", 0),
        ("thinking", 0),
        ("tool", 0),
        ("markdown", 0),
        ("bad-lines", 0),
        ("crash", 1),
        ("rate-limit", 1),
        ("auth-error", 1),
    ] {
        // One attempt each (a failure is retried by default): its stream ends once.
        let output = agentty(&[
            "run",
            "--provider",
            "demo",
            "--max-attempts",
            "1",
            "--scenario",
            scenario,
            "hi",
        ]);
        assert_eq!(output.status.code(), Some(exit), "{scenario}");
        let messages = stream(&output);
        assert_eq!(
            messages
                .iter()
                .filter(|message| message.is_terminal())
                .count(),
            1,
            "{scenario}"
        );
        assert!(messages.last().unwrap().is_terminal(), "{scenario}");
        if scenario == "auth-error" {
            let AgentMessage::Failed(failure) = messages.last().unwrap() else {
                unreachable!()
            };
            assert_eq!(failure.http_status, Some(401));
        }
        if scenario == "thinking" {
            assert!(messages
                .iter()
                .any(|message| matches!(message, AgentMessage::Thought { .. })));
        }
    }
}

fn retry_lines(messages: &[AgentMessage]) -> usize {
    messages
        .iter()
        .filter(|message| matches!(message, AgentMessage::RetryScheduled { .. }))
        .count()
}

#[test]
fn headless_retries_a_flaky_agent_with_a_retry_scheduled_line_between_attempts() {
    let output = agentty(&[
        "run",
        "--provider",
        "demo",
        "--scenario",
        "flaky",
        "--max-attempts",
        "3",
        "hi",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let messages = stream(&output);
    assert_eq!(retry_lines(&messages), 1);
    let retry_at = messages
        .iter()
        .position(|message| {
            matches!(
                message,
                AgentMessage::RetryScheduled {
                    attempt: 2,
                    max_attempts: 3,
                    ..
                }
            )
        })
        .unwrap();
    assert!(
        matches!(messages[retry_at - 1], AgentMessage::Failed(_)),
        "the first attempt's terminal precedes the retry"
    );
    assert!(matches!(
        messages.last(),
        Some(AgentMessage::Completed { .. })
    ));
}

#[test]
fn max_attempts_1_means_no_retry_and_the_final_attempts_status() {
    let output = agentty(&[
        "run",
        "--provider",
        "demo",
        "--scenario",
        "flaky",
        "--max-attempts",
        "1",
        "hi",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(retry_lines(&stream(&output)), 0);
}

#[test]
fn a_non_retryable_failure_is_not_retried_even_when_retry_is_enabled() {
    let output = agentty(&[
        "run",
        "--provider",
        "demo",
        "--scenario",
        "auth-error",
        "--max-attempts",
        "3",
        "hi",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let messages = stream(&output);
    assert_eq!(retry_lines(&messages), 0);
    assert_eq!(
        messages
            .iter()
            .filter(|message| message.is_terminal())
            .count(),
        1
    );
}

#[test]
fn replay_maps_a_session_log_again_to_the_same_stream() {
    let state = tempfile::tempdir().unwrap();
    let demo_state = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(["run", "--provider", "demo", "--scenario", "tool", "hi"])
        .env("AGENTTY_STATE_DIR", state.path())
        .env("AGENTTY_DEMO_STATE_DIR", demo_state.path())
        .env("AGENTTY_DEMO_TIME_SCALE", "0.02")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0));
    let log = agentty::session_log::latest_session_log(&state.path().join("sessions")).unwrap();
    let replayed = Command::new(env!("CARGO_BIN_EXE_agentty"))
        .arg("replay")
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(
        replayed.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&replayed.stdout),
        String::from_utf8_lossy(&replayed.stderr)
    );
    // The same mapper on the same raw lines gives the same stream.
    assert_eq!(stream(&replayed), stream(&run));
}
