//! The event loop: one `select!` over terminal input, orchestrator events, app events, signals
//! and the frame timer (pattern from codex-rs/tui's app.rs).
//!
//! Invariants: the loop never blocks (disk writes go to `spawn_blocking`, the agent lives on the
//! orchestrator's task); it draws only when something changed, at most every 16 ms, and keeps a
//! 4 Hz timer only while something time-based is on screen; errors are shown and logged, never
//! unwound out of it. Every way out (quit, SIGTERM/SIGHUP/SIGINT/SIGQUIT, a broken terminal) asks the
//! orchestrator to shut down (which stops the agent with the three-stage stop) and waits for it,
//! bounded by `SHUTDOWN_LIMIT`, after which any agent tree still alive is killed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use crossterm::event::{Event, EventStream, MouseButton, MouseEventKind};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::time::sleep_until;

use crate::app::conversation_picker::WallClock;
use crate::app::state::{AppEffect, AppState, StartupInfo};
use crate::app::transcript::NoticeLevel;
use crate::app::{export, history, mentions, resume};
use crate::cli::{AgentArgs, Cli};
use crate::config::{self, Config, RetryPolicy};
use crate::launch::resolve_provider;
use crate::orchestrator::exit_status;
use crate::orchestrator::{
    spawn_orchestrator, Command, OrchestratorEvent, OrchestratorHandle, OrchestratorOptions,
};
use crate::provider::{
    build_provider_with, configured_settings, default_chat_transport, settings_overridden,
    SessionRef,
};
use crate::session_log::lock::ConversationLock;
use crate::session_log::{sessions_dir, ConversationSummary, Origin};
use crate::signals::{
    JobControlEvent, ShutdownSignal, SignalEvent, SignalHandler, SignalHandlerKind,
};
use crate::startup::{self, LogTarget};
use crate::tui::{self, ChatTerminal, FrameScheduler, TerminalGuard};
use crate::view::{self, ChatView};

/// Redraw period while something time-based is visible.
const CLOCK_PERIOD: Duration = Duration::from_millis(250);
// Longest wait for the orchestrator to stop the agent when leaving.
use crate::process::timings::SHUTDOWN_LIMIT;
/// The longest the loop spends on queued agent events before it looks at keys and frames.
const EVENT_BATCH: Duration = Duration::from_millis(4);
/// Consecutive draw failures after which the terminal is considered gone.
const MAX_DRAW_FAILURES: u32 = 3;

/// Results of background work, sent back to the loop.
#[derive(Debug)]
enum AppEvent {
    ConfigSaved(Result<PathBuf, String>),
    FilesListed(Vec<String>),
    /// A part of a conversation's log cannot be written (told once per part).
    LogNotSaved(String),
    /// The diffs `/diff` asked for.
    DiffLoaded(Result<crate::app::review::LoadedDiff, String>),
    /// Where `/export` wrote the conversation, or why it could not.
    Exported(Result<PathBuf, String>),
    /// This directory's conversations, for the `/resume` picker.
    ConversationsListed(Vec<ConversationSummary>),
    /// The conversation `/resume` picked, read from its log.
    ConversationReopened(Box<Result<(resume::ResumedConversation, resume::Access), String>>),
    /// A `!command` ended.
    ShellDone(crate::app::state::ShellOutput),
}

/// Everything needed to start (or restart, on a provider switch) an orchestrator.
struct Launch {
    config: Config,
    agent: AgentArgs,
    scenario: Option<String>,
    /// Where a session log's write failures are told.
    app_events: mpsc::UnboundedSender<AppEvent>,
}

/// Which conversation an orchestrator writes to.
enum ConversationLog {
    /// A new conversation (its log appears with its first prompt).
    New,
    /// A conversation being resumed: its log is appended to (under its lock, when it could be
    /// taken), its turns numbered on.
    Resume(Box<ConversationSummary>, Option<ConversationLock>),
}

