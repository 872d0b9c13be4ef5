//! The demo agent's `--mode claude-stream`: Claude Code 2.1.197's long-lived stream-json mode
//! with its control protocol on stdio, as tests/fixtures/claude_stream/ recorded it, the
//! stand-in for Claude Code in CI.
//!
//! - Lines on stdin: `{"type":"user",...}` starts a turn (or, during one, is queued: taken at
//!   the next tool boundary, else run as a turn of its own after the `result`), and
//!   `control_request`s: `initialize` (answered with two models and two slash commands,
//!   `simplify [<target>]` and `init`), `interrupt`, `set_model` (each
//!   later prompt's line in `requests.jsonl` names the model), `set_permission_mode` (answered
//!   `{mode}` plus a `system/status` with `permissionMode`). Settings are logged in
//!   `settings.jsonl` as `set_model` / `set_permission_mode`. The first model lists effort
//!   levels (`supportedEffortLevels`); `apply_flag_settings {effortLevel}` is logged as
//!   `effortLevel` and named by each later prompt's line in `requests.jsonl` (`effort`).
//! - Each turn: `system/init`, the replayed user line (`isReplay`), `stream_event` partials, one
//!   `assistant` line per block, `result`. A user line is echoed (`isReplay`) when it is taken.
//! - A prompt with the word `write` asks `can_use_tool` for a `Write` of `demo-claude.txt` in the
//!   working directory (`write NAME.txt` names the file), suggesting a rule and the session
//!   mode `acceptEdits`; allowed, the file is written (an `addRules` update is remembered for
//!   the session, a `setMode` one switches the mode and says so in a `system/status` line: the
//!   next write is not asked);
//!   denied, the tool result is the denial's message. In `acceptEdits` mode it is not asked.
//! - `tasks`, `todos`, `helper`: the agent's work as Claude Code prints it — a task list, a todo
//!   list, a sub-agent with two nested calls (`claude_work`).
//! - `system/init` names the model the alias runs (`default`: `demo-claude-1[1m]`), as Claude
//!   Code's does (`claude-opus-4-8[1m]` where `initialize` lists `default`).
//! - `slow`: a word every 300 ms of script time (interruptible); `fail`: the first two tries of
//!   the prompt fail with the CLI's HTTP 500 result (see `state::flaky_try`); `sleep`: a Bash
//!   tool runs a real `sleep 100` (killed at an `interrupt`, as Claude Code kills its tools).
//! - `interrupt` mid-turn: `control_response`, the partial `assistant`, `[Request interrupted by
//!   user]`, `result/error_during_execution`; the process stays.
//! - stdin EOF exits 0 once the current turn is done.

use std::collections::VecDeque;
use std::io;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Instant;

use serde_json::{json, Value};

use super::player::{Output, Pace};
use super::state::{self, flaky_try, Session, SessionChoice};
use work::Work;

#[path = "claude_work.rs"]
mod work;

/// The models `initialize` lists: (value, display name, the effort levels it takes).
const MODELS: [(&str, &str, &[&str]); 2] = [
    (
        "default",
        "Default (demo-claude-1)",
        &["low", "medium", "high", "xhigh", "max"],
    ),
    ("demo-claude-2", "Demo Claude Two", &[]),
];
/// The model `system/init` says the alias `default` runs.
const DEFAULT_RESOLVED: &str = "demo-claude-1[1m]";
/// The file a `write` prompt writes, unless it names one.
const DEFAULT_FILE: &str = "demo-claude.txt";
/// How many tries of a `fail` prompt fail.
const FAILING_TRIES: u32 = 2;

enum Input {
    Line(Value),
    Unparsable(String),
    Eof,
}

/// Why a turn ended early.
enum Cut {
    Interrupted,
    /// stdin closed or stdout is gone: exit.
    Exit,
}

struct Engine {
    out: Output,
    inputs: Receiver<Input>,
    session: Session,
    pace: Pace,
    cwd: String,
    model: String,
    mode: String,
    /// User lines that arrived during a turn and were not taken yet.
    queued: VecDeque<String>,
    /// Tools allowed for the session (`updatedPermissions`).
    allowed_always: Vec<String>,
    next_id: u64,
    /// What the prompt being answered carried as images, said first in the answer.
    seen_images: Option<String>,
}

