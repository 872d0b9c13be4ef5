//! Captures of the real `codex app-server` (Codex CLI 0.171.0, tests/fixtures/codex_app_server/)
//! replayed through the app-server mapper as the transport does: Codex's lines after the turn's
//! `turn/start` in order, agentty's answers to Codex's requests as client lines, then the
//! terminal message composed from the turn's end. Each capture is checked for what it shows and
//! for the shared stream's rules.

use crate::support::replay;

use std::path::PathBuf;

use agentty::process::{ExitReport, Line};
use agentty::provider::codex::app_server::AppServerMapper;
use agentty::provider::runner::{AttemptMapping, EndedBy};
use agentty::stream::{AgentMessage, FailureReason, PermissionOptionKind};
use serde_json::Value;

fn fixture(name: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/codex_app_server")
        .join(format!("{name}.jsonl"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
        .lines()
        .map(|line| serde_json::from_str(line).expect("a capture line"))
        .collect()
}

/// The turn of capture `name` through the mapper: its messages and terminal message.
fn replay_turn(name: &str) -> (Vec<AgentMessage>, AgentMessage) {
    replay_nth_turn(name, 0)
}

/// Turn `nth` (from 0) of capture `name` through the mapper.
fn replay_nth_turn(name: &str, nth: usize) -> (Vec<AgentMessage>, AgentMessage) {
    let lines = fixture(name);
    let start = lines
        .iter()
        .enumerate()
        .filter(|(_, line)| line["dir"] == "out" && line["msg"]["method"] == "turn/start")
        .nth(nth)
        .map(|(index, _)| index)
        .expect("the turn/start");
    let prompt = lines[start]["msg"]["params"]["input"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut mapping = AttemptMapping::new(Box::new(AppServerMapper::new(&prompt)));
    let mut out = Vec::new();
    for line in &lines[start + 1..] {
        let text = line["msg"].to_string();
        if line["dir"] == "in" {
            mapping.map_line(
                &Line {
                    original_len: text.len(),
                    text,
                    truncated: false,
                },
                &mut out,
            );
            if mapping.outcome_reported() {
                break;
            }
        } else if line["msg"].get("result").is_some() {
            mapping.map_client_line(&text, &mut out);
        }
    }
    let report = ExitReport {
        exit_code: Some(0),
        ..ExitReport::default()
    };
    let terminal = mapping.finish(&report, EndedBy::Exit, String::new(), &mut out);
    let violations = replay::stream_violations(&out);
    assert!(violations.is_empty(), "{name}: {violations:?}");
    (out, terminal)
}

fn text(messages: &[AgentMessage]) -> String {
    messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::Assistant { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

fn notices<'m>(messages: &'m [AgentMessage], wanted: &str) -> Vec<&'m str> {
    messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::Notice { kind, message } if kind == wanted => Some(message.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn text_streams_as_deltas_with_the_turns_usage() {
    let (out, terminal) = replay_turn("text");
    assert_eq!(text(&out), "Hello from fake.");
    let deltas = out
        .iter()
        .filter(|message| matches!(message, AgentMessage::Assistant { .. }))
        .count();
    assert_eq!(deltas, 4, "live deltas, not one block at the end");
    assert_eq!(
        notices(&out, "warning").len(),
        1,
        "the model-metadata warning"
    );
    let AgentMessage::Completed { usage, .. } = terminal else {
        panic!("{terminal:?}")
    };
    let usage = usage.expect("usage");
    assert_eq!(
        (usage.input_tokens, usage.output_tokens),
        (Some(12), Some(7))
    );
}

#[test]
fn reasoning_streams_as_thinking_then_is_one_thought() {
    let (out, _) = replay_turn("reasoning");
    let thinking: String = out
        .iter()
        .filter_map(|message| match message {
            AgentMessage::Thinking { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        thinking.contains("**Thinking about greeting**"),
        "{thinking:?}"
    );
    let thoughts: Vec<&AgentMessage> = out
        .iter()
        .filter(|message| matches!(message, AgentMessage::Thought { .. }))
        .collect();
    assert_eq!(thoughts.len(), 1, "{out:?}");
    assert_eq!(text(&out), "After thinking: hello!");
}

#[test]
fn a_command_is_a_tool_call_with_its_output() {
    let (out, terminal) = replay_turn("tool_echo");
    assert!(out.iter().any(|message| matches!(message,
        AgentMessage::ToolCall { name, input, .. } if name == "shell" && input["command"] == "echo hi")));
    assert!(out.iter().any(|message| matches!(message,
        AgentMessage::ToolCompleted { output, .. } if output == "hi\n")));
    // Two model requests: the turn's usage is their sum.
    let AgentMessage::Completed { usage, .. } = terminal else {
        panic!("{terminal:?}")
    };
    assert_eq!(usage.and_then(|usage| usage.input_tokens), Some(24));
}

#[test]
fn an_approval_is_a_permission_request_with_codexs_decisions() {
    let (out, terminal) = replay_turn("approval_accept");
    let request = out
        .iter()
        .find_map(|message| match message {
            AgentMessage::PermissionRequest(request) => Some(request),
            _ => None,
        })
        .expect("a permission request");
    assert_eq!(request.kind, "execute");
    assert_eq!(request.command.as_deref(), Some("touch probe.txt"));
    assert!(request.tool_call_id.is_some());
    let allow_once = request.option_of(PermissionOptionKind::AllowOnce).unwrap();
    assert_eq!(allow_once.id, "accept");
    // Codex offered no plain "decline"; agentty offers it (the turn goes on) before "cancel".
    let rejects: Vec<&str> = request
        .options
        .iter()
        .filter(|option| option.kind == PermissionOptionKind::RejectOnce)
        .map(|option| option.id.as_str())
        .collect();
    assert_eq!(rejects, ["decline", "cancel"]);
    assert!(out
        .iter()
        .any(|message| matches!(message, AgentMessage::ToolCompleted { .. })));
    assert!(matches!(terminal, AgentMessage::Completed { .. }));
}

#[test]
fn a_declined_command_fails_and_the_turn_goes_on() {
    let (out, terminal) = replay_turn("approval_decline");
    assert!(out.iter().any(|message| matches!(message,
        AgentMessage::ToolFailed { error, .. } if error.contains("declined"))));
    assert_eq!(text(&out), "Hello from fake.");
    assert!(matches!(terminal, AgentMessage::Completed { .. }));
}

#[test]
fn a_refusal_that_stops_the_turn_says_so() {
    let (out, terminal) = replay_turn("approval_cancel");
    assert_eq!(
        notices(&out, "warning").last().copied(),
        Some("Codex stopped the turn: you refused what it asked to do.")
    );
    assert!(
        matches!(&terminal, AgentMessage::Completed { stop_reason, .. } if stop_reason == "refused"),
        "{terminal:?}"
    );
}

#[test]
fn an_interrupted_turn_is_not_a_success() {
    let (out, terminal) = replay_turn("interrupt");
    assert!(
        !text(&out).is_empty(),
        "the text before the interrupt stands"
    );
    // Without agentty's stop behind it the transport would not call it cancelled; the mapper
    // reports the abort (the transport turns it into `terminal.cancelled` after a stop).
    assert!(matches!(terminal, AgentMessage::Failed(_)), "{terminal:?}");
}

#[test]
fn a_steer_reaching_the_model_is_said() {
    let (out, terminal) = replay_turn("steer");
    assert_eq!(notices(&out, "steer_delivered"), ["steer: say bye"]);
    assert!(matches!(terminal, AgentMessage::Completed { .. }));
}

#[test]
fn an_http_500_fails_with_the_status() {
    let (_, terminal) = replay_turn("http500");
    let AgentMessage::Failed(failure) = terminal else {
        panic!("{terminal:?}")
    };
    assert_eq!(failure.reason, FailureReason::AgentError);
    assert_eq!(failure.http_status, Some(500));
}

/// The capture `thread/revert` is built on: after a failed turn and a revert to before it,
/// Codex's next model request carries the failed prompt once.
#[test]
fn after_a_revert_codex_sends_the_retried_prompt_once() {
    let lines = fixture("revert_after_failure");
    let unknown_rollback = lines.iter().any(|line| {
        line["msg"]["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("unknown variant `thread/rollback`"))
    });
    assert!(
        unknown_rollback,
        "0.171 has thread/revert, not thread/rollback"
    );
    assert!(lines
        .iter()
        .any(|line| line["msg"]["method"] == "thread/reverted"));
    let requests = fixture("revert_after_failure.server");
    let users: Vec<Vec<&str>> = requests
        .iter()
        .filter_map(|request| request["users"].as_array())
        .map(|users| users.iter().filter_map(Value::as_str).collect())
        .collect();
    let last = users.last().expect("requests");
    assert_eq!(
        last.iter()
            .filter(|text| **text == "this will fail")
            .count(),
        1,
        "{users:?}"
    );
}

#[test]
fn a_file_change_asks_with_its_diff_and_a_declined_one_is_not_applied() {
    let (added, terminal) = replay_nth_turn("file_change", 0);
    let request = added
        .iter()
        .find_map(|message| match message {
            AgentMessage::PermissionRequest(request) => Some(request),
            _ => None,
        })
        .expect("a permission request");
    assert_eq!(request.kind, "edit");
    assert!(request.paths[0].ends_with("hello.txt"), "{request:?}");
    assert_eq!(request.diffs[0].old_text, None);
    assert_eq!(request.diffs[0].new_text, "hello from a patch\n");
    // The output shows the change itself: the new file's lines.
    assert!(
        added.iter().any(|message| matches!(message,
        AgentMessage::ToolCompleted { output, .. }
            if output.starts_with("added ") && output.ends_with("hello.txt\n+hello from a patch"))),
        "{added:#?}"
    );
    assert!(matches!(terminal, AgentMessage::Completed { .. }));
    let (updated, _) = replay_nth_turn("file_change", 1);
    let request = updated
        .iter()
        .find_map(|message| match message {
            AgentMessage::PermissionRequest(request) => Some(request),
            _ => None,
        })
        .expect("a permission request");
    assert_eq!(
        request.diffs[0].old_text.as_deref(),
        Some("hello from a patch\n")
    );
    assert_eq!(request.diffs[0].new_text, "hello again\n");
    assert!(updated.iter().any(|message| matches!(message,
        AgentMessage::ToolFailed { error, .. } if error.contains("declined"))));
}

/// `agentty replay --provider codex` reads a raw app-server log (Codex's side of it) with the
/// app-server mapper: Codex writes JSON-RPC without the `"jsonrpc"` field.
#[test]
fn a_raw_app_server_log_replays_through_the_app_server_mapper() {
    let raw: String = fixture("steer")
        .iter()
        .filter(|line| line["dir"] == "in")
        .map(|line| format!("{}\n", line["msg"]))
        .collect();
    let dir = tempfile::TempDir::new().unwrap();
    let log = dir.path().join("codex.jsonl");
    std::fs::write(&log, raw).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(["replay", "--provider", "codex"])
        .arg(&log)
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains(r#"{"type":"notice","kind":"steer_delivered","message":"steer: say bye"}"#),
        "{stdout}"
    );
    assert!(
        stdout.contains(r#""type":"terminal.completed""#),
        "{stdout}"
    );
}

#[test]
fn the_plan_a_command_and_a_patch_read_in_the_users_words() {
    let (out, terminal) = replay_turn("plan_command_patch");
    assert!(
        matches!(terminal, AgentMessage::Completed { .. }),
        "{terminal:?}"
    );
    let plans = replay::plans(&out);
    let plan = |first: &str, second: &str| {
        vec![
            ("Write the notes".to_owned(), first.to_owned()),
            ("Update the notes".to_owned(), second.to_owned()),
        ]
    };
    assert_eq!(
        plans,
        [
            plan("in_progress", "pending"),
            plan("completed", "completed")
        ]
    );
    let calls: Vec<(&str, &Value)> = out
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolCall { name, input, .. } => Some((name.as_str(), input)),
            _ => None,
        })
        .collect();
    // Codex shows the command double-quoted for its login shell; the user reads the command.
    assert_eq!(calls[0].0, "shell");
    assert_eq!(calls[0].1["command"], r"printf 'v1\n' > notes.txt");
    assert_eq!(calls[1].0, "apply_patch");
    let change = &calls[1].1["changes"][0];
    assert!(
        change["path"].as_str().unwrap().ends_with("/notes.txt"),
        "{change}"
    );
    assert_eq!(change["kind"], "update");
    assert_eq!(change["diff"], "@@ -1 +1,2 @@\n-v1\n+v2\n+v3\n");
    let patched = out
        .iter()
        .find_map(|message| match message {
            AgentMessage::ToolCompleted { output, .. } if output.contains("notes.txt") => {
                Some(output.as_str())
            }
            _ => None,
        })
        .expect("the patch's output");
    assert!(
        patched.ends_with("notes.txt\n@@ -1 +1,2 @@\n-v1\n+v2\n+v3"),
        "{patched}"
    );
}
