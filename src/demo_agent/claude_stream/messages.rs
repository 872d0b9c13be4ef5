//! The stream-json lines a turn is made of: the replayed user line, `stream_event` partials,
//! one `assistant` line per block, a text block streamed word by word, a message's start and
//! end, and the `result`s of an interrupted or failed turn.

use std::io;

use serde_json::{json, Value};

use super::super::live::Serving;
use super::{Cut, Engine};

impl Engine {
    pub(super) fn replay(&mut self, text: &str) -> io::Result<()> {
        let echo = self.stamp(json!({
            "type": "user", "message": {"role": "user", "content": text},
            "parent_tool_use_id": null, "isReplay": true
        }));
        self.line(&echo)
    }

    pub(super) fn event(&mut self, message_id: &str, event: Value) -> io::Result<()> {
        let _ = message_id;
        let line =
            self.stamp(json!({"type": "stream_event", "event": event, "parent_tool_use_id": null}));
        self.line(&line)
    }

    pub(super) fn assistant(&mut self, message_id: &str, block: Value) -> io::Result<()> {
        let line = self.stamp(json!({
            "type": "assistant",
            "message": {"id": message_id, "type": "message", "role": "assistant",
                        "model": self.reported_model(), "content": [block], "stop_reason": null,
                        "usage": {"input_tokens": 1234, "output_tokens": 1}},
            "parent_tool_use_id": null
        }));
        self.line(&line)
    }

    /// Streams one text block word by word; `Some` when the turn was cut.
    pub(super) fn text_block(
        &mut self,
        message_id: &str,
        index: u64,
        text: &str,
        pause_ms: u64,
    ) -> io::Result<Option<Cut>> {
        self.event(message_id, json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))?;
        let mut streamed = String::new();
        for (at, word) in text.split_inclusive(' ').enumerate() {
            if at > 0 {
                if let Some(cut) = self.wait(pause_ms)? {
                    if !streamed.is_empty() {
                        self.assistant(message_id, json!({"type": "text", "text": streamed}))?;
                    }
                    return Ok(Some(cut));
                }
            }
            streamed.push_str(word);
            self.event(message_id, json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": word}}))?;
        }
        self.assistant(message_id, json!({"type": "text", "text": text}))?;
        self.event(
            message_id,
            json!({"type": "content_block_stop", "index": index}),
        )?;
        Ok(None)
    }

    pub(super) fn message_start(&mut self, message_id: &str) -> io::Result<()> {
        let status =
            self.stamp(json!({"type": "system", "subtype": "status", "status": "requesting"}));
        self.line(&status)?;
        self.event(message_id, json!({"type": "message_start", "message": {
            "id": message_id, "type": "message", "role": "assistant", "model": self.reported_model(),
            "content": [], "stop_reason": null, "usage": {"input_tokens": 1234, "output_tokens": 1}}}))
    }

    pub(super) fn message_end(&mut self, message_id: &str, stop_reason: &str) -> io::Result<()> {
        self.event(message_id, json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 12}}))?;
        self.event(message_id, json!({"type": "message_stop"}))
    }

    /// The message asks for tool `name` with `input` (its second block) and ends there.
    pub(super) fn tool_use(
        &mut self,
        message_id: &str,
        tool_id: &str,
        name: &str,
        input: &Value,
    ) -> io::Result<()> {
        self.event(message_id, json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}}}))?;
        self.assistant(
            message_id,
            json!({"type": "tool_use", "id": tool_id, "name": name, "input": input}),
        )?;
        self.event(
            message_id,
            json!({"type": "content_block_stop", "index": 1}),
        )?;
        self.message_end(message_id, "tool_use")
    }

    pub(super) fn interrupted(&mut self, reason: &str) -> io::Result<()> {
        let marker = self.stamp(json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "text", "text": "[Request interrupted by user]"}]}, "parent_tool_use_id": null}));
        self.line(&marker)?;
        let result = self.stamp(json!({
            "type": "result", "subtype": "error_during_execution", "is_error": true,
            "num_turns": 1, "stop_reason": null, "total_cost_usd": 0,
            "usage": {"input_tokens": 0, "output_tokens": 0}, "permission_denials": [],
            "terminal_reason": reason,
            "errors": [format!("[ede_diagnostic] turn aborted ({reason}) stop_reason=null")]
        }));
        self.line(&result)
    }

    /// The CLI's result after a model request failed for good (retries off).
    pub(super) fn api_error(&mut self) -> io::Result<()> {
        let text = "API Error: 500 {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}";
        let message_id = self.uuid();
        let synthetic = self.stamp(json!({
            "type": "assistant", "message": {"id": message_id, "model": "<synthetic>", "role": "assistant",
            "stop_reason": "stop_sequence", "content": [{"type": "text", "text": text}]},
            "parent_tool_use_id": null, "error": "server_error"
        }));
        self.line(&synthetic)?;
        let result = self.stamp(json!({
            "type": "result", "subtype": "success", "is_error": true, "api_error_status": 500,
            "num_turns": 1, "result": text, "stop_reason": "stop_sequence", "total_cost_usd": 0,
            "usage": {"input_tokens": 0, "output_tokens": 0}, "permission_denials": [],
            "terminal_reason": "completed"
        }));
        self.line(&result)
    }
}
