//! Claude Code `stream-json` lines -> shared messages (pure: lines in, messages out).
//!
//! Invariants (see protocols/claude/README.md for the wire format):
//! - Text is shown once. Text streams as `stream_event` deltas; the `assistant` line that
//!   completes each block repeats the whole block and is authoritative. The streamed text of a
//!   block stays *pending* until its complete line arrives: equal text shows nothing more, a
//!   longer one shows only the missing suffix, and a contradicting one (the CLI re-sent the
//!   request without streaming after a connection reset, or lines were lost) is announced with
//!   a `superseded` notice followed by the complete text. A `superseded` notice always directly
//!   follows the assistant deltas it retracts, so "the text since the last non-`assistant`
//!   message" is exactly the superseded part. A streamed message that is abandoned without any
//!   complete text (a new message starts) is superseded with nothing after the notice.
//! - The `<synthetic>` assistant message the CLI prints for an API error is not assistant
//!   text; its message becomes the failure's message instead.
//! - Thinking streams live as `assistant.thinking` deltas (display only), and is also buffered
//!   for the whole turn and released, one `assistant.thought` per block,
//!   when a message ends with a stop reason other than `tool_use` (or at the turn's `result`,
//!   or when the process ends), so thoughts never interleave with tool calls.
//! - A tool the user stopped fails with "stopped by the user", not with Claude Code's note to
//!   the model ("The user doesn't want to proceed… STOP what you are doing…").
//! - The model `system/init` names is reported in the session header and with the turn's usage.
//! - A tool call is announced once, from the complete `assistant` line (its input parsed), and
//!   ended once by its `tool_result`; calls still open when the process ends are failed.
//! - A sub-agent's lines (`parent_tool_use_id` set) are not part of the reply: its tool calls
//!   are announced under the call that started it (`parent_id`), its text and progress
//!   (`system/task_*`) are that call's live output, and its result loses Claude's notes to the
//!   model (`sub_agent`).
//! - Claude's task list (`TodoWrite`, `TaskCreate`, `TaskUpdate`) is the plan, not tool rows:
//!   each call that succeeds is a `plan` message (`tasks`).
//! - `result` is the only outcome: `is_error` fails the attempt even with `subtype: success`;
//!   an `aborted_*` terminal reason is an abort only if we asked the agent to stop.

use std::collections::{HashMap, HashSet};
use std::mem;

use serde_json::Value;

use super::sub_agent;
use super::tasks::{self, PlanCall, TaskList};
use super::wire::{WireBlock, WireContent, WireKind, WireLine, WireUsage};
use crate::provider::common::session_message;
use crate::provider::http_status::http_status_in;
use crate::provider::reconcile::SnapshotReconciler;
use crate::provider::session_header::SessionHeader;
use crate::provider::tool_calls::ToolCalls;
use crate::provider::{AgentOutcome, ExitFacts, LineVerdict, Mapper};
use crate::stream::{AgentMessage, FailureReason, NoticeKind, Usage};

#[path = "pending_text.rs"]
mod pending_text;
#[path = "tool_results.rs"]
mod tool_results;

use pending_text::PendingText;

/// The agent, as its tool failures name it.
const AGENT: &str = crate::provider::ProviderKind::Claude.display_name();

/// The `provider` named in `session.*` messages.
const PROVIDER: &str = crate::provider::ProviderKind::Claude.name();
/// The model name of the CLI's own error messages.
const SYNTHETIC_MODEL: &str = "<synthetic>";
const TOOL_USE_STOP: &str = "tool_use";
/// Line types this mapper reads; another `type` is a newer CLI's event, not a broken line.
const KNOWN_LINE_TYPES: [&str; 5] = ["system", "stream_event", "assistant", "user", "result"];
/// How many glued-line starts are tried in one broken line (bounds the work on junk).
const MAX_SALVAGE_TRIES: usize = 4;

