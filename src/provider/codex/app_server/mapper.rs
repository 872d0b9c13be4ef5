//! Codex app-server notifications of one turn -> shared messages (pure: lines in, messages out).
//!
//! What it reads (protocols/codex/README.md "codex app-server", captures in
//! tests/fixtures/codex_app_server/):
//! - `item/agentMessage/delta` is true assistant text, delta by delta; an `agentMessage` item
//!   that completes without deltas gives its text whole;
//! - `item/reasoning/summaryTextDelta` and `item/reasoning/textDelta` stream thinking; the
//!   completed `reasoning` item is the thought (released when no tool call is open);
//! - `commandExecution`, `fileChange`, `mcpToolCall` and `webSearch` items are tool calls,
//!   `item/commandExecution/outputDelta` their output so far;
//! - `item/commandExecution/requestApproval` and `item/fileChange/requestApproval` (requests
//!   of the agent, with a JSON-RPC id) are permission requests, their options Codex's own
//!   decisions;
//! - `thread/tokenUsage/updated` gives each model request's usage (`last`): the turn's usage is
//!   their sum;
//! - `turn/completed` ends the turn: `completed`, `failed` (with Codex's error) or
//!   `interrupted`;
//! - `turn/plan/updated` (Codex's `update_plan`) is the plan;
//! - `warning` and `configWarning` are notices; an `error` that Codex will retry is an
//!   `agent_retry` notice.
//!
//! Only the lines of this attempt's turn count: the first `turn/started` names it, and a line
//! naming another turn (a late line of a stopped one) is ignored.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};

use super::approvals::{approval, COMMAND_APPROVAL, FILE_CHANGE_APPROVAL};
use crate::provider::codex::items::{
    change_json, mcp_result_text, mcp_tool_name, patch_text, plan_entries, unwrap_shell,
};
use crate::provider::mapper::{AgentOutcome, ExitFacts, LineVerdict, Mapper};
use crate::provider::tool_calls::{ToolCalls, ToolEnding};
use crate::stream::{AgentMessage, FailureReason, NoticeKind, Usage};

/// The agent, as its tool failures name it.
const AGENT: &str = crate::provider::ProviderKind::Codex.display_name();

/// The most tool output kept per call (a command that floods must not grow memory).
const MAX_TOOL_OUTPUT: usize = 64 * 1024;

/// The Codex app-server mapper of one attempt.
pub struct AppServerMapper {
    /// The prompt this turn was started with (a user message with other text was steering);
    /// empty when unknown (a replayed log): the turn's first user message.
    prompt: String,
    turn_id: Option<String>,
    tools: ToolCalls,
    /// Output so far of each open command (cumulative, as `tool.update` carries it).
    outputs: HashMap<String, String>,
    /// The items seen so far (for approvals: what the command or change is).
    items: HashMap<String, Value>,
    /// Agent messages that streamed deltas (their completed text is not repeated).
    streamed: HashSet<String>,
    held_thoughts: Vec<String>,
    usage: Option<Usage>,
    ended: Option<AgentOutcome>,
    /// agentty answered an approval `cancel` (the user refused and stopped the turn).
    refused_and_stopped: bool,
}

impl AppServerMapper {
    pub fn new(prompt: &str) -> Self {
        Self {
            prompt: prompt.to_owned(),
            turn_id: None,
            tools: ToolCalls::default(),
            outputs: HashMap::new(),
            items: HashMap::new(),
            streamed: HashSet::new(),
            held_thoughts: Vec::new(),
            usage: None,
            ended: None,
            refused_and_stopped: false,
        }
    }

    /// Whether a line belongs to this attempt's turn: one naming another turn, or naming a
    /// turn before this one started (a late line of a stopped turn), does not.
    fn ours(&self, method: &str, params: &Value) -> bool {
        let turn = params["turnId"].as_str().or(params["turn"]["id"].as_str());
        match (turn, &self.turn_id) {
            (Some(turn), Some(ours)) => turn == ours,
            (Some(_), None) => method == "turn/started",
            (None, _) => true,
        }
    }

