//! A tool call's end (the `tool_result` blocks of `user` lines): its output or its error as
//! the user should read it, a task-list call's plan, and the lines of a sub-agent, which nest
//! under the call that runs it.

use serde_json::Value;

use super::super::sub_agent;
use super::super::tasks::{self, PlanCall};
use super::super::wire::{WireBlock, WireContent, WireLine};
use super::ClaudeMapper;
use crate::provider::tool_calls::ToolEnding;
use crate::provider::LineVerdict;
use crate::stream::{AgentMessage, NoticeKind};

impl ClaudeMapper {
    pub(super) fn map_user(
        &mut self,
        line: WireLine<'_>,
        out: &mut Vec<AgentMessage>,
    ) -> LineVerdict {
        let Some(message) = line.message else {
            return LineVerdict::Invalid;
        };
        // Text content is the prompt echoed back or the "[Request interrupted by user]"
        // marker: neither is assistant output.
        let Some(content) = message.content else {
            return LineVerdict::Event;
        };
        for block in content.blocks() {
            if block.kind == "tool_result" {
                self.end_tool_call(block, line.tool_use_result.as_ref(), out);
            }
        }
        LineVerdict::Event
    }

    fn end_tool_call(
        &mut self,
        block: &WireBlock<'_>,
        tool_use_result: Option<&Value>,
        out: &mut Vec<AgentMessage>,
    ) {
        let Some(id) = block.tool_use_id.as_deref() else {
            return;
        };
        if let Some(call) = self.plan_calls.remove(id) {
            self.end_plan_call(call, block, tool_use_result, out);
            return;
        }
        let output = if self.sub_agents.remove(id) {
            sub_agent::result_text(block.content.as_ref())
        } else {
            tool_output(block.content.as_ref(), tool_use_result)
        };
        let ending = if block.is_error == Some(true) {
            ToolEnding::Failed {
                error: user_facing_tool_error(output),
            }
        } else {
            ToolEnding::Completed { output }
        };
        self.tools.end(id, ending, out);
    }

    /// A task-list call ended: the plan it leaves, or why the list did not change.
    fn end_plan_call(
        &mut self,
        call: PlanCall,
        block: &WireBlock<'_>,
        tool_use_result: Option<&Value>,
        out: &mut Vec<AgentMessage>,
    ) {
        let text = block
            .content
            .as_ref()
            .map(WireContent::text)
            .unwrap_or_default();
        if block.is_error == Some(true) {
            out.push(AgentMessage::notice(
                NoticeKind::Warning,
                format!(
                    "Claude Code could not update its task list: {}",
                    user_facing_tool_error(text.into_owned())
                ),
            ));
            return;
        }
        let entries = self.tasks.apply(call, tool_use_result, &text);
        if let Some(session) = &self.tasks_session {
            tasks::store(session, &self.tasks);
        }
        out.push(AgentMessage::Plan { entries });
    }

    /// A line of the sub-agent that call `parent` runs: its tool calls nest under that call,
    /// its words are the call's live output; its prompt (a `user` text) is not shown.
    pub(super) fn map_sub_agent(
        &mut self,
        parent: &str,
        line: WireLine<'_>,
        out: &mut Vec<AgentMessage>,
    ) -> LineVerdict {
        let Some(content) = line.message.and_then(|message| message.content) else {
            return LineVerdict::Invalid;
        };
        let user = line.kind == "user";
        // A call whose start was lost shows the sub-agent's calls as the agent's own.
        let under = self.tools.is_open(parent).then_some(parent);
        for block in content.blocks() {
            match block.kind.as_ref() {
                "tool_use" if !user => self.tools.start_under(
                    under,
                    block.id.as_deref().unwrap_or_default(),
                    block.name.as_deref().unwrap_or_default(),
                    block.input.clone().unwrap_or(Value::Null),
                    out,
                ),
                "tool_result" => self.end_tool_call(block, line.tool_use_result.as_ref(), out),
                "text" if !user && !block.text.trim().is_empty() => {
                    self.tools.update(parent, block.text.trim().to_owned(), out);
                }
                _ => {}
            }
        }
        LineVerdict::Event
    }
}

/// A tool's output: the result text, else the tool's structured result (Bash: stdout/stderr).
fn tool_output(content: Option<&WireContent<'_>>, tool_use_result: Option<&Value>) -> String {
    let text = content.map(WireContent::text).unwrap_or_default();
    if !text.is_empty() {
        return text.into_owned();
    }
    match tool_use_result {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Object(fields)) => ["stdout", "stderr"]
            .iter()
            .filter_map(|key| fields.get(*key).and_then(Value::as_str))
            .filter(|text| !text.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Claude Code's note to the model when the user interrupted a tool ("The user doesn't want to
/// proceed with this tool use… STOP what you are doing…") is not for the user: it says that the
/// user stopped the tool, and that is what the user is shown.
const TOOL_REJECTED_BY_USER: &str = "The user doesn't want to proceed with this tool use";

fn user_facing_tool_error(error: String) -> String {
    if error.starts_with(TOOL_REJECTED_BY_USER) {
        "stopped by the user".to_owned()
    } else {
        error
    }
}
