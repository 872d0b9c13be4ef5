//! The demo agent's `--mode acp`: a scripted fake Agent Client Protocol agent, long-lived, that
//! speaks JSON-RPC 2.0 on stdin/stdout (one object per line; stderr only carries notes) the way
//! `gemini --acp` and the Claude/Codex ACP adapters do (protocols/acp/README.md), so that the
//! ACP client's protocol cases can be tested without the real agents.
//!
//! Requests served: `initialize` (protocol 1, `loadSession: true`, no auth methods),
//! `authenticate` (accepted), `session/new`, `session/load` (replays the stored conversation as
//! `user_message_chunk`/`agent_message_chunk` updates, then the session's models and modes),
//! `session/prompt` (plays a scenario, see `scenarios`), the notification `session/cancel`,
//! `session/set_model` and `session/set_mode`. Anything else: `-32601 Method not found`. A line
//! that is not JSON: `-32700 Parse error` with `id: null`.
//! An unknown session id: `-32002 "Session not found: <id>"`, `data: {sessionId}`.
//!
//! - Two models and two modes (`wire::MODELS`, `wire::MODES`): `session/new` and `session/load`
//!   return them with the current one (`models`, `modes`); `session/set_model` /
//!   `session/set_mode` switch the session (an unknown id: `-32602 Invalid params`), a mode
//!   switch is announced with a `current_mode_update`, and each switch is logged on stderr and
//!   to `settings.jsonl` in the state dir (`{"session_id","method","value"}`).
//! - The agent's own requests (`session/request_permission`) have integer ids from 0, as Gemini's.
//! - One prompt runs at a time: a `session/prompt` arriving while one runs is served after it;
//!   other requests are answered at once, also mid-turn.
//! - stdin EOF exits 0 at once (as gemini does), even mid-turn, killing a running tool;
//!   `--stay-on-eof` keeps the agent alive after EOF, as the Claude and Codex adapters do.
//! - SIGINT kills at once; SIGTERM/SIGHUP kill the tools' process groups and exit 143/129
//!   (the same handlers as the pi modes, `signals`).
//! - Sessions are stored in `$AGENTTY_DEMO_STATE_DIR/sessions/<id>.jsonl` (see `store`); every
//!   prompt is logged to `requests.jsonl` with what the model would see.

pub(crate) mod scenarios;
mod store;
mod turn;
mod wire;

use std::collections::{HashMap, VecDeque};
use std::io;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};

use serde_json::{json, Value};

use super::player::{Output, Pace};
use super::signals;
pub(crate) use scenarios::{names as scenario_names, Scenario};
use store::AcpSession;
use turn::{Halt, Turn, TurnEnd};

/// What the helper threads hand the agent.
enum Input {
    Message(Value),
    /// A line that is not JSON.
    NotJson,
    /// stdin closed.
    Eof,
    ToolOutput(Vec<u8>),
    ToolOutputClosed,
}

pub(crate) struct Agent {
    out: Output,
    inputs: Receiver<Input>,
    inputs_tx: Sender<Input>,
    forced: Option<Scenario>,
    pace: Pace,
    stay_on_eof: bool,
    sessions: HashMap<String, AcpSession>,
    /// The next id of a request of ours (`session/request_permission`).
    next_request_id: u64,
    /// Tool call ids are `demo_call_<n>`, counted over the process.
    tool_calls: u64,
    /// Prompts that arrived while another one ran.
    backlog: VecDeque<Value>,
    /// Each session's model and mode (indexes into `wire::MODELS` and `wire::MODES`).
    choices: HashMap<String, (usize, usize)>,
}

/// Runs the ACP mode until stdin closes; returns the exit status.
pub(crate) fn run(scenario: Option<&str>, stay_on_eof: bool) -> i32 {
    let forced = match scenario.map(|name| Scenario::from_name(name).ok_or(name)) {
        None => None,
        Some(Ok(scenario)) => Some(scenario),
        Some(Err(name)) => {
            eprintln!("Error: Unknown ACP scenario \"{name}\". Known scenarios:");
            for (name, description) in scenarios::SCENARIOS {
                eprintln!("  {name:<24} {description}");
            }
            return 1;
        }
    };
    signals::install_pi_handlers();
    let (inputs_tx, inputs) = mpsc::channel();
    super::spawn_stdin_reader(
        inputs_tx.clone(),
        |parsed| match parsed {
            Ok(value) => Input::Message(value),
            Err(_) => Input::NotJson,
        },
        Input::Eof,
    );
    let mut agent = Agent {
        out: Output::stdout(),
        inputs,
        inputs_tx,
        forced,
        pace: Pace::from_env(),
        stay_on_eof,
        sessions: HashMap::new(),
        next_request_id: 0,
        tool_calls: 0,
        backlog: VecDeque::new(),
        choices: HashMap::new(),
    };
    agent.serve()
}

