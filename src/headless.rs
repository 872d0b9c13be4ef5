//! `agentty run` (the shared stream as JSON lines on stdout) and `agentty replay`.
//!
//! Exit status: 0 after `terminal.completed`, 1 after `terminal.failed`, 130 after
//! `terminal.cancelled`, 2 for a usage error. SIGINT, SIGTERM or SIGHUP start the three-stage
//! stop; the terminal line is still printed.

use std::io::Write;

use std::sync::Arc;

use crate::cli::{self, AgentArgs, ReplayArgs, RunArgs};
use crate::config;
use crate::orchestrator::{headless::run_headless_turn, OrchestratorOptions};
use crate::process::{ExitReport, Line};
use crate::provider::runner::{AttemptMapping, EndedBy};
use crate::provider::select::resolve_provider;
use crate::provider::{self, AttemptRequest, SessionRef, StopControl};
use crate::session_log::{sessions_dir, LogEntry, NewConversation, Origin, SessionLogWriter};
use crate::stream::AgentMessage;

pub const EXIT_COMPLETED: i32 = 0;
pub const EXIT_FAILED: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_CANCELLED: i32 = 130;

/// The exit status for a terminal message.
pub fn exit_status(terminal: &AgentMessage) -> i32 {
    match terminal {
        AgentMessage::Completed { .. } => EXIT_COMPLETED,
        AgentMessage::Cancelled { .. } => EXIT_CANCELLED,
        _ => EXIT_FAILED,
    }
}

pub fn run(agent: AgentArgs, args: RunArgs) -> i32 {
    let prompt = match cli::run_prompt(&args.prompt) {
        Ok(prompt) => prompt,
        Err(message) => return usage_error(&message),
    };
    let loaded = match config::load_checked(agent.config.as_deref()) {
        Ok(loaded) => loaded,
        Err(message) => return usage_error(&message),
    };
    for warning in &loaded.warnings {
        eprintln!("agentty: {warning}");
    }
    let choice = match resolve_provider(&agent, &loaded.config) {
        Ok(choice) => choice,
        Err(message) => return usage_error(&message),
    };
    if let Err(message) = cli::check_scenario(agent.scenario.as_deref(), &choice.name) {
        return usage_error(&message);
    }
    // One-shot by default: a single prompt gains nothing from a long-lived process.
    let transport = choice
        .settings
        .transport
        .unwrap_or(provider::Transport::Json);
    let provider = match provider::build_provider_with(&choice.name, &choice.settings, transport) {
        Ok(provider) => provider,
        Err(message) => return usage_error(&message),
    };
    let mut policy = loaded.config.provider_error_auto_retry.clone();
    if let Some(max_attempts) = args.max_attempts {
        policy.max_attempts = max_attempts;
        policy.enabled = max_attempts > 1;
        if let Err(problems) = policy.validate() {
            for problem in problems {
                eprintln!("agentty: --max-attempts: {problem}");
            }
            return EXIT_USAGE;
        }
    }
    let session = match (&args.session, args.continue_latest) {
        (Some(id), _) => SessionRef::Resume(id.clone()),
        (None, true) => SessionRef::ContinueLatest,
        (None, false) => SessionRef::New,
    };
    let Some(runtime) = crate::async_runtime() else {
        return EXIT_FAILED;
    };
    // A headless run is a conversation of its own: the chat's `--resume` does not pick it up.
    let session_log = SessionLogWriter::start(
        &sessions_dir(),
        NewConversation {
            provider: choice.name.clone(),
            cwd: std::env::current_dir().unwrap_or_default(),
            origin: Origin::Headless,
        },
    )
    .map_err(|error| tracing::warn!(%error, "no session log"))
    .ok()
    .map(Arc::new);
    runtime.block_on(async move {
        let stop = StopControl::new();
        tokio::spawn(stop_on_signals(stop.clone()));
        let options = OrchestratorOptions {
            policy,
            session,
            scenario: agent.scenario.clone(),
            session_log: session_log.map(|log| log as Arc<dyn crate::orchestrator::Recorder>),
            ..OrchestratorOptions::new(provider)
        };
        let mut stdout = std::io::stdout().lock();
        let mut reader_gone = false;
        let outcome = run_headless_turn(options, prompt, stop.clone(), |message| {
            let written =
                writeln!(stdout, "{}", message.to_json_line()).and_then(|()| stdout.flush());
            if written.is_err() && !reader_gone {
                // Nobody reads our output any more: stop the agent; the stop still completes.
                reader_gone = true;
                stop.stop();
            }
        })
        .await;
        outcome.exit_status()
    })
}

