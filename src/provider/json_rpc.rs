//! JSON-RPC 2.0 over a live agent's stdio, one message a line, for the transports that speak it
//! (ACP agents, and Codex's app-server, which leaves out the `"jsonrpc"` field): the heads of
//! its messages, one connection that writes requests, notifications and answers and matches
//! each response to the request that waits for it, and the router that hands the responses
//! over while every other line goes on to the turn.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use super::live::{LiveProcess, ResponseRouter, StartFailure};
use crate::process::timings::START_TIMEOUT;
use crate::process::Line;

/// JSON-RPC's "method not found".
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC's "invalid params".
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// One JSON-RPC message, as far as routing it needs.
#[derive(Debug, Deserialize)]
pub(crate) struct RpcHead {
    #[serde(default)]
    pub(crate) jsonrpc: Option<String>,
    #[serde(default)]
    pub(crate) id: Option<Value>,
    #[serde(default)]
    pub(crate) method: Option<String>,
    /// Kept as text: parsed once, into the type its method names.
    #[serde(default)]
    pub(crate) params: Option<Box<RawValue>>,
    #[serde(default)]
    pub(crate) result: Option<Value>,
    #[serde(default)]
    pub(crate) error: Option<RpcError>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct RpcError {
    #[serde(default)]
    pub(crate) code: Option<i64>,
    #[serde(default)]
    pub(crate) message: String,
    #[serde(default)]
    pub(crate) data: Option<Value>,
}

impl RpcHead {
    /// A JSON-RPC 2.0 message that says so (`"jsonrpc": "2.0"`).
    pub(crate) fn parse(line: &str) -> Option<RpcHead> {
        RpcHead::parse_bare(line).filter(|head| head.jsonrpc.as_deref() == Some("2.0"))
    }

    /// A JSON-RPC message, with or without the version field.
    pub(crate) fn parse_bare(line: &str) -> Option<RpcHead> {
        serde_json::from_str::<RpcHead>(line).ok()
    }

