//! The demo agent's `--mode rpc`: pi 0.73.1's RPC mode as the `j_rpc_*` captures show it, the
//! stand-in for pi in CI (protocols/pi/README.md §8).
//!
//! - Commands are JSON lines on stdin; every answer is `{"id"?, "type":"response", "command",
//!   "success", "data"?, "error"?}`. An unknown command is answered without `id`; a line that is
//!   not JSON gets `command:"parse"`. No `session` header is printed.
//! - `prompt` is acknowledged before `agent_start`; a `prompt` while a turn runs needs a
//!   `streamingBehavior`. `steer` and `follow_up` (or `prompt` with `steer`/`followUp`) are
//!   queued with a `queue_update`; steering messages are delivered after the current turn step
//!   (after the tool calls), follow-ups when the agent would stop, all inside the same
//!   `agent_start … agent_end`, as pi-agent-core's loop does.
//! - `abort` ends the turn at once: while streaming, the message ends with `stopReason:
//!   "aborted"`; during a tool, the tool's process group is killed, the tool fails with
//!   "Command aborted", and an empty aborted assistant message follows. As pi's loop polls its
//!   steering queue after the tool step even then, a steer still queued is taken first (a
//!   `queue_update`, the user message): it goes into the session, which the next request
//!   carries, with no request of its own. The response comes after `agent_end`. The `ignore-sigint` scenario ignores `abort` (and SIGINT/SIGTERM).
//! - Two models (`get_available_models`: `demo/demo-1`, and `demo/demo-2`, which takes a
//!   thinking level); `set_model {provider, modelId}` switches (an unknown one is refused with
//!   pi's "Model not found"), and each later prompt's line in `requests.jsonl` names the model;
//!   `set_thinking_level` is kept for `get_state`. Both are logged on stderr.
//! - stdin EOF exits 0 at once, even mid-turn.
//!
//! Every wait of the script is a wait for commands, so steering and aborts land mid-turn.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Child;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::player::{BlockKind, MessageStream, Output, Pace};
use super::scenario::{self, tokens, Placeholders, Response, Scenario, Step};
use super::signals::{self, ToolGroup};
use super::state::{now_ms, Session, SessionChoice};
use super::wire::{
    AssistantMessage, ContentBlock, Event, Message, MessageRef, StopReason, ToolResultBody,
    ToolResultMessage,
};

/// What the helper threads hand the engine.
enum Input {
    Command(Value),
    /// A line that is not JSON (the parse error text).
    Unparsable(String),
    /// stdin closed.
    Eof,
    ToolOutput(Vec<u8>),
    ToolOutputClosed,
}

/// Why a turn stopped early.
enum Interrupt {
    /// `abort`: its command id, answered after `agent_end`.
    Abort(Option<Value>),
    /// stdin closed: exit now, printing nothing more.
    Exit,
}

struct Engine {
    out: Output,
    inputs: Receiver<Input>,
    inputs_tx: Sender<Input>,
    session: Session,
    forced: Option<Scenario>,
    pace: Pace,
    steering: VecDeque<String>,
    follow_up: VecDeque<String>,
    /// The running turn ignores `abort` (the `ignore-sigint` scenario).
    ignoring_abort: bool,
    responses: u32,
    tool_calls: u32,
    streaming: bool,
    /// The model in use: an index into [`MODELS`].
    model: usize,
    thinking_level: String,
    /// What the running prompt's images are, said before its answer.
    seen_images: Option<String>,
}

/// The models the demo offers: (id, name, takes a thinking level).
const MODELS: [(&str, &str, bool); 2] = [
    ("demo-1", "Demo One", false),
    ("demo-2", "Demo Two (thinks)", true),
];

/// pi's `Model` object for one of [`MODELS`].
fn model_object(index: usize) -> Value {
    let (id, name, reasoning) = MODELS[index];
    json!({"id": id, "name": name, "api": "openai-completions", "provider": "demo",
           "reasoning": reasoning})
}