    fn notification(&mut self, method: &str, params: &Value, out: &mut Vec<AgentMessage>) -> bool {
        if !self.ours(method, params) {
            tracing::debug!(method, "a line of another turn; ignored");
            return true;
        }
        match method {
            "turn/started" => {
                if self.turn_id.is_none() {
                    self.turn_id = params["turn"]["id"].as_str().map(str::to_owned);
                }
            }
            "item/agentMessage/delta" => {
                let delta = params["delta"].as_str().unwrap_or_default();
                if let Some(item) = params["itemId"].as_str() {
                    self.streamed.insert(item.to_owned());
                }
                if !delta.is_empty() {
                    out.push(AgentMessage::Assistant {
                        delta: delta.to_owned(),
                    });
                }
            }
            "item/reasoning/summaryTextDelta" | "item/reasoning/textDelta" => {
                let delta = params["delta"].as_str().unwrap_or_default();
                if !delta.is_empty() {
                    out.push(AgentMessage::Thinking {
                        delta: delta.to_owned(),
                    });
                }
            }
            // A new summary part after the first: a paragraph break in the live pane.
            "item/reasoning/summaryPartAdded" => {
                if params["summaryIndex"]
                    .as_u64()
                    .is_some_and(|index| index > 0)
                {
                    out.push(AgentMessage::Thinking {
                        delta: "\n\n".to_owned(),
                    });
                }
            }
            "item/commandExecution/outputDelta" => {
                let (Some(item), Some(delta)) =
                    (params["itemId"].as_str(), params["delta"].as_str())
                else {
                    return false;
                };
                let output = self.outputs.entry(item.to_owned()).or_default();
                if output.len() + delta.len() <= MAX_TOOL_OUTPUT {
                    output.push_str(delta);
                    let output = output.clone();
                    self.tools.update(item, output, out);
                }
            }
            "item/started" => self.item_started(&params["item"], out),
            "item/completed" => self.item_completed(&params["item"], out),
            "thread/tokenUsage/updated" => {
                let last = &params["tokenUsage"]["last"];
                let usage = self.usage.get_or_insert_with(Usage::default);
                let add = |sum: &mut Option<u64>, key: &str| {
                    if let Some(value) = last[key].as_u64() {
                        *sum = Some(sum.unwrap_or(0).saturating_add(value));
                    }
                };
                add(&mut usage.input_tokens, "inputTokens");
                add(&mut usage.output_tokens, "outputTokens");
                add(&mut usage.cache_read_tokens, "cachedInputTokens");
                add(&mut usage.cache_write_tokens, "cacheWriteInputTokens");
                add(&mut usage.reasoning_tokens, "reasoningOutputTokens");
                add(&mut usage.total_tokens, "totalTokens");
            }
            "warning" | "configWarning" => {
                let message = params["message"]
                    .as_str()
                    .or_else(|| params["summary"].as_str())
                    .unwrap_or("Codex warned without saying why");
                out.push(AgentMessage::notice(NoticeKind::Warning, message));
            }
            "error" => {
                let message = params["error"]["message"].as_str().unwrap_or("error");
                if params["willRetry"] == true {
                    out.push(AgentMessage::notice(NoticeKind::AgentRetry, message));
                }
            }
            "turn/plan/updated" => out.push(AgentMessage::Plan {
                entries: plan_entries(params["plan"].as_array().map_or(&[], Vec::as_slice)),
            }),
            "turn/completed" => self.turn_completed(&params["turn"], out),
            _ => return false,
        }
        true
    }

    fn item_started(&mut self, item: &Value, out: &mut Vec<AgentMessage>) {
        let Some(id) = item["id"].as_str() else {
            return;
        };
        self.items.insert(id.to_owned(), item.clone());
        match item["type"].as_str().unwrap_or_default() {
            "userMessage" => {
                let text = user_text(item);
                if self.prompt.is_empty() {
                    // Replayed from a log, the prompt is the turn's first user message.
                    self.prompt = text;
                } else if !text.is_empty() && text != self.prompt {
                    // A message given mid-turn (`turn/steer`) reached the model.
                    out.push(AgentMessage::notice(NoticeKind::SteerDelivered, text));
                }
            }
            kind => {
                if let Some((name, input)) = tool_call(kind, item) {
                    self.tools.start(id, &name, input, out);
                }
            }
        }
    }

