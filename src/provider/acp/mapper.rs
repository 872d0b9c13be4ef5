//! Agent Client Protocol messages from the agent -> shared messages (pure: lines in, messages
//! out). The wire types are the `agent-client-protocol-schema` crate's.
//!
//! - `session/update` notifications: message chunks are true deltas (`assistant`); thought
//!   chunks stream live (`assistant.thinking`) and are held whole, one block per run of
//!   chunks, until the prompt's answer ends the turn (`assistant.thought`), so a thought never
//!   falls between a tool call and its end; `plan` replaces the plan; the context usage is kept
//!   for the turn's `terminal.completed`.
//! - Tool calls: a `tool_call` with nothing to show yet (the Claude adapter's first "Terminal"
//!   with an empty `rawInput`) is announced when an update brings its input, or at its end.
//!   An agent that asks permission for a call it never announced (Gemini) has the call
//!   announced from the request. A call the user refused ends as failed when the agent says
//!   nothing more of it (Gemini sends no update then).
//! - `session/request_permission` becomes `permission.request` (its JSON-RPC id is the
//!   request's `id`); the provider answers it and says how (`permission.resolved`), and hands
//!   the answer it wrote to [`AcpMapper::answered`].
//! - The response to `session/prompt` ends the turn: its `stopReason` (`cancelled`: the agent
//!   confirmed our stop, or after a refused permission ended the turn itself, as the Codex
//!   adapter does; `refusal`, `max_tokens`, `max_turn_requests`: a failure that says the
//!   answer is not complete, and why), or its JSON-RPC error (a failure with the agent's
//!   message).
//! - A `tool_call_update` that brings a call's title, input or locations restates the call
//!   (`tool.call` again with its id): what the agent says now replaces what was shown. Other
//!   responses (to ids nobody used), requests and updates of kinds not known here are ignored
//!   and logged; a line that is not JSON-RPC is invalid.

use std::collections::HashMap;

use agent_client_protocol_schema::v1 as acp;
use serde_json::value::RawValue;
use serde_json::Value;

use super::content::{
    chunk_text, command_of, content_text, counted_nothing, is_cancelled_output, is_empty_input,
    kind_name, no_input, output_of, plain_tool_output, plan_entry, turn_usage, CUT_STREAM,
    GEMINI_MODE_UPDATE,
};
use crate::provider::errors::api_error_words;
use crate::provider::http_status::http_status_in;
pub(crate) use crate::provider::json_rpc::{id_key, RpcHead};
use crate::provider::tool_calls::{ToolCalls, ToolEnding};
use crate::provider::{AgentOutcome, ExitFacts, LineVerdict, Mapper};
use crate::stream::{
    AgentMessage, FailureReason, FileDiff, PermissionOption, PermissionOptionKind,
    PermissionRequest,
};

/// The stop reason of a prompt the agent ended because we cancelled it.
const STOP_CANCELLED: &str = "cancelled";
/// The method by which the agent asks before acting.
pub(crate) const REQUEST_PERMISSION: &str = "session/request_permission";

pub(crate) struct AcpMapper {
    /// The `session/prompt` request's id, when known (a replay of a log does not know it:
    /// then any response with a stop reason or an error ends the turn).
    prompt_id: Option<String>,
    tools: ToolCalls,
    /// Calls the agent announced with nothing to show yet: id -> title.
    quiet_calls: HashMap<String, String>,
    /// What each announced call was last shown as: id -> (title, input).
    shown_calls: HashMap<String, (String, Value)>,
    /// The thought block being streamed, and the complete ones waiting for the turn's end.
    thought: String,
    held_thoughts: Vec<String>,
    /// Open permission requests: request id -> (tool call id, the options offered).
    permissions: HashMap<String, (Option<String>, Vec<PermissionOption>)>,
    /// A permission was refused in this turn (some agents then end the turn `cancelled`).
    refused: bool,
    /// How the agent's error messages name an HTTP status they do not state as a number.
    http_status_of: Option<fn(&str) -> Option<u16>>,
    /// The turn streamed assistant text.
    wrote: bool,
    outcome: Option<AgentOutcome>,
}

impl AcpMapper {
    pub(crate) fn new(prompt_id: Option<String>) -> Self {
        Self {
            prompt_id,
            tools: ToolCalls::default(),
            quiet_calls: HashMap::new(),
            shown_calls: HashMap::new(),
            thought: String::new(),
            held_thoughts: Vec::new(),
            permissions: HashMap::new(),
            refused: false,
            http_status_of: None,
            wrote: false,
            outcome: None,
        }
    }

