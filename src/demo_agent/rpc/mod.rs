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

mod commands;
mod turn;

use std::collections::VecDeque;
use std::io;
use std::sync::mpsc::{self, Receiver, Sender};

use serde_json::{json, Value};

use super::live::{self, Serving};
use super::output::Output;
use super::pace::Pace;
use super::scenario::Scenario;
use super::state::Session;

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
    /// The model in use: an index into `commands::MODELS`.
    model: usize,
    thinking_level: String,
    /// What the running prompt's images are, said before its answer.
    seen_images: Option<String>,
}

/// Runs the RPC mode until stdin closes; returns the exit status.
pub(crate) fn run(forced: Option<Scenario>, session: Session) -> i32 {
    let (inputs_tx, inputs) = mpsc::channel();
    live::spawn_stdin_reader(
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

    fn queue_update(&mut self) -> io::Result<()> {
        let value = json!({
            "type": "queue_update",
            "steering": self.steering,
            "followUp": self.follow_up,
        });
        self.line(&value)
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
}

impl Serving for Engine {
    type Input = Input;
    type Stop = Interrupt;

    fn inputs(&self) -> &Receiver<Input> {
        &self.inputs
    }

    fn pace(&self) -> Pace {
        self.pace
    }

    /// A command that arrives while a turn runs; `Some` when it interrupts the turn.
    fn during_turn(&mut self, input: Input) -> io::Result<Option<Interrupt>> {
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

    fn reader_gone() -> Interrupt {
        Interrupt::Exit
    }
}