    fn item_completed(&mut self, item: &Value, out: &mut Vec<AgentMessage>) {
        let Some(id) = item["id"].as_str() else {
            return;
        };
        let kind = item["type"].as_str().unwrap_or_default();
        match kind {
            "agentMessage" => {
                let text = item["text"].as_str().unwrap_or_default();
                if !self.streamed.contains(id) && !text.is_empty() {
                    out.push(AgentMessage::Assistant {
                        delta: text.to_owned(),
                    });
                }
            }
            "reasoning" => {
                let text = reasoning_text(item);
                if !text.trim().is_empty() {
                    self.held_thoughts.push(text);
                }
            }
            _ => {
                if let Some((name, input)) = tool_call(kind, item) {
                    let ending = tool_ending(kind, item, self.outputs.remove(id));
                    self.tools
                        .complete_announcing(id, (&name, input), ending, out);
                }
            }
        }
        self.items.insert(id.to_owned(), item.clone());
        self.tools.release_thoughts(&mut self.held_thoughts, out);
    }

    fn turn_completed(&mut self, turn: &Value, out: &mut Vec<AgentMessage>) {
        let interrupted = turn["status"] == "interrupted";
        self.tools.fail_all_open(AGENT, interrupted, out);
        self.tools.release_thoughts(&mut self.held_thoughts, out);
        self.ended = Some(match turn["status"].as_str().unwrap_or_default() {
            // The user's refusal ended the turn (not a stop): the turn is over, and says why.
            "interrupted" if self.refused_and_stopped => {
                out.push(AgentMessage::notice(
                    NoticeKind::Warning,
                    "Codex stopped the turn: you refused what it asked to do.",
                ));
                AgentOutcome::Completed {
                    stop_reason: "refused".to_owned(),
                    usage: self.usage.clone(),
                }
            }
            "interrupted" => AgentOutcome::Aborted,
            "failed" => {
                let error = &turn["error"];
                let message = error["message"]
                    .as_str()
                    .unwrap_or("Codex failed the turn without saying why")
                    .to_owned();
                let http_status = status_of_error(error)
                    .or_else(|| crate::provider::codex::mapper::http_status_of(&message));
                AgentOutcome::Failed {
                    reason: FailureReason::AgentError,
                    message,
                    http_status,
                }
            }
            _ => AgentOutcome::Completed {
                stop_reason: "end_turn".to_owned(),
                usage: self.usage.clone(),
            },
        });
    }
}

impl Mapper for AppServerMapper {
    fn map_line(&mut self, line: &str, out: &mut Vec<AgentMessage>) -> LineVerdict {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            return LineVerdict::Invalid;
        };
        let Some(method) = message["method"].as_str() else {
            // A response nobody waited for.
            return if message.get("id").is_some() {
                LineVerdict::Ignored
            } else {
                LineVerdict::Invalid
            };
        };
        let params = &message["params"];
        if let Some(id) = message.get("id").filter(|id| !id.is_null()) {
            if method == COMMAND_APPROVAL || method == FILE_CHANGE_APPROVAL {
                if !self.ours(method, params) {
                    return LineVerdict::Ignored;
                }
                out.push(AgentMessage::PermissionRequest(Box::new(approval(
                    id,
                    method,
                    params,
                    &self.items,
                ))));
                return LineVerdict::Event;
            }
            return LineVerdict::Ignored;
        }
        if self.notification(method, params, out) {
            LineVerdict::Event
        } else {
            LineVerdict::Ignored
        }
    }

    fn map_client_line(&mut self, line: &str, _out: &mut Vec<AgentMessage>) {
        if let Ok(answer) = serde_json::from_str::<Value>(line) {
            if answer["result"]["decision"] == "cancel" {
                self.refused_and_stopped = true;
            }
        }
    }

    fn outcome_reported(&self) -> bool {
        self.ended.is_some()
    }

    fn finish(&mut self, exit: ExitFacts, out: &mut Vec<AgentMessage>) -> AgentOutcome {
        self.tools.fail_all_open(AGENT, exit.stopped_by_us, out);
        self.tools.release_thoughts(&mut self.held_thoughts, out);
        self.ended.clone().unwrap_or(AgentOutcome::Unfinished)
    }
}

