//! Claude Code's control protocol on stdio, and its user lines: agentty's requests
//! (`initialize`, `interrupt`, `set_model`, `set_permission_mode`) are `control_request`s
//! answered by `control_response`s with the same `request_id`, routed to their waiter whether
//! or not a turn runs; the CLI's own requests (`can_use_tool`) are answered with a
//! `control_response`, and one agentty does not serve gets an error answer, never silence. A
//! user line (as the Agent SDK writes it) starts a turn, or joins the running one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use crate::process::Line;
use crate::provider::live::ResponseRouter;

type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>;

/// Writes lines on the CLI's stdin and correlates the answers to agentty's control requests.
#[derive(Clone)]
pub(crate) struct Control {
    lines: mpsc::UnboundedSender<String>,
    pending: Pending,
    next_id: Arc<AtomicU64>,
}

impl Control {
    /// A control channel and the router that hands it the CLI's answers (the router goes to
    /// the process's start, before the channel has anything to write to).
    pub(super) fn router() -> (
        ControlRouter,
        impl FnOnce(mpsc::UnboundedSender<String>) -> Control,
    ) {
        let pending = Pending::default();
        let router = ControlRouter(pending.clone());
        let connect = move |lines| Control {
            lines,
            pending,
            next_id: Arc::new(AtomicU64::new(1)),
        };
        (router, connect)
    }

    fn next_id(&self) -> String {
        format!("agentty-{}", self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends a control request; the receiver gets its `response` object.
    pub(super) fn request(&self, request: Value) -> oneshot::Receiver<Value> {
        let id = self.next_id();
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id.clone(), tx);
        }
        let line = json!({"type": "control_request", "request_id": id, "request": request});
        let _ = self.lines.send(line.to_string());
        rx
    }

    /// Answers the CLI's control request `request_id`; returns the line written.
    pub(super) fn respond(&self, request_id: &str, response: Value) -> String {
        let line = json!({
            "type": "control_response",
            "response": {"subtype": "success", "request_id": request_id, "response": response}
        })
        .to_string();
        let _ = self.lines.send(line.clone());
        line
    }

    /// Refuses a control request agentty does not serve.
    pub(super) fn refuse(&self, request_id: &str, error: &str) {
        let line = json!({
            "type": "control_response",
            "response": {"subtype": "error", "request_id": request_id, "error": error}
        });
        let _ = self.lines.send(line.to_string());
    }

    /// A line of its own making (a user message with images).
    pub(super) fn send_line(&self, line: String) -> bool {
        self.lines.send(line).is_ok()
    }

    /// A user message: starts a turn, or joins the running one.
    pub(super) fn user(&self, text: &str) -> bool {
        self.lines.send(user_line(text)).is_ok()
    }

    /// The process is going away: nobody waits for an answer any more.
    pub(super) fn forget_pending(&self) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.clear();
        }
    }

    /// Whether `other` writes to the same process.
    pub(super) fn same_process(&self, other: &Control) -> bool {
        self.lines.same_channel(&other.lines)
    }
}

/// A control request's answer within `timeout`: its `response`, or why it did not succeed.
pub(super) async fn settled(
    answer: oneshot::Receiver<Value>,
    timeout: Duration,
) -> Result<Value, String> {
    match tokio::time::timeout(timeout, answer).await {
        Ok(Ok(response)) if response["subtype"] == "success" => {
            Ok(response.get("response").cloned().unwrap_or(Value::Null))
        }
        Ok(Ok(response)) => Err(response["error"]
            .as_str()
            .unwrap_or("refused, without saying why")
            .to_owned()),
        Ok(Err(_)) => Err("Claude Code ended before answering".to_owned()),
        Err(_) => Err(format!(
            "Claude Code did not answer within {} s",
            timeout.as_secs()
        )),
    }
}

/// The stdin line of a user message, as the Agent SDK writes it.
pub(crate) fn user_line(text: &str) -> String {
    json!({
        "type": "user",
        "message": {"role": "user", "content": text},
        "parent_tool_use_id": null,
        "session_id": ""
    })
    .to_string()
}

/// The stdin line of a user message with images: the Messages API's content blocks, the images
/// (`{type: "image", source: {type: "base64", media_type, data}}`) before the text, as
/// Anthropic advises. Without images, the plain [`user_line`].
pub(crate) fn user_line_with_images(
    text: &str,
    images: &[crate::attachment::ImageAttachment],
) -> String {
    if images.is_empty() {
        return user_line(text);
    }
    let mut content: Vec<Value> = images
        .iter()
        .map(|image| {
            json!({
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": image.mime.media_type(),
                    "data": image.base64()
                }
            })
        })
        .collect();
    content.push(json!({"type": "text", "text": text}));
    json!({
        "type": "user",
        "message": {"role": "user", "content": content},
        "parent_tool_use_id": null,
        "session_id": ""
    })
    .to_string()
}

/// Hands `control_response` lines to the request that waits for them.
pub(super) struct ControlRouter(Pending);

impl ResponseRouter for ControlRouter {
    fn deliver(&self, line: &Line) -> bool {
        if !line.text.contains("\"control_response\"") {
            return false;
        }
        let Ok(value) = serde_json::from_str::<Value>(&line.text) else {
            return false;
        };
        if value["type"] != "control_response" {
            return false;
        }
        let Some(id) = value["response"]["request_id"].as_str() else {
            return false;
        };
        let waiter = self
            .0
            .lock()
            .ok()
            .and_then(|mut pending| pending.remove(id));
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(value["response"].clone());
                true
            }
            // The echo of agentty's own answer to a `can_use_tool` (with replayed user
            // messages): the attempt keeps it with the turn's raw lines.
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_line_is_the_agent_sdks() {
        let line: Value = serde_json::from_str(&user_line("hi \"there\"")).unwrap();
        assert_eq!(
            line,
            json!({"type": "user", "message": {"role": "user", "content": "hi \"there\""},
                   "parent_tool_use_id": null, "session_id": ""})
        );
    }

    #[test]
    fn a_user_message_with_an_image_carries_a_base64_image_block_before_the_text() {
        let line = user_line_with_images("look", &[crate::attachment::sample_png()]);
        assert_eq!(
            serde_json::from_str::<Value>(&line).unwrap(),
            json!({
                "type": "user",
                "message": {"role": "user", "content": [
                    {"type": "image", "source": {
                        "type": "base64", "media_type": "image/png", "data": "iVBORw0KGgppbWc="
                    }},
                    {"type": "text", "text": "look"}
                ]},
                "parent_tool_use_id": null,
                "session_id": ""
            })
        );
        assert_eq!(user_line_with_images("hi", &[]), user_line("hi"));
    }
}