impl Launch {
    /// Starts an orchestrator for provider `name`, writing the conversation's log.
    fn orchestrator(
        &self,
        name: &str,
        policy: RetryPolicy,
        session: SessionRef,
        conversation: ConversationLog,
    ) -> Result<Started, String> {
        // The command-line overrides (--agent-bin, --model, ...) belong to the provider they
        // were given for; another provider gets its configured settings.
        let settings = match resolve_provider(&self.agent, &self.config) {
            Ok(choice) if choice.name == name => choice.settings,
            _ => self.config.provider_settings(name),
        };
        let transport = settings
            .chosen_transport()
            .unwrap_or_else(|| default_chat_transport(name, &settings));
        let provider = build_provider_with(name, &settings, transport)?;
        let steers = provider.can_interject();
        let transport = provider.transport();
        // The config's start, then what the user chose in the conversation being resumed.
        let chosen = match &conversation {
            ConversationLog::Resume(summary, _) => summary.settings.clone(),
            ConversationLog::New => Vec::new(),
        };
        let conversation_settings = settings_overridden(configured_settings(&settings), chosen);
        let (target, first_turn) = match conversation {
            ConversationLog::New => (
                LogTarget::New {
                    provider: name.to_owned(),
                    origin: Origin::Chat,
                },
                1,
            ),
            ConversationLog::Resume(summary, lock) => (
                LogTarget::Resume {
                    path: summary.path.clone(),
                    id: summary.id.clone(),
                    lock,
                },
                summary.last_turn + 1,
            ),
        };
        let app_events = self.app_events.clone();
        let session_log = startup::open_session_log(
            target,
            &self.config,
            Box::new(move |failure| {
                let _ = app_events.send(AppEvent::LogNotSaved(failure.message()));
            }),
        );
        let conversation = session_log.as_ref().map(|log| Conversation {
            id: log.conversation_id().to_owned(),
            log: log.path().to_path_buf(),
        });
        let snapshot_dir = session_log
            .as_ref()
            .map(|log| crate::snapshot::dir_for_log(log.path()));
        let snapshots = snapshot_dir
            .clone()
            .map(|dir| crate::snapshot::SnapshotSetup {
                root: std::env::current_dir().unwrap_or_default(),
                dir,
                limits: self.config.snapshots.clone(),
            });
        let handle = spawn_orchestrator(OrchestratorOptions {
            provider,
            policy,
            session,
            cwd: None,
            scenario: self.scenario.clone(),
            session_log: session_log.map(|log| log as Arc<dyn crate::orchestrator::Recorder>),
            first_turn,
            settings: conversation_settings,
            snapshots,
            baseline_before_first_turn: false,
        });
        Ok(Started {
            handle,
            steers,
            transport,
            model: settings.model,
            conversation,
            snapshot_dir,
        })
    }
}

/// A started orchestrator, with what the chat shows about it.
struct Started {
    handle: OrchestratorHandle,
    /// The provider can steer a running turn (Enter steers, Alt+Enter follows up).
    steers: bool,
    /// How the provider talks to its agent.
    transport: crate::config::Transport,
    model: Option<String>,
    /// The conversation it writes to.
    conversation: Option<Conversation>,
    /// Where that conversation's snapshots are kept (`/diff` reads them).
    snapshot_dir: Option<PathBuf>,
}

/// The conversation a chat writes.
#[derive(Debug, Clone)]
struct Conversation {
    id: String,
    /// Its session log (it appears with the first prompt).
    log: PathBuf,
}

impl Conversation {
    /// The id `/resume` and `--resume` compare.
    fn id(conversation: &Option<Conversation>) -> Option<String> {
        conversation
            .as_ref()
            .map(|conversation| conversation.id.clone())
    }
}

/// The agent session a resumed conversation continues.
fn session_of(summary: &ConversationSummary) -> SessionRef {
    summary
        .session_id
        .clone()
        .map_or(SessionRef::New, SessionRef::Resume)
}

/// Runs the chat (see `chat::run`).
pub(crate) fn run(cli: Cli) -> i32 {
    let loaded = match startup::load_config(&cli.agent) {
        Ok(loaded) => loaded,
        Err(message) => return startup::usage_error(&message),
    };
    let mut cli = cli;
    let mut warnings = loaded.warnings.clone();
    // `--resume [ID]`: the conversation's transcript is shown again and its agent session
    // continued, on its own provider; one from another directory or provider is refused, and
    // one that another agentty writes is shown read-only.
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
    crate::view::highlight::use_theme(loaded.config.theme.unwrap_or_default());
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
                eprintln!("agentty: cannot set up the terminal: {error}");
                return (exit_status::FAILED, None);
            }
        };
        tui::install_panic_hook();
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
        state.provider_reason = Some(crate::sanitize::untrusted_owned(
            &crate::launch::choice_reason(&launch.agent, &launch.config),
        ));
        state.on_agents_checked(installed_agents);
        if let Some(shown) = shown {
            shown.show(&mut state);
        }
        state.on_agent_started(started.steers, started.transport, started.model);
        state.set_notify(launch.config.notify.unwrap_or_default());
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
        println!("{}", come_back_hint(&id));
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

/// A reopened conversation, as the chat shows it.
enum Reopened {
    /// This chat continues it: appends to its log, continues its agent session.
    Continued(resume::ResumedConversation),
    /// Another agentty (pid) writes it: shown read-only; the next prompt starts a new one.
    ReadOnly(resume::ResumedConversation, Option<u32>),
}

