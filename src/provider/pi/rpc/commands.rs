//! pi's RPC framing: commands written on its stdin with an `id`, and the responses (which can
//! come out of order) handed to whoever waits for them; a response nobody waits for goes on to
//! the turn.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::process::Line;
use crate::provider::live::ResponseRouter;

type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>;

/// Writes commands on pi's stdin (through a task that owns it) and correlates responses.
#[derive(Clone)]
pub(super) struct CommandWriter {
    lines: mpsc::UnboundedSender<String>,
    pending: Pending,
    next_id: Arc<AtomicU64>,
}

impl CommandWriter {
    /// A writer and the router that hands it pi's responses (the router goes to the process's
    /// start, before the writer has anything to write to).
    pub(super) fn router() -> (
        PiResponseRouter,
        impl FnOnce(mpsc::UnboundedSender<String>) -> CommandWriter,
    ) {
        let pending = Pending::default();
        let router = PiResponseRouter(pending.clone());
        let connect = move |lines| CommandWriter {
            lines,
            pending,
            next_id: Arc::new(AtomicU64::new(1)),
        };
        (router, connect)
    }

    fn next_id(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends a command whose response nobody waits for (a refusal becomes a notice).
    pub(super) fn send(&self, prefix: &str, mut command: Value) -> bool {
        command["id"] = Value::String(self.next_id(prefix));
        self.lines.send(command.to_string()).is_ok()
    }

    /// Sends a command; the receiver gets its response.
    pub(super) fn request(&self, prefix: &str, mut command: Value) -> oneshot::Receiver<Value> {
        let id = self.next_id(prefix);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id.clone(), tx);
        }
        command["id"] = Value::String(id);
        let _ = self.lines.send(command.to_string());
        rx
    }

    /// The process is going away: nobody waits for a response any more.
    pub(super) fn forget_pending(&self) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.clear();
        }
    }

    /// Whether `other` writes to the same process.
    pub(super) fn same_process(&self, other: &CommandWriter) -> bool {
        self.lines.same_channel(&other.lines)
    }
}

/// pi's responses to commands somebody waits for (`get_state`, the prompt, settings) go to
/// their waiters.
pub(super) struct PiResponseRouter(Pending);

impl ResponseRouter for PiResponseRouter {
    fn deliver(&self, line: &Line) -> bool {
        let Some(waiter) = waiting_for(&self.0, line) else {
            return false;
        };
        if let Ok(value) = serde_json::from_str(&line.text) {
            let _ = waiter.send(value);
        }
        true
    }
}

/// The waiter of a response line, if it is one somebody waits for.
fn waiting_for(
    pending: &Mutex<HashMap<String, oneshot::Sender<Value>>>,
    line: &Line,
) -> Option<oneshot::Sender<Value>> {
    if !line.text.contains("\"response\"") {
        return None;
    }
    let head: ResponseHead = serde_json::from_str(&line.text).ok()?;
    if head.kind != "response" {
        return None;
    }
    pending.lock().ok()?.remove(head.id.as_deref()?)
}

#[derive(serde::Deserialize)]
struct ResponseHead {
    #[serde(rename = "type")]
    kind: String,
    id: Option<String>,
}

/// Whether `line` is pi's event `kind`.
pub(super) fn is_event(line: &str, kind: &str) -> bool {
    // A cheap look for `"kind"` first: most lines are other events.
    let quoted = |(at, _): (usize, &str)| {
        line[..at].ends_with('"') && line[at + kind.len()..].starts_with('"')
    };
    line.match_indices(kind).any(quoted)
        && serde_json::from_str::<ResponseHead>(line).is_ok_and(|head| head.kind == kind)
}

/// A command's answer within `timeout`: its `data`, or why it did not succeed.
pub(super) async fn settled(
    response: oneshot::Receiver<Value>,
    timeout: Duration,
) -> Result<Value, String> {
    match tokio::time::timeout(timeout, response).await {
        Ok(Ok(answer)) if answer["success"] == true => Ok(answer["data"].clone()),
        Ok(Ok(answer)) => Err(answer["error"]
            .as_str()
            .unwrap_or("refused, without saying why")
            .to_owned()),
        Ok(Err(_)) => Err("pi ended before answering".to_owned()),
        Err(_) => Err(format!("pi did not answer within {} s", timeout.as_secs())),
    }
}

#[cfg(test)]
mod tests {
    use super::is_event;

    #[test]
    fn an_event_is_known_by_its_type_not_by_text_that_names_it() {
        assert!(is_event(
            r#"{"type":"agent_end","messages":[]}"#,
            "agent_end"
        ));
        assert!(!is_event(
            r#"{"type":"message_update","delta":"\"agent_end\""}"#,
            "agent_end"
        ));
        assert!(!is_event(r#"{"type":"agent_ending"}"#, "agent_end"));
        assert!(!is_event("not json agent_end", "agent_end"));
    }
}