    /// Reads an HTTP status out of the agent's error wording with `status_of` too (see
    /// `Quirks::http_status_of`).
    pub(crate) fn with_http_status_of(
        mut self,
        status_of: Option<fn(&str) -> Option<u16>>,
    ) -> Self {
        self.http_status_of = status_of;
        self
    }

    /// The client answered permission request `id` with `option` (`None`: cancelled). A call
    /// refused here ends as failed: the agent may say nothing more of it.
    fn answered(&mut self, id: &str, option: Option<&str>, out: &mut Vec<AgentMessage>) {
        let Some((tool_call_id, options)) = self.permissions.remove(id) else {
            return;
        };
        let allowed = option
            .and_then(|option| options.iter().find(|offered| offered.id == option))
            .is_some_and(|offered| offered.kind.allows());
        self.refused |= !allowed;
        if let (false, Some(tool_call_id)) = (allowed, tool_call_id) {
            self.quiet_calls.remove(&tool_call_id);
            let error = if option.is_some() {
                "refused: the agent was not allowed to run it"
            } else {
                "cancelled before the agent was allowed to run it"
            };
            self.tools.end(
                &tool_call_id,
                ToolEnding::Failed {
                    error: error.to_owned(),
                },
                out,
            );
        }
    }

    fn end_thought(&mut self) {
        if !self.thought.is_empty() {
            self.held_thoughts.push(std::mem::take(&mut self.thought));
        }
    }

    fn map_update(&mut self, params: &RawValue, out: &mut Vec<AgentMessage>) -> LineVerdict {
        let notification: acp::SessionNotification = match serde_json::from_str(params.get()) {
            Ok(notification) => notification,
            Err(error) => {
                // A kind this schema does not know (or a broken one): the turn goes on.
                tracing::debug!(%error, "session/update not understood; ignored");
                return LineVerdict::Ignored;
            }
        };
        match notification.update {
            acp::SessionUpdate::AgentMessageChunk(chunk) => {
                self.end_thought();
                if let Some(mode) = chunk_text(&chunk.content)
                    .and_then(|text| text.strip_prefix(GEMINI_MODE_UPDATE))
                {
                    // Gemini CLI says its approval mode changed as answer text; it is not.
                    out.push(AgentMessage::Notice {
                        kind: crate::stream::NoticeKind::ModeChanged,
                        message: format!("The agent is now in {} mode", mode.trim()),
                    });
                    return LineVerdict::Event;
                }
                if let Some(text) = chunk_text(&chunk.content) {
                    if !text.is_empty() {
                        self.wrote = true;
                        out.push(AgentMessage::Assistant {
                            delta: text.to_owned(),
                        });
                    }
                }
            }
            acp::SessionUpdate::AgentThoughtChunk(chunk) => {
                if let Some(text) = chunk_text(&chunk.content) {
                    if !text.is_empty() {
                        self.thought.push_str(text);
                        out.push(AgentMessage::Thinking {
                            delta: text.to_owned(),
                        });
                    }
                }
            }
            acp::SessionUpdate::ToolCall(call) => {
                self.end_thought();
                self.tool_call(call, out);
            }
            acp::SessionUpdate::ToolCallUpdate(update) => self.tool_update(update, out),
            acp::SessionUpdate::Plan(plan) => out.push(AgentMessage::Plan {
                entries: plan.entries.iter().map(plan_entry).collect(),
            }),
            // `used` is the context window's fill after the turn's last request and `cost` the
            // session's running total (the schema's words): neither is the turn's own figure
            // that `terminal.completed` carries (codex-acp: 1.0k "used" for a turn that sent
            // 2,030 tokens), so they are not passed off as one.
            acp::SessionUpdate::UsageUpdate(usage) => {
                tracing::debug!(used = usage.used, size = usage.size, "ACP context usage");
                return LineVerdict::Ignored;
            }
            // History replayed by `session/load`, and what the agent offers (commands, modes).
            _ => return LineVerdict::Ignored,
        }
        LineVerdict::Event
    }

    fn tool_call(&mut self, call: acp::ToolCall, out: &mut Vec<AgentMessage>) {
        let id = call.tool_call_id.to_string();
        let input = call
            .raw_input
            .clone()
            .filter(|input| !is_empty_input(input));
        let ended = matches!(
            call.status,
            acp::ToolCallStatus::Completed | acp::ToolCallStatus::Failed
        );
        if input.is_none() && call.content.is_empty() && !ended {
            self.quiet_calls.insert(id, call.title);
            return;
        }
        let input = with_location(input.unwrap_or_else(no_input), &call.locations);
        self.announce(&id, &call.title, input, out);
        self.tool_progress(&id, Some(call.status), &call.content, call.raw_output, out);
    }

