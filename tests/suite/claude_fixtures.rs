//! Every recorded Claude Code capture (tests/fixtures/captures/claude) replayed through the
//! Claude mapper, with `finish` fed the exit facts from the capture's `.meta.txt`.
//!
//! Each capture's whole shared stream and outcome is pinned by an insta snapshot, and checked
//! against invariants computed from the raw capture, independently of the mapper:
//! - the assistant deltas, minus each superseded run, equal the text of the CLI's complete
//!   (non-synthetic) `assistant` blocks, plus any text still streaming when the output ended;
//! - the shared stream's rules (`support/replay.rs`): one session header, first; every tool
//!   call ended exactly once, after it was announced; no terminal message from the mapper;
//!   no text shown twice in a row (within one turn);
//! - thoughts never come before a tool call.

use crate::support::captures;
use crate::support::replay;

use std::collections::BTreeSet;

use agentty::provider::claude::mapper::ClaudeMapper;
use agentty::provider::{AgentOutcome, LineVerdict};
use agentty::stream::{AgentMessage, NoticeKind};
use captures::{capture_names, RecordedRun};
use replay::{capture_tests, plans, replay, Replay};
use serde_json::{json, Value};
use Expect::{Aborted, Completed, Failed, Unfinished};

fn replay_capture(name: &str) -> Replay {
    let run = RecordedRun::read("claude", name);
    let resumed = run.command.contains(" --resume ") || run.command.contains(" --continue");
    replay(&mut ClaudeMapper::new(resumed), &run)
}

fn outcome_json(outcome: &AgentOutcome) -> Value {
    match outcome {
        AgentOutcome::Completed { stop_reason, usage } => {
            json!({"completed": {"stop_reason": stop_reason, "usage": usage}})
        }
        AgentOutcome::Failed {
            reason,
            message,
            http_status,
        } => json!({"failed": {"reason": reason, "message": message, "http_status": http_status}}),
        AgentOutcome::Aborted => json!("aborted"),
        AgentOutcome::Unfinished => json!("unfinished"),
    }
}

fn is_notice(message: &AgentMessage, wanted: &str) -> bool {
    matches!(message, AgentMessage::Notice { kind, .. } if kind == wanted)
}

/// The assistant text the user is left with: each run of deltas is dropped when a
/// `superseded` (or `agent_retry`) notice directly retracts it.
fn text_without_superseded(messages: &[AgentMessage]) -> String {
    let mut kept = String::new();
    let mut run = String::new();
    for message in messages {
        match message {
            AgentMessage::Assistant { delta } => run.push_str(delta),
            _ if is_notice(message, NoticeKind::Superseded.wire())
                || is_notice(message, NoticeKind::AgentRetry.wire()) =>
            {
                run.clear()
            }
            _ => kept.push_str(&std::mem::take(&mut run)),
        }
    }
    kept + &run
}

/// From the raw capture: the complete non-synthetic text blocks, then the text deltas streamed
/// after the last complete `assistant` line (a reply cut off with nothing to complete it).
fn expected_text<'l>(raw_lines: impl IntoIterator<Item = &'l str>) -> String {
    let mut complete = String::new();
    let mut trailing = String::new();
    for line in raw_lines {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if !value["parent_tool_use_id"].is_null() {
            continue;
        }
        match value["type"].as_str() {
            Some("assistant") if value["message"]["model"] != "<synthetic>" => {
                trailing.clear();
                for block in value["message"]["content"].as_array().into_iter().flatten() {
                    if block["type"] == "text" {
                        complete.push_str(block["text"].as_str().unwrap_or_default());
                    }
                }
            }
            Some("stream_event") if value["event"]["delta"]["type"] == "text_delta" => {
                trailing.push_str(value["event"]["delta"]["text"].as_str().unwrap_or_default());
            }
            _ => {}
        }
    }
    complete + &trailing
}