/// A JSON-RPC response (to one of our requests) has an id and no method.
fn is_response(message: &Value) -> bool {
    message.get("method").is_none()
        && message.get("id").is_some()
        && (message.get("result").is_some() || message.get("error").is_some())
}

impl Agent {
    fn serve(&mut self) -> i32 {
        loop {
            let message = match self.backlog.pop_front() {
                Some(message) => message,
                None => match self.inputs.recv() {
                    Err(_) => return 0,
                    Ok(Input::Eof) if self.stay_on_eof => {
                        eprintln!("demo agent (acp): stdin closed; staying alive (--stay-on-eof)");
                        continue;
                    }
                    Ok(Input::Eof) => return 0,
                    Ok(Input::NotJson) => {
                        if self.parse_error().is_err() {
                            return 1;
                        }
                        continue;
                    }
                    Ok(Input::ToolOutput(_) | Input::ToolOutputClosed) => continue,
                    Ok(Input::Message(message)) => message,
                },
            };
            let outcome = if message["method"] == "session/prompt" && message.get("id").is_some() {
                self.prompt(&message)
            } else {
                self.handle(&message).map(|()| None)
            };
            match outcome {
                Ok(None) => {}
                Ok(Some(code)) => return code,
                // stdout is gone: nobody is listening any more.
                Err(_) => return 1,
            }
        }
    }

    pub(crate) fn send(&mut self, message: &Value) -> io::Result<()> {
        self.out.line(&message.to_string())
    }

    fn parse_error(&mut self) -> io::Result<()> {
        self.send(&wire::error(&Value::Null, -32700, "Parse error", None))
    }

    /// Any message but a `session/prompt` request; served the same idle or mid-turn.
    fn handle(&mut self, message: &Value) -> io::Result<()> {
        if is_response(message) {
            eprintln!("demo agent (acp): ignoring a response to no pending request: {message}");
            return Ok(());
        }
        let method = message["method"].as_str().unwrap_or_default();
        let Some(id) = message.get("id") else {
            // Notifications: `session/cancel` outside a turn has nothing to cancel.
            return Ok(());
        };
        let params = &message["params"];
        let answer = match method {
            "initialize" => wire::result(
                id,
                json!({
                    "protocolVersion": 1,
                    "agentCapabilities": {
                        "loadSession": true,
                        "promptCapabilities": {"image": false, "audio": false, "embeddedContext": false},
                        "mcpCapabilities": {"http": false, "sse": false},
                    },
                    "authMethods": [],
                    "agentInfo": {
                        "name": "agentty-demo-acp",
                        "title": "agentty demo agent (ACP)",
                        "version": env!("CARGO_PKG_VERSION"),
                    },
                }),
            ),
            "authenticate" => wire::result(id, json!({})),
            "session/new" => {
                let cwd = session_cwd(params);
                let session = AcpSession::create(&cwd);
                let session_id = session.id().to_owned();
                self.sessions.insert(session_id.clone(), session);
                let mut result = self.choices_of(&session_id);
                result["sessionId"] = json!(session_id);
                wire::result(id, result)
            }
            "session/load" => return self.load(id, params),
            "session/set_model" | "session/set_mode" => return self.set_choice(id, method, params),
            _ => wire::error(
                id,
                -32601,
                "Method not found",
                Some(json!({"method": method})),
            ),
        };
        self.send(&answer)
    }

    /// `session/load`: the session as its file holds it now, replayed, then `{}`.
    fn load(&mut self, id: &Value, params: &Value) -> io::Result<()> {
        let session_id = params["sessionId"].as_str().unwrap_or_default().to_owned();
        let Some((session, entries)) = AcpSession::load(&session_id, &session_cwd(params)) else {
            return self.send(&wire::session_not_found(id, &session_id));
        };
        self.sessions.insert(session_id.clone(), session);
        for entry in entries {
            let update = match entry {
                super::state::Entry::Prompt(text) => wire::chunk("user_message_chunk", &text),
                super::state::Entry::Answer(text) => wire::chunk("agent_message_chunk", &text),
            };
            self.send(&wire::update(&session_id, update))?;
        }
        let choices = self.choices_of(&session_id);
        self.send(&wire::result(id, choices))
    }