impl Reopened {
    /// How the chat goes on with a conversation reopened with `access`: what it shows, the
    /// log it writes, and the agent session its next prompt continues.
    fn new(
        resumed: resume::ResumedConversation,
        access: resume::Access,
    ) -> (Reopened, ConversationLog, SessionRef) {
        match access {
            resume::Access::Append(lock) => {
                let summary = resumed.summary.clone();
                let session = session_of(&summary);
                (
                    Reopened::Continued(resumed),
                    ConversationLog::Resume(Box::new(summary), lock),
                    session,
                )
            }
            resume::Access::ReadOnly { pid } => (
                Reopened::ReadOnly(resumed, pid),
                ConversationLog::New,
                SessionRef::New,
            ),
        }
    }

    fn show(self, state: &mut AppState) {
        match self {
            Reopened::Continued(resumed) => resume::show_resumed(state, resumed),
            Reopened::ReadOnly(resumed, pid) => resume::show_read_only(state, resumed, pid),
        }
    }
}

/// Why the chat leaves without the quit key.
enum Leaving {
    /// SIGINT, SIGTERM, SIGHUP or SIGQUIT.
    Signal(ShutdownSignal),
    /// The terminal cannot be read or drawn on any more.
    TerminalLost(String),
}

struct ChatLoop {
    state: AppState,
    view: ChatView,
    frames: FrameScheduler,
    orchestrator: OrchestratorHandle,
    orchestrator_open: bool,
    app_events: mpsc::UnboundedSender<AppEvent>,
    app_inbox: mpsc::UnboundedReceiver<AppEvent>,
    launch: Launch,
    /// When leaving gives up waiting for the orchestrator.
    shutdown_deadline: Option<Instant>,
    /// The terminal is gone (SIGHUP, read errors): do not draw.
    terminal_lost: bool,
    draw_failures: u32,
    first_frame_logged: bool,
    /// The conversation this chat is in.
    conversation: Option<Conversation>,
    /// Where its snapshots are kept.
    snapshot_dir: Option<PathBuf>,
    exit_status: i32,
    exit: bool,
    /// The window title and the call backs when the terminal is not focused.
    attention: crate::app::attention::Attention,
    desktop_notification: Option<tui::attention::DesktopNotification>,
}

impl ChatLoop {
    fn new(
        state: AppState,
        orchestrator: OrchestratorHandle,
        launch: Launch,
        (app_events, app_inbox): (
            mpsc::UnboundedSender<AppEvent>,
            mpsc::UnboundedReceiver<AppEvent>,
        ),
    ) -> Self {
        Self {
            state,
            view: ChatView::default(),
            frames: FrameScheduler::default(),
            orchestrator,
            orchestrator_open: true,
            app_events,
            app_inbox,
            shutdown_deadline: None,
            terminal_lost: false,
            draw_failures: 0,
            first_frame_logged: false,
            conversation: None,
            snapshot_dir: None,
            exit_status: exit_status::COMPLETED,
            exit: false,
            attention: crate::app::attention::Attention::default(),
            launch,
            desktop_notification: tui::attention::DesktopNotification::detect(),
        }
    }

    /// Runs until the user leaves, `first_prompt` (`agentty "fix the tests"`) sent first as if
    /// typed; returns the exit status.
    async fn run(&mut self, terminal: &mut ChatTerminal, first_prompt: Option<String>) -> i32 {
        let mut input = EventStream::new();
        // SIGTSTP from outside (`kill -TSTP`; the terminal's Ctrl+Z arrives as a key in raw
        // mode) suspends the same way as Ctrl+Z: terminal restored, agents stopped too.
        let mut signals = match SignalHandler::new(SignalHandlerKind::Standard) {
            Ok(signals) => signals,
            Err(error) => {
                tracing::error!(%error, "cannot install signal handlers");
                return 1;
            }
        };
        if let Some(prompt) = first_prompt {
            let effects = self.state.submit_first_prompt(&prompt);
            self.apply(effects, terminal);
        }
        self.frames.request(Instant::now());
        while !self.exit {
            let draw_at = self.frames.deadline();
            let shutdown_at = self.shutdown_deadline;
            let mut redraw = true;
            tokio::select! {
                biased;
                _ = sleep_until(draw_at.unwrap_or_else(Instant::now).into()), if draw_at.is_some() => {
                    self.draw(terminal);
                    redraw = false;
                }
                _ = sleep_until(shutdown_at.unwrap_or_else(Instant::now).into()), if shutdown_at.is_some() => {
                    tracing::warn!("the orchestrator did not shut down in time; killing agents");
                    crate::process::tree::kill_all_trees_now();
                    self.exit = true;
                }
                signal = signals.recv() => self.on_signal(signal, terminal),
                // Keys before the agent's events: an agent that floods must not keep the user
                // from typing, or from stopping it.
                input_event = input.next(), if !self.terminal_lost => match input_event {
                    Some(Ok(event)) => redraw = self.on_terminal_event(event, terminal),
                    Some(Err(error)) => self.on_terminal_lost(&error.to_string()),
                    None => self.on_terminal_lost("input closed"),
                },
                event = self.orchestrator.events.recv(), if self.orchestrator_open => {
                    self.on_orchestrator_event(event, terminal);
                    self.drain_orchestrator_events(terminal);
                }
                Some(app_event) = self.app_inbox.recv() => self.on_app_event(app_event),
            }
            let now = Instant::now();
            self.state.on_clock(now);
            self.tell_attention(terminal);
            if self.state.quitting && self.shutdown_deadline.is_none() {
                self.shutdown_deadline = Some(now + SHUTDOWN_LIMIT);
            }
            if redraw {
                self.frames.request(now);
            } else if self.state.needs_clock() && self.frames.deadline().is_none() {
                self.frames.request_at(now + CLOCK_PERIOD);
            }
            // A prompt shows when it arms: drawn at that moment, not up to a clock period late.
            if let Some(arms_at) = self.state.permission_arms_at(now) {
                self.frames.request_at(arms_at);
            }
        }
        self.exit_status
    }

