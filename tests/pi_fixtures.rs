//! Every recorded pi json-mode capture replayed through the real pi mapper.
//!
//! For each capture the whole shared stream, the mapper's `AgentOutcome` (with the exit facts
//! from its `.meta.txt`) and the line verdicts are pinned by an insta snapshot; and invariants
//! computed independently from the raw events are checked: the deltas concatenate to exactly
//! the text of pi's assistant messages, every tool execution has its call and one end, thoughts
//! match pi's thinking blocks and never fall between a tool call and its end.
//!
//! Not replayed: `j_*` (RPC mode, which agentty does not run: no session header, `response`
//! lines, commands on stdin) and `*_textmode` (text mode, which agentty never asks for;
//! `i_bad_mode` already shows what plain text on stdout becomes).
//!
//! Older pi sent cumulative snapshots only and replayed earlier text after a tool turn. No
//! capture of that exists, so those streams are made from real captures: `delta` fields
//! stripped, and for the replay case the earlier text put back in front of later messages.

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;

use agentty::provider::pi::mapper::PiMapper;
use agentty::provider::{AgentOutcome, ExitFacts, LineVerdict, Mapper};
use agentty::stream::{notice_kind, AgentMessage};
use serde_json::{json, Value};

/// `shared/` sits beside the crate (`<x>/main` + `<x>/shared`); a worktree one level deeper
/// finds it one level further up.
fn captures_dir() -> PathBuf {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    crate_dir
        .ancestors()
        .skip(1)
        .map(|dir| dir.join("shared/protocols/pi/captures"))
        .find(|dir| dir.is_dir())
        .unwrap_or_else(|| crate_dir.join("../shared/protocols/pi/captures"))
}

/// Captures that are not json-mode streams agentty would read (see the module doc).
fn is_skipped(name: &str) -> bool {
    name.starts_with("j_") || name.ends_with("_textmode")
}

struct Capture {
    lines: Vec<String>,
    meta: String,
}

impl Capture {
    fn load(name: &str) -> Capture {
        let dir = captures_dir();
        let read = |suffix: &str| {
            let path = dir.join(format!("{name}.{suffix}"));
            std::fs::read_to_string(&path)
                .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()))
        };
        let stdout = read("stdout.jsonl");
        Capture {
            // pi frames on `\n` only (JSON strings may hold U+2028).
            lines: stdout
                .split('\n')
                .filter(|line| !line.is_empty())
                .map(str::to_owned)
                .collect(),
            meta: read("meta.txt"),
        }
    }

    fn command(&self) -> &str {
        self.meta
            .lines()
            .find_map(|line| line.strip_prefix("command: "))
            .unwrap_or_default()
    }

    /// Resumed exactly when agentty would have asked for it: `--continue` or `--session`.
    fn resumed(&self) -> bool {
        self.command()
            .split_whitespace()
            .any(|arg| arg == "--continue" || arg == "--session")
    }

    fn exit_facts(&self) -> ExitFacts {
        let status = self
            .meta
            .lines()
            .find_map(|line| line.strip_prefix("exit code: "))
            .expect("meta has an exit code");
        let (exit_code, signal) = match status.strip_prefix("killed by signal ") {
            Some(rest) => (
                None,
                rest.split_whitespace().next().and_then(|n| n.parse().ok()),
            ),
            None => (status.trim().parse().ok(), None),
        };
        ExitFacts {
            exit_code,
            signal,
            stopped_by_us: self.meta.contains("sent SIG") || self.meta.contains("write '03'"),
        }
    }
}

struct Replay {
    messages: Vec<AgentMessage>,
    outcome: AgentOutcome,
    outcome_reported: bool,
    verdicts: [usize; 3],
}

