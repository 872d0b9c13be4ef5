//! pi's JSON events as the mapper reads them: only the fields it reads, strings borrowed from
//! the line where the JSON allows (see `mapper`).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
pub(super) struct Envelope<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "borrowed")]
    pub(super) kind: Option<Cow<'a, str>>,
    /// Read with the type, so that a `message_update` (most lines, and the longest: two
    /// snapshots) is scanned once, not twice; its snapshots are skipped unread.
    #[serde(rename = "assistantMessageEvent", borrow, default)]
    pub(super) assistant_event: Option<AssistantEvent<'a>>,
}

#[derive(Deserialize)]
pub(super) struct SessionLine<'a> {
    #[serde(borrow, default, deserialize_with = "borrowed")]
    pub(super) id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(super) struct MessageLine<'a> {
    #[serde(borrow, default)]
    pub(super) message: Option<Message<'a>>,
}

#[derive(Deserialize)]
pub(super) struct SnapshotLine<'a> {
    #[serde(borrow, default)]
    pub(super) message: Option<Message<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Message<'a> {
    #[serde(borrow, default, deserialize_with = "borrowed")]
    pub(super) role: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "blocks_or_text")]
    pub(super) content: Vec<Block<'a>>,
    #[serde(borrow, default, deserialize_with = "borrowed")]
    pub(super) stop_reason: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed")]
    pub(super) error_message: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) usage: Option<PiUsage>,
    #[serde(borrow, default, deserialize_with = "borrowed")]
    pub(super) model: Option<Cow<'a, str>>,
}

impl Message<'_> {
    pub(super) fn is_assistant(&self) -> bool {
        self.role.as_deref() == Some("assistant")
    }
}

#[derive(Deserialize)]
pub(super) struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(super) kind: Cow<'a, str>,
    #[serde(borrow, default, deserialize_with = "borrowed")]
    pub(super) text: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed")]
    pub(super) thinking: Option<Cow<'a, str>>,
}

/// Numbers as f64 so that an unexpected float or negative count does not reject the line.
#[derive(Deserialize)]
pub(super) struct PiUsage {
    #[serde(default)]
    pub(super) input: Option<f64>,
    #[serde(default)]
    pub(super) output: Option<f64>,
    #[serde(rename = "cacheRead", default)]
    pub(super) cache_read: Option<f64>,
    #[serde(rename = "cacheWrite", default)]
    pub(super) cache_write: Option<f64>,
    #[serde(rename = "totalTokens", default)]
    pub(super) total_tokens: Option<f64>,
    #[serde(default)]
    pub(super) cost: Option<PiCost>,
}

#[derive(Deserialize)]
pub(super) struct PiCost {
    #[serde(default)]
    pub(super) total: Option<f64>,
}

#[derive(Deserialize)]
pub(super) struct AssistantEvent<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(super) kind: Cow<'a, str>,
    #[serde(rename = "contentIndex", default)]
    pub(super) content_index: Option<usize>,
    #[serde(borrow, default, deserialize_with = "borrowed")]
    pub(super) delta: Option<Cow<'a, str>>,
    /// The full block text on `text_end` / `thinking_end`.
    #[serde(borrow, default, deserialize_with = "string_only")]
    pub(super) content: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(super) struct ToolStart<'a> {
    #[serde(rename = "toolCallId", borrow)]
    pub(super) tool_call_id: Cow<'a, str>,
    #[serde(rename = "toolName", borrow, default)]
    pub(super) tool_name: Cow<'a, str>,
    #[serde(default)]
    pub(super) args: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct ToolUpdate<'a> {
    #[serde(rename = "toolCallId", borrow)]
    pub(super) tool_call_id: Cow<'a, str>,
    #[serde(rename = "partialResult", borrow, default)]
    pub(super) partial_result: Option<ToolResult<'a>>,
}

