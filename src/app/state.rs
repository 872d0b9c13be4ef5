//! The chat's state and its reducers.
//!
//! `AppState` changes only through `on_orchestrator_event`, `on_key`, `on_paste` and the few
//! helpers below; each returns the effects (commands for the orchestrator, scrolling, clipboard,
//! saving, exit) for the event loop to perform. No IO, no clock: "now" is passed in, so every
//! state can be built from a hand-made event sequence in tests and rendered deterministically.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use serde_json::Value;

use super::activity::{AgentPhase, PhaseTracker, UsageBook};
use super::completion::Popup;
use super::composer::Composer;
use super::conversation_picker::{ConversationPicker, PickerOutcome};
use super::failure_text::{failure_facts, failure_headline, next_step};
use super::keymap::QUIT_CONFIRM_SECS;
use super::list::{scroll_key, ListSelection};
use super::live_thinking::LiveThinking;
use super::mentions::{self, FileIndex};
use super::menu::{parse_slash, Action, Overlay, SettingsDraft};
use super::notice_kind::NoticeKind;
use super::transcript::{
    AssistantCell, CellBody, CellId, DetailSection, NoticeCell, NoticeLevel, RetryCountdown,
    ThoughtCell, ToolCell, ToolStatus, Transcript, UserCell,
};
use crate::config::RetryPolicy;
use crate::orchestrator::{Command, OrchestratorEvent, TurnId, TurnOutcome};
use crate::provider::{StopProgress, PROVIDER_NAMES};
use crate::sanitize::{for_clipboard, untrusted_owned};
use crate::session_log::ConversationSummary;
use crate::stream::{AgentMessage, Failure, StopStage};

/// Lines a mouse wheel notch scrolls.
const WHEEL_LINES: isize = 3;

/// What the event loop must do after a state change.
#[derive(Debug, Clone, PartialEq)]
pub enum AppEffect {
    Command(Command),
    Scroll(ScrollAction),
    /// Put this text on the clipboard (OSC 52).
    Copy(String),
    /// Write the retry policy to the config file.
    SaveRetryPolicy(RetryPolicy),
    /// Replace the orchestrator with one for this provider.
    SwitchProvider(String),
    /// List this directory's conversations for the `/resume` picker.
    ListConversations,
    /// Reopen this conversation: its transcript, provider and agent session.
    ResumeConversation(ConversationSummary),
    /// Start a new conversation (a new log, a new agent session, an empty transcript).
    NewConversation,
    /// List the files under the working directory for `@` mentions (`on_files_listed`).
    ListFiles,
    /// Append this prompt to the history file of the working directory.
    SavePrompt(String),
    /// Suspend agentty and its agents (Ctrl+Z); the terminal is restored until `fg`.
    Suspend,
    /// Leave the event loop (the orchestrator has shut down, or never ran).
    Exit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScrollAction {
    Lines(isize),
    PageUp,
    PageDown,
    Top,
    Bottom,
}

/// What the chat starts with.
#[derive(Debug, Clone, Default)]
pub struct StartupInfo {
    pub provider: String,
    pub model: Option<String>,
    pub retry_policy: RetryPolicy,
    pub config_path: Option<PathBuf>,
    /// Problems found while starting (config warnings, ...), shown as notices.
    pub warnings: Vec<String>,
}

/// The stop the user asked for, as far as the orchestrator reported it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StopState {
    pub progress: StopProgress,
    pub since: Instant,
}

/// The running turn.
#[derive(Debug, Clone)]
pub struct TurnState {
    pub id: TurnId,
    pub started: Instant,
    pub attempt: u32,
    pub max_attempts: u32,
    /// Set once the user asked to stop (before the first progress report arrives).
    pub stop_requested: bool,
    pub stop: Option<StopState>,
    /// The waiting retry: its notice and when the next attempt starts.
    pub retry: Option<(CellId, Instant)>,
    /// The assistant cell deltas go to; closed by anything else in the stream.
    open_assistant: Option<CellId>,
    /// Assistant cells of the current attempt (superseded together).
    attempt_assistant_cells: Vec<CellId>,
    tools: HashMap<String, CellId>,
    /// A notice for how the turn ended is already in the transcript.
    end_shown: bool,
}

/// What the chat is doing, for the status bar.
#[derive(Debug, Clone, PartialEq)]
pub enum Activity {
    Idle,
    /// A turn runs: what its agent is doing, and for how long it has been doing it.
    Working {
        phase: AgentPhase,
        elapsed: Duration,
    },
    Stopping {
        stage: StopStatus,
    },
    Retrying {
        remaining: Duration,
    },
    /// Leaving; the stop stage while the agent is still being stopped.
    Quitting {
        stage: Option<StopStatus>,
    },
}

/// How far the stop the user asked for has got.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StopStatus {
    /// Asked for; the orchestrator has not reported a stage yet.
    Requested,
    Interrupting,
    /// The grace period after the interrupt, this long so far.
    Waiting {
        elapsed: Duration,
    },
    Killing,
    Stopped,
}

impl StopStatus {
    fn at(stop: StopState, now: Instant) -> Self {
        match stop.progress {
            StopProgress::Running => Self::Requested,
            StopProgress::Interrupting => Self::Interrupting,
            StopProgress::Waiting => Self::Waiting {
                elapsed: now.saturating_duration_since(stop.since),
            },
            StopProgress::Killing => Self::Killing,
            StopProgress::Stopped => Self::Stopped,
        }
    }
}

