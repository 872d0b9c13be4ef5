//! The one tracker of open tool calls, used by every mapper (pi, Claude, Codex, Gemini).
//!
//! Whatever order, repetition or loss of lines an agent's stream has, the shared stream it
//! yields keeps the tool-call structure (`tests/support/replay.rs`, `structure_violations`):
//! - a `tool.call` id is announced once: a repeated start (of an open or an ended call) is
//!   dropped;
//! - `tool.update`, `tool.completed` and `tool.failed` name only an open call: an update or end
//!   of a call that is not open is dropped, with a debug line (its start was lost, or it ended
//!   already). Backends whose CLI prints some calls only once, as ended, announce them on the
//!   way ([`ToolCalls::complete_announcing`]);
//! - calls still open when the agent ends are failed by the mapper's `finish`
//!   ([`ToolCalls::fail_all_open`], in one wording for every agent);
//! - while a call is open, complete thoughts are held back ([`ToolCalls::release_thoughts`]).

use std::collections::HashSet;

use serde_json::Value;

use crate::stream::AgentMessage;

/// How a tool call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToolEnding {
    Completed { output: String },
    Failed { error: String },
}

/// The tool calls of one attempt: those open (in start order, with their last output), and
/// those that have ended.
#[derive(Debug, Default)]
pub(crate) struct ToolCalls {
    open: Vec<OpenCall>,
    ended: HashSet<String>,
}

#[derive(Debug)]
struct OpenCall {
    id: String,
    /// The output of the last update, so an update that repeats it is not shown again.
    last_output: String,
}

impl ToolCalls {
    /// Announces a call, unless it was announced before (a repeated start line).
    pub(crate) fn start(
        &mut self,
        id: &str,
        name: &str,
        input: Value,
        out: &mut Vec<AgentMessage>,
    ) {
        self.start_under(None, id, name, input, out);
    }

    /// Announces a call a sub-agent made, under the call `parent` that runs it (`None`: the
    /// agent's own), unless it was announced before.
    pub(crate) fn start_under(
        &mut self,
        parent: Option<&str>,
        id: &str,
        name: &str,
        input: Value,
        out: &mut Vec<AgentMessage>,
    ) {
        if self.is_open(id) || self.has_ended(id) {
            tracing::debug!(id, "repeated start of a tool call; dropped");
            return;
        }
        self.open.push(OpenCall {
            id: id.to_owned(),
            last_output: String::new(),
        });
        out.push(AgentMessage::ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            input,
            parent_id: parent.map(str::to_owned),
        });
    }

    /// An open call as the agent describes it now (a better title, its real input): a
    /// `tool.call` with the id already announced, which replaces its name and input wherever
    /// it is shown.
    pub(crate) fn restate(
        &mut self,
        id: &str,
        name: &str,
        input: Value,
        out: &mut Vec<AgentMessage>,
    ) {
        if !self.is_open(id) {
            return;
        }
        out.push(AgentMessage::ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            input,
            parent_id: None,
        });
    }

    /// Partial output of an open call; the output so far, so one equal to the last is dropped.
    pub(crate) fn update(&mut self, id: &str, output: String, out: &mut Vec<AgentMessage>) {
        let Some(position) = self.open_position(id, "update") else {
            return;
        };
        let call = &mut self.open[position];
        if call.last_output == output {
            return;
        }
        call.last_output.clone_from(&output);
        out.push(AgentMessage::ToolUpdate {
            id: id.to_owned(),
            output,
        });
    }

    /// Ends an open call; the end of a call that is not open is dropped.
    pub(crate) fn end(&mut self, id: &str, ending: ToolEnding, out: &mut Vec<AgentMessage>) {
        let Some(position) = self.open_position(id, "end") else {
            return;
        };
        let call = self.open.remove(position);
        self.ended.insert(call.id);
        out.push(ending.into_message(id.to_owned()));
    }

    /// Ends a call, announcing it first with `name` and `input` if it was never started (for
    /// CLIs that print some calls only once, already ended). The end of a call that has ended
    /// already is dropped.
    pub(crate) fn complete_announcing(
        &mut self,
        id: &str,
        (name, input): (&str, Value),
        ending: ToolEnding,
        out: &mut Vec<AgentMessage>,
    ) {
        if !self.is_open(id) && !self.has_ended(id) {
            self.start(id, name, input, out);
        }
        self.end(id, ending, out);
    }

    /// Fails every call still open: `agent` (its name for the user) ended without finishing
    /// them, or was stopped by us (`stopped_by_us`).
    pub(crate) fn fail_all_open(
        &mut self,
        agent: &str,
        stopped_by_us: bool,
        out: &mut Vec<AgentMessage>,
    ) {
        let error = if stopped_by_us {
            "stopped before the tool call finished".to_owned()
        } else {
            format!("{agent} ended before the tool call finished")
        };
        for call in self.open.drain(..) {
            out.push(AgentMessage::ToolFailed {
                id: call.id.clone(),
                error: error.clone(),
            });
            self.ended.insert(call.id);
        }
    }

    pub(crate) fn is_open(&self, id: &str) -> bool {
        self.open.iter().any(|call| call.id == id)
    }

    /// Shows the `held` complete thoughts, unless a call is open: a thought never falls between
    /// a call and its end, so they wait for a later release (at the latest the mapper's
    /// `finish`, after [`Self::fail_all_open`]).
    pub(crate) fn release_thoughts(&self, held: &mut Vec<String>, out: &mut Vec<AgentMessage>) {
        if self.open.is_empty() {
            out.extend(held.drain(..).map(|text| AgentMessage::Thought { text }));
        }
    }

    /// Where call `id` is among the open ones; `None`, logged, when the `event` for it is to
    /// be dropped because it is not open.
    fn open_position(&self, id: &str, event: &str) -> Option<usize> {
        let position = self.open.iter().position(|call| call.id == id);
        if position.is_none() {
            tracing::debug!(
                id,
                event,
                "tool call event for a call that is not open; dropped"
            );
        }
        position
    }

    fn has_ended(&self, id: &str) -> bool {
        self.ended.contains(id)
    }
}

