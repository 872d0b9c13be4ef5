//! Codex `exec --json` events -> shared messages.
//!
//! Codex prints whole items, never deltas: an `agent_message` item carries the complete text
//! of one message and becomes one `assistant` delta; a `reasoning` item carries the complete
//! reasoning summary and becomes one `assistant.thought` at once (there is nothing left to
//! buffer), unless a tool call is open: then it waits for the call to end. Tool-like items
//! (`command_execution`, `file_change`, `mcp_tool_call`, `web_search`) become a tool call and
//! its one ending, even when Codex prints only the completed item; a command is shown as the
//! command its login-shell wrapper runs. A `todo_list` item (Codex's plan) is the plan: each of
//! its events a `plan` message.
//!
//! Two kinds of `error` are not failures: an `error` *item* is a warning (every run against a
//! model Codex has no metadata for prints one), and a top-level `error` starting with
//! `Reconnecting...` is Codex retrying by itself. Only `turn.failed` fails the attempt; a run
//! that ends without `turn.completed` or `turn.failed` (Codex exits 1 on SIGINT and prints
//! nothing more) is unfinished, and the runner decides between cancelled and failed.

use serde::Deserialize;
use serde_json::{json, Value};

use super::items::{mcp_result_text, mcp_tool_name, patch_text, unwrap_shell};
use super::usage::ThreadTotals;
use crate::provider::common::{failure_message, session_message, text_or_empty, Text};
use crate::provider::http_status::http_status_in;
use crate::provider::session_header::SessionHeader;
use crate::provider::tool_calls::{ToolCalls, ToolEnding};
use crate::provider::{AgentOutcome, ExitFacts, LineVerdict, Mapper};
use crate::stream::{AgentMessage, FailureReason, NoticeKind, PlanEntry, Usage};

/// The agent, as its tool failures name it.
const AGENT: &str = crate::provider::ProviderKind::Codex.display_name();

const PROVIDER: &str = crate::provider::ProviderKind::Codex.name();
/// The stop reason of a turn Codex reports as `turn.completed` (it gives none of its own).
const TURN_COMPLETED: &str = "completed";
/// How Codex's own stream retries announce themselves: `Reconnecting... 2/5 (<reason>)`.
const RECONNECTING_PREFIX: &str = "Reconnecting...";
/// Codex words every HTTP 5xx answer the same way (its `InternalServerError`), without the
/// status; the apostrophe is typographic in 0.171, so only the part after it is compared.
const SERVER_ERROR_WORDING: &str = "re currently experiencing high demand";
const SERVER_ERROR_STATUS: u16 = 500;

pub struct CodexMapper {
    /// The attempt continues an earlier thread (`exec resume`).
    resumed: bool,
    session: SessionHeader,
    tools: ToolCalls,
    /// Reasoning that completed while a tool call was open, shown once none is.
    held_thoughts: Vec<String>,
    outcome: Option<AgentOutcome>,
    /// The last top-level `error` that was not a retry: Codex prints the fatal error once more
    /// just before `turn.failed`, so it is the message if `turn.failed` never comes.
    last_error: Option<String>,
    /// The thread this attempt runs in (`thread.started`).
    thread_id: Option<String>,
    /// Each thread's running token total, to report each turn's own usage.
    thread_totals: ThreadTotals,
}

impl CodexMapper {
    /// `resumed` makes the session header a `session.resumed` (Codex prints the same
    /// `thread.started` for a new and a resumed thread).
    pub fn new(resumed: bool) -> Self {
        Self::with_thread_totals(resumed, ThreadTotals::default())
    }

    /// A mapper that reports usage against the running totals of earlier turns in `totals`.
    pub(crate) fn with_thread_totals(resumed: bool, thread_totals: ThreadTotals) -> Self {
        Self {
            resumed,
            session: SessionHeader::default(),
            tools: ToolCalls::default(),
            held_thoughts: Vec::new(),
            outcome: None,
            last_error: None,
            thread_id: None,
            thread_totals,
        }
    }
}