#[derive(Deserialize)]
pub(super) struct ToolEnd<'a> {
    #[serde(rename = "toolCallId", borrow)]
    pub(super) tool_call_id: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(super) result: Option<ToolResult<'a>>,
    #[serde(rename = "isError", default)]
    pub(super) is_error: bool,
}

#[derive(Deserialize)]
pub(super) struct ToolResult<'a> {
    #[serde(borrow, default, deserialize_with = "blocks_or_text")]
    pub(super) content: Vec<Block<'a>>,
}

impl ToolResult<'_> {
    /// The text parts of a tool result (pi accumulates them: each update is the output so far).
    pub(super) fn text(&self) -> String {
        self.content
            .iter()
            .filter(|block| block.kind == "text")
            .filter_map(|block| block.text.as_deref())
            .collect()
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RetryStart<'a> {
    #[serde(default)]
    pub(super) attempt: Option<f64>,
    #[serde(default)]
    pub(super) max_attempts: Option<f64>,
    #[serde(default)]
    pub(super) delay_ms: Option<f64>,
    #[serde(borrow, default, deserialize_with = "borrowed")]
    pub(super) error_message: Option<Cow<'a, str>>,
}

impl RetryStart<'_> {
    pub(super) fn describe(&self) -> String {
        let mut text = String::from("pi is retrying on its own");
        if let Some(error) = &self.error_message {
            text.push_str(&format!(" after \"{error}\""));
        }
        match (self.attempt, self.max_attempts, self.delay_ms) {
            (Some(attempt), Some(max), Some(delay)) => {
                text.push_str(&format!(" (retry {attempt} of {max}, in {delay} ms)"));
            }
            (Some(attempt), Some(max), None) => {
                text.push_str(&format!(" (retry {attempt} of {max})"));
            }
            _ => {}
        }
        text.push_str("; the reply starts afresh");
        text
    }
}

#[derive(Deserialize)]
pub(super) struct RetryEnd {
    #[serde(default)]
    pub(super) success: bool,
}

/// A string field that borrows from the line when the JSON string has no escapes. serde's
/// `borrow` reaches a `Cow` only when it is the field's whole type: inside an `Option` it copies,
/// and a reply's final snapshot is the longest string pi prints.
fn borrowed<'de, D>(deserializer: D) -> Result<Option<Cow<'de, str>>, D::Error>
where
    D: Deserializer<'de>,
{
    #[derive(Deserialize)]
    struct Borrowed<'a>(#[serde(borrow)] Cow<'a, str>);
    Ok(Option::<Borrowed<'de>>::deserialize(deserializer)?.map(|Borrowed(text)| text))
}

/// Message content is an array of blocks; accept a bare string too (a text block), and `null`.
fn blocks_or_text<'de, D>(deserializer: D) -> Result<Vec<Block<'de>>, D::Error>
where
    D: Deserializer<'de>,
{
    struct BlocksOrText;

    impl<'de> Visitor<'de> for BlocksOrText {
        type Value = Vec<Block<'de>>;

        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("an array of content blocks or a string")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut blocks = Vec::new();
            while let Some(block) = seq.next_element()? {
                blocks.push(block);
            }
            Ok(blocks)
        }

        fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
            Ok(vec![text_block(Cow::Borrowed(text))])
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
            Ok(vec![text_block(Cow::Owned(text.to_owned()))])
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
    }

    deserializer.deserialize_any(BlocksOrText)
}

fn text_block(text: Cow<'_, str>) -> Block<'_> {
    Block {
        kind: Cow::Borrowed("text"),
        text: Some(text),
        thinking: None,
    }
}

/// A string, or nothing for any other JSON value (a field this mapper only reads as text).
fn string_only<'de, D>(deserializer: D) -> Result<Option<Cow<'de, str>>, D::Error>
where
    D: Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum StringOrOther<'a> {
        Text(#[serde(borrow)] Cow<'a, str>),
        Other(IgnoredAny),
    }
    Ok(match StringOrOther::deserialize(deserializer)? {
        StringOrOther::Text(text) => Some(text),
        StringOrOther::Other(_) => None,
    })
}
