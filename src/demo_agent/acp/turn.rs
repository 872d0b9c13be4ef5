//! One running `session/prompt`: the moves a scenario is made of (text and thought chunks,
//! updates, raw lines, waits, permission requests, real commands), each of which keeps serving
//! stdin so that `session/cancel`, permission answers and other requests land mid-turn.

use std::io;
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::super::bash::{self, BashOutcome};
use super::super::live;
use super::{is_response, wire, Agent, Input};

/// Script time between two chunks.
const CHUNK_MS: u64 = 40;

/// Why a turn stopped before its end.
pub(crate) enum Halt {
    /// `session/cancel` (or a permission answered `cancelled`): answer `stopReason: cancelled`.
    Cancelled,
    /// The "model" failed: answer the prompt with this JSON-RPC error.
    Fail(RpcFailure),
    /// stdin closed: exit at once.
    Eof,
    /// stdout is gone.
    Io(io::Error),
}

impl From<io::Error> for Halt {
    fn from(error: io::Error) -> Self {
        Halt::Io(error)
    }
}

/// A failed prompt's JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RpcFailure {
    pub(crate) code: i64,
    pub(crate) message: String,
}

/// How a turn that ran to its end ended (`stopReason: end_turn`).
pub(crate) enum TurnEnd {
    Done,
    /// Lagging (`lag-after-cancel`): this answer text is owed to the next prompt.
    Owing(String),
    /// The model's stream broke off mid-answer with no finish reason: Gemini still ends the
    /// turn `end_turn`, its token counts zero.
    Cut,
    /// The turn ends with this stop reason (`refusal`, `max_tokens`, `max_turn_requests`).
    StopReason(&'static str),
}

/// What a turn streamed, for the session to store.
#[derive(Debug, Default)]
pub(crate) struct Played {
    /// The answer text (the `agent_message_chunk` texts).
    pub(crate) answer: String,
    /// The thought text (the `agent_thought_chunk` texts).
    pub(crate) thoughts: String,
    /// Each tool call as it stands last: `toolCallId`, `title`, `kind`, `status`.
    pub(crate) tool_calls: Vec<Value>,
    /// Text and thought chunks sent.
    pub(crate) chunks: u64,
}

/// The user's answer to a permission request (a cancelled one is `Halt::Cancelled`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    Allowed,
    Rejected,
}

/// What a turn gets from its inputs besides requests, which are served on the spot.
enum Got {
    Nothing,
    /// A response to one of our requests.
    Answer(Value),
    ToolOutput(Vec<u8>),
    ToolOutputClosed,
}

pub(crate) struct Turn<'a> {
    agent: &'a mut Agent,
    session_id: String,
    pub(crate) cwd: PathBuf,
    ignore_cancel: bool,
    /// A `session/cancel` arrived (and was ignored, or the turn is over).
    pub(crate) cancel_seen: bool,
    played: Played,
}

/// A running tool: its process group is killed (and the child reaped) unless it finished.
struct Running {
    child: Child,
    finished: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.finished {
            bash::stop_cut_short(&mut self.child);
        }
    }
}

impl<'a> Turn<'a> {
    pub(crate) fn new(
        agent: &'a mut Agent,
        session_id: &str,
        cwd: PathBuf,
        ignore_cancel: bool,
    ) -> Self {
        Self {
            agent,
            session_id: session_id.to_owned(),
            cwd,
            ignore_cancel: ignore_cancel || crate::demo_agent::knobs::ignores_cancel(),
            cancel_seen: false,
            played: Played::default(),
        }
    }

    /// What the turn streamed.
    pub(crate) fn finish(self) -> Played {
        self.played
    }

    pub(crate) fn update(&mut self, update: Value) -> io::Result<()> {
        self.note_tool_call(&update);
        let message = wire::update(&self.session_id, update);
        self.agent.send(&message)
    }

