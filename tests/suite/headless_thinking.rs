//! `agentty run` prints thinking twice, as the shared stream defines it: live
//! `assistant.thinking` deltas while it streams (display only) and the complete
//! `assistant.thought` once the message ends.

use std::process::Command;

use agentty::stream::AgentMessage;

#[test]
fn headless_prints_live_thinking_and_the_whole_thought() {
    let scratch = tempfile::tempdir().unwrap();
    let state = scratch.path();
    let output = Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(["run", "--provider", "demo", "--scenario", "thinking", "hi"])
        .env("AGENTTY_STATE_DIR", state)
        .env("XDG_CONFIG_HOME", state.join("config"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let messages: Vec<AgentMessage> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| AgentMessage::from_json_line(line).unwrap())
        .collect();
    let streamed: String = messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::Thinking { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    let thoughts: Vec<&str> = messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::Thought { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thoughts.len(), 1, "{messages:#?}");
    assert!(!streamed.is_empty());
    assert_eq!(streamed, thoughts[0]);
    // The live deltas come first, before any answer text; the whole thought after it.
    let first_thinking = messages
        .iter()
        .position(|message| matches!(message, AgentMessage::Thinking { .. }))
        .unwrap();
    let first_text = messages
        .iter()
        .position(|message| matches!(message, AgentMessage::Assistant { .. }))
        .unwrap();
    let thought = messages
        .iter()
        .position(|message| matches!(message, AgentMessage::Thought { .. }))
        .unwrap();
    assert!(
        first_thinking < first_text && first_text < thought,
        "{messages:#?}"
    );
}