    fn on_orchestrator_event(
        &mut self,
        event: Option<OrchestratorEvent>,
        terminal: &mut ChatTerminal,
    ) {
        let now = Instant::now();
        let effects = match event {
            Some(event) => self.state.on_orchestrator_event(event, now),
            None => {
                self.orchestrator_open = false;
                self.state.on_orchestrator_gone()
            }
        };
        self.apply(effects, terminal);
    }

    /// Takes the events already queued, for at most [`EVENT_BATCH`]: a stream of tiny deltas
    /// costs one pass of the loop per batch, not per delta, and keys and frames still come
    /// in between batches.
    fn drain_orchestrator_events(&mut self, terminal: &mut ChatTerminal) {
        let until = Instant::now() + EVENT_BATCH;
        while self.orchestrator_open && !self.exit && Instant::now() < until {
            match self.orchestrator.events.try_recv() {
                Ok(event) => self.on_orchestrator_event(Some(event), terminal),
                Err(mpsc::error::TryRecvError::Empty) => return,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    self.on_orchestrator_event(None, terminal);
                }
            }
        }
    }

    fn draw(&mut self, terminal: &mut ChatTerminal) {
        let now = Instant::now();
        self.frames.frame_drawn(now);
        if self.terminal_lost {
            return;
        }
        let result = terminal.draw(|frame| view::render(frame, &self.state, &mut self.view, now));
        match result {
            Ok(frame) => {
                let drawn = view::drawn(&self.state, &self.view, frame.area);
                self.state.on_drawn(drawn);
                self.draw_failures = 0;
                if !self.first_frame_logged {
                    self.first_frame_logged = true;
                    tracing::info!(
                        since_launch_ms = crate::logging::since_launch().as_secs_f64() * 1000.0,
                        "first frame drawn"
                    );
                }
            }
            Err(error) => {
                self.draw_failures += 1;
                tracing::warn!(%error, "drawing failed");
                if self.draw_failures >= MAX_DRAW_FAILURES {
                    self.on_terminal_lost(&error.to_string());
                }
            }
        }
    }

    /// Handles one terminal event; returns whether the screen may have changed.
    fn on_terminal_event(&mut self, event: Event, terminal: &mut ChatTerminal) -> bool {
        let effects = match event {
            Event::Key(key) => self.state.on_key_at(key, Instant::now()),
            Event::Paste(text) => {
                self.state.on_paste_at(&text, Instant::now());
                Vec::new()
            }
            Event::Mouse(mouse) => match mouse.kind {
                MouseEventKind::ScrollUp => self.state.on_mouse_wheel(true),
                MouseEventKind::ScrollDown => self.state.on_mouse_wheel(false),
                MouseEventKind::Down(MouseButton::Left) => {
                    match self.view.transcript.cell_at(mouse.column, mouse.row) {
                        Some(cell) if self.state.toggle_cell(cell) => Vec::new(),
                        _ => return false,
                    }
                }
                _ => return false,
            },
            Event::Resize(_, _) => Vec::new(),
            Event::FocusGained | Event::FocusLost => {
                self.attention.on_focus(event == Event::FocusGained);
                return false;
            }
        };
        self.apply(effects, terminal);
        true
    }

    fn apply(&mut self, effects: Vec<AppEffect>, terminal: &mut ChatTerminal) {
        for effect in effects {
            match effect {
                AppEffect::Command(command) => {
                    panic_if_asked_to_by_a_test(&command);
                    self.send(command, terminal);
                }
                AppEffect::Copy(text) => self.copy_to_clipboard(&text, terminal),
                AppEffect::SaveRetryPolicy(policy) => self.save_retry_policy(policy),
                AppEffect::SaveNotify(mode) => self.save_notify(mode),
                AppEffect::SwitchProvider(name) => self.switch_provider(&name),
                AppEffect::ListConversations => self.list_conversations(),
                AppEffect::ResumeConversation(summary) => self.resume_conversation(summary),
                AppEffect::NewConversation => self.new_conversation(),
                AppEffect::ListFiles => self.list_files(),
                AppEffect::LoadDiff(request) => self.load_diff(request),
                AppEffect::SavePrompt(prompt) => save_prompt(prompt),
                AppEffect::Suspend => self.suspend(terminal),
                AppEffect::Export { markdown, file } => self.export(markdown, file),
                AppEffect::EditPrompt(text) => self.edit_prompt(&text, terminal),
                AppEffect::RunShell(request) => self.run_shell(request),
                AppEffect::Exit => self.exit = true,
            }
        }
    }

    fn send(&mut self, command: Command, terminal: &mut ChatTerminal) {
        if self.orchestrator.commands.send(command).is_err() {
            self.orchestrator_open = false;
            let effects = self.state.on_orchestrator_gone();
            self.apply(effects, terminal);
        }
    }

    fn on_signal(&mut self, signal: SignalEvent, terminal: &mut ChatTerminal) {
        match signal {
            SignalEvent::Shutdown(signal) => self.leave(Leaving::Signal(signal)),
            // SIGTSTP from outside (`kill -TSTP`; the terminal's Ctrl+Z arrives as a key in
            // raw mode) suspends the same way as Ctrl+Z.
            SignalEvent::JobControl(JobControlEvent::Stop) => {
                if !self.terminal_lost {
                    self.suspend(terminal);
                }
            }
            SignalEvent::JobControl(event) => event.act(|| {}),
        }
    }

    fn on_terminal_lost(&mut self, why: &str) {
        self.leave(Leaving::TerminalLost(why.to_owned()));
    }

    /// The one way out for what ends the chat from outside; the quit key goes the same way
    /// through the reducers (`begin_quit`). The orchestrator is asked to shut down (stopping
    /// the agent), and its `ShutDown` ends the loop, or `SHUTDOWN_LIMIT` does; a second request
    /// to leave does not wait for the agent any longer.
    fn leave(&mut self, why: Leaving) {
        match &why {
            Leaving::Signal(signal) => {
                tracing::info!(signal = signal.name(), "signal received");
                if *signal == ShutdownSignal::Hangup {
                    self.terminal_lost = true;
                }
                if self.state.quitting {
                    crate::process::tree::kill_all_trees_now();
                    self.exit = true;
                    return;
                }
                self.exit_status = exit_status::for_signal(signal.number());
                self.state.show_notice(
                    NoticeLevel::Stopped,
                    &format!("{} received: stopping the agent and leaving", signal.name()),
                );
            }
            Leaving::TerminalLost(why) => {
                tracing::error!(why, "the terminal is gone; leaving");
                self.terminal_lost = true;
                if self.exit_status == exit_status::COMPLETED {
                    self.exit_status = exit_status::FAILED;
                }
                if self.state.quitting {
                    return;
                }
            }
        }
        let effects = self.state.begin_quit();
        // Leaving needs no terminal writes: only the shutdown command, or the exit itself.
        for effect in effects {
            let keep_waiting = match effect {
                AppEffect::Command(command) => self.orchestrator.commands.send(command).is_ok(),
                AppEffect::Exit => false,
                _ => true,
            };
            if !keep_waiting {
                self.exit = true;
            }
        }
    }

    fn on_app_event(&mut self, event: AppEvent) {
        match event {
            AppEvent::ConfigSaved(result) => self.state.on_config_saved(result),
            AppEvent::LogNotSaved(message) => {
                self.state.show_notice(NoticeLevel::Warning, &message)
            }
            AppEvent::DiffLoaded(loaded) => self.state.show_diff(loaded),
            AppEvent::ConversationsListed(conversations) => {
                let listed = WallClock {
                    ms: crate::session_log::now_ms(),
                    at: Instant::now(),
                };
                self.state.show_conversations(
                    conversations,
                    Conversation::id(&self.conversation),
                    listed,
                )
            }
            AppEvent::ConversationReopened(reopened) => self.continue_reopened(*reopened),
            AppEvent::Exported(result) => self.state.on_exported(result),
            AppEvent::ShellDone(output) => self.state.on_shell_done(output),
            AppEvent::FilesListed(files) => {
                // Refreshing the popup can only ask for another listing.
                for effect in self.state.on_files_listed(files) {
                    if effect == AppEffect::ListFiles {
                        self.list_files();
                    }
                }
            }
        }
    }

    /// Reads the snapshots `/diff` shows, off the loop.
    fn load_diff(&mut self, request: crate::app::review::DiffRequest) {
        let events = self.app_events.clone();
        let dir = self.snapshot_dir.clone();
        tokio::task::spawn_blocking(move || {
            let loaded = match dir {
                Some(dir) => crate::snapshot::load_diffs(&dir, &request.turns, request.last).map(
                    |(conversation, last_turn)| crate::app::review::LoadedDiff {
                        conversation,
                        last_turn,
                        turns: request.turns.len(),
                    },
                ),
                None => Err(
                    "this conversation keeps no snapshots (its log could not be created)"
                        .to_owned(),
                ),
            };
            let _ = events.send(AppEvent::DiffLoaded(loaded));
        });
    }

    /// Writes `/export`'s Markdown, off the loop.
    fn export(&mut self, markdown: String, file: Option<String>) {
        let events = self.app_events.clone();
        let conversation = Conversation::id(&self.conversation);
        tokio::task::spawn_blocking(move || {
            let cwd = std::env::current_dir().unwrap_or_default();
            let path = export::export_path(&cwd, file.as_deref(), conversation.as_deref());
            let _ = events.send(AppEvent::Exported(export::write_export(&path, &markdown)));
        });
    }

    /// Walks the working directory for `@` mentions, off the loop.
    fn list_files(&mut self) {
        let events = self.app_events.clone();
        tokio::task::spawn_blocking(move || {
            let files = std::env::current_dir()
                .map(|cwd| mentions::list_files(&cwd, mentions::MAX_FILES))
                .unwrap_or_default();
            let _ = events.send(AppEvent::FilesListed(files));
        });
    }

    /// Ctrl+G: the terminal is the editor's until it closes (the agent goes on meanwhile);
    /// then the screen is drawn whole again.
    fn edit_prompt(&mut self, text: &str, terminal: &mut ChatTerminal) {
        let editor = super::external::chosen_editor();
        if editor.is_none() {
            // Nothing to hand the terminal to.
            self.state
                .on_prompt_edited(super::external::edit_text(None, text));
            return;
        }
        tui::restore_terminal();
        let result = super::external::edit_text(editor, text);
        if let Err(error) = tui::reenter_terminal() {
            self.on_terminal_lost(&error.to_string());
            return;
        }
        if let Err(error) = terminal.clear() {
            tracing::warn!(%error, "clearing the screen after the editor failed");
        }
        self.state.on_prompt_edited(result);
    }

    /// `!command`: run off the loop, in the working directory; the output comes back as an
    /// app event.
    fn run_shell(&mut self, request: crate::app::state::ShellRequest) {
        let events = self.app_events.clone();
        tokio::task::spawn_blocking(move || {
            let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
            let output = super::external::run_shell(request, &cwd, super::external::SHELL_LIMIT);
            let _ = events.send(AppEvent::ShellDone(output));
        });
    }

    /// Ctrl+Z: the terminal is restored, the agents and agentty stop; on `fg` everything comes
    /// back and the screen is drawn whole again.
    fn suspend(&mut self, terminal: &mut ChatTerminal) {
        JobControlEvent::Stop.act(tui::restore_terminal);
        if let Err(error) = tui::reenter_terminal() {
            self.on_terminal_lost(&error.to_string());
            return;
        }
        self.attention.forget_title();
        if let Err(error) = terminal.clear().and_then(|()| terminal.hide_cursor()) {
            tracing::warn!(%error, "clearing the screen after a resume failed");
        }
    }

    /// Sets the window title and calls the user back, as the chat's state asks for.
    fn tell_attention(&mut self, terminal: &mut ChatTerminal) {
        if self.terminal_lost {
            return;
        }
        let effects = self.attention.observe(&self.state);
        if effects.is_empty() {
            return;
        }
        let written = tui::attention::write_effects(
            terminal.backend_mut(),
            &effects,
            self.desktop_notification,
        );
        if let Err(error) = written {
            tracing::warn!(%error, "writing the title or a notification failed");
        }
    }

    /// OSC 52, written by agentty itself (agent text can never produce it: it is sanitised).
    fn copy_to_clipboard(&mut self, text: &str, terminal: &mut ChatTerminal) {
        let encoded = base64::engine::general_purpose::STANDARD.encode(text);
        let backend = terminal.backend_mut();
        let written = write!(backend, "\x1b]52;c;{encoded}\x07").and_then(|_| backend.flush());
        if let Err(error) = written {
            tracing::warn!(%error, "writing the clipboard sequence failed");
        }
    }

    fn save_retry_policy(&mut self, policy: RetryPolicy) {
        let Some(path) = self.state.config_path.clone() else {
            self.state.show_notice(
                NoticeLevel::Warning,
                "No config file location is known: the retry policy applies to this run only",
            );
            return;
        };
        let events = self.app_events.clone();
        tokio::task::spawn_blocking(move || {
            let result = persist_retry_policy(&path, &policy).map(|()| path);
            let _ = events.send(AppEvent::ConfigSaved(result));
        });
    }

    /// Writes the notification mode into the config file, off the loop; only a failure is told
    /// (the change itself was).
    fn save_notify(&mut self, mode: crate::config::NotifyMode) {
        let Some(path) = self.state.config_path.clone() else {
            return;
        };
        let events = self.app_events.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(error) = persist_notify(&path, mode) {
                let _ = events.send(AppEvent::LogNotSaved(format!(
                    "The notification setting is in use for this run, but not saved: {error}"
                )));
            }
        });
    }

    fn switch_provider(&mut self, name: &str) {
        let policy = self.state.retry_policy.clone();
        match self
            .launch
            .orchestrator(name, policy, SessionRef::New, ConversationLog::New)
        {
            Ok(started) => self.replace_orchestrator(started),
            Err(error) => self.state.show_notice(NoticeLevel::Error, &error),
        }
    }

    fn replace_orchestrator(&mut self, started: Started) {
        let previous = std::mem::replace(&mut self.orchestrator, started.handle);
        retire(previous);
        self.conversation = started.conversation;
        self.snapshot_dir = started.snapshot_dir;
        self.orchestrator_open = true;
        self.state
            .on_agent_started(started.steers, started.transport, started.model);
    }

    /// Reads this directory's conversations for the `/resume` picker, off the loop.
    fn list_conversations(&mut self) {
        let events = self.app_events.clone();
        tokio::task::spawn_blocking(move || {
            let cwd = std::env::current_dir().unwrap_or_default();
            let conversations = resume::conversations_here(&sessions_dir(), &cwd);
            let _ = events.send(AppEvent::ConversationsListed(conversations));
        });
    }

    /// The conversation to print the way back to as the chat ends: this one, once it has
    /// turns and its log exists (a new conversation's log appears with its first prompt).
    fn conversation_to_come_back_to(&self) -> Option<String> {
        let conversation = self.conversation.as_ref()?;
        (!self.state.turn_prompts.is_empty() && conversation.log.exists())
            .then(|| conversation.id.clone())
    }

    /// A fresh chat for `provider`: a new transcript (with `notice`) and, started by the caller,
    /// a new orchestrator.
    fn fresh_state(&self, provider: &str, model: Option<String>) -> AppState {
        let mut state = AppState::new(StartupInfo {
            provider: provider.to_owned(),
            model,
            retry_policy: self.state.retry_policy.clone(),
            config_path: self.state.config_path.clone(),
            warnings: Vec::new(),
        });
        state.set_notify(self.state.notify);
        if let Some(installed) = self.state.installed_agents.clone() {
            state.on_agents_checked(installed);
        }
        state
    }

    /// Starts a new conversation on the current provider: empty transcript, new agent
    /// session, and a new log once the first prompt is sent.
    fn new_conversation(&mut self) {
        let provider = self.state.provider.clone();
        let policy = self.state.retry_policy.clone();
        match self
            .launch
            .orchestrator(&provider, policy, SessionRef::New, ConversationLog::New)
        {
            Ok(started) => {
                let mut state = self.fresh_state(&provider, started.model.clone());
                state.show_notice(
                    NoticeLevel::Info,
                    "New conversation: the next prompt starts a fresh agent session (/resume reopens earlier ones)",
                );
                self.replace_state(state);
                self.replace_orchestrator(started);
            }
            Err(error) => self.state.show_notice(NoticeLevel::Error, &error),
        }
    }

    /// Shows a conversation's transcript again and continues its agent session, on the
    /// provider it ran on; one that another agentty writes is shown read-only, and the next
    /// prompt starts a new conversation.
    fn resume_conversation(&mut self, summary: ConversationSummary) {
        // Reading the log (and taking its lock) is disk work: off the loop.
        let events = self.app_events.clone();
        tokio::task::spawn_blocking(move || {
            let reopened = resume::reopen(summary);
            let _ = events.send(AppEvent::ConversationReopened(Box::new(reopened)));
        });
    }

    /// Goes on with the conversation `/resume` reopened (see [`Self::resume_conversation`]).
    fn continue_reopened(
        &mut self,
        reopened: Result<(resume::ResumedConversation, resume::Access), String>,
    ) {
        let (resumed, access) = match reopened {
            Ok(reopened) => reopened,
            Err(message) => {
                self.state.show_notice(NoticeLevel::Warning, &message);
                return;
            }
        };
        let summary = resumed.summary.clone();
        if let resume::Access::ReadOnly { pid } = access {
            if pid == Some(std::process::id()) {
                // This agentty's previous orchestrator has not let go of it yet.
                self.state.show_notice(
                    NoticeLevel::Info,
                    &format!(
                        "Conversation {} is still being closed; try /resume again in a moment",
                        resume::short(&summary.id)
                    ),
                );
                return;
            }
        }
        let (shown, conversation, session) = Reopened::new(resumed, access);
        let policy = self.state.retry_policy.clone();
        match self
            .launch
            .orchestrator(&summary.provider, policy, session, conversation)
        {
            Ok(started) => {
                let mut state = self.fresh_state(&summary.provider, started.model.clone());
                shown.show(&mut state);
                self.replace_state(state);
                self.replace_orchestrator(started);
            }
            Err(error) => self.state.show_notice(NoticeLevel::Error, &error),
        }
    }

    fn replace_state(&mut self, state: AppState) {
        self.state = state;
        // Cell ids restart with the new transcript: no cached layout may carry over.
        self.view = ChatView::default();
    }
}

