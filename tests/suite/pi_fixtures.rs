//! Every recorded pi json-mode capture replayed through the real pi mapper.
//!
//! For each capture the whole shared stream, the mapper's `AgentOutcome` (with the exit facts
//! from its `.meta.txt`) and the line verdicts are pinned by an insta snapshot; and invariants
//! computed independently from the raw events are checked: the deltas concatenate to exactly
//! the text of pi's assistant messages, every tool execution has its call, thoughts match pi's
//! thinking blocks; and so are the shared stream's rules (`support/replay.rs`: every tool call
//! ends once, no thought falls between a tool call and its end, …).
//!
//! Not replayed: `j_*` (RPC mode, which agentty does not run: no session header, `response`
//! lines, commands on stdin) and `*_textmode` (text mode, which agentty never asks for;
//! `i_bad_mode` already shows what plain text on stdout becomes).
//!
//! Older pi sent cumulative snapshots only and replayed earlier text after a tool turn. No
//! capture of that exists, so those streams are made from real captures: `delta` fields
//! stripped, and for the replay case the earlier text put back in front of later messages.

use crate::support::captures;
use crate::support::replay;

use std::collections::BTreeSet;

use agentty::provider::pi::mapper::PiMapper;
use agentty::provider::{AgentOutcome, LineVerdict};
use agentty::stream::{AgentMessage, NoticeKind};
use captures::{capture_names, RecordedRun};
use replay::{capture_tests, replay, Replay};
use serde_json::{json, Value};

/// Captures that are not json-mode streams agentty would read (see the module doc).
fn is_skipped(name: &str) -> bool {
    name.starts_with("j_") || name.ends_with("_textmode")
}

/// Resumed exactly when agentty would have asked for it: `--continue` or `--session`.
fn resumed(run: &RecordedRun) -> bool {
    run.command
        .split_whitespace()
        .any(|arg| arg == "--continue" || arg == "--session")
}

fn replay_pi(run: &RecordedRun, resumed: bool) -> Replay {
    replay(&mut PiMapper::new("pi", resumed), run)
}

fn outcome_json(outcome: &AgentOutcome) -> Value {
    match outcome {
        AgentOutcome::Completed { stop_reason, usage } => {
            json!({"outcome": "completed", "stop_reason": stop_reason, "usage": usage})
        }
        AgentOutcome::Failed {
            reason,
            message,
            http_status,
        } => json!({"outcome": "failed", "reason": reason, "message": message,
                    "http_status": http_status}),
        AgentOutcome::Aborted => json!({"outcome": "aborted"}),
        AgentOutcome::Unfinished => json!({"outcome": "unfinished"}),
    }
}

fn render(replay: &Replay) -> String {
    let mut text = format!(
        "lines: event={} ignored={} invalid={}\nexit: {:?}\n",
        replay.verdict_count(LineVerdict::Event),
        replay.verdict_count(LineVerdict::Ignored),
        replay.verdict_count(LineVerdict::Invalid),
        replay.exit
    );
    for message in &replay.messages {
        text.push_str(&message.to_json_line());
        text.push('\n');
    }
    text.push_str(&format!("outcome: {}\n", outcome_json(&replay.outcome)));
    text.push_str(&format!("outcome_reported: {}\n", replay.outcome_reported));
    text
}

fn text_of_blocks(message: &Value, kind: &str, field: &str) -> Vec<String> {
    message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|block| block["type"] == kind)
        .filter_map(|block| block[field].as_str().map(str::to_owned))
        .collect()
}

/// What the raw events say the user should see, computed without the mapper: the text of
/// every assistant message (from `message_end`; for a message cut off before its end, its text
/// deltas), and the thinking blocks of ended messages.
struct RawFacts {
    assistant_text: String,
    thoughts: Vec<String>,
    tool_starts: Vec<String>,
}

