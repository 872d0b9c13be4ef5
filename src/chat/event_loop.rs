//! The event loop: one `select!` over terminal input, orchestrator events, app events, signals
//! and the frame timer (pattern from codex-rs/tui's app.rs). It only loops: the effects the
//! reducers return are carried out in `effects`, conversations are started in `conversation`.
//!
//! Invariants: the loop never blocks (disk writes go to `spawn_blocking`, the agent lives on the
//! orchestrator's task); it draws only when something changed, at most every 16 ms, and keeps a
//! 4 Hz timer only while something time-based is on screen; errors are shown and logged, never
//! unwound out of it. Every way out (quit, SIGTERM/SIGHUP/SIGINT/SIGQUIT, a broken terminal) asks the
//! orchestrator to shut down (which stops the agent with the three-stage stop) and waits for it,
//! bounded by `SHUTDOWN_LIMIT`, after which any agent tree still alive is killed.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{Event, EventStream, MouseButton, MouseEventKind};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::time::sleep_until;

use crate::app::menu::Overlay;
use crate::app::state::{AppEffect, AppState};
use crate::app::transcript::NoticeLevel;
use crate::orchestrator::exit_status;
use crate::orchestrator::{OrchestratorEvent, OrchestratorHandle};
use crate::signals::{
    JobControlEvent, ShutdownSignal, SignalEvent, SignalHandler, SignalHandlerKind,
};
use crate::tui::{self, ChatTerminal, FrameScheduler};
use crate::view::{self, ChatView};

use super::app_event::AppEvent;
use super::conversation::{Conversation, Launch};
// Longest wait for the orchestrator to stop the agent when leaving.
use crate::process::timings::SHUTDOWN_LIMIT;

/// Redraw period while something time-based is visible.
const CLOCK_PERIOD: Duration = Duration::from_millis(250);
/// The longest the loop spends on queued agent events before it looks at keys and frames.
const EVENT_BATCH: Duration = Duration::from_millis(4);
/// Consecutive draw failures after which the terminal is considered gone.
const MAX_DRAW_FAILURES: u32 = 3;

/// Why the chat leaves: every way out is one of these, and all of them go through
/// [`ChatLoop::leave`], so the shutdown (the turn stopped, the log flushed, the terminal
/// restored, the way back printed) is written once.
pub(super) enum Exit {
    /// The quit key: Ctrl+C twice, Ctrl+D, `/quit` (`AppEffect::Leave`).
    QuitKey,
    /// SIGINT, SIGTERM, SIGHUP or SIGQUIT.
    Signal(ShutdownSignal),
    /// The terminal cannot be read or drawn on any more.
    TerminalLost(String),
}

impl Exit {
    /// How the log names it.
    fn reason(&self) -> &'static str {
        match self {
            Exit::QuitKey => "quit key",
            Exit::Signal(signal) => signal.name(),
            Exit::TerminalLost(_) => "terminal lost",
        }
    }

    /// Asked again while leaving: stop waiting for the agent. A lost terminal asks nothing
    /// of the kind: the agent still gets its stop.
    fn hurries(&self) -> bool {
        !matches!(self, Exit::TerminalLost(_))
    }
}

pub(super) struct ChatLoop {
    pub(super) state: AppState,
    pub(super) view: ChatView,
    pub(super) frames: FrameScheduler,
    pub(super) orchestrator: OrchestratorHandle,
    pub(super) orchestrator_open: bool,
    pub(super) app_events: mpsc::UnboundedSender<AppEvent>,
    pub(super) app_inbox: mpsc::UnboundedReceiver<AppEvent>,
    pub(super) launch: Launch,
    /// When leaving gives up waiting for the orchestrator.
    pub(super) shutdown_deadline: Option<Instant>,
    /// The terminal is gone (SIGHUP, read errors): do not draw.
    pub(super) terminal_lost: bool,
    pub(super) draw_failures: u32,
    pub(super) first_frame_logged: bool,
    /// The conversation this chat is in.
    pub(super) conversation: Option<Conversation>,
    /// Where its snapshots are kept.
    pub(super) snapshot_dir: Option<PathBuf>,
    pub(super) exit_status: i32,
    pub(super) exit: bool,
    /// The window title and the call backs when the terminal is not focused.
    pub(super) attention: crate::app::attention::Attention,
    pub(super) desktop_notification: Option<tui::attention::DesktopNotification>,
}

