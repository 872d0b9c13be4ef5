//! pi `--mode json` events -> shared messages. Pure: lines in, messages out, no IO.
//!
//! Invariants (see protocols/pi/README.md for the wire format):
//! - `assistant` deltas concatenate to exactly the text of pi's assistant messages, nothing
//!   repeated, nothing lost. pi 0.73.1 sends incremental `assistantMessageEvent.delta`s *and*
//!   cumulative `message`/`partial` snapshots that may run ahead of them; a delta is never
//!   added on top of a snapshot: with deltas, the snapshots of streaming events are not read at
//!   all. Older pi sends snapshots only (no `delta`) and replays the earlier text after a tool
//!   turn; those go through a [`SnapshotReconciler`] per content block that remembers the text
//!   already shown, so only new text is emitted. With deltas, a block remembers only a digest
//!   of what it showed ([`ShownDigest`]), enough to check the final snapshot against it.
//! - `text_end.content` and `message_end.message` are authoritative: text they hold beyond what
//!   was shown is emitted; text that contradicts it gives a `superseded` notice followed by the
//!   authoritative text of that block.
//! - Thinking streams live as `assistant.thinking` deltas (display only) and is also buffered:
//!   one `assistant.thought` per thinking block, released when an
//!   assistant message ends (`message_end`, else `turn_end`) with a stop reason other than
//!   `toolUse`. Thinking of a `toolUse` message is held until the turn's final message ends and
//!   then released with it, in order; so thoughts never land between a `tool.call` and its end.
//! - Every `tool.call` gets exactly one `tool.completed`/`tool.failed`: calls still open when
//!   the stream ends are failed by [`Mapper::finish`].
//! - An assistant message ending with `stopReason` `error`/`aborted` is a failure although pi
//!   exits 0. pi's own auto-retry (`agent_end` then `auto_retry_start`) is not the end of the
//!   attempt: it shows as an `agent_retry` notice, and text after it starts afresh.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value;

use super::wire::{
    AssistantEvent, Envelope, Message, MessageLine, PiUsage, RetryEnd, RetryStart, SessionLine,
    SnapshotLine, ToolEnd, ToolStart, ToolUpdate,
};

use crate::provider::common::session_message;
use crate::provider::http_status::http_status_in;
use crate::provider::reconcile::{ShownDigest, SnapshotDelta, SnapshotReconciler};
use crate::provider::session_header::SessionHeader;
use crate::provider::tool_calls::{ToolCalls, ToolEnding};
use crate::provider::{AgentOutcome, ExitFacts, LineVerdict, Mapper};
use crate::stream::{AgentMessage, FailureReason, NoticeKind, Usage};

/// The agent, as its tool failures name it.
const AGENT: &str = crate::provider::ProviderKind::Pi.display_name();

/// pi's `stopReason` for a message that asked for tools (the turn goes on).
const STOP_TOOL_USE: &str = "toolUse";

pub struct PiMapper {
    provider: &'static str,
    resumed: bool,
    session: SessionHeader,
    /// Between an assistant `message_start` and its `message_end`.
    message_open: bool,
    /// The stream carries incremental `delta`s (pi 0.73.1), so it never replays earlier text.
    delta_protocol: bool,
    /// Text shown per `contentIndex`. In a snapshot-only stream it is kept across the messages
    /// of a run (until pi's own retry): older pi replays earlier text after a tool turn.
    text_blocks: BTreeMap<usize, TextBlock>,
    /// Thinking per `contentIndex` of the open message.
    thinking_blocks: BTreeMap<usize, SnapshotReconciler>,
    /// Complete thinking blocks of `toolUse` messages, waiting for the turn's final message.
    held_thoughts: Vec<String>,
    tools: ToolCalls,
    /// Summed over every assistant message of the process (each one was paid for).
    usage: Option<Usage>,
    last_assistant: Option<AssistantEnd>,
    /// `agent_end` came and no `auto_retry_start` after it (yet).
    agent_ended: bool,
    /// `auto_retry_end{success:false}`: pi gave up retrying; the last failure is final.
    retries_exhausted: bool,
}

#[derive(Debug)]
struct TextBlock {
    shown: Shown,
    /// The shown text is from an earlier message, and this message has shown nothing at this
    /// index yet: a snapshot that merely repeats it is a replay, not new text.
    carried: bool,
}

impl TextBlock {
    fn new(delta_protocol: bool) -> Self {
        Self {
            shown: Shown::new(delta_protocol),
            carried: false,
        }
    }
}

/// What a text block has shown. Snapshot-only streams keep the text: a replay is told from new
/// text by comparing it with what was shown, however short. With deltas (pi 0.73.1) the deltas
/// are the truth and the final snapshot only checks them, so a digest is enough, and the reply
/// is held once in memory (by the runner, for a failure's `text`), not twice.
#[derive(Debug)]
enum Shown {
    Text(SnapshotReconciler),
    Digest(ShownDigest),
}