/// One line of `codex exec --json`: only the fields the mapper reads.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow, rename = "type")]
    kind: Text<'a>,
    #[serde(borrow, default)]
    thread_id: Option<Text<'a>>,
    #[serde(borrow, default)]
    item: Option<Item<'a>>,
    #[serde(default)]
    usage: Option<TurnUsage>,
    #[serde(borrow, default)]
    error: Option<ErrorBody<'a>>,
    #[serde(borrow, default)]
    message: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct ErrorBody<'a> {
    #[serde(borrow, default)]
    message: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct TurnUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    cached_input_tokens: Option<u64>,
    #[serde(default)]
    cache_write_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    reasoning_output_tokens: Option<u64>,
}

/// A thread item; which fields are present depends on `type`.
#[derive(Deserialize)]
struct Item<'a> {
    #[serde(borrow)]
    id: Text<'a>,
    #[serde(borrow, rename = "type")]
    kind: Text<'a>,
    #[serde(borrow, default)]
    text: Option<Text<'a>>,
    #[serde(borrow, default)]
    message: Option<Text<'a>>,
    #[serde(borrow, default)]
    status: Option<Text<'a>>,
    // command_execution
    #[serde(borrow, default)]
    command: Option<Text<'a>>,
    #[serde(borrow, default)]
    aggregated_output: Option<Text<'a>>,
    #[serde(default)]
    exit_code: Option<i64>,
    // file_change
    #[serde(borrow, default)]
    changes: Vec<FileChange<'a>>,
    // mcp_tool_call
    #[serde(borrow, default)]
    server: Option<Text<'a>>,
    #[serde(borrow, default)]
    tool: Option<Text<'a>>,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(borrow, default)]
    error: Option<ErrorBody<'a>>,
    // web_search
    #[serde(borrow, default)]
    query: Option<Text<'a>>,
    // todo_list
    #[serde(borrow, default)]
    items: Vec<TodoEntry<'a>>,
}

#[derive(Deserialize)]
struct FileChange<'a> {
    #[serde(borrow)]
    path: Text<'a>,
    #[serde(borrow, default)]
    kind: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct TodoEntry<'a> {
    #[serde(borrow)]
    text: Text<'a>,
    #[serde(default)]
    completed: bool,
}

/// Which item event a line is.
#[derive(Clone, Copy)]
enum ItemPhase {
    Started,
    Updated,
    Completed,
}

impl Mapper for CodexMapper {
    fn map_line(&mut self, line: &str, out: &mut Vec<AgentMessage>) -> LineVerdict {
        let verdict = self.map_event(line, out);
        self.session.close_if_emitted(out);
        verdict
    }

    fn outcome_reported(&self) -> bool {
        self.outcome.is_some()
    }

    fn finish(&mut self, exit: ExitFacts, out: &mut Vec<AgentMessage>) -> AgentOutcome {
        self.tools.fail_all_open(AGENT, exit.stopped_by_us, out);
        self.tools.release_thoughts(&mut self.held_thoughts, out);
        if let Some(outcome) = self.outcome.take() {
            return outcome;
        }
        match self.last_error.take() {
            Some(message) if !exit.stopped_by_us => failed(message),
            _ => AgentOutcome::Unfinished,
        }
    }
}

