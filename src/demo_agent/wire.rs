//! pi 0.73.1 `--mode json` wire types, as the captures in `protocols/pi/captures` show them.
//!
//! Field order follows pi's (serde keeps struct field order), so a demo line reads like a real
//! one. Numbers pi prints as JS integers are integers here, because serde_json would print a
//! zero `f64` as `0.0`.

use serde::Serialize;
use serde_json::Value;

/// pi's API family, provider and model names for the demo's scripted "model".
const API: &str = "openai-completions";
const PROVIDER: &str = "demo";
const MODEL: &str = "demo-1";

/// pi's `cost` object. The demo model is free, so every figure is a zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Cost {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    total: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Usage {
    pub(crate) input: u64,
    pub(crate) output: u64,
    pub(crate) cache_read: u64,
    pub(crate) cache_write: u64,
    pub total_tokens: u64,
    pub(crate) cost: Cost,
}

impl Usage {
    pub(crate) fn new(input: u64, output: u64) -> Self {
        Self {
            input,
            output,
            total_tokens: input + output,
            ..Self::default()
        }
    }
}

/// One content block of a message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub(crate) enum ContentBlock {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        thinking_signature: &'static str,
    },
    ToolCall {
        id: String,
        name: &'static str,
        arguments: Value,
        /// Streaming scratch fields: present in snapshots until the call is complete.
        #[serde(skip_serializing_if = "Option::is_none")]
        partial_args: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        stream_index: Option<u32>,
    },
}

impl ContentBlock {
    pub(crate) fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    pub(crate) fn thinking(thinking: impl Into<String>) -> Self {
        Self::Thinking {
            thinking: thinking.into(),
            // Names the SSE field the reasoning came from, as the openai-completions provider does.
            thinking_signature: "reasoning_content",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum StopReason {
    Stop,
    ToolUse,
    Error,
    /// pi RPC `abort` ended the message.
    Aborted,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AssistantMessage {
    role: &'static str,
    pub(crate) content: Vec<ContentBlock>,
    api: &'static str,
    provider: &'static str,
    model: &'static str,
    pub(crate) usage: Usage,
    pub(crate) stop_reason: StopReason,
    pub(crate) timestamp: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) response_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error_message: Option<String>,
}

impl AssistantMessage {
    /// The message as `message_start` shows it: no content, zero usage, `stop` until known.
    pub(crate) fn started(timestamp: u64) -> Self {
        Self {
            role: "assistant",
            content: Vec::new(),
            api: API,
            provider: PROVIDER,
            model: MODEL,
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            timestamp,
            response_id: None,
            error_message: None,
        }
    }

    /// The concatenated text blocks (what a later turn could replay).
    pub(crate) fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct UserMessage {
    role: &'static str,
    content: Vec<ContentBlock>,
    timestamp: u64,
}

impl UserMessage {
    pub(crate) fn new(prompt: &str, timestamp: u64) -> Self {
        Self {
            role: "user",
            content: vec![ContentBlock::text(prompt)],
            timestamp,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolResultMessage {
    role: &'static str,
    pub(crate) tool_call_id: String,
    pub(crate) tool_name: &'static str,
    pub(crate) content: Vec<ContentBlock>,
    pub(crate) is_error: bool,
    pub(crate) timestamp: u64,
}

impl ToolResultMessage {
    pub(crate) fn new(
        tool_call_id: String,
        tool_name: &'static str,
        text: String,
        is_error: bool,
        timestamp: u64,
    ) -> Self {
        Self {
            role: "toolResult",
            tool_call_id,
            tool_name,
            content: vec![ContentBlock::text(text)],
            is_error,
            timestamp,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum Message {
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
}

/// A borrowed message, for the events that show one message of any role.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(untagged)]
pub(crate) enum MessageRef<'a> {
    User(&'a UserMessage),
    Assistant(&'a AssistantMessage),
    ToolResult(&'a ToolResultMessage),
}

/// A tool's (partial) result: `{content, details?}`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ToolResultBody<'a> {
    pub(crate) content: &'a [ContentBlock],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) details: Option<Value>,
}

/// `message_update.assistantMessageEvent`: `{type, contentIndex, delta | content | toolCall,
/// partial}`, where `type` is `text_`, `thinking_` or `toolcall_` with `start`, `delta` or `end`.
/// A `*_delta` without `delta` is legacy (snapshot-only) pi's.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AssistantMessageEvent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    content_index: usize,
    /// `*_delta`: the chunk added.
    #[serde(skip_serializing_if = "Option::is_none")]
    delta: Option<&'a str>,
    /// `text_end`, `thinking_end`: the block's whole text.
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    /// `toolcall_end`: the finished call.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call: Option<&'a ContentBlock>,
    partial: &'a AssistantMessage,
}

impl<'a> AssistantMessageEvent<'a> {
    /// An event of type `kind` about block `content_index` of `partial`, with nothing more.
    pub(crate) fn new(
        kind: &'static str,
        content_index: usize,
        partial: &'a AssistantMessage,
    ) -> Self {
        Self {
            kind,
            content_index,
            delta: None,
            content: None,
            tool_call: None,
            partial,
        }
    }

    pub(crate) fn delta(self, delta: Option<&'a str>) -> Self {
        Self { delta, ..self }
    }

    pub(crate) fn content(self, content: &'a str) -> Self {
        Self {
            content: Some(content),
            ..self
        }
    }

    pub(crate) fn tool_call(self, tool_call: &'a ContentBlock) -> Self {
        Self {
            tool_call: Some(tool_call),
            ..self
        }
    }
}

/// One stdout line of `pi --mode json`.
#[derive(Debug, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub(crate) enum Event<'a> {
    Session {
        version: u32,
        id: &'a str,
        timestamp: &'a str,
        cwd: &'a str,
    },
    AgentStart,
    AgentEnd {
        messages: &'a [Message],
    },
    TurnStart,
    TurnEnd {
        message: &'a AssistantMessage,
        tool_results: &'a [ToolResultMessage],
    },
    MessageStart {
        message: MessageRef<'a>,
    },
    MessageEnd {
        message: MessageRef<'a>,
    },
    MessageUpdate {
        assistant_message_event: AssistantMessageEvent<'a>,
        message: &'a AssistantMessage,
    },
    ToolExecutionStart {
        tool_call_id: &'a str,
        tool_name: &'a str,
        args: &'a Value,
    },
    ToolExecutionUpdate {
        tool_call_id: &'a str,
        tool_name: &'a str,
        args: &'a Value,
        partial_result: ToolResultBody<'a>,
    },
    ToolExecutionEnd {
        tool_call_id: &'a str,
        tool_name: &'a str,
        result: ToolResultBody<'a>,
        is_error: bool,
    },
}
