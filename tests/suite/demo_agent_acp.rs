//! `agentty demo-agent --mode acp` as a real child process: the fake ACP agent answers
//! JSON-RPC lines on stdin as the real agents do (protocols/acp/README.md), plays its
//! scenarios, keeps sessions in the state dir and logs each prompt's request.
//!
//! Timeouts are generous and nothing is timed: the machine may be loaded.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const PATIENCE: Duration = Duration::from_secs(60);

struct Acp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    next_id: u64,
    cwd: PathBuf,
    /// `--flavour gemini`, its sessions under this HOME.
    gemini_home: Option<PathBuf>,
}

impl Acp {
    fn start(state: &Path, cwd: &Path, extra: &[&str]) -> Acp {
        Self::spawn(state, cwd, extra, None)
    }

    /// The Gemini flavour, with `home` as its HOME.
    fn gemini(state: &Path, cwd: &Path, home: &Path) -> Acp {
        Self::spawn(state, cwd, &["--flavour", "gemini"], Some(home))
    }

    fn spawn(state: &Path, cwd: &Path, extra: &[&str], gemini_home: Option<&Path>) -> Acp {
        let mut command = Command::new(env!("CARGO_BIN_EXE_agentty"));
        if let Some(home) = gemini_home {
            command.env("HOME", home).env_remove("GEMINI_CLI_HOME");
        }
        let mut child = command
            .args(["demo-agent", "--mode", "acp"])
            .args(extra)
            .env("AGENTTY_DEMO_STATE_DIR", state)
            .env("AGENTTY_DEMO_TIME_SCALE", "0.05")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // Lines that are not JSON (scenario `malformed`) come as strings.
                let value = serde_json::from_str(&line).unwrap_or(Value::String(line));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Acp {
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 1,
            cwd: cwd.to_owned(),
            gemini_home: gemini_home.map(Path::to_path_buf),
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn next(&self) -> Value {
        self.lines.recv_timeout(PATIENCE).expect("a line in time")
    }

    /// Lines up to and including the first that `wanted` accepts.
    fn until(&self, wanted: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let line = self.next();
            let done = wanted(&line);
            seen.push(line);
            if done {
                return seen;
            }
        }
    }

    /// The lines up to the response to `id`, and that response.
    fn answer(&self, id: u64) -> (Vec<Value>, Value) {
        let mut lines = self.until(|line| line["id"] == id && line.get("method").is_none());
        let response = lines.pop().unwrap();
        (lines, response)
    }

    /// `initialize` then `session/new`; returns the session id.
    fn open(&mut self) -> String {
        let id = self.request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}}),
        );
        let (_, init) = self.answer(id);
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
        assert_eq!(init["result"]["agentCapabilities"]["loadSession"], true);
        if self.gemini_home.is_some() {
            assert_eq!(init["result"]["agentInfo"]["name"], "gemini-cli");
        } else {
            assert_eq!(init["result"]["authMethods"], json!([]));
        }
        let cwd = self.cwd.display().to_string();
        let id = self.request("session/new", json!({"cwd": cwd, "mcpServers": []}));
        let (_, new) = self.answer(id);
        new["result"]["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned()
    }

    fn prompt(&mut self, session: &str, text: &str) -> u64 {
        self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
    }

    fn cancel(&mut self, session: &str) {
        self.send(&json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}));
    }

    fn wait_exit(&mut self) -> i32 {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(Instant::now() < deadline, "the agent did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Acp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `update` of each `session/update` among `lines` whose kind is `kind`.
fn updates<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|line| line["method"] == "session/update")
        .map(|line| &line["params"]["update"])
        .filter(|update| update["sessionUpdate"] == kind)
        .collect()
}

fn text_of(lines: &[Value], kind: &str) -> String {
    updates(lines, kind)
        .iter()
        .map(|update| update["content"]["text"].as_str().unwrap_or_default())
        .collect()
}

fn dirs() -> (tempfile::TempDir, tempfile::TempDir) {
    (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap())
}

