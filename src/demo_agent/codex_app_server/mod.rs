//! `agentty demo-agent --mode codex-app-server`: a scripted stand-in for `codex app-server`
//! (JSON-RPC over stdio, one object per line, no `"jsonrpc"` field), shaped as the real CLI's
//! captures show (tests/fixtures/codex_app_server/), so CI covers the app-server transport
//! without the real CLI.
//!
//! It plays: `initialize`, `model/list` (two models with reasoning efforts), `thread/start`,
//! `thread/resume` and `thread/list` (threads kept in the state dir, so a new process resumes
//! them), `thread/revert` (the turn and every later one forgotten), `turn/start` with live
//! deltas, `turn/interrupt` (the turn ends `interrupted`, the process stays), `turn/steer`
//! (the message joins the running turn), command approvals as requests of its own, token usage,
//! and the "Model metadata … not found" warning Codex repeats every turn.
//!
//! Each model request it "makes" (a turn's start, a steer) is logged to
//! [`requests_file`]: the thread's user messages as the model would see them, so tests can
//! check that a retry shows the model each prompt once.
//!
//! Scenarios (`--scenario`, else the first scenario name that appears as a word in the prompt,
//! else `hello`): `hello`, `think` (reasoning deltas, then text), `tool` (a command run
//! without asking), `write` (a command that asks first: `touch agentty-demo.txt`), `slow` (a
//! word every 100 ms, for stops and steering), `sleep` (a command that runs a real `sleep 30`
//! and, as Codex does, leaves it running when the turn is interrupted), `flaky` (the first two
//! tries of a prompt fail as Codex reports an HTTP 500), `plan` (Codex's `update_plan` as
//! `turn/plan/updated`, a command shown double-quoted as Codex shows `printf 'v1\n' >
//! notes.txt`, and a `fileChange` that updates `notes.txt` with its diff, as
//! tests/fixtures/codex_app_server/plan_command_patch.jsonl recorded them; 700 ms a step).

mod thread;
mod turn;
mod work;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver};

use serde_json::{json, Value};

use super::live;
use super::output;
use super::pace::Pace;
use super::state::{self, now_ms, uuid_v7};
use thread::{latest_thread, Thread};

/// The `--mode` value.
pub(crate) const MODE: &str = "codex-app-server";
/// The scenarios, in listing order.
pub(crate) const SCENARIOS: [&str; 8] = [
    "hello", "think", "tool", "write", "slow", "sleep", "flaky", "plan",
];
/// The model every thread runs (unknown to Codex's catalog, as in the captures: hence the
/// warning).
const MODEL: &str = "demo-model";
/// The file the `write` scenario creates in the thread's directory.
pub const WRITTEN_FILE: &str = "agentty-demo.txt";
const REPLY: &str = "Hello from the demo Codex app-server.";

/// The log of the demo's model requests in `state_dir`: `{"thread","users":[...],"model",
/// "effort","approvalPolicy","sandbox","pid"}` a line (`pid`: the app-server process that
/// made it).
pub fn requests_file(state_dir: &Path) -> PathBuf {
    state_dir.join("codex-app-server-requests.jsonl")
}

/// Runs the fake app-server until stdin closes; returns the exit status.
pub(crate) fn run(forced: Option<&str>) -> i32 {
    if let Some(name) = forced.filter(|name| !SCENARIOS.contains(name)) {
        eprintln!(
            "Error: unknown scenario \"{name}\" for --mode {MODE}; the scenarios are: {}",
            SCENARIOS.join(", ")
        );
        return 1;
    }
    let (tx, rx) = mpsc::channel();
    // A line that is not JSON is a message with no method: ignored, like a late answer.
    live::spawn_stdin_reader(tx, |parsed| parsed.unwrap_or(Value::Null), Value::Null);
    let mut server = Server {
        rx,
        pace: Pace::from_env(),
        forced: forced.map(str::to_owned),
        thread: None,
        next_request: 0,
        total_input: 0,
        settings: Value::Null,
        approval: "on-request".to_owned(),
    };
    while let Ok(message) = server.rx.recv() {
        server.handle(&message);
    }
    0
}

struct Server {
    rx: Receiver<Value>,
    pace: Pace,
    forced: Option<String>,
    thread: Option<Thread>,
    /// Ids of the demo's own requests (approvals).
    next_request: u64,
    /// The thread's token total (for `thread/tokenUsage/updated`).
    total_input: u64,
    /// The model and effort the running turn was started with (logged with each request).
    settings: Value,
    /// The approval policy the thread runs with (`never`: commands run without asking).
    approval: String,
}

