//! What an ACP agent's content says, read for the mapper: text chunks, a tool call's input,
//! output and kind, plan entries, and the usage a prompt's answer counts.

use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;

use crate::stream::{PlanEntry, Usage};

pub(super) fn chunk_text(content: &acp::ContentBlock) -> Option<&str> {
    match content {
        acp::ContentBlock::Text(text) => Some(&text.text),
        _ => None,
    }
}

/// The text an update's content shows: text blocks as they are, a diff as its file, a
/// terminal by its id.
pub(super) fn content_text(content: &[acp::ToolCallContent]) -> String {
    let mut text = String::new();
    for item in content {
        let piece = match item {
            acp::ToolCallContent::Content(content) => match &content.content {
                acp::ContentBlock::Text(block) => block.text.clone(),
                acp::ContentBlock::ResourceLink(link) => link.uri.clone(),
                _ => continue,
            },
            // A proposed edit until the call completes: name the file, not the outcome.
            acp::ToolCallContent::Diff(diff) => format!("diff: {}", diff.path.display()),
            acp::ToolCallContent::Terminal(terminal) => {
                format!("terminal {}", terminal.terminal_id)
            }
            _ => continue,
        };
        if !text.is_empty() && !piece.is_empty() {
            text.push('\n');
        }
        text.push_str(&piece);
    }
    text
}

pub(super) fn kind_name(kind: &acp::ToolKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_else(|| "other".to_owned())
}

pub(super) fn is_empty_input(input: &Value) -> bool {
    match input {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        Value::String(text) => text.is_empty(),
        _ => false,
    }
}

/// What a tool's `rawOutput` says it printed: the text itself, or the field the agents put it
/// in (the Codex adapter's exec result: `formatted_output`, `aggregated_output`, `stdout`).
pub(super) fn output_of(raw: Value) -> String {
    const OUTPUT_KEYS: [&str; 5] = [
        "formatted_output",
        "aggregated_output",
        "output",
        "stdout",
        "content",
    ];
    match raw {
        Value::String(text) => text,
        Value::Null => String::new(),
        Value::Object(map) => {
            let text = OUTPUT_KEYS
                .iter()
                .find_map(|key| map.get(*key).and_then(Value::as_str));
            match (text, map.get("exit_code").and_then(Value::as_i64)) {
                (Some(text), _) => text.to_owned(),
                (None, Some(code)) => format!("(exit code {code})"),
                (None, None) => Value::Object(map).to_string(),
            }
        }
        other => other.to_string(),
    }
}

/// The input of a call whose agent gave none (its title names it already).
pub(super) fn no_input() -> Value {
    Value::Object(serde_json::Map::new())
}

/// The shell command in a tool's input, where the agents put it.
pub(super) fn command_of(input: &Value) -> Option<String> {
    input.get("command").and_then(crate::stream::argument_text)
}

pub(super) fn plan_entry(entry: &acp::PlanEntry) -> PlanEntry {
    let name = |value: Result<Value, _>| {
        value
            .ok()
            .and_then(|value: Value| value.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    PlanEntry {
        content: entry.content.clone(),
        status: name(serde_json::to_value(&entry.status)),
        priority: name(serde_json::to_value(&entry.priority)),
    }
}

/// The turn's own usage from the prompt's answer, where the agent gives it: `usage` (ACP's
/// unstable field) or Gemini's `_meta.quota`.
/// A tool's output as the user wants to read it: the Claude adapter wraps a command's output
/// in a markdown fence and passes on Claude Code's `<system-reminder>` blocks, which are
/// meant for the model.
pub(super) fn plain_tool_output(output: &str) -> String {
    let mut kept = String::with_capacity(output.len());
    let mut rest = output;
    while let Some(open) = rest.find(SYSTEM_REMINDER_OPEN) {
        kept.push_str(&rest[..open]);
        match rest[open..].find(SYSTEM_REMINDER_CLOSE) {
            Some(close) => rest = &rest[open + close + SYSTEM_REMINDER_CLOSE.len()..],
            None => {
                rest = "";
            }
        }
    }
    kept.push_str(rest);
    let trimmed = kept.trim();
    let unfenced = trimmed
        .strip_prefix("```")
        .and_then(|inner| inner.strip_suffix("```"))
        .and_then(|inner| inner.split_once('\n'))
        .map(|(_language, body)| body.trim_end_matches('\n'));
    match unfenced {
        Some(body) if !body.contains("```") => body.to_owned(),
        _ if kept.len() != output.len() => trimmed.to_owned(),
        _ => output.to_owned(),
    }
}

const SYSTEM_REMINDER_OPEN: &str = "<system-reminder>";
const SYSTEM_REMINDER_CLOSE: &str = "</system-reminder>";

/// How Gemini CLI announces a change of its approval mode, in an `agent_message_chunk`.
pub(super) const GEMINI_MODE_UPDATE: &str = "[MODE_UPDATE] ";

/// Gemini CLI's output of a shell command that was cancelled (`Command cancelled by user.`,
/// `Command was cancelled by user before it could start.`).
pub(super) fn is_cancelled_output(output: &str) -> bool {
    let start = output.trim_start();
    start.starts_with("Command cancelled by user")
        || start.starts_with("Command was cancelled by user")
}

/// What a turn the agent ended on a broken stream is called (the words make the classifier
/// see a dropped connection, which is worth a retry).
pub(super) const CUT_STREAM: &str = "the stream ended without a finish, and the agent counted no tokens for the answer it had begun: the answer is incomplete";

/// Gemini CLI ends a turn whose model stream broke off (no finish reason) as `end_turn`, its
/// token count zero; a turn that reached the model counts its tokens.
pub(super) fn counted_nothing(result: &Value) -> bool {
    let count = &result["_meta"]["quota"]["token_count"];
    count.is_object()
        && count["input_tokens"].as_u64() == Some(0)
        && count["output_tokens"].as_u64() == Some(0)
}

pub(super) fn turn_usage(result: &Value) -> Option<Usage> {
    let number = |value: &Value| value.as_u64();
    if let Some(usage) = result.get("usage").filter(|usage| usage.is_object()) {
        return Some(Usage {
            input_tokens: number(&usage["inputTokens"]),
            output_tokens: number(&usage["outputTokens"]),
            cache_read_tokens: number(&usage["cachedReadTokens"]),
            cache_write_tokens: number(&usage["cachedWriteTokens"]),
            total_tokens: number(&usage["totalTokens"]),
            reasoning_tokens: number(&usage["thoughtTokens"]),
            ..Usage::default()
        });
    }
    let quota = result.get("_meta")?.get("quota")?;
    let token_count = &quota["token_count"];
    let model = quota["model_usage"]
        .as_array()
        .and_then(|models| models.first())
        .and_then(|model| model["model"].as_str())
        .map(str::to_owned);
    Some(Usage {
        input_tokens: number(&token_count["input_tokens"]),
        output_tokens: number(&token_count["output_tokens"]),
        total_tokens: number(&token_count["total_tokens"]),
        model,
        ..Usage::default()
    })
}