#[test]
fn hello_streams_text_and_ends_the_turn_with_usage() {
    let (state, cwd) = dirs();
    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    let session = acp.open();
    let id = acp.prompt(&session, "say hello");
    let (lines, response) = acp.answer(id);
    assert!(updates(&lines, "agent_message_chunk").len() > 3);
    assert_eq!(
        text_of(&lines, "agent_message_chunk"),
        "Hello from the demo ACP agent. How can I help?"
    );
    for line in &lines {
        assert_eq!(line["params"]["sessionId"], session.as_str());
    }
    let result = &response["result"];
    assert_eq!(result["stopReason"], "end_turn", "{response}");
    assert!(result["usage"]["inputTokens"].as_u64().unwrap() > 0);
    assert!(
        result["_meta"]["quota"]["token_count"]["output_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    // Long-lived: a second prompt in the same process works.
    let id = acp.prompt(&session, "again");
    let (_, response) = acp.answer(id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
}

#[test]
fn thinking_streams_thoughts_before_text() {
    let (state, cwd) = dirs();
    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    let session = acp.open();
    let id = acp.prompt(&session, "thinking please");
    let (lines, response) = acp.answer(id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let kinds: Vec<&str> = lines
        .iter()
        .filter_map(|line| line["params"]["update"]["sessionUpdate"].as_str())
        .collect();
    let last_thought = kinds
        .iter()
        .rposition(|kind| *kind == "agent_thought_chunk");
    let first_text = kinds.iter().position(|kind| *kind == "agent_message_chunk");
    assert!(last_thought.unwrap() < first_text.unwrap(), "{kinds:?}");
    assert!(text_of(&lines, "agent_thought_chunk").contains("I should greet"));
}

/// Plays `permission` up to its request; returns the lines before it and the request.
fn permission_requested(acp: &mut Acp, session: &str) -> (u64, Vec<Value>, Value) {
    let id = acp.prompt(session, "ask permission");
    let mut lines = acp.until(|line| line["method"] == "session/request_permission");
    let request = lines.pop().unwrap();
    (id, lines, request)
}

#[test]
fn permission_allowed_runs_the_command() {
    let (state, cwd) = dirs();
    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    let session = acp.open();
    let (id, before, request) = permission_requested(&mut acp, &session);
    let announced = updates(&before, "tool_call");
    assert_eq!(announced.len(), 1);
    assert_eq!(announced[0]["status"], "pending");
    assert_eq!(announced[0]["kind"], "execute");
    assert_eq!(
        announced[0]["rawInput"]["command"],
        "touch agentty-demo.txt"
    );
    assert_eq!(request["id"], 0, "the agent's own ids start at 0");
    let params = &request["params"];
    assert_eq!(params["sessionId"], session.as_str());
    assert_eq!(params["toolCall"]["toolCallId"], announced[0]["toolCallId"]);
    let kinds: Vec<&str> = params["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|option| option["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    assert!(!cwd.path().join("agentty-demo.txt").exists());
    acp.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}));
    let (lines, response) = acp.answer(id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(cwd.path().join("agentty-demo.txt").exists());
    let statuses: Vec<&str> = updates(&lines, "tool_call_update")
        .iter()
        .map(|update| update["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["in_progress", "completed"]);
    let done = updates(&lines, "tool_call_update")[1];
    assert_eq!(done["content"][0]["type"], "content");
    assert_eq!(done["content"][0]["content"]["text"], "(no output)");
    assert_eq!(text_of(&lines, "agent_message_chunk"), "Done.");
}

#[test]
fn permission_rejected_does_not_run_the_command() {
    let (state, cwd) = dirs();
    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    let session = acp.open();
    let (id, _, request) = permission_requested(&mut acp, &session);
    acp.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": {"outcome": "selected", "optionId": "reject_once"}}}));
    let (lines, response) = acp.answer(id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(!cwd.path().join("agentty-demo.txt").exists());
    let failed = updates(&lines, "tool_call_update");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["status"], "failed");
    assert!(text_of(&lines, "agent_message_chunk").contains("did not run"));
}

#[test]
fn cancel_while_permission_is_pending_ends_the_turn_cancelled() {
    let (state, cwd) = dirs();
    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    let session = acp.open();
    let (id, _, request) = permission_requested(&mut acp, &session);
    acp.cancel(&session);
    acp.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": {"outcome": "cancelled"}}}));
    let (_, response) = acp.answer(id);
    assert_eq!(response["result"]["stopReason"], "cancelled", "{response}");
    assert!(!cwd.path().join("agentty-demo.txt").exists());
    // The agent lives on; the next turn is normal.
    let id = acp.prompt(&session, "hello");
    let (_, response) = acp.answer(id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
}

/// Processes whose process group is `group`.
fn group_members(group: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command name (which ends with the last ')'): state ppid pgrp ...
        let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2).and_then(|pgrp| pgrp.parse::<u32>().ok()) == Some(group) {
            members.push(pid);
        }
    }
    members
}

#[test]
fn cancel_during_sleep_kills_the_tool_process() {
    let (state, cwd) = dirs();
    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    let session = acp.open();
    let id = acp.prompt(&session, "sleep now");
    let lines = acp.until(|line| {
        line["params"]["update"]["sessionUpdate"] == "tool_call_update"
            && line["params"]["update"]["status"] == "in_progress"
    });
    let tool_call = updates(&lines, "tool_call")[0];
    assert_eq!(tool_call["title"], "sleep 100");
    let update = &lines.last().unwrap()["params"]["update"];
    let pid = update["_meta"]["agenttyDemo"]["pid"].as_u64().unwrap() as u32;
    // The tool may still be on its way through `exec` when its pid is announced.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let cmdline = loop {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains("sleep")
            || std::time::Instant::now() > deadline
        {
            break cmdline;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert!(
        String::from_utf8_lossy(&cmdline).contains("sleep"),
        "{cmdline:?}"
    );
    assert!(
        group_members(pid).contains(&pid),
        "the tool leads its group"
    );
    acp.cancel(&session);
    let (lines, response) = acp.answer(id);
    assert_eq!(response["result"]["stopReason"], "cancelled");
    let failed = updates(&lines, "tool_call_update");
    assert_eq!(failed.last().unwrap()["status"], "failed");
    // Reaped before the answer; allow for a slow /proc anyway.
    let deadline = Instant::now() + PATIENCE;
    while !group_members(pid).is_empty() {
        assert!(Instant::now() < deadline, "sleep 100 outlived the cancel");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
}

fn requests(state: &Path) -> Vec<Value> {
    std::fs::read_to_string(state.join("requests.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn load_replays_the_history_and_the_next_request_carries_it_once() {
    let (state, cwd) = dirs();
    let session = {
        let mut acp = Acp::start(state.path(), cwd.path(), &[]);
        let session = acp.open();
        let id = acp.prompt(&session, "first question");
        let (_, response) = acp.answer(id);
        assert_eq!(response["result"]["stopReason"], "end_turn");
        session
    };
    let file = state
        .path()
        .join("sessions")
        .join(format!("{session}.jsonl"));
    assert!(file.exists(), "the session is stored in {file:?}");

    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    let id = acp.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    acp.answer(id);
    let id = acp.request(
        "session/load",
        json!({"sessionId": "no-such-session", "cwd": cwd.path(), "mcpServers": []}),
    );
    let (_, missing) = acp.answer(id);
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    assert_eq!(
        missing["error"]["message"],
        "Session not found: no-such-session"
    );
    let id = acp.request(
        "session/load",
        json!({"sessionId": session, "cwd": cwd.path(), "mcpServers": []}),
    );
    let (replay, loaded) = acp.answer(id);
    // The result carries the session's model and mode, as session/new's does.
    assert_eq!(
        loaded["result"]["models"]["currentModelId"], "demo-acp-1",
        "{loaded}"
    );
    assert_eq!(text_of(&replay, "user_message_chunk"), "first question");
    assert_eq!(
        text_of(&replay, "agent_message_chunk"),
        "Hello from the demo ACP agent. How can I help?"
    );
    let id = acp.prompt(&session, "second question");
    let (_, response) = acp.answer(id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let logged = requests(state.path());
    assert_eq!(logged.len(), 2);
    assert_eq!(logged[1]["session_id"], session.as_str());
    assert_eq!(
        logged[1]["messages"],
        json!(["first question", "second question"])
    );
}

#[test]
fn stdin_eof_exits_unless_told_to_stay() {
    let (state, cwd) = dirs();
    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    acp.open();
    acp.stdin = None;
    assert_eq!(acp.wait_exit(), 0);

    let mut stays = Acp::start(state.path(), cwd.path(), &["--stay-on-eof"]);
    let session = stays.open();
    stays.stdin = None;
    std::thread::sleep(Duration::from_millis(300));
    assert!(stays.child.try_wait().unwrap().is_none(), "it stays alive");
    let _ = session;
}

#[test]
fn misbehaving_lines_and_failures() {
    let (state, cwd) = dirs();
    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    let session = acp.open();
    let id = acp.prompt(&session, "malformed");
    let (lines, response) = acp.answer(id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(lines.contains(&Value::String("this line is not JSON {".into())));
    assert!(lines.iter().any(|line| line["hello"].is_string()));

    let id = acp.prompt(&session, "stray-response");
    let (lines, _) = acp.answer(id);
    assert!(lines.iter().any(|line| line["id"] == 999));

    let id = acp.prompt(&session, "unknown-update");
    let (lines, _) = acp.answer(id);
    assert_eq!(updates(&lines, "something_new").len(), 1);

    let id = acp.prompt(&session, "error");
    let (_, response) = acp.answer(id);
    assert_eq!(response["error"]["code"], -32603);
    assert!(response["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("Internal error: API Error: 500"));

    let id = acp.prompt(&session, "flaky");
    let (_, failed) = acp.answer(id);
    assert_eq!(failed["error"]["code"], -32603);
    let id = acp.prompt(&session, "flaky");
    let (_, retried) = acp.answer(id);
    assert_eq!(retried["result"]["stopReason"], "end_turn");
}

#[test]
fn lag_after_cancel_answers_one_prompt_late() {
    let (state, cwd) = dirs();
    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    let session = acp.open();
    let id = acp.prompt(&session, "lag-after-cancel");
    acp.until(|line| line["method"] == "session/update");
    acp.cancel(&session);
    let (_, response) = acp.answer(id);
    assert_eq!(response["result"]["stopReason"], "cancelled");
    let id = acp.prompt(&session, "one");
    let (lines, response) = acp.answer(id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(text_of(&lines, "agent_message_chunk"), "");
    let id = acp.prompt(&session, "two");
    let (lines, _) = acp.answer(id);
    assert_eq!(
        text_of(&lines, "agent_message_chunk"),
        "This answers \"one\"."
    );
}

#[test]
fn exit_mid_turn_leaves_the_prompt_unanswered() {
    let (state, cwd) = dirs();
    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    let session = acp.open();
    let id = acp.prompt(&session, "exit-mid-turn");
    assert_eq!(acp.wait_exit(), 3);
    let mut lines = Vec::new();
    while let Ok(line) = acp.lines.recv_timeout(Duration::from_secs(5)) {
        lines.push(line);
    }
    assert!(!lines.iter().any(|line| line["id"] == id));
    assert!(!text_of(&lines, "agent_message_chunk").is_empty());
}

#[test]
fn unannounced_permission_has_no_tool_call_before_it() {
    let (state, cwd) = dirs();
    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    let session = acp.open();
    let id = acp.prompt(&session, "permission-unannounced");
    let mut before = acp.until(|line| line["method"] == "session/request_permission");
    let request = before.pop().unwrap();
    assert!(updates(&before, "tool_call").is_empty());
    let options: Vec<&str> = request["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|option| option["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(options, ["proceed_always", "proceed_once", "cancel"]);
    acp.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}}));
    let (lines, response) = acp.answer(id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let done = updates(&lines, "tool_call_update");
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["status"], "completed");
    assert!(cwd.path().join("agentty-demo.txt").exists());
}

#[test]
fn edit_permission_carries_a_diff_and_writes_the_file() {
    let (state, cwd) = dirs();
    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    let session = acp.open();
    let id = acp.prompt(&session, "edit");
    let mut before = acp.until(|line| line["method"] == "session/request_permission");
    let request = before.pop().unwrap();
    let call = &request["params"]["toolCall"];
    let path = cwd.path().join("agentty-demo.md");
    assert_eq!(call["kind"], "edit");
    assert_eq!(call["locations"][0]["path"], path.display().to_string());
    let diff = &call["content"][0];
    assert_eq!(diff["type"], "diff");
    assert_eq!(diff["oldText"], Value::Null);
    assert_eq!(diff["newText"], "Edited by the demo ACP agent.\n");
    acp.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}));
    let (_, response) = acp.answer(id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "Edited by the demo ACP agent.\n"
    );
}

#[test]
fn ignore_cancel_never_answers_but_dies_on_sigterm() {
    let (state, cwd) = dirs();
    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    let session = acp.open();
    let id = acp.prompt(&session, "ignore-cancel");
    acp.until(|line| line["method"] == "session/update");
    acp.cancel(&session);
    // The text goes on after the cancel, and ends without an answer.
    let lines = acp.until(|line| line["params"]["update"]["content"]["text"] == "tok99 ");
    assert!(!lines.iter().any(|line| line["id"] == id));
    let pid = acp.child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    assert_eq!(acp.wait_exit(), 143, "the SIGTERM handler exits 128 + 15");
}

// ---------------------------------------------------------------------------------------------
// `--flavour gemini`: Gemini CLI 0.61's ways (its session files, the replay after the load's
// answer, failures as HTTP statuses, forgotten failed prompts, a cut stream).

/// `initialize` only (before a `session/load`).
fn initialize(acp: &mut Acp) {
    let id = acp.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    acp.answer(id);
}

/// The Gemini flavour's chats directory for sessions in `cwd`.
fn chats(home: &Path, cwd: &Path) -> PathBuf {
    home.join(".gemini/tmp")
        .join(cwd.file_name().unwrap())
        .join("chats")
}

/// The files in `dir`, by name.
fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

fn json_lines(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The current UTC minute as Gemini names files by it (`2026-12-01T21-06`).
fn this_minute() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}-{:02}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute()
    )
}

/// Waits for the next minute when this one is nearly over, so that what follows runs in one
/// minute.
fn wait_for_a_fresh_minute() {
    let second = time::OffsetDateTime::now_utc().second();
    if second >= 55 {
        std::thread::sleep(Duration::from_secs(u64::from(61 - second)));
    }
}

/// One prompt answered in a new session of a fresh agent, which then exits; returns the
/// session id.
fn gemini_session_with(state: &Path, cwd: &Path, home: &Path, prompts: &[&str]) -> String {
    let mut acp = Acp::gemini(state, cwd, home);
    let session = acp.open();
    for prompt in prompts {
        let id = acp.prompt(&session, prompt);
        if prompt.starts_with("ask permission") {
            let request = acp.until(|line| line["method"] == "session/request_permission");
            let request = request.last().unwrap();
            acp.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}));
        }
        acp.answer(id);
    }
    acp.stdin = None;
    assert_eq!(acp.wait_exit(), 0);
    session
}

#[test]
fn gemini_flavour_names_the_file_by_the_minute_and_a_reload_in_that_minute_wipes_it() {
    let (state, cwd) = dirs();
    let home = tempfile::tempdir().unwrap();
    wait_for_a_fresh_minute();
    let session = gemini_session_with(state.path(), cwd.path(), home.path(), &["remember 42"]);
    let chats = chats(home.path(), cwd.path());
    let names = file_names(&chats);
    let expected = format!("session-{}-{}.jsonl", this_minute(), &session[..8]);
    assert_eq!(
        names,
        std::slice::from_ref(&expected),
        "named by the minute it was opened in"
    );
    let file = chats.join(&expected);
    let text = std::fs::read_to_string(&file).unwrap();
    let lines = json_lines(&file);
    assert_eq!(lines[0]["sessionId"], session.as_str(), "a header first");
    assert_eq!(lines[0]["kind"], "main");
    let context = &lines[1]["$set"]["messages"];
    assert_eq!(context.as_array().unwrap().len(), 1, "{context}");
    assert!(context[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("<session_context>"));
    assert!(
        text.lines()
            .any(|line| line.starts_with(r#"{"id":"#) && line.contains("remember 42")),
        "the prompt is a message record of its own: {text}"
    );
    assert!(lines.iter().any(|line| line["type"] == "gemini"
        && line["content"] == "Hello from the demo ACP agent. How can I help?"));

    // A new process loads it in the minute the file is named for: its opening header and
    // context go into that very file first, and the session is gone.
    let mut acp = Acp::gemini(state.path(), cwd.path(), home.path());
    initialize(&mut acp);
    let id = acp.request(
        "session/load",
        json!({"sessionId": session, "cwd": cwd.path(), "mcpServers": []}),
    );
    let (before, refused) = acp.answer(id);
    assert!(before.is_empty(), "{before:?}");
    assert_eq!(
        refused["error"],
        json!({"code": -32603, "message": "Internal error", "data": {"details": "No previous sessions found for this project."}})
    );
    let id = acp.prompt(&session, "and now?");
    let (_, unknown) = acp.answer(id);
    assert_eq!(
        unknown["error"],
        json!({"code": -32602, "message": format!("Session not found: {session}")})
    );
    assert_eq!(file_names(&chats), [expected], "no other file");
    let lines = json_lines(&file);
    let last = &lines[lines.len() - 2..];
    assert_eq!(last[0]["sessionId"], session.as_str(), "{last:?}");
    assert_eq!(last[1]["$set"]["messages"].as_array().unwrap().len(), 1);
    assert_eq!(
        requests(state.path()).len(),
        1,
        "the refused prompt reached no model"
    );
}

#[test]
fn gemini_flavour_loads_a_file_of_an_earlier_minute_answering_before_it_replays() {
    let (state, cwd) = dirs();
    let home = tempfile::tempdir().unwrap();
    let prompts = ["thinking please", "ask permission", "http-error now"];
    let session = gemini_session_with(state.path(), cwd.path(), home.path(), &prompts);
    let chats = chats(home.path(), cwd.path());
    let [name] = &file_names(&chats)[..] else {
        panic!("one session file: {:?}", file_names(&chats));
    };
    // What agentty's Gemini backend does before a reload: the file moves to an earlier minute.
    let earlier = format!("session-2020-01-01T00-00-{}.jsonl", &session[..8]);
    std::fs::rename(chats.join(name), chats.join(&earlier)).unwrap();

    let mut acp = Acp::gemini(state.path(), cwd.path(), home.path());
    initialize(&mut acp);
    let id = acp.request(
        "session/load",
        json!({"sessionId": session, "cwd": cwd.path(), "mcpServers": []}),
    );
    let (before, loaded) = acp.answer(id);
    assert!(before.is_empty(), "the answer comes first: {before:?}");
    assert_eq!(loaded["result"]["modes"]["currentModeId"], "default");
    // The replay follows the answer; a request answered at once marks its end.
    let id = acp.request("authenticate", json!({"methodId": "gemini-api-key"}));
    let (replay, _) = acp.answer(id);
    let users: Vec<&str> = updates(&replay, "user_message_chunk")
        .iter()
        .map(|update| update["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        users,
        ["thinking please", "ask permission"],
        "the failed prompt was forgotten"
    );
    assert!(text_of(&replay, "agent_thought_chunk").contains("I should greet"));
    assert_eq!(
        text_of(&replay, "agent_message_chunk"),
        "After thinking: hello!I'll create agentty-demo.txt.Done."
    );
    let tools = updates(&replay, "tool_call");
    assert_eq!(tools.len(), 1, "{replay:?}");
    assert_eq!(tools[0]["status"], "completed");
    assert_eq!(tools[0]["title"], "touch agentty-demo.txt");

    // The opening header went to a stub of its own; the process writes to the file it loaded.
    let names = file_names(&chats);
    assert_eq!(names.len(), 2, "{names:?}");
    let stub = names.iter().find(|name| **name != earlier).unwrap();
    assert_eq!(
        json_lines(&chats.join(stub)).len(),
        2,
        "a header and the context only"
    );
    let id = acp.prompt(&session, "what did I ask?");
    let (_, response) = acp.answer(id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(std::fs::read_to_string(chats.join(&earlier))
        .unwrap()
        .contains("what did I ask?"));
    let logged = requests(state.path());
    assert_eq!(
        logged[2]["messages"],
        json!(["thinking please", "ask permission", "http-error now"]),
        "the failed request reached the model"
    );
    assert_eq!(
        logged.last().unwrap()["messages"],
        json!(["thinking please", "ask permission", "what did I ask?"])
    );
}

#[test]
fn gemini_flavour_fails_with_the_http_status_and_forgets_the_failed_prompt() {
    let (state, cwd) = dirs();
    let home = tempfile::tempdir().unwrap();
    let mut acp = Acp::gemini(state.path(), cwd.path(), home.path());
    let session = acp.open();
    for (prompt, code, body) in [
        (
            "http-error a",
            500,
            r#"{"error":{"code":500,"message":"fake internal error","status":"INTERNAL"}}"#,
        ),
        (
            "rate-limit b",
            429,
            r#"{"error":{"code":429,"message":"Resource exhausted (fake).","status":"RESOURCE_EXHAUSTED"}}"#,
        ),
        (
            "auth-error c",
            401,
            r#"{"error":{"code":401,"message":"API key not valid (fake).","status":"UNAUTHENTICATED"}}"#,
        ),
        (
            "flaky-twice d",
            500,
            r#"{"error":{"code":500,"message":"fake internal error","status":"INTERNAL"}}"#,
        ),
        (
            "flaky-twice d",
            500,
            r#"{"error":{"code":500,"message":"fake internal error","status":"INTERNAL"}}"#,
        ),
    ] {
        let id = acp.prompt(&session, prompt);
        let (lines, failed) = acp.answer(id);
        assert!(lines.is_empty(), "{lines:?}");
        assert_eq!(
            failed["error"],
            json!({"code": code, "message": body}),
            "{prompt}"
        );
    }
    let id = acp.prompt(&session, "flaky-twice d");
    let (lines, answered) = acp.answer(id);
    assert_eq!(answered["result"]["stopReason"], "end_turn");
    assert!(text_of(&lines, "agent_message_chunk").starts_with("Answered on try 3:"));
    let id = acp.prompt(&session, "hello e");
    acp.answer(id);
    let logged: Vec<Value> = requests(state.path())
        .iter()
        .map(|request| request["messages"].clone())
        .collect();
    assert_eq!(
        logged,
        [
            json!(["http-error a"]),
            json!(["rate-limit b"]),
            json!(["auth-error c"]),
            json!(["flaky-twice d"]),
            json!(["flaky-twice d"]),
            json!(["flaky-twice d"]),
            json!(["flaky-twice d", "hello e"]),
        ]
    );
}

#[test]
fn a_cut_stream_ends_the_turn_with_zero_token_counts_after_some_text() {
    let (state, cwd) = dirs();
    let home = tempfile::tempdir().unwrap();
    let mut acp = Acp::gemini(state.path(), cwd.path(), home.path());
    let session = acp.open();
    let id = acp.prompt(&session, "hello");
    let (_, whole) = acp.answer(id);
    let counts = &whole["result"]["_meta"]["quota"]["token_count"];
    assert!(counts["input_tokens"].as_u64().unwrap() > 0, "{whole}");
    assert!(counts["output_tokens"].as_u64().unwrap() > 0, "{whole}");
    assert!(
        whole["result"].get("usage").is_none(),
        "Gemini sends no usage: {whole}"
    );

    let id = acp.prompt(&session, "cut-stream");
    let (lines, cut) = acp.answer(id);
    assert_eq!(
        text_of(&lines, "agent_message_chunk"),
        "The answer starts, and then the"
    );
    assert_eq!(cut["result"]["stopReason"], "end_turn");
    assert_eq!(
        cut["result"]["_meta"]["quota"]["token_count"],
        json!({"input_tokens": 0, "output_tokens": 0})
    );
}

#[test]
fn the_default_flavour_keeps_a_failed_prompt_and_its_sessions_in_the_state_dir() {
    let (state, cwd) = dirs();
    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    let session = acp.open();
    let id = acp.prompt(&session, "http-error a");
    let (_, failed) = acp.answer(id);
    assert_eq!(failed["error"]["code"], 500);
    let id = acp.prompt(&session, "hello b");
    acp.answer(id);
    assert_eq!(
        requests(state.path()).last().unwrap()["messages"],
        json!(["http-error a", "hello b"])
    );
    assert!(state
        .path()
        .join("sessions")
        .join(format!("{session}.jsonl"))
        .exists());
}

#[test]
fn the_gemini_flavour_is_for_the_acp_mode_only() {
    let output = Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(["demo-agent", "--mode", "rpc", "--flavour", "gemini"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--flavour gemini is for --mode acp"));
}

#[test]
fn two_models_and_three_modes_are_offered_switches_are_logged_and_a_session_keeps_them() {
    let (state, cwd) = dirs();
    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    let id = acp.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    acp.answer(id);
    let cwd_text = cwd.path().display().to_string();
    let id = acp.request("session/new", json!({"cwd": cwd_text, "mcpServers": []}));
    let (_, new) = acp.answer(id);
    let result = &new["result"];
    let session = result["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(result["models"]["currentModelId"], "demo-acp-1", "{new}");
    let models: Vec<&str> = result["models"]["availableModels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|model| model["modelId"].as_str().unwrap())
        .collect();
    assert_eq!(models, ["demo-acp-1", "demo-acp-2"]);
    assert_eq!(result["modes"]["currentModeId"], "default");
    let modes: Vec<&str> = result["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|mode| mode["id"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["default", "accept-edits", "yolo"]);

    let id = acp.request(
        "session/set_model",
        json!({"sessionId": session, "modelId": "demo-acp-2"}),
    );
    let (_, answer) = acp.answer(id);
    assert_eq!(answer["result"], json!({}), "{answer}");
    let id = acp.request(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "accept-edits"}),
    );
    let (before, answer) = acp.answer(id);
    assert_eq!(answer["result"], json!({}), "{answer}");
    let announced = updates(&before, "current_mode_update");
    assert_eq!(announced.len(), 1, "{before:?}");
    assert_eq!(announced[0]["currentModeId"], "accept-edits");
    let id = acp.request(
        "session/set_model",
        json!({"sessionId": session, "modelId": "nope"}),
    );
    let (_, refused) = acp.answer(id);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    // A load reports the session's choices as they are now.
    let id = acp.request(
        "session/load",
        json!({"sessionId": session, "cwd": cwd_text, "mcpServers": []}),
    );
    let (_, loaded) = acp.answer(id);
    assert_eq!(loaded["result"]["models"]["currentModelId"], "demo-acp-2");
    assert_eq!(loaded["result"]["modes"]["currentModeId"], "accept-edits");

    let log: Vec<Value> = std::fs::read_to_string(state.path().join("settings.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        log,
        [
            json!({"session_id": session, "method": "session/set_model", "value": "demo-acp-2"}),
            json!({"session_id": session, "method": "session/set_mode", "value": "accept-edits"}),
        ]
    );
    drop(acp);

    // Another process loads the session with its model and mode, as real agents keep them; a
    // prompt's result and the request log name the model it went to.
    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    let id = acp.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    acp.answer(id);
    let id = acp.request(
        "session/load",
        json!({"sessionId": session, "cwd": cwd_text, "mcpServers": []}),
    );
    let (_, loaded) = acp.answer(id);
    assert_eq!(loaded["result"]["models"]["currentModelId"], "demo-acp-2");
    assert_eq!(loaded["result"]["modes"]["currentModeId"], "accept-edits");
    let id = acp.prompt(&session, "which model?");
    let (_, answered) = acp.answer(id);
    assert_eq!(
        answered["result"]["_meta"]["quota"]["model_usage"][0]["model"], "demo-acp-2",
        "{answered}"
    );
    let logged = requests(state.path());
    assert_eq!(logged.last().unwrap()["model"], "demo-acp-2");
}

#[test]
fn rewrite_asks_with_a_diff_of_two_far_apart_hunks_and_writes_it() {
    let (state, cwd) = dirs();
    let path = cwd.path().join("agentty-demo-lines.txt");
    let old: String = (1..=40).map(|number| format!("line {number}\n")).collect();
    std::fs::write(&path, &old).unwrap();
    let mut acp = Acp::start(state.path(), cwd.path(), &[]);
    let session = acp.open();
    let id = acp.prompt(&session, "rewrite please");
    let mut before = acp.until(|line| line["method"] == "session/request_permission");
    let request = before.pop().unwrap();
    let call = &request["params"]["toolCall"];
    assert_eq!(call["kind"], "edit");
    assert_eq!(call["title"], "Edit agentty-demo-lines.txt");
    let diff = &call["content"][0];
    assert_eq!(diff["type"], "diff");
    assert_eq!(diff["oldText"], old.as_str());
    let new_text = diff["newText"].as_str().unwrap().to_owned();
    let changed: Vec<&str> = new_text
        .lines()
        .zip(old.lines())
        .filter(|(new, old)| new != old)
        .map(|(new, _)| new)
        .collect();
    assert_eq!(changed, ["line 5 (edited)", "line 30 (edited)"]);
    assert!(new_text.ends_with("line 40\nRewritten by the demo ACP agent.\n"));
    acp.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}));
    let (_, response) = acp.answer(id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), new_text);
}
