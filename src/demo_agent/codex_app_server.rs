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

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::{json, Value};

use super::state::{self, flaky_try, now_ms, uuid_v7};

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
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            super::knobs::log_stdin(&line);
            let message = serde_json::from_str::<Value>(&line).unwrap_or(Value::Null);
            if tx.send(message).is_err() {
                break;
            }
        }
    });
    let mut server = Server {
        rx,
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

/// A thread as the demo keeps it: its directory and its turns' user messages.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Thread {
    id: String,
    cwd: String,
    turns: Vec<Turn>,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Turn {
    id: String,
    /// The user messages the turn added (its prompt, then any steering).
    users: Vec<String>,
}

impl Thread {
    fn file(id: &str) -> Option<PathBuf> {
        state::is_safe_file_stem(id).then(|| {
            state::state_dir()
                .join("codex-threads")
                .join(format!("{id}.json"))
        })
    }

    fn load(id: &str) -> Option<Thread> {
        let text = std::fs::read_to_string(Self::file(id)?).ok()?;
        serde_json::from_str(&text).ok()
    }

    fn save(&self) {
        let Some(file) = Self::file(&self.id) else {
            return;
        };
        if let Some(dir) = file.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(file, serde_json::to_string(self).unwrap_or_default());
    }

    /// Every user message of the thread, in order (what the model sees).
    fn users(&self) -> Vec<String> {
        self.turns
            .iter()
            .flat_map(|turn| turn.users.clone())
            .collect()
    }

    fn json(&self) -> Value {
        json!({
            "id": self.id, "sessionId": self.id, "cwd": self.cwd, "status": {"type": "idle"},
            "modelProvider": "demo", "model": MODEL, "historyMode": "paginated", "turns": [],
            "path": Self::file(&self.id).map(|file| file.display().to_string()),
        })
    }
}

struct Server {
    rx: Receiver<Value>,
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

fn send(message: &Value) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{message}");
    let _ = stdout.flush();
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

/// `AGENTTY_DEMO_TIME_SCALE` applied to `ms`.
fn paced(ms: u64) -> Duration {
    let scale = std::env::var(super::TIME_SCALE_VAR)
        .ok()
        .and_then(|value| value.parse::<f64>().ok())
        .filter(|scale| scale.is_finite() && *scale >= 0.0)
        .unwrap_or(1.0);
    Duration::from_secs_f64(ms as f64 * scale / 1000.0)
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

    fn revert(&mut self, id: &Value, params: &Value) {
        let before = params["beforeTurnId"].as_str().unwrap_or_default();
        let Some(thread) = self
            .thread
            .as_mut()
            .filter(|thread| Some(thread.id.as_str()) == params["threadId"].as_str())
        else {
            respond_error(id, -32600, "thread not loaded");
            return;
        };
        let Some(at) = thread.turns.iter().position(|turn| turn.id == before) else {
            respond_error(id, -32600, &format!("no turn {before} in the thread"));
            return;
        };
        thread.turns.truncate(at);
        thread.save();
        respond(id, json!({"thread": thread.json()}));
        notify("thread/reverted", json!({"threadId": thread.id}));
    }

    /// A new thread with the turns of a stored one through `lastTurnId`, open in its place.
    fn fork(&mut self, id: &Value, params: &Value) {
        let wanted = params["threadId"].as_str().unwrap_or_default();
        let Some(mut history) = Thread::load(wanted) else {
            respond_error(
                id,
                -32600,
                &format!("no rollout found for thread id {wanted}"),
            );
            return;
        };
        if let Some(last) = params["lastTurnId"].as_str() {
            let Some(at) = history.turns.iter().position(|turn| turn.id == last) else {
                respond_error(id, -32600, &format!("no turn {last} in the thread"));
                return;
            };
            history.turns.truncate(at + 1);
        }
        let fork = Thread {
            id: uuid_v7(now_ms()),
            ..history
        };
        fork.save();
        self.open(id, fork);
    }

    /// The stored thread's turns, newest first (the only order agentty asks for).
    fn list_turns(&mut self, id: &Value, params: &Value) {
        let wanted = params["threadId"].as_str().unwrap_or_default();
        let Some(thread) = Thread::load(wanted) else {
            respond_error(
                id,
                -32600,
                &format!("no rollout found for thread id {wanted}"),
            );
            return;
        };
        let limit = params["limit"]
            .as_u64()
            .map_or(usize::MAX, |limit| limit as usize);
        let data: Vec<Value> = thread
            .turns
            .iter()
            .rev()
            .take(limit)
            .map(|turn| json!({"id": turn.id, "status": "completed", "items": []}))
            .collect();
        respond(id, json!({"data": data, "nextCursor": null}));
    }

    fn turn(&mut self, id: &Value, params: &Value) {
        let Some(mut thread) = self.thread.take() else {
            respond_error(id, -32600, "no thread: thread/start or thread/resume first");
            return;
        };
        let prompt = params["input"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let turn_id = uuid_v7(now_ms());
        respond(
            id,
            json!({"turn": {"id": turn_id, "items": [], "status": "inProgress", "error": null}}),
        );
        let at = json!({"threadId": thread.id, "turnId": turn_id});
        notify(
            "turn/started",
            json!({"threadId": thread.id, "turn": {"id": turn_id, "status": "inProgress"}}),
        );
        notify(
            "warning",
            json!({"threadId": thread.id, "message": format!("Model metadata for `{MODEL}` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.")}),
        );
        thread.turns.push(Turn {
            id: turn_id.clone(),
            users: vec![prompt.clone()],
        });
        self.user_item(&at, &prompt);
        let seen_images = super::images::acknowledge(
            params["input"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|input| match input["type"].as_str() {
                    Some("image") => super::images::data_url(input["url"].as_str()?),
                    _ => None,
                }),
        );
        if let Some(seen) = seen_images {
            self.say(&at, &seen);
        }
        let scenario = self.scenario_for(&prompt);
        if let Some(approval) = params["approvalPolicy"].as_str() {
            approval.clone_into(&mut self.approval);
        }
        self.settings = json!({"model": params["model"], "effort": params["effort"],
                               "approvalPolicy": self.approval, "sandbox": params["sandboxPolicy"]["type"]});
        log_request(&thread, &self.settings);
        let ending = match scenario.as_str() {
            "think" => {
                self.reasoning(&at);
                self.say(&at, "After thinking: hello!")
            }
            "tool" => {
                self.command(&at, &thread, "echo hi", false);
                self.say(&at, "The command printed hi.")
            }
            "write" => match self.command(&at, &thread, &format!("touch {WRITTEN_FILE}"), self.approval != "never") {
                Some(true) => self.say(&at, &format!("I created {WRITTEN_FILE}.")),
                Some(false) => self.say(&at, "I did not create the file."),
                None => Ending::Interrupted,
            },
            "slow" => self.slow(&at, &mut thread),
            "sleep" => self.sleep(&at, &thread),
            "plan" => {
                self.plan_work(&at, &thread);
                self.say(&at, "The notes say v2 and v3.")
            }
            "flaky" if flaky_try(1, &prompt, 2).fails => Ending::Failed(
                "We\u{2019}re currently experiencing high demand, which may cause temporary errors.",
            ),
            _ => self.say(&at, REPLY),
        };
        if !matches!(ending, Ending::Failed(_)) {
            self.usage(&at);
        }
        thread.save();
        let (status, error) = match ending {
            Ending::Completed => ("completed", Value::Null),
            Ending::Interrupted => ("interrupted", Value::Null),
            Ending::Failed(message) => {
                let error = json!({"message": message, "codexErrorInfo": "internalServerError"});
                notify(
                    "error",
                    json!({"error": error, "willRetry": false, "threadId": thread.id, "turnId": turn_id}),
                );
                ("failed", error)
            }
        };
        notify(
            "turn/completed",
            json!({"threadId": thread.id, "turn": {"id": turn_id, "items": [], "status": status, "error": error}}),
        );
        self.thread = Some(thread);
    }

    fn scenario_for(&self, prompt: &str) -> String {
        if let Some(forced) = &self.forced {
            return forced.clone();
        }
        prompt
            .split(|c: char| !c.is_ascii_alphanumeric())
            .find(|word| SCENARIOS.contains(word))
            .unwrap_or("hello")
            .to_owned()
    }

    /// `thread/compact/start` as Codex answers it: `{}`, then a turn of its own with a
    /// `contextCompaction` item. The summarisation request (the thread's user messages and
    /// [`COMPACTION_REQUEST`](state::COMPACTION_REQUEST)) is logged, and the thread's turns
    /// are replaced by one summary, which the next turn's request carries instead of them.
    fn compact(&mut self, id: &Value) {
        let Some(mut thread) = self.thread.take() else {
            respond_error(id, -32600, "no thread: thread/start or thread/resume first");
            return;
        };
        respond(id, json!({}));
        let turn_id = uuid_v7(now_ms());
        let at = json!({"threadId": thread.id, "turnId": turn_id});
        notify(
            "turn/started",
            json!({"threadId": thread.id, "turn": {"id": turn_id, "status": "inProgress"}}),
        );
        let item = json!({"type": "contextCompaction", "id": uuid_v7(now_ms())});
        self.item(&at, "item/started", item.clone());
        let users = thread.users();
        let mut request = thread.clone();
        request.turns.push(Turn {
            id: turn_id.clone(),
            users: vec![state::COMPACTION_REQUEST.to_owned()],
        });
        log_request(&request, &self.settings);
        let summary = format!(
            "{} {} earlier prompts: {}",
            state::SUMMARY_PREFIX,
            users.len(),
            users.join(" | ")
        );
        thread.turns = vec![Turn {
            id: turn_id.clone(),
            users: vec![summary],
        }];
        thread.save();
        self.usage(&at);
        self.item(&at, "item/completed", item);
        notify(
            "turn/completed",
            json!({"threadId": thread.id, "turn": {"id": turn_id, "items": [], "status": "completed", "error": null}}),
        );
        self.thread = Some(thread);
    }

    fn user_item(&self, at: &Value, text: &str) {
        let item = json!({"type": "userMessage", "id": uuid_v7(now_ms()), "content": [{"type": "text", "text": text}]});
        let mut params = at.clone();
        params["item"] = item;
        notify("item/started", params.clone());
        notify("item/completed", params);
    }

    fn item(&self, at: &Value, method: &str, item: Value) {
        let mut params = at.clone();
        params["item"] = item;
        notify(method, params);
    }

    fn with(at: &Value, key: &str, value: Value, delta: &str) -> Value {
        let mut params = at.clone();
        params[key] = value;
        params["delta"] = Value::from(delta);
        params
    }

    /// A message streamed a word at a time.
    fn say(&mut self, at: &Value, text: &str) -> Ending {
        let item_id = format!("msg_{}", now_ms());
        self.item(
            at,
            "item/started",
            json!({"type": "agentMessage", "id": item_id, "text": ""}),
        );
        for word in text.split_inclusive(' ') {
            notify(
                "item/agentMessage/delta",
                Self::with(at, "itemId", Value::from(item_id.clone()), word),
            );
            std::thread::sleep(paced(20));
        }
        self.item(
            at,
            "item/completed",
            json!({"type": "agentMessage", "id": item_id, "text": text}),
        );
        Ending::Completed
    }

    fn reasoning(&mut self, at: &Value) {
        let item_id = format!("rs_{}", now_ms());
        self.item(
            at,
            "item/started",
            json!({"type": "reasoning", "id": item_id, "summary": [], "content": []}),
        );
        let summary = [
            "**Thinking",
            " about",
            " greeting**",
            "\n\nI should",
            " say hello.",
        ];
        for delta in summary {
            let mut params = Self::with(at, "itemId", Value::from(item_id.clone()), delta);
            params["summaryIndex"] = Value::from(0);
            notify("item/reasoning/summaryTextDelta", params);
            std::thread::sleep(paced(20));
        }
        self.item(
            at,
            "item/completed",
            json!({"type": "reasoning", "id": item_id, "summary": [summary.concat()], "content": []}),
        );
    }

    /// Runs `command` as a `commandExecution` item; `ask`: asks first. `Some(ran)`, or `None`
    /// when the turn was interrupted (or the answer was `cancel`).
    fn command(&mut self, at: &Value, thread: &Thread, command: &str, ask: bool) -> Option<bool> {
        let item_id = format!("call_{}", now_ms());
        let shell = format!("/bin/bash -lc '{command}'");
        let item = |status: &str, output: &str, exit: Value| {
            json!({"type": "commandExecution", "id": item_id, "command": shell, "cwd": thread.cwd,
                   "status": status, "aggregatedOutput": output, "exitCode": exit, "commandActions": []})
        };
        self.item(at, "item/started", item("inProgress", "", Value::Null));
        if ask {
            let request_id = self.next_request;
            self.next_request += 1;
            let mut params = at.clone();
            params["itemId"] = Value::from(item_id.clone());
            params["command"] = Value::from(shell.clone());
            params["cwd"] = Value::from(thread.cwd.clone());
            params["reason"] = Value::from("needs to write a file");
            params["availableDecisions"] =
                json!(["accept", "acceptForSession", "decline", "cancel"]);
            send(
                &json!({"method": "item/commandExecution/requestApproval", "id": request_id, "params": params}),
            );
            let decision = loop {
                let Ok(message) = self.rx.recv() else {
                    return None;
                };
                if message.get("method").is_none() && message["id"] == request_id {
                    break message["result"]["decision"].clone();
                }
                if message["method"] == "turn/interrupt" {
                    respond(&message["id"], json!({}));
                    self.item(at, "item/completed", item("declined", "", Value::Null));
                    return None;
                }
                self.handle_during_turn(&message);
            };
            match decision.as_str() {
                Some("accept" | "acceptForSession") => {}
                Some("cancel") => {
                    self.item(at, "item/completed", item("declined", "", Value::Null));
                    return None;
                }
                _ => {
                    self.item(at, "item/completed", item("declined", "", Value::Null));
                    return Some(false);
                }
            }
        }
        let output = if command.starts_with("touch ") {
            let path = Path::new(&thread.cwd).join(WRITTEN_FILE);
            match std::fs::write(&path, "written by the demo app-server\n") {
                Ok(()) => format!("created {WRITTEN_FILE}\n"),
                Err(error) => format!("touch: {error}\n"),
            }
        } else {
            "hi\n".to_owned()
        };
        notify(
            "item/commandExecution/outputDelta",
            Self::with(at, "itemId", Value::from(item_id.clone()), &output),
        );
        self.item(
            at,
            "item/completed",
            item("completed", &output, Value::from(0)),
        );
        Some(true)
    }

    /// The `plan` scenario's work: the plan, a command, a patch, the plan done.
    fn plan_work(&mut self, at: &Value, thread: &Thread) {
        let plan = |first: &str, second: &str| {
            let mut params = at.clone();
            params["explanation"] = Value::Null;
            params["plan"] = json!([
                {"step": "Write the notes", "status": first},
                {"step": "Update the notes", "status": second},
            ]);
            notify("turn/plan/updated", params);
        };
        plan("inProgress", "pending");
        std::thread::sleep(paced(700));
        let notes = Path::new(&thread.cwd).join("notes.txt");
        let command_id = format!("call_{}", now_ms());
        let command = |status: &str, output: &str, exit: Value| {
            json!({"type": "commandExecution", "id": command_id,
                   "command": "/bin/bash -lc \"printf 'v1\\\\n' > notes.txt\"", "cwd": thread.cwd,
                   "status": status, "aggregatedOutput": output, "exitCode": exit,
                   "commandActions": [{"type": "unknown", "command": "printf 'v1\\n' > notes.txt"}]})
        };
        self.item(at, "item/started", command("inProgress", "", Value::Null));
        let _ = std::fs::write(&notes, "v1\n");
        std::thread::sleep(paced(700));
        self.item(
            at,
            "item/completed",
            command("completed", "", Value::from(0)),
        );
        let patch_id = format!("call_{}", now_ms());
        let patch = |status: &str| {
            json!({"type": "fileChange", "id": patch_id, "status": status, "changes": [{
                "path": notes.display().to_string(), "kind": {"type": "update", "move_path": null},
                "diff": "@@ -1 +1,2 @@\n-v1\n+v2\n+v3\n"}]})
        };
        self.item(at, "item/started", patch("inProgress"));
        let _ = std::fs::write(&notes, "v2\nv3\n");
        std::thread::sleep(paced(700));
        self.item(at, "item/completed", patch("completed"));
        plan("completed", "completed");
    }

    /// A word every 100 ms; stops on `turn/interrupt`, takes `turn/steer` into the turn.
    fn slow(&mut self, at: &Value, thread: &mut Thread) -> Ending {
        let item_id = format!("msg_{}", now_ms());
        self.item(
            at,
            "item/started",
            json!({"type": "agentMessage", "id": item_id, "text": ""}),
        );
        let mut text = String::new();
        let mut steered = Vec::new();
        for index in 0..60 {
            let word = format!("word{index} ");
            notify(
                "item/agentMessage/delta",
                Self::with(at, "itemId", Value::from(item_id.clone()), &word),
            );
            text.push_str(&word);
            match self.rx.recv_timeout(paced(100)) {
                Ok(message)
                    if message["method"] == "turn/interrupt" && !super::knobs::ignores_cancel() =>
                {
                    respond(&message["id"], json!({}));
                    return Ending::Interrupted;
                }
                Ok(message) if message["method"] == "turn/steer" => {
                    let steer = message["params"]["input"][0]["text"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    if message["params"]["expectedTurnId"] != at["turnId"] {
                        respond_error(
                            &message["id"],
                            -32600,
                            "expectedTurnId is not the active turn",
                        );
                        continue;
                    }
                    respond(&message["id"], json!({"turnId": at["turnId"]}));
                    if let Some(turn) = thread.turns.last_mut() {
                        turn.users.push(steer.clone());
                    }
                    self.user_item(at, &steer);
                    log_request(thread, &self.settings);
                    steered.push(steer);
                }
                Ok(message) => self.handle_during_turn(&message),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ending::Interrupted,
            }
        }
        for steer in steered {
            let word = format!("(steered: {steer}) ");
            notify(
                "item/agentMessage/delta",
                Self::with(at, "itemId", Value::from(item_id.clone()), &word),
            );
            text.push_str(&word);
        }
        self.item(
            at,
            "item/completed",
            json!({"type": "agentMessage", "id": item_id, "text": text}),
        );
        Ending::Completed
    }

    /// Runs a real `sleep 30` as a command item until the turn is interrupted, and leaves it
    /// running then (as Codex leaves a running command on `turn/interrupt`).
    fn sleep(&mut self, at: &Value, thread: &Thread) -> Ending {
        let item_id = format!("call_{}", now_ms());
        let item = |status: &str| {
            json!({"type": "commandExecution", "id": item_id, "command": "/bin/bash -lc 'sleep 30'",
                   "cwd": thread.cwd, "status": status, "aggregatedOutput": "", "exitCode": null})
        };
        let child = std::process::Command::new("sleep")
            .arg("30")
            .current_dir(&thread.cwd)
            .spawn();
        self.item(at, "item/started", item("inProgress"));
        let mut child = match child {
            Ok(child) => child,
            Err(error) => return self.say(at, &format!("sleep did not start: {error}")),
        };
        loop {
            match self.rx.recv() {
                Ok(message) if message["method"] == "turn/interrupt" => {
                    respond(&message["id"], json!({}));
                    return Ending::Interrupted;
                }
                Ok(message) => self.handle_during_turn(&message),
                Err(_) => {
                    let _ = child.kill();
                    return Ending::Interrupted;
                }
            }
        }
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

    fn usage(&mut self, at: &Value) {
        self.total_input += 12;
        let last = json!({"totalTokens": 19, "inputTokens": 12, "cachedInputTokens": 0, "cacheWriteInputTokens": 0, "outputTokens": 7, "reasoningOutputTokens": 3});
        let total = json!({"totalTokens": self.total_input / 12 * 19, "inputTokens": self.total_input, "cachedInputTokens": 0, "outputTokens": self.total_input / 12 * 7, "reasoningOutputTokens": self.total_input / 12 * 3});
        let mut params = at.clone();
        params["tokenUsage"] = json!({"last": last, "total": total, "modelContextWindow": null});
        notify("thread/tokenUsage/updated", params);
    }
}

/// What the model would receive: the thread's user messages.
fn log_request(thread: &Thread, settings: &Value) {
    let dir = state::state_dir();
    let _ = std::fs::create_dir_all(&dir);
    if let Ok(mut log) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(requests_file(&dir))
    {
        let _ = writeln!(
            log,
            "{}",
            json!({"thread": thread.id, "users": thread.users(), "model": settings["model"], "effort": settings["effort"], "approvalPolicy": settings["approvalPolicy"], "sandbox": settings["sandbox"], "pid": std::process::id()})
        );
    }
}

/// The most recently changed thread of `cwd`, as `thread/list` lists it.
fn latest_thread(cwd: Option<&str>) -> Vec<Value> {
    let dir = state::state_dir().join("codex-threads");
    let mut best: Option<(std::time::SystemTime, Thread)> = None;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Some(thread) = std::fs::read_to_string(entry.path())
            .ok()
            .and_then(|text| serde_json::from_str::<Thread>(&text).ok())
        else {
            continue;
        };
        if cwd.is_some_and(|cwd| cwd != thread.cwd) {
            continue;
        }
        let modified = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .unwrap_or(std::time::UNIX_EPOCH);
        if best.as_ref().is_none_or(|(time, _)| modified > *time) {
            best = Some((modified, thread));
        }
    }
    best.map(|(_, thread)| vec![thread.json()])
        .unwrap_or_default()
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