#[derive(Debug, Default)]
pub struct ClaudeMapper {
    /// The attempt continues an existing session (`--resume` / `--continue`).
    resumed: bool,
    /// The `provider` its `session.*` messages name (`claude`, or `demo` playing Claude).
    provider: Option<String>,
    /// Over the long-lived stream-json transport a refusal was agentty's own answer; in the
    /// one-shot mode the CLI refused because nobody could be asked, and a notice says so.
    two_way: bool,
    /// The model `system/init` named, reported with the turn's usage.
    model: Option<String>,
    session: SessionHeader,
    /// The API message being streamed (`message_start`).
    streaming_message: Option<String>,
    /// Streamed text of the current block, not yet confirmed by its complete `assistant` line.
    pending_text: Option<PendingText>,
    /// Streamed thinking of the current block, not yet confirmed by its complete line.
    partial_thought: String,
    /// Complete thinking blocks of the turn, waiting for the message that ends it.
    thoughts: Vec<String>,
    tools: ToolCalls,
    /// The session's task list (the plan), and the session it is kept for.
    tasks: TaskList,
    tasks_session: Option<String>,
    /// Task-list calls waiting for their result.
    plan_calls: HashMap<String, PlanCall>,
    /// Open calls that run a sub-agent.
    sub_agents: HashSet<String>,
    /// The error text of the CLI's `<synthetic>` message, if one was printed.
    synthetic_error: Option<String>,
    result: Option<TurnResult>,
}

/// What the turn's `result` line said.
#[derive(Debug, Clone, PartialEq)]
enum TurnResult {
    Completed {
        stop_reason: String,
        usage: Option<Usage>,
    },
    Aborted {
        terminal_reason: String,
    },
    Failed {
        message: String,
        http_status: Option<u16>,
    },
}

impl ClaudeMapper {
    /// `resumed`: the attempt continues an existing session, so its header is `session.resumed`.
    pub fn new(resumed: bool) -> Self {
        Self {
            resumed,
            ..Self::default()
        }
    }

    /// The mapper of one turn over the stream-json transport of the backend `provider`.
    pub(crate) fn for_stream(provider: &str, resumed: bool) -> Self {
        Self {
            resumed,
            provider: Some(provider.to_owned()),
            two_way: true,
            ..Self::default()
        }
    }

    fn provider(&self) -> &str {
        self.provider.as_deref().unwrap_or(PROVIDER)
    }

    fn map_wire(&mut self, line: WireLine<'_>, out: &mut Vec<AgentMessage>) -> LineVerdict {
        let parent = line.parent_tool_use_id.clone();
        match (line.kind.as_ref(), parent) {
            ("system", _) => self.map_system(line, out),
            ("result", _) => self.map_result(line, out),
            // The sub-agent's complete lines say all it did; its stream adds nothing.
            ("stream_event", Some(_)) => LineVerdict::Ignored,
            ("assistant" | "user", Some(parent)) => self.map_sub_agent(&parent, line, out),
            ("stream_event", None) => self.map_stream_event(line, out),
            ("assistant", None) => self.map_assistant(line, out),
            ("user", None) => self.map_user(line, out),
            _ => LineVerdict::Ignored,
        }
    }

