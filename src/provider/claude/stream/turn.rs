//! One turn on a live Claude Code: a user line, its output mapped by the [`ClaudeMapper`] until
//! the `result` that follows the last user line agentty sent, the CLI's `can_use_tool`
//! requests as questions, and the `interrupt` control request as the in-band stop.
//!
//! A message sent mid-turn (steering) is a user line; `--replay-user-messages` echoes each user
//! line when the CLI takes it (at the next tool boundary, or as a turn of its own after the
//! `result`), which is when the chat says it was delivered. Steering still untaken at a
//! `result` runs as a turn of its own: the attempt waits for that turn's `result` too (if it
//! begins at all).
//!
//! [`ClaudeMapper`]: crate::provider::claude::mapper::ClaudeMapper

use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use super::control::Control;
use super::session::StreamSession;
use super::settings::Shared;
use crate::process::Line;
use crate::provider::claude::permission::{request_of, ClaudePermission};
use crate::provider::live::{Ending, Live, Question, Reply, Step, Turn, TurnIo};
use crate::provider::{AgentQueue, ContextUse, Interjection};
use crate::stream::{AgentMessage, NoticeKind};

/// After a turn's result, how long the CLI may take to begin the turn of steering it did not
/// take during that turn.
const QUEUED_TURN_START: Duration = Duration::from_secs(2);

pub(crate) struct StreamTurn {
    pub(super) control: Control,
    pub(super) shared: Shared,
    /// Steering sent and not yet taken by the CLI.
    pub(super) untaken: Vec<String>,
    /// After a result with steering untaken: when its own turn must have begun.
    pub(super) queued_turn_by: Option<Instant>,
    pub(super) context: ContextCount,
}

impl Turn for StreamTurn {
    type Session = StreamSession;
    type Ticket = ClaudePermission;
    type Wake = ();

    fn on_line(
        &mut self,
        live: &mut Live<StreamSession>,
        line: &Line,
        io: &mut TurnIo<'_>,
    ) -> Step<ClaudePermission> {
        match side_line(&line.text) {
            Side::ControlRequest(value) => return self.control_request(&value, io),
            Side::Taken(text) => {
                if let Some(at) = self.untaken.iter().position(|sent| *sent == text) {
                    self.untaken.remove(at);
                    self.publish_queue();
                    io.out
                        .push(AgentMessage::notice(NoticeKind::SteerDelivered, text));
                }
            }
            Side::Init { session_id, mode } => {
                if session_id.is_some() {
                    live.session.session_id = session_id;
                }
                if let Some(mode) = mode {
                    self.shared.saw_mode(mode);
                }
            }
            Side::Turn => {}
        }
        let is_result = line.text.contains("\"result\"") && is_result_line(&line.text);
        if let Some(context) = self.context.observe(&line.text) {
            self.shared
                .status
                .send_modify(|status| status.context = Some(context));
        }
        io.map(line);
        self.queued_turn_by = None;
        if is_result {
            if self.untaken.is_empty() || io.stopping {
                return Step::End(Ending::Answered);
            }
            self.queued_turn_by = Some(Instant::now() + QUEUED_TURN_START);
        }
        Step::Continue
    }