/// How a turn ended.
enum Ending {
    Completed,
    Interrupted,
    Failed(&'static str),
}

/// Writes one message as a line (nobody to tell when stdout is gone: the next read ends).
fn send(message: &Value) {
    let _ = output::write_line(&std::io::stdout(), &message.to_string());
}

fn notify(method: &str, params: Value) {
    send(&json!({"method": method, "params": params, "emittedAtMs": now_ms()}));
}

fn respond(id: &Value, result: Value) {
    send(&json!({"id": id, "result": result}));
}

fn respond_error(id: &Value, code: i64, message: &str) {
    send(&json!({"id": id, "error": {"code": code, "message": message}}));
}

impl Server {
    fn handle(&mut self, message: &Value) {
        let Some(method) = message["method"].as_str() else {
            // A response nobody waits for (a late approval answer), or a line that is not JSON.
            return;
        };
        let id = message.get("id").filter(|id| !id.is_null());
        let params = &message["params"];
        let Some(id) = id else {
            // `initialized` and other notifications need nothing.
            return;
        };
        match method {
            "initialize" => respond(
                id,
                json!({"userAgent": format!("agentty-demo/{}", env!("CARGO_PKG_VERSION")),
                       "codexHome": state::state_dir(), "platformFamily": "unix", "platformOs": "linux"}),
            ),
            "model/list" => respond(id, json!({"data": models(), "nextCursor": null})),
            "thread/start" => {
                let ms = now_ms();
                let thread = Thread {
                    id: uuid_v7(ms),
                    cwd: params["cwd"].as_str().unwrap_or(".").to_owned(),
                    turns: Vec::new(),
                };
                thread.save();
                self.open(id, thread);
            }
            "thread/resume" => {
                let wanted = params["threadId"].as_str().unwrap_or_default();
                match Thread::load(wanted) {
                    Some(thread) => self.open(id, thread),
                    None => respond_error(
                        id,
                        -32600,
                        &format!("no rollout found for thread id {wanted}"),
                    ),
                }
            }
            "thread/list" => respond(id, json!({"data": latest_thread(params["cwd"].as_str())})),
            "thread/revert" => self.revert(id, params),
            "thread/fork" => self.fork(id, params),
            "thread/turns/list" => self.list_turns(id, params),
            "turn/start" => self.turn(id, params),
            "thread/compact/start" => self.compact(id),
            "turn/interrupt" | "turn/steer" => {
                respond_error(id, -32600, "no active turn to interrupt or steer")
            }
            other => respond_error(id, -32601, &format!("unknown method {other}")),
        }
    }

    fn open(&mut self, id: &Value, thread: Thread) {
        respond(
            id,
            json!({"thread": thread.json(), "model": MODEL, "modelProvider": "demo",
                   "reasoningEffort": null, "cwd": thread.cwd, "approvalPolicy": "on-request",
                   "approvalsReviewer": "user", "sandbox": {"type": "readOnly"}}),
        );
        notify("thread/started", json!({"thread": thread.json()}));
        self.total_input = 0;
        self.thread = Some(thread);
    }

    /// A request that came while a turn plays and is not for the turn.
    fn handle_during_turn(&mut self, message: &Value) {
        match message["method"].as_str() {
            Some("model/list") => respond(&message["id"], json!({"data": models()})),
            Some(_) if message.get("id").is_some_and(|id| !id.is_null()) => {
                respond_error(&message["id"], -32600, "busy with a turn")
            }
            _ => {}
        }
    }
}

fn models() -> Value {
    let efforts = |levels: &[&str]| -> Value {
        levels
            .iter()
            .map(
                |level| json!({"reasoningEffort": level, "description": format!("{level} effort")}),
            )
            .collect()
    };
    json!([
        {"id": MODEL, "model": MODEL, "displayName": "Demo Model", "description": "The demo's model.",
         "hidden": false, "isDefault": true, "defaultReasoningEffort": "medium",
         "supportedReasoningEfforts": efforts(&["low", "medium", "high"])},
        {"id": "demo-deep", "model": "demo-deep", "displayName": "Demo Deep", "description": "Thinks longer.",
         "hidden": false, "isDefault": false, "defaultReasoningEffort": "high",
         "supportedReasoningEfforts": efforts(&["medium", "high", "xhigh"])}
    ])
}