    fn map_system(&mut self, line: WireLine<'_>, out: &mut Vec<AgentMessage>) -> LineVerdict {
        match line.subtype.as_deref() {
            Some("init") => {
                if let Some(model) = &line.model {
                    self.model = Some(model.clone());
                }
                if let Some(session) = &line.session_id {
                    if self.tasks_session.as_ref() != Some(session) {
                        // A new session has no tasks yet; a continued one has those its
                        // earlier turns made.
                        self.tasks = if self.resumed {
                            tasks::load(session)
                        } else {
                            TaskList::default()
                        };
                        self.tasks_session = Some(session.clone());
                    }
                }
                // With stream-json input every turn repeats `init` for the same session.
                let header = session_message(
                    self.provider(),
                    self.resumed,
                    line.session_id,
                    self.model.clone(),
                );
                self.session.announce(header, out);
                LineVerdict::Event
            }
            Some("api_retry") => {
                out.push(AgentMessage::notice(
                    NoticeKind::AgentRetry,
                    retry_notice(&line),
                ));
                LineVerdict::Event
            }
            // The conversation was compacted (`/compact`, or Claude's own when the context is
            // full): the transcript says by how much.
            Some("compact_boundary") => {
                let metadata = line.compact_metadata.unwrap_or_default();
                out.push(crate::provider::compaction::compacted_notice(
                    metadata["pre_tokens"].as_u64(),
                    metadata["post_tokens"].as_u64(),
                ));
                LineVerdict::Event
            }
            // A sub-agent's progress: the live output of the call that runs it.
            Some("task_started" | "task_progress" | "task_notification") => {
                let Some(call) = line.tool_use_id.clone() else {
                    return LineVerdict::Ignored;
                };
                match sub_agent::progress_text(&line) {
                    Some(progress) if self.sub_agents.contains(&call) => {
                        self.tools.update(&call, progress, out);
                        LineVerdict::Event
                    }
                    _ => LineVerdict::Ignored,
                }
            }
            // `status`, `thinking_tokens`, hooks, ...: nothing the user reads.
            _ => LineVerdict::Ignored,
        }
    }

    fn map_stream_event(&mut self, line: WireLine<'_>, out: &mut Vec<AgentMessage>) -> LineVerdict {
        let Some(event) = line.event else {
            return LineVerdict::Invalid;
        };
        match event.kind.as_ref() {
            "message_start" => {
                self.abandon_pending_text(out);
                self.partial_thought.clear();
                self.streaming_message = event.message.and_then(|message| message.id);
            }
            "content_block_start" => match event.content_block.as_ref().map(|b| b.kind.as_ref()) {
                Some("text") => {
                    self.pending_text = Some(PendingText {
                        message_id: self.streaming_message.clone(),
                        shown: SnapshotReconciler::new(),
                    });
                }
                Some("thinking") => self.partial_thought.clear(),
                _ => {}
            },
            "content_block_delta" => {
                let Some(delta) = event.delta else {
                    return LineVerdict::Invalid;
                };
                match delta.kind.as_deref() {
                    Some("text_delta") if !delta.text.is_empty() => {
                        let streaming_message = &self.streaming_message;
                        self.pending_text
                            .get_or_insert_with(|| PendingText {
                                message_id: streaming_message.clone(),
                                shown: SnapshotReconciler::new(),
                            })
                            .shown
                            .push_delta(&delta.text);
                        out.push(AgentMessage::Assistant {
                            delta: delta.text.into_owned(),
                        });
                    }
                    Some("thinking_delta") if !delta.thinking.is_empty() => {
                        self.partial_thought.push_str(&delta.thinking);
                        out.push(AgentMessage::Thinking {
                            delta: delta.thinking.into_owned(),
                        });
                    }
                    // `signature_delta`, `input_json_delta` (the complete line has the input).
                    _ => {}
                }
            }
            "message_delta" => {
                let stop_reason = event.delta.and_then(|delta| delta.stop_reason);
                if stop_reason.is_some_and(|reason| reason != TOOL_USE_STOP) {
                    self.tools.release_thoughts(&mut self.thoughts, out);
                }
            }
            // `content_block_stop`, `message_stop`, `ping`.
            _ => {}
        }
        LineVerdict::Event
    }