/// Runs the RPC mode until stdin closes; returns the exit status.
pub(crate) fn run(forced: Option<Scenario>, session: Session) -> i32 {
    let (inputs_tx, inputs) = mpsc::channel();
    super::spawn_stdin_reader(
        inputs_tx.clone(),
        |parsed| match parsed {
            Ok(value) => Input::Command(value),
            Err(error) => Input::Unparsable(error.to_string()),
        },
        Input::Eof,
    );
    let mut engine = Engine {
        out: Output::stdout(),
        inputs,
        inputs_tx,
        session,
        forced,
        pace: Pace::from_env(),
        steering: VecDeque::new(),
        follow_up: VecDeque::new(),
        ignoring_abort: false,
        responses: 0,
        tool_calls: 0,
        streaming: false,
        model: 0,
        thinking_level: "off".to_owned(),
        seen_images: None,
    };
    match engine.serve() {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// A response or queue update with its fields in pi's order (`id`, `type`, `command`, ...), as
/// the captures show them; serde_json's own maps would sort them.
fn in_pi_order(value: &Value) -> String {
    #[derive(serde::Serialize)]
    struct Response<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a Value>,
        #[serde(rename = "type")]
        kind: &'a Value,
        command: &'a Value,
        success: &'a Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        data: Option<&'a Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a Value>,
    }
    #[derive(serde::Serialize)]
    struct QueueUpdate<'a> {
        #[serde(rename = "type")]
        kind: &'a Value,
        steering: &'a Value,
        #[serde(rename = "followUp")]
        follow_up: &'a Value,
    }
    let ordered = match value["type"].as_str() {
        Some("response") => serde_json::to_string(&Response {
            id: value.get("id"),
            kind: &value["type"],
            command: &value["command"],
            success: &value["success"],
            data: value.get("data"),
            error: value.get("error"),
        }),
        Some("queue_update") => serde_json::to_string(&QueueUpdate {
            kind: &value["type"],
            steering: &value["steering"],
            follow_up: &value["followUp"],
        }),
        _ => return value.to_string(),
    };
    ordered.unwrap_or_else(|_| value.to_string())
}

fn response(id: Option<&Value>, command: &str, success: bool) -> Value {
    let mut value = json!({"type": "response", "command": command, "success": success});
    if let Some(id) = id {
        value["id"] = id.clone();
    }
    value
}