impl Shown {
    fn new(delta_protocol: bool) -> Self {
        if delta_protocol {
            Self::Digest(ShownDigest::default())
        } else {
            Self::Text(SnapshotReconciler::new())
        }
    }

    fn observe<'a>(&mut self, snapshot: &'a str) -> SnapshotDelta<'a> {
        match self {
            Self::Text(text) => text.observe(snapshot),
            Self::Digest(digest) => digest.observe(snapshot),
        }
    }

    fn push_delta(&mut self, delta: &str) {
        match self {
            Self::Text(text) => text.push_delta(delta),
            Self::Digest(digest) => digest.push_delta(delta),
        }
    }

    fn replace(&mut self, snapshot: &str) {
        match self {
            Self::Text(text) => text.replace(snapshot),
            Self::Digest(digest) => digest.replace(snapshot),
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::Text(text) => text.shown().len(),
            Self::Digest(digest) => digest.len(),
        }
    }
}

#[derive(Debug, Clone)]
struct AssistantEnd {
    stop_reason: String,
    error_message: Option<String>,
}

impl PiMapper {
    /// `provider` names the provider in `session.*` messages (`pi`, or `demo` for the demo
    /// agent); `resumed` makes the session header a `session.resumed`.
    pub fn new(provider: &'static str, resumed: bool) -> Self {
        Self {
            provider,
            resumed,
            session: SessionHeader::default(),
            message_open: false,
            delta_protocol: false,
            text_blocks: BTreeMap::new(),
            thinking_blocks: BTreeMap::new(),
            held_thoughts: Vec::new(),
            tools: ToolCalls::default(),
            usage: None,
            last_assistant: None,
            agent_ended: false,
            retries_exhausted: false,
        }
    }

    fn completed_stop_reason(&self) -> Option<&str> {
        if !self.agent_ended {
            return None;
        }
        let last = self.last_assistant.as_ref()?;
        matches!(last.stop_reason.as_str(), "stop" | "length").then_some(last.stop_reason.as_str())
    }

    fn failure(&self) -> Option<&AssistantEnd> {
        self.last_assistant
            .as_ref()
            .filter(|last| matches!(last.stop_reason.as_str(), "error" | "aborted"))
    }

    fn map_event(
        &mut self,
        kind: &str,
        assistant_event: Option<AssistantEvent<'_>>,
        line: &str,
        out: &mut Vec<AgentMessage>,
    ) -> serde_json::Result<LineVerdict> {
        match kind {
            "session" => {
                let header: SessionLine = serde_json::from_str(line)?;
                let message = session_message(
                    self.provider,
                    self.resumed,
                    header.id.map(Cow::into_owned),
                    None,
                );
                self.session.announce(message, out);
            }
            "message_start" => {
                let event: MessageLine = serde_json::from_str(line)?;
                if event.message.is_some_and(|message| message.is_assistant()) {
                    self.start_message();
                }
            }
            "message_update" => self.message_update(line, assistant_event, out)?,
            "message_end" => {
                let event: MessageLine = serde_json::from_str(line)?;
                if let Some(message) = event.message.filter(Message::is_assistant) {
                    self.end_message(&message, out);
                }
            }
            "turn_end" => {
                // turn_end repeats the assistant message; it only matters if message_end was lost.
                if self.message_open {
                    let event: MessageLine = serde_json::from_str(line)?;
                    if let Some(message) = event.message.filter(Message::is_assistant) {
                        self.end_message(&message, out);
                    }
                }
            }
            "agent_end" => self.agent_ended = true,
            "tool_execution_start" => {
                let event: ToolStart = serde_json::from_str(line)?;
                let input = event.args.unwrap_or(Value::Null);
                self.tools
                    .start(&event.tool_call_id, &event.tool_name, input, out);
            }
            "tool_execution_update" => {
                let event: ToolUpdate = serde_json::from_str(line)?;
                let output = event
                    .partial_result
                    .map(|result| result.text())
                    .unwrap_or_default();
                self.tools.update(&event.tool_call_id, output, out);
            }
            "tool_execution_end" => {
                let event: ToolEnd = serde_json::from_str(line)?;
                let output = event.result.map(|result| result.text()).unwrap_or_default();
                let ending = ToolEnding::from_output(event.is_error, output);
                self.tools.end(&event.tool_call_id, ending, out);
            }
            "auto_retry_start" => {
                let event: RetryStart = serde_json::from_str(line)?;
                out.push(AgentMessage::notice(
                    NoticeKind::AgentRetry,
                    event.describe(),
                ));
                // The failed try is being retried: it is neither the outcome nor a base for text.
                self.agent_ended = false;
                self.last_assistant = None;
                self.message_open = false;
                self.text_blocks.clear();
                self.thinking_blocks.clear();
            }
            "auto_retry_end" => {
                let event: RetryEnd = serde_json::from_str(line)?;
                self.retries_exhausted = !event.success;
            }
            "agent_start" | "turn_start" => {}
            _ => return Ok(LineVerdict::Ignored),
        }
        Ok(LineVerdict::Event)
    }