    /// Announces call `id` (once) and remembers how it was shown.
    fn announce(&mut self, id: &str, title: &str, input: Value, out: &mut Vec<AgentMessage>) {
        if self.tools.is_open(id) {
            return;
        }
        self.tools.start(id, title, input.clone(), out);
        if self.tools.is_open(id) {
            self.shown_calls
                .insert(id.to_owned(), (title.to_owned(), input));
        }
    }

    /// A `tool_call_update` of a call already shown that brings a new title, input or
    /// locations: what it says now replaces what was shown (opencode first announces `bash`
    /// with only `{cwd}`, then gives the title and the command).
    fn refine(
        &mut self,
        id: &str,
        fields: &acp::ToolCallUpdateFields,
        out: &mut Vec<AgentMessage>,
    ) {
        let Some((title, input)) = self.shown_calls.get(id) else {
            return;
        };
        let new_title = fields
            .title
            .clone()
            .filter(|title| !title.trim().is_empty());
        let new_input = fields
            .raw_input
            .clone()
            .filter(|input| !is_empty_input(input));
        let locations = fields.locations.as_deref().unwrap_or_default();
        if new_title.is_none() && new_input.is_none() && locations.is_empty() {
            return;
        }
        let title = new_title.unwrap_or_else(|| title.clone());
        let input = with_location(new_input.unwrap_or_else(|| input.clone()), locations);
        if self.shown_calls.get(id) == Some(&(title.clone(), input.clone())) {
            return;
        }
        self.tools.restate(id, &title, input.clone(), out);
        self.shown_calls.insert(id.to_owned(), (title, input));
    }

    fn tool_update(&mut self, update: acp::ToolCallUpdate, out: &mut Vec<AgentMessage>) {
        let id = update.tool_call_id.to_string();
        let fields = update.fields;
        if let Some(quiet_title) = self.quiet_calls.get(&id) {
            let input = fields
                .raw_input
                .clone()
                .filter(|input| !is_empty_input(input));
            let speaks = input.is_some()
                || fields
                    .content
                    .as_ref()
                    .is_some_and(|content| !content.is_empty())
                || matches!(
                    fields.status,
                    Some(
                        acp::ToolCallStatus::InProgress
                            | acp::ToolCallStatus::Completed
                            | acp::ToolCallStatus::Failed
                    )
                );
            if !speaks {
                return;
            }
            let title = fields.title.clone().unwrap_or_else(|| quiet_title.clone());
            let locations = fields.locations.as_deref().unwrap_or_default();
            let input = with_location(input.unwrap_or_else(no_input), locations);
            self.quiet_calls.remove(&id);
            self.announce(&id, &title, input, out);
        } else {
            self.refine(&id, &fields, out);
        }
        self.tool_progress(
            &id,
            fields.status,
            fields.content.as_deref().unwrap_or_default(),
            fields.raw_output,
            out,
        );
    }

    fn tool_progress(
        &mut self,
        id: &str,
        status: Option<acp::ToolCallStatus>,
        content: &[acp::ToolCallContent],
        raw_output: Option<Value>,
        out: &mut Vec<AgentMessage>,
    ) {
        let mut output = content_text(content);
        if output.is_empty() {
            output = raw_output.map(output_of).unwrap_or_default();
        }
        let output = plain_tool_output(&output);
        match status {
            // Gemini CLI reports a command that Esc stopped as completed, saying so in its
            // output: it did not finish.
            Some(acp::ToolCallStatus::Completed) if is_cancelled_output(&output) => {
                let error = format!("stopped before the tool call finished ({output})");
                self.tools.end(id, ToolEnding::Failed { error }, out);
            }
            Some(acp::ToolCallStatus::Completed) => {
                self.tools.end(id, ToolEnding::Completed { output }, out);
            }
            Some(acp::ToolCallStatus::Failed) => {
                let error = if output.is_empty() {
                    "the tool call failed".to_owned()
                } else {
                    output
                };
                self.tools.end(id, ToolEnding::Failed { error }, out);
            }
            _ if !output.is_empty() => self.tools.update(id, output, out),
            _ => {}
        }
    }