impl CodexMapper {
    fn map_event(&mut self, line: &str, out: &mut Vec<AgentMessage>) -> LineVerdict {
        let Ok(event) = serde_json::from_str::<Event>(line) else {
            return LineVerdict::Invalid;
        };
        match event.kind.as_str() {
            "thread.started" => {
                let Some(thread_id) = &event.thread_id else {
                    return LineVerdict::Invalid;
                };
                self.thread_id = Some(thread_id.as_str().to_owned());
                self.session.announce(
                    session_message(
                        PROVIDER,
                        self.resumed,
                        Some(thread_id.as_str().to_owned()),
                        None,
                    ),
                    out,
                );
                LineVerdict::Event
            }
            "turn.started" => LineVerdict::Event,
            "turn.completed" => {
                self.outcome = Some(AgentOutcome::Completed {
                    stop_reason: TURN_COMPLETED.to_owned(),
                    usage: event
                        .usage
                        .map(shared_usage)
                        .map(|total| match &self.thread_id {
                            Some(thread_id) => self.thread_totals.turn_usage(thread_id, total),
                            None => total,
                        }),
                });
                LineVerdict::Event
            }
            "turn.failed" => {
                let carried = event.error.and_then(|error| error.message);
                let message = failure_message(
                    carried.as_ref(),
                    self.last_error.as_deref(),
                    "Codex reported a failed turn without a message",
                );
                self.outcome = Some(failed(message));
                LineVerdict::Event
            }
            "error" => {
                let message = text_or_empty(&event.message);
                if message.starts_with(RECONNECTING_PREFIX) {
                    out.push(AgentMessage::notice(
                        NoticeKind::AgentRetry,
                        format!("Codex: {message}"),
                    ));
                } else {
                    self.last_error = Some(message.to_owned());
                }
                LineVerdict::Event
            }
            "item.started" | "item.updated" | "item.completed" => {
                let Some(item) = &event.item else {
                    return LineVerdict::Invalid;
                };
                let phase = match event.kind.as_str() {
                    "item.started" => ItemPhase::Started,
                    "item.updated" => ItemPhase::Updated,
                    _ => ItemPhase::Completed,
                };
                self.map_item(phase, item, out)
            }
            _ => LineVerdict::Ignored,
        }
    }

    fn map_item(
        &mut self,
        phase: ItemPhase,
        item: &Item,
        out: &mut Vec<AgentMessage>,
    ) -> LineVerdict {
        let id = item.id.as_str();
        match (item.kind.as_str(), phase) {
            ("agent_message", ItemPhase::Completed) => {
                let text = text_or_empty(&item.text);
                if !text.is_empty() {
                    out.push(AgentMessage::Assistant {
                        delta: text.to_owned(),
                    });
                }
                LineVerdict::Event
            }
            ("reasoning", ItemPhase::Completed) => {
                let text = text_or_empty(&item.text);
                if !text.is_empty() {
                    self.held_thoughts.push(text.to_owned());
                    self.tools.release_thoughts(&mut self.held_thoughts, out);
                }
                LineVerdict::Event
            }
            ("error", ItemPhase::Completed) => {
                out.push(AgentMessage::notice(
                    NoticeKind::Warning,
                    format!("Codex: {}", text_or_empty(&item.message)),
                ));
                LineVerdict::Event
            }
            ("agent_message" | "reasoning" | "error", _) => LineVerdict::Event,
            ("todo_list", _) => {
                out.push(AgentMessage::Plan {
                    entries: todo_plan(item),
                });
                LineVerdict::Event
            }
            (kind, phase) => {
                let Some(call) = tool_call(kind, item) else {
                    return LineVerdict::Ignored;
                };
                match phase {
                    ItemPhase::Started => self.tools.start(id, &call.0, call.1, out),
                    ItemPhase::Updated => {
                        if let Some(progress) = tool_progress(kind, item) {
                            self.tools.update(id, progress, out);
                        }
                    }
                    ItemPhase::Completed => {
                        let ending = match tool_result(kind, item) {
                            Ok(output) => ToolEnding::Completed { output },
                            Err(error) => ToolEnding::Failed { error },
                        };
                        self.tools
                            .complete_announcing(id, (call.0.as_str(), call.1), ending, out);
                        self.tools.release_thoughts(&mut self.held_thoughts, out);
                    }
                }
                LineVerdict::Event
            }
        }
    }
}

/// The HTTP status of a Codex error message: the one it names, else 500 for Codex's wording of
/// every 5xx answer.
pub(crate) fn http_status_of(message: &str) -> Option<u16> {
    http_status_in(message).or_else(|| {
        message
            .contains(SERVER_ERROR_WORDING)
            .then_some(SERVER_ERROR_STATUS)
    })
}

