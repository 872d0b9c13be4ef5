//! Helpers shared by the backends whose CLIs print one JSON object per line (Codex, Gemini).
//!
//! Invariants kept here for every mapper that uses them:
//! - every `tool.call` is followed by exactly one `tool.completed` or `tool.failed` with the
//!   same id, and no tool message names an id whose call was never announced ([`ToolCalls`]);
//! - HTTP statuses are only ever read from an agent's own error text or exit status
//!   ([`http_status_in`]).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

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
