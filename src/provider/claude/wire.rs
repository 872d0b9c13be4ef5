//! Claude Code's `--output-format stream-json` lines, as far as agentty reads them.
//!
//! One flat struct per JSON object rather than a tagged enum: serde then never buffers a line,
//! long texts are borrowed from the line when they contain no escapes, and every field the
//! mapper does not name is skipped unparsed. Fields are optional or defaulted so that a line
//! from a newer CLI with fewer fields still reads; only `type` is required.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

/// Any top-level line: `system`, `stream_event`, `assistant`, `user`, `result`, ...
#[derive(Debug, Deserialize)]
pub(crate) struct WireLine<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Cow<'a, str>,
    #[serde(default)]
    pub(crate) subtype: Option<String>,
    #[serde(default)]
    pub(crate) session_id: Option<String>,
    /// `system/init`: the model Claude Code runs.
    #[serde(default)]
    pub(crate) model: Option<String>,
    /// Set on lines that belong to a sub-agent (the Task tool's own conversation).
    #[serde(default)]
    pub(crate) parent_tool_use_id: Option<String>,

    /// `stream_event`: the raw Anthropic SSE event.
    #[serde(default, borrow)]
    pub(crate) event: Option<WireStreamEvent<'a>>,
    /// `assistant` and `user`: the message (one content block per `assistant` line).
    #[serde(default, borrow)]
    pub(crate) message: Option<WireMessage<'a>>,
    /// `user` lines with a tool result: the tool's own structured result.
    #[serde(default)]
    pub(crate) tool_use_result: Option<Value>,

    /// `system/task_*` (a sub-agent's progress): the call that started it, what it does now,
    /// and how it ended (`usage` then counts its `total_tokens` and `tool_uses`).
    #[serde(default)]
    pub(crate) tool_use_id: Option<String>,
    #[serde(default)]
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) summary: Option<String>,
    /// `task_notification`'s `completed`, `failed`, ... (`system/status` has its own).
    #[serde(default)]
    pub(crate) status: Option<Value>,

    /// `system/compact_boundary`: the context's size before and after (`pre_tokens`,
    /// `post_tokens`).
    #[serde(default)]
    pub(crate) compact_metadata: Option<Value>,

    /// `system/api_retry`.
    #[serde(default)]
    pub(crate) attempt: Option<u64>,
    #[serde(default)]
    pub(crate) max_retries: Option<u64>,
    #[serde(default)]
    pub(crate) retry_delay_ms: Option<f64>,
    #[serde(default)]
    pub(crate) error_status: Option<u16>,
    #[serde(default)]
    pub(crate) error: Option<String>,

    /// `result`.
    #[serde(default)]
    pub(crate) is_error: Option<bool>,
    #[serde(default)]
    pub(crate) api_error_status: Option<u16>,
    #[serde(default)]
    pub(crate) result: Option<String>,
    #[serde(default)]
    pub(crate) stop_reason: Option<String>,
    #[serde(default)]
    pub(crate) terminal_reason: Option<String>,
    #[serde(default)]
    pub(crate) total_cost_usd: Option<f64>,
    #[serde(default)]
    pub(crate) usage: Option<WireUsage>,
    #[serde(default)]
    pub(crate) errors: Vec<String>,
    /// `result`: the tool calls the CLI refused for lack of permission
    /// (`{tool_name, tool_use_id, tool_input}`).
    #[serde(default)]
    pub(crate) permission_denials: Vec<Value>,
}

/// Just the `type` of a line, for lines that did not read as [`WireLine`].
#[derive(Debug, Deserialize)]
pub(crate) struct WireKind<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Cow<'a, str>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireStreamEvent<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(crate) delta: Option<WireDelta<'a>>,
    #[serde(default, borrow)]
    pub(crate) content_block: Option<WireBlock<'a>>,
    /// `message_start`: the API message being streamed.
    #[serde(default)]
    pub(crate) message: Option<WireMessageHead>,
}

/// `content_block_delta.delta` (text, thinking, ...) or `message_delta.delta` (stop reason).
#[derive(Debug, Deserialize)]
pub(crate) struct WireDelta<'a> {
    #[serde(rename = "type", default)]
    pub(crate) kind: Option<String>,
    #[serde(default, borrow)]
    pub(crate) text: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(crate) thinking: Cow<'a, str>,
    #[serde(default)]
    pub(crate) stop_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireMessageHead {
    #[serde(default)]
    pub(crate) id: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireMessage<'a> {
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) model: Option<String>,
    #[serde(default)]
    pub(crate) stop_reason: Option<String>,
    #[serde(default, borrow)]
    pub(crate) content: Option<WireContent<'a>>,
}

