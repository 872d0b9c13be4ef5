//! What the chat and `agentty run` do before their first prompt, written once: the config
//! loaded and checked, what a previous agentty left running reaped, the provider chosen and
//! `--scenario` checked against it, the conversation's session log opened and old logs pruned.
//!
//! A problem found here is a usage error: one line on stderr and exit status `USAGE`
//! ([`usage_error`]), before any agent starts.

use std::path::PathBuf;
use std::sync::Arc;

use crate::cli::AgentArgs;
use crate::config::{self, Config, LoadedConfig};
use crate::console::err_line;
use crate::launch::{resolve_provider, ProviderChoice};
use crate::orchestrator::exit_status;
use crate::session_log::failure::FailureSink;
use crate::session_log::lock::ConversationLock;
use crate::session_log::{
    sessions_dir, ConversationStart, NewConversation, Origin, SessionLogWriter,
};

/// Loads the config `--config` names (else the default one). Its warnings, and the notice of
/// agents a previous agentty left running (reaped now), are in `warnings`: the chat shows them,
/// `agentty run` prints them on stderr.
pub(crate) fn load_config(agent: &AgentArgs) -> Result<LoadedConfig, String> {
    let mut loaded = config::load_checked(agent.config.as_deref())?;
    // What an agentty that died without stopping its agents left running goes now.
    loaded.warnings.extend(
        crate::process::orphans::reap_and_record_in(&crate::logging::agents_dir()).notice(),
    );
    Ok(loaded)
}

/// The provider to run (see `launch::resolve_provider`), with `--scenario` checked against it.
pub(crate) fn choose_provider(
    agent: &AgentArgs,
    config: &Config,
) -> Result<ProviderChoice, String> {
    let choice = resolve_provider(agent, config)?;
    crate::cli::check_scenario(
        agent.scenario.as_deref(),
        &choice.name,
        choice.settings.chosen_transport(),
    )?;
    Ok(choice)
}

/// Says a usage error in one line on stderr; the status to exit with.
pub(crate) fn usage_error(message: &str) -> i32 {
    err_line(format!("agentty: {message}"));
    exit_status::USAGE
}

/// The session log a conversation writes.
pub(crate) enum LogTarget {
    /// A new conversation of `provider`, started by the chat or `agentty run` (`origin`),
    /// talking to its agent as `start` says.
    New {
        provider: String,
        origin: Origin,
        start: ConversationStart,
    },
    /// A conversation being resumed: its log is appended to, under its lock when it could be
    /// taken.
    Resume {
        path: PathBuf,
        id: String,
        lock: Option<ConversationLock>,
    },
}

/// Opens the conversation's session log, its write failures told to `failures`, and prunes
/// old conversations' logs (never this one) off the caller's path, as `config` keeps them.
/// `None` (logged) when the log cannot be written: the conversation goes on unrecorded.
pub(crate) fn open_session_log(
    target: LogTarget,
    config: &Config,
    failures: FailureSink,
) -> Option<Arc<SessionLogWriter>> {
    let writer = match target {
        LogTarget::New {
            provider,
            origin,
            start,
        } => SessionLogWriter::start(
            &sessions_dir(),
            NewConversation {
                provider,
                cwd: std::env::current_dir().unwrap_or_default(),
                origin,
                start,
            },
        ),
        LogTarget::Resume { path, id, lock } => SessionLogWriter::resume(&path, &id, lock),
    };
    let log = writer
        .map_err(|error| tracing::warn!(%error, "no session log"))
        .ok()?
        .report_failures_to(failures);
    let in_use = log.path().to_path_buf();
    let policy = config.session_logs.clone();
    std::thread::spawn(move || {
        crate::retention::prune_session_logs(
            &sessions_dir(),
            Some(&in_use),
            &policy,
            std::time::SystemTime::now(),
        )
    });
    Some(Arc::new(log))
}