    fn map_assistant(&mut self, line: WireLine<'_>, out: &mut Vec<AgentMessage>) -> LineVerdict {
        let Some(message) = line.message else {
            return LineVerdict::Invalid;
        };
        if message.model.as_deref() == Some(SYNTHETIC_MODEL) {
            if let Some(content) = &message.content {
                self.synthetic_error = Some(content.text().into_owned());
            }
            return LineVerdict::Event;
        }
        let message_id = message.id;
        if let Some(content) = message.content {
            match content {
                WireContent::Text(text) => self.confirm_text(&text, out),
                WireContent::Blocks(blocks) => {
                    for block in blocks {
                        self.map_complete_block(message_id.as_deref(), block, out);
                    }
                }
            }
        }
        // A non-streamed message (the fallback after a reset) carries its own stop reason.
        if message
            .stop_reason
            .is_some_and(|reason| reason != TOOL_USE_STOP)
        {
            self.tools.release_thoughts(&mut self.thoughts, out);
        }
        LineVerdict::Event
    }

    fn map_complete_block(
        &mut self,
        message_id: Option<&str>,
        block: WireBlock<'_>,
        out: &mut Vec<AgentMessage>,
    ) {
        match block.kind.as_ref() {
            "text" => self.confirm_text(&block.text, out),
            "thinking" => {
                self.abandon_pending_text_of_other(message_id, out);
                self.partial_thought.clear();
                if !block.thinking.is_empty() {
                    self.thoughts.push(block.thinking.into_owned());
                }
            }
            "tool_use" => {
                self.abandon_pending_text_of_other(message_id, out);
                let id = block.id.as_deref().unwrap_or_default();
                let name = block.name.as_deref().unwrap_or_default();
                let input = block.input.unwrap_or(Value::Null);
                if let Some(call) = PlanCall::of(name, &input) {
                    self.plan_calls.insert(id.to_owned(), call);
                    return;
                }
                if sub_agent::starts_sub_agent(name) {
                    self.sub_agents.insert(id.to_owned());
                }
                self.tools.start(id, name, input, out);
            }
            _ => {}
        }
    }

    fn map_result(&mut self, line: WireLine<'_>, out: &mut Vec<AgentMessage>) -> LineVerdict {
        self.tools.release_thoughts(&mut self.thoughts, out);
        if !self.two_way && !line.permission_denials.is_empty() {
            out.push(AgentMessage::notice(
                NoticeKind::PermissionRefused,
                denials_notice(&line.permission_denials),
            ));
        }
        let aborted = line
            .terminal_reason
            .as_deref()
            .filter(|reason| reason.starts_with("aborted"));
        let result = if line.is_error != Some(true) {
            TurnResult::Completed {
                stop_reason: line
                    .stop_reason
                    .or(line.terminal_reason)
                    .unwrap_or_else(|| "completed".into()),
                usage: usage(line.usage.as_ref(), line.total_cost_usd).map(|usage| Usage {
                    model: self.model.clone(),
                    ..usage
                }),
            }
        } else if let Some(reason) = aborted {
            TurnResult::Aborted {
                terminal_reason: reason.to_owned(),
            }
        } else {
            let message = [
                line.result.unwrap_or_default(),
                line.errors.join("\n"),
                self.synthetic_error.take().unwrap_or_default(),
            ]
            .into_iter()
            .find(|text| !text.trim().is_empty())
            .unwrap_or_else(|| {
                format!(
                    "Claude Code reported an error ({})",
                    line.subtype.as_deref().unwrap_or("no details")
                )
            });
            // Without `api_error_status` (null for a connection error) the text may name one.
            TurnResult::Failed {
                http_status: line.api_error_status.or_else(|| http_status_in(&message)),
                message,
            }
        };
        self.result = Some(result);
        LineVerdict::Event
    }