/// Runs the mode until stdin closes; returns the exit status.
pub(crate) fn run(choice: SessionChoice) -> i32 {
    let cwd = std::env::current_dir()
        .map(|dir| dir.display().to_string())
        .unwrap_or_default();
    let session = match Session::open(&choice, &cwd) {
        Ok(session) => session,
        Err(message) => {
            eprintln!("{message}");
            return 1;
        }
    };
    let (tx, inputs) = mpsc::channel();
    super::spawn_stdin_reader(
        tx,
        |parsed| match parsed {
            Ok(value) => Input::Line(value),
            Err(error) => Input::Unparsable(error.to_string()),
        },
        Input::Eof,
    );
    let model = session
        .model
        .clone()
        .unwrap_or_else(|| MODELS[0].0.to_owned());
    let mut engine = Engine {
        out: Output::stdout(),
        inputs,
        session,
        pace: Pace::from_env(),
        cwd,
        model,
        mode: "default".to_owned(),
        queued: VecDeque::new(),
        allowed_always: Vec::new(),
        seen_images: None,
        next_id: 1,
    };
    match engine.serve() {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// The demo's words for the image blocks of a user line (`{type: "image", source: {type:
/// "base64", media_type, data}}`), if it has any.
fn seen_images(line: &Value) -> Option<String> {
    super::images::acknowledge(
        line["message"]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|block| block["type"] == "image" && block["source"]["type"] == "base64")
            .map(|block| {
                (
                    block["source"]["media_type"].as_str().unwrap_or_default(),
                    block["source"]["data"].as_str().unwrap_or_default(),
                )
            }),
    )
}

fn user_text(line: &Value) -> String {
    match &line["message"]["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

impl Engine {
    fn serve(&mut self) -> io::Result<()> {
        loop {
            if let Some(prompt) = self.queued.pop_front() {
                if let Some(Cut::Exit) = self.turn(prompt)? {
                    return Ok(());
                }
                continue;
            }
            match self.inputs.recv() {
                Ok(Input::Line(line)) if line["type"] == "user" => {
                    self.seen_images = seen_images(&line);
                    if let Some(Cut::Exit) = self.turn(user_text(&line))? {
                        return Ok(());
                    }
                }
                Ok(Input::Line(line)) => {
                    self.control(&line)?;
                }
                Ok(Input::Unparsable(error)) => {
                    // As Claude Code: a line that is not JSON ends the process.
                    eprintln!("Error parsing streaming input line: {error}");
                    std::process::exit(1);
                }
                Ok(Input::Eof) | Err(_) => return Ok(()),
            }
        }
    }

    fn line(&mut self, value: &Value) -> io::Result<()> {
        self.out.line(&value.to_string())
    }

    /// The model the chosen one runs, as Claude Code reports it (an alias resolved).
    fn reported_model(&self) -> String {
        if self.model == MODELS[0].0 {
            DEFAULT_RESOLVED.to_owned()
        } else {
            self.model.clone()
        }
    }

    fn uuid(&mut self) -> String {
        self.next_id += 1;
        state::uuid_v7(state::now_ms())
    }

    fn stamp(&mut self, mut value: Value) -> Value {
        value["session_id"] = Value::String(self.session.header.id.clone());
        value["uuid"] = Value::String(self.uuid());
        value
    }

    /// Answers a control request that needs no running turn (and interrupts with no turn).
    fn control(&mut self, line: &Value) -> io::Result<()> {
        if line["type"] != "control_request" {
            // `control_response`s to requests the demo did not make, and anything else.
            return Ok(());
        }
        let id = line["request_id"].clone();
        let request = &line["request"];
        let subtype = request["subtype"].as_str().unwrap_or_default();
        let success = |response: Option<Value>| {
            let mut body = json!({"subtype": "success", "request_id": id});
            if let Some(response) = response {
                body["response"] = response;
            }
            json!({"type": "control_response", "response": body})
        };
        match subtype {
            "initialize" => {
                let models: Vec<Value> = MODELS
                    .iter()
                    .map(|(value, name, efforts)| {
                        let mut model = json!({"value": value, "displayName": name, "description": "a demo model"});
                        if !efforts.is_empty() {
                            model["supportsEffort"] = json!(true);
                            model["supportedEffortLevels"] = json!(efforts);
                        }
                        model
                    })
                    .collect();
                let answer = success(Some(json!({
                    "commands": [
                        {"name": "simplify", "description": "Review the changed code and simplify it", "argumentHint": "[<target>]"},
                        {"name": "init", "description": "Initialize a CLAUDE.md file", "argumentHint": ""}
                    ], "agents": [], "output_style": "default",
                    "available_output_styles": ["default"], "models": models,
                    "account": {"apiKeySource": "none"}, "pid": std::process::id()
                })));
                self.line(&answer)
            }
            "interrupt" => self.line(&success(None)),
            "set_model" => {
                let model = request["model"].as_str().unwrap_or_default().to_owned();
                state::record_setting(&self.session.header.id, "set_model", &model);
                self.session.model = Some(model.clone());
                self.model = model.clone();
                let echo = self.stamp(json!({
                    "type": "user",
                    "message": {"role": "user", "content": format!("<local-command-stdout>Set model to {model}</local-command-stdout>")},
                    "parent_tool_use_id": null, "isReplay": true
                }));
                self.line(&echo)?;
                self.line(&success(None))
            }
            "apply_flag_settings" => {
                // As Claude Code: the effort goes with every later model request
                // (`output_config.effort`; here each later prompt's line in `requests.jsonl`).
                if let Some(effort) = request["settings"]["effortLevel"].as_str() {
                    state::record_setting(&self.session.header.id, "effortLevel", effort);
                    self.session.effort = Some(effort.to_owned());
                }
                self.line(&success(None))
            }
            "set_permission_mode" => {
                let mode = request["mode"].as_str().unwrap_or_default().to_owned();
                state::record_setting(&self.session.header.id, "set_permission_mode", &mode);
                self.mode = mode.clone();
                self.line(&success(Some(json!({"mode": mode}))))?;
                let status = self.stamp(json!({
                    "type": "system", "subtype": "status", "status": null, "permissionMode": mode
                }));
                self.line(&status)
            }
            other => {
                let error = json!({"type": "control_response", "response": {
                    "subtype": "error", "request_id": id,
                    "error": format!("Unsupported control request subtype: {other}")
                }});
                self.line(&error)
            }
        }
    }

    /// Waits `ms` of script time, taking lines meanwhile: `Some` when the turn must end.
    fn wait(&mut self, ms: u64) -> io::Result<Option<Cut>> {
        let deadline = Instant::now() + self.pace.scaled(ms);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.inputs.recv_timeout(left) {
                Ok(input) => {
                    if let Some(cut) = self.during_turn(input)? {
                        return Ok(Some(cut));
                    }
                }
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => return Ok(Some(Cut::Exit)),
            }
        }
    }

    /// A line during a turn: a user line is queued, `interrupt` cuts the turn, other control
    /// requests are answered.
    fn during_turn(&mut self, input: Input) -> io::Result<Option<Cut>> {
        let line = match input {
            Input::Line(line) => line,
            Input::Unparsable(error) => {
                eprintln!("Error parsing streaming input line: {error}");
                std::process::exit(1);
            }
            Input::Eof => return Ok(Some(Cut::Exit)),
        };
        match line["type"].as_str() {
            Some("user") => {
                self.queued.push_back(user_text(&line));
                Ok(None)
            }
            Some("control_request") if line["request"]["subtype"] == "interrupt" => {
                let answer = json!({"type": "control_response", "response": {
                    "subtype": "success", "request_id": line["request_id"]}});
                self.line(&answer)?;
                if super::knobs::ignores_cancel() {
                    return Ok(None);
                }
                Ok(Some(Cut::Interrupted))
            }
            // An answer to a request that no longer waits.
            Some("control_response") => Ok(None),
            _ => {
                self.control(&line)?;
                Ok(None)
            }
        }
    }

    fn replay(&mut self, text: &str) -> io::Result<()> {
        let echo = self.stamp(json!({
            "type": "user", "message": {"role": "user", "content": text},
            "parent_tool_use_id": null, "isReplay": true
        }));
        self.line(&echo)
    }

    fn event(&mut self, message_id: &str, event: Value) -> io::Result<()> {
        let _ = message_id;
        let line =
            self.stamp(json!({"type": "stream_event", "event": event, "parent_tool_use_id": null}));
        self.line(&line)
    }

    fn assistant(&mut self, message_id: &str, block: Value) -> io::Result<()> {
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
    fn text_block(
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

    fn message_start(&mut self, message_id: &str) -> io::Result<()> {
        let status =
            self.stamp(json!({"type": "system", "subtype": "status", "status": "requesting"}));
        self.line(&status)?;
        self.event(message_id, json!({"type": "message_start", "message": {
            "id": message_id, "type": "message", "role": "assistant", "model": self.reported_model(),
            "content": [], "stop_reason": null, "usage": {"input_tokens": 1234, "output_tokens": 1}}}))
    }

    fn message_end(&mut self, message_id: &str, stop_reason: &str) -> io::Result<()> {
        self.event(message_id, json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 12}}))?;
        self.event(message_id, json!({"type": "message_stop"}))
    }

    fn interrupted(&mut self, reason: &str) -> io::Result<()> {
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

    /// Plays one prompt; `Some(Cut::Exit)` when the process must end.
    fn turn(&mut self, prompt: String) -> io::Result<Option<Cut>> {
        let init = self.stamp(json!({
            "type": "system", "subtype": "init", "cwd": self.cwd,
            "tools": ["Bash", "Edit", "Read", "Write"], "mcp_servers": [],
            "model": self.reported_model(), "permissionMode": self.mode,
            "apiKeySource": "none", "claude_code_version": "2.1.197 (agentty demo)"
        }));
        self.line(&init)?;
        self.replay(&prompt)?;
        self.session.record_prompt(&prompt);
        let words: Vec<String> = prompt
            .split(|c: char| !c.is_alphanumeric() && c != '.' && c != '-')
            .map(str::to_lowercase)
            .collect();
        let has = |word: &str| words.iter().any(|w| w == word);
        if has("fail") {
            let attempt = std::env::var(super::ATTEMPT_VAR)
                .ok()
                .and_then(|value| value.trim().parse().ok())
                .unwrap_or(1);
            if flaky_try(attempt, &prompt, FAILING_TRIES).fails {
                return self.api_error().map(|()| None);
            }
        }
        let message_id = format!("msg_demo_{}", self.uuid().replace('-', ""));
        self.message_start(&message_id)?;
        let count = self.session.history.len() * 2 - 1;
        let (text, pause) = if has("slow") {
            let words: Vec<String> = (0..40).map(|n| format!("word{n}")).collect();
            (words.join(" "), 300)
        } else {
            let seen = self
                .seen_images
                .take()
                .map(|seen| format!("{seen} "))
                .unwrap_or_default();
            (
                format!("{seen}Demo (claude stream) heard: '{prompt}'. messages={count}."),
                30,
            )
        };
        match self.text_block(&message_id, 0, &text, pause)? {
            Some(Cut::Interrupted) => return self.interrupted("aborted_streaming").map(|()| None),
            Some(Cut::Exit) => return Ok(Some(Cut::Exit)),
            None => {}
        }
        let mut denials = Vec::new();
        let mut closing = String::new();
        if has("write") {
            let file = words
                .iter()
                .find(|word| word.ends_with(".txt"))
                .cloned()
                .unwrap_or_else(|| DEFAULT_FILE.to_owned());
            match self.write_tool(&message_id, &file)? {
                Ok(said) => closing = said,
                Err(Cut::Exit) => return Ok(Some(Cut::Exit)),
                Err(Cut::Interrupted) => return self.interrupted("aborted_tools").map(|()| None),
            }
            if closing.starts_with("Not written") {
                denials.push(json!({"tool_name": "Write", "tool_input": {"file_path": file}}));
            }
        } else if has("sleep") {
            match self.sleep_tool(&message_id)? {
                Ok(said) => closing = said,
                Err(Cut::Exit) => return Ok(Some(Cut::Exit)),
                Err(Cut::Interrupted) => return self.interrupted("aborted_tools").map(|()| None),
            }
        } else if let Some(work) = Work::asked(has) {
            match self.play_work(&message_id, work)? {
                Some(Cut::Interrupted) => return self.interrupted("aborted_tools").map(|()| None),
                Some(Cut::Exit) => return Ok(Some(Cut::Exit)),
                None => {}
            }
        } else {
            self.message_end(&message_id, "end_turn")?;
        }
        let used_a_tool = has("write") || has("sleep");
        // Messages that came during the turn join it at this boundary.
        let mut steered = Vec::new();
        if used_a_tool {
            while let Some(text) = self.queued.pop_front() {
                self.replay(&text)?;
                steered.push(text);
            }
        }
        if used_a_tool {
            let second = format!("msg_demo_{}", self.uuid().replace('-', ""));
            self.message_start(&second)?;
            if !steered.is_empty() {
                closing.push_str(&format!(" Steered by: {}.", steered.join(" / ")));
            }
            match self.text_block(&second, 0, &closing, 30)? {
                Some(Cut::Interrupted) => {
                    return self.interrupted("aborted_streaming").map(|()| None)
                }
                Some(Cut::Exit) => return Ok(Some(Cut::Exit)),
                None => {}
            }
            self.message_end(&second, "end_turn")?;
        }
        let result = self.stamp(json!({
            "type": "result", "subtype": "success", "is_error": false, "api_error_status": null,
            "num_turns": 1, "result": text, "stop_reason": "end_turn", "total_cost_usd": 0.001,
            "usage": {"input_tokens": 1234, "output_tokens": 12, "cache_read_input_tokens": 0,
                      "cache_creation_input_tokens": 0},
            "permission_denials": denials, "terminal_reason": "completed"
        }));
        self.line(&result)?;
        Ok(None)
    }

    /// The CLI's result after a model request failed for good (retries off).
    fn api_error(&mut self) -> io::Result<()> {
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

    /// A `Write` of `file`: asked with `can_use_tool` unless allowed for the session; returns
    /// what the closing text says.
    fn write_tool(&mut self, message_id: &str, file: &str) -> io::Result<Result<String, Cut>> {
        let tool_id = format!("toolu_demo_{}", self.next_id);
        self.next_id += 1;
        let path = format!("{}/{file}", self.cwd);
        let content = "written by the demo agent\n";
        let input = json!({"file_path": path, "content": content});
        self.tool_use(message_id, &tool_id, "Write", &input)?;
        // As Claude Code: `acceptEdits` allows file edits without asking.
        let accepted =
            self.mode == "acceptEdits" || self.allowed_always.iter().any(|rule| rule == "Write");
        let verdict = if accepted {
            Ok(None)
        } else {
            self.ask(&tool_id, &input, &path)?
        };
        let (content_text, is_error, said) = match verdict {
            Err(Cut::Interrupted) => {
                let rejected = self.stamp(json!({"type": "user", "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": tool_id, "is_error": true,
                     "content": "The user doesn't want to proceed with this tool use. The tool use was rejected."}]},
                    "parent_tool_use_id": null, "tool_use_result": "User rejected tool use"}));
                self.line(&rejected)?;
                return Ok(Err(Cut::Interrupted));
            }
            Err(Cut::Exit) => return Ok(Err(Cut::Exit)),
            Ok(None) => {
                let written = std::fs::write(&path, content);
                match written {
                    Ok(()) => (
                        format!("File created successfully at: {path}"),
                        false,
                        format!("Wrote {file}."),
                    ),
                    Err(error) => (
                        format!("Error writing {path}: {error}"),
                        true,
                        format!("Could not write {file}."),
                    ),
                }
            }
            Ok(Some(message)) => (message.clone(), true, format!("Not written: {message}")),
        };
        let result = self.stamp(json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_id, "content": content_text, "is_error": is_error}]},
            "parent_tool_use_id": null}));
        self.line(&result)?;
        Ok(Ok(said))
    }

    /// The message asks for tool `name` with `input` (its second block) and ends there.
    fn tool_use(
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

    /// A Bash `sleep 100` run as a real process in a process group of its own, as Claude Code
    /// runs its shell, until it ends or the turn is interrupted: then it is killed, unless the
    /// `leave tools` knob says otherwise. Returns what the closing text says.
    fn sleep_tool(&mut self, message_id: &str) -> io::Result<Result<String, Cut>> {
        use std::os::unix::process::CommandExt;
        let tool_id = format!("toolu_demo_{}", self.next_id);
        self.next_id += 1;
        let input = json!({"command": "sleep 100", "description": "Sleep for a while"});
        self.tool_use(message_id, &tool_id, "Bash", &input)?;
        let mut child = std::process::Command::new("sleep")
            .arg("100")
            .current_dir(&self.cwd)
            .process_group(0)
            .spawn()?;
        let (content, is_error, said) = loop {
            if let Some(status) = child.try_wait()? {
                break (
                    format!("sleep ended: {status}"),
                    false,
                    "Done sleeping.".to_owned(),
                );
            }
            match self.wait(50)? {
                None => {}
                Some(cut) => {
                    if !super::knobs::leaves_tools() {
                        // SAFETY: kill(2) on the tool's own process group.
                        unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                        let _ = child.wait();
                    }
                    let result = self.stamp(
                        json!({"type": "user", "message": {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": tool_id, "is_error": true,
                         "content": "Interrupted by user"}]}, "parent_tool_use_id": null}),
                    );
                    self.line(&result)?;
                    return Ok(Err(cut));
                }
            }
        };
        let result = self.stamp(json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": is_error}]},
            "parent_tool_use_id": null}));
        self.line(&result)?;
        Ok(Ok(said))
    }

    /// `can_use_tool` and its answer: `Ok(None)` allowed, `Ok(Some(message))` denied.
    fn ask(
        &mut self,
        tool_id: &str,
        input: &Value,
        path: &str,
    ) -> io::Result<Result<Option<String>, Cut>> {
        let request_id = self.uuid();
        let request = json!({"type": "control_request", "request_id": request_id, "request": {
            "subtype": "can_use_tool", "tool_name": "Write", "display_name": "Write",
            "input": input, "description": format!("Write {path}"),
            "permission_suggestions": [
                {"type": "addRules", "rules": [{"toolName": "Write"}], "behavior": "allow", "destination": "localSettings"},
                {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
            ],
            "blocked_path": path, "tool_use_id": tool_id}});
        self.line(&request)?;
        loop {
            let input = match self.inputs.recv() {
                Ok(input) => input,
                Err(_) => return Ok(Err(Cut::Exit)),
            };
            if let Input::Line(line) = &input {
                if line["type"] == "control_response"
                    && line["response"]["request_id"] == request_id.as_str()
                {
                    let answer = &line["response"]["response"];
                    if answer["behavior"] == "allow" {
                        for update in answer["updatedPermissions"]
                            .as_array()
                            .into_iter()
                            .flatten()
                        {
                            match update["type"].as_str() {
                                Some("addRules") => self.allowed_always.push("Write".to_owned()),
                                // As Claude Code: the session's mode changes, and it says so.
                                Some("setMode") => {
                                    let mode = update["mode"].as_str().unwrap_or_default();
                                    self.mode = mode.to_owned();
                                    let status = self.stamp(json!({
                                        "type": "system", "subtype": "status", "status": null,
                                        "permissionMode": mode
                                    }));
                                    self.line(&status)?;
                                }
                                _ => {}
                            }
                        }
                        return Ok(Ok(None));
                    }
                    let message = answer["message"].as_str().unwrap_or("denied").to_owned();
                    return Ok(Ok(Some(message)));
                }
            }
            if let Some(cut) = self.during_turn(input)? {
                return Ok(Err(cut));
            }
        }
    }
}
