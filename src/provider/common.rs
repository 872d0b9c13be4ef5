//! Helpers shared by the backends whose CLIs print one JSON object per line (Codex, Gemini).
//!
//! Invariants kept here for every mapper that uses them:
//! - every `tool.call` is followed by exactly one `tool.completed` or `tool.failed` with the
//!   same id, and no tool message names an id whose call was never announced ([`ToolCalls`]);
//! - HTTP statuses are only ever read from an agent's own error text or exit status
//!   ([`http_status_in`]).
//!
//! [`RecordedRun`] and [`replay`] feed a run recorded by the capture harness in
//! `protocols/` (stdout, stderr and the `.meta.txt` timeline) through a mapper exactly as the
//! runner would, so a mapper is tested from what the real CLI printed.

use std::borrow::Cow;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::provider::{AgentOutcome, ExitFacts, LineVerdict, Mapper};
use crate::stream::AgentMessage;

/// A JSON string borrowed from the line when it has no escapes, owned otherwise.
///
/// `Option<Cow<str>>` never borrows under serde; this newtype does, so the big fields (assistant
/// text, tool output) are copied once, into the shared message, and not twice.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub(crate) struct Text<'a>(#[serde(borrow)] pub Cow<'a, str>);

impl Text<'_> {
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// The text of an optional borrowed string, or `""`.
pub(crate) fn text_or_empty<'t>(text: &'t Option<Text<'_>>) -> &'t str {
    text.as_ref().map_or("", Text::as_str)
}

/// The `session.*` message for a session id the agent announced.
pub(crate) fn session_message(provider: &str, resumed: bool, session_id: &str) -> AgentMessage {
    if resumed {
        AgentMessage::SessionResumed {
            provider: provider.to_owned(),
            session_id: session_id.to_owned(),
        }
    } else {
        AgentMessage::SessionStarted {
            provider: provider.to_owned(),
            session_id: Some(session_id.to_owned()),
        }
    }
}

/// The tool calls of one attempt that have started and not yet ended, in start order.
///
/// Agents end tool calls they never announced (Codex prints some items only once, completed)
/// and leave calls open when they are stopped; this keeps the shared stream well-formed either
/// way.
#[derive(Debug, Default)]
pub(crate) struct ToolCalls {
    open: Vec<String>,
}

impl ToolCalls {
    /// Announces a call; a repeated start of an open call is not announced twice.
    pub(crate) fn start(
        &mut self,
        id: &str,
        name: &str,
        input: Value,
        out: &mut Vec<AgentMessage>,
    ) {
        if self.is_open(id) {
            return;
        }
        self.open.push(id.to_owned());
        out.push(AgentMessage::ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            input,
        });
    }

    /// Partial output of an open call (dropped for a call that is not open: it has ended).
    pub(crate) fn update(&mut self, id: &str, output: String, out: &mut Vec<AgentMessage>) {
        if self.is_open(id) {
            out.push(AgentMessage::ToolUpdate {
                id: id.to_owned(),
                output,
            });
        }
    }

    /// Ends a call as completed; `name`/`input` announce it first if it was never started.
    pub(crate) fn complete(
        &mut self,
        id: &str,
        (name, input): (&str, Value),
        output: String,
        out: &mut Vec<AgentMessage>,
    ) {
        self.start(id, name, input, out);
        self.close(id);
        out.push(AgentMessage::ToolCompleted {
            id: id.to_owned(),
            output,
        });
    }

    /// Ends a call as failed; `name`/`input` announce it first if it was never started.
    pub(crate) fn fail(
        &mut self,
        id: &str,
        (name, input): (&str, Value),
        error: String,
        out: &mut Vec<AgentMessage>,
    ) {
        self.start(id, name, input, out);
        self.close(id);
        out.push(AgentMessage::ToolFailed {
            id: id.to_owned(),
            error,
        });
    }

    /// Fails every call still open (the agent stopped or ended without finishing them).
    pub(crate) fn fail_all_open(&mut self, error: &str, out: &mut Vec<AgentMessage>) {
        for id in self.open.drain(..) {
            out.push(AgentMessage::ToolFailed {
                id,
                error: error.to_owned(),
            });
        }
    }

    pub(crate) fn is_open(&self, id: &str) -> bool {
        self.open.iter().any(|open| open == id)
    }

    fn close(&mut self, id: &str) {
        self.open.retain(|open| open != id);
    }
}