pub struct AppState {
    pub provider: String,
    pub model: Option<String>,
    pub session_id: Option<String>,
    pub transcript: Transcript,
    pub turn: Option<TurnState>,
    pub last_outcome: Option<TurnOutcome>,
    pub queued: Vec<String>,
    /// Token figures of the last turn and of the conversation, and the model the CLI reported.
    pub usage_book: UsageBook,
    /// What the running attempt's agent is doing.
    pub phase: Option<PhaseTracker>,
    pub composer: Composer,
    pub overlay: Option<Overlay>,
    pub retry_policy: RetryPolicy,
    pub config_path: Option<PathBuf>,
    /// A first Ctrl+C on an idle chat; the next one quits.
    pub quit_armed: bool,
    /// When it was armed, if known: it expires after `QUIT_CONFIRM_SECS` (see `on_clock`).
    pub quit_armed_at: Option<Instant>,
    /// The `/` or `@` popup above the input.
    pub popup: Option<Popup>,
    /// The input text for which the user closed the popup with Esc.
    pub popup_dismissed_for: Option<String>,
    /// Files `@` mentions can name.
    pub files: FileIndex,
    /// Why this provider runs (the first-start screen says it).
    pub provider_reason: Option<String>,
    /// The largest useful scroll offset of the help at the size last drawn. Written by the view
    /// (only it knows how the help wraps), read by the keys so End and Up stay in step with what
    /// is shown.
    pub help_scroll_limit: std::cell::Cell<usize>,
    pub quitting: bool,
    /// False once the orchestrator has shut down (or its channel closed).
    pub orchestrator_alive: bool,
    /// New thinking blocks / tool outputs start expanded (after "expand all").
    pub expand_thinking: bool,
    pub expand_tools: bool,
    /// The user asked to retry the last turn: the next turn is that retry.
    retry_asked: bool,
    /// Thinking panes streaming, or waiting for their complete thought.
    pub live_thinking: LiveThinking,
}

impl AppState {
    pub fn new(startup: StartupInfo) -> Self {
        let mut state = Self {
            provider: startup.provider,
            model: startup.model,
            session_id: None,
            transcript: Transcript::default(),
            turn: None,
            last_outcome: None,
            queued: Vec::new(),
            usage_book: UsageBook::default(),
            phase: None,
            composer: Composer::new(),
            overlay: None,
            retry_policy: startup.retry_policy,
            config_path: startup.config_path,
            quit_armed: false,
            quit_armed_at: None,
            popup: None,
            popup_dismissed_for: None,
            files: FileIndex::default(),
            provider_reason: None,
            help_scroll_limit: std::cell::Cell::new(usize::MAX),
            quitting: false,
            orchestrator_alive: true,
            expand_thinking: false,
            expand_tools: false,
            retry_asked: false,
            live_thinking: LiveThinking::default(),
        };
        for warning in startup.warnings {
            state.notice(NoticeLevel::Warning, untrusted_owned(&warning));
        }
        state
    }

    pub fn is_turn_running(&self) -> bool {
        self.turn.is_some()
    }

    pub fn can_retry(&self) -> bool {
        self.turn.is_none()
            && matches!(
                self.last_outcome,
                Some(TurnOutcome::Failed { .. } | TurnOutcome::Cancelled)
            )
    }

    pub fn is_action_enabled(&self, action: Action) -> bool {
        match action {
            Action::RetryLastTurn => self.can_retry(),
            Action::Stop => self.is_turn_running(),
            Action::CopyLastAnswer => self.last_answer().is_some(),
            // Both replace the conversation: not while a turn of this one runs.
            Action::ReopenLastSession | Action::NewSession => !self.is_turn_running(),
            Action::SwitchProvider
            | Action::ToggleThinking
            | Action::ToggleToolOutput
            | Action::Settings
            | Action::ShowLogPath
            | Action::Help
            | Action::Quit => true,
        }
    }

    pub fn activity(&self, now: Instant) -> Activity {
        if self.quitting {
            return Activity::Quitting {
                stage: self
                    .turn
                    .as_ref()
                    .and_then(|turn| turn.stop)
                    .map(|stop| StopStatus::at(stop, now)),
            };
        }
        let Some(turn) = &self.turn else {
            return Activity::Idle;
        };
        if let Some(stop) = turn.stop {
            return Activity::Stopping {
                stage: StopStatus::at(stop, now),
            };
        }
        if turn.stop_requested {
            return Activity::Stopping {
                stage: StopStatus::Requested,
            };
        }
        if let Some((_, deadline)) = turn.retry {
            return Activity::Retrying {
                remaining: deadline.saturating_duration_since(now),
            };
        }
        let (phase, elapsed) = match &self.phase {
            Some(tracker) => {
                let (phase, elapsed) = tracker.current(now);
                (phase.clone(), elapsed)
            }
            None => (
                AgentPhase::Working,
                now.saturating_duration_since(turn.started),
            ),
        };
        Activity::Working { phase, elapsed }
    }

    /// Whether something time-based is on screen (elapsed time, countdown, stop stage), so the
    /// event loop must redraw on a timer; otherwise it sleeps until an event arrives.
    pub fn needs_clock(&self) -> bool {
        self.turn.is_some() || self.quitting || self.quit_armed_at.is_some()
    }

    /// Time-based changes: the quit confirmation expires.
    pub fn on_clock(&mut self, now: Instant) {
        if let Some(armed) = self.quit_armed_at {
            if now.saturating_duration_since(armed) >= Duration::from_secs(QUIT_CONFIRM_SECS) {
                self.quit_armed = false;
                self.quit_armed_at = None;
            }
        }
    }

    /// The most recent answer, whole: every assistant block of the last turn that has one
    /// (text around tool calls included, superseded text not), as the agent wrote it.
    pub fn last_answer(&self) -> Option<String> {
        let cells = self.transcript.cells();
        let answer_cells = |cells: &[super::transcript::Cell]| -> Vec<String> {
            cells
                .iter()
                .filter_map(|cell| match &cell.body {
                    CellBody::Assistant(answer)
                        if !answer.superseded && !answer.text.is_empty() =>
                    {
                        Some(for_clipboard(answer.source()).into_owned())
                    }
                    _ => None,
                })
                .collect()
        };
        // Turns start at user cells; the last turn with an answer is the one to copy.
        let mut end = cells.len();
        loop {
            let start = cells[..end]
                .iter()
                .rposition(|cell| matches!(cell.body, CellBody::User(_)))
                .unwrap_or(0);
            let blocks = answer_cells(&cells[start..end]);
            if !blocks.is_empty() {
                return Some(blocks.join("\n\n"));
            }
            if start == 0 {
                return None;
            }
            end = start;
        }
    }

    /// Adds a notice below everything so far. A streaming answer stays open: its next deltas
    /// go on in the same block (above the notice), so a notice never cuts an answer in two.
    fn notice(&mut self, level: NoticeLevel, message: impl Into<String>) -> CellId {
        self.transcript
            .push(CellBody::Notice(NoticeCell::new(level, message)))
    }

    fn close_assistant(&mut self) {
        if let Some(turn) = self.turn.as_mut() {
            turn.open_assistant = None;
        }
    }

