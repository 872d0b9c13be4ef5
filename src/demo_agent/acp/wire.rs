//! The JSON-RPC 2.0 / ACP message shapes the fake agent writes, as the real agents send them
//! (see protocols/acp/README.md and the gemini `acp_*` captures).

use serde_json::{json, Value};

/// The demo "model" behind the agent, named in the usage `_meta`.
pub(crate) const MODEL: &str = "demo-acp-1";

/// The models the agent offers: (`modelId`, name); the first is where a session starts.
pub(crate) const MODELS: [(&str, &str); 2] =
    [(MODEL, "Demo ACP One"), ("demo-acp-2", "Demo ACP Two")];

/// The session modes the agent offers: (`id`, name, description); the first is where a session
/// starts. `yolo` runs every tool without asking, as Gemini CLI's mode of that id does.
pub(crate) const MODES: [(&str, &str, &str); 3] = [
    ("default", "Default", "Ask before every tool call"),
    ("accept-edits", "Accept edits", "Edit files without asking"),
    (YOLO, "YOLO", "Run every tool without asking"),
];

/// The mode in which no permission is asked.
pub(crate) const YOLO: &str = "yolo";

/// `session/new`'s (and `session/load`'s) `models`: the list and the current one.
pub(crate) fn models_state(current: &str) -> Value {
    let available: Vec<Value> = MODELS
        .iter()
        .map(|(id, name)| json!({"modelId": id, "name": name}))
        .collect();
    json!({"currentModelId": current, "availableModels": available})
}

/// `session/new`'s (and `session/load`'s) `modes`: the list and the current one.
pub(crate) fn modes_state(current: &str) -> Value {
    let available: Vec<Value> = MODES
        .iter()
        .map(|(id, name, description)| json!({"id": id, "name": name, "description": description}))
        .collect();
    json!({"currentModeId": current, "availableModes": available})
}

/// The tokens a prompt costs before its own text (a system prompt and tool definitions).
const BASE_INPUT_TOKENS: u64 = 1_100;

pub(crate) fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub(crate) fn error(id: &Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

pub(crate) fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// `session/update {sessionId, update}`.
pub(crate) fn update(session_id: &str, update: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session_id, "update": update},
    })
}

/// `user_message_chunk`, `agent_message_chunk` or `agent_thought_chunk` with one text.
pub(crate) fn chunk(kind: &str, text: &str) -> Value {
    json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
}

/// `{type:"content", content:{type:"text", text}}`, a tool call's text content.
pub(crate) fn text_content(text: &str) -> Value {
    json!({"type": "content", "content": {"type": "text", "text": text}})
}

/// The session-not-found error (`session/load`, `session/prompt` with an unknown id).
pub(crate) fn session_not_found(id: &Value, session_id: &str) -> Value {
    error(
        id,
        -32002,
        &format!("Session not found: {session_id}"),
        Some(json!({"sessionId": session_id})),
    )
}

/// The result of a prompt that ran to its end: the stop reason, the unstable ACP `usage`
/// object and gemini's `_meta.quota`, with the same counts.
/// The result of a prompt that ran to its end on `model`, with its usage.
pub(crate) fn prompt_result(
    stop_reason: &str,
    model: &str,
    input_tokens: u64,
    output_tokens: u64,
) -> Value {
    let counts = json!({"input_tokens": input_tokens, "output_tokens": output_tokens});
    json!({
        "stopReason": stop_reason,
        "usage": {
            "totalTokens": input_tokens + output_tokens,
            "inputTokens": input_tokens,
            "outputTokens": output_tokens,
        },
        "_meta": {"quota": {
            "token_count": counts,
            "model_usage": [{"model": model, "token_count": counts}],
        }},
    })
}

/// Gemini CLI's result of a prompt that ran to its end: the stop reason and `_meta.quota`
/// alone (no `usage` object).
pub(crate) fn gemini_prompt_result(
    stop_reason: &str,
    input_tokens: u64,
    output_tokens: u64,
) -> Value {
    let mut result = prompt_result(stop_reason, MODEL, input_tokens, output_tokens);
    if let Some(result) = result.as_object_mut() {
        result.remove("usage");
    }
    result
}

/// Gemini CLI's `initialize` result: its authentication methods and its name.
pub(crate) fn gemini_initialize() -> Value {
    json!({
        "protocolVersion": 1,
        "authMethods": [
            {"id": "oauth-personal", "name": "Log in with Google", "description": "Log in with your Google account"},
            {"id": "gemini-api-key", "name": "Gemini API key", "description": "Use an API key with Gemini Developer API"},
        ],
        "agentInfo": {
            "name": "gemini-cli",
            "title": "Gemini CLI (agentty demo agent)",
            "version": env!("CARGO_PKG_VERSION"),
        },
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": {"image": true, "audio": true, "embeddedContext": true},
            "mcpCapabilities": {"http": true, "sse": true},
        },
    })
}