fn raw_facts<'l>(lines: impl IntoIterator<Item = &'l str>) -> RawFacts {
    let mut facts = RawFacts {
        assistant_text: String::new(),
        thoughts: Vec::new(),
        tool_starts: Vec::new(),
    };
    let mut open_message_text: Option<String> = None;
    for line in lines {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let is_assistant = event["message"]["role"] == "assistant";
        match event["type"].as_str().unwrap_or_default() {
            "message_start" if is_assistant => open_message_text = Some(String::new()),
            "message_update" => {
                let update = &event["assistantMessageEvent"];
                if update["type"] == "text_delta" {
                    if let (Some(text), Some(delta)) =
                        (open_message_text.as_mut(), update["delta"].as_str())
                    {
                        text.push_str(delta);
                    }
                }
            }
            "message_end" if is_assistant => {
                open_message_text = None;
                let message = &event["message"];
                facts
                    .assistant_text
                    .push_str(&text_of_blocks(message, "text", "text").concat());
                facts
                    .thoughts
                    .extend(text_of_blocks(message, "thinking", "thinking"));
            }
            "tool_execution_start" => facts
                .tool_starts
                .push(event["toolCallId"].as_str().unwrap_or_default().to_owned()),
            _ => {}
        }
    }
    if let Some(text) = open_message_text {
        facts.assistant_text.push_str(&text);
    }
    facts
}

/// Pi-specific checks on top of the shared stream's rules: the text and thinking shown are
/// pi's, and every tool execution pi started was announced.
fn check_invariants(name: &str, replay: &Replay) {
    replay.assert_stream_rules(name);
    let facts = raw_facts(replay.stdout_lines());
    let messages = &replay.messages;
    assert_eq!(
        replay.assistant_text(),
        facts.assistant_text,
        "{name}: deltas must concatenate to the assistant text"
    );

    let thoughts: Vec<&str> = messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::Thought { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    // Thinking of messages cut off before message_end is released too, so pi's ended
    // thinking blocks come first and in order.
    assert!(
        thoughts.len() >= facts.thoughts.len()
            && thoughts[..facts.thoughts.len()] == facts.thoughts[..],
        "{name}: thoughts {thoughts:?} must be pi's thinking blocks {:?}",
        facts.thoughts
    );

    // The shared rules end each announced call exactly once, after its call.
    for id in &facts.tool_starts {
        assert!(
            messages.iter().any(
                |message| matches!(message, AgentMessage::ToolCall { id: call, .. } if call == id)
            ),
            "{name}: tool_execution_start {id} has no tool.call"
        );
    }
}

fn snapshot_capture(name: &str) {
    let run = RecordedRun::read("pi", name);
    let replayed = replay_pi(&run, resumed(&run));
    check_invariants(name, &replayed);
    insta::assert_snapshot!(name, render(&replayed));
}

capture_tests!(
    snapshot_capture:
    a_plain,
    a_plain_burst,
    a_plain_stdin_prompt,
    b_think,
    c_tool,
    d_textool,
    d_twotools_seq,
    e_drop,
    e_http401,
    e_http500,
    f_slow_ctrlc_pipe,
    f_slow_ctrlc_pty,
    f_slow_sighup,
    f_slow_sigint,
    f_slow_sigterm,
    g_sleep_ctrlc_pty,
    g_sleep_sigint,
    g_sleep_sigkill,
    g_sleep_sigterm,
    h_session_by_id,
    h_session_by_path,
    h_session_continue,
    h_session_new,
    h_session_new_path,
    h_session_none,
    i_bad_long_flag,
    i_bad_mode,
    i_bad_short_flag,
    i_missing_model,
    i_missing_provider,
    i_model_not_given,
    i_no_model_at_all,
    i_no_prompt,
);

#[test]
fn every_json_mode_capture_is_replayed() {
    let found: BTreeSet<String> = capture_names("pi")
        .into_iter()
        .filter(|name| !is_skipped(name))
        .collect();
    let replayed: BTreeSet<String> = CAPTURES.iter().map(|name| (*name).to_owned()).collect();
    assert_eq!(found, replayed);
}

// ---- Older pi: cumulative snapshots only, earlier text replayed after a tool turn ----

fn strip_deltas(line: &str) -> String {
    let Ok(mut event) = serde_json::from_str::<Value>(line) else {
        return line.to_owned();
    };
    if let Some(update) = event
        .get_mut("assistantMessageEvent")
        .and_then(Value::as_object_mut)
    {
        update.remove("delta");
    }
    event.to_string()
}

/// Puts `replayed` in front of the text of content block 0 of an assistant message.
fn prefix_first_text(message: &mut Value, replayed: &str) {
    if let Some(text) = message["content"][0]["text"].as_str() {
        message["content"][0]["text"] = Value::from(format!("{replayed}{text}"));
    }
}

/// The capture as older pi would have sent it: no deltas, and every assistant message after
/// the first starts by replaying (in growing snapshots) the text of the earlier ones, which
/// stays in front of its text up to its `message_end` / `turn_end`.
fn as_older_pi_with_replay<'l>(lines: impl IntoIterator<Item = &'l str>) -> Vec<String> {
    let mut out = Vec::new();
    let mut earlier_text = String::new();
    let mut replayed: Option<String> = None;
    let mut replay_lines_pending = false;
    for line in lines {
        let mut event: Value = serde_json::from_str(&strip_deltas(line)).unwrap();
        let kind = event["type"].as_str().unwrap_or_default().to_owned();
        let is_assistant = event["message"]["role"] == "assistant";
        match kind.as_str() {
            "message_start" if is_assistant => {
                replayed = (!earlier_text.is_empty()).then(|| earlier_text.clone());
                replay_lines_pending = replayed.is_some();
            }
            "message_update" => {
                if let Some(prefix) = &replayed {
                    if std::mem::take(&mut replay_lines_pending) {
                        let chars: Vec<char> = prefix.chars().collect();
                        for cut in [chars.len() / 3, 2 * chars.len() / 3, chars.len()] {
                            let partial: String = chars[..cut].iter().collect();
                            out.push(
                                json!({"type": "message_update",
                                       "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0},
                                       "message": {"role": "assistant",
                                                   "content": [{"type": "text", "text": partial}]}})
                                .to_string(),
                            );
                        }
                    }
                    prefix_first_text(&mut event["message"], prefix);
                    let update = &mut event["assistantMessageEvent"];
                    if update["type"] == "text_end" && update["contentIndex"] == 0 {
                        let content = update["content"].as_str().unwrap_or_default();
                        update["content"] = Value::from(format!("{prefix}{content}"));
                    }
                }
            }
            "message_end" | "turn_end" if is_assistant => {
                if let Some(prefix) = &replayed {
                    prefix_first_text(&mut event["message"], prefix);
                }
                if kind == "message_end" {
                    let original: Value = serde_json::from_str(line).unwrap();
                    earlier_text
                        .push_str(&text_of_blocks(&original["message"], "text", "text").concat());
                }
            }
            _ => {}
        }
        out.push(event.to_string());
    }
    out
}