    // ----- orchestrator events -----

    pub fn on_orchestrator_event(
        &mut self,
        event: OrchestratorEvent,
        now: Instant,
    ) -> Vec<AppEffect> {
        match event {
            OrchestratorEvent::TurnStarted { turn, prompt } => {
                self.transcript.push(CellBody::User(UserCell {
                    text: untrusted_owned(&prompt),
                    retry: std::mem::take(&mut self.retry_asked),
                }));
                self.phase = Some(PhaseTracker::new(now));
                self.turn = Some(TurnState {
                    id: turn,
                    started: now,
                    attempt: 1,
                    max_attempts: 1,
                    stop_requested: false,
                    stop: None,
                    retry: None,
                    open_assistant: None,
                    attempt_assistant_cells: Vec::new(),
                    tools: HashMap::new(),
                    end_shown: false,
                });
            }
            OrchestratorEvent::AttemptStarted {
                turn,
                attempt,
                max_attempts,
            } => {
                if self.turn.as_ref().is_some_and(|running| running.id == turn) {
                    self.phase = Some(PhaseTracker::new(now));
                }
                self.on_attempt_started(turn, attempt, max_attempts);
            }
            OrchestratorEvent::Message {
                turn,
                attempt: _,
                message,
            } => {
                if self.turn.as_ref().is_some_and(|running| running.id == turn) {
                    self.on_agent_message(message, now);
                }
            }
            OrchestratorEvent::StopProgress { turn, progress } => {
                if let Some(running) = self.turn.as_mut().filter(|running| running.id == turn) {
                    running.stop = match progress {
                        StopProgress::Running => None,
                        _ if running.stop.map(|stop| stop.progress) == Some(progress) => {
                            running.stop
                        }
                        _ => Some(StopState {
                            progress,
                            since: now,
                        }),
                    };
                }
            }
            OrchestratorEvent::RetryScheduled {
                turn,
                attempt,
                max_attempts,
                delay_ms,
                reason,
            } => {
                if self.turn.as_ref().is_some_and(|running| running.id == turn) {
                    let deadline = now + Duration::from_millis(delay_ms);
                    let mut notice = NoticeCell::new(NoticeLevel::Retry, String::new());
                    notice.countdown = Some(RetryCountdown {
                        deadline,
                        attempt,
                        max_attempts,
                        reason: untrusted_owned(&reason),
                    });
                    self.close_assistant();
                    let id = self.transcript.push(CellBody::Notice(notice));
                    if let Some(running) = self.turn.as_mut() {
                        running.retry = Some((id, deadline));
                    }
                }
            }
            OrchestratorEvent::RetryCancelled { turn } => {
                if let Some(running) = self.turn.as_mut().filter(|running| running.id == turn) {
                    if let Some((id, _)) = running.retry.take() {
                        running.end_shown = true;
                        self.transcript.update(id, |body| {
                            if let CellBody::Notice(notice) = body {
                                if let Some(countdown) = notice.countdown.take() {
                                    notice.level = NoticeLevel::Stopped;
                                    notice.message = format!(
                                        "Retry cancelled: attempt {} of {} was not started",
                                        countdown.attempt, countdown.max_attempts
                                    );
                                }
                            }
                        });
                    }
                }
            }
            OrchestratorEvent::TurnEnded { turn, outcome } => {
                if self.turn.as_ref().is_some_and(|running| running.id == turn) {
                    let cancelled = outcome == TurnOutcome::Cancelled;
                    self.on_turn_ended(outcome, now);
                    if cancelled {
                        return self.take_back_queue();
                    }
                }
            }
            OrchestratorEvent::QueueChanged { queued } => {
                self.queued = queued
                    .iter()
                    .map(|prompt| untrusted_owned(prompt))
                    .collect();
            }
            OrchestratorEvent::SessionChanged { session_id } => {
                self.session_id = session_id.map(|id| untrusted_owned(&id));
            }
            OrchestratorEvent::Notice {
                turn,
                kind,
                message,
            } => {
                if self.turn.as_ref().is_some_and(|running| running.id == turn) {
                    self.on_agent_message(AgentMessage::Notice { kind, message }, now);
                }
            }
            OrchestratorEvent::ShutDown => return self.on_orchestrator_gone(),
        }
        Vec::new()
    }

    /// The orchestrator is gone (it shut down, or its channel closed).
    pub fn on_orchestrator_gone(&mut self) -> Vec<AppEffect> {
        let was_alive = self.orchestrator_alive;
        self.orchestrator_alive = false;
        if self.quitting {
            return vec![AppEffect::Exit];
        }
        if was_alive {
            self.notice(
                NoticeLevel::Error,
                "The agent runner stopped; prompts cannot be sent. Quit with Ctrl+C twice.",
            );
        }
        Vec::new()
    }

    fn on_attempt_started(&mut self, turn: TurnId, attempt: u32, max_attempts: u32) {
        let Some(running) = self.turn.as_mut().filter(|running| running.id == turn) else {
            return;
        };
        running.attempt = attempt;
        running.max_attempts = max_attempts;
        running.stop = None;
        running.stop_requested = false;
        running.open_assistant = None;
        running.tools.clear();
        self.live_thinking.settle(&mut self.transcript);
        let earlier_text = std::mem::take(&mut running.attempt_assistant_cells);
        let retry = running.retry.take();
        if attempt > 1 {
            // The failed attempt's partial answer is replaced by this attempt's.
            for id in earlier_text {
                self.transcript.update(id, |body| {
                    if let CellBody::Assistant(answer) = body {
                        answer.superseded = true;
                    }
                });
            }
        }
        if let Some((id, _)) = retry {
            self.transcript.update(id, |body| {
                if let CellBody::Notice(notice) = body {
                    if let Some(countdown) = notice.countdown.take() {
                        notice.message = format!(
                            "Retried: attempt {} of {} · {}",
                            countdown.attempt, countdown.max_attempts, countdown.reason
                        );
                    }
                }
            });
        }
    }