/// Gemini CLI's modes, in `session/new`'s and `session/load`'s results.
pub(crate) fn gemini_modes() -> Value {
    json!({
        "availableModes": [
            {"id": "default", "name": "Default", "description": "Prompts for approval"},
            {"id": "autoEdit", "name": "Auto Edit", "description": "Auto-approves edit tools"},
            {"id": "yolo", "name": "YOLO", "description": "Auto-approves all tools"},
        ],
        "currentModeId": "default",
    })
}

/// Gemini CLI's answer to a `session/load` of a session that no file holds (any more).
pub(crate) fn gemini_no_previous_sessions(id: &Value, details: &str) -> Value {
    error(
        id,
        -32603,
        "Internal error",
        Some(json!({"details": details})),
    )
}

/// Gemini CLI's answer to a prompt in a session it does not hold (no `data`).
pub(crate) fn gemini_session_not_found(id: &Value, session_id: &str) -> Value {
    error(
        id,
        -32602,
        &format!("Session not found: {session_id}"),
        None,
    )
}

/// What a request costs: a fixed base plus about one token per four characters of the messages.
pub(crate) fn input_tokens(messages: &[String]) -> u64 {
    BASE_INPUT_TOKENS
        + messages
            .iter()
            .map(|message| message.chars().count().div_ceil(4) as u64)
            .sum::<u64>()
}

/// The text of a `session/prompt`'s content blocks (text blocks, joined by newlines).
pub(crate) fn prompt_text(prompt: &Value) -> String {
    prompt
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter(|block| block["type"] == "text")
                .filter_map(|block| block["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The four options of the `permission` scenario (the kinds the spec lists, one of each).
pub(crate) fn four_options() -> Value {
    json!([
        {"optionId": "allow_once", "name": "Allow", "kind": "allow_once"},
        {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
        {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
        {"optionId": "reject_always", "name": "Never", "kind": "reject_always"},
    ])
}

/// gemini 0.61.0's options (no `reject_always`; `cancel` rejects).
pub(crate) fn gemini_options() -> Value {
    json!([
        {"optionId": "proceed_always", "name": "Allow for this session", "kind": "allow_always"},
        {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
        {"optionId": "cancel", "name": "Reject", "kind": "reject_once"},
    ])
}

/// claude-agent-acp 0.23.1's options.
pub(crate) fn claude_options() -> Value {
    json!([
        {"optionId": "allow_always", "name": "Always Allow", "kind": "allow_always"},
        {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
        {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
    ])
}

/// The agent's own slash commands the demo announces: (name, description, input hint).
pub(crate) const COMMANDS: [(&str, &str, Option<&str>); 3] = [
    (
        "compress",
        "Compresses the context by replacing it with a summary.",
        None,
    ),
    ("review", "Review the changes so far", Some("<focus>")),
    ("init", "Write an AGENTS.md for this project", None),
];

/// The `available_commands_update` of [`COMMANDS`].
pub(crate) fn available_commands() -> Value {
    let commands: Vec<Value> = COMMANDS
        .iter()
        .map(|(name, description, hint)| {
            json!({"name": name, "description": description,
                   "input": hint.map(|hint| json!({"hint": hint}))})
        })
        .collect();
    json!({"sessionUpdate": "available_commands_update", "availableCommands": commands})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_text_joins_the_text_blocks() {
        let prompt = json!([
            {"type": "text", "text": "one"},
            {"type": "resource_link", "uri": "file:///x", "name": "x"},
            {"type": "text", "text": "two"},
        ]);
        assert_eq!(prompt_text(&prompt), "one\ntwo");
        assert_eq!(prompt_text(&Value::Null), "");
    }

    #[test]
    fn gemini_results_have_the_quota_and_no_usage() {
        let result = gemini_prompt_result("end_turn", 0, 0);
        assert!(result.get("usage").is_none(), "{result}");
        assert_eq!(
            result["_meta"]["quota"]["token_count"],
            json!({"input_tokens": 0, "output_tokens": 0})
        );
    }

    #[test]
    fn usage_and_quota_carry_the_same_counts() {
        let result = prompt_result("end_turn", "demo-acp-2", 1_200, 7);
        assert_eq!(result["usage"]["totalTokens"], 1_207);
        assert_eq!(result["_meta"]["quota"]["token_count"]["output_tokens"], 7);
        assert_eq!(
            result["_meta"]["quota"]["model_usage"][0]["model"],
            Value::from("demo-acp-2")
        );
    }
}
