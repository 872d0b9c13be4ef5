//! Writing JSON-RPC to a live `codex app-server` and correlating the answers: the router
//! hands each response to the request that waits for it; the connection (cloned by whoever
//! talks to the thread: the session, a turn, settings and steering) writes requests,
//! notifications and answers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use super::mapper::id_key;
use crate::process::Line;
use crate::provider::live_process::ResponseRouter;

/// How long Codex may take to answer a request during a session (`thread/revert`, ...).
pub(super) const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// A JSON-RPC response: its result, or the error's words.
pub(super) type Response = Result<Value, String>;
pub(super) type Waiters = Arc<Mutex<HashMap<String, oneshot::Sender<Response>>>>;

/// Responses to agentty's requests go to their waiters.
pub(super) struct Router(pub(super) Waiters);

impl ResponseRouter for Router {
    fn deliver(&self, line: &Line) -> bool {
        if self.0.lock().map_or(true, |waiters| waiters.is_empty()) {
            return false;
        }
        // A response has an id and no method; notifications and the agent's requests are not.
        if !line.text.contains("\"id\"")
            || (!line.text.contains("\"result\"") && !line.text.contains("\"error\""))
        {
            return false;
        }
        let Ok(message) = serde_json::from_str::<Value>(&line.text) else {
            return false;
        };
        if message.get("method").is_some() {
            return false;
        }
        let Some(key) = message.get("id").map(id_key) else {
            return false;
        };
        let Some(waiter) = self
            .0
            .lock()
            .ok()
            .and_then(|mut waiters| waiters.remove(&key))
        else {
            return false;
        };
        let response = match message.get("error") {
            Some(error) => Err(error["message"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| error.to_string())),
            None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = waiter.send(response);
        true
    }
}

/// Writes JSON-RPC messages on the app-server's stdin and correlates responses (a clone writes
/// to the same process: settings and steering come from outside the attempt).
#[derive(Clone)]
pub(super) struct Connection {
    pub(super) lines: mpsc::UnboundedSender<String>,
    pub(super) waiters: Waiters,
    pub(super) next_id: Arc<AtomicU64>,
}

impl Connection {
    pub(super) fn notify(&self, method: &str, params: Value) -> bool {
        self.lines
            .send(json!({"method": method, "params": params}).to_string())
            .is_ok()
    }

    /// A request; the receiver gets its response.
    pub(super) fn request(&self, method: &str, params: Value) -> oneshot::Receiver<Response> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut waiters) = self.waiters.lock() {
            waiters.insert(id.to_string(), tx);
        }
        let line = json!({"id": id, "method": method, "params": params}).to_string();
        if self.lines.send(line).is_err() {
            if let Ok(mut waiters) = self.waiters.lock() {
                waiters.remove(&id.to_string());
            }
        }
        rx
    }

    /// Answers the agent's request `id`; returns the line written (for the session log).
    pub(super) fn respond(&self, id: &Value, result: Value) -> String {
        let line = json!({"id": id, "result": result}).to_string();
        let _ = self.lines.send(line.clone());
        line
    }

    pub(super) fn respond_error(&self, id: &Value, code: i64, message: &str) {
        let _ = self
            .lines
            .send(json!({"id": id, "error": {"code": code, "message": message}}).to_string());
    }
}

/// Waits for `response` up to `timeout`.
pub(super) async fn settled(response: oneshot::Receiver<Response>, timeout: Duration) -> Response {
    match tokio::time::timeout(timeout, response).await {
        Ok(Ok(response)) => response,
        Ok(Err(_)) => Err("Codex ended before answering".to_owned()),
        Err(_) => Err(format!(
            "Codex did not answer within {} s",
            timeout.as_secs()
        )),
    }
}
