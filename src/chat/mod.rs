//! The full-screen chat: the event loop that owns the terminal, the orchestrator handle and the
//! timers, feeds keys and orchestrator events to the `app` reducers, performs the effects they
//! return and draws with `view`.
//!
//! Rooms: `run` here goes from the command line to the loop and back out (the terminal
//! restored, the way back printed); `event_loop` only loops; `effects` carries out what the
//! reducers ask, and `app_event` is what its background work sends back; `conversation` starts
//! orchestrators and `switching` replaces them (provider switch, `/new`, `/resume`); `external`
//! runs the editor and `!commands`.
//!
//! It sits above both `app` (state and reducers, no IO) and `view` (pure rendering of that
//! state), so neither of them depends on the other's driver and the module graph stays acyclic.

mod app_event;
mod clipboard;
mod conversation;
mod effects;
mod event_loop;
mod external;
mod switching;

use std::time::Duration;

use tokio::sync::mpsc;

use crate::app::state::{AppState, StartupInfo};
use crate::app::transcript::InertText;
use crate::app::{history, resume};
use crate::cli::Cli;
use crate::config::Config;
use crate::console::{err_line, out_line};
use crate::orchestrator::exit_status;
use crate::provider::SessionRef;
use crate::session_log::sessions_dir;
use crate::startup;
use crate::tui::{self, TerminalGuard};

use conversation::{ConversationLog, Launch, Reopened};
use effects::history_path;
use event_loop::ChatLoop;

/// Runs the chat until the user quits; returns the exit status.
pub fn run(cli: Cli) -> i32 {
    let loaded = match startup::load_config(&cli.agent) {
        Ok(loaded) => loaded,
        Err(message) => return startup::usage_error(&message),
    };
    let mut cli = cli;
    let mut warnings = loaded.warnings.clone();
    // `--resume [ID]`: the conversation's transcript is shown again and its agent session
    // continued, on its own provider; one from another directory or provider is refused, and
    // one that another agentty writes is shown read-only.
    if cli.resume.is_some() {
        let conversations = crate::session_log::list_conversations(&sessions_dir());
        cli.settle_resume_word(|word| conversations.iter().any(|found| found.is_named(word)));
    }
    let reopened = match &cli.resume {
        None => None,
        Some(query) => {
            let cwd = std::env::current_dir().unwrap_or_default();
            let found = resume::find(&sessions_dir(), &cwd, query.as_deref()).and_then(|summary| {
                resume::check_provider(&summary, cli.agent.provider.as_deref())?;
                resume::reopen(summary)
            });
            match found {
                Ok((resumed, access)) => {
                    cli.agent
                        .provider
                        .get_or_insert_with(|| resumed.summary.provider.clone());
                    Some(Reopened::new(resumed, access))
                }
                Err(message) => return startup::usage_error(&format!("--resume: {message}")),
            }
        }
    };
    let (provider_name, settings) = match startup::choose_provider(&cli.agent, &loaded.config) {
        Ok(choice) => (choice.name, choice.settings),
        Err(message) => return startup::usage_error(&message),
    };
    // An agent that is not installed is said at once, with how to install it, not at the
    // first prompt.
    warnings.extend(crate::provider::not_installed(&provider_name, &settings));
    let installed_agents = installed_agents(&loaded.config);
    let session = if cli.continue_latest {
        SessionRef::ContinueLatest
    } else if let Some(id) = &cli.session {
        SessionRef::Resume(id.clone())
    } else if let Some((_, _, session)) = &reopened {
        session.clone()
    } else {
        SessionRef::New
    };
    let first_prompt = cli.first_prompt();
    let Some(runtime) = crate::async_runtime() else {
        return exit_status::FAILED;
    };
    crate::process::tree::become_subreaper();
    let (app_events, app_inbox) = mpsc::unbounded_channel();
    let launch = Launch {
        config: loaded.config.clone(),
        agent: cli.agent.clone(),
        scenario: cli.agent.scenario.clone(),
        app_events: app_events.clone(),
    };
    let startup = StartupInfo {
        provider: provider_name.clone(),
        model: settings.model.clone(),
        retry_policy: loaded.config.provider_error_auto_retry.clone(),
        config_path: loaded.path.clone(),
        warnings,
    };
    let (status, left) = runtime.block_on(async move {
        let mut guard = match TerminalGuard::enter() {
            Ok(guard) => guard,
            Err(error) => {
                err_line(format!("agentty: cannot set up the terminal: {error}"));
                return (exit_status::FAILED, None);
            }
        };
        tui::install_panic_hook();
        let hung_up = app_events.clone();
        let watched = tui::watch_for_hangup(move || {
            let _ = hung_up.send(app_event::AppEvent::TerminalHungUp);
        });
        if let Err(error) = watched {
            tracing::warn!(%error, "cannot watch the terminal for a hang-up");
        }
        let (shown, conversation) = match reopened {
            Some((shown, conversation, _)) => (Some(shown), conversation),
            None => (None, ConversationLog::New),
        };
        let started = match launch.orchestrator(
            &provider_name,
            startup.retry_policy.clone(),
            session,
            conversation,
        ) {
            Ok(started) => started,
            Err(error) => {
                guard.restore();
                return (startup::usage_error(&error), None);
            }
        };
        let mut state = AppState::new(startup);
        state.composer.load_history(history::load(&history_path()));
        // It may quote PATH: shown inert like everything from outside.
        state.provider_reason = Some(InertText::new(&crate::launch::choice_reason(
            &launch.agent,
            &launch.config,
        )));
        state.on_agents_checked(installed_agents);
        if let Some(shown) = shown {
            shown.show(&mut state);
        }
        state.on_agent_started(started.capabilities, started.model);
        for change in &started.overridden {
            state.show_notice(crate::app::transcript::NoticeLevel::Info, change);
        }
        state.set_notify(launch.config.notify.unwrap_or_default());
        let terminal_background = std::env::var("COLORFGBG")
            .ok()
            .and_then(|value| crate::config::background_from_colorfgbg(&value));
        state.set_theme(launch.config.theme.unwrap_or_default(), terminal_background);
        let mut chat = ChatLoop::new(state, started.handle, launch, (app_events, app_inbox));
        chat.conversation = started.conversation;
        chat.snapshot_dir = started.snapshot_dir;
        let status = chat.run(guard.terminal(), first_prompt).await;
        guard.restore();
        (status, chat.conversation_to_come_back_to())
    });
    // The orchestrator stopped its agent, unless it ran out of time: nothing may survive us.
    let killed = crate::process::tree::kill_all_trees_now();
    if killed > 0 {
        tracing::warn!(
            killed,
            "agent processes were still alive at exit and were killed"
        );
    }
    runtime.shutdown_timeout(Duration::from_secs(1));
    if let Some(id) = left {
        out_line(come_back_hint(&id));
    }
    status
}

/// The real agent CLIs that are installed, as the config would start them.
fn installed_agents(config: &Config) -> Vec<String> {
    crate::provider::INSTALL_COMMANDS
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| {
            crate::provider::not_installed(name, &config.provider_settings(name)).is_none()
        })
        .map(str::to_owned)
        .collect()
}

/// What the chat prints as it leaves a conversation that has turns: how to come back to it.
fn come_back_hint(id: &str) -> String {
    format!("To continue this conversation: agentty --resume {id}")
}
