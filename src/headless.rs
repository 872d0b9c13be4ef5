//! `agentty run` (the shared stream as JSON lines on stdout) and `agentty replay`.
//!
//! Exit status (`orchestrator::exit_status`): 0 after `terminal.completed`, 1 after
//! `terminal.failed` (the failure also said in one line on stderr), 130 after
//! `terminal.cancelled`, 141 when the reader closed stdout (the agent is stopped), 2 for a
//! usage error. SIGINT, SIGTERM or SIGHUP start the three-stage stop; the terminal line is
//! still printed. `--format text` prints the answer alone, everything else on stderr.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::sync::Arc;

use crate::cli::{self, AgentArgs, ReplayArgs, RunArgs, RunFormat};
use crate::config;
use crate::console::err_line;
use crate::orchestrator::{headless::run_headless_turn, OrchestratorOptions, TurnOutcome};
use crate::process::{ExitReport, Line};
use crate::provider::runner::{AttemptMapping, EndedBy};
use crate::provider::{self, AttemptRequest, SessionRef, StopControl};
use crate::session_log::raw as raw_log;
use crate::session_log::Origin;
use crate::signals::{SignalEvent, SignalHandler, SignalHandlerKind};
use crate::startup;
use crate::stream::AgentMessage;

use crate::orchestrator::exit_status::{
    CANCELLED as EXIT_CANCELLED, COMPLETED as EXIT_COMPLETED, FAILED as EXIT_FAILED,
    OUTPUT_CLOSED as EXIT_OUTPUT_CLOSED, USAGE as EXIT_USAGE,
};

/// The exit status for a terminal message.
pub(crate) fn exit_status(terminal: &AgentMessage) -> i32 {
    match terminal {
        AgentMessage::Completed { .. } => EXIT_COMPLETED,
        AgentMessage::Cancelled { .. } => EXIT_CANCELLED,
        _ => EXIT_FAILED,
    }
}