    fn on_agent_message(&mut self, message: AgentMessage, now: Instant) {
        self.live_thinking.observe(&mut self.transcript, &message);
        self.usage_book.observe(&message);
        if let Some(phase) = self.phase.as_mut() {
            phase.observe(&message, now);
        }
        match message {
            AgentMessage::SessionStarted { session_id, .. } => {
                if let Some(id) = session_id {
                    self.session_id = Some(untrusted_owned(&id));
                }
            }
            AgentMessage::SessionResumed { session_id, .. } => {
                self.session_id = Some(untrusted_owned(&session_id));
            }
            AgentMessage::Assistant { delta } => self.append_assistant(&delta),
            AgentMessage::Thinking { delta } => {
                if !self.live_thinking.is_open() {
                    self.close_assistant();
                }
                self.live_thinking.push_delta(
                    &mut self.transcript,
                    &untrusted_owned(&delta),
                    self.expand_thinking,
                );
            }
            AgentMessage::Thought { text } if self.live_thinking.is_waiting() => {
                self.live_thinking
                    .complete(&mut self.transcript, untrusted_owned(&text));
            }
            AgentMessage::Thought { text } => {
                let cell = CellBody::Thought(ThoughtCell::new(
                    untrusted_owned(&text),
                    self.expand_thinking,
                ));
                // Thinking is released after the message it belongs to: show it before that
                // message's text, where it was thought.
                match self.turn.as_ref().and_then(|turn| turn.open_assistant) {
                    Some(answer) => {
                        self.transcript.insert_before(answer, cell);
                    }
                    None => {
                        self.transcript.push(cell);
                    }
                }
            }
            AgentMessage::ToolCall { id, name, input } => {
                self.close_assistant();
                let cell = self.transcript.push(CellBody::Tool(ToolCell {
                    call_id: untrusted_owned(&id),
                    name: untrusted_owned(&name),
                    summary: summarize_tool_input(&input),
                    status: ToolStatus::Running { since: now },
                    output: String::new(),
                    expanded: self.expand_tools,
                }));
                if let Some(turn) = self.turn.as_mut() {
                    turn.tools.insert(id, cell);
                }
            }
            AgentMessage::ToolUpdate { id, output } => {
                self.update_tool(&id, |tool| tool.output = untrusted_owned(&output));
            }
            AgentMessage::ToolCompleted { id, output } => {
                self.update_tool(&id, |tool| {
                    // The final output is authoritative, unless it is empty and some streamed.
                    if !output.is_empty() || tool.output.is_empty() {
                        tool.output = untrusted_owned(&output);
                    }
                    tool.status = ToolStatus::Done {
                        elapsed: running_for(tool.status, now),
                    };
                });
            }
            AgentMessage::ToolFailed { id, error } => {
                self.update_tool(&id, |tool| {
                    // What the tool had shown stays; the failure is added to it.
                    let error = untrusted_owned(&error);
                    if tool.output.is_empty() || tool.output.ends_with(error.as_str()) {
                        tool.output = error;
                    } else if !error.is_empty() {
                        tool.output.push('\n');
                        tool.output.push_str(&error);
                    }
                    tool.status = ToolStatus::Failed {
                        elapsed: running_for(tool.status, now),
                    };
                });
            }
            AgentMessage::Completed { stop_reason, .. } => {
                self.finish_running_tools(now);
                if matches!(stop_reason.as_str(), "length" | "max_tokens") {
                    self.notice(
                        NoticeLevel::Warning,
                        format!(
                            "The answer was cut off: the agent reached its output limit ({})",
                            untrusted_owned(&stop_reason)
                        ),
                    );
                }
                self.close_assistant();
            }
            AgentMessage::Failed(failure) => {
                self.finish_running_tools(now);
                self.push_failure(&failure);
            }
            AgentMessage::Cancelled {
                stop_stage,
                elapsed_ms,
            } => {
                self.finish_running_tools(now);
                self.close_assistant();
                let stage = match stop_stage {
                    StopStage::Interrupt => "at the interrupt",
                    StopStage::Grace => "during the grace period",
                    StopStage::Kill => "by the kill",
                };
                self.notice(
                    NoticeLevel::Stopped,
                    format!(
                        "Stopped {stage} after {:.1} s · what was shown stays",
                        elapsed_ms as f64 / 1000.0
                    ),
                );
                if let Some(turn) = self.turn.as_mut() {
                    turn.end_shown = true;
                }
            }
            AgentMessage::Notice { kind, message } => {
                let message = untrusted_owned(&message);
                match NoticeKind::from_wire(&kind) {
                    NoticeKind::AgentRetry => {
                        self.supersede_attempt_text();
                        self.notice(
                            NoticeLevel::Info,
                            format!("The agent retried on its own: {message}"),
                        );
                    }
                    NoticeKind::Superseded => {
                        self.supersede_attempt_text();
                        self.notice(
                            NoticeLevel::Info,
                            format!("The partial answer above was replaced: {message}"),
                        );
                    }
                    NoticeKind::Warning | NoticeKind::FreshSession => {
                        self.notice(NoticeLevel::Warning, message);
                    }
                    NoticeKind::Other(other) => {
                        self.notice(
                            NoticeLevel::Info,
                            format!("{}: {message}", untrusted_owned(&other)),
                        );
                    }
                }
            }
            // The orchestrator's own RetryScheduled event carries this; ignore the echo.
            AgentMessage::RetryScheduled { .. } => {}
        }
    }

    fn append_assistant(&mut self, delta: &str) {
        let shown = untrusted_owned(delta);
        if shown.is_empty() {
            return;
        }
        let open = self.turn.as_ref().and_then(|turn| turn.open_assistant);
        match open {
            Some(id) => {
                self.transcript.update(id, |body| {
                    if let CellBody::Assistant(answer) = body {
                        answer.append(delta, &shown);
                    }
                });
            }
            None => {
                let mut answer = AssistantCell::default();
                answer.append(delta, &shown);
                let id = self.transcript.push(CellBody::Assistant(answer));
                if let Some(turn) = self.turn.as_mut() {
                    turn.open_assistant = Some(id);
                    turn.attempt_assistant_cells.push(id);
                }
            }
        }
    }