impl Engine {
    fn serve(&mut self) -> io::Result<()> {
        loop {
            let input = match self.inputs.recv() {
                Ok(input) => input,
                Err(_) => return Ok(()),
            };
            match input {
                Input::Eof => return Ok(()),
                Input::Unparsable(error) => self.parse_error(&error)?,
                Input::Command(command) => {
                    if command["type"] == "prompt" {
                        let id = command.get("id").cloned();
                        let message = command["message"].as_str().unwrap_or_default().to_owned();
                        self.seen_images = super::images::acknowledge(
                            command["images"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .map(|image| {
                                    (
                                        image["mimeType"].as_str().unwrap_or_default(),
                                        image["data"].as_str().unwrap_or_default(),
                                    )
                                }),
                        );
                        self.line(&response(id.as_ref(), "prompt", true))?;
                        if let Some(Interrupt::Exit) = self.turn(message)? {
                            return Ok(());
                        }
                    } else {
                        self.idle_command(&command)?;
                    }
                }
                Input::ToolOutput(_) | Input::ToolOutputClosed => {}
            }
        }
    }

    fn line(&mut self, value: &Value) -> io::Result<()> {
        self.out.line(&in_pi_order(value))
    }

    fn parse_error(&mut self, error: &str) -> io::Result<()> {
        let mut value = response(None, "parse", false);
        value["error"] = Value::String(format!("Failed to parse command: {error}"));
        self.line(&value)
    }

    /// Commands that need no running turn (and are answered the same way during one).
    fn idle_command(&mut self, command: &Value) -> io::Result<()> {
        let id = command.get("id");
        let kind = command["type"].as_str().unwrap_or_default();
        let mut answer = response(id, kind, true);
        match kind {
            "get_state" => {
                answer["data"] = json!({
                    "model": model_object(self.model),
                    "thinkingLevel": self.thinking_level,
                    "isStreaming": self.streaming,
                    "isCompacting": false,
                    "steeringMode": "one-at-a-time",
                    "followUpMode": "one-at-a-time",
                    "sessionFile": self.session.file().display().to_string(),
                    "sessionId": self.session.header.id,
                    "autoCompactionEnabled": true,
                    "messageCount": self.session.history.len() * 2,
                    "pendingMessageCount": self.steering.len() + self.follow_up.len(),
                });
            }
            "get_session_stats" => {
                let prompts = self.session.history.len() as u64;
                answer["data"] = json!({
                    "sessionId": self.session.header.id,
                    "userMessages": prompts,
                    "assistantMessages": prompts,
                    "toolCalls": 0, "toolResults": 0,
                    "totalMessages": prompts * 2,
                    "tokens": {"input": prompts * 1234, "output": prompts * 56, "cacheRead": 0, "cacheWrite": 0, "total": prompts * 1290},
                    "cost": 0,
                    // pi's estimate of the context: here 1,290 tokens a prompt of 200k.
                    "contextUsage": {
                        "tokens": prompts * 1290,
                        "contextWindow": 200_000,
                        "percent": (prompts * 1290) as f64 / 2000.0,
                    },
                });
            }
            "set_auto_retry" | "abort" | "set_steering_mode" | "set_follow_up_mode" => {}
            // pi re-reads a session file (one the client restored) in the running process,
            // in a new runtime: what its queues held is left behind.
            "switch_session" => {
                self.steering.clear();
                self.follow_up.clear();
                let path = Path::new(command["sessionPath"].as_str().unwrap_or_default());
                let loaded = path
                    .file_stem()
                    .and_then(|stem| stem.to_str())
                    .and_then(Session::load);
                match loaded {
                    Some((session, _)) => self.session = session,
                    None => {
                        answer = response(id, kind, false);
                        answer["error"] =
                            Value::String(format!("Session file not found: {}", path.display()));
                    }
                }
            }
            "new_session" => {
                self.steering.clear();
                self.follow_up.clear();
                let cwd = self.session.header.cwd.clone();
                match Session::open(&SessionChoice::New, &cwd) {
                    Ok(session) => self.session = session,
                    Err(error) => {
                        answer = response(id, kind, false);
                        answer["error"] = Value::String(error);
                    }
                }
            }
            "get_available_models" => {
                let models: Vec<Value> = (0..MODELS.len()).map(model_object).collect();
                answer["data"] = json!({ "models": models });
            }
            "set_model" => {
                let wanted = (command["provider"].as_str(), command["modelId"].as_str());
                match MODELS
                    .iter()
                    .position(|(id, _, _)| (Some("demo"), Some(*id)) == wanted)
                {
                    Some(index) => {
                        self.model = index;
                        // What the next prompt goes to, in `requests.jsonl`.
                        self.session.model = Some(MODELS[index].0.to_owned());
                        eprintln!("demo agent (rpc): set_model {}", MODELS[index].0);
                        answer["data"] = model_object(index);
                    }
                    None => {
                        answer = response(id, kind, false);
                        answer["error"] = Value::String(format!(
                            "Model not found: {}/{}",
                            wanted.0.unwrap_or_default(),
                            wanted.1.unwrap_or_default()
                        ));
                    }
                }
            }
            "compact" => return self.compact(command),
            "set_thinking_level" => {
                let level = command["level"].as_str().unwrap_or_default();
                self.thinking_level = level.to_owned();
                eprintln!("demo agent (rpc): set_thinking_level {level}");
            }
            "steer" | "follow_up" => {
                // Nothing runs: kept for the next turn, as pi does.
                let message = command["message"].as_str().unwrap_or_default().to_owned();
                if kind == "steer" {
                    self.steering.push_back(message);
                } else {
                    self.follow_up.push_back(message);
                }
                self.queue_update()?;
            }
            _ => {
                let mut unknown = response(None, kind, false);
                unknown["error"] = Value::String(format!("Unknown command: {kind}"));
                return self.line(&unknown);
            }
        }
        self.line(&answer)
    }

    /// `compact{customInstructions?}` as pi 0.73.1 does it: `compaction_start`, the summary
    /// request, `compaction_end` with the result (or the error), then the response. An
    /// instruction that says `slow` takes 30 s (for stop tests; pi's `abort` does not reach a
    /// compaction, so only a signal ends it early).
    fn compact(&mut self, command: &Value) -> io::Result<()> {
        let id = command.get("id");
        let instructions = command["customInstructions"].as_str();
        self.line(&json!({"type": "compaction_start", "reason": "manual"}))?;
        if instructions.is_some_and(|text| text.contains("slow")) {
            std::thread::sleep(self.pace.scaled(30_000));
        }
        let tokens_before = self.session.history.len() as u64 * 1290;
        let mut answer = response(id, "compact", true);
        match self.session.compact(instructions) {
            Ok(summary) => {
                let result = json!({
                    "summary": summary,
                    "firstKeptEntryId": "demo-kept",
                    "tokensBefore": tokens_before,
                });
                self.line(&json!({
                    "type": "compaction_end", "reason": "manual", "result": result,
                    "aborted": false, "willRetry": false,
                }))?;
                answer["data"] = result;
            }
            Err(error) => {
                self.line(&json!({
                    "type": "compaction_end", "reason": "manual", "aborted": false,
                    "willRetry": false, "errorMessage": format!("Compaction failed: {error}"),
                }))?;
                answer = response(id, "compact", false);
                answer["error"] = Value::String(error);
            }
        }
        self.line(&answer)
    }

    fn queue_update(&mut self) -> io::Result<()> {
        let value = json!({
            "type": "queue_update",
            "steering": self.steering,
            "followUp": self.follow_up,
        });
        self.line(&value)
    }

    /// A command that arrives while a turn runs; `Some` when it interrupts the turn.
    fn turn_command(&mut self, input: Input) -> io::Result<Option<Interrupt>> {
        let command = match input {
            Input::Eof => return Ok(Some(Interrupt::Exit)),
            Input::Unparsable(error) => {
                self.parse_error(&error)?;
                return Ok(None);
            }
            Input::Command(command) => command,
            Input::ToolOutput(_) | Input::ToolOutputClosed => return Ok(None),
        };
        let id = command.get("id").cloned();
        let kind = command["type"].as_str().unwrap_or_default().to_owned();
        let message = command["message"].as_str().unwrap_or_default().to_owned();
        match kind.as_str() {
            "abort" if self.ignoring_abort || super::knobs::ignores_cancel() => Ok(None),
            "abort" => Ok(Some(Interrupt::Abort(id))),
            "prompt" => match command["streamingBehavior"].as_str() {
                Some("steer") => self.enqueue(true, message, id, "prompt"),
                Some("followUp") => self.enqueue(false, message, id, "prompt"),
                _ => {
                    let mut refused = response(id.as_ref(), "prompt", false);
                    refused["error"] = Value::String(
                        "Agent is already processing. Specify streamingBehavior ('steer' or \
                         'followUp') to queue the message."
                            .into(),
                    );
                    self.line(&refused)?;
                    Ok(None)
                }
            },
            "steer" => self.enqueue(true, message, id, "steer"),
            "follow_up" => self.enqueue(false, message, id, "follow_up"),
            _ => {
                self.idle_command(&command)?;
                Ok(None)
            }
        }
    }

    fn enqueue(
        &mut self,
        steer: bool,
        message: String,
        id: Option<Value>,
        command: &str,
    ) -> io::Result<Option<Interrupt>> {
        if steer {
            self.steering.push_back(message);
        } else {
            self.follow_up.push_back(message);
        }
        self.queue_update()?;
        self.line(&response(id.as_ref(), command, true))?;
        Ok(None)
    }

    /// Waits `ms` of script time, serving commands meanwhile.
    fn wait(&mut self, ms: u64) -> io::Result<Option<Interrupt>> {
        let deadline = Instant::now() + self.pace.scaled(ms);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.inputs.recv_timeout(left) {
                Ok(input) => {
                    if let Some(interrupt) = self.turn_command(input)? {
                        return Ok(Some(interrupt));
                    }
                }
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => return Ok(Some(Interrupt::Exit)),
            }
        }
    }