    async fn wake(&mut self) {
        match self.queued_turn_by {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    }

    fn on_wake(
        &mut self,
        _live: &mut Live<StreamSession>,
        _wake: (),
        _io: &mut TurnIo<'_>,
    ) -> Step<ClaudePermission> {
        tracing::warn!(untaken = ?self.untaken, "Claude Code did not take the steering after its result");
        Step::End(Ending::Answered)
    }

    /// The `interrupt` control request (its answer tells nothing the result will not).
    fn cancel(&mut self, _live: &mut Live<StreamSession>) -> bool {
        drop(self.control.request(json!({"subtype": "interrupt"})));
        true
    }

    /// A user line mid-turn: the CLI takes it at the next tool boundary, or after the turn.
    fn interject(
        &mut self,
        _live: &mut Live<StreamSession>,
        _kind: Interjection,
        text: &str,
    ) -> bool {
        if !self.control.user(text) {
            return false;
        }
        self.untaken.push(text.to_owned());
        self.publish_queue();
        true
    }

    /// "Always" adds the CLI's own suggested rules (or its suggested session-wide mode) for this
    /// session only; a rejection carries the user's note as deny's `message` (the model reads
    /// it as the tool's result).
    fn answer(
        &mut self,
        _live: &mut Live<StreamSession>,
        permission: ClaudePermission,
        reply: Reply<'_>,
    ) -> String {
        let answer = match reply.option {
            Some(option) => permission
                .allow_option(option)
                .unwrap_or_else(|| permission.deny(reply.note, reply.by)),
            None => permission.deny(Some("The user stopped the turn."), reply.by),
        };
        self.control.respond(&permission.request.id, answer)
    }

    /// Steering the CLI never took.
    fn undelivered(
        &mut self,
        _live: &mut Live<StreamSession>,
        _out: &mut Vec<AgentMessage>,
    ) -> Vec<String> {
        self.shared.queue.send_replace(AgentQueue::default());
        std::mem::take(&mut self.untaken)
    }
}

impl StreamTurn {
    fn publish_queue(&self) {
        self.shared.queue.send_replace(AgentQueue {
            steering: self.untaken.clone(),
            ..AgentQueue::default()
        });
    }

