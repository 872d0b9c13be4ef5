//! The built-in scripted agent (`agentty demo-agent`): a real child process that prints
//! pi 0.73.1's `--mode json` events exactly as the captures in `protocols/pi/captures` show them,
//! playing scenarios from `assets/scenarios/` (see the README there). `--mode acp` is a different
//! agent altogether, a scripted fake Agent Client Protocol agent with its own scenarios (`acp`).
//!
//! Behaviour kept from pi, because agentty must cope with it:
//! - stdout carries only pi event lines (plus a scenario's deliberate bad lines); line 1 is the
//!   `session` header; each prompt is one `agent_start … agent_end`;
//! - stdin, when it is not a terminal, is read to EOF first and glued in front of the first
//!   prompt (so an agent spawned with an open stdin pipe waits, like pi);
//! - provider errors are an assistant message with `stopReason:"error"`, and exit 0. pi's own
//!   auto-retry is not played: the demo acts as pi with retries off, leaving retries to agentty;
//! - SIGINT kills at once; SIGTERM/SIGHUP kill the bash tools' process groups and exit 143/129.
//!
//! The scenario is `--scenario NAME`, else the first scenario name that appears as a word in the
//! prompt, else `hello`. `AGENTTY_DEMO_ATTEMPT` (set by the demo provider) tells `flaky` which
//! attempt this is; `AGENTTY_DEMO_TIME_SCALE` scales all delays; `AGENTTY_DEMO_STATE_DIR` moves
//! the session and flaky state (see `state`).

pub(crate) mod acp;
mod bash;
mod claude_stream;
pub mod codex_app_server;
mod images;
pub mod knobs;
mod live;
mod message_stream;
mod output;
mod pace;
mod partial_json;
mod player;
mod rpc;
mod scenario;
mod signals;
pub mod state;
mod wire;

use std::io::{IsTerminal, Read};

pub use pace::TIME_SCALE_VAR;

use output::Output;
use pace::Pace;
use player::{Player, RunEnd};
use scenario::{Placeholders, Scenario};
use state::{Session, SessionChoice};

/// The environment variable that tells the demo agent which attempt of a turn it is.
pub(crate) const ATTEMPT_VAR: &str = "AGENTTY_DEMO_ATTEMPT";

/// Which attempt of a turn this is (1 = first), as the demo provider sets it.
fn attempt() -> u32 {
    std::env::var(ATTEMPT_VAR)
        .ok()
        .and_then(|value| value.trim().parse::<u32>().ok())
        .unwrap_or(1)
        .max(1)
}

#[derive(Debug, Clone, Default, clap::Args)]
pub struct DemoAgentArgs {
    /// The scenario to play (each mode's are listed below); default: chosen by a word of the
    /// prompt.
    #[arg(long)]
    pub(crate) scenario: Option<String>,
    /// The protocol it speaks: `json` (pi's one-shot JSON mode) or `rpc` (pi's long-lived RPC
    /// mode, commands on stdin); `acp` (an Agent Client Protocol agent); `codex-app-server`
    /// (Codex's app-server); `claude-stream` (Claude Code's stream-json mode with its control
    /// protocol).
    #[arg(long, default_value = "json")]
    pub(crate) mode: String,
    /// `--mode acp`: stay alive after stdin closes, like the Claude and Codex ACP adapters.
    #[arg(long)]
    pub(crate) stay_on_eof: bool,
    /// `--mode acp`: a hung agent: never answers anything, `initialize` included, and ignores
    /// stdin's end, SIGINT and SIGTERM (only a kill ends it).
    #[arg(long)]
    pub(crate) silent_start: bool,
    /// `--mode acp`: whose ways to follow where the real agents differ: `default`, or `gemini`
    /// (Gemini CLI's session files, history replayed after the load's answer, failed prompts
    /// forgotten; see `acp`).
    #[arg(long, default_value = "default", value_parser = acp::Flavour::NAMES)]
    pub(crate) flavour: String,
    /// Continue this session id.
    #[arg(long)]
    pub(crate) session: Option<String>,
    /// Continue the most recent session.
    #[arg(long = "continue", short = 'c')]
    pub(crate) continue_latest: bool,
    /// The prompt(s).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub(crate) prompt: Vec<String>,
}