    fn scenario_for(&self, prompt: &str) -> Option<Scenario> {
        match &self.forced {
            Some(scenario) => Some(scenario.clone()),
            None => scenario::load(scenario::for_prompt(prompt)).and_then(Result::ok),
        }
    }

    /// Plays one prompt, with the steering and follow-ups that arrive meanwhile.
    fn turn(&mut self, prompt: String) -> io::Result<Option<Interrupt>> {
        let Some(scenario) = self.scenario_for(&prompt) else {
            return Ok(None);
        };
        if scenario.ignore_termination {
            signals::ignore_interrupt_and_terminate();
        }
        self.ignoring_abort = scenario.ignore_termination;
        self.streaming = true;
        let result = self.play(&prompt, &scenario);
        self.streaming = false;
        self.ignoring_abort = false;
        let (messages, interrupt) = result?;
        if let Some(Interrupt::Exit) = interrupt {
            return Ok(interrupt);
        }
        self.out.event(&Event::AgentEnd {
            messages: &messages,
        })?;
        if let Some(Interrupt::Abort(id)) = &interrupt {
            self.line(&response(id.as_ref(), "abort", true))?;
        }
        Ok(interrupt)
    }

    fn user_message(&mut self, text: &str, messages: &mut Vec<Message>) -> io::Result<()> {
        self.session.record_prompt(text);
        let user = self.out.user_message(text)?;
        messages.push(Message::User(user));
        Ok(())
    }