    /// A request of the CLI: a permission (a question, its request on record), or one agentty
    /// does not serve (refused).
    fn control_request(&mut self, value: &Value, io: &mut TurnIo<'_>) -> Step<ClaudePermission> {
        let request_id = value["request_id"].as_str().unwrap_or_default();
        let subtype = value["request"]["subtype"].as_str().unwrap_or_default();
        if subtype != "can_use_tool" {
            tracing::warn!(
                subtype,
                "Claude Code asked for something agentty does not serve"
            );
            self.control
                .refuse(request_id, &format!("agentty does not serve {subtype}"));
            return Step::Continue;
        }
        let Some(permission) = request_of(request_id, &value["request"]) else {
            self.control
                .refuse(request_id, "agentty could not read this permission request");
            return Step::Continue;
        };
        io.out.push(AgentMessage::PermissionRequest(Box::new(
            permission.request.clone(),
        )));
        Step::Ask(Question {
            request: permission.request.clone(),
            ticket: permission,
        })
    }
}

/// What a line means to the transport (besides what the mapper makes of it).
enum Side {
    /// A request of the CLI (`control_request`): answered, not mapped.
    ControlRequest(Value),
    /// A user line the CLI took (its replay): the text.
    Taken(String),
    /// `system/init` (each turn) or a `system/status` with the permission mode.
    Init {
        session_id: Option<String>,
        mode: Option<String>,
    },
    Turn,
}

fn side_line(line: &str) -> Side {
    let maybe = line.contains("\"control_request\"")
        || line.contains("\"isReplay\"")
        || line.contains("\"permissionMode\"");
    if !maybe {
        return Side::Turn;
    }
    let Ok(value) = serde_json::from_str::<Value>(line) else {
        return Side::Turn;
    };
    match value["type"].as_str() {
        Some("control_request") => Side::ControlRequest(value),
        Some("user") if value["isReplay"] == true => match &value["message"]["content"] {
            Value::String(text) => Side::Taken(text.clone()),
            _ => Side::Turn,
        },
        Some("system") => Side::Init {
            session_id: (value["subtype"] == "init")
                .then(|| value["session_id"].as_str().map(str::to_owned))
                .flatten(),
            mode: value["permissionMode"].as_str().map(str::to_owned),
        },
        _ => Side::Turn,
    }
}

/// How full the model's context window is: the tokens of the last model request (an
/// `assistant` line's `usage`: input, cache and output), of the window the `result` line's
/// `modelUsage` names.
#[derive(Debug, Default)]
pub(super) struct ContextCount {
    last_request: Option<u64>,
}

impl ContextCount {
    /// Reads one line; returns the context once a `result` line tells the window.
    fn observe(&mut self, line: &str) -> Option<ContextUse> {
        if !line.contains("\"usage\"") {
            return None;
        }
        let value: Value = serde_json::from_str(line).ok()?;
        match value["type"].as_str()? {
            "assistant" => {
                let usage = &value["message"]["usage"];
                let tokens = [
                    "input_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                    "output_tokens",
                ]
                .iter()
                .filter_map(|key| usage[key].as_u64())
                .sum::<u64>();
                if tokens > 0 {
                    self.last_request = Some(tokens);
                }
                None
            }
            "result" => {
                let window = value["modelUsage"]
                    .as_object()?
                    .values()
                    .filter_map(|model| model["contextWindow"].as_u64())
                    .max()?;
                ContextUse::new(self.last_request?, window)
            }
            _ => None,
        }
    }
}

fn is_result_line(line: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(rename = "type", borrow)]
        kind: std::borrow::Cow<'a, str>,
    }
    serde_json::from_str::<Head>(line).is_ok_and(|head| head.kind == "result")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_is_the_last_requests_tokens_of_the_results_window() {
        let mut context = ContextCount::default();
        let assistant = |input: u64, output: u64| {
            format!(
                r#"{{"type":"assistant","message":{{"usage":{{"input_tokens":{input},"cache_creation_input_tokens":0,"cache_read_input_tokens":1000,"output_tokens":{output}}}}}}}"#
            )
        };
        assert_eq!(context.observe(&assistant(1234, 1)), None);
        assert_eq!(context.observe(&assistant(99_000, 1)), None);
        let result = r#"{"type":"result","subtype":"success","usage":{"input_tokens":100234},"modelUsage":{"claude-opus-4-8[1m]":{"inputTokens":100234,"contextWindow":1000000}}}"#;
        let found = context.observe(result).expect("a context");
        assert_eq!(found, ContextUse::new(100_001, 1_000_000).unwrap());
        assert_eq!(found.percent(), 10);
        // A result that names no window (a stopped turn's `modelUsage: {}`) tells nothing.
        let stopped =
            r#"{"type":"result","subtype":"error_during_execution","usage":{},"modelUsage":{}}"#;
        assert_eq!(context.observe(stopped), None);
    }

    #[test]
    fn side_lines_are_told_apart_from_the_turn() {
        let request =
            r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool"}}"#;
        assert!(
            matches!(side_line(request), Side::ControlRequest(value) if value["request_id"] == "r1")
        );
        let replay =
            r#"{"type":"user","message":{"role":"user","content":"go left"},"isReplay":true}"#;
        assert!(matches!(side_line(replay), Side::Taken(text) if text == "go left"));
        // A tool result is the turn's, not a replay.
        let result =
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result"}]}}"#;
        assert!(matches!(side_line(result), Side::Turn));
        let init =
            r#"{"type":"system","subtype":"init","session_id":"s1","permissionMode":"plan"}"#;
        assert!(matches!(
            side_line(init),
            Side::Init { session_id: Some(id), mode: Some(mode) } if id == "s1" && mode == "plan"
        ));
        let status =
            r#"{"type":"system","subtype":"status","status":null,"permissionMode":"acceptEdits"}"#;
        assert!(matches!(
            side_line(status),
            Side::Init { session_id: None, mode: Some(mode) } if mode == "acceptEdits"
        ));
        assert!(matches!(side_line("not json \"isReplay\""), Side::Turn));
        assert!(is_result_line(r#"{"type":"result","subtype":"success"}"#));
        assert!(!is_result_line(r#"{"type":"assistant","result":"x"}"#));
    }
}