    /// Keeps the last title, kind and status of each tool call the turn announces or updates.
    fn note_tool_call(&mut self, update: &Value) {
        let kind = update["sessionUpdate"].as_str().unwrap_or_default();
        let Some(id) = update["toolCallId"]
            .as_str()
            .filter(|_| matches!(kind, "tool_call" | "tool_call_update"))
        else {
            return;
        };
        let calls = &mut self.played.tool_calls;
        let index = match calls.iter().position(|call| call["toolCallId"] == id) {
            Some(index) => index,
            None => {
                calls.push(json!({ "toolCallId": id }));
                calls.len() - 1
            }
        };
        for field in ["title", "kind", "status"] {
            if let Some(value) = update.get(field) {
                calls[index][field] = value.clone();
            }
        }
    }

    /// Writes `line` as it is (the misbehaving scenarios).
    pub(crate) fn raw(&mut self, line: &str) -> io::Result<()> {
        self.agent.out.line(line)
    }

    /// Streams `text` as `agent_message_chunk` deltas, one word each.
    pub(crate) fn say(&mut self, text: &str) -> Result<(), Halt> {
        self.stream("agent_message_chunk", text, CHUNK_MS)
    }

    /// Streams `text` as `agent_thought_chunk` deltas, one word each.
    pub(crate) fn think(&mut self, text: &str) -> Result<(), Halt> {
        self.stream("agent_thought_chunk", text, CHUNK_MS)
    }

    /// Sends `text` as one `agent_message_chunk` after `ms` of script time.
    pub(crate) fn say_after(&mut self, ms: u64, text: &str) -> Result<(), Halt> {
        self.wait(ms)?;
        self.chunk("agent_message_chunk", text)
    }

    fn stream(&mut self, kind: &str, text: &str, every_ms: u64) -> Result<(), Halt> {
        for token in super::super::scenario::tokens(text, 1) {
            self.wait(every_ms)?;
            self.chunk(kind, token)?;
        }
        Ok(())
    }

    fn chunk(&mut self, kind: &str, text: &str) -> Result<(), Halt> {
        self.update(wire::chunk(kind, text))?;
        match kind {
            "agent_message_chunk" => self.played.answer.push_str(text),
            "agent_thought_chunk" => self.played.thoughts.push_str(text),
            _ => {}
        }
        self.played.chunks += 1;
        Ok(())
    }