    fn play(
        &mut self,
        prompt: &str,
        scenario: &Scenario,
    ) -> io::Result<(Vec<Message>, Option<Interrupt>)> {
        let mut messages = Vec::new();
        self.out.event(&Event::AgentStart)?;
        self.out.event(&Event::TurnStart)?;
        self.user_message(prompt, &mut messages)?;
        let mut placeholders = Placeholders::default();
        placeholders.set("prompt", prompt);
        placeholders.set("prompt_quoted", scenario::block_quote(prompt));
        placeholders.set("session_id", self.session.header.id.as_str());
        placeholders.set(
            "session_short",
            self.session.header.id.get(..8).unwrap_or(""),
        );
        placeholders.set("prompt_number", self.session.history.len().to_string());
        placeholders.set("attempt", "1");
        placeholders.set("pid", std::process::id().to_string());
        let mut script: VecDeque<Response> = scenario.responses.iter().cloned().collect();
        if let Some(seen) = self.seen_images.take() {
            // The images are acknowledged first, in the answer's first message.
            if script.is_empty() {
                script.push_back(Response::default());
            }
            if let Some(first) = script.front_mut() {
                first.steps.insert(
                    0,
                    Step::Text {
                        text: format!("{seen}\n\n"),
                        repeat: 1,
                    },
                );
            }
        }
        loop {
            // One LLM call and its tools.
            let response = script.pop_front().unwrap_or_default();
            let (assistant, results, interrupt) =
                self.respond(&response, scenario, &mut placeholders)?;
            if let Some(Interrupt::Exit) = interrupt {
                return Ok((messages, interrupt));
            }
            let stop_reason = assistant.stop_reason;
            messages.push(Message::Assistant(assistant));
            messages.extend(results.into_iter().map(Message::ToolResult));
            if interrupt.is_some() {
                return Ok((messages, interrupt));
            }
            if stop_reason == StopReason::Error {
                return Ok((messages, None));
            }
            let more_tools = stop_reason == StopReason::ToolUse && !script.is_empty();
            // Steering is delivered after the step, follow-ups when the agent would stop.
            let delivered = if let Some(steer) = self.steering.pop_front() {
                Some(("You steered me while I worked", steer))
            } else if more_tools {
                None
            } else {
                self.follow_up
                    .pop_front()
                    .map(|follow| ("Your follow-up", follow))
            };
            match delivered {
                Some((heading, text)) => {
                    self.queue_update()?;
                    self.out.event(&Event::TurnStart)?;
                    self.user_message(&text, &mut messages)?;
                    // The steered answer replaces what the script would have said.
                    script.clear();
                    script.push_back(Response {
                        steps: vec![Step::Text {
                            text: format!("{heading}: \"{text}\". Done."),
                            repeat: 1,
                        }],
                        ..Response::default()
                    });
                }
                None if more_tools => self.out.event(&Event::TurnStart)?,
                None => return Ok((messages, None)),
            }
        }
    }