/// The error a tool call gets when the agent ended before the tool did.
pub(crate) const TOOL_INTERRUPTED: &str = "the agent stopped before this tool call finished";

/// The HTTP error status (400–599) an agent's error text reports, if it names one.
///
/// Recognised forms, all seen in the captures: `status 401 Unauthorized` and
/// `last status: 429 Too Many Requests` (Codex), `failed with status 500` and an embedded API
/// error body `{"error":{"code":500,…}}` (Gemini).
pub(crate) fn http_status_in(text: &str) -> Option<u16> {
    ["status", "\"code\""].iter().find_map(|needle| {
        text.match_indices(needle).find_map(|(at, _)| {
            let rest = text[at + needle.len()..].trim_start_matches([':', ' ']);
            three_digit_status(rest)
        })
    })
}

/// `rest` starts with exactly three digits forming an HTTP error status.
fn three_digit_status(rest: &str) -> Option<u16> {
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits != 3 {
        return None;
    }
    rest[..3]
        .parse::<u16>()
        .ok()
        .filter(|status| (400..=599).contains(status))
}

/// Which output a recorded line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Stdout,
    Stderr,
}

/// A run recorded by the capture harness: its output lines in arrival order and how it ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordedRun {
    /// The command line, as the harness wrote it.
    pub command: String,
    pub lines: Vec<(Channel, String)>,
    pub exit: ExitFacts,
}

impl RecordedRun {
    /// Reads capture `name` (`<name>.stdout.jsonl`, `.stderr.txt`, `.meta.txt`) from `dir`.
    pub fn read(dir: &Path, name: &str) -> std::io::Result<RecordedRun> {
        let read =
            |extension: &str| std::fs::read_to_string(dir.join(format!("{name}.{extension}")));
        Ok(RecordedRun::parse(
            &read("stdout.jsonl")?,
            &read("stderr.txt")?,
            &read("meta.txt")?,
        ))
    }

    /// The names of the captures in `dir` that recorded stdout, sorted.
    pub fn names_in(dir: &Path) -> std::io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let file_name = entry?.file_name();
            if let Some(name) = file_name
                .to_str()
                .and_then(|n| n.strip_suffix(".stdout.jsonl"))
            {
                names.push(name.to_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    /// Builds a run from the three files of one capture.
    ///
    /// The meta file's output timeline gives the order in which stdout and stderr lines
    /// arrived (each entry names its channel; its text may be cut short); lines the timeline
    /// does not account for follow at the end, stdout first. `exit code: N`, `exit code: -N
    /// (killed by signal …)` and `exit code: killed by signal N …` give the exit, and a
    /// `cancel:` line means the harness stopped the agent (as agentty's stop would).
    pub fn parse(stdout: &str, stderr: &str, meta: &str) -> RecordedRun {
        let mut stdout_lines = stdout.lines();
        let mut stderr_lines = stderr.lines();
        let mut lines = Vec::new();
        let timeline = meta
            .split_once("-- output timeline")
            .map_or("", |(_, timeline)| timeline);
        for entry in timeline.lines() {
            let mut fields = entry.split_whitespace();
            let channel = match (fields.next(), fields.next()) {
                (Some(time), Some("out")) if time.parse::<f64>().is_ok() => Channel::Stdout,
                (Some(time), Some("err")) if time.parse::<f64>().is_ok() => Channel::Stderr,
                _ => continue,
            };
            let next = match channel {
                Channel::Stdout => stdout_lines.next(),
                Channel::Stderr => stderr_lines.next(),
            };
            if let Some(line) = next {
                lines.push((channel, line.to_owned()));
            }
        }
        lines.extend(stdout_lines.map(|line| (Channel::Stdout, line.to_owned())));
        lines.extend(stderr_lines.map(|line| (Channel::Stderr, line.to_owned())));

        let field = |name: &str| {
            meta.lines()
                .find_map(|line| line.strip_prefix(name))
                .map(str::trim)
        };
        let mut exit = ExitFacts {
            stopped_by_us: field("cancel:").is_some(),
            ..ExitFacts::default()
        };
        if let Some(status) = field("exit code:") {
            let number = |text: &str| {
                text.trim_start_matches(|c: char| !c.is_ascii_digit() && c != '-')
                    .split(|c: char| !c.is_ascii_digit() && c != '-')
                    .next()
                    .and_then(|digits| digits.parse::<i32>().ok())
            };
            match number(status) {
                Some(code) if status.starts_with("killed by signal") => exit.signal = Some(code),
                Some(code) if code < 0 => exit.signal = Some(-code),
                Some(code) => exit.exit_code = Some(code),
                None => {}
            }
        }
        RecordedRun {
            command: field("command:").unwrap_or_default().to_owned(),
            lines,
            exit,
        }
    }
}

/// What a mapper made of a recorded run.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// Every message, in order (a mapper never produces the terminal message).
    pub messages: Vec<AgentMessage>,
    /// The stdout lines the mapper called invalid.
    pub invalid_lines: Vec<String>,
    /// How the recorded run ended (what `finish` was given).
    pub exit: ExitFacts,
    pub outcome: AgentOutcome,
}

impl Replay {
    /// Every assistant delta, concatenated.
    pub fn assistant_text(&self) -> String {
        self.messages
            .iter()
            .filter_map(|message| match message {
                AgentMessage::Assistant { delta } => Some(delta.as_str()),
                _ => None,
            })
            .collect()
    }