    fn start_message(&mut self) {
        self.message_open = true;
        self.thinking_blocks.clear();
        if self.delta_protocol {
            self.text_blocks.clear();
            return;
        }
        for block in self.text_blocks.values_mut() {
            block.carried = true;
        }
    }

    fn message_update(
        &mut self,
        line: &str,
        event: Option<AssistantEvent<'_>>,
        out: &mut Vec<AgentMessage>,
    ) -> serde_json::Result<()> {
        if !self.message_open {
            // An update without its message_start (a stream joined late): open it now.
            self.start_message();
        }
        let Some(event) = event else {
            // No event description at all: only the snapshot can tell what is new.
            return self.read_snapshot(line, out);
        };
        let index = event.content_index.unwrap_or(0);
        self.delta_protocol |= event.delta.is_some();
        match (event.kind.as_ref(), event.delta) {
            ("text_delta", Some(delta)) => self.push_text_delta(index, &delta, out),
            ("thinking_delta", Some(delta)) => {
                self.thinking_blocks
                    .entry(index)
                    .or_default()
                    .push_delta(&delta);
                if !delta.is_empty() {
                    out.push(AgentMessage::Thinking {
                        delta: delta.into_owned(),
                    });
                }
            }
            ("text_delta" | "thinking_delta", None) => return self.read_snapshot(line, out),
            ("text_end", _) => {
                if let Some(content) = event.content {
                    self.reconcile_text(index, &content, true, out);
                }
            }
            ("thinking_end", _) => {
                if let Some(content) = event.content {
                    self.thinking_blocks
                        .entry(index)
                        .or_default()
                        .replace(&content);
                }
            }
            // *_start events carry snapshots that may run ahead of the deltas; toolcall events
            // are shown through tool_execution_*.
            _ => {}
        }
        Ok(())
    }