/// The HTTP status Codex's structured error names.
fn status_of_error(error: &Value) -> Option<u16> {
    let info = &error["codexErrorInfo"];
    if let Some(status) = info["httpConnectionFailed"]["httpStatusCode"].as_u64() {
        return u16::try_from(status).ok();
    }
    match info.as_str()? {
        "internalServerError" => Some(500),
        "serverOverloaded" => Some(503),
        "rateLimitExceeded" | "usageLimitExceeded" => Some(429),
        "unauthorized" => Some(401),
        "badRequest" => Some(400),
        "modelNotFound" => Some(404),
        _ => None,
    }
}

fn user_text(item: &Value) -> String {
    item["content"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn reasoning_text(item: &Value) -> String {
    let join = |key: &str| {
        item[key]
            .as_array()
            .map(|parts| {
                parts
                    .iter()
                    .filter_map(|part| part.as_str().or_else(|| part["text"].as_str()))
                    .collect::<Vec<_>>()
                    .join("\n\n")
            })
            .unwrap_or_default()
    };
    let summary = join("summary");
    if summary.trim().is_empty() {
        join("content")
    } else {
        summary
    }
}

/// The tool name and input an item is shown with; `None` for items that are not tool calls.
fn tool_call(kind: &str, item: &Value) -> Option<(String, Value)> {
    Some(match kind {
        "commandExecution" => (
            "shell".to_owned(),
            json!({
                "command": unwrap_shell(item["command"].as_str().unwrap_or_default()),
                "cwd": item["cwd"],
            }),
        ),
        "fileChange" => (
            "apply_patch".to_owned(),
            json!({ "changes": changes(item) }),
        ),
        "mcpToolCall" => (
            mcp_tool_name(
                item["server"].as_str().unwrap_or_default(),
                item["tool"].as_str().unwrap_or_default(),
            ),
            item["arguments"].clone(),
        ),
        "webSearch" => ("web_search".to_owned(), json!({ "query": item["query"] })),
        _ => return None,
    })
}

/// A `fileChange` item's changes, as its tool input shows them.
fn changes(item: &Value) -> Vec<Value> {
    item["changes"]
        .as_array()
        .map(|changes| changes.iter().map(change_json).collect())
        .unwrap_or_default()
}

/// How a completed tool item ended.
fn tool_ending(kind: &str, item: &Value, streamed: Option<String>) -> ToolEnding {
    let status = item["status"].as_str().unwrap_or_default();
    match kind {
        "commandExecution" => {
            let output = item["aggregatedOutput"]
                .as_str()
                .map(str::to_owned)
                .or(streamed)
                .unwrap_or_default();
            let exit_code = item["exitCode"].as_i64();
            match (status, exit_code) {
                ("declined", _) => ToolEnding::Failed {
                    error: "the command was declined".to_owned(),
                },
                ("failed", _) | (_, Some(1..) | Some(..=-1)) => {
                    let code = exit_code.map_or_else(
                        || "no exit code".to_owned(),
                        |code| format!("exit code {code}"),
                    );
                    let separator = if output.is_empty() || output.ends_with('\n') {
                        ""
                    } else {
                        "\n"
                    };
                    ToolEnding::Failed {
                        error: format!("{output}{separator}{code}"),
                    }
                }
                _ => ToolEnding::Completed { output },
            }
        }
        "fileChange" => {
            let summary = patch_text(&changes(item));
            match status {
                "declined" => ToolEnding::Failed {
                    error: format!("the change was declined\n{summary}"),
                },
                "failed" => ToolEnding::Failed {
                    error: format!("the patch was not applied\n{summary}"),
                },
                _ => ToolEnding::Completed { output: summary },
            }
        }
        "mcpToolCall" => match item["error"]["message"].as_str() {
            Some(message) => ToolEnding::Failed {
                error: message.to_owned(),
            },
            None if status == "failed" => ToolEnding::Failed {
                error: "the tool call failed".to_owned(),
            },
            None => ToolEnding::Completed {
                output: mcp_result_text(&item["result"]),
            },
        },
        _ => ToolEnding::Completed {
            output: item["query"].as_str().unwrap_or_default().to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::codex::app_server::approvals::decision_value;

    fn map(mapper: &mut AppServerMapper, lines: &[Value]) -> Vec<AgentMessage> {
        let mut out = Vec::new();
        for line in lines {
            mapper.map_line(&line.to_string(), &mut out);
        }
        out
    }

    #[test]
    fn deltas_are_the_text_and_the_completed_item_is_not_repeated() {
        let mut mapper = AppServerMapper::new("hi");
        let out = map(
            &mut mapper,
            &[
                json!({"method":"turn/started","params":{"threadId":"t","turn":{"id":"u1"}}}),
                json!({"method":"item/agentMessage/delta","params":{"turnId":"u1","itemId":"m","delta":"Hel"}}),
                json!({"method":"item/agentMessage/delta","params":{"turnId":"u1","itemId":"m","delta":"lo"}}),
                json!({"method":"item/agentMessage/delta","params":{"turnId":"old","itemId":"x","delta":"late"}}),
                json!({"method":"item/completed","params":{"turnId":"u1","item":{"type":"agentMessage","id":"m","text":"Hello"}}}),
                json!({"method":"thread/tokenUsage/updated","params":{"turnId":"u1","tokenUsage":{"last":{"inputTokens":12,"outputTokens":7,"cachedInputTokens":0,"totalTokens":19,"reasoningOutputTokens":3},"total":{}}}}),
                json!({"method":"thread/tokenUsage/updated","params":{"turnId":"u1","tokenUsage":{"last":{"inputTokens":12,"outputTokens":7,"cachedInputTokens":0,"totalTokens":19,"reasoningOutputTokens":3},"total":{}}}}),
                json!({"method":"turn/completed","params":{"turn":{"id":"u1","status":"completed"}}}),
            ],
        );
        let text: String = out
            .iter()
            .filter_map(|message| match message {
                AgentMessage::Assistant { delta } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Hello");
        let AgentOutcome::Completed { usage, .. } =
            mapper.finish(ExitFacts::default(), &mut Vec::new())
        else {
            panic!("completed")
        };
        let usage = usage.expect("usage");
        assert_eq!(
            (usage.input_tokens, usage.output_tokens),
            (Some(24), Some(14))
        );
    }

    #[test]
    fn the_late_lines_of_a_stopped_turn_are_not_this_turns() {
        let mut mapper = AppServerMapper::new("next");
        let out = map(
            &mut mapper,
            &[
                json!({"method":"item/agentMessage/delta","params":{"turnId":"old","itemId":"m","delta":"late"}}),
                json!({"method":"turn/completed","params":{"turn":{"id":"old","status":"interrupted"}}}),
                json!({"method":"turn/started","params":{"turn":{"id":"new"}}}),
                json!({"method":"turn/completed","params":{"turn":{"id":"old","status":"interrupted"}}}),
                json!({"method":"item/agentMessage/delta","params":{"turnId":"new","itemId":"n","delta":"fresh"}}),
            ],
        );
        assert_eq!(
            out,
            [AgentMessage::Assistant {
                delta: "fresh".into()
            }]
        );
        assert!(!mapper.outcome_reported());
    }

    #[test]
    fn an_approval_offers_codexs_decisions_with_decline_before_cancel() {
        let mut mapper = AppServerMapper::new("write");
        let out = map(
            &mut mapper,
            &[
                json!({"method":"item/started","params":{"item":{"type":"commandExecution","id":"call_2","command":"/bin/bash -lc 'touch probe.txt'","cwd":"/w","status":"inProgress"}}}),
                json!({"method":COMMAND_APPROVAL,"id":0,"params":{"itemId":"call_2","reason":"needs to write","command":"/bin/bash -lc 'touch probe.txt'","cwd":"/w","availableDecisions":["accept",{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["touch","probe.txt"]}},"cancel"]}}),
            ],
        );
        let Some(AgentMessage::PermissionRequest(request)) = out.last() else {
            panic!("{out:?}")
        };
        assert_eq!(request.id, "0");
        assert_eq!(request.tool_call_id.as_deref(), Some("call_2"));
        assert_eq!(request.command.as_deref(), Some("touch probe.txt"));
        let ids: Vec<&str> = request
            .options
            .iter()
            .map(|option| option.id.as_str())
            .collect();
        assert_eq!(
            ids,
            [
                "accept",
                "acceptWithExecpolicyAmendment",
                "decline",
                "cancel"
            ]
        );
        let params = json!({"availableDecisions":["accept",{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["touch"]}}]});
        assert_eq!(
            decision_value(&params, "acceptWithExecpolicyAmendment"),
            Some(json!({"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["touch"]}}))
        );
        assert_eq!(decision_value(&params, "decline"), Some(json!("decline")));
        assert_eq!(decision_value(&params, "rm -rf"), None);
    }

    #[test]
    fn a_command_reads_as_written_in_its_row_and_its_permission_title() {
        // Codex 0.171 quotes the command for its login shell with double quotes
        // (tests/fixtures/codex_app_server/plan_command_patch.jsonl).
        let shown = r#"/bin/bash -lc "printf 'v1\\n' > notes.txt""#;
        let mut mapper = AppServerMapper::new("write");
        let out = map(
            &mut mapper,
            &[
                json!({"method":"item/started","params":{"item":{"type":"commandExecution","id":"c","command":shown,"cwd":"/w","status":"inProgress"}}}),
                json!({"method":COMMAND_APPROVAL,"id":3,"params":{"itemId":"c","command":shown,"cwd":"/w","availableDecisions":["accept","cancel"]}}),
            ],
        );
        let AgentMessage::ToolCall { input, .. } = &out[0] else {
            panic!("{out:?}")
        };
        assert_eq!(input["command"], r"printf 'v1\n' > notes.txt");
        let AgentMessage::PermissionRequest(request) = &out[1] else {
            panic!("{out:?}")
        };
        assert_eq!(request.title, r"printf 'v1\n' > notes.txt");
        assert_eq!(
            request.command.as_deref(),
            Some(r"printf 'v1\n' > notes.txt")
        );
    }

    #[test]
    fn a_failed_turn_names_codexs_http_status() {
        let mut mapper = AppServerMapper::new("x");
        map(
            &mut mapper,
            &[
                json!({"method":"turn/started","params":{"turn":{"id":"u"}}}),
                json!({"method":"turn/completed","params":{"turn":{"id":"u","status":"failed","error":{"message":"We’re currently experiencing high demand","codexErrorInfo":"internalServerError"}}}}),
            ],
        );
        assert!(matches!(
            mapper.finish(ExitFacts::default(), &mut Vec::new()),
            AgentOutcome::Failed {
                http_status: Some(500),
                ..
            }
        ));
        let mut stopped = AppServerMapper::new("x");
        map(
            &mut stopped,
            &[
                json!({"method":"turn/started","params":{"turn":{"id":"u"}}}),
                json!({"method":"turn/completed","params":{"turn":{"id":"u","status":"interrupted"}}}),
            ],
        );
        assert_eq!(
            stopped.finish(ExitFacts::default(), &mut Vec::new()),
            AgentOutcome::Aborted
        );
    }
}