    fn permission_request(
        &mut self,
        id: &Value,
        params: &RawValue,
        out: &mut Vec<AgentMessage>,
    ) -> LineVerdict {
        let request: acp::RequestPermissionRequest = match serde_json::from_str(params.get()) {
            Ok(request) => request,
            Err(error) => {
                tracing::warn!(%error, "a permission request not understood");
                return LineVerdict::Invalid;
            }
        };
        let call = request.tool_call;
        let tool_call_id = call.tool_call_id.to_string();
        let fields = call.fields;
        let kind = fields
            .kind
            .as_ref()
            .map(kind_name)
            .unwrap_or_else(|| "other".to_owned());
        let title = fields
            .title
            .clone()
            .or_else(|| self.quiet_calls.get(&tool_call_id).cloned())
            .unwrap_or_else(|| kind.clone());
        let input = fields
            .raw_input
            .clone()
            .filter(|input| !is_empty_input(input));
        // The call the permission is for is shown from here on (announced now if the agent
        // never did, or said nothing yet).
        self.quiet_calls.remove(&tool_call_id);
        let shown = with_location(
            input.clone().unwrap_or_else(no_input),
            fields.locations.as_deref().unwrap_or_default(),
        );
        if self.tools.is_open(&tool_call_id) {
            self.refine(&tool_call_id, &fields, out);
        } else {
            self.announce(&tool_call_id, &title, shown, out);
        }
        let content = fields.content.as_deref().unwrap_or_default();
        let diffs = content
            .iter()
            .filter_map(|content| match content {
                acp::ToolCallContent::Diff(diff) => Some(FileDiff {
                    path: diff.path.display().to_string(),
                    old_text: diff.old_text.clone(),
                    new_text: diff.new_text.clone(),
                }),
                _ => None,
            })
            .collect();
        let paths = fields
            .locations
            .as_deref()
            .unwrap_or_default()
            .iter()
            .map(|location| location.path.display().to_string())
            .collect();
        let options: Vec<PermissionOption> = request
            .options
            .iter()
            .map(|option| PermissionOption {
                id: option.option_id.to_string(),
                kind: match option.kind {
                    acp::PermissionOptionKind::AllowOnce => PermissionOptionKind::AllowOnce,
                    acp::PermissionOptionKind::AllowAlways => PermissionOptionKind::AllowAlways,
                    acp::PermissionOptionKind::RejectOnce => PermissionOptionKind::RejectOnce,
                    acp::PermissionOptionKind::RejectAlways => PermissionOptionKind::RejectAlways,
                    _ => PermissionOptionKind::RejectOnce,
                },
                name: option.name.clone(),
            })
            .collect();
        let key = id_key(id);
        self.permissions
            .insert(key.clone(), (Some(tool_call_id.clone()), options.clone()));
        out.push(AgentMessage::PermissionRequest(Box::new(
            PermissionRequest {
                id: key,
                tool_call_id: Some(tool_call_id),
                title,
                kind,
                options,
                command: input.as_ref().and_then(command_of),
                paths,
                diffs,
            },
        )));
        LineVerdict::Event
    }

    fn prompt_answer(&mut self, head: RpcHead, out: &mut Vec<AgentMessage>) -> LineVerdict {
        if let Some(error) = head.error {
            let described = error.describe();
            let worded = || {
                self.http_status_of
                    .and_then(|status_of| status_of(&described))
            };
            self.outcome = Some(AgentOutcome::Failed {
                reason: FailureReason::AgentError,
                http_status: error
                    .http_status()
                    .or_else(|| http_status_in(&described))
                    .or_else(worded),
                // Said plainly (a dropped connection) where the attempt's failure is composed.
                message: api_error_words(&described),
            });
        } else {
            let result = head.result.unwrap_or(Value::Null);
            let stop_reason = result["stopReason"]
                .as_str()
                .unwrap_or("end_turn")
                .to_owned();
            self.end_thought();
            self.tools.release_thoughts(&mut self.held_thoughts, out);
            // `cancelled` confirms our stop; after a refusal it is the agent ending the turn
            // itself (the Codex adapter does), which is a finished turn, not a broken one.
            let usage = turn_usage(&result);
            self.outcome = Some(if stop_reason == STOP_CANCELLED && !self.refused {
                AgentOutcome::Aborted
            } else if let Some(message) = unfinished_stop(&stop_reason) {
                // Not a finished answer, whatever text came: said as what it is.
                AgentOutcome::Failed {
                    reason: FailureReason::AgentError,
                    message: message.to_owned(),
                    http_status: None,
                }
            } else if self.wrote && counted_nothing(&result) {
                AgentOutcome::Failed {
                    reason: FailureReason::NoCompletion,
                    message: CUT_STREAM.to_owned(),
                    http_status: None,
                }
            } else {
                AgentOutcome::Completed { stop_reason, usage }
            });
        }
        LineVerdict::Event
    }
}

