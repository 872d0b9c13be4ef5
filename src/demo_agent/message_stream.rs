//! One pi assistant message as it streams (`message_start`, the `message_update`s of its text,
//! thinking and tool-call blocks, their `*_end`s, `message_end`), kept as pi's
//! openai-completions provider keeps it: see `player` for the rules.

use std::io;

use serde_json::Value;

use super::output::Output;
use super::pace::Pace;
use super::partial_json;
use super::scenario::Scenario;
use super::state::now_ms;
use super::wire::{
    AssistantMessage, AssistantMessageEvent, ContentBlock, Event, MessageRef, StopReason, Usage,
};

/// How many characters of the tool-call argument JSON one `toolcall_delta` carries.
const ARGUMENT_FRAGMENT_CHARS: usize = 8;

/// The block a chunk of streamed text goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockKind {
    Text,
    Thinking,
}

impl BlockKind {
    /// The `assistantMessageEvent` types that open this block and add a chunk to it.
    fn events(self) -> (&'static str, &'static str) {
        match self {
            BlockKind::Text => ("text_start", "text_delta"),
            BlockKind::Thinking => ("thinking_start", "thinking_delta"),
        }
    }
}

/// One assistant message being streamed.
pub(crate) struct MessageStream {
    message: AssistantMessage,
    response_id: String,
    legacy: bool,
    tool_calls_in_message: u32,
    output_tokens: u64,
}

impl MessageStream {
    /// A message opened now (`message_start` not yet printed), answering as response `number`;
    /// `legacy`: as older pi streams it, snapshots with no deltas.
    pub(crate) fn open(number: u32, legacy: bool) -> Self {
        Self {
            message: AssistantMessage::started(now_ms()),
            response_id: format!("chatcmpl-demo-{number}"),
            legacy,
            tool_calls_in_message: 0,
            output_tokens: 0,
        }
    }

    pub(crate) fn message(&self) -> &AssistantMessage {
        &self.message
    }

    /// A request that fails outright: pi only shows the finished, failed message
    /// (`message_start` and `message_end`).
    pub(crate) fn fail_outright(
        mut self,
        out: &mut Output,
        error: &str,
    ) -> io::Result<AssistantMessage> {
        self.message.stop_reason = StopReason::Error;
        self.message.error_message = Some(error.to_owned());
        out.whole_message(MessageRef::Assistant(&self.message))?;
        Ok(self.message)
    }

    /// Ends the stream as pi's `abort` does: the `*_end` events of its text and thinking blocks
    /// with `stopReason:"aborted"`, then `message_end`, the content kept (`j_rpc_abort`).
    pub(crate) fn abort(mut self, out: &mut Output) -> io::Result<AssistantMessage> {
        self.message.stop_reason = StopReason::Aborted;
        self.message.error_message = Some("Request was aborted".to_owned());
        self.end_blocks(out, false)
    }

    /// Appends a chunk to the message's text (or thinking) block, opening it if needed.
    pub(crate) fn append(
        &mut self,
        out: &mut Output,
        kind: BlockKind,
        chunk: &str,
    ) -> io::Result<()> {
        self.on_chunk();
        let existing = self.message.content.iter().position(|block| {
            matches!(
                (kind, block),
                (BlockKind::Text, ContentBlock::Text { .. })
                    | (BlockKind::Thinking, ContentBlock::Thinking { .. })
            )
        });
        let content_index = match existing {
            Some(index) => {
                match &mut self.message.content[index] {
                    ContentBlock::Text { text } => text.push_str(chunk),
                    ContentBlock::Thinking { thinking, .. } => thinking.push_str(chunk),
                    ContentBlock::ToolCall { .. } => {}
                }
                index
            }
            None => {
                self.message.content.push(match kind {
                    BlockKind::Text => ContentBlock::text(chunk),
                    BlockKind::Thinking => ContentBlock::thinking(chunk),
                });
                let content_index = self.message.content.len() - 1;
                let partial = &self.message;
                let event = AssistantMessageEvent::new(kind.events().0, content_index, partial);
                emit_update(out, event, partial)?;
                content_index
            }
        };
        let delta = (!self.legacy).then_some(chunk);
        let partial = &self.message;
        let event =
            AssistantMessageEvent::new(kind.events().1, content_index, partial).delta(delta);
        emit_update(out, event, partial)
    }