    /// Waits `ms` of script time, serving stdin meanwhile.
    pub(crate) fn wait(&mut self, ms: u64) -> Result<(), Halt> {
        let deadline = Instant::now() + self.agent.pace.scaled(ms);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            self.pump(left)?;
        }
    }

    /// Never ends the turn: serves stdin until it closes (or a signal ends the process).
    pub(crate) fn hang(&mut self) -> Result<TurnEnd, Halt> {
        loop {
            self.pump(Duration::from_secs(3600))?;
        }
    }

    /// A fresh tool call id.
    pub(crate) fn tool_call_id(&mut self) -> String {
        self.agent.tool_calls += 1;
        format!("demo_call_{}", self.agent.tool_calls)
    }

    /// The next input, served when it is a request; `Err` when it ends the turn.
    fn pump(&mut self, timeout: Duration) -> Result<Got, Halt> {
        let input = match self.agent.inputs.recv_timeout(timeout) {
            Ok(input) => input,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => return Ok(Got::Nothing),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Err(Halt::Eof),
        };
        let message = match input {
            Input::Eof if self.agent.stay_on_eof => {
                eprintln!("demo agent (acp): stdin closed; staying alive (--stay-on-eof)");
                return Ok(Got::Nothing);
            }
            Input::Eof => return Err(Halt::Eof),
            Input::NotJson => {
                self.agent.parse_error()?;
                return Ok(Got::Nothing);
            }
            Input::ToolOutput(bytes) => return Ok(Got::ToolOutput(bytes)),
            Input::ToolOutputClosed => return Ok(Got::ToolOutputClosed),
            Input::Message(message) => message,
        };
        if is_response(&message) {
            return Ok(Got::Answer(message));
        }
        match message["method"].as_str().unwrap_or_default() {
            "session/cancel" if message["params"]["sessionId"] == self.session_id.as_str() => {
                self.cancel_seen = true;
                if !self.ignore_cancel {
                    return Err(Halt::Cancelled);
                }
                eprintln!("demo agent (acp): ignoring session/cancel (scenario ignore-cancel)");
            }
            "session/prompt" if message.get("id").is_some() => {
                self.agent.backlog.push_back(message);
            }
            _ => self.agent.handle(&message)?,
        }
        Ok(Got::Nothing)
    }

    /// `session/request_permission` for `tool_call` with `options`; waits for the answer. In
    /// the `yolo` mode nothing is asked: the tool is allowed.
    pub(crate) fn ask_permission(
        &mut self,
        tool_call: Value,
        options: Value,
    ) -> Result<Decision, Halt> {
        if self.agent.asks_nothing(&self.session_id) {
            eprintln!("demo agent (acp): yolo mode, allowed without asking");
            return Ok(Decision::Allowed);
        }
        let id = self.agent.next_request_id;
        self.agent.next_request_id += 1;
        let request = wire::request(
            id,
            "session/request_permission",
            json!({"sessionId": self.session_id, "toolCall": tool_call, "options": options}),
        );
        self.agent.send(&request)?;
        let answer = loop {
            match self.pump(Duration::from_secs(3600))? {
                Got::Answer(answer) if answer["id"] == id => break answer,
                Got::Answer(other) => {
                    eprintln!(
                        "demo agent (acp): ignoring a response to no pending request: {other}"
                    );
                }
                _ => {}
            }
        };
        let outcome = &answer["result"]["outcome"];
        match outcome["outcome"].as_str() {
            Some("cancelled") => Err(Halt::Cancelled),
            Some("selected") => {
                let chosen = outcome["optionId"].as_str().unwrap_or_default();
                let kind = options
                    .as_array()
                    .and_then(|options| options.iter().find(|option| option["optionId"] == chosen))
                    .and_then(|option| option["kind"].as_str())
                    .unwrap_or_default();
                if kind.starts_with("allow") {
                    Ok(Decision::Allowed)
                } else {
                    Ok(Decision::Rejected)
                }
            }
            _ => {
                eprintln!("demo agent (acp): a permission answer that is no outcome: {answer}");
                Ok(Decision::Rejected)
            }
        }
    }

    /// Runs `command` through bash in the session's cwd, in its own process group, serving
    /// stdin meanwhile. With `progress`, a `tool_call_update` `in_progress` goes out once it
    /// runs, its pid in `_meta.agenttyDemo.pid`. A cancel kills the group, reports the tool
    /// `failed` ("Command aborted") and ends the turn.
    pub(crate) fn run_command(
        &mut self,
        call_id: &str,
        command: &str,
        progress: bool,
    ) -> Result<BashOutcome, Halt> {
        let tx = self.agent.inputs_tx.clone();
        let spawned = live::spawn_tool(command, Some(&self.cwd), tx, |piece| match piece {
            Some(bytes) => Input::ToolOutput(bytes),
            None => Input::ToolOutputClosed,
        });
        let (child, _group) = match spawned {
            Ok(spawned) => spawned,
            Err(error) => {
                return Ok(BashOutcome {
                    output: format!("bash: {error}"),
                    exit_code: 127,
                })
            }
        };
        let pid = child.id();
        let mut running = Running {
            child,
            finished: false,
        };
        if progress {
            self.update(json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": "in_progress",
                "_meta": {"agenttyDemo": {"pid": pid}},
            }))?;
        }
        let mut output = Vec::new();
        let mut output_open = true;
        let status = loop {
            if !output_open {
                if let Some(status) = running.child.try_wait()? {
                    running.finished = true;
                    break status;
                }
            }
            match self.pump(Duration::from_millis(20)) {
                Ok(Got::ToolOutput(bytes)) => output.extend_from_slice(&bytes),
                Ok(Got::ToolOutputClosed) => output_open = false,
                Ok(_) => {}
                Err(Halt::Cancelled) => {
                    drop(running);
                    self.update(json!({
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": call_id,
                        "status": "failed",
                        "content": [wire::text_content("Command aborted")],
                    }))?;
                    return Err(Halt::Cancelled);
                }
                Err(halt) => return Err(halt),
            }
        };
        Ok(BashOutcome::finished(status, &output))
    }

    /// Ends tool call `id` as failed: the user refused `what` ("command", "edit").
    pub(crate) fn refuse_tool_call(&mut self, id: &str, what: &str) -> io::Result<()> {
        self.update(json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": id,
            "status": "failed",
            "content": [wire::text_content(&format!("The user rejected this {what}."))],
        }))
    }
}