/// Prints a usage error as one line and gives the usage exit status.
fn usage_error(message: &str) -> i32 {
    eprintln!("agentty: {message}");
    EXIT_USAGE
}

/// SIGINT, SIGTERM and SIGHUP start the three-stage stop; a second one skips to the kill.
async fn stop_on_signals(stop: StopControl) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut interrupt), Ok(mut terminate), Ok(mut hangup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        tracing::error!("cannot install signal handlers");
        return;
    };
    loop {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
            _ = hangup.recv() => {}
        }
        tracing::info!("signal received: stopping the agent");
        stop.stop();
    }
}

/// Maps a saved raw agent log (one agent stdout line per line) through the provider's mapper
/// again and prints the shared stream, ending with the terminal message a clean exit would get.
/// An agentty session log works too: the raw lines of its last attempt are replayed, with the
/// provider it names unless `--provider` says otherwise.
pub fn replay(agent: AgentArgs, args: ReplayArgs) -> i32 {
    let text = match std::fs::read(&args.file) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(error) => {
            eprintln!("agentty: cannot open {}: {error}", args.file.display());
            return EXIT_USAGE;
        }
    };
    let (logged_provider, raw_lines) = match raw_lines_of_session_log(&text) {
        Some((provider, lines)) => (Some(provider), lines),
        None => (None, text.lines().map(str::to_owned).collect()),
    };
    let name = agent
        .provider
        .clone()
        .or(logged_provider)
        .unwrap_or_else(|| "pi".to_owned());
    let Some(backend) = provider::build_backend(&name, &config::ProviderSettings::default()) else {
        eprintln!("agentty: unknown provider `{name}`");
        return EXIT_USAGE;
    };
    let mut mapping = AttemptMapping::new(backend.mapper(&AttemptRequest::default()));
    let mut stdout = std::io::stdout().lock();
    let mut out = Vec::new();
    for raw in raw_lines {
        let text = raw.trim_end_matches('\r');
        if text.is_empty() {
            continue;
        }
        let line = Line {
            original_len: text.len(),
            text: text.to_owned(),
            truncated: false,
        };
        mapping.map_line(&line, &mut out);
        for message in out.drain(..) {
            let _ = writeln!(stdout, "{}", message.to_json_line());
        }
    }
    let report = ExitReport {
        exit_code: Some(0),
        ..ExitReport::default()
    };
    let terminal = mapping.finish(&report, EndedBy::Exit, String::new(), &mut out);
    for message in out.drain(..).chain(std::iter::once(terminal.clone())) {
        let _ = writeln!(stdout, "{}", message.to_json_line());
    }
    exit_status(&terminal)
}

/// The provider and the last attempt's raw lines, when `text` is an agentty session log.
fn raw_lines_of_session_log(text: &str) -> Option<(String, Vec<String>)> {
    let mut entries = text.lines().map(serde_json::from_str::<LogEntry>);
    let Some(Ok(LogEntry::Header { provider, .. })) = entries.next() else {
        return None;
    };
    let mut last_attempt = None;
    let mut lines = Vec::new();
    for entry in entries.flatten() {
        if let LogEntry::Raw {
            turn,
            attempt,
            line,
        } = entry
        {
            if last_attempt != Some((turn, attempt)) {
                last_attempt = Some((turn, attempt));
                lines.clear();
            }
            lines.push(line);
        }
    }
    Some((provider, lines))
}