impl ChatLoop {
    pub(super) fn new(
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
    pub(super) async fn run(
        &mut self,
        terminal: &mut ChatTerminal,
        first_prompt: Option<String>,
    ) -> i32 {
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
            Event::Key(key) => {
                let diff_open = matches!(self.state.overlay, Some(Overlay::Diff(_)));
                let effects = self.state.on_key_at(key, Instant::now());
                if diff_open && !matches!(self.state.overlay, Some(Overlay::Diff(_))) {
                    // A big diff's many small allocations stay with the process unless the
                    // allocator is asked to give the freed pages back.
                    crate::background::release_freed_memory();
                }
                effects
            }
            Event::Paste(text) => self.state.on_paste(&text),
            Event::Mouse(mouse) => match mouse.kind {
                MouseEventKind::ScrollUp => self.state.on_mouse_wheel(true),
                MouseEventKind::ScrollDown => self.state.on_mouse_wheel(false),
                MouseEventKind::Down(MouseButton::Left)
                    if self
                        .view
                        .plan_area
                        .contains((mouse.column, mouse.row).into()) =>
                {
                    self.state.toggle_plan()
                }
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

    fn on_signal(&mut self, signal: SignalEvent, terminal: &mut ChatTerminal) {
        match signal {
            SignalEvent::Shutdown(signal) => self.leave(Exit::Signal(signal)),
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

    pub(super) fn on_terminal_lost(&mut self, why: &str) {
        self.leave(Exit::TerminalLost(why.to_owned()));
    }

    /// The one way out, whatever ends the chat (see [`Exit`]). The orchestrator is asked to
    /// shut down (stopping the agent and flushing the log), and its `ShutDown` ends the loop,
    /// or `SHUTDOWN_LIMIT` does; asked again by the user or a signal, it does not wait for the
    /// agent any longer. `chat::run` restores the terminal and prints the way back after it.
    pub(super) fn leave(&mut self, exit: Exit) {
        if self.state.quitting {
            tracing::info!(
                reason = exit.reason(),
                "asked to leave again on the way out"
            );
        } else {
            tracing::info!(reason = exit.reason(), "leaving");
        }
        // What the way out says about the terminal holds even while already leaving.
        match &exit {
            Exit::Signal(ShutdownSignal::Hangup) => self.terminal_lost = true,
            Exit::TerminalLost(why) => {
                tracing::error!(why, "the terminal is gone");
                self.terminal_lost = true;
                if self.exit_status == exit_status::COMPLETED {
                    self.exit_status = exit_status::FAILED;
                }
            }
            Exit::QuitKey | Exit::Signal(_) => {}
        }
        if self.state.quitting {
            if exit.hurries() {
                crate::process::tree::kill_all_trees_now();
                self.exit = true;
            }
            return;
        }
        if let Exit::Signal(signal) = &exit {
            self.exit_status = exit_status::for_signal(signal.number());
            self.state.show_notice(
                NoticeLevel::Stopped,
                &format!("{} received: stopping the agent and leaving", signal.name()),
            );
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

    /// The conversation to print the way back to as the chat ends: this one, whenever its log
    /// exists (a new conversation's log appears with its first prompt), also when every prompt
    /// was rewound (the rewind can be undone after `--resume`).
    pub(super) fn conversation_to_come_back_to(&self) -> Option<String> {
        let conversation = self.conversation.as_ref()?;
        conversation.log.exists().then(|| conversation.id.clone())
    }
}