    /// Two lines glued together (the CLI cut a line short and went on with the next, seen in
    /// `slow_partial`, `err401`): the tail may still be a whole event worth mapping.
    fn salvage_glued_line(&mut self, line: &str, out: &mut Vec<AgentMessage>) {
        let starts = line
            .match_indices(r#"{"type":"#)
            .map(|(index, _)| index)
            .filter(|index| *index > 0)
            .take(MAX_SALVAGE_TRIES);
        for start in starts {
            if let Ok(tail) = serde_json::from_str::<WireLine>(&line[start..]) {
                self.map_wire(tail, out);
                return;
            }
        }
    }
}

impl ClaudeMapper {
    fn map_json_line(&mut self, line: &str, out: &mut Vec<AgentMessage>) -> LineVerdict {
        match serde_json::from_str::<WireLine>(line) {
            Ok(wire) => self.map_wire(wire, out),
            Err(_) => match serde_json::from_str::<WireKind>(line) {
                // An event type this mapper does not read, with fields shaped differently.
                Ok(head) if !KNOWN_LINE_TYPES.contains(&head.kind.as_ref()) => LineVerdict::Ignored,
                _ => {
                    self.salvage_glued_line(line, out);
                    LineVerdict::Invalid
                }
            },
        }
    }
}

impl Mapper for ClaudeMapper {
    fn map_line(&mut self, line: &str, out: &mut Vec<AgentMessage>) -> LineVerdict {
        let verdict = self.map_json_line(line, out);
        self.session.close_if_emitted(out);
        verdict
    }

    fn outcome_reported(&self) -> bool {
        self.result.is_some()
    }