fn failed(message: String) -> AgentOutcome {
    let http_status = http_status_of(&message);
    AgentOutcome::Failed {
        reason: FailureReason::AgentError,
        message,
        http_status,
    }
}

fn shared_usage(usage: TurnUsage) -> Usage {
    Usage {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_read_tokens: usage.cached_input_tokens,
        cache_write_tokens: usage.cache_write_input_tokens,
        total_tokens: usage
            .input_tokens
            .zip(usage.output_tokens)
            .map(|(input, output)| input.saturating_add(output)),
        cost_usd: None,
        reasoning_tokens: usage.reasoning_output_tokens,
        model: None,
    }
}

/// The tool name and input a tool-like item is shown with; `None` for other items.
fn tool_call(kind: &str, item: &Item) -> Option<(String, Value)> {
    let call = match kind {
        "command_execution" => (
            "shell".to_owned(),
            json!({ "command": unwrap_shell(text_or_empty(&item.command)) }),
        ),
        "file_change" => (
            "apply_patch".to_owned(),
            json!({ "changes": changes_json(item) }),
        ),
        "mcp_tool_call" => (
            mcp_tool_name(text_or_empty(&item.server), text_or_empty(&item.tool)),
            item.arguments.clone().unwrap_or_else(|| json!({})),
        ),
        "web_search" => (
            "web_search".to_owned(),
            json!({ "query": text_or_empty(&item.query) }),
        ),
        _ => return None,
    };
    Some(call)
}

/// What an `item.updated` adds to the tool pane (cumulative, like `tool.update`).
fn tool_progress(kind: &str, item: &Item) -> Option<String> {
    match kind {
        "command_execution" => item
            .aggregated_output
            .as_ref()
            .map(|o| o.as_str().to_owned()),
        _ => None,
    }
}

/// A completed tool-like item: its output, or why it failed.
fn tool_result(kind: &str, item: &Item) -> Result<String, String> {
    let status = text_or_empty(&item.status);
    match kind {
        "command_execution" => {
            let output = text_or_empty(&item.aggregated_output);
            match (status, item.exit_code) {
                ("declined", _) => Err("the command was declined".to_owned()),
                ("failed", _) | (_, Some(1..) | Some(..=-1)) => {
                    let code = item.exit_code.map_or_else(
                        || "no exit code".to_owned(),
                        |code| format!("exit code {code}"),
                    );
                    let separator = if output.is_empty() || output.ends_with('\n') {
                        ""
                    } else {
                        "\n"
                    };
                    Err(format!("{output}{separator}{code}"))
                }
                _ => Ok(output.to_owned()),
            }
        }
        "file_change" => {
            let summary = patch_text(changes_json(item).as_array().map_or(&[], Vec::as_slice));
            if status == "failed" {
                Err(format!("the patch was not applied\n{summary}"))
            } else {
                Ok(summary)
            }
        }
        "mcp_tool_call" => match item.error.as_ref().and_then(|error| error.message.as_ref()) {
            Some(message) => Err(message.as_str().to_owned()),
            None if status == "failed" => Err("the tool call failed".to_owned()),
            None => Ok(item
                .result
                .as_ref()
                .map(mcp_result_text)
                .unwrap_or_default()),
        },
        "web_search" => Ok(text_or_empty(&item.query).to_owned()),
        _ => Ok(String::new()),
    }
}

fn changes_json(item: &Item) -> Value {
    item.changes
        .iter()
        .map(|change| json!({ "path": change.path.as_str(), "kind": text_or_empty(&change.kind) }))
        .collect()
}

