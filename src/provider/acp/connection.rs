//! Writing JSON-RPC to a live ACP agent and correlating the answers: the session opens with
//! it, a turn writes its prompt and answers through it, and settings change through a clone
//! of it between turns.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use super::mapper::RpcHead;

/// Who waits for the response to which request id.
pub(super) type Waiters = Arc<Mutex<HashMap<String, oneshot::Sender<RpcHead>>>>;

/// Writes JSON-RPC messages on the agent's stdin and correlates the responses (a clone writes
/// to the same agent: settings change between turns).
#[derive(Clone)]
pub(super) struct Connection {
    pub(super) lines: mpsc::UnboundedSender<String>,
    pub(super) waiters: Waiters,
    pub(super) next_id: Arc<AtomicU64>,
}

impl Connection {
    /// A new request id.
    pub(super) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Writes one message as one line.
    fn write(&self, message: &Value) -> bool {
        self.write_line(message.to_string())
    }

    fn write_line(&self, line: String) -> bool {
        self.lines.send(line).is_ok()
    }

    pub(super) fn notify(&self, method: &str, params: Value) -> bool {
        self.write(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// A request whose response comes back through the turn's lines (the prompt).
    pub(super) fn request_unrouted(&self, id: u64, method: &str, params: Value) -> bool {
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
    }

    /// A request whose response the receiver gets.
    pub(super) fn request(&self, method: &str, params: Value) -> oneshot::Receiver<RpcHead> {
        let id = self.next_id();
        let (tx, rx) = oneshot::channel();
        if let Ok(mut waiters) = self.waiters.lock() {
            waiters.insert(id.to_string(), tx);
        }
        self.request_unrouted(id, method, params);
        rx
    }

    /// Answers the agent's request `id`; returns the line written (for the mapper, which
    /// reads the client's answers too).
    pub(super) fn respond(&self, id: &Value, result: Value) -> String {
        let line = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
        self.write_line(line.clone());
        line
    }

    pub(super) fn respond_error(&self, id: &Value, code: i64, message: &str) {
        self.write(
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        );
    }
}