    fn finish(&mut self, exit: ExitFacts, out: &mut Vec<AgentMessage>) -> AgentOutcome {
        self.tools.fail_all_open(AGENT, exit.stopped_by_us, out);
        let partial_thought = mem::take(&mut self.partial_thought);
        if !partial_thought.is_empty() {
            self.thoughts.push(partial_thought);
        }
        self.tools.release_thoughts(&mut self.thoughts, out);
        match self.result.take() {
            None => AgentOutcome::Unfinished,
            Some(TurnResult::Completed { stop_reason, usage }) => {
                AgentOutcome::Completed { stop_reason, usage }
            }
            Some(TurnResult::Aborted { .. }) if exit.stopped_by_us => AgentOutcome::Aborted,
            Some(TurnResult::Aborted { terminal_reason }) => AgentOutcome::Failed {
                reason: FailureReason::AgentError,
                message: format!(
                    "Claude Code aborted the turn ({terminal_reason}) without being asked to stop"
                ),
                http_status: None,
            },
            Some(TurnResult::Failed {
                message,
                http_status,
            }) => AgentOutcome::Failed {
                reason: FailureReason::AgentError,
                message,
                http_status,
            },
        }
    }
}

/// Why the one-shot mode refused tools, and how to allow them.
fn denials_notice(denials: &[Value]) -> String {
    let refused: Vec<String> = denials
        .iter()
        .map(|denial| {
            let tool = denial["tool_name"].as_str().unwrap_or("a tool");
            let input = &denial["tool_input"];
            match ["command", "file_path", "notebook_path", "path"]
                .iter()
                .find_map(|key| input[*key].as_str())
            {
                Some(what) => format!("{tool} ({what})"),
                None => tool.to_owned(),
            }
        })
        .collect();
    format!(
        "Claude Code refused {} for lack of permission: in its one-shot mode (--transport json) \
         it cannot ask you. Use --transport stream (the default), which asks you before each \
         tool, or allow the tool with Claude Code's own flags in [providers.claude] args (for \
         example --allowedTools or --permission-mode acceptEdits).",
        refused.join(", ")
    )
}

fn retry_notice(line: &WireLine<'_>) -> String {
    let cause = match (line.error_status, line.error.as_deref()) {
        (Some(status), Some(error)) => format!("HTTP {status} {error}"),
        (Some(status), None) => format!("HTTP {status}"),
        (None, Some("unknown") | None) => "a connection error".to_owned(),
        (None, Some(error)) => error.to_owned(),
    };
    let mut details = Vec::new();
    match (line.attempt, line.max_retries) {
        (Some(attempt), Some(max)) => details.push(format!("retry {attempt} of {max}")),
        (Some(attempt), None) => details.push(format!("retry {attempt}")),
        _ => {}
    }
    if let Some(ms) = line.retry_delay_ms {
        details.push(format!("in {:.1} s", ms / 1000.0));
    }
    let details = if details.is_empty() {
        String::new()
    } else {
        format!(" ({})", details.join(", "))
    };
    format!("Claude Code is retrying the model request after {cause}{details}")
}

fn usage(usage: Option<&WireUsage>, cost_usd: Option<f64>) -> Option<Usage> {
    if usage.is_none() && cost_usd.is_none() {
        return None;
    }
    let usage = usage.copied().unwrap_or_default();
    let counts = [
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_input_tokens,
        usage.cache_creation_input_tokens,
    ];
    // Every token the model processed: fresh input, output, and cached input read or written.
    let total_tokens = counts.iter().any(Option::is_some).then(|| {
        counts
            .iter()
            .flatten()
            .fold(0u64, |sum, count| sum.saturating_add(*count))
    });
    Some(Usage {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_read_tokens: usage.cache_read_input_tokens,
        cache_write_tokens: usage.cache_creation_input_tokens,
        total_tokens,
        cost_usd,
        ..Usage::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map_all(mapper: &mut ClaudeMapper, lines: &[&str]) -> (Vec<AgentMessage>, Vec<LineVerdict>) {
        let mut out = Vec::new();
        let verdicts = lines
            .iter()
            .map(|line| mapper.map_line(line, &mut out))
            .collect();
        (out, verdicts)
    }

    fn text_delta(text: &str) -> String {
        serde_json::json!({"type":"stream_event","event":{"type":"content_block_delta","index":0,
            "delta":{"type":"text_delta","text":text}}})
        .to_string()
    }

    fn complete_text(message_id: &str, text: &str) -> String {
        serde_json::json!({"type":"assistant","message":{"id":message_id,"model":"m",
            "content":[{"type":"text","text":text}],"stop_reason":null}})
        .to_string()
    }

    const MESSAGE_START: &str =
        r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1"}}}"#;
    const TEXT_START: &str = r#"{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}}"#;

    #[test]
    fn bad_lines_are_invalid_and_never_end_the_stream() {
        let mut mapper = ClaudeMapper::new(false);
        let (out, verdicts) = map_all(
            &mut mapper,
            &[
                "",
                "not json",
                "[1,2]",
                "{}",
                r#"{"type":"assistant"}"#,
                r#"{"type":"stream_event","event":{"type":"content_block_delta"}}"#,
                r#"{"type":"user","message":{"content":3}}"#,
                "\u{0}\u{fffd}{",
            ],
        );
        assert!(out.is_empty());
        assert!(
            verdicts
                .iter()
                .all(|verdict| *verdict == LineVerdict::Invalid),
            "{verdicts:?}"
        );
        assert!(!mapper.outcome_reported());
        let (out, _) = map_all(
            &mut mapper,
            &[MESSAGE_START, TEXT_START, &text_delta("still here")],
        );
        assert_eq!(
            out,
            [AgentMessage::Assistant {
                delta: "still here".into()
            }]
        );
    }

    #[test]
    fn unknown_event_types_are_ignored_even_with_unexpected_fields() {
        let mut mapper = ClaudeMapper::new(false);
        let (out, verdicts) = map_all(
            &mut mapper,
            &[
                r#"{"type":"control_response","response":{"subtype":"success"}}"#,
                r#"{"type":"brand_new","error":{"nested":true},"is_error":"yes"}"#,
                r#"{"type":"system","subtype":"status","status":"requesting"}"#,
            ],
        );
        assert!(out.is_empty());
        assert_eq!(verdicts, [LineVerdict::Ignored; 3]);
    }

    #[test]
    fn a_glued_line_is_kept_as_invalid_but_its_intact_tail_is_mapped() {
        let mut mapper = ClaudeMapper::new(false);
        // The CLI writes `type` first; cut one line short and glue the next one on.
        let delta = |text: &str| {
            format!(
                r#"{{"type":"stream_event","event":{{"index":0,"delta":{{"type":"text_delta","text":"{text}"}},"type":"content_block_delta"}},"session_id":"s"}}"#
            )
        };
        let glued = format!("{}{}", &delta("lost")[..70], delta("kept"));
        let (out, verdicts) = map_all(&mut mapper, &[MESSAGE_START, TEXT_START, &glued]);
        assert_eq!(verdicts[2], LineVerdict::Invalid);
        assert_eq!(
            out,
            [AgentMessage::Assistant {
                delta: "kept".into()
            }]
        );
    }

    #[test]
    fn a_complete_block_longer_than_the_stream_adds_only_the_missing_suffix() {
        let mut mapper = ClaudeMapper::new(false);
        let (out, _) = map_all(
            &mut mapper,
            &[
                MESSAGE_START,
                TEXT_START,
                &text_delta("Hel"),
                &complete_text("msg_1", "Hello"),
            ],
        );
        assert_eq!(
            out,
            [
                AgentMessage::Assistant {
                    delta: "Hel".into()
                },
                AgentMessage::Assistant { delta: "lo".into() }
            ]
        );
    }

    #[test]
    fn a_complete_block_shorter_than_the_stream_supersedes_it() {
        let mut mapper = ClaudeMapper::new(false);
        let (out, _) = map_all(
            &mut mapper,
            &[
                MESSAGE_START,
                TEXT_START,
                &text_delta("Hello world"),
                &complete_text("msg_1", "Hello"),
            ],
        );
        crate::provider::mapper::assert_superseded_by(&out, 1, "Hello");
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn a_restarted_stream_supersedes_the_abandoned_partial() {
        let mut mapper = ClaudeMapper::new(false);
        let restart = MESSAGE_START.replace("msg_1", "msg_2");
        let (out, _) = map_all(
            &mut mapper,
            &[
                MESSAGE_START,
                TEXT_START,
                &text_delta("cut"),
                &restart,
                TEXT_START,
                &text_delta("whole"),
                &complete_text("msg_2", "whole"),
            ],
        );
        assert_eq!(out.len(), 3);
        crate::provider::mapper::assert_superseded_by(&out, 1, "whole");
    }

    #[test]
    fn sub_agent_text_is_the_live_output_of_its_call_not_the_reply() {
        let mut mapper = ClaudeMapper::new(false);
        let agent = r#"{"type":"assistant","message":{"id":"m0","content":[{"type":"tool_use","id":"toolu_task","name":"Agent","input":{"description":"d","prompt":"p"}}]}}"#;
        let sub_agent = r#"{"type":"assistant","parent_tool_use_id":"toolu_task","message":{"id":"m","content":[{"type":"text","text":"inner"}]}}"#;
        let stray = r#"{"type":"assistant","parent_tool_use_id":"toolu_gone","message":{"id":"m","content":[{"type":"text","text":"lost"}]}}"#;
        let (out, _) = map_all(&mut mapper, &[agent, sub_agent, stray]);
        assert!(crate::stream::assistant_text(&out).is_empty(), "{out:?}");
        assert_eq!(
            out[1],
            AgentMessage::ToolUpdate {
                id: "toolu_task".into(),
                output: "inner".into()
            }
        );
        assert_eq!(out.len(), 2, "nothing for a call that is not open: {out:?}");
    }

    #[test]
    fn an_abort_we_did_not_ask_for_is_a_failure() {
        let aborted = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"terminal_reason":"aborted_streaming"}"#;
        for (stopped_by_us, aborted_outcome) in [(true, true), (false, false)] {
            let mut mapper = ClaudeMapper::new(false);
            map_all(&mut mapper, &[aborted]);
            assert!(mapper.outcome_reported());
            let exit = ExitFacts {
                exit_code: Some(0),
                signal: None,
                stopped_by_us,
            };
            let outcome = mapper.finish(exit, &mut Vec::new());
            assert_eq!(
                outcome == AgentOutcome::Aborted,
                aborted_outcome,
                "{outcome:?}"
            );
        }
    }

    #[test]
    fn thoughts_wait_while_a_tool_call_whose_result_was_lost_is_open() {
        let mut mapper = ClaudeMapper::new(false);
        let (mut out, _) = map_all(
            &mut mapper,
            &[
                r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}],"stop_reason":null}}"#,
                // A repeated line announces nothing more; the tool_result line was lost.
                r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}],"stop_reason":null}}"#,
                r#"{"type":"assistant","message":{"id":"m2","content":[{"type":"thinking","thinking":"Done."}],"stop_reason":"end_turn"}}"#,
            ],
        );
        mapper.finish(ExitFacts::default(), &mut out);
        assert_eq!(
            out,
            [
                AgentMessage::ToolCall {
                    id: "t".into(),
                    name: "Bash".into(),
                    input: serde_json::json!({}),
                    parent_id: None
                },
                AgentMessage::ToolFailed {
                    id: "t".into(),
                    error: "Claude Code ended before the tool call finished".into()
                },
                AgentMessage::Thought {
                    text: "Done.".into()
                },
            ]
        );
    }

    #[test]
    fn tool_output_falls_back_to_the_structured_result() {
        let mut mapper = ClaudeMapper::new(false);
        let call = r#"{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"true"}}]}}"#;
        let result = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[]}]},"tool_use_result":{"stdout":"out","stderr":"err"}}"#;
        let (out, _) = map_all(&mut mapper, &[call, result]);
        assert_eq!(
            out[1],
            AgentMessage::ToolCompleted {
                id: "t1".into(),
                output: "out\nerr".into()
            }
        );
    }

    #[test]
    fn a_task_made_in_one_turn_is_updated_in_the_next() {
        let init =
            r#"{"type":"system","subtype":"init","session_id":"two-turn-tasks","model":"m"}"#;
        let create = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"TaskCreate","input":{"subject":"Ship it"}}]}}"#;
        let created = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"Task #1 created successfully: Ship it"}]},"tool_use_result":{"task":{"id":"1","subject":"Ship it"}}}"#;
        let update = r#"{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"t2","name":"TaskUpdate","input":{"taskId":"1","status":"completed"}}]}}"#;
        let updated = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":"Updated task #1 status"}]}}"#;
        let failed = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t3","is_error":true,"content":"Task not found"}]}}"#;
        let update_missing = r#"{"type":"assistant","message":{"id":"m3","content":[{"type":"tool_use","id":"t3","name":"TaskUpdate","input":{"taskId":"9","status":"completed"}}]}}"#;
        let (first, _) = map_all(&mut ClaudeMapper::new(false), &[init, create, created]);
        assert_eq!(
            first,
            [
                AgentMessage::SessionStarted {
                    provider: "claude".into(),
                    session_id: Some("two-turn-tasks".into()),
                    model: Some("m".into())
                },
                AgentMessage::Plan {
                    entries: vec![crate::stream::PlanEntry {
                        content: "Ship it".into(),
                        status: "pending".into(),
                        priority: "medium".into()
                    }]
                }
            ]
        );
        let (second, _) = map_all(
            &mut ClaudeMapper::new(true),
            &[init, update, updated, update_missing, failed],
        );
        let AgentMessage::Plan { entries } = &second[1] else {
            panic!("{second:?}")
        };
        assert_eq!(
            (entries[0].content.as_str(), entries[0].status.as_str()),
            ("Ship it", "completed")
        );
        // A refused change is said, and leaves the plan as it was.
        assert!(
            matches!(&second[2], AgentMessage::Notice { message, .. }
                if message == "Claude Code could not update its task list: Task not found"),
            "{second:?}"
        );
        assert_eq!(second.len(), 3);
    }
}