    /// A response (to one of the client's requests).
    pub(crate) fn is_response(&self) -> bool {
        self.method.is_none() && self.id.as_ref().is_some_and(|id| !id.is_null())
    }
}

/// A JSON-RPC id as a map key and a message id (`0`, `"abc"`).
pub(crate) fn id_key(id: &Value) -> String {
    match id {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

impl RpcError {
    /// The HTTP status an agent gives as the error's code (Gemini CLI answers a failed prompt
    /// with the API's status as the JSON-RPC code; the protocol's own codes are negative).
    pub(crate) fn http_status(&self) -> Option<u16> {
        self.code
            .filter(|code| (400..=599).contains(code))
            .and_then(|code| u16::try_from(code).ok())
            .or_else(|| self.data.as_ref().and_then(|data| status_in_data(data, 0)))
    }

    /// The agent's message, with its data when that says more.
    pub(crate) fn describe(&self) -> String {
        match &self.data {
            Some(Value::String(data)) if !data.is_empty() => format!("{} ({data})", self.message),
            Some(data @ Value::Object(_)) => format!("{} ({data})", self.message),
            _ => self.message.clone(),
        }
    }
}

/// The HTTP status an error's `data` states under a key that names one (`statusCode`,
/// `status`, `httpStatus`, ...: opencode and Qwen Code pass on their API client's error
/// there), looked for two levels down (`data.error.statusCode`).
fn status_in_data(data: &Value, depth: usize) -> Option<u16> {
    const KEYS: [&str; 6] = [
        "statusCode",
        "status_code",
        "httpStatus",
        "http_status",
        "status",
        "code",
    ];
    let fields = data.as_object()?;
    let stated = KEYS.iter().find_map(|key| {
        let value = fields.get(*key)?;
        let number = value
            .as_u64()
            .or_else(|| value.as_str().and_then(|text| text.trim().parse().ok()))?;
        u16::try_from(number)
            .ok()
            .filter(|status| (400..=599).contains(status))
    });
    stated.or_else(|| {
        (depth < 2)
            .then(|| {
                fields
                    .values()
                    .find_map(|nested| status_in_data(nested, depth + 1))
            })
            .flatten()
    })
}

/// A response: its result, or the error.
pub(crate) type Reply = Result<Value, RpcError>;

/// Who waits for the response to which request id.
type Waiters = Arc<Mutex<HashMap<String, oneshot::Sender<Reply>>>>;

/// The id and method of a request the agent makes of agentty. Only those two fields are read
/// (the rest of the line is skipped, not parsed): the mapper reads the line in full.
pub(crate) fn agent_request(line: &str) -> Option<(Value, String)> {
    #[derive(Deserialize)]
    struct RequestHead {
        id: Option<Value>,
        method: Option<String>,
    }
    if !line.contains("\"method\"") || !line.contains("\"id\"") {
        return None;
    }
    let head: RequestHead = serde_json::from_str(line).ok()?;
    Some((head.id?, head.method?)).filter(|(id, _)| !id.is_null() && !id_key(id).is_empty())
}

/// Writes JSON-RPC messages on the agent's stdin and matches the responses to their requests (a
/// clone writes to the same agent: settings and steering come from outside the attempt).
#[derive(Clone)]
pub(crate) struct JsonRpc {
    lines: mpsc::UnboundedSender<String>,
    waiters: Waiters,
    next_id: Arc<AtomicU64>,
    /// Each message says `"jsonrpc": "2.0"` (Codex's app-server writes and needs none).
    versioned: bool,
}

/// What sees every line of the agent before it is routed.
type Watch = Box<dyn Fn(&Line) + Send + Sync>;

/// Hands the responses somebody waits for to their waiters; `watch` sees every line first (an
/// agent may announce a change at any time, between turns too).
pub(crate) struct JsonRpcRouter {
    waiters: Waiters,
    versioned: bool,
    watch: Option<Watch>,
}

impl JsonRpcRouter {
    pub(crate) fn watching(mut self, watch: impl Fn(&Line) + Send + Sync + 'static) -> Self {
        self.watch = Some(Box::new(watch));
        self
    }
}

impl ResponseRouter for JsonRpcRouter {
    fn deliver(&self, line: &Line) -> bool {
        if let Some(watch) = &self.watch {
            watch(line);
        }
        // During a turn nobody waits, mostly: the turn's lines are not parsed twice.
        if self
            .waiters
            .lock()
            .map_or(true, |waiters| waiters.is_empty())
        {
            return false;
        }
        let head = if self.versioned {
            RpcHead::parse(&line.text)
        } else {
            RpcHead::parse_bare(&line.text)
        };
        let Some(head) = head.filter(RpcHead::is_response) else {
            return false;
        };
        let Some(key) = head.id.as_ref().map(id_key) else {
            return false;
        };
        let Some(waiter) = self
            .waiters
            .lock()
            .ok()
            .and_then(|mut waiters| waiters.remove(&key))
        else {
            return false;
        };
        let reply = match head.error {
            Some(error) => Err(error),
            None => Ok(head.result.unwrap_or(Value::Null)),
        };
        let _ = waiter.send(reply);
        true
    }
}

impl JsonRpc {
    /// A connection and its router, for a process whose stdin `lines` will feed (the router
    /// goes to the process's start, before the connection has anything to write to).
    pub(crate) fn router(
        versioned: bool,
    ) -> (
        JsonRpcRouter,
        impl FnOnce(mpsc::UnboundedSender<String>) -> JsonRpc,
    ) {
        let waiters = Waiters::default();
        let router = JsonRpcRouter {
            waiters: waiters.clone(),
            versioned,
            watch: None,
        };
        let connect = move |lines| JsonRpc {
            lines,
            waiters,
            next_id: Arc::new(AtomicU64::new(0)),
            versioned,
        };
        (router, connect)
    }

    /// A new request id.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Writes `message` as one line, with the version where the protocol wants it.
    fn write(&self, mut message: Value) -> String {
        if self.versioned {
            message["jsonrpc"] = Value::from("2.0");
        }
        let line = message.to_string();
        let _ = self.lines.send(line.clone());
        line
    }

    pub(crate) fn notify(&self, method: &str, params: Value) {
        self.write(json!({"method": method, "params": params}));
    }

    /// A request whose response comes back with the turn's lines (a prompt: its answer ends the
    /// turn, and the mapper reads it). Returns its id.
    pub(crate) fn request_unrouted(&self, method: &str, params: Value) -> u64 {
        let id = self.next_id();
        self.write(json!({"id": id, "method": method, "params": params}));
        id
    }

    /// A request; the receiver gets its response.
    pub(crate) fn request(&self, method: &str, params: Value) -> oneshot::Receiver<Reply> {
        let id = self.next_id();
        let (tx, rx) = oneshot::channel();
        if let Ok(mut waiters) = self.waiters.lock() {
            waiters.insert(id.to_string(), tx);
        }
        if self.lines.is_closed() {
            // Nobody will answer: the receiver learns it at once.
            if let Ok(mut waiters) = self.waiters.lock() {
                waiters.remove(&id.to_string());
            }
        }
        self.write(json!({"id": id, "method": method, "params": params}));
        rx
    }

    /// Answers the agent's request `id`; returns the line written (the mapper reads the
    /// client's answers too).
    pub(crate) fn respond(&self, id: &Value, result: Value) -> String {
        self.write(json!({"id": id, "result": result}))
    }

    pub(crate) fn respond_error(&self, id: &Value, code: i64, message: &str) -> String {
        self.write(json!({"id": id, "error": {"code": code, "message": message}}))
    }

    /// Refuses a request the agent made of a method agentty does not offer.
    pub(crate) fn method_not_found(&self, id: &Value, method: &str, agent: &str) {
        tracing::warn!(method, "{agent} called a method agentty does not offer");
        self.respond_error(
            id,
            METHOD_NOT_FOUND,
            &format!("agentty does not offer {method}"),
        );
    }

    /// Whether `other` writes to the same process.
    pub(crate) fn same_connection(&self, other: &JsonRpc) -> bool {
        self.lines.same_channel(&other.lines)
    }

    /// The process is going away: nobody waits for a response any more.
    pub(crate) fn forget_waiters(&self) {
        if let Ok(mut waiters) = self.waiters.lock() {
            waiters.clear();
        }
    }
}

/// Waits up to `timeout` for a response; `Err` says why there is none, naming `agent`.
pub(crate) async fn settled(
    reply: oneshot::Receiver<Reply>,
    timeout: Duration,
    agent: &str,
) -> Result<Value, String> {
    match tokio::time::timeout(timeout, reply).await {
        Ok(Ok(Ok(result))) => Ok(result),
        Ok(Ok(Err(error))) => Err(error.describe()),
        Ok(Err(_)) => Err(format!("{agent} ended before answering")),
        Err(_) => Err(format!(
            "{agent} did not answer within {} s",
            timeout.as_secs()
        )),
    }
}

/// Waits (up to the start's time) for the response to `method` of a session being opened,
/// while dropping what else comes (a loaded session's history, the agent's announcements).
pub(crate) async fn await_result(
    process: &mut LiveProcess,
    method: &str,
    reply: oneshot::Receiver<Reply>,
    agent: &str,
) -> Result<Value, StartFailure> {
    match process.await_reply(reply, START_TIMEOUT, method).await {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(error)) => Err(StartFailure::Refused(format!(
            "{agent} refused {method}: {}",
            error.describe()
        ))),
        Err(no_reply) => Err(StartFailure::NoAnswer(no_reply, method.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http_status_in_the_errors_data_is_read() {
        let error = |data: Value| RpcError {
            code: Some(-32603),
            message: "Internal error".into(),
            data: Some(data),
        };
        let nested = error(json!({"error": {"statusCode": 500, "message": "fake"}}));
        assert_eq!(nested.http_status(), Some(500));
        assert_eq!(error(json!({"status": "429"})).http_status(), Some(429));
        let none = error(json!({"service": "session", "errorName": "APIError"}));
        assert_eq!(none.http_status(), None);
        assert_eq!(error(json!({"code": 7})).http_status(), None);
    }

    fn line(text: &str) -> Line {
        Line {
            text: text.to_owned(),
            truncated: false,
            original_len: text.len(),
        }
    }

    #[tokio::test]
    async fn a_response_goes_to_its_waiter_and_everything_else_to_the_turn() {
        for versioned in [true, false] {
            let (router, connect) = JsonRpc::router(versioned);
            let (lines, mut written) = mpsc::unbounded_channel();
            let rpc = connect(lines);
            let reply = rpc.request("thread/start", json!({"cwd": "/"}));
            let sent: Value = serde_json::from_str(&written.recv().await.unwrap()).unwrap();
            assert_eq!(sent["method"], "thread/start");
            assert_eq!(sent.get("jsonrpc").is_some(), versioned, "{sent}");
            let version = if versioned { r#""jsonrpc":"2.0","# } else { "" };
            // A notification and the agent's own request (an id and a method) go on.
            assert!(!router.deliver(&line(&format!(
                r#"{{{version}"method":"note","params":{{}}}}"#
            ))));
            assert!(!router.deliver(&line(&format!(
                r#"{{{version}"id":0,"method":"ask","params":{{}}}}"#
            ))));
            // A response to an id nobody waits for goes on too.
            assert!(!router.deliver(&line(&format!(r#"{{{version}"id":7,"result":{{}}}}"#))));
            assert!(router.deliver(&line(&format!(
                r#"{{{version}"id":0,"error":{{"code":-32000,"message":"no","data":"why"}}}}"#
            ))));
            let error = reply.await.unwrap().unwrap_err();
            assert_eq!(error.describe(), "no (why)");
        }
    }

    #[test]
    fn an_agents_request_is_told_by_its_id_and_method() {
        assert_eq!(
            agent_request(
                r#"{"jsonrpc":"2.0","id":"r1","method":"session/request_permission","params":{}}"#
            ),
            Some((json!("r1"), "session/request_permission".to_owned()))
        );
        assert_eq!(
            agent_request(r#"{"jsonrpc":"2.0","method":"session/update"}"#),
            None
        );
        assert_eq!(agent_request(r#"{"id":null,"method":"x"}"#), None);
    }
}