    /// Streams a bash tool call: its start, then its argument JSON in fragments (the first one
    /// empty, as pi's first `toolcall_delta` is).
    pub(crate) fn tool_call(
        &mut self,
        out: &mut Output,
        pace: Pace,
        scenario: &Scenario,
        id: String,
        command: &str,
    ) -> io::Result<()> {
        self.on_chunk();
        let arguments_json = serde_json::json!({ "command": command }).to_string();
        self.message.content.push(ContentBlock::ToolCall {
            id,
            name: "bash",
            arguments: Value::Object(Default::default()),
            partial_args: Some(String::new()),
            stream_index: Some(self.tool_calls_in_message),
        });
        self.tool_calls_in_message += 1;
        let content_index = self.message.content.len() - 1;
        let partial = &self.message;
        emit_update(
            out,
            AssistantMessageEvent::new("toolcall_start", content_index, partial),
            partial,
        )?;
        let fragments = std::iter::once("").chain(partial_json::char_chunks(
            &arguments_json,
            ARGUMENT_FRAGMENT_CHARS,
        ));
        for fragment in fragments {
            pace.sleep_ms(scenario.token_delay_ms);
            self.output_tokens += 1;
            if let ContentBlock::ToolCall {
                arguments,
                partial_args: Some(so_far),
                ..
            } = &mut self.message.content[content_index]
            {
                so_far.push_str(fragment);
                *arguments = partial_json::parse_partial_object(so_far);
            }
            let partial = &self.message;
            let delta = (!self.legacy).then_some(fragment);
            emit_update(
                out,
                AssistantMessageEvent::new("toolcall_delta", content_index, partial).delta(delta),
                partial,
            )?;
        }
        Ok(())
    }

    /// The first chunk of a response carries its id; every chunk is one output token.
    fn on_chunk(&mut self) {
        if self.message.response_id.is_none() {
            self.message.response_id = Some(self.response_id.clone());
        }
        self.output_tokens += 1;
    }

    /// Ends the stream normally: final usage and stop reason, the `*_end` events, `message_end`.
    pub(crate) fn finish(
        mut self,
        out: &mut Output,
        input_tokens: u64,
    ) -> io::Result<AssistantMessage> {
        self.message.usage = Usage::new(input_tokens, self.output_tokens);
        let mut calls_tools = false;
        for block in &mut self.message.content {
            if let ContentBlock::ToolCall {
                arguments,
                partial_args,
                stream_index,
                ..
            } = block
            {
                calls_tools = true;
                if let Some(json) = partial_args.take() {
                    *arguments = serde_json::from_str(&json).unwrap_or_else(|_| arguments.clone());
                }
                *stream_index = None;
            }
        }
        self.message.stop_reason = if calls_tools {
            StopReason::ToolUse
        } else {
            StopReason::Stop
        };
        self.end_blocks(out, true)
    }

    /// The `*_end` event of every block (of tool calls only with `tool_calls`), then
    /// `message_end`.
    fn end_blocks(self, out: &mut Output, tool_calls: bool) -> io::Result<AssistantMessage> {
        let partial = &self.message;
        for (content_index, block) in partial.content.iter().enumerate() {
            let event = match block {
                ContentBlock::Text { text } => {
                    AssistantMessageEvent::new("text_end", content_index, partial).content(text)
                }
                ContentBlock::Thinking { thinking, .. } => {
                    AssistantMessageEvent::new("thinking_end", content_index, partial)
                        .content(thinking)
                }
                ContentBlock::ToolCall { .. } if tool_calls => {
                    AssistantMessageEvent::new("toolcall_end", content_index, partial)
                        .tool_call(block)
                }
                ContentBlock::ToolCall { .. } => continue,
            };
            emit_update(out, event, partial)?;
        }
        out.event(&Event::MessageEnd {
            message: MessageRef::Assistant(&self.message),
        })?;
        Ok(self.message)
    }

    /// Ends the stream with a provider error: straight to `message_end`, content kept.
    pub(crate) fn fail(mut self, out: &mut Output, error: &str) -> io::Result<AssistantMessage> {
        self.message.stop_reason = StopReason::Error;
        self.message.error_message = Some(error.to_owned());
        out.event(&Event::MessageEnd {
            message: MessageRef::Assistant(&self.message),
        })?;
        Ok(self.message)
    }
}

fn emit_update(
    out: &mut Output,
    assistant_message_event: AssistantMessageEvent,
    message: &AssistantMessage,
) -> io::Result<()> {
    out.event(&Event::MessageUpdate {
        assistant_message_event,
        message,
    })
}