    fn supersede_attempt_text(&mut self) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        turn.open_assistant = None;
        for id in std::mem::take(&mut turn.attempt_assistant_cells) {
            self.transcript.update(id, |body| {
                if let CellBody::Assistant(answer) = body {
                    answer.superseded = true;
                }
            });
        }
    }

    fn update_tool(&mut self, call_id: &str, change: impl FnOnce(&mut ToolCell)) {
        let Some(cell) = self
            .turn
            .as_ref()
            .and_then(|turn| turn.tools.get(call_id).copied())
        else {
            return;
        };
        self.transcript.update(cell, |body| {
            if let CellBody::Tool(tool) = body {
                change(tool);
            }
        });
    }

    fn finish_running_tools(&mut self, now: Instant) {
        let Some(turn) = self.turn.as_ref() else {
            return;
        };
        let cells: Vec<CellId> = turn.tools.values().copied().collect();
        for cell in cells {
            let running = self
                .transcript
                .get(cell)
                .is_some_and(|cell| cell.body.is_live());
            if running {
                self.transcript.update(cell, |body| {
                    if let CellBody::Tool(tool) = body {
                        tool.status = ToolStatus::Interrupted {
                            elapsed: running_for(tool.status, now),
                        };
                    }
                });
            }
        }
    }

    fn push_failure(&mut self, failure: &Failure) {
        let mut facts = failure_facts(failure);
        let mut sections = Vec::new();
        let stderr: Vec<String> = untrusted_owned(&failure.stderr)
            .lines()
            .map(str::to_owned)
            .collect();
        if !stderr.is_empty() {
            facts.push(plural(stderr.len(), "stderr line"));
            sections.push(DetailSection {
                title: "stderr (last lines)".to_owned(),
                lines: stderr,
            });
        }
        if !failure.invalid_output_lines.is_empty() {
            facts.push(plural(
                failure.invalid_output_lines.len(),
                "invalid output line",
            ));
            sections.push(DetailSection {
                title: "output lines that did not parse".to_owned(),
                lines: failure
                    .invalid_output_lines
                    .iter()
                    .flat_map(|line| {
                        untrusted_owned(line)
                            .lines()
                            .map(str::to_owned)
                            .collect::<Vec<_>>()
                    })
                    .collect(),
            });
        }
        let mut notice = NoticeCell::new(
            NoticeLevel::Error,
            failure_headline(
                &untrusted_owned(&failure.reason),
                &untrusted_owned(&failure.message),
            ),
        );
        if sections.is_empty() {
            if !facts.is_empty() {
                notice
                    .message
                    .push_str(&format!(" · {}", facts.join(" · ")));
            }
        } else {
            notice.details_summary = facts.join(" · ");
            notice.details = sections;
        }
        let (attempt, max_attempts) = self
            .turn
            .as_ref()
            .map_or((1, 1), |turn| (turn.attempt, turn.max_attempts));
        if let Some(step) = next_step(failure, &self.retry_policy, attempt, max_attempts) {
            notice.message.push_str(&format!(" · {step}"));
        }
        self.close_assistant();
        self.transcript.push(CellBody::Notice(notice));
        if let Some(turn) = self.turn.as_mut() {
            turn.end_shown = true;
        }
    }

    fn on_turn_ended(&mut self, outcome: TurnOutcome, now: Instant) {
        self.finish_running_tools(now);
        self.live_thinking.settle(&mut self.transcript);
        let end_shown = self.turn.as_ref().is_some_and(|turn| turn.end_shown);
        if let Some((id, _)) = self.turn.as_ref().and_then(|turn| turn.retry) {
            self.transcript.update(id, |body| {
                if let CellBody::Notice(notice) = body {
                    notice.countdown = None;
                    notice.message = "Retry abandoned".to_owned();
                }
            });
        }
        if !end_shown {
            match &outcome {
                TurnOutcome::Completed => {}
                TurnOutcome::Failed { reason, message } => {
                    self.push_failure(&Failure {
                        reason: reason.clone(),
                        message: message.clone(),
                        ..Failure::default()
                    });
                }
                TurnOutcome::Cancelled => {
                    self.notice(NoticeLevel::Stopped, "Stopped · what was shown stays");
                }
            }
        }
        self.turn = None;
        self.last_outcome = Some(outcome);
    }

    // ----- keys -----

    /// A key, with no clock: a quit confirmation then stays armed until the next key.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<AppEffect> {
        self.handle_key(key, None)
    }

    /// A key at `now` (the event loop's entry point: a quit confirmation expires).
    pub fn on_key_at(&mut self, key: KeyEvent, now: Instant) -> Vec<AppEffect> {
        self.handle_key(key, Some(now))
    }

    fn handle_key(&mut self, key: KeyEvent, now: Option<Instant>) -> Vec<AppEffect> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return self.on_ctrl_c(now);
        }
        self.quit_armed = false;
        self.quit_armed_at = None;
        if ctrl && key.code == KeyCode::Char('z') {
            return vec![AppEffect::Suspend];
        }
        if self.overlay.is_some() {
            return self.on_overlay_key(key);
        }
        if let Some(effects) = self.on_popup_key(key) {
            return effects;
        }
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let effects = match key.code {
            KeyCode::Char('x') if ctrl => self.open_overlay(Overlay::Menu { selected: 0 }),
            KeyCode::F(2) => self.open_overlay(Overlay::Menu { selected: 0 }),
            KeyCode::F(1) => self.open_overlay(Overlay::Help { scroll: 0 }),
            KeyCode::Char('r') if ctrl => self.open_overlay(Overlay::HistorySearch {
                query: String::new(),
                selected: 0,
            }),
            KeyCode::Char('t') if ctrl => self.perform(Action::ToggleThinking, None),
            KeyCode::Char('o') if ctrl => self.perform(Action::ToggleToolOutput, None),
            KeyCode::Esc => {
                if self.is_turn_running() {
                    self.request_stop()
                } else {
                    Vec::new()
                }
            }
            KeyCode::Up if alt => self.pull_back_last_queued(),
            KeyCode::PageUp => vec![AppEffect::Scroll(ScrollAction::PageUp)],
            KeyCode::PageDown => vec![AppEffect::Scroll(ScrollAction::PageDown)],
            KeyCode::Home if ctrl || self.composer.is_empty() => {
                vec![AppEffect::Scroll(ScrollAction::Top)]
            }
            KeyCode::End if ctrl || self.composer.is_empty() => {
                vec![AppEffect::Scroll(ScrollAction::Bottom)]
            }
            KeyCode::Enter if shift || alt => {
                self.composer.insert_newline();
                Vec::new()
            }
            KeyCode::Enter if !ctrl => self.submit(),
            KeyCode::Up if !ctrl && self.composer.browsing_allowed() => {
                self.composer.recall_older();
                Vec::new()
            }
            KeyCode::Down if !ctrl && !alt && self.composer.browsing_allowed() => {
                self.composer.recall_newer();
                Vec::new()
            }
            // Tab with no popup: nothing to complete (no tab characters in prompts).
            KeyCode::Tab | KeyCode::BackTab => Vec::new(),
            _ => {
                self.composer.input(key);
                Vec::new()
            }
        };
        let mut effects = effects;
        if self.overlay.is_none() {
            effects.extend(self.refresh_popup());
        }
        effects
    }

    pub fn on_paste(&mut self, text: &str) {
        if self.overlay.is_some() {
            return;
        }
        // Pasted text is the user's own, but a stray escape sequence in it would still reach
        // the terminal when the input is drawn.
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        self.composer.insert_str(&untrusted_owned(&text));
        // A pasted `@path` or `/command` is not being typed: no popup for it.
        self.popup = None;
        self.popup_dismissed_for = Some(self.composer.text());
    }

    pub fn on_mouse_wheel(&mut self, up: bool) -> Vec<AppEffect> {
        vec![AppEffect::Scroll(ScrollAction::Lines(if up {
            -WHEEL_LINES
        } else {
            WHEEL_LINES
        }))]
    }

    /// Toggles a cell's collapsed/expanded form (a click on it).
    pub fn toggle_cell(&mut self, id: CellId) -> bool {
        let expandable = self
            .transcript
            .get(id)
            .is_some_and(|cell| cell.body.is_expandable());
        if !expandable {
            return false;
        }
        self.transcript.restyle(id, |body| match body {
            CellBody::Thought(thought) => thought.expanded = !thought.expanded,
            CellBody::Tool(tool) => tool.expanded = !tool.expanded,
            CellBody::Notice(notice) => notice.expanded = !notice.expanded,
            CellBody::User(_) | CellBody::Assistant(_) => {}
        });
        true
    }

    fn on_ctrl_c(&mut self, now: Option<Instant>) -> Vec<AppEffect> {
        self.overlay = None;
        self.popup = None;
        if self.quitting {
            // Already leaving and asked again: stop waiting for the agent (the loop kills it).
            return vec![AppEffect::Exit];
        }
        if !self.composer.is_empty() {
            // The draft goes, but Up brings it back.
            self.quit_armed = false;
            self.quit_armed_at = None;
            let draft = self.composer.take();
            self.composer.remember(&draft);
            return Vec::new();
        }
        if self.is_turn_running() {
            self.quit_armed = false;
            self.quit_armed_at = None;
            return self.request_stop();
        }
        if self.quit_armed {
            return self.begin_quit();
        }
        self.quit_armed = true;
        self.quit_armed_at = now;
        Vec::new()
    }

    /// After a stopped turn the orchestrator keeps the queue waiting: its prompts come back into
    /// the editor (before any draft), for the user to edit, send or drop.
    fn take_back_queue(&mut self) -> Vec<AppEffect> {
        if self.quitting || self.queued.is_empty() {
            return Vec::new();
        }
        let queued = std::mem::take(&mut self.queued);
        let mut text = queued.join("\n");
        let draft = self.composer.text();
        if !draft.trim().is_empty() {
            text.push('\n');
            text.push_str(&draft);
        }
        self.composer.set_text(&text);
        self.notice(
            NoticeLevel::Info,
            format!(
                "{} back in the editor: Enter sends, Ctrl+C clears",
                plural(queued.len(), "queued prompt")
            ),
        );
        queued
            .iter()
            .map(|_| AppEffect::Command(Command::RemoveQueued(0)))
            .collect()
    }

    /// Alt+Up: the last queued prompt back into the editor (before any draft).
    fn pull_back_last_queued(&mut self) -> Vec<AppEffect> {
        let Some(prompt) = self.queued.pop() else {
            return Vec::new();
        };
        let index = self.queued.len();
        let draft = self.composer.text();
        let text = if draft.trim().is_empty() {
            prompt
        } else {
            format!("{prompt}\n{draft}")
        };
        self.composer.set_text(&text);
        vec![AppEffect::Command(Command::RemoveQueued(index))]
    }

    fn request_stop(&mut self) -> Vec<AppEffect> {
        if let Some(turn) = self.turn.as_mut() {
            turn.stop_requested = true;
        }
        vec![AppEffect::Command(Command::Stop)]
    }

    /// Starts leaving: the orchestrator stops the agent and shuts down, then the loop exits.
    pub fn begin_quit(&mut self) -> Vec<AppEffect> {
        self.overlay = None;
        if !self.orchestrator_alive {
            self.quitting = true;
            return vec![AppEffect::Exit];
        }
        if self.quitting {
            return Vec::new();
        }
        self.quitting = true;
        vec![AppEffect::Command(Command::Shutdown)]
    }

    fn open_overlay(&mut self, overlay: Overlay) -> Vec<AppEffect> {
        self.overlay = Some(overlay);
        Vec::new()
    }

    fn submit(&mut self) -> Vec<AppEffect> {
        let text = self.composer.text();
        if text.trim().is_empty() {
            // Nothing to send; the blanks must not prefix the next prompt either.
            self.composer.take();
            return Vec::new();
        }
        if text.starts_with('/') && !text.contains('\n') {
            self.composer.take();
            return match parse_slash(&text) {
                Some((action, argument)) => self.perform(action, argument),
                None => {
                    let commands: Vec<&str> =
                        Action::ALL.iter().map(|action| action.slash()).collect();
                    self.notice(
                        NoticeLevel::Warning,
                        format!(
                            "Unknown command {}; commands: {}",
                            untrusted_owned(text.split_whitespace().next().unwrap_or("")),
                            commands.join(" ")
                        ),
                    );
                    Vec::new()
                }
            };
        }
        if !self.orchestrator_alive {
            self.notice(
                NoticeLevel::Error,
                "The agent runner is not running; the prompt was not sent.",
            );
            return Vec::new();
        }
        self.composer.take();
        self.composer.remember(&text);
        let prompt = mentions::resolve_mentions(&text, self.files.files());
        vec![
            AppEffect::Command(Command::Submit(prompt)),
            AppEffect::SavePrompt(text),
        ]
    }

    /// Runs a menu action or `/` command.
    pub fn perform(&mut self, action: Action, argument: Option<String>) -> Vec<AppEffect> {
        self.overlay = None;
        if !self.is_action_enabled(action) {
            let why = match action {
                Action::RetryLastTurn => "Retry is available after a failed or stopped turn.",
                Action::Stop => "No turn is running.",
                Action::CopyLastAnswer => "There is no answer to copy yet.",
                Action::ReopenLastSession | Action::NewSession => {
                    "Stop the running turn (Esc) before leaving this conversation."
                }
                _ => "Not available now.",
            };
            self.notice(NoticeLevel::Info, why);
            return Vec::new();
        }
        match action {
            Action::RetryLastTurn => {
                self.retry_asked = true;
                vec![AppEffect::Command(Command::RetryLastTurn)]
            }
            Action::Stop => self.request_stop(),
            Action::NewSession => vec![AppEffect::NewConversation],
            Action::ReopenLastSession => vec![AppEffect::ListConversations],
            Action::SwitchProvider => match argument {
                Some(name) => self.switch_provider(&name),
                None => self.open_overlay(Overlay::provider_picker(&self.provider)),
            },
            Action::ToggleThinking => {
                self.expand_thinking = !self.expand_thinking;
                let expand = self.expand_thinking;
                self.transcript.update_all(|body| match body {
                    CellBody::Thought(thought) if thought.expanded != expand => {
                        thought.expanded = expand;
                        true
                    }
                    _ => false,
                });
                Vec::new()
            }
            Action::ToggleToolOutput => {
                self.expand_tools = !self.expand_tools;
                let expand = self.expand_tools;
                self.transcript.update_all(|body| match body {
                    CellBody::Tool(tool) if tool.expanded != expand => {
                        tool.expanded = expand;
                        true
                    }
                    CellBody::Notice(notice)
                        if !notice.details.is_empty() && notice.expanded != expand =>
                    {
                        notice.expanded = expand;
                        true
                    }
                    _ => false,
                });
                Vec::new()
            }
            Action::CopyLastAnswer => {
                let answer = self.last_answer().unwrap_or_default();
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "Copied the last answer ({}) to the clipboard",
                        plural(answer.chars().count(), "character")
                    ),
                );
                vec![AppEffect::Copy(answer)]
            }
            Action::Settings => self.open_overlay(Overlay::Settings(SettingsDraft::new(
                self.retry_policy.clone(),
            ))),
            Action::ShowLogPath => {
                let path = crate::logging::current_log_file();
                self.notice(
                    NoticeLevel::Info,
                    untrusted_owned(&format!("Log file: {}", path.display())),
                );
                Vec::new()
            }
            Action::Help => self.open_overlay(Overlay::Help { scroll: 0 }),
            Action::Quit => self.begin_quit(),
        }
    }

    fn switch_provider(&mut self, name: &str) -> Vec<AppEffect> {
        if !PROVIDER_NAMES.contains(&name) {
            self.notice(
                NoticeLevel::Warning,
                format!(
                    "Unknown provider {}; choose one of {}",
                    untrusted_owned(name),
                    PROVIDER_NAMES.join(", ")
                ),
            );
            return Vec::new();
        }
        if self.is_turn_running() {
            self.notice(
                NoticeLevel::Info,
                "Stop the running turn before switching provider.",
            );
            return Vec::new();
        }
        self.provider = name.to_owned();
        self.session_id = None;
        self.usage_book = UsageBook::default();
        self.queued.clear();
        self.last_outcome = None;
        self.notice(
            NoticeLevel::Info,
            format!("Switched to {name}: the next prompt starts a new session"),
        );
        vec![AppEffect::SwitchProvider(name.to_owned())]
    }

    fn on_overlay_key(&mut self, key: KeyEvent) -> Vec<AppEffect> {
        let Some(overlay) = self.overlay.take() else {
            return Vec::new();
        };
        let up = matches!(key.code, KeyCode::Up | KeyCode::BackTab)
            || (key.code == KeyCode::Char('p') && key.modifiers.contains(KeyModifiers::CONTROL));
        let down = matches!(key.code, KeyCode::Down | KeyCode::Tab)
            || (key.code == KeyCode::Char('n') && key.modifiers.contains(KeyModifiers::CONTROL));
        match overlay {
            Overlay::Menu { selected } => {
                let count = Action::ALL.len();
                let mut list = ListSelection::at(selected);
                match key.code {
                    KeyCode::Esc => {}
                    KeyCode::Enter => {
                        return self.perform(Action::ALL[selected.min(count - 1)], None)
                    }
                    _ => {
                        list.on_key(key, count);
                        self.overlay = Some(Overlay::Menu {
                            selected: list.selected,
                        });
                    }
                }
            }
            Overlay::Help { scroll } => {
                if !matches!(
                    key.code,
                    KeyCode::Esc | KeyCode::Enter | KeyCode::F(1) | KeyCode::Char('q')
                ) {
                    let limit = self
                        .help_scroll_limit
                        .get()
                        .min(crate::app::keymap::KEYMAP.len() * 4);
                    let scroll = scroll.min(limit);
                    let scroll = scroll_key(key, scroll, limit + 1).unwrap_or(scroll);
                    self.overlay = Some(Overlay::Help { scroll });
                }
            }
            Overlay::ProviderPicker { selected } => {
                let count = PROVIDER_NAMES.len();
                let mut list = ListSelection::at(selected);
                match key.code {
                    KeyCode::Esc => {}
                    KeyCode::Enter => {
                        let name = PROVIDER_NAMES[selected.min(count - 1)];
                        if name == self.provider {
                            return Vec::new();
                        }
                        return self.switch_provider(name);
                    }
                    _ => {
                        list.on_key(key, count);
                        self.overlay = Some(Overlay::ProviderPicker {
                            selected: list.selected,
                        });
                    }
                }
            }
            Overlay::HistorySearch {
                mut query,
                selected,
            } => {
                let matches = self.history_matches(&query);
                let mut list = ListSelection::at(selected);
                match key.code {
                    KeyCode::Esc => {}
                    KeyCode::Enter | KeyCode::Tab => {
                        if let Some(prompt) = matches.get(selected) {
                            self.composer.set_text(prompt);
                        }
                    }
                    KeyCode::Char('r') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                        // Ctrl+R again: the next older match, as in a shell.
                        list.selected = (selected + 1).min(matches.len().saturating_sub(1));
                        self.overlay = Some(Overlay::HistorySearch {
                            query,
                            selected: list.selected,
                        });
                    }
                    KeyCode::Backspace => {
                        query.pop();
                        self.overlay = Some(Overlay::HistorySearch { query, selected: 0 });
                    }
                    KeyCode::Char(ch)
                        if !key
                            .modifiers
                            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
                    {
                        query.push(ch);
                        self.overlay = Some(Overlay::HistorySearch { query, selected: 0 });
                    }
                    _ => {
                        list.on_key(key, matches.len());
                        self.overlay = Some(Overlay::HistorySearch {
                            query,
                            selected: list.selected,
                        });
                    }
                }
            }
            Overlay::Conversations(mut picker) => match picker.on_key(key) {
                PickerOutcome::Open => self.overlay = Some(Overlay::Conversations(picker)),
                PickerOutcome::Close => {}
                PickerOutcome::Chosen(summary) => {
                    if picker.current.as_deref() == Some(summary.id.as_str()) {
                        self.notice(NoticeLevel::Info, "That is the conversation you are in.");
                        return Vec::new();
                    }
                    return vec![AppEffect::ResumeConversation(summary)];
                }
            },
            Overlay::Settings(mut draft) => match key.code {
                KeyCode::Esc if draft.typing.is_some() => {
                    draft.typing = None;
                    draft.problem = None;
                    self.overlay = Some(Overlay::Settings(draft));
                }
                KeyCode::Esc => {}
                KeyCode::Enter => {
                    if draft.typing.is_some() {
                        // Enter ends the typing; a second Enter saves.
                        draft.commit_typing();
                        self.overlay = Some(Overlay::Settings(draft));
                        return Vec::new();
                    }
                    if let Err(problems) = draft.policy.validate() {
                        draft.problem = Some(
                            problems
                                .iter()
                                .map(ToString::to_string)
                                .collect::<Vec<_>>()
                                .join("; "),
                        );
                        self.overlay = Some(Overlay::Settings(draft));
                        return Vec::new();
                    }
                    let policy = draft.policy;
                    self.retry_policy = policy.clone();
                    let command = AppEffect::Command(Command::SetRetryPolicy(policy.clone()));
                    if self.config_path.is_none() {
                        // One notice per save: here, or from the save's result.
                        self.notice(
                            NoticeLevel::Info,
                            "Retry policy changed for this run (no config file location is known)",
                        );
                        return vec![command];
                    }
                    return vec![command, AppEffect::SaveRetryPolicy(policy)];
                }
                KeyCode::Backspace if draft.typing.is_some() => {
                    draft.backspace();
                    self.overlay = Some(Overlay::Settings(draft));
                }
                KeyCode::Char(ch) if draft.type_char(ch) => {
                    self.overlay = Some(Overlay::Settings(draft));
                }
                KeyCode::Left | KeyCode::Char('-') => {
                    draft.typing = None;
                    draft.adjust(false);
                    self.overlay = Some(Overlay::Settings(draft));
                }
                KeyCode::Right | KeyCode::Char('+') | KeyCode::Char(' ') => {
                    draft.typing = None;
                    draft.adjust(true);
                    self.overlay = Some(Overlay::Settings(draft));
                }
                _ => {
                    if (up || down) && draft.commit_typing() {
                        draft.move_selection(down);
                    }
                    self.overlay = Some(Overlay::Settings(draft));
                }
            },
        }
        Vec::new()
    }

    /// Opens the `/resume` picker on these conversations (`current`: the one the chat is in).
    pub fn show_conversations(
        &mut self,
        conversations: Vec<ConversationSummary>,
        current: Option<String>,
    ) {
        self.overlay = Some(Overlay::Conversations(ConversationPicker::new(
            conversations,
            current,
        )));
    }

    /// Earlier prompts matching `query` (fuzzy), best first; all of them newest first when the
    /// query is empty.
    pub fn history_matches(&self, query: &str) -> Vec<String> {
        let newest_first: Vec<String> = self.composer.history().iter().rev().cloned().collect();
        if query.is_empty() {
            return newest_first;
        }
        mentions::rank(query, &newest_first, usize::MAX)
    }

    /// Shows the outcome of saving the config (from the event loop's background save).
    pub fn on_config_saved(&mut self, result: Result<PathBuf, String>) {
        match result {
            Ok(path) => {
                self.notice(
                    NoticeLevel::Info,
                    untrusted_owned(&format!(
                        "Retry policy saved to {} (in use now)",
                        path.display()
                    )),
                );
            }
            Err(error) => {
                self.notice(
                    NoticeLevel::Warning,
                    untrusted_owned(&format!(
                        "Retry policy in use for this run, but not saved: {error}"
                    )),
                );
            }
        }
    }

    /// Shows a message from the event loop (signals, provider errors, ...).
    pub fn show_notice(&mut self, level: NoticeLevel, message: &str) {
        self.notice(level, untrusted_owned(message));
    }
}

fn running_for(status: ToolStatus, now: Instant) -> Duration {
    match status {
        ToolStatus::Running { since } => now.saturating_duration_since(since),
        ToolStatus::Done { elapsed }
        | ToolStatus::Failed { elapsed }
        | ToolStatus::Interrupted { elapsed } => elapsed,
    }
}

fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// One line describing a tool call's arguments: the command, path or query when there is one.
pub fn summarize_tool_input(input: &Value) -> String {
    const KEYS: [&str; 10] = [
        "command",
        "cmd",
        "file_path",
        "path",
        "pattern",
        "query",
        "url",
        "description",
        "prompt",
        "content",
    ];
    let summary = match input {
        Value::Object(map) => KEYS
            .iter()
            .find_map(|key| map.get(*key).and_then(Value::as_str))
            .map(str::to_owned)
            .unwrap_or_else(|| input.to_string()),
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let mut lines = summary.lines();
    let first = lines.next().unwrap_or("").trim().to_owned();
    let first = if lines.next().is_some() {
        format!("{first} …")
    } else {
        first
    };
    // Long summaries are cut when drawn; keep the stored one bounded too.
    let bounded: String = first.chars().take(400).collect();
    untrusted_owned(&bounded)
}
