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
//! - Two models and three modes (`wire::MODELS`, `wire::MODES`; in `yolo` no permission is asked):
//!   `session/new` and `session/load` return them with the current one (`models`, `modes`);
//!   `session/set_model` / `session/set_mode` switch the session (an unknown id: `-32602
//!   Invalid params`), a mode switch is announced with a `current_mode_update`, and each switch
//!   is logged on stderr and to `settings.jsonl` in the state dir
//!   (`{"session_id","method","value"}`). A session keeps its model and mode across
//!   `session/load`, in another process too (read back from `settings.jsonl`), as real agents
//!   keep them in their session; a prompt's result names the session's model, and the request
//!   log records it.
//! - After `session/new`'s answer, an `available_commands_update` lists three commands of the
//!   agent's own (`wire::COMMANDS`: `compress`, `review <focus>`, `init`), as Qwen Code does.
//! - The agent's own requests (`session/request_permission`) have integer ids from 0, as Gemini's.
//! - One prompt runs at a time: a `session/prompt` arriving while one runs is served after it;
//!   other requests are answered at once, also mid-turn.
//! - stdin EOF exits 0 at once (as gemini does), even mid-turn, killing a running tool;
//!   `--stay-on-eof` keeps the agent alive after EOF, as the Claude and Codex adapters do.
//! - SIGINT kills at once; SIGTERM/SIGHUP kill the tools' process groups and exit 143/129
//!   (the same handlers as the pi modes, `signals`).
//! - `--silent-start` plays an agent hung before `initialize`: it answers nothing and ignores
//!   stdin's end, SIGINT, SIGTERM and SIGHUP (only a kill ends it).
//! - Sessions are stored in `$AGENTTY_DEMO_STATE_DIR/sessions/<id>.jsonl` (see `store`); every
//!   prompt is logged to `requests.jsonl` with what the model would see.
//!
//! `--flavour gemini` plays `gemini --acp` (Gemini CLI 0.61) where it departs from the above,
//! as measured against the real CLI with a bare ACP client; the scenarios are the same:
//! - Sessions are Gemini's chat files, `$GEMINI_CLI_HOME` (else `$HOME`)
//!   `/.gemini/tmp/<project>/chats/session-<UTC minute>-<id8>.jsonl` (see `gemini_store`):
//!   opening a session first writes a header to the file of the current minute, then reads, so
//!   a `session/load` in the minute the session's file is named for wipes it and fails with
//!   `-32603 "Internal error"`, `data: {details: "No previous sessions found for this
//!   project."}`.
//! - `session/load` answers first and replays the conversation after the answer
//!   (`user_message_chunk`, `agent_thought_chunk`, `agent_message_chunk`, completed or failed
//!   `tool_call`s).
//! - A prompt the model failed is forgotten (not stored, not in the next request).
//! - A prompt's result carries `_meta.quota` only (no `usage`); a prompt in an unknown session
//!   is `-32602 "Session not found: <id>"` with no `data`; `initialize` offers Gemini's
//!   authentication methods (`authenticate` accepts any).
//!
//! `--flavour config-options` gives the settings in their newer form, as opencode 1.18 and Qwen
//! Code 0.24 do: `session/new` and `session/load` answer with `configOptions` only (select
//! options `model`, `mode` and `thought_level`, categories the same, the values of
//! `wire::MODELS`, `wire::MODES`, `wire::THOUGHT_LEVELS`), set by `session/set_config_option
//! {sessionId, configId, value}`, whose answer is the options as they are now (each change
//! logged to `settings.jsonl` as `session/set_model`, `session/set_mode` or
//! `session/set_thought_level`).
//!
//! The `demo` provider runs the default flavour; the Gemini flavour is meant to be run through
//! agentty's Gemini backend (a script as its command that runs `agentty demo-agent --mode acp
//! --flavour gemini`), which knows where Gemini's session files are.

mod gemini_store;
pub(crate) mod scenarios;
mod settings;
mod store;
mod tool_scenarios;
mod turn;
mod wire;

use std::collections::{HashMap, VecDeque};
use std::io;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};

use serde_json::{json, Value};