/// One content block: `text`, `thinking`, `tool_use` or `tool_result` (others are skipped).
#[derive(Debug, Deserialize)]
pub(crate) struct WireBlock<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(crate) text: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(crate) thinking: Cow<'a, str>,
    /// `tool_use`.
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) input: Option<Value>,
    /// `tool_result`.
    #[serde(default)]
    pub(crate) tool_use_id: Option<String>,
    #[serde(default, borrow)]
    pub(crate) content: Option<WireContent<'a>>,
    #[serde(default)]
    pub(crate) is_error: Option<bool>,
}

/// Message or tool-result content: the API allows a plain string or a list of blocks.
#[derive(Debug)]
pub(crate) enum WireContent<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<WireBlock<'a>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for WireContent<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor<'a>(PhantomData<&'a ()>);

        impl<'de: 'a, 'a> Visitor<'de> for ContentVisitor<'a> {
            type Value = WireContent<'a>;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a string or a list of content blocks")
            }

            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(WireContent::Text(Cow::Borrowed(text)))
            }

            fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
                Ok(WireContent::Text(Cow::Owned(text.to_owned())))
            }

            fn visit_string<E>(self, text: String) -> Result<Self::Value, E> {
                Ok(WireContent::Text(Cow::Owned(text)))
            }

            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(WireContent::Blocks(Vec::new()))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::new();
                while let Some(block) = seq.next_element()? {
                    blocks.push(block);
                }
                Ok(WireContent::Blocks(blocks))
            }
        }

        deserializer.deserialize_any(ContentVisitor(PhantomData))
    }
}

impl WireContent<'_> {
    pub(crate) fn blocks(&self) -> &[WireBlock<'_>] {
        match self {
            WireContent::Text(_) => &[],
            WireContent::Blocks(blocks) => blocks,
        }
    }

    /// The text of the content: the string itself, or the text blocks joined by newlines.
    pub(crate) fn text(&self) -> Cow<'_, str> {
        match self {
            WireContent::Text(text) => Cow::Borrowed(text.as_ref()),
            WireContent::Blocks(blocks) => {
                let mut texts = blocks
                    .iter()
                    .filter(|block| block.kind == "text")
                    .map(|block| block.text.as_ref());
                match (texts.next(), texts.next()) {
                    (None, _) => Cow::Borrowed(""),
                    (Some(only), None) => Cow::Borrowed(only),
                    (Some(first), Some(second)) => {
                        let mut joined = format!("{first}\n{second}");
                        for text in texts {
                            joined.push('\n');
                            joined.push_str(text);
                        }
                        Cow::Owned(joined)
                    }
                }
            }
        }
    }
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    pub(crate) input_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) output_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) cache_creation_input_tokens: Option<u64>,
    /// A sub-agent's progress (`system/task_*`).
    #[serde(default)]
    pub(crate) total_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) tool_uses: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescaped_texts_are_borrowed_from_the_line() {
        let line = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"plain words"}}}"#;
        let wire: WireLine = serde_json::from_str(line).unwrap();
        let delta = wire.event.unwrap().delta.unwrap();
        assert!(matches!(delta.text, Cow::Borrowed("plain words")));
    }

    #[test]
    fn content_reads_as_string_or_blocks() {
        let as_string: WireMessage = serde_json::from_str(r#"{"content":"hi\n"}"#).unwrap();
        assert_eq!(as_string.content.unwrap().text(), "hi\n");
        let as_blocks: WireMessage = serde_json::from_str(
            r#"{"content":[{"type":"text","text":"a"},{"type":"image","source":{}},{"type":"text","text":"b"}]}"#,
        )
        .unwrap();
        let content = as_blocks.content.unwrap();
        assert_eq!(content.blocks().len(), 3);
        assert_eq!(content.text(), "a\nb");
        let as_null: WireMessage = serde_json::from_str(r#"{"content":null}"#).unwrap();
        assert!(as_null.content.is_none());
    }

    #[test]
    fn a_line_without_type_or_with_wrong_shapes_is_rejected() {
        assert!(serde_json::from_str::<WireLine>(r#"{"subtype":"init"}"#).is_err());
        assert!(serde_json::from_str::<WireLine>(r#"{"type":"assistant","message":5}"#).is_err());
        assert!(
            serde_json::from_str::<WireLine>(r#"{"type":"user","message":{"content":7}}"#).is_err()
        );
    }
}