/// Runs the demo agent; returns the process exit status.
pub fn run(args: DemoAgentArgs) -> i32 {
    let flavour = acp::Flavour::from_name(&args.flavour).unwrap_or(acp::Flavour::Default);
    if args.mode == "acp" && args.silent_start {
        return acp::hang();
    }
    if args.mode == "acp" {
        return acp::run(args.scenario.as_deref(), args.stay_on_eof, flavour);
    }
    if args.mode == codex_app_server::MODE {
        return codex_app_server::run(args.scenario.as_deref());
    }
    if args.mode == "claude-stream" {
        signals::install_pi_handlers();
        return claude_stream::run(match (args.session, args.continue_latest) {
            (Some(id), _) => SessionChoice::Resume(id),
            (None, true) => SessionChoice::ContinueLatest,
            (None, false) => SessionChoice::New,
        });
    }
    if flavour != acp::Flavour::Default {
        eprintln!(
            "Error: --flavour {} is for --mode acp (got --mode {})",
            args.flavour, args.mode
        );
        return 1;
    }
    if args.mode != "json" && args.mode != "rpc" {
        eprintln!(
            "Error: the demo agent speaks --mode json, rpc, acp, codex-app-server or claude-stream (got --mode {})",
            args.mode
        );
        return 1;
    }
    let forced = match args.scenario.as_deref().map(load_scenario).transpose() {
        Ok(forced) => forced,
        Err(message) => {
            eprintln!("{message}");
            return 1;
        }
    };
    signals::install_pi_handlers();
    if args.mode == "rpc" {
        return run_rpc(args, forced);
    }
    let prompts = with_piped_stdin(args.prompt);
    let mut session = match open_session(args.session, args.continue_latest) {
        Ok(session) => session,
        Err(message) => {
            eprintln!("{message}");
            return 1;
        }
    };
    let mut out = Output::stdout();
    if out.line(&session.header_line()).is_err() {
        return 1;
    }
    let attempt = attempt();
    let pace = Pace::from_env();
    for prompt in &prompts {
        let scenario = match &forced {
            Some(scenario) => scenario.clone(),
            None => match load_scenario(scenario::for_prompt(prompt)) {
                Ok(scenario) => scenario,
                Err(message) => {
                    eprintln!("{message}");
                    return 1;
                }
            },
        };
        if scenario.ignore_termination {
            signals::ignore_interrupt_and_terminate();
        }
        let mut placeholders = Placeholders::default();
        placeholders.set("prompt", prompt.as_str());
        placeholders.set("prompt_quoted", scenario::block_quote(prompt));
        placeholders.set("session_id", session.header.id.as_str());
        placeholders.set("session_short", short_id(&session.header.id));
        placeholders.set("prompt_number", (session.history.len() + 1).to_string());
        placeholders.set("pid", std::process::id().to_string());
        if scenario.spawn_grandchildren {
            let (own_group, same_group) = spawn_grandchildren();
            placeholders.set("own_group_pid", own_group);
            placeholders.set("same_group_pid", same_group);
        }
        let flaky = scenario.fail_first_attempt.as_ref().map(|failure| {
            (
                failure,
                state::flaky_try(attempt, prompt, scenario.failing_attempts),
            )
        });
        let try_number = flaky.as_ref().map_or(attempt, |(_, flaky)| flaky.number);
        placeholders.set("attempt", try_number.to_string());
        let fail_with = flaky
            .filter(|(_, flaky)| flaky.fails)
            .map(|(failure, _)| failure.clone());
        session.record_prompt(prompt);
        let mut player = Player::new(&mut out, pace, &scenario, placeholders, fail_with);
        match player.play(prompt) {
            Ok(RunEnd::Completed) => {}
            Ok(RunEnd::Exit(code)) => return code,
            // stdout is gone: nobody is listening any more.
            Err(_) => return 1,
        }
    }
    0
}