/// A `todo_list` item's entries as the plan (Codex says only which are done).
fn todo_plan(item: &Item) -> Vec<PlanEntry> {
    item.items
        .iter()
        .map(|entry| PlanEntry {
            content: entry.text.as_str().to_owned(),
            status: if entry.completed {
                "completed"
            } else {
                "pending"
            }
            .to_owned(),
            priority: "medium".to_owned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(mapper: &mut CodexMapper, lines: &[&str]) -> (Vec<String>, Vec<LineVerdict>) {
        let mut out = Vec::new();
        let verdicts = lines
            .iter()
            .map(|line| mapper.map_line(line, &mut out))
            .collect();
        (
            out.iter().map(AgentMessage::to_json_line).collect(),
            verdicts,
        )
    }

    #[test]
    fn reasoning_waits_for_the_open_tool_call_to_end() {
        let mut mapper = CodexMapper::new(false);
        let started = r#"{"type":"item.started","item":{"id":"c","type":"command_execution","command":"ls","aggregated_output":"","status":"in_progress"}}"#;
        let (out, _) = map(
            &mut mapper,
            &[
                started,
                started,
                r#"{"type":"item.completed","item":{"id":"r","type":"reasoning","text":"Listing."}}"#,
                r#"{"type":"item.completed","item":{"id":"c","type":"command_execution","command":"ls","aggregated_output":"a","exit_code":0,"status":"completed"}}"#,
            ],
        );
        assert_eq!(
            out,
            [
                r#"{"type":"tool.call","id":"c","name":"shell","input":{"command":"ls"}}"#,
                r#"{"type":"tool.completed","id":"c","output":"a"}"#,
                r#"{"type":"assistant.thought","text":"Listing."}"#,
            ]
        );
    }

    #[test]
    fn bad_and_unknown_lines_never_end_the_stream() {
        let mut mapper = CodexMapper::new(false);
        let (out, verdicts) = map(
            &mut mapper,
            &[
                "not json",
                r#"{"no_type":1}"#,
                r#"{"type":"item.completed"}"#,
                r#"{"type":"thread.started"}"#,
                r#"{"type":"item.plan.delta","item_id":"x","delta":"y"}"#,
                r#"{"type":"item.completed","item":{"id":"i","type":"plan","text":"p"}}"#,
                r#"{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"still here"}}"#,
            ],
        );
        assert_eq!(
            verdicts,
            [
                LineVerdict::Invalid,
                LineVerdict::Invalid,
                LineVerdict::Invalid,
                LineVerdict::Invalid,
                LineVerdict::Ignored,
                LineVerdict::Ignored,
                LineVerdict::Event,
            ]
        );
        assert_eq!(out, [r#"{"type":"assistant","delta":"still here"}"#]);
    }

    #[test]
    fn items_codex_prints_only_completed_still_open_and_end_a_tool_call() {
        let mut mapper = CodexMapper::new(false);
        let (out, _) = map(
            &mut mapper,
            &[
                r#"{"type":"item.completed","item":{"id":"item_3","type":"file_change","changes":[{"path":"src/a.rs","kind":"update"},{"path":"b.txt","kind":"add"}],"status":"completed"}}"#,
                r#"{"type":"item.started","item":{"id":"item_4","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":"x"},"result":null,"error":null,"status":"in_progress"}}"#,
                r#"{"type":"item.completed","item":{"id":"item_4","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":"x"},"result":{"content":[{"type":"text","text":"found"}],"structured_content":null},"error":null,"status":"completed"}}"#,
                r#"{"type":"item.started","item":{"id":"item_5","type":"mcp_tool_call","server":"docs","tool":"fetch","arguments":{},"status":"in_progress"}}"#,
                r#"{"type":"item.completed","item":{"id":"item_5","type":"mcp_tool_call","server":"docs","tool":"fetch","arguments":{},"error":{"message":"server gone"},"status":"failed"}}"#,
                r#"{"type":"item.started","item":{"id":"item_6","type":"web_search","query":"rust serde borrow"}}"#,
                r#"{"type":"item.completed","item":{"id":"item_6","type":"web_search","query":"rust serde borrow","action":{"type":"search"}}}"#,
                r#"{"type":"item.started","item":{"id":"item_7","type":"todo_list","items":[{"text":"read","completed":false},{"text":"write","completed":false}]}}"#,
                r#"{"type":"item.updated","item":{"id":"item_7","type":"todo_list","items":[{"text":"read","completed":true},{"text":"write","completed":false}]}}"#,
                r#"{"type":"item.completed","item":{"id":"item_7","type":"todo_list","items":[{"text":"read","completed":true},{"text":"write","completed":true}]}}"#,
            ],
        );
        assert_eq!(
            out,
            [
                r#"{"type":"tool.call","id":"item_3","name":"apply_patch","input":{"changes":[{"path":"src/a.rs","kind":"update"},{"path":"b.txt","kind":"add"}]}}"#,
                r#"{"type":"tool.completed","id":"item_3","output":"updated src/a.rs\nadded b.txt"}"#,
                r#"{"type":"tool.call","id":"item_4","name":"mcp__docs__search","input":{"q":"x"}}"#,
                r#"{"type":"tool.completed","id":"item_4","output":"found"}"#,
                r#"{"type":"tool.call","id":"item_5","name":"mcp__docs__fetch","input":{}}"#,
                r#"{"type":"tool.failed","id":"item_5","error":"server gone"}"#,
                r#"{"type":"tool.call","id":"item_6","name":"web_search","input":{"query":"rust serde borrow"}}"#,
                r#"{"type":"tool.completed","id":"item_6","output":"rust serde borrow"}"#,
                // Codex's plan is the plan, each of its events.
                r#"{"type":"plan","entries":[{"content":"read","status":"pending","priority":"medium"},{"content":"write","status":"pending","priority":"medium"}]}"#,
                r#"{"type":"plan","entries":[{"content":"read","status":"completed","priority":"medium"},{"content":"write","status":"pending","priority":"medium"}]}"#,
                r#"{"type":"plan","entries":[{"content":"read","status":"completed","priority":"medium"},{"content":"write","status":"completed","priority":"medium"}]}"#,
            ]
        );
    }

    #[test]
    fn a_failing_command_is_a_failed_tool_with_its_output_and_exit_code() {
        let mut mapper = CodexMapper::new(false);
        let (out, _) = map(
            &mut mapper,
            &[
                r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"false","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
                r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"false","aggregated_output":"boom","exit_code":2,"status":"failed"}}"#,
                r#"{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"rm -rf /","aggregated_output":"","exit_code":null,"status":"declined"}}"#,
            ],
        );
        assert_eq!(
            out,
            [
                r#"{"type":"tool.call","id":"item_1","name":"shell","input":{"command":"false"}}"#,
                r#"{"type":"tool.failed","id":"item_1","error":"boom\nexit code 2"}"#,
                r#"{"type":"tool.call","id":"item_2","name":"shell","input":{"command":"rm -rf /"}}"#,
                r#"{"type":"tool.failed","id":"item_2","error":"the command was declined"}"#,
            ]
        );
    }

    #[test]
    fn a_fatal_error_without_turn_failed_is_still_the_failure_unless_we_stopped_it() {
        let lines = [r#"{"type":"error","message":"unexpected status 403 Forbidden: no"}"#];
        let mut mapper = CodexMapper::new(false);
        map(&mut mapper, &lines);
        assert!(!mapper.outcome_reported());
        let outcome = mapper.finish(
            ExitFacts {
                exit_code: Some(1),
                ..ExitFacts::default()
            },
            &mut Vec::new(),
        );
        assert_eq!(
            outcome,
            AgentOutcome::Failed {
                reason: crate::stream::FailureReason::AgentError,
                message: "unexpected status 403 Forbidden: no".into(),
                http_status: Some(403),
            }
        );

        let mut stopped = CodexMapper::new(false);
        map(&mut stopped, &lines);
        let outcome = stopped.finish(
            ExitFacts {
                exit_code: Some(1),
                stopped_by_us: true,
                ..ExitFacts::default()
            },
            &mut Vec::new(),
        );
        assert_eq!(outcome, AgentOutcome::Unfinished);
    }
}