    /// How many notices of `kind` the replay produced.
    pub fn notice_count(&self, kind: &str) -> usize {
        self.messages
            .iter()
            .filter(|message| matches!(message, AgentMessage::Notice { kind: k, .. } if k == kind))
            .count()
    }

    /// The replay as text for a snapshot: one shared-stream JSON line per message, then the
    /// invalid lines, the exit and the outcome.
    pub fn transcript(&self) -> String {
        let mut text = String::new();
        for message in &self.messages {
            text.push_str(&message.to_json_line());
            text.push('\n');
        }
        for line in &self.invalid_lines {
            text.push_str(&format!("invalid: {line}\n"));
        }
        text.push_str(&format!(
            "exit: {:?}\noutcome: {:?}\n",
            self.exit, self.outcome
        ));
        text
    }
}

/// Feeds a recorded run through `mapper` as the runner does: stdout lines (empty ones
/// skipped, as the line reader does) to `map_line`, stderr lines to `map_stderr_line`, then
/// `finish` with the recorded exit.
pub fn replay(mapper: &mut dyn Mapper, run: &RecordedRun) -> Replay {
    let mut messages = Vec::new();
    let mut invalid_lines = Vec::new();
    for (channel, line) in &run.lines {
        match channel {
            Channel::Stdout if line.is_empty() => {}
            Channel::Stdout => {
                if mapper.map_line(line, &mut messages) == LineVerdict::Invalid {
                    invalid_lines.push(line.clone());
                }
            }
            Channel::Stderr => mapper.map_stderr_line(line, &mut messages),
        }
    }
    let outcome = mapper.finish(run.exit, &mut messages);
    Replay {
        messages,
        invalid_lines,
        exit: run.exit,
        outcome,
    }
}

/// Repeated text shorter than this is not counted as shown twice ("no, no" is fine).
const MIN_REPEAT_BYTES: usize = 8;

/// Ways `messages` (one attempt, terminal message excluded) breaks the shared stream's
/// rules; empty when it keeps them all:
/// - a session header comes at most once, and first;
/// - every `tool.call` id is new, and is ended by exactly one `tool.completed`/`tool.failed`;
///   no update or ending names an id that is not open;
/// - no terminal message (the runner adds it);
/// - the assistant text since the last `agent_retry` notice never shows a passage twice in a
///   row (what re-sent, unreconciled text looks like).
pub fn stream_violations(messages: &[AgentMessage]) -> Vec<String> {
    let mut violations = Vec::new();
    let mut open: Vec<&str> = Vec::new();
    let mut ended: Vec<&str> = Vec::new();
    let mut text = String::new();
    for (index, message) in messages.iter().enumerate() {
        match message {
            AgentMessage::SessionStarted { .. } | AgentMessage::SessionResumed { .. }
                if index != 0 =>
            {
                violations.push(format!("session header at position {index}"));
            }
            AgentMessage::ToolCall { id, .. } => {
                if open.contains(&id.as_str()) || ended.contains(&id.as_str()) {
                    violations.push(format!("tool call {id} announced twice"));
                } else {
                    open.push(id);
                }
            }
            AgentMessage::ToolUpdate { id, .. } if !open.contains(&id.as_str()) => {
                violations.push(format!("update of tool call {id}, which is not open"));
            }
            AgentMessage::ToolCompleted { id, .. } | AgentMessage::ToolFailed { id, .. } => {
                if !open.contains(&id.as_str()) {
                    violations.push(format!("end of tool call {id}, which is not open"));
                }
                open.retain(|open_id| open_id != id);
                ended.push(id);
            }
            AgentMessage::Assistant { delta } => text.push_str(delta),
            AgentMessage::Notice { kind, .. }
                if kind == crate::stream::notice_kind::AGENT_RETRY =>
            {
                text.clear();
            }
            message if message.is_terminal() => {
                violations.push(format!("terminal message from the mapper: {message:?}"));
            }
            _ => {}
        }
    }
    violations.extend(open.iter().map(|id| format!("tool call {id} never ended")));
    if let Some(repeated) = repeated_passage(&text) {
        violations.push(format!("text shown twice in a row: {repeated:?}"));
    }
    violations
}

/// The first passage of at least [`MIN_REPEAT_BYTES`] that `text` contains twice in a row.
/// Quadratic in the text's length: meant for test transcripts, not for live streams.
fn repeated_passage(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    (0..bytes.len()).find_map(|start| {
        (MIN_REPEAT_BYTES..=(bytes.len() - start) / 2)
            .find(|len| bytes[start..start + len] == bytes[start + len..start + 2 * len])
            .map(|len| String::from_utf8_lossy(&bytes[start..start + len]).into_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn statuses_are_read_from_every_captured_error_form() {
        assert_eq!(
            http_status_in("unexpected status 401 Unauthorized: Incorrect API key provided"),
            Some(401)
        );
        assert_eq!(
            http_status_in("exceeded retry limit, last status: 429 Too Many Requests"),
            Some(429)
        );
        assert_eq!(
            http_status_in(
                r#"[API Error: {"error":{"code":500,"message":"x","status":"INTERNAL"}}]"#
            ),
            Some(500)
        );
        assert_eq!(
            http_status_in("Attempt 3 failed with status 503. Retrying with backoff..."),
            Some(503)
        );
    }

    #[test]
    fn numbers_that_are_not_error_statuses_are_ignored() {
        assert_eq!(http_status_in("status 200 OK"), None);
        assert_eq!(http_status_in("status 5000"), None);
        assert_eq!(http_status_in("exit status: 1"), None);
        assert_eq!(
            http_status_in("Model stream ended without a finish reason."),
            None
        );
        assert_eq!(http_status_in(""), None);
    }

    #[test]
    fn text_borrows_from_the_line_unless_it_has_escapes() {
        let plain: Text = serde_json::from_str(r#""hello""#).unwrap();
        assert!(matches!(plain.0, Cow::Borrowed("hello")));
        let escaped: Text = serde_json::from_str(r#""a\nb""#).unwrap();
        assert_eq!(escaped.as_str(), "a\nb");
    }

    #[test]
    fn a_recorded_run_keeps_the_arrival_order_and_the_exit() {
        let meta = "scenario: x\ncommand: codex exec --json 'hi'\nexit code: 244\n\
                    -- output timeline (t = seconds since child start) --\n\
                    \x20  0.1 err warn one\n   0.2 out {\"a\":1}\n   0.3 err warn t\n";
        let run = RecordedRun::parse("{\"a\":1}\n{\"b\":2}\n", "warn one\nwarn two\n", meta);
        assert_eq!(run.command, "codex exec --json 'hi'");
        assert_eq!(
            run.lines,
            [
                (Channel::Stderr, "warn one".to_owned()),
                (Channel::Stdout, "{\"a\":1}".to_owned()),
                (Channel::Stderr, "warn two".to_owned()),
                (Channel::Stdout, "{\"b\":2}".to_owned()),
            ]
        );
        assert_eq!(run.exit.exit_code, Some(244));
        assert!(!run.exit.stopped_by_us);

        let killed = RecordedRun::parse(
            "",
            "",
            "exit code: -15 (killed by signal SIGTERM)\ncancel: t=3 sent sigterm\n",
        );
        assert_eq!(
            (killed.exit.exit_code, killed.exit.signal),
            (None, Some(15))
        );
        assert!(killed.exit.stopped_by_us);
        let signalled = RecordedRun::parse(
            "",
            "",
            "exit code: killed by signal 2 (SIGINT); a shell would show 130\n",
        );
        assert_eq!(signalled.exit.signal, Some(2));
    }

    #[test]
    fn stream_violations_name_each_broken_rule() {
        let assistant = |delta: &str| AgentMessage::Assistant {
            delta: delta.into(),
        };
        let call = |id: &str| AgentMessage::ToolCall {
            id: id.into(),
            name: "shell".into(),
            input: Value::Null,
        };
        let done = |id: &str| AgentMessage::ToolCompleted {
            id: id.into(),
            output: String::new(),
        };
        let good = [
            session_message("codex", false, "t1"),
            assistant("no, no, "),
            call("a"),
            done("a"),
            assistant("Partial answer"),
            AgentMessage::notice("agent_retry", "retried"),
            assistant("Partial answer, again"),
        ];
        assert_eq!(stream_violations(&good), Vec::<String>::new());
        let bad = [
            assistant("Partial answerPartial answer"),
            session_message("codex", false, "t1"),
            call("a"),
            done("b"),
            call("a"),
            AgentMessage::Completed {
                stop_reason: "x".into(),
                usage: None,
            },
        ];
        assert_eq!(
            stream_violations(&bad),
            [
                "session header at position 1",
                "end of tool call b, which is not open",
                "tool call a announced twice",
                "terminal message from the mapper: Completed { stop_reason: \"x\", usage: None }",
                "tool call a never ended",
                "text shown twice in a row: \"Partial answer\"",
            ]
        );
    }

    #[test]
    fn every_tool_call_is_announced_once_and_ended_once() {
        let mut tools = ToolCalls::default();
        let mut out = Vec::new();
        tools.start("a", "shell", json!({"command": "ls"}), &mut out);
        tools.start("a", "shell", json!({"command": "ls"}), &mut out);
        tools.update("a", "partial".into(), &mut out);
        tools.complete("a", ("shell", Value::Null), "done".into(), &mut out);
        tools.update("a", "late".into(), &mut out);
        // Ended without a start: announced first, with the name and input given.
        tools.fail(
            "b",
            ("apply_patch", json!({})),
            "bad patch".into(),
            &mut out,
        );
        tools.start("c", "sleep", Value::Null, &mut out);
        tools.fail_all_open(TOOL_INTERRUPTED, &mut out);
        let lines: Vec<String> = out.iter().map(AgentMessage::to_json_line).collect();
        assert_eq!(
            lines,
            [
                r#"{"type":"tool.call","id":"a","name":"shell","input":{"command":"ls"}}"#,
                r#"{"type":"tool.update","id":"a","output":"partial"}"#,
                r#"{"type":"tool.completed","id":"a","output":"done"}"#,
                r#"{"type":"tool.call","id":"b","name":"apply_patch","input":{}}"#,
                r#"{"type":"tool.failed","id":"b","error":"bad patch"}"#,
                r#"{"type":"tool.call","id":"c","name":"sleep","input":null}"#,
                r#"{"type":"tool.failed","id":"c","error":"the agent stopped before this tool call finished"}"#,
            ]
        );
        assert!(!tools.is_open("c"));
    }
}