/// The session `--session ID` / `--continue` asks for (else a new one), in the current
/// directory, opened as pi opens it.
fn open_session(id: Option<String>, continue_latest: bool) -> Result<Session, String> {
    let choice = if let Some(id) = id {
        SessionChoice::Resume(id)
    } else if continue_latest {
        SessionChoice::ContinueLatest
    } else {
        SessionChoice::New
    };
    let cwd = std::env::current_dir()
        .map(|cwd| cwd.display().to_string())
        .unwrap_or_default();
    Session::open(&choice, &cwd)
}

/// `--mode rpc`: the session is opened as pi opens it, then commands are served until EOF.
fn run_rpc(args: DemoAgentArgs, forced: Option<Scenario>) -> i32 {
    match open_session(args.session, args.continue_latest) {
        Ok(session) => rpc::run(forced, session),
        Err(message) => {
            eprintln!("{message}");
            1
        }
    }
}

/// What `agentty demo-agent --help` says after the options: every mode's scenarios, from the
/// scenario tables themselves (an installed binary has no `assets/`).
pub fn scenarios_help() -> String {
    let mut help = String::from("Scenarios (--scenario NAME):\n");
    help.push_str("  --mode json | rpc (pi's modes):\n");
    for name in scenario::names() {
        let description = match scenario::load(name) {
            Some(Ok(scenario)) => scenario.description,
            _ => String::new(),
        };
        help.push_str(&format!("    {name:<24} {description}\n"));
    }
    help.push_str("  --mode acp:\n");
    for (name, description, _) in acp::scenarios::SCENARIOS {
        help.push_str(&format!("    {name:<24} {description}\n"));
    }
    help.push_str(&format!(
        "  --mode {}: {}\n",
        codex_app_server::MODE,
        codex_app_server::SCENARIOS.join(", ")
    ));
    help.push_str(
        "  --mode claude-stream: no scenarios; the prompt's words choose (`write` asks to write \
         a file, `slow` streams slowly, `fail` fails twice with HTTP 500)\n",
    );
    help.push_str(
        "\nRun it in the chat with `agentty --provider demo --transport json|rpc|acp|app-server|\
         stream`.",
    );
    help
}

/// The names of the `--mode acp` scenarios, in listing order.
pub(crate) fn acp_scenario_names() -> Vec<&'static str> {
    acp::scenario_names().collect()
}

/// The names of the built-in scenarios, in listing order (for `--scenario` checks).
pub(crate) fn scenario_names() -> Vec<&'static str> {
    scenario::names().collect()
}

fn load_scenario(name: &str) -> Result<Scenario, String> {
    match scenario::load(name) {
        Some(Ok(scenario)) => Ok(scenario),
        Some(Err(error)) => Err(format!("Error: scenario \"{name}\" is broken: {error}")),
        None => {
            let mut message = format!("Error: Unknown scenario \"{name}\". Known scenarios:");
            for known in scenario::names() {
                if let Some(Ok(scenario)) = scenario::load(known) {
                    message.push_str(&format!("\n  {known:<14} {}", scenario.description));
                }
            }
            Err(message)
        }
    }
}

/// pi reads a non-terminal stdin to EOF and puts it in front of the first prompt, unseparated.
fn with_piped_stdin(mut prompts: Vec<String>) -> Vec<String> {
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        return prompts;
    }
    let mut piped = String::new();
    if stdin.read_to_string(&mut piped).is_err() || piped.is_empty() {
        return prompts;
    }
    match prompts.first_mut() {
        Some(first) => first.insert_str(0, &piped),
        None => prompts.push(piped),
    }
    prompts
}

fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// Starts `sleep 300` twice, left running on purpose: one in its own process group, one in the
/// agent's. Returns their PIDs as text (`?` when a spawn failed).
fn spawn_grandchildren() -> (String, String) {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    let sleeper = |own_group: bool| {
        let mut command = Command::new("sleep");
        command
            .arg("300")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if own_group {
            command.process_group(0);
        }
        // Never waited for: the point is that they outlive the agent.
        command
            .spawn()
            .map_or_else(|_| "?".to_owned(), |child| child.id().to_string())
    };
    (sleeper(true), sleeper(false))
}