impl ToolEnding {
    /// `Completed` if `failed` is false, else `Failed` with the output as the error.
    pub(crate) fn from_output(failed: bool, output: String) -> Self {
        if failed {
            ToolEnding::Failed { error: output }
        } else {
            ToolEnding::Completed { output }
        }
    }

    fn into_message(self, id: String) -> AgentMessage {
        match self {
            ToolEnding::Completed { output } => AgentMessage::ToolCompleted { id, output },
            ToolEnding::Failed { error } => AgentMessage::ToolFailed { id, error },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn completed(output: &str) -> ToolEnding {
        ToolEnding::Completed {
            output: output.into(),
        }
    }

    #[test]
    fn every_tool_call_is_announced_once_and_ended_once() {
        let mut tools = ToolCalls::default();
        let mut out = Vec::new();
        tools.start("a", "shell", json!({"command": "ls"}), &mut out);
        tools.start("a", "shell", json!({"command": "ls"}), &mut out);
        tools.update("a", String::new(), &mut out);
        tools.update("a", "partial".into(), &mut out);
        tools.update("a", "partial".into(), &mut out);
        tools.end("a", completed("done"), &mut out);
        tools.end("a", completed("done"), &mut out);
        tools.update("a", "late".into(), &mut out);
        tools.start("a", "shell", Value::Null, &mut out);
        // Ended without a start: announced first, with the name and input given; once only.
        for _ in 0..2 {
            tools.complete_announcing(
                "b",
                ("apply_patch", json!({})),
                ToolEnding::Failed {
                    error: "bad patch".into(),
                },
                &mut out,
            );
        }
        tools.start("c", "sleep", Value::Null, &mut out);
        tools.fail_all_open("Codex", false, &mut out);
        tools.end("c", completed("too late"), &mut out);
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
                r#"{"type":"tool.failed","id":"c","error":"Codex ended before the tool call finished"}"#,
            ]
        );
        assert!(!tools.is_open("c"));
    }

    #[test]
    fn updates_and_ends_of_a_call_never_started_are_dropped() {
        let mut tools = ToolCalls::default();
        let mut out = Vec::new();
        tools.update("lost", "output".into(), &mut out);
        tools.end("lost", completed("output"), &mut out);
        assert_eq!(out, []);
        assert!(!tools.is_open("lost"));
    }
}
