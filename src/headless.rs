//! `agentty run` (the shared stream as JSON lines on stdout) and `agentty replay`.
//!
//! Exit status: 0 after `terminal.completed`, 1 after `terminal.failed`, 130 after
//! `terminal.cancelled`, 2 for a usage error. SIGINT, SIGTERM or SIGHUP start the three-stage
//! stop; the terminal line is still printed.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::sync::Arc;

use crate::cli::{self, AgentArgs, ReplayArgs, RunArgs};
use crate::config;
use crate::launch::resolve_provider;
use crate::orchestrator::{headless::run_headless_turn, OrchestratorOptions};
use crate::process::{ExitReport, Line};
use crate::provider::runner::{AttemptMapping, EndedBy};
use crate::provider::{self, AttemptRequest, SessionRef, StopControl};
use crate::session_log::raw as raw_log;
use crate::session_log::{sessions_dir, NewConversation, Origin, SessionLogWriter};
use crate::signals::{JobControlEvent, SignalEvent, SignalHandler, SignalHandlerKind};
use crate::stream::AgentMessage;

use crate::orchestrator::exit_status::{
    CANCELLED as EXIT_CANCELLED, COMPLETED as EXIT_COMPLETED, FAILED as EXIT_FAILED,
    USAGE as EXIT_USAGE,
};

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
    let reaped = crate::process::orphans::reap_and_record_in(&crate::logging::agents_dir());
    if let Some(notice) = reaped.notice() {
        eprintln!("agentty: {notice}");
    }
    let choice = match resolve_provider(&agent, &loaded.config) {
        Ok(choice) => choice,
        Err(message) => return usage_error(&message),
    };
    if let Err(message) = cli::check_scenario(
        agent.scenario.as_deref(),
        &choice.name,
        choice.settings.chosen_transport(),
    ) {
        return usage_error(&message);
    }
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
        .filter(|_| !provider::asks_permission(transport))
    {
        eprintln!(
            "agentty: --permissions {} has no effect over the {} transport: {} does not ask \
             agentty before acting there (its own settings decide); a two-way transport \
             (app-server for codex, acp) honours it",
            match permissions {
                cli::HeadlessPermissions::Allow => "allow",
                cli::HeadlessPermissions::Deny => "deny",
            },
            transport.name(),
            choice.name
        );
    }
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
    .map(|writer| {
        writer.report_failures_to(Box::new(|failure| {
            eprintln!("agentty: {}", failure.message());
        }))
    })
    .map(Arc::new);
    if let Some(log) = &session_log {
        crate::retention::prune_session_logs(
            &sessions_dir(),
            Some(log.path()),
            &loaded.config.session_logs,
            std::time::SystemTime::now(),
        );
    }
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
            .map(|log| crate::snapshot::SnapshotSetup {
                root: std::env::current_dir().unwrap_or_default(),
                dir: crate::snapshot::dir_for_log(log.path()),
                limits: loaded.config.snapshots.clone(),
            });
        let options = OrchestratorOptions {
            policy,
            session,
            scenario: agent.scenario.clone(),
            session_log: session_log.map(|log| log as Arc<dyn crate::orchestrator::Recorder>),
            settings: provider::configured_settings(&settings),
            snapshots,
            // The prompt goes as the conversation opens: the tree as it was comes first.
            baseline_before_first_turn: true,
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

/// SIGINT, SIGTERM, SIGHUP and SIGQUIT start the three-stage stop; a second one skips to the
/// kill. SIGTSTP suspends the agents and agentty; SIGCONT (sent by the shell on `fg`/`bg`, or by
/// hand) continues the agents. Runs until the runtime ends.
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
            SignalEvent::JobControl(JobControlEvent::Stop) => {
                tracing::info!("SIGTSTP: suspending the agent and agentty");
                crate::process::job_control::suspend_with_agents();
            }
            SignalEvent::JobControl(JobControlEvent::Continue) => {
                crate::process::tree::signal_all_groups(nix::sys::signal::Signal::SIGCONT);
            }
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
            eprintln!("agentty: cannot open {}: {error}", args.file.display());
            return EXIT_USAGE;
        }
    };
    let name = agent
        .provider
        .clone()
        .or_else(|| logged_provider.clone())
        .unwrap_or_else(|| "pi".to_owned());
    let Some(backend) = provider::build_backend(&name, &config::ProviderSettings::default()) else {
        eprintln!("agentty: unknown provider `{name}`");
        return EXIT_USAGE;
    };
    // The mapper is chosen at the first line: an ACP log (the agent's JSON-RPC) is read by
    // the ACP mapper whatever the provider, unless `--transport` says otherwise.
    let mut mapping: Option<AttemptMapping> = None;
    let choose_mapper = |first_line: &str| {
        // Codex's app-server writes JSON-RPC without the `"jsonrpc"` field.
        if agent.transport == Some(provider::Transport::AppServer)
            || (agent.transport.is_none() && name == "codex" && is_bare_json_rpc(first_line))
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
        eprintln!("agentty: {problem}");
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
        eprintln!(
            "agentty: {skipped} lines of {} were longer than {} MiB and skipped",
            path.display(),
            crate::session_log::MAX_LOG_LINE / (1024 * 1024)
        );
    }
    Ok(())
}