/// Debug builds only: submitting the prompt named by `AGENTTY_TEST_PANIC_ON_PROMPT` panics, so
/// that the end-to-end tests can check what a crash leaves behind (terminal, agents, log).
fn panic_if_asked_to_by_a_test(command: &Command) {
    #[cfg(debug_assertions)]
    if let Command::Submit(prompt) = command {
        if std::env::var("AGENTTY_TEST_PANIC_ON_PROMPT").as_deref() == Ok(prompt.as_str()) {
            panic!("test panic on prompt {prompt:?}");
        }
    }
    #[cfg(not(debug_assertions))]
    let _ = command;
}

/// Shuts an orchestrator down in the background, draining its events until it is gone.
fn retire(mut orchestrator: OrchestratorHandle) {
    let _ = orchestrator.commands.send(Command::Shutdown);
    tokio::spawn(async move {
        let drained = tokio::time::timeout(SHUTDOWN_LIMIT, async {
            while let Some(event) = orchestrator.events.recv().await {
                if event == OrchestratorEvent::ShutDown {
                    break;
                }
            }
        })
        .await;
        if drained.is_err() {
            tracing::warn!("the previous orchestrator did not shut down in time");
        }
    });
}

/// The prompt history file of this working directory.
fn history_path() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_default();
    history::history_file(&crate::logging::state_dir(), &cwd)
}