fn replay(lines: &[String], resumed: bool, exit: ExitFacts) -> Replay {
    let mut mapper = PiMapper::new("pi", resumed);
    let mut messages = Vec::new();
    let mut verdicts = [0; 3];
    for line in lines {
        let verdict = mapper.map_line(line, &mut messages);
        verdicts[match verdict {
            LineVerdict::Event => 0,
            LineVerdict::Ignored => 1,
            LineVerdict::Invalid => 2,
        }] += 1;
    }
    let outcome_reported = mapper.outcome_reported();
    let outcome = mapper.finish(exit, &mut messages);
    Replay {
        messages,
        outcome,
        outcome_reported,
        verdicts,
    }
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

fn render(replay: &Replay, exit: ExitFacts) -> String {
    let [events, ignored, invalid] = replay.verdicts;
    let mut text =
        format!("lines: event={events} ignored={ignored} invalid={invalid}\nexit: {exit:?}\n");
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

fn raw_facts(lines: &[String]) -> RawFacts {
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

fn concatenated_deltas(messages: &[AgentMessage]) -> String {
    messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::Assistant { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

fn check_invariants(name: &str, lines: &[String], replay: &Replay) {
    let facts = raw_facts(lines);
    let messages = &replay.messages;
    assert_eq!(
        concatenated_deltas(messages),
        facts.assistant_text,
        "{name}: deltas must concatenate to the assistant text"
    );
    assert!(
        !messages.iter().any(AgentMessage::is_terminal),
        "{name}: a mapper never emits the terminal message"
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

    for id in &facts.tool_starts {
        let call = messages
            .iter()
            .position(
                |message| matches!(message, AgentMessage::ToolCall { id: call, .. } if call == id),
            )
            .unwrap_or_else(|| panic!("{name}: tool_execution_start {id} has no tool.call"));
        let ends: Vec<usize> = messages
            .iter()
            .enumerate()
            .filter(|(_, message)| match message {
                AgentMessage::ToolCompleted { id: end, .. }
                | AgentMessage::ToolFailed { id: end, .. } => end == id,
                _ => false,
            })
            .map(|(index, _)| index)
            .collect();
        assert_eq!(ends.len(), 1, "{name}: tool {id} must end exactly once");
        assert!(ends[0] > call, "{name}: tool {id} ends after its call");
    }

    let mut open_tools: HashSet<&str> = HashSet::new();
    for message in messages {
        match message {
            AgentMessage::ToolCall { id, .. } => {
                open_tools.insert(id);
            }
            AgentMessage::ToolCompleted { id, .. } | AgentMessage::ToolFailed { id, .. } => {
                open_tools.remove(id.as_str());
            }
            AgentMessage::Thought { .. } => assert!(
                open_tools.is_empty(),
                "{name}: a thought fell between a tool call and its end"
            ),
            _ => {}
        }
    }
}

fn replay_capture(name: &str) {
    let capture = Capture::load(name);
    let exit = capture.exit_facts();
    let replayed = replay(&capture.lines, capture.resumed(), exit);
    check_invariants(name, &capture.lines, &replayed);
    insta::assert_snapshot!(name, render(&replayed, exit));
}

macro_rules! capture_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                replay_capture(stringify!($name));
            }
        )*
        const REPLAYED: &[&str] = &[$(stringify!($name)),*];
    };
}

capture_tests!(
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
    let found: BTreeSet<String> = std::fs::read_dir(captures_dir())
        .expect("the pi captures are beside the crate (../shared/protocols/pi/captures)")
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".stdout.jsonl").map(str::to_owned)
        })
        .filter(|name| !is_skipped(name))
        .collect();
    let replayed: BTreeSet<String> = REPLAYED.iter().map(|name| (*name).to_owned()).collect();
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
fn as_older_pi_with_replay(lines: &[String]) -> Vec<String> {
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
    for name in REPLAYED {
        let capture = Capture::load(name);
        let exit = capture.exit_facts();
        let with_deltas = replay(&capture.lines, capture.resumed(), exit);
        let snapshots_only: Vec<String> = capture
            .lines
            .iter()
            .map(|line| strip_deltas(line))
            .collect();
        let without_deltas = replay(&snapshots_only, capture.resumed(), exit);
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
        let capture = Capture::load(name);
        let exit = capture.exit_facts();
        let older = as_older_pi_with_replay(&capture.lines);
        assert!(
            older.len() > capture.lines.len(),
            "{name}: the transformation inserted replay lines"
        );
        let from_older = replay(&older, false, exit);
        let original = replay(&capture.lines, false, exit);

        let text = concatenated_deltas(&from_older.messages);
        assert_eq!(text, raw_facts(&capture.lines).assistant_text, "{name}");
        assert!(
            !from_older.messages.iter().any(|message| matches!(
                message,
                AgentMessage::Notice { kind, .. } if kind == notice_kind::SUPERSEDED
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
    let capture = Capture::load("c_tool");
    let older = as_older_pi_with_replay(&capture.lines);
    let replayed = replay(&older, false, capture.exit_facts());
    let text = concatenated_deltas(&replayed.messages);
    assert_eq!(
        text,
        "I will run echo hi now.The command printed hi, so the shell works fine."
    );
    assert_eq!(text.matches("I will run echo hi now.").count(), 1);
}