    /// Streams one assistant message and runs its tool calls.
    fn respond(
        &mut self,
        response: &Response,
        scenario: &Scenario,
        placeholders: &mut Placeholders,
    ) -> io::Result<(AssistantMessage, Vec<ToolResultMessage>, Option<Interrupt>)> {
        self.responses += 1;
        let mut stream = MessageStream::open(self.responses);
        if let Some(interrupt) = self.wait(scenario.first_token_delay_ms)? {
            return self.aborted_before_output(stream, interrupt);
        }
        self.out.event(&Event::MessageStart {
            message: MessageRef::Assistant(stream.message()),
        })?;
        for step in &response.steps {
            let (kind, text) = match step {
                Step::Text { text, repeat } => {
                    (BlockKind::Text, placeholders.fill(text).repeat(*repeat))
                }
                Step::Thinking { text } => (BlockKind::Thinking, placeholders.fill(text)),
                Step::Bash { command } => {
                    self.tool_calls += 1;
                    let id = format!("call_demo_{}", self.tool_calls);
                    let command = placeholders.fill(command);
                    stream.tool_call(&mut self.out, Pace::instant(), scenario, id, &command)?;
                    continue;
                }
                Step::RawLine { line } => {
                    self.out.line(&placeholders.fill(line))?;
                    continue;
                }
                Step::Pause { ms } => {
                    if let Some(interrupt) = self.wait(*ms)? {
                        return self.aborted(stream, interrupt);
                    }
                    continue;
                }
                Step::Crash { stderr, exit_code } => {
                    let mut err = io::stderr().lock();
                    let _ = writeln!(err, "{}", placeholders.fill(stderr));
                    let _ = err.flush();
                    std::process::exit(*exit_code);
                }
            };
            for token in tokens(&text, scenario.words_per_token) {
                if let Some(interrupt) = self.wait(scenario.token_delay_ms)? {
                    return self.aborted(stream, interrupt);
                }
                stream.append(&mut self.out, kind, token)?;
            }
        }
        let assistant = match &response.error {
            Some(error) => stream.fail(&mut self.out, error)?,
            None => stream.finish(&mut self.out, 1_100)?,
        };
        let mut results = Vec::new();
        for block in &assistant.content {
            let ContentBlock::ToolCall { id, arguments, .. } = block else {
                continue;
            };
            let command = arguments["command"].as_str().unwrap_or_default().to_owned();
            let (result, interrupt) = self.run_tool(id, arguments, &command)?;
            if let Some(ContentBlock::Text { text }) = result.content.first() {
                placeholders.set("last_tool_output", text.trim_end().to_owned());
            }
            self.out.event(&Event::MessageStart {
                message: MessageRef::ToolResult(&result),
            })?;
            self.out.event(&Event::MessageEnd {
                message: MessageRef::ToolResult(&result),
            })?;
            results.push(result);
            if let Some(interrupt) = interrupt {
                if let Interrupt::Exit = interrupt {
                    return Ok((assistant, results, Some(interrupt)));
                }
                // pi: the turn ends, then a new turn whose request is never made.
                self.out.event(&Event::TurnEnd {
                    message: &assistant,
                    tool_results: &results,
                })?;
                self.out.event(&Event::TurnStart)?;
                if let Some(steer) = self.steering.pop_front() {
                    self.queue_update()?;
                    self.session.record_unanswered(&steer);
                    self.out.user_message(&steer)?;
                }
                let mut empty = AssistantMessage::started(now_ms());
                empty.stop_reason = StopReason::Aborted;
                empty.error_message = Some("Request was aborted.".into());
                self.out.event(&Event::MessageStart {
                    message: MessageRef::Assistant(&empty),
                })?;
                self.out.event(&Event::MessageEnd {
                    message: MessageRef::Assistant(&empty),
                })?;
                self.out.event(&Event::TurnEnd {
                    message: &empty,
                    tool_results: &[],
                })?;
                return Ok((empty, results, Some(interrupt)));
            }
        }
        self.out.event(&Event::TurnEnd {
            message: &assistant,
            tool_results: &results,
        })?;
        Ok((assistant, results, None))
    }