impl Mapper for AcpMapper {
    fn map_line(&mut self, line: &str, out: &mut Vec<AgentMessage>) -> LineVerdict {
        let Some(head) = RpcHead::parse(line) else {
            return LineVerdict::Invalid;
        };
        let null = RawValue::NULL;
        let params = head.params.as_deref().unwrap_or(null);
        match (&head.method, &head.id) {
            (Some(method), None) if method == "session/update" => self.map_update(params, out),
            (Some(method), Some(id)) if method == REQUEST_PERMISSION => {
                self.permission_request(id, params, out)
            }
            (Some(method), _) => {
                tracing::debug!(method, "ACP message not mapped; ignored");
                LineVerdict::Ignored
            }
            (None, Some(id)) => {
                let is_prompt = match &self.prompt_id {
                    Some(prompt_id) => *prompt_id == id_key(id),
                    None => {
                        head.error.is_some()
                            || head
                                .result
                                .as_ref()
                                .is_some_and(|result| result.get("stopReason").is_some())
                    }
                };
                if is_prompt && self.outcome.is_none() {
                    self.prompt_answer(head, out)
                } else {
                    tracing::debug!(id = %id, "a response to no request of this turn; ignored");
                    LineVerdict::Ignored
                }
            }
            (None, None) => LineVerdict::Invalid,
        }
    }

    /// Our answer to a permission request: a refused call ends here.
    fn map_client_line(&mut self, line: &str, out: &mut Vec<AgentMessage>) {
        let Some(head) = RpcHead::parse(line).filter(RpcHead::is_response) else {
            return;
        };
        let (Some(id), Some(result)) = (&head.id, &head.result) else {
            return;
        };
        let option = result["outcome"]["optionId"].as_str();
        self.answered(&id_key(id), option, out);
    }

    fn outcome_reported(&self) -> bool {
        self.outcome.is_some()
    }

    fn finish(&mut self, exit: ExitFacts, out: &mut Vec<AgentMessage>) -> AgentOutcome {
        self.end_thought();
        let quiet: Vec<(String, String)> = self.quiet_calls.drain().collect();
        for (id, title) in quiet {
            // A call the agent never got to show: announce it so that its end can be told.
            self.tools.start(&id, &title, no_input(), out);
        }
        self.tools
            .fail_all_open("the agent", exit.stopped_by_us, out);
        self.tools.release_thoughts(&mut self.held_thoughts, out);
        self.outcome.clone().unwrap_or(AgentOutcome::Unfinished)
    }
}

/// What a stop reason that ends the turn without a finished answer means (ACP's `refusal`,
/// `max_tokens`, `max_turn_requests`); `None` for the others.
fn unfinished_stop(stop_reason: &str) -> Option<&'static str> {
    match stop_reason {
        "refusal" => Some(
            "The agent refused to answer this prompt (stop reason: refusal); the answer is not \
             complete. Rephrase the prompt, or ask something else.",
        ),
        "max_tokens" => Some(
            "The answer was cut off: the model reached its output token limit (stop reason: \
             max_tokens). Ask it to continue, or to answer in smaller parts.",
        ),
        "max_turn_requests" => Some(
            "The agent stopped before finishing: it reached its most model requests for one \
             turn (stop reason: max_turn_requests). Ask it to continue.",
        ),
        _ => None,
    }
}

/// `input` naming the file the call is about where the agent gives it only as a location (a
/// write or edit pane names its path, not the file's content).
fn with_location(input: Value, locations: &[acp::ToolCallLocation]) -> Value {
    const PATH_KEYS: [&str; 5] = [
        "path",
        "file_path",
        "filePath",
        "notebook_path",
        "absolute_path",
    ];
    let Some(location) = locations.first() else {
        return input;
    };
    match input {
        // A command's location is where it runs, not what it is about.
        Value::Object(mut fields) => {
            let about_a_file = !fields.contains_key("command") && !fields.contains_key("cwd");
            if about_a_file && !PATH_KEYS.iter().any(|key| fields.contains_key(*key)) {
                fields.insert(
                    "path".to_owned(),
                    Value::String(location.path.display().to_string()),
                );
            }
            Value::Object(fields)
        }
        other => other,
    }
}

#[cfg(test)]
#[path = "mapper_tests.rs"]
mod tests;