pub fn run(agent: AgentArgs, args: RunArgs) -> i32 {
    let prompt = match cli::run_prompt(&args.prompt, std::io::stdin()) {
        Ok(prompt) => prompt,
        Err(message) => return usage_error(&message),
    };
    let loaded = match startup::load_config(&agent) {
        Ok(loaded) => loaded,
        Err(message) => return usage_error(&message),
    };
    for warning in &loaded.warnings {
        err_line(format!("agentty: {warning}"));
    }
    let choice = match startup::choose_provider(&agent, &loaded.config) {
        Ok(choice) => choice,
        Err(message) => return usage_error(&message),
    };
    // One-shot by default (a single prompt gains nothing from a long-lived process), except
    // where only a two-way transport honours `--permissions` (Claude Code, Codex).
    let transport = provider::default_run_transport(&choice.name, &choice.settings);
    if let Some(message) =
        provider::permissions_not_honoured(&choice.name, transport, args.permissions.is_some())
    {
        return usage_error(&message);
    }
    let mut settings = choice.settings.clone();
    settings.permissions = Some(cli::HeadlessPermissions::policy(
        args.permissions,
        settings.permissions,
    ));
    let provider = match provider::build_provider_with(&choice.name, &settings, transport) {
        Ok(provider) => provider,
        Err(message) => return usage_error(&message),
    };
    if let Some(permissions) = args
        .permissions
        .filter(|_| !provider.capabilities().asks_permission)
    {
        err_line(format!(
            "agentty: --permissions {} has no effect over the {} transport: {} does not ask \
             agentty before acting there (its own settings decide); a two-way transport \
             (app-server for codex, acp) honours it",
            match permissions {
                cli::HeadlessPermissions::Allow => "allow",
                cli::HeadlessPermissions::Deny => "deny",
            },
            transport.name(),
            choice.name
        ));
    }
    let mut policy = loaded.config.provider_error_auto_retry.clone();
    if let Some(max_attempts) = args.max_attempts {
        policy.max_attempts = max_attempts;
        policy.enabled = max_attempts > 1;
        if let Err(problems) = policy.validate() {
            for problem in problems {
                err_line(format!("agentty: --max-attempts: {problem}"));
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
    let session_log = startup::open_session_log(
        startup::LogTarget::New {
            provider: choice.name.clone(),
            origin: Origin::Headless,
            start: crate::session_log::ConversationStart {
                transport: Some(transport),
                settings: provider::configured_settings(&settings),
            },
        },
        &loaded.config,
        Box::new(|failure| err_line(format!("agentty: {}", failure.message()))),
    );
    runtime.block_on(async move {
        let stop = StopControl::new();
        match SignalHandler::new(SignalHandlerKind::Standard) {
            Ok(signals) => {
                tokio::spawn(handle_signals(signals, stop.clone()));
            }
            Err(error) => tracing::error!(%error, "cannot install signal handlers"),
        }
        let snapshots = session_log
            .as_ref()
            .filter(|_| !args.no_snapshots)
            .map(|log| {
                crate::snapshot::SnapshotSetup::for_log(
                    std::env::current_dir().unwrap_or_default(),
                    log.path(),
                    loaded.config.snapshots.clone(),
                )
            });
        let options = OrchestratorOptions {
            policy,
            session,
            scenario: agent.scenario.clone(),
            session_log: session_log.map(|log| log as Arc<dyn crate::orchestrator::Recorder>),
            settings: provider::configured_settings(&settings),
            snapshots,
            ..OrchestratorOptions::new(provider)
        };
        let mut printer = Printer::new(args.format);
        let outcome = run_headless_turn(options, prompt, stop.clone(), |message| {
            if printer.print(message).is_err() && !printer.reader_gone {
                // Nobody reads our output any more: stop the agent; the stop still completes.
                printer.reader_gone = true;
                tracing::info!("stdout was closed: stopping the agent");
                stop.stop();
            }
        })
        .await;
        if printer.reader_gone {
            return EXIT_OUTPUT_CLOSED;
        }
        if let TurnOutcome::Failed { reason, message } = &outcome {
            err_line(format!(
                "agentty: {}",
                failed_line(reason.as_str(), message)
            ));
        }
        outcome.exit_status()
    })
}

/// A failed turn, said in one line for stderr: the reason and the agent's message, made inert
/// (stderr is a terminal too) and its lines joined.
fn failed_line(reason: &str, message: &str) -> String {
    let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
    let message = crate::sanitize::untrusted(&message);
    if message.is_empty() {
        format!("the turn failed ({reason})")
    } else {
        format!("the turn failed ({reason}): {message}")
    }
}

/// Prints a turn's messages on stdout in the chosen `--format`.
struct Printer {
    format: RunFormat,
    stdout: std::io::Stdout,
    /// `--format text`: the answer of the attempt under way, printed once it completes (a
    /// failed attempt's text is dropped with it when the turn is retried).
    answer: String,
    /// A write failed: the reader is gone.
    reader_gone: bool,
}

impl Printer {
    fn new(format: RunFormat) -> Self {
        Self {
            format,
            stdout: std::io::stdout(),
            answer: String::new(),
            reader_gone: false,
        }
    }

    fn print(&mut self, message: &AgentMessage) -> std::io::Result<()> {
        if self.reader_gone {
            return Ok(());
        }
        let mut stdout = self.stdout.lock();
        match self.format {
            RunFormat::Json => writeln!(stdout, "{}", message.to_json_line())?,
            RunFormat::Text => match message {
                AgentMessage::Assistant { delta } => self.answer.push_str(delta),
                AgentMessage::Completed { .. } => {
                    let answer = std::mem::take(&mut self.answer);
                    // The agent's text, inert: stdout may be a terminal.
                    let answer = crate::sanitize::for_clipboard(&answer);
                    let answer = answer.trim_end_matches('\n');
                    if !answer.is_empty() {
                        writeln!(stdout, "{answer}")?;
                    }
                }
                AgentMessage::RetryScheduled { .. } | AgentMessage::Failed(_) => {
                    if let Some(line) = text_mode_status(message) {
                        err_line(format!("agentty: {line}"));
                    }
                    self.answer.clear();
                }
                AgentMessage::Notice { .. } => {
                    if let Some(line) = text_mode_status(message) {
                        err_line(format!("agentty: {line}"));
                    }
                }
                _ => {}
            },
        }
        stdout.flush()
    }
}

/// What `--format text` says on stderr about a message that is not the answer: a retry or a
/// notice (the turn's final failure is said once, at the end).
fn text_mode_status(message: &AgentMessage) -> Option<String> {
    let inert = |text: &str| crate::sanitize::untrusted_owned(text.trim());
    match message {
        AgentMessage::RetryScheduled {
            attempt,
            max_attempts,
            delay_ms,
            reason,
        } => Some(format!(
            "retrying (attempt {attempt} of {max_attempts}) in {:.1} s: {}",
            *delay_ms as f64 / 1000.0,
            inert(reason)
        )),
        AgentMessage::Notice { message, .. } => Some(inert(message)),
        _ => None,
    }
}

/// Prints a usage error as one line and gives the usage exit status.
fn usage_error(message: &str) -> i32 {
    startup::usage_error(message)
}

/// SIGINT, SIGTERM, SIGHUP and SIGQUIT start the three-stage stop; a second one skips to the
/// kill. Job control is `JobControlEvent::act`'s (no terminal to give back here). Runs until
/// the runtime ends.
async fn handle_signals(mut signals: SignalHandler, stop: StopControl) {
    loop {
        match signals.recv().await {
            SignalEvent::Shutdown(signal) => {
                tracing::info!(
                    signal = signal.name(),
                    "signal received: stopping the agent"
                );
                stop.stop();
            }
            SignalEvent::JobControl(event) => event.act(|| {}),
        }
    }
}

/// Maps a saved raw agent log (one agent stdout line per line) through the provider's mapper
/// again and prints the shared stream, ending with the terminal message a clean exit would get.
/// An agentty session log works too (its raw lines in the sidecar, or inline in a log written
/// before it): the raw lines of its last attempt are replayed, with the provider it names
/// unless `--provider` says otherwise. Lines are streamed: memory stays at one line.
pub fn replay(agent: AgentArgs, mut args: ReplayArgs) -> i32 {
    // A sidecar given by itself stands for its session log.
    if let Some(log) = raw_log::log_of_sidecar(&args.file) {
        args.file = log;
    }
    let logged_provider = match session_log_provider(&args.file) {
        Ok(provider) => provider,
        Err(error) => {
            err_line(format!(
                "agentty: cannot open {}: {error}",
                args.file.display()
            ));
            return EXIT_USAGE;
        }
    };
    let name = agent
        .provider
        .clone()
        .or_else(|| logged_provider.clone())
        .unwrap_or_else(|| "pi".to_owned());
    let Some(backend) = provider::build_backend(&name, &config::ProviderSettings::default()) else {
        err_line(format!("agentty: unknown provider `{name}`"));
        return EXIT_USAGE;
    };
    // The mapper is chosen at the first line: an ACP log (the agent's JSON-RPC) is read by
    // the ACP mapper whatever the provider, unless `--transport` says otherwise.
    let mut mapping: Option<AttemptMapping> = None;
    let choose_mapper = |first_line: &str| {
        // Codex's app-server writes JSON-RPC without the `"jsonrpc"` field.
        if agent.transport == Some(provider::Transport::AppServer)
            || (agent.transport.is_none()
                && provider::ProviderKind::from_name(&name) == Some(provider::ProviderKind::Codex)
                && is_bare_json_rpc(first_line))
        {
            return AttemptMapping::new(Box::new(
                provider::codex::app_server::AppServerMapper::new(""),
            ));
        }
        let acp = match agent.transport {
            Some(transport) => transport == provider::Transport::Acp,
            None => is_json_rpc(first_line),
        };
        AttemptMapping::new(if acp {
            Box::new(provider::acp::AcpMapper::new(None))
        } else {
            backend.mapper(&AttemptRequest::default())
        })
    };
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let mut out = Vec::new();
    let mut feed = |raw: &str| {
        let text = raw.trim_end_matches('\r');
        if text.is_empty() {
            return;
        }
        let mapping = mapping.get_or_insert_with(|| choose_mapper(text));
        let line = Line {
            original_len: text.len(),
            text: text.to_owned(),
            truncated: false,
        };
        mapping.map_line(&line, &mut out);
        for message in out.drain(..) {
            let _ = writeln!(stdout, "{}", message.to_json_line());
        }
    };
    let replayed = match logged_provider {
        Some(_) => raw_log::for_each_raw_line_of_last_attempt(&args.file, &mut feed)
            .map(|read| sidecar_problem(&args.file, read)),
        None => for_each_line(&args.file, &mut feed).map(|()| None),
    };
    let problem = match replayed {
        Ok(problem) => problem,
        Err(error) => Some(format!("cannot read {}: {error}", args.file.display())),
    };
    let report = ExitReport {
        exit_code: Some(0),
        ..ExitReport::default()
    };
    let mapping = mapping.unwrap_or_else(|| choose_mapper(""));
    let terminal = mapping.finish(&report, EndedBy::Exit, String::new(), &mut out);
    for message in out.drain(..) {
        let _ = writeln!(stdout, "{}", message.to_json_line());
    }
    if let Some(problem) = problem {
        // The log does not hold how the attempt ended: no ending is made up for it.
        let _ = stdout.flush();
        err_line(format!("agentty: {problem}"));
        return EXIT_FAILED;
    }
    let _ = writeln!(stdout, "{}", terminal.to_json_line());
    let _ = stdout.flush();
    exit_status(&terminal)
}

/// What keeps a session log's replay from being whole: its sidecar missing (while the log
/// holds no raw line of its own) or damaged.
fn sidecar_problem(log: &Path, read: raw_log::RawLinesRead) -> Option<String> {
    let sidecar = raw_log::sidecar_path(log);
    if read.sidecar_missing && read.lines == 0 {
        return Some(format!(
            "nothing to replay: {} holds the shared stream only, and the agent's raw lines \
             (its sidecar {}) are missing",
            log.display(),
            sidecar.display()
        ));
    }
    (read.damaged_frames > 0).then(|| {
        format!(
            "the sidecar {} is damaged ({} of its frames could not be read whole): the lines \
             above are what could be read, and how the attempt ended is not known",
            sidecar.display(),
            read.damaged_frames
        )
    })
}

/// A JSON-RPC 2.0 message (an ACP agent's line).
fn is_json_rpc(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line)
        .is_ok_and(|value| value.get("jsonrpc").and_then(|version| version.as_str()) == Some("2.0"))
}

/// A JSON-RPC message without the `"jsonrpc"` field (Codex's app-server), not an event of a
/// CLI's JSON mode (which all have a `type`).
fn is_bare_json_rpc(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line).is_ok_and(|value| {
        value.get("type").is_none() && (value.get("method").is_some() || value.get("id").is_some())
    })
}

/// The provider a session log names in its header; `None` when `path` is not a session log
/// (a raw agent log).
fn session_log_provider(path: &Path) -> std::io::Result<Option<String>> {
    let mut first = Vec::new();
    // Only the first line: a raw agent log may be one huge line.
    BufReader::new(crate::files::open_regular(path)?.take(crate::session_log::MAX_HEADER_LINE))
        .read_until(b'\n', &mut first)?;
    if first.last() == Some(&b'\n') {
        first.pop();
    }
    Ok(crate::session_log::parse_header(&first, path).map(|header| header.provider))
}

/// Every `\n`-ended line of a file, invalid UTF-8 replaced, one at a time; a line longer than
/// a session log's longest is skipped without being held.
fn for_each_line(path: &Path, mut each: impl FnMut(&str)) -> std::io::Result<()> {
    let mut lines = crate::session_log::LogLines::new(
        BufReader::new(crate::files::open_regular(path)?),
        crate::session_log::MAX_LOG_LINE,
    );
    let mut skipped = 0;
    while let Some(line) = lines.next_line()? {
        match line {
            crate::session_log::LogLine::Line(line) => each(&String::from_utf8_lossy(line)),
            crate::session_log::LogLine::Oversized => skipped += 1,
        }
    }
    if skipped > 0 {
        err_line(format!(
            "agentty: {skipped} lines of {} were longer than {} MiB and skipped",
            path.display(),
            crate::session_log::MAX_LOG_LINE / (1024 * 1024)
        ));
    }
    Ok(())
}