    fn aborted_before_output(
        &mut self,
        stream: MessageStream,
        interrupt: Interrupt,
    ) -> io::Result<(AssistantMessage, Vec<ToolResultMessage>, Option<Interrupt>)> {
        if !matches!(interrupt, Interrupt::Exit) {
            self.out.event(&Event::MessageStart {
                message: MessageRef::Assistant(stream.message()),
            })?;
        }
        self.aborted(stream, interrupt)
    }

    fn aborted(
        &mut self,
        stream: MessageStream,
        interrupt: Interrupt,
    ) -> io::Result<(AssistantMessage, Vec<ToolResultMessage>, Option<Interrupt>)> {
        if let Interrupt::Exit = interrupt {
            return Ok((stream.message().clone(), Vec::new(), Some(interrupt)));
        }
        let message = stream.abort(&mut self.out)?;
        self.out.event(&Event::TurnEnd {
            message: &message,
            tool_results: &[],
        })?;
        Ok((message, Vec::new(), Some(interrupt)))
    }

    /// Runs a bash tool like pi (own session, output as it comes), serving commands meanwhile;
    /// `abort` kills its process group and fails it with "Command aborted".
    fn run_tool(
        &mut self,
        id: &str,
        args: &Value,
        command: &str,
    ) -> io::Result<(ToolResultMessage, Option<Interrupt>)> {
        self.out.event(&Event::ToolExecutionStart {
            tool_call_id: id,
            tool_name: "bash",
            args,
        })?;
        self.out.event(&Event::ToolExecutionUpdate {
            tool_call_id: id,
            tool_name: "bash",
            args,
            partial_result: ToolResultBody {
                content: &[],
                details: None,
            },
        })?;
        let (mut child, _group) = self.spawn_bash(command)?;
        let mut output = Vec::new();
        let mut interrupt = None;
        let mut output_open = true;
        let status = loop {
            if !output_open {
                if let Some(status) = child.try_wait()? {
                    break Some(status);
                }
            }
            match self.inputs.recv_timeout(Duration::from_millis(20)) {
                Ok(Input::ToolOutput(bytes)) => {
                    output.extend_from_slice(&bytes);
                    let so_far = String::from_utf8_lossy(&output).into_owned();
                    self.out.event(&Event::ToolExecutionUpdate {
                        tool_call_id: id,
                        tool_name: "bash",
                        args,
                        partial_result: ToolResultBody {
                            content: &[ContentBlock::text(so_far)],
                            details: Some(Value::Object(Default::default())),
                        },
                    })?;
                }
                Ok(Input::ToolOutputClosed) => output_open = false,
                Ok(input) => {
                    if let Some(stop) = self.turn_command(input)? {
                        if !super::knobs::leaves_tools() {
                            // SAFETY: kill(2) on the tool's own process group.
                            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                            let _ = child.wait();
                        }
                        interrupt = Some(stop);
                        break None;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    interrupt = Some(Interrupt::Exit);
                    break None;
                }
            }
        };
        let text = match status {
            Some(status) => {
                let exit_code = status
                    .code()
                    .or_else(|| status.signal().map(|signal| 128 + signal))
                    .unwrap_or(1);
                let outcome = super::bash::BashOutcome {
                    output: String::from_utf8_lossy(&output).into_owned(),
                    exit_code,
                };
                (outcome.result_text(), exit_code != 0)
            }
            None => ("Command aborted".to_owned(), true),
        };
        self.out.event(&Event::ToolExecutionEnd {
            tool_call_id: id,
            tool_name: "bash",
            result: ToolResultBody {
                content: &[ContentBlock::text(text.0.as_str())],
                details: None,
            },
            is_error: text.1,
        })?;
        let result = ToolResultMessage::new(id.to_owned(), "bash", text.0, text.1, now_ms());
        Ok((result, interrupt))
    }

    fn spawn_bash(&mut self, command: &str) -> io::Result<(Child, ToolGroup)> {
        let tx = self.inputs_tx.clone();
        super::bash::spawn_streamed(command, None, move |output| {
            let input = match output {
                Some(bytes) => Input::ToolOutput(bytes),
                None => Input::ToolOutputClosed,
            };
            tx.send(input).is_ok()
        })
    }
}