    /// The session's `models` and `modes` as `session/new` returns them.
    fn choices_of(&mut self, session_id: &str) -> Value {
        let (model, mode) = *self.choices.entry(session_id.to_owned()).or_default();
        json!({
            "models": wire::models_state(wire::MODELS[model].0),
            "modes": wire::modes_state(wire::MODES[mode].0),
        })
    }

    /// `session/set_model` / `session/set_mode`: switches the session, says so, logs it.
    fn set_choice(&mut self, id: &Value, method: &str, params: &Value) -> io::Result<()> {
        let session_id = params["sessionId"].as_str().unwrap_or_default().to_owned();
        if !self.sessions.contains_key(&session_id) {
            return self.send(&wire::session_not_found(id, &session_id));
        }
        let (field, known): (&str, Vec<&str>) = if method == "session/set_model" {
            ("modelId", wire::MODELS.iter().map(|(id, _)| *id).collect())
        } else {
            ("modeId", wire::MODES.iter().map(|(id, _, _)| *id).collect())
        };
        let wanted = params[field].as_str().unwrap_or_default();
        let Some(index) = known.iter().position(|known| *known == wanted) else {
            return self.send(&wire::error(
                id,
                -32602,
                "Invalid params",
                Some(json!({"message": format!("unknown {field} {wanted:?}")})),
            ));
        };
        let choice = self.choices.entry(session_id.clone()).or_default();
        if method == "session/set_model" {
            choice.0 = index;
        } else {
            choice.1 = index;
        }
        eprintln!("demo agent (acp): {method} {wanted} (session {session_id})");
        super::state::record_setting(&session_id, method, wanted);
        if method == "session/set_mode" {
            let update = json!({"sessionUpdate": "current_mode_update", "currentModeId": wanted});
            self.send(&wire::update(&session_id, update))?;
        }
        self.send(&wire::result(id, json!({})))
    }

    /// Plays one `session/prompt`; `Some(code)` when the agent must exit.
    fn prompt(&mut self, message: &Value) -> io::Result<Option<i32>> {
        let id = &message["id"];
        let params = &message["params"];
        let session_id = params["sessionId"].as_str().unwrap_or_default().to_owned();
        let text = wire::prompt_text(&params["prompt"]);
        let Some(session) = self.sessions.get_mut(&session_id) else {
            self.send(&wire::session_not_found(id, &session_id))?;
            return Ok(None);
        };
        let messages = session.record_prompt(&text);
        let lagging = session.lag.clone();
        let cwd = session.cwd.clone();
        let scenario = self.forced.unwrap_or_else(|| Scenario::for_prompt(&text));
        let mut turn = Turn::new(self, &session_id, cwd, scenario);
        let played = match lagging {
            Some(owed) => turn.play_lagging(owed, &text),
            None => scenarios::play(scenario, &mut turn, &text),
        };
        let (answer, chunks) = turn.finish();
        let session = self.sessions.get_mut(&session_id);
        let reply = match played {
            Ok(end) => {
                if let Some(session) = session {
                    session.record_answer(&answer);
                    if let TurnEnd::Owing(owed) = end {
                        session.lag = Some(Some(owed));
                    }
                }
                wire::result(
                    id,
                    wire::prompt_result("end_turn", wire::input_tokens(&messages), chunks),
                )
            }
            Err(Halt::Cancelled) => {
                if let Some(session) = session {
                    if scenario == Scenario::LagAfterCancel && session.lag.is_none() {
                        session.lag = Some(None);
                    }
                }
                wire::result(id, json!({"stopReason": "cancelled"}))
            }
            Err(Halt::Fail(message)) => wire::error(id, -32603, &message, None),
            Err(Halt::Eof) => return Ok(Some(0)),
            Err(Halt::Io(error)) => return Err(error),
        };
        self.send(&reply)?;
        Ok(None)
    }
}

/// The `cwd` of `session/new` or `session/load`, else the agent's own.
fn session_cwd(params: &Value) -> PathBuf {
    params["cwd"]
        .as_str()
        .filter(|cwd| !cwd.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"))
}