/// Consecutive deltas merged: the chunking differs between delta and snapshot streams.
fn merged(messages: &[AgentMessage]) -> Vec<AgentMessage> {
    let mut out: Vec<AgentMessage> = Vec::new();
    for message in messages {
        if let (AgentMessage::Assistant { delta }, Some(AgentMessage::Assistant { delta: last })) =
            (message, out.last_mut())
        {
            last.push_str(delta);
            continue;
        }
        out.push(message.clone());
    }
    out
}

#[test]
fn snapshot_only_streams_map_like_delta_streams() {
    for name in CAPTURES {
        let run = RecordedRun::read("pi", name);
        let with_deltas = replay_pi(&run, resumed(&run));
        let snapshots_only = run.with_stdout(run.stdout().map(strip_deltas));
        let without_deltas = replay_pi(&snapshots_only, resumed(&run));
        assert_eq!(
            merged(&without_deltas.messages),
            merged(&with_deltas.messages),
            "{name}: snapshot-only stream"
        );
        assert_eq!(without_deltas.outcome, with_deltas.outcome, "{name}");
    }
}

#[test]
fn older_pi_replay_after_a_tool_turn_is_not_shown_twice() {
    for name in ["c_tool", "d_twotools_seq", "d_textool"] {
        let run = RecordedRun::read("pi", name);
        let older = as_older_pi_with_replay(run.stdout());
        assert!(
            older.len() > run.stdout().count(),
            "{name}: the transformation inserted replay lines"
        );
        let from_older = replay_pi(&run.with_stdout(older), false);
        let original = replay_pi(&run, false);

        let text = from_older.assistant_text();
        assert_eq!(text, raw_facts(run.stdout()).assistant_text, "{name}");
        assert!(
            !from_older.messages.iter().any(|message| matches!(
                message,
                AgentMessage::Notice { kind, .. } if *kind == NoticeKind::Superseded
            )),
            "{name}: a replay is not a contradiction"
        );
        assert_eq!(
            merged(&from_older.messages),
            merged(&original.messages),
            "{name}"
        );
    }
}

#[test]
fn c_tool_as_older_pi_shows_each_sentence_once() {
    let run = RecordedRun::read("pi", "c_tool");
    let older = run.with_stdout(as_older_pi_with_replay(run.stdout()));
    let text = replay_pi(&older, false).assistant_text();
    assert_eq!(
        text,
        "I will run echo hi now.The command printed hi, so the shell works fine."
    );
    assert_eq!(text.matches("I will run echo hi now.").count(), 1);
}
