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
//!   list, a sub-agent with two nested calls (`work`).
//! - `system/init` names the model the alias runs (`default`: `demo-claude-1[1m]`), as Claude
//!   Code's does (`claude-opus-4-8[1m]` where `initialize` lists `default`).
//! - `slow`: a word every 300 ms of script time (interruptible); `fail`: the first two tries of
//!   the prompt fail with the CLI's HTTP 500 result (see `state::flaky_try`); `sleep`: a Bash
//!   tool runs a real `sleep 100` (killed at an `interrupt`, as Claude Code kills its tools).
//! - `interrupt` mid-turn: `control_response`, the partial `assistant`, `[Request interrupted by
//!   user]`, `result/error_during_execution`; the process stays.
//! - stdin EOF exits 0 once the current turn is done.

mod control;
mod messages;
mod tools;
mod work;

use std::collections::VecDeque;
use std::io;
use std::sync::mpsc::{self, Receiver};

use serde_json::{json, Value};

use super::live::{self, Serving};
use super::output::Output;
use super::pace::Pace;
use super::state::{self, flaky_try, Session, SessionChoice};
use work::Work;

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
    live::spawn_stdin_reader(
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
        if has("fail") && flaky_try(super::attempt(), &prompt, FAILING_TRIES).fails {
            return self.api_error().map(|()| None);
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
}

impl Serving for Engine {
    type Input = Input;
    type Stop = Cut;

    fn inputs(&self) -> &Receiver<Input> {
        &self.inputs
    }

    fn pace(&self) -> Pace {
        self.pace
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

    fn reader_gone() -> Cut {
        Cut::Exit
    }
}