    /// Older pi: the cumulative `message` snapshot is all there is.
    fn read_snapshot(&mut self, line: &str, out: &mut Vec<AgentMessage>) -> serde_json::Result<()> {
        let update: SnapshotLine = serde_json::from_str(line)?;
        let Some(message) = update.message else {
            return Ok(());
        };
        for (index, block) in message.content.iter().enumerate() {
            match block.kind.as_ref() {
                "text" => {
                    if let Some(text) = &block.text {
                        self.reconcile_text(index, text, false, out);
                    }
                }
                "thinking" => {
                    if let Some(thinking) = &block.thinking {
                        let shown = self.thinking_blocks.entry(index).or_default();
                        match shown.observe(thinking) {
                            SnapshotDelta::Append(suffix) => out.push(AgentMessage::Thinking {
                                delta: suffix.to_owned(),
                            }),
                            SnapshotDelta::Unchanged => {}
                            SnapshotDelta::Diverged { .. } => shown.replace(thinking),
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn text_block(&mut self, index: usize) -> &mut TextBlock {
        let delta_protocol = self.delta_protocol;
        self.text_blocks
            .entry(index)
            .or_insert_with(|| TextBlock::new(delta_protocol))
    }

    fn push_text_delta(&mut self, index: usize, delta: &str, out: &mut Vec<AgentMessage>) {
        let block = self.text_block(index);
        if block.carried {
            // Deltas never replay earlier text (pi 0.73.1): this is a fresh block.
            *block = TextBlock::new(true);
        }
        if delta.is_empty() {
            return;
        }
        block.shown.push_delta(delta);
        out.push(AgentMessage::Assistant {
            delta: delta.to_owned(),
        });
    }

    /// Brings the shown text of block `index` in line with `snapshot`. An `authoritative`
    /// snapshot (`text_end`, `message_end`) also corrects text that ran ahead of it.
    fn reconcile_text(
        &mut self,
        index: usize,
        snapshot: &str,
        authoritative: bool,
        out: &mut Vec<AgentMessage>,
    ) {
        let block = self.text_block(index);
        match block.shown.observe(snapshot) {
            SnapshotDelta::Append(suffix) => {
                block.carried = false;
                out.push(AgentMessage::Assistant {
                    delta: suffix.to_owned(),
                });
            }
            SnapshotDelta::Unchanged => {
                let shorter = block.shown.len() != snapshot.len();
                if authoritative && shorter && !block.carried {
                    supersede(block, snapshot, out);
                }
            }
            SnapshotDelta::Diverged { .. } if block.carried => {
                // Not a replay of the earlier message: this message starts new text here. What
                // was held back as "replay so far" is part of it, so the whole snapshot is new.
                block.shown.replace(snapshot);
                block.carried = false;
                if !snapshot.is_empty() {
                    out.push(AgentMessage::Assistant {
                        delta: snapshot.to_owned(),
                    });
                }
            }
            SnapshotDelta::Diverged { .. } => supersede(block, snapshot, out),
        }
    }

    fn end_message(&mut self, message: &Message<'_>, out: &mut Vec<AgentMessage>) {
        for (index, block) in message.content.iter().enumerate() {
            match block.kind.as_ref() {
                "text" => {
                    if let Some(text) = &block.text {
                        self.reconcile_text(index, text, true, out);
                    }
                }
                "thinking" => {
                    if let Some(thinking) = &block.thinking {
                        self.thinking_blocks
                            .entry(index)
                            .or_default()
                            .replace(thinking);
                    }
                }
                _ => {}
            }
        }
        self.message_open = false;
        self.hold_thinking();
        if let Some(usage) = &message.usage {
            let total = self.usage.get_or_insert_with(Usage::default);
            add_usage(total, usage);
            if let Some(model) = &message.model {
                total.model = Some(model.clone().into_owned());
            }
        }
        let stop_reason = message
            .stop_reason
            .as_deref()
            .unwrap_or_default()
            .to_owned();
        if stop_reason != STOP_TOOL_USE {
            self.tools.release_thoughts(&mut self.held_thoughts, out);
        }
        self.last_assistant = Some(AssistantEnd {
            stop_reason,
            error_message: message.error_message.as_deref().map(str::to_owned),
        });
    }

    fn hold_thinking(&mut self) {
        let blocks = std::mem::take(&mut self.thinking_blocks);
        self.held_thoughts.extend(
            blocks
                .into_values()
                .map(|block| block.shown().to_owned())
                .filter(|text| !text.is_empty()),
        );
    }
}

fn supersede(block: &mut TextBlock, authoritative: &str, out: &mut Vec<AgentMessage>) {
    out.push(AgentMessage::notice(
        NoticeKind::Superseded,
        "pi's final text for this reply differs from what was streamed; the final text follows",
    ));
    block.shown.replace(authoritative);
    block.carried = false;
    out.push(AgentMessage::Assistant {
        delta: authoritative.to_owned(),
    });
}

fn add_usage(total: &mut Usage, usage: &PiUsage) {
    fn add(total: &mut Option<u64>, value: Option<f64>) {
        if let Some(value) = value.filter(|value| value.is_finite() && *value >= 0.0) {
            *total = Some(total.unwrap_or(0).saturating_add(value as u64));
        }
    }
    add(&mut total.input_tokens, usage.input);
    add(&mut total.output_tokens, usage.output);
    add(&mut total.cache_read_tokens, usage.cache_read);
    add(&mut total.cache_write_tokens, usage.cache_write);
    add(&mut total.total_tokens, usage.total_tokens);
    if let Some(cost) = usage.cost.as_ref().and_then(|cost| cost.total) {
        if cost.is_finite() {
            total.cost_usd = Some(total.cost_usd.unwrap_or(0.0) + cost);
        }
    }
}

impl Mapper for PiMapper {
    fn map_line(&mut self, line: &str, out: &mut Vec<AgentMessage>) -> LineVerdict {
        let Ok(envelope) = serde_json::from_str::<Envelope<'_>>(line) else {
            return LineVerdict::Invalid;
        };
        let Some(kind) = envelope.kind else {
            return LineVerdict::Invalid;
        };
        let first_new = out.len();
        let verdict = match self.map_event(&kind, envelope.assistant_event, line, out) {
            Ok(verdict) => verdict,
            Err(error) => {
                tracing::debug!(%error, kind = %kind, "pi event of an unexpected shape");
                out.truncate(first_new);
                LineVerdict::Invalid
            }
        };
        self.session.close_if_emitted(out);
        verdict
    }

    fn outcome_reported(&self) -> bool {
        self.completed_stop_reason().is_some()
            || (self.retries_exhausted && self.failure().is_some())
    }

    fn finish(&mut self, exit: ExitFacts, out: &mut Vec<AgentMessage>) -> AgentOutcome {
        self.tools.fail_all_open(AGENT, exit.stopped_by_us, out);
        // No later point will come to release thinking of a cut-off turn; show what there is.
        self.hold_thinking();
        self.tools.release_thoughts(&mut self.held_thoughts, out);

        if let Some(stop_reason) = self.completed_stop_reason() {
            return AgentOutcome::Completed {
                stop_reason: stop_reason.to_owned(),
                usage: self.usage.clone(),
            };
        }
        if let Some(failure) = self.failure() {
            if exit.stopped_by_us && failure.stop_reason == "aborted" {
                return AgentOutcome::Aborted;
            }
            let message = failure.error_message.clone().unwrap_or_else(|| {
                format!("pi ended the reply with stopReason {}", failure.stop_reason)
            });
            return AgentOutcome::Failed {
                reason: FailureReason::AgentError,
                http_status: http_status_in(&message),
                message,
            };
        }
        AgentOutcome::Unfinished
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assistant(content: Value, stop_reason: &str) -> Value {
        json!({"role": "assistant", "content": content, "stopReason": stop_reason,
               "usage": {"input": 10, "output": 2, "cacheRead": 1, "cacheWrite": 0,
                         "totalTokens": 13, "cost": {"total": 0.5}}})
    }

    fn start() -> Value {
        json!({"type": "message_start", "message": assistant(json!([]), "stop")})
    }

    fn update(kind: &str, index: usize, delta: Option<&str>) -> Value {
        let mut event = json!({"type": kind, "contentIndex": index});
        if let Some(delta) = delta {
            event["delta"] = Value::from(delta);
        }
        json!({"type": "message_update", "assistantMessageEvent": event})
    }

    fn end(content: Value, stop_reason: &str) -> Value {
        json!({"type": "message_end", "message": assistant(content, stop_reason)})
    }

    fn run(mapper: &mut PiMapper, events: &[Value]) -> Vec<AgentMessage> {
        let mut out = Vec::new();
        for event in events {
            assert_eq!(
                mapper.map_line(&event.to_string(), &mut out),
                LineVerdict::Event,
                "{event}"
            );
        }
        out
    }

    use crate::stream::assistant_text as text;

    fn exit_ok() -> ExitFacts {
        ExitFacts {
            exit_code: Some(0),
            ..ExitFacts::default()
        }
    }

    #[test]
    fn snapshot_strings_are_borrowed_from_the_line_unless_escaped() {
        let line = r#"{"role":"assistant","model":"m","content":[{"type":"text","text":"plain"},{"type":"text","text":"a\nb"}]}"#;
        let message: Message<'_> = serde_json::from_str(line).unwrap();
        assert!(matches!(message.model, Some(Cow::Borrowed("m"))));
        assert!(matches!(
            message.content[0].text,
            Some(Cow::Borrowed("plain"))
        ));
        assert!(matches!(&message.content[1].text, Some(Cow::Owned(text)) if text == "a\nb"));
        let missing: Message<'_> = serde_json::from_str("{}").unwrap();
        assert!(missing.model.is_none() && missing.role.is_none());
    }

    #[test]
    fn bad_lines_are_invalid_and_the_stream_goes_on() {
        let mut mapper = PiMapper::new("pi", false);
        let mut out = Vec::new();
        for line in [
            "not json",
            "",
            "[1,2]",
            r#"{"no_type":1}"#,
            r#"{"type":7}"#,
            r#"{"type":"tool_execution_start","toolName":"bash"}"#,
            r#"{"type":"message_end","message":{"role":"assistant","content":5}}"#,
            r#"{"type":"session""#,
        ] {
            assert_eq!(
                mapper.map_line(line, &mut out),
                LineVerdict::Invalid,
                "{line}"
            );
        }
        assert!(out.is_empty());
        assert_eq!(
            mapper.map_line(
                r#"{"type":"compaction_start","reason":"threshold"}"#,
                &mut out
            ),
            LineVerdict::Ignored
        );
        let out = run(
            &mut mapper,
            &[start(), update("text_delta", 0, Some("still here"))],
        );
        assert_eq!(text(&out), "still here");
    }

    #[test]
    fn the_final_message_completes_what_the_deltas_left_out() {
        let mut mapper = PiMapper::new("pi", false);
        let mut text_end = update("text_end", 0, None);
        text_end["assistantMessageEvent"]["content"] = Value::from("Hello wor");
        let out = run(
            &mut mapper,
            &[
                start(),
                update("text_delta", 0, Some("Hello")),
                text_end,
                end(json!([{"type": "text", "text": "Hello world"}]), "stop"),
            ],
        );
        assert_eq!(text(&out), "Hello world");
        assert!(out
            .iter()
            .all(|message| matches!(message, AgentMessage::Assistant { .. })));
    }

    #[test]
    fn a_contradicting_final_message_supersedes_the_streamed_text() {
        let mut mapper = PiMapper::new("pi", false);
        let out = run(
            &mut mapper,
            &[
                start(),
                update("text_delta", 0, Some("Hello there")),
                end(json!([{"type": "text", "text": "Goodbye"}]), "stop"),
            ],
        );
        assert_eq!(
            out[1..],
            [
                AgentMessage::notice(NoticeKind::Superseded,
                    "pi's final text for this reply differs from what was streamed; the final text follows"
                ),
                AgentMessage::Assistant {
                    delta: "Goodbye".into()
                },
            ]
        );
        // As long as the streamed text, or longer without starting with it: contradictions too
        // (pi's deltas are checked by a digest of what they showed, not by the text).
        for contradicting in ["Hello world", "Hi there, and welcome"] {
            let mut mapper = PiMapper::new("pi", false);
            let out = run(
                &mut mapper,
                &[
                    start(),
                    update("text_delta", 0, Some("Hello ")),
                    update("text_delta", 0, Some("there")),
                    end(json!([{"type": "text", "text": contradicting}]), "stop"),
                ],
            );
            assert!(
                matches!(&out[2], AgentMessage::Notice { kind, .. } if *kind == NoticeKind::Superseded),
                "{contradicting}: {out:?}"
            );
            assert_eq!(out[3].assistant_delta(), Some(contradicting));
        }
        // A final text shorter than what was streamed contradicts it too.
        let mut mapper = PiMapper::new("pi", false);
        let out = run(
            &mut mapper,
            &[
                start(),
                update("text_delta", 0, Some("Hello there")),
                end(json!([{"type": "text", "text": "Hello"}]), "stop"),
            ],
        );
        crate::provider::mapper::assert_superseded_by(&out, 1, "Hello");
    }

    #[test]
    fn snapshots_that_run_ahead_of_deltas_are_never_added() {
        // text_start already carries text in its snapshot (a burst): only deltas count.
        let mut mapper = PiMapper::new("pi", false);
        let snapshot_ahead = json!({"type": "message_update",
            "assistantMessageEvent": {"type": "text_start", "contentIndex": 0},
            "message": assistant(json!([{"type": "text", "text": "One two"}]), "stop")});
        let out = run(
            &mut mapper,
            &[
                start(),
                snapshot_ahead,
                update("text_delta", 0, Some("One")),
                update("text_delta", 0, Some(" two")),
                end(json!([{"type": "text", "text": "One two"}]), "stop"),
            ],
        );
        assert_eq!(text(&out), "One two");
    }

    #[test]
    fn several_text_blocks_and_thinking_in_one_message() {
        let mut mapper = PiMapper::new("pi", false);
        let out = run(
            &mut mapper,
            &[
                start(),
                update("thinking_delta", 0, Some("Hmm.")),
                update("text_delta", 1, Some("First.")),
                update("thinking_delta", 2, Some("Again.")),
                update("text_delta", 3, Some(" Second.")),
                end(
                    json!([{"type": "thinking", "thinking": "Hmm."}, {"type": "text", "text": "First."},
                           {"type": "thinking", "thinking": "Again."}, {"type": "text", "text": " Second."}]),
                    "stop",
                ),
            ],
        );
        assert_eq!(
            out,
            [
                AgentMessage::Thinking {
                    delta: "Hmm.".into()
                },
                AgentMessage::Assistant {
                    delta: "First.".into()
                },
                AgentMessage::Thinking {
                    delta: "Again.".into()
                },
                AgentMessage::Assistant {
                    delta: " Second.".into()
                },
                AgentMessage::Thought {
                    text: "Hmm.".into()
                },
                AgentMessage::Thought {
                    text: "Again.".into()
                },
            ]
        );
    }

    #[test]
    fn thinking_of_a_tool_use_message_waits_for_the_final_message() {
        let mut mapper = PiMapper::new("pi", false);
        let tool_turn = [
            start(),
            update("thinking_delta", 0, Some("Need a tool.")),
            update("text_delta", 1, Some("Checking.")),
            end(
                json!([{"type": "thinking", "thinking": "Need a tool."}, {"type": "text", "text": "Checking."},
                       {"type": "toolCall", "id": "t1", "name": "bash", "arguments": {}}]),
                STOP_TOOL_USE,
            ),
            json!({"type": "tool_execution_start", "toolCallId": "t1", "toolName": "bash", "args": {"command": "ls"}}),
            json!({"type": "tool_execution_end", "toolCallId": "t1", "result": {"content": [{"type": "text", "text": "a\n"}]}, "isError": false}),
            json!({"type": "turn_end", "message": assistant(json!([]), STOP_TOOL_USE), "toolResults": []}),
        ];
        let out = run(&mut mapper, &tool_turn);
        assert!(!out
            .iter()
            .any(|message| matches!(message, AgentMessage::Thought { .. })));
        let out = run(
            &mut mapper,
            &[
                start(),
                update("thinking_delta", 0, Some("Done.")),
                update("text_delta", 1, Some("Found a.")),
                end(
                    json!([{"type": "thinking", "thinking": "Done."}, {"type": "text", "text": "Found a."}]),
                    "stop",
                ),
            ],
        );
        assert_eq!(
            out,
            [
                AgentMessage::Thinking {
                    delta: "Done.".into()
                },
                AgentMessage::Assistant {
                    delta: "Found a.".into()
                },
                AgentMessage::Thought {
                    text: "Need a tool.".into()
                },
                AgentMessage::Thought {
                    text: "Done.".into()
                },
            ]
        );
    }

    #[test]
    fn turn_end_closes_a_message_whose_end_was_lost() {
        let mut mapper = PiMapper::new("pi", false);
        let out = run(
            &mut mapper,
            &[
                start(),
                update("thinking_delta", 0, Some("Think.")),
                update("text_delta", 1, Some("Answer")),
                json!({"type": "turn_end", "toolResults": [], "message": assistant(
                    json!([{"type": "thinking", "thinking": "Think."}, {"type": "text", "text": "Answer."}]), "stop")}),
                json!({"type": "agent_end", "messages": []}),
            ],
        );
        assert_eq!(text(&out), "Answer.");
        assert!(out.contains(&AgentMessage::Thought {
            text: "Think.".into()
        }));
        assert!(mapper.outcome_reported());
    }

    #[test]
    fn concurrent_tools_are_matched_by_id() {
        let mut mapper = PiMapper::new("pi", false);
        let partial = |id: &str, text: &str| {
            json!({"type": "tool_execution_update", "toolCallId": id, "toolName": "bash", "args": {},
                   "partialResult": {"content": [{"type": "text", "text": text}]}})
        };
        let out = run(
            &mut mapper,
            &[
                json!({"type": "tool_execution_start", "toolCallId": "a", "toolName": "bash", "args": {"command": "echo alpha"}}),
                json!({"type": "tool_execution_start", "toolCallId": "b", "toolName": "read", "args": {"path": "x"}}),
                json!({"type": "tool_execution_update", "toolCallId": "a", "partialResult": {"content": []}}),
                partial("b", "be"),
                partial("a", "al"),
                partial("a", "al"),
                partial("b", "beta"),
                json!({"type": "tool_execution_end", "toolCallId": "b", "result": {"content": [{"type": "text", "text": "beta"}]}, "isError": false}),
                json!({"type": "tool_execution_end", "toolCallId": "a", "result": {"content": [{"type": "text", "text": "Command exited with code 3"}]}, "isError": true}),
            ],
        );
        assert_eq!(
            out,
            [
                AgentMessage::ToolCall {
                    id: "a".into(),
                    name: "bash".into(),
                    input: json!({"command": "echo alpha"}),
                    parent_id: None
                },
                AgentMessage::ToolCall {
                    id: "b".into(),
                    name: "read".into(),
                    input: json!({"path": "x"}),
                    parent_id: None
                },
                AgentMessage::ToolUpdate {
                    id: "b".into(),
                    output: "be".into()
                },
                AgentMessage::ToolUpdate {
                    id: "a".into(),
                    output: "al".into()
                },
                AgentMessage::ToolUpdate {
                    id: "b".into(),
                    output: "beta".into()
                },
                AgentMessage::ToolCompleted {
                    id: "b".into(),
                    output: "beta".into()
                },
                AgentMessage::ToolFailed {
                    id: "a".into(),
                    error: "Command exited with code 3".into()
                },
            ]
        );
    }

    #[test]
    fn open_tools_and_held_thinking_are_flushed_at_the_end() {
        let mut mapper = PiMapper::new("pi", false);
        run(
            &mut mapper,
            &[
                start(),
                update("thinking_delta", 0, Some("Sleep a while.")),
                end(
                    json!([{"type": "thinking", "thinking": "Sleep a while."},
                           {"type": "toolCall", "id": "s", "name": "bash", "arguments": {}}]),
                    STOP_TOOL_USE,
                ),
                json!({"type": "tool_execution_start", "toolCallId": "s", "toolName": "bash", "args": {"command": "sleep 100"}}),
            ],
        );
        let mut out = Vec::new();
        let outcome = mapper.finish(
            ExitFacts {
                signal: Some(9),
                stopped_by_us: true,
                ..ExitFacts::default()
            },
            &mut out,
        );
        assert_eq!(
            out,
            [
                AgentMessage::ToolFailed {
                    id: "s".into(),
                    error: "stopped before the tool call finished".into()
                },
                AgentMessage::Thought {
                    text: "Sleep a while.".into()
                },
            ]
        );
        assert_eq!(outcome, AgentOutcome::Unfinished);
    }

    #[test]
    fn thoughts_wait_while_a_tool_call_whose_end_was_lost_is_open() {
        let mut mapper = PiMapper::new("pi", false);
        let mut out = run(
            &mut mapper,
            &[
                json!({"type": "tool_execution_start", "toolCallId": "t", "toolName": "bash", "args": {}}),
                // Its tool_execution_end was lost; and so was the start of this update's call.
                json!({"type": "tool_execution_update", "toolCallId": "lost", "partialResult": {"content": [{"type": "text", "text": "x"}]}}),
                start(),
                update("thinking_delta", 0, Some("Done.")),
                end(json!([{"type": "thinking", "thinking": "Done."}]), "stop"),
            ],
        );
        mapper.finish(exit_ok(), &mut out);
        assert_eq!(
            out,
            [
                AgentMessage::ToolCall {
                    id: "t".into(),
                    name: "bash".into(),
                    input: json!({}),
                    parent_id: None
                },
                AgentMessage::Thinking {
                    delta: "Done.".into()
                },
                AgentMessage::ToolFailed {
                    id: "t".into(),
                    error: "pi ended before the tool call finished".into()
                },
                AgentMessage::Thought {
                    text: "Done.".into()
                },
            ]
        );
    }

    #[test]
    fn an_internal_retry_is_a_notice_and_not_the_end() {
        let mut mapper = PiMapper::new("pi", false);
        let mut failed = end(json!([{"type": "text", "text": "Par"}]), "error");
        failed["message"]["errorMessage"] = Value::from("429 rate limited");
        let out = run(
            &mut mapper,
            &[
                start(),
                update("text_delta", 0, Some("Par")),
                failed,
                json!({"type": "agent_end", "messages": []}),
            ],
        );
        assert_eq!(text(&out), "Par");
        assert!(!mapper.outcome_reported());
        let out = run(
            &mut mapper,
            &[
                json!({"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 2000, "errorMessage": "429 rate limited"}),
                json!({"type": "agent_start"}),
                start(),
                update("text_delta", 0, Some("Partial answer.")),
                end(json!([{"type": "text", "text": "Partial answer."}]), "stop"),
                json!({"type": "auto_retry_end", "success": true, "attempt": 1}),
            ],
        );
        assert_eq!(
            out[0],
            AgentMessage::notice(NoticeKind::AgentRetry,
                "pi is retrying on its own after \"429 rate limited\" (retry 1 of 3, in 2000 ms); the reply starts afresh"
            )
        );
        assert_eq!(text(&out), "Partial answer.");
        assert!(!mapper.outcome_reported(), "agent_end has not come yet");
        run(&mut mapper, &[json!({"type": "agent_end", "messages": []})]);
        assert!(mapper.outcome_reported());
        let outcome = mapper.finish(exit_ok(), &mut Vec::new());
        let AgentOutcome::Completed { stop_reason, usage } = outcome else {
            panic!("completed expected, got {outcome:?}");
        };
        assert_eq!(stop_reason, "stop");
        // Both tries were paid for.
        let usage = usage.unwrap();
        assert_eq!(
            (usage.input_tokens, usage.total_tokens, usage.cost_usd),
            (Some(20), Some(26), Some(1.0))
        );
    }

    #[test]
    fn an_error_message_is_a_failure_with_its_http_status() {
        let mut mapper = PiMapper::new("pi", false);
        let mut failed = end(json!([]), "error");
        failed["message"]["errorMessage"] = Value::from("503 overloaded");
        run(
            &mut mapper,
            &[
                start(),
                failed,
                json!({"type": "agent_end", "messages": []}),
            ],
        );
        assert!(!mapper.outcome_reported());
        run(
            &mut mapper,
            &[
                json!({"type": "auto_retry_end", "success": false, "attempt": 3, "finalError": "503 overloaded"}),
            ],
        );
        assert!(mapper.outcome_reported());
        assert_eq!(
            mapper.finish(exit_ok(), &mut Vec::new()),
            AgentOutcome::Failed {
                reason: FailureReason::AgentError,
                message: "503 overloaded".into(),
                http_status: Some(503),
            }
        );
    }

    #[test]
    fn an_aborted_message_is_aborted_only_when_we_stopped_it() {
        let aborted = || {
            let mut aborted = end(json!([]), "aborted");
            aborted["message"]["errorMessage"] = Value::from("Request was aborted");
            aborted
        };
        let mut mapper = PiMapper::new("pi", false);
        run(&mut mapper, &[start(), aborted()]);
        let stopped = ExitFacts {
            exit_code: Some(143),
            stopped_by_us: true,
            ..ExitFacts::default()
        };
        assert_eq!(
            mapper.finish(stopped, &mut Vec::new()),
            AgentOutcome::Aborted
        );

        let mut mapper = PiMapper::new("pi", false);
        run(&mut mapper, &[start(), aborted()]);
        assert!(matches!(
            mapper.finish(exit_ok(), &mut Vec::new()),
            AgentOutcome::Failed { message, http_status: None, .. } if message == "Request was aborted"
        ));
    }

    #[test]
    fn session_header_names_the_session() {
        let header = json!({"type": "session", "version": 3, "id": "abc", "cwd": "/w"});
        let out = run(
            &mut PiMapper::new("demo", false),
            std::slice::from_ref(&header),
        );
        assert_eq!(
            out,
            [AgentMessage::SessionStarted {
                provider: "demo".into(),
                session_id: Some("abc".into()),
                model: None,
            }]
        );
        let out = run(&mut PiMapper::new("pi", true), &[header]);
        assert_eq!(
            out,
            [AgentMessage::SessionResumed {
                provider: "pi".into(),
                session_id: "abc".into(),
                model: None,
            }]
        );
    }

    #[test]
    fn snapshot_only_contradiction_within_a_message_is_superseded() {
        let snapshot = |text: &str| {
            json!({"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0},
                   "message": assistant(json!([{"type": "text", "text": text}]), "stop")})
        };
        let mut mapper = PiMapper::new("pi", false);
        let out = run(
            &mut mapper,
            &[
                start(),
                snapshot("Hel"),
                snapshot("Hello"),
                snapshot("Help me"),
                end(json!([{"type": "text", "text": "Help me"}]), "stop"),
            ],
        );
        assert_eq!(
            out[..2],
            [
                AgentMessage::Assistant {
                    delta: "Hel".into()
                },
                AgentMessage::Assistant { delta: "lo".into() }
            ]
        );
        crate::provider::mapper::assert_superseded_by(&out, 2, "Help me");
    }
}