use super::output::Output;
use super::pace::Pace;
use super::signals;
pub(crate) use scenarios::{names as scenario_names, Scenario};
use store::AcpSession;
use turn::{Halt, Turn, TurnEnd};

/// Which agent's ways the fake agent follows where the real agents differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavour {
    /// The demo's own ways (the protocol as the spec reads).
    Default,
    /// `gemini --acp` 0.61's ways (see the module doc).
    Gemini,
    /// The settings in their newer form, as opencode 1.18 and Qwen Code 0.24 give them (see the
    /// module doc); the rest as the default flavour.
    ConfigOptions,
}

impl Flavour {
    /// The flavours' names, for `--flavour`.
    pub(crate) const NAMES: [&'static str; 3] = ["default", "gemini", "config-options"];

    pub(crate) fn from_name(name: &str) -> Option<Self> {
        match name {
            "default" => Some(Self::Default),
            "gemini" => Some(Self::Gemini),
            "config-options" => Some(Self::ConfigOptions),
            _ => None,
        }
    }
}

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
    flavour: Flavour,
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
pub(crate) fn run(scenario: Option<&str>, stay_on_eof: bool, flavour: Flavour) -> i32 {
    let forced = match scenario.map(|name| Scenario::from_name(name).ok_or(name)) {
        None => None,
        Some(Ok(scenario)) => Some(scenario),
        Some(Err(name)) => {
            eprintln!("Error: Unknown ACP scenario \"{name}\". Known scenarios:");
            for (name, description, _) in scenarios::SCENARIOS {
                eprintln!("  {name:<24} {description}");
            }
            return 1;
        }
    };
    signals::install_pi_handlers();
    let (inputs_tx, inputs) = mpsc::channel();
    super::live::spawn_stdin_reader(
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
        flavour,
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

/// `--silent-start`: an agent that hangs before answering `initialize`, deaf to stdin's end,
/// SIGINT and SIGTERM, until it is killed.
pub(crate) fn hang() -> i32 {
    use nix::sys::signal::{signal, SigHandler, Signal};
    for deaf in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: ignoring a signal installs no handler code.
        let _ = unsafe { signal(deaf, SigHandler::SigIgn) };
    }
    eprintln!("demo agent (acp): --silent-start: answering nothing, ever");
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
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
            "initialize" if self.flavour == Flavour::Gemini => {
                wire::result(id, wire::gemini_initialize())
            }
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
                let session = AcpSession::create(self.flavour, &cwd);
                let session_id = session.id().to_owned();
                self.sessions.insert(session_id.clone(), session);
                let mut result = match self.flavour {
                    Flavour::Gemini => json!({"modes": wire::gemini_modes()}),
                    Flavour::Default | Flavour::ConfigOptions => self.choices_of(&session_id),
                };
                result["sessionId"] = json!(session_id);
                self.send(&wire::result(id, result))?;
                // As Qwen Code: its commands follow the answer.
                if self.flavour == Flavour::Default {
                    self.send(&wire::update(&session_id, wire::available_commands()))?;
                }
                return Ok(());
            }
            "session/load" => return self.load(id, params),
            "session/set_model" | "session/set_mode" => return self.set_choice(id, method, params),
            "session/set_config_option" if self.flavour == Flavour::ConfigOptions => {
                return self.set_config_option(id, params)
            }
            _ => wire::error(
                id,
                -32601,
                "Method not found",
                Some(json!({"method": method})),
            ),
        };
        self.send(&answer)
    }

    /// `session/load`: the session as its file holds it now, replayed, then `{}` (the Gemini
    /// flavour: the answer first, then the replay).
    fn load(&mut self, id: &Value, params: &Value) -> io::Result<()> {
        let session_id = params["sessionId"].as_str().unwrap_or_default().to_owned();
        let loaded = AcpSession::load(self.flavour, &session_id, &session_cwd(params));
        let Some((session, history)) = loaded else {
            return match self.flavour {
                Flavour::Default | Flavour::ConfigOptions => {
                    self.send(&wire::session_not_found(id, &session_id))
                }
                Flavour::Gemini => {
                    eprintln!(
                        "Error handling request session/load {session_id}: Internal error: {}",
                        gemini_store::NO_PREVIOUS_SESSIONS
                    );
                    self.send(&wire::gemini_no_previous_sessions(
                        id,
                        gemini_store::NO_PREVIOUS_SESSIONS,
                    ))
                }
            };
        };
        self.sessions.insert(session_id.clone(), session);
        if self.flavour == Flavour::Gemini {
            self.send(&wire::result(id, json!({"modes": wire::gemini_modes()})))?;
        }
        for update in history {
            self.send(&wire::update(&session_id, update))?;
        }
        if self.flavour != Flavour::Gemini {
            let choices = self.choices_of(&session_id);
            self.send(&wire::result(id, choices))?;
        }
        Ok(())
    }

    /// The result of a prompt of `session_id` that ran to its end, in the flavour's shape.
    fn prompt_result(&mut self, session_id: &str, input_tokens: u64, output_tokens: u64) -> Value {
        match self.flavour {
            Flavour::Default | Flavour::ConfigOptions => {
                let model = wire::MODELS[self.choice(session_id).0].0;
                wire::prompt_result("end_turn", model, input_tokens, output_tokens)
            }
            Flavour::Gemini => wire::gemini_prompt_result("end_turn", input_tokens, output_tokens),
        }
    }

    /// Plays one `session/prompt`; `Some(code)` when the agent must exit.
    fn prompt(&mut self, message: &Value) -> io::Result<Option<i32>> {
        let id = &message["id"];
        let params = &message["params"];
        let session_id = params["sessionId"].as_str().unwrap_or_default().to_owned();
        let text = wire::prompt_text(&params["prompt"]);
        if !self.sessions.contains_key(&session_id) {
            let answer = match self.flavour {
                Flavour::Default | Flavour::ConfigOptions => {
                    wire::session_not_found(id, &session_id)
                }
                Flavour::Gemini => wire::gemini_session_not_found(id, &session_id),
            };
            self.send(&answer)?;
            return Ok(None);
        }
        let model = wire::MODELS[self.choice(&session_id).0].0;
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return Ok(None);
        };
        let messages = session.record_prompt(&text, model);
        let lagging = session.lag.clone();
        let cwd = session.cwd.clone();
        let scenario = self.forced.unwrap_or_else(|| Scenario::for_prompt(&text));
        let ignore_cancel = scenario == Scenario::IgnoreCancel;
        let mut turn = Turn::new(self, &session_id, cwd, ignore_cancel);
        let played = match lagging {
            Some(owed) => scenarios::play_lagging(&mut turn, owed, &text),
            None => scenarios::play(scenario, &mut turn, &text),
        };
        let streamed = turn.finish();
        let (input_tokens, output_tokens) = match played {
            // A cut stream never got the usage that comes with the finish reason.
            Ok(TurnEnd::Cut) => (0, 0),
            _ => (wire::input_tokens(&messages), streamed.chunks),
        };
        let mut result = self.prompt_result(&session_id, input_tokens, output_tokens);
        if let Ok(TurnEnd::StopReason(reason)) = &played {
            result["stopReason"] = json!(reason);
        }
        let flavour = self.flavour;
        let session = self.sessions.get_mut(&session_id);
        let reply = match played {
            Ok(end) => {
                if let Some(session) = session {
                    session.record_answer(&streamed, input_tokens, output_tokens);
                    if let TurnEnd::Owing(owed) = end {
                        session.lag = Some(Some(owed));
                    }
                }
                wire::result(id, result)
            }
            Err(Halt::Cancelled) => {
                if let Some(session) = session {
                    if scenario == Scenario::LagAfterCancel && session.lag.is_none() {
                        session.lag = Some(None);
                    }
                }
                wire::result(id, json!({"stopReason": "cancelled"}))
            }
            Err(Halt::Fail(failure)) => {
                if let Some(session) = session {
                    session.record_failure();
                }
                if flavour == Flavour::Gemini {
                    eprintln!(
                        "Error when talking to Gemini API (agentty demo agent) _ApiError: {}",
                        failure.message
                    );
                }
                wire::error(id, failure.code, &failure.message, None)
            }
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