/// Claude-specific checks on top of the shared stream's rules: the text shown is the CLI's
/// final text, and thinking comes after the last tool call.
fn assert_invariants(name: &str, replay: &Replay) {
    let turns = replay
        .stdout_lines()
        .filter(|line| line.contains(r#""type":"result""#))
        .count();
    if turns > 1 {
        // Several turns of one process (`cancel_interrupt_ctrl`: interrupted, then asked
        // again) may repeat a reply, so only the structure is checked across them.
        replay.assert_stream_structure(name);
    } else {
        replay.assert_stream_rules(name);
    }
    let messages = &replay.messages;
    assert_eq!(
        text_without_superseded(messages),
        expected_text(replay.stdout_lines()),
        "{name}: assistant text shown once, final text wins"
    );

    if let Some(first_thought) = messages
        .iter()
        .position(|message| matches!(message, AgentMessage::Thought { .. }))
    {
        assert!(
            !messages[first_thought..]
                .iter()
                .any(|message| matches!(message, AgentMessage::ToolCall { .. })),
            "{name}: a thought interleaved with tool calls"
        );
    }
}

/// The kind of outcome each capture must end with.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Completed,
    Failed,
    Aborted,
    Unfinished,
}

fn outcome_kind(outcome: &AgentOutcome) -> Expect {
    match outcome {
        AgentOutcome::Completed { .. } => Expect::Completed,
        AgentOutcome::Failed { .. } => Expect::Failed,
        AgentOutcome::Aborted => Expect::Aborted,
        AgentOutcome::Unfinished => Expect::Unfinished,
    }
}

fn check_capture(name: &str, expected: Expect) {
    let replay = replay_capture(name);
    assert_invariants(name, &replay);
    assert_eq!(
        outcome_kind(&replay.outcome),
        expected,
        "{name}: {:?}",
        replay.outcome
    );
    let snapshot = json!({
        "stream": replay.messages.iter().map(|message| {
            serde_json::from_str::<Value>(&message.to_json_line()).expect("messages are JSON")
        }).collect::<Vec<_>>(),
        "outcome": outcome_json(&replay.outcome),
        "lines": {
            "event": replay.verdict_count(LineVerdict::Event),
            "ignored": replay.verdict_count(LineVerdict::Ignored),
            "invalid": replay.verdict_count(LineVerdict::Invalid),
        },
    });
    insta::assert_json_snapshot!(name, snapshot);
}

capture_tests! {
    check_capture:
    // The second turn (after an in-band interrupt of the first) completes.
    cancel_interrupt_ctrl => Completed,
    cancel_sigint => Aborted,
    cancel_sigterm => Unfinished,
    // The Ctrl+C byte only became part of the prompt.
    cancel_stdin_ctrlc => Completed,
    cancel_stdin_ctrlc_json => Unfinished,
    conn_refused => Failed,
    drop_always => Completed,
    drop_once => Completed,
    err401 => Failed,
    err429 => Failed,
    err500_default => Failed,
    err500_once => Completed,
    err500_r2 => Failed,
    err529 => Failed,
    no_verbose => Unfinished,
    resume_1_new => Completed,
    resume_2_resume => Completed,
    resume_3_continue => Completed,
    resume_5_session_id => Completed,
    resume_6_bad_id => Failed,
    slow_partial => Completed,
    stdin_json => Completed,
    stdin_json_bad => Unfinished,
    stdin_json_replay => Completed,
    stdin_text_pipe => Completed,
    // Recorded with tests/fixtures/agent_work: the task list, a sub-agent, TodoWrite.
    subagent => Completed,
    tasks => Completed,
    text => Completed,
    text_json => Completed,
    text_partial => Completed,
    thinking_partial => Completed,
    todos => Completed,
    tool => Completed,
    tool_bypass => Completed,
    tool_bypass_root => Unfinished,
    tool_denied => Completed,
    tool_sleep_interrupt_ctrl => Aborted,
    tool_sleep_sigint => Aborted,
    tool_sleep_sigkill => Unfinished,
    tool_sleep_sigterm => Unfinished,
}

#[test]
fn every_capture_is_replayed() {
    let on_disk: BTreeSet<String> = capture_names("claude").into_iter().collect();
    let replayed: BTreeSet<String> = CAPTURES.iter().map(|name| name.to_string()).collect();
    assert_eq!(on_disk, replayed);
}

fn deltas(messages: &[AgentMessage]) -> Vec<&str> {
    messages
        .iter()
        .filter_map(AgentMessage::assistant_delta)
        .collect()
}

#[test]
fn partial_text_streams_as_deltas_and_the_complete_block_adds_nothing() {
    let replay = replay_capture("text_partial");
    assert_eq!(
        deltas(&replay.messages),
        [
            "Hello from the",
            " fake server. You",
            " said: 'Say hello'.",
            " messages=2."
        ]
    );
    assert_eq!(
        replay.outcome,
        AgentOutcome::Completed {
            stop_reason: "end_turn".into(),
            usage: Some(agentty::stream::Usage {
                input_tokens: Some(1234),
                output_tokens: Some(25),
                cache_read_tokens: Some(0),
                cache_write_tokens: Some(0),
                total_tokens: Some(1259),
                cost_usd: Some(0.006795),
                model: Some("claude-opus-4-8[1m]".into()),
                ..agentty::stream::Usage::default()
            }),
        }
    );
}

#[test]
fn a_reset_stream_is_superseded_by_the_fallback_reply() {
    let replay = replay_capture("drop_once");
    let messages = &replay.messages;
    let notice = messages
        .iter()
        .position(|message| is_notice(message, NoticeKind::Superseded.wire()))
        .expect("superseded notice");
    assert_eq!(deltas(&messages[..notice]), ["This stream will", " be cut"]);
    assert_eq!(
        deltas(&messages[notice..]),
        ["non-streaming fallback reply from fake server."]
    );
}

#[test]
fn a_lost_line_is_invalid_and_the_final_text_supersedes_the_gap() {
    let replay = replay_capture("slow_partial");
    assert_eq!(replay.verdict_count(LineVerdict::Invalid), 1);
    let final_text: String = (0..100).map(|token| format!("tok{token} ")).collect();
    assert_eq!(text_without_superseded(&replay.messages), final_text);
}

#[test]
fn thinking_is_one_thought_released_after_the_text() {
    let replay = replay_capture("thinking_partial");
    let kinds: Vec<String> = replay
        .messages
        .iter()
        .filter(|message| !matches!(message, AgentMessage::Thinking { .. }))
        .map(|message| match message {
            AgentMessage::Thought { text } => format!("thought:{text}"),
            AgentMessage::Assistant { delta } => format!("text:{delta}"),
            other => format!("{other:?}"),
        })
        .filter(|kind| !kind.starts_with("Session"))
        .collect();
    assert_eq!(
        kinds,
        [
            "text:After thinking: the",
            "text: answer is 42.",
            "thought:Let me think about this carefully."
        ]
    );
}

#[test]
fn api_errors_fail_with_the_status_and_never_show_the_synthetic_message() {
    for (name, status) in [
        ("err500_r2", Some(500)),
        ("err401", Some(401)),
        ("err429", Some(429)),
        ("err529", Some(529)),
        ("conn_refused", None),
    ] {
        let replay = replay_capture(name);
        assert!(
            deltas(&replay.messages).is_empty(),
            "{name}: no assistant text"
        );
        match &replay.outcome {
            AgentOutcome::Failed {
                message,
                http_status,
                ..
            } => {
                let result_line = replay
                    .stdout_lines()
                    .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                    .find(|value| value["type"] == "result")
                    .expect("a result line");
                assert_eq!(
                    result_line["result"].as_str(),
                    Some(message.as_str()),
                    "{name}"
                );
                assert_eq!(*http_status, status, "{name}");
            }
            other => panic!("{name}: {other:?}"),
        }
        let retries = replay.notice_count(NoticeKind::AgentRetry.wire());
        let retry_lines = replay
            .stdout_lines()
            .filter(|line| line.contains(r#""subtype":"api_retry""#))
            .count();
        assert!(retries > 0, "{name}: retries are visible");
        // A retry line glued to a cut one still counts once.
        assert_eq!(retries, retry_lines, "{name}");
    }
}

#[test]
fn tool_calls_carry_the_parsed_input_and_end_with_the_result() {
    let replay = replay_capture("tool");
    let tools: Vec<&AgentMessage> = replay
        .messages
        .iter()
        .filter(|message| {
            matches!(
                message,
                AgentMessage::ToolCall { .. } | AgentMessage::ToolCompleted { .. }
            )
        })
        .collect();
    match tools.as_slice() {
        [AgentMessage::ToolCall {
            id,
            name,
            input,
            parent_id: None,
        }, AgentMessage::ToolCompleted { id: done, output }] => {
            assert_eq!(name, "Bash");
            assert_eq!(input["command"], "echo hi");
            assert_eq!(id, done);
            assert_eq!(output, "hi");
        }
        other => panic!("{other:?}"),
    }
    let denied = replay_tool_end("tool_denied");
    assert!(
        matches!(denied, AgentMessage::ToolFailed { error, .. } if error.contains("was blocked"))
    );
}

fn replay_tool_end(name: &str) -> AgentMessage {
    replay_capture(name)
        .messages
        .into_iter()
        .find(|message| {
            matches!(
                message,
                AgentMessage::ToolCompleted { .. } | AgentMessage::ToolFailed { .. }
            )
        })
        .expect("a tool end")
}

#[test]
fn a_stop_during_a_tool_fails_the_call_without_user_text() {
    for name in [
        "tool_sleep_sigint",
        "tool_sleep_sigterm",
        "tool_sleep_sigkill",
    ] {
        assert!(
            matches!(replay_tool_end(name), AgentMessage::ToolFailed { .. }),
            "{name}"
        );
        let replay = replay_capture(name);
        assert!(
            !deltas(&replay.messages)
                .iter()
                .any(|delta| delta.contains("interrupted")),
            "{name}: the interrupt marker is not text"
        );
    }
}

#[test]
fn sessions_are_started_resumed_or_clearly_missing() {
    let first = replay_capture("resume_5_session_id");
    assert_eq!(
        first.messages[0],
        AgentMessage::SessionStarted {
            provider: "claude".into(),
            session_id: Some("11111111-2222-4333-8444-555555555555".into()),
            model: Some("claude-opus-4-8[1m]".into()),
        }
    );
    let resumed = replay_capture("resume_2_resume");
    assert_eq!(
        resumed.messages[0],
        AgentMessage::SessionResumed {
            provider: "claude".into(),
            session_id: "ada5f569-5085-4cbe-b505-423bdbecaa5e".into(),
            model: Some("claude-opus-4-8".into()),
        }
    );
    let bad = replay_capture("resume_6_bad_id");
    assert!(matches!(
        &bad.outcome,
        AgentOutcome::Failed { message, .. }
            if message == "No conversation found with session ID: 99999999-2222-4333-8444-555555555555"
    ));
}

fn pairs(entries: &[(&str, &str)]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|(content, status)| (content.to_string(), status.to_string()))
        .collect()
}

/// The names of the tool calls the user sees, with the call each nests under.
fn tool_calls(messages: &[AgentMessage]) -> Vec<(String, Option<String>)> {
    messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolCall {
                name, parent_id, ..
            } => Some((name.clone(), parent_id.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn claudes_task_tools_are_its_plan_and_not_tool_rows() {
    let replay = replay_capture("tasks");
    let calls = tool_calls(&replay.messages);
    assert_eq!(
        calls,
        [("Bash".to_owned(), None)],
        "TaskCreate/TaskUpdate fold into the plan"
    );
    let plans = plans(&replay.messages);
    assert_eq!(plans[0], pairs(&[("Read the notes", "pending")]));
    assert!(plans.contains(&pairs(&[
        ("Read the notes", "in_progress"),
        ("Write the summary", "pending")
    ])));
    assert_eq!(
        plans.last().unwrap(),
        &pairs(&[
            ("Read the notes", "completed"),
            ("Write the summary", "completed")
        ])
    );
    assert_eq!(plans.len(), 6, "two tasks made, four updates: {plans:?}");
    let lines: Vec<String> = replay
        .messages
        .iter()
        .map(AgentMessage::to_json_line)
        .collect();
    assert!(
        !lines.iter().any(|line| line.contains("taskId")),
        "no raw task JSON reaches the stream: {lines:#?}"
    );
}

#[test]
fn claudes_todo_write_is_its_plan() {
    let replay = replay_capture("todos");
    assert_eq!(tool_calls(&replay.messages), [("Bash".to_owned(), None)]);
    assert_eq!(
        plans(&replay.messages),
        [
            pairs(&[
                ("Read the notes", "in_progress"),
                ("Write the summary", "pending")
            ]),
            pairs(&[
                ("Read the notes", "completed"),
                ("Write the summary", "in_progress")
            ]),
            pairs(&[
                ("Read the notes", "completed"),
                ("Write the summary", "completed")
            ]),
        ]
    );
}

#[test]
fn a_sub_agents_calls_nest_under_the_call_that_runs_it() {
    let replay = replay_capture("subagent");
    let messages = &replay.messages;
    let agent = messages
        .iter()
        .find_map(|message| match message {
            AgentMessage::ToolCall { id, name, .. } if name == "Agent" => Some(id.clone()),
            _ => None,
        })
        .expect("the Agent call");
    assert_eq!(
        tool_calls(messages),
        [
            ("Agent".to_owned(), None),
            ("Bash".to_owned(), Some(agent.clone())),
            ("Bash".to_owned(), Some(agent.clone())),
        ]
    );
    let completed: Vec<&str> = messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolCompleted { output, .. } => Some(output.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(completed, ["one", "two", "Done: one and two."]);
    let progress: Vec<&str> = messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolUpdate { id, output } if *id == agent => Some(output.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        progress,
        [
            "started: Run two commands",
            "Running Print one · 1 tool use · 1.2k tokens",
            "Running Print two · 2 tool uses · 1.2k tokens",
            "completed · Run two commands · 2 tool uses · 1.2k tokens",
        ]
    );
    let shown: String = messages.iter().map(AgentMessage::to_json_line).collect();
    assert!(
        !shown.contains("agentId") && !shown.contains("<usage>"),
        "{shown}"
    );
    assert_eq!(
        replay
            .messages
            .iter()
            .filter_map(AgentMessage::assistant_delta)
            .collect::<String>(),
        "I'll hand this to a helper.The helper ran both commands."
    );
}