/// Appends a sent prompt to the history file, off the loop.
fn save_prompt(prompt: String) {
    let path = history_path();
    tokio::task::spawn_blocking(move || {
        if let Err(error) = history::append(&path, &prompt) {
            tracing::warn!(%error, path = %path.display(), "saving the prompt history failed");
        }
    });
}

/// Writes the retry policy into the config file (keeping the user's comments and other keys).
///
/// A config file that does not exist yet starts as the commented example, so that the user who
/// opens it finds every key explained.
fn persist_retry_policy(path: &Path, policy: &RetryPolicy) -> Result<(), String> {
    if !path.exists() {
        let created = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(path, CONFIG_TEMPLATE));
        if let Err(error) = created {
            return Err(format!("cannot create {}: {error}", path.display()));
        }
    }
    config::save_retry_policy(path, policy).map_err(|error| error.to_string())
}

/// Writes `notify` into the config file (keeping the user's comments and other keys), which
/// starts as the commented example when it does not exist yet.
fn persist_notify(path: &Path, mode: crate::config::NotifyMode) -> Result<(), String> {
    if !path.exists() {
        let created = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(path, CONFIG_TEMPLATE));
        if let Err(error) = created {
            return Err(format!("cannot create {}: {error}", path.display()));
        }
    }
    config::save_notify(path, mode).map_err(|error| error.to_string())
}

/// The commented example config, the start of a config file agentty creates.
const CONFIG_TEMPLATE: &str = include_str!("../../assets/config.example.toml");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_config_file_starts_as_the_commented_template() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agentty/config.toml");
        let policy = RetryPolicy {
            enabled: true,
            max_attempts: 7,
            ..RetryPolicy::default()
        };
        persist_retry_policy(&path, &policy).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# agentty configuration"), "{text}");
        assert!(text.contains("# How each agent CLI is started."), "{text}");
        let loaded = config::load(Some(&path));
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert_eq!(loaded.config.provider_error_auto_retry, policy);
    }
}
