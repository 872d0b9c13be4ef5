//! The chat's state and its reducers.
//!
//! `AppState` changes only through `on_orchestrator_event` (`agent_events`), `on_key` and
//! `on_paste` (`keys`, `overlay_keys`), `perform` (`actions`) and the few helpers below; each
//! returns the effects (commands for the orchestrator, scrolling, clipboard, saving, exit) for
//! the event loop to perform. No IO, no clock: "now" is passed in, so every
//! state can be built from a hand-made event sequence in tests and rendered deterministically.

mod actions;
mod activity_status;
mod agent_events;
mod agent_settings;
mod answer_events;
mod attempt_events;
mod effects;
mod external;
mod images;
mod keys;
mod notice_events;
mod overlay_keys;
mod permission_events;
mod permission_keys;
mod plan_events;
mod popup_keys;
mod prompts;
mod queue_take_back;
mod restore_events;
mod review;
mod rewind;
#[cfg(test)]
mod rewind_tests;
mod tool_events;
mod turn_end;
mod undo_confirm;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::time::Instant;

use super::action::Action;
use super::activity::{PhaseTracker, UsageBook};
use super::completion::Popup;
use super::composer::Composer;
use super::conversation_picker::{ConversationPicker, WallClock};
#[cfg(doc)]
use super::keymap::{DOUBLE_PRESS, QUIT_CONFIRM};
use super::live_thinking::LiveThinking;
use super::mentions::{self, FileIndex};
use super::menu::Overlay;
use super::permission::PermissionPrompt;
pub use super::scroll::ScrollAction;
use super::scroll::{TranscriptLayout, TranscriptScroll};
use super::transcript::{
    CellBody, CellId, InertText, NoticeCell, NoticeLevel, PlanCell, Transcript,
};
use crate::app::agent_status::ShownAgentStatus;
use crate::config::RetryPolicy;
use crate::orchestrator::{TurnId, TurnOutcome};
use crate::provider::AgentQueue;
use crate::provider::{AgentSetting, StopProgress};
use crate::sanitize::for_clipboard;
use crate::session_log::ConversationSummary;
use crate::stream::PermissionOption;

pub(crate) use activity_status::{Activity, StopStatus};
pub use effects::AppEffect;
pub use external::{ShellOutput, ShellRequest};
pub use images::ImageRequest;

/// The agent's own queue (a `provider::AgentQueue`) as the chat shows it: inert.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShownAgentQueue {
    /// Steering messages waiting for the agent's next step.
    pub steering: Vec<InertText>,
    /// Follow-up messages waiting for the turn's end.
    pub(crate) follow_up: Vec<InertText>,
}

impl From<&AgentQueue> for ShownAgentQueue {
    fn from(queue: &AgentQueue) -> Self {
        let shown = |items: &[String]| items.iter().map(|item| InertText::new(item)).collect();
        Self {
            steering: shown(&queue.steering),
            follow_up: shown(&queue.follow_up),
        }
    }
}

/// Where `/copy` put the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Copied {
    /// The system clipboard, through this tool (it said it worked).
    ByTool(&'static str),
    /// The terminal's clipboard (OSC 52), which never confirms; why no tool did it.
    ToTerminal { why: String },
    /// Nowhere: why.
    Failed(String),
}

/// What the frame just drawn laid out that keys depend on: only the view knows how text wraps,
/// so the chat hands this in after each draw (`AppState::on_drawn`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drawn {
    /// The largest useful scroll offset of the open help.
    pub(crate) help_scroll_limit: Option<usize>,
    /// Where the transcript's top was laid out (`None` when the frame had no room for it).
    pub(crate) transcript: Option<TranscriptLayout>,
    /// The rows the open `/diff` shows, a page of it.
    pub(crate) diff_page: Option<usize>,
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
pub(crate) struct StopState {
    pub(crate) progress: StopProgress,
    pub(crate) since: Instant,
}

/// Where a tool call is shown: its cell, and inside it the path to the call through the
/// sub-agent calls it nests under (empty for the agent's own call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolSlot {
    pub(crate) cell: CellId,
    pub(crate) path: Vec<usize>,
}

/// The running turn.
#[derive(Debug, Clone)]
pub struct TurnState {
    pub(crate) id: TurnId,
    pub(crate) started: Instant,
    pub(crate) attempt: u32,
    pub(crate) max_attempts: u32,
    /// Set once the user asked to stop (before the first progress report arrives).
    pub stop_requested: bool,
    pub(crate) stop: Option<StopState>,
    /// The waiting retry: its notice and when the next attempt starts.
    pub(crate) retry: Option<(CellId, Instant)>,
    /// The assistant cell deltas go to; closed by anything else in the stream.
    open_assistant: Option<CellId>,
    /// Assistant cells of the current attempt (superseded together).
    attempt_assistant_cells: Vec<CellId>,
    /// Where each tool call of the attempt is shown.
    tools: HashMap<String, ToolSlot>,
    /// The agent's plan while the turn runs (pinned above the input); the transcript gets it
    /// when the turn ends.
    pub(crate) plan: Option<PlanCell>,
    /// The turn's permission requests by id (to read a later `permission.resolved`).
    permissions: HashMap<String, AskedPermission>,
    /// The last request rejected, as asked ("Allow execute: touch x"), while the agent has done
    /// nothing since: if the turn ends now, the rejection ended it.
    last_rejection: Option<String>,
    /// A notice for how the turn ended is already in the transcript.
    end_shown: bool,
    /// The last failed attempt's notice, which the orchestrator's verdict completes.
    failure_notice: Option<CellId>,
    /// A compaction of the agent's conversation (`/compact`), not a prompt's turn.
    pub(crate) compaction: bool,
}

impl TurnState {
    /// Turn `id`, starting `now` with its first attempt.
    fn starting(id: TurnId, now: Instant) -> Self {
        Self {
            id,
            started: now,
            attempt: 1,
            max_attempts: 1,
            stop_requested: false,
            stop: None,
            retry: None,
            open_assistant: None,
            attempt_assistant_cells: Vec::new(),
            tools: HashMap::new(),
            plan: None,
            permissions: HashMap::new(),
            last_rejection: None,
            end_shown: false,
            failure_notice: None,
            compaction: false,
        }
    }
}

/// A permission request of the running turn, as asked.
#[derive(Debug, Clone)]
struct AskedPermission {
    /// The cell that shows it and its outcome.
    cell: CellId,
    /// The options it offered.
    options: Vec<PermissionOption>,
    /// The tool call it is for, which waits for the answer.
    tool_call_id: Option<String>,
}

pub struct AppState {
    pub provider: String,
    pub(crate) model: Option<String>,
    /// The agent session, as the agent named it (made inert where it arrives).
    pub(crate) session_id: Option<InertText>,
    pub transcript: Transcript,
    /// Where the transcript view looks (laid out by each frame, see `on_drawn`).
    pub transcript_scroll: TranscriptScroll,
    pub turn: Option<TurnState>,
    /// A prompt was sent while no turn ran and the orchestrator has not said it started yet:
    /// Esc in that window still stops it (`Some(true)`: Esc was pressed), for a loop that is
    /// slow to read the orchestrator's events must not lose the user's stop.
    pub(crate) prompt_in_flight: Option<bool>,
    pub(crate) last_outcome: Option<TurnOutcome>,
    pub queued: Vec<InertText>,
    /// Token figures of the last turn and of the conversation, and the model the CLI reported.
    pub(crate) usage_book: UsageBook,
    /// What the running attempt's agent is doing.
    pub(crate) phase: Option<PhaseTracker>,
    pub composer: Composer,
    pub overlay: Option<Overlay>,
    pub retry_policy: RetryPolicy,
    pub(crate) config_path: Option<PathBuf>,
    /// A Ctrl+C was just pressed: the next one quits (whatever the chat is doing).
    pub quit_armed: bool,
    /// Until when, if known: [`QUIT_CONFIRM`] after a Ctrl+C on an idle chat,
    /// [`DOUBLE_PRESS`] after one that cleared the prompt or stopped the turn (see `on_clock`).
    pub(crate) quit_armed_until: Option<Instant>,
    /// The `/` or `@` popup above the input.
    pub popup: Option<Popup>,
    /// The input text for which the user closed the popup with Esc.
    pub(crate) popup_dismissed_for: Option<String>,
    /// Files `@` mentions can name.
    pub(crate) files: FileIndex,
    /// The `@` list was cut: how many paths there were (at least).
    pub(crate) files_cut_from: Option<usize>,
    /// Why this provider runs (the first-start screen says it).
    pub provider_reason: Option<InertText>,
    pub quitting: bool,
    /// False once the orchestrator has shut down (or its channel closed).
    pub(crate) orchestrator_alive: bool,
    /// New thinking blocks / tool outputs start expanded (after "expand all").
    pub(crate) expand_thinking: bool,
    pub(crate) expand_tools: bool,
    /// The plan pinned above the input shows only its header (the user folded it).
    pub(crate) plan_folded: bool,
    /// The user asked to retry the last turn: the next turn is that retry.
    retry_asked: bool,
    /// Thinking panes streaming, or waiting for their complete thought.
    pub(crate) live_thinking: LiveThinking,
    /// The provider hands messages to a running turn: Enter steers, Alt+Enter follows up
    /// (pi's RPC transport). Without it, a prompt typed during a turn waits in the queue.
    pub agent_steers: bool,
    /// How the provider talks to its agent (`None` before it is started).
    pub agent_transport: Option<crate::config::Transport>,
    /// The agent's own queue of steering / follow-up messages, as it reports it.
    pub agent_queue: ShownAgentQueue,
    /// The agent's model, thinking level, session cost and tokens, as it reports them.
    pub agent_status: ShownAgentStatus,
    /// Permission requests waiting for the user's answer, oldest first; the first is the open
    /// prompt, which takes the keys once the user gives it the focus (after an overlay the
    /// user opened).
    pub permission_prompts: VecDeque<PermissionPrompt>,
    /// The change of the agent's settings the user asked for and the agent has not confirmed.
    pub(crate) pending_setting: Option<AgentSetting>,
    /// The conversation's turns that changed files, oldest first (`/diff`, `/undo`).
    pub(crate) changed_turns: Vec<super::review::ChangedTurn>,
    /// The prompts the conversation sent, oldest first (`/rewind`).
    pub(crate) turn_prompts: Vec<super::rewind::PromptRecord>,
    /// The first Esc of an Esc Esc on an empty, idle composer (opens `/rewind`).
    pub(crate) esc_at: Option<Instant>,
    /// The prompt of the rewind asked for: back into the composer once it is done.
    pub(crate) rewinding_prompt: Option<(TurnId, String)>,
    /// How agentty calls the user back when the terminal is not focused (`app::attention`).
    pub notify: crate::config::NotifyMode,
    /// The real agent CLIs that are installed, when that was checked (the chat does at start):
    /// the welcome offers to install only the others, `/provider` marks them.
    pub(crate) installed_agents: Option<Vec<String>>,
    /// The last rewind, while it can be undone (until the next prompt).
    pub(crate) last_rewind: Option<super::rewind::LastRewind>,
    /// What the provider's transport lets agentty do (as each agent starts): images, how an
    /// "always" answer is taken back.
    pub(crate) agent_capabilities: crate::provider::Capabilities,
    /// What the working tree's snapshot is busy with (the status bar says so, never "idle").
    pub(crate) snapshot_busy: Option<crate::orchestrator::SnapshotBusy>,
    /// `/undo` was asked while the last turn's changes were being summed up: it runs then.
    pub(crate) undo_after_snapshot: bool,
    /// The colours chosen (`theme` in the config, `/settings`).
    pub theme: crate::config::Theme,
    /// The background the terminal announced (`COLORFGBG`), for `theme = "auto"`.
    pub(crate) terminal_background: Option<crate::config::Background>,
}

impl AppState {
    pub fn new(startup: StartupInfo) -> Self {
        let mut state = Self {
            provider: startup.provider,
            model: startup.model,
            session_id: None,
            transcript: Transcript::default(),
            transcript_scroll: TranscriptScroll::default(),
            prompt_in_flight: None,
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
            quit_armed_until: None,
            popup: None,
            popup_dismissed_for: None,
            files: FileIndex::default(),
            files_cut_from: None,
            provider_reason: None,
            quitting: false,
            orchestrator_alive: true,
            expand_thinking: false,
            expand_tools: false,
            plan_folded: false,
            retry_asked: false,
            live_thinking: LiveThinking::default(),
            agent_steers: false,
            agent_transport: None,
            agent_queue: ShownAgentQueue::default(),
            agent_status: ShownAgentStatus::default(),
            permission_prompts: VecDeque::new(),
            pending_setting: None,
            changed_turns: Vec::new(),
            turn_prompts: Vec::new(),
            esc_at: None,
            rewinding_prompt: None,
            notify: crate::config::NotifyMode::default(),
            installed_agents: None,
            last_rewind: None,
            agent_capabilities: crate::provider::Capabilities::ONE_SHOT,
            snapshot_busy: None,
            undo_after_snapshot: false,
            theme: crate::config::Theme::default(),
            terminal_background: None,
        };
        for warning in startup.warnings {
            state.notice(NoticeLevel::Warning, warning);
        }
        state
    }

    pub(crate) fn is_turn_running(&self) -> bool {
        self.turn.is_some()
    }

    /// The agent's plan while its turn runs: pinned above the input.
    pub fn live_plan(&self) -> Option<&PlanCell> {
        self.turn.as_ref().and_then(|turn| turn.plan.as_ref())
    }

    /// The open permission prompt: the first waiting request.
    pub fn permission_prompt(&self) -> Option<&PermissionPrompt> {
        self.permission_prompts.front()
    }

    /// Whether the open prompt has the keys (the user gave it the focus).
    pub(crate) fn permission_focused(&self) -> bool {
        self.permission_prompt()
            .is_some_and(|prompt| prompt.focused)
    }

    pub(crate) fn can_retry(&self) -> bool {
        self.turn.is_none()
            && matches!(
                self.last_outcome,
                Some(TurnOutcome::Failed { .. } | TurnOutcome::Cancelled)
            )
    }

    /// Whether the real agent CLI `name` is installed; `None` when not known (not checked, or
    /// not one of them).
    pub(crate) fn agent_installed(&self, name: &str) -> Option<bool> {
        let installed = self.installed_agents.as_ref()?;
        crate::provider::INSTALL_COMMANDS
            .iter()
            .any(|(cli, _)| *cli == name)
            .then(|| installed.iter().any(|agent| agent == name))
    }

    /// Enter steers the running turn (Alt+Enter follows up): the provider can, and the turn is
    /// a prompt's (a compaction takes no steering: what is typed meanwhile waits in the queue).
    pub(crate) fn can_steer(&self) -> bool {
        self.agent_steers && self.turn.as_ref().is_some_and(|turn| !turn.compaction)
    }

    pub(crate) fn is_action_enabled(&self, action: Action) -> bool {
        match action {
            Action::RetryLastTurn => self.can_retry(),
            Action::Stop => self.is_turn_running(),
            Action::CopyLastAnswer => self.last_answer().is_some(),
            Action::Diff => !self.changed_turns.is_empty(),
            Action::Undo => {
                !self.is_turn_running() && (self.undoable_turn().is_some() || self.summing_up())
            }
            Action::Compact => !self.is_turn_running(),
            Action::Rewind => {
                !self.is_turn_running()
                    && (!self.turn_prompts.is_empty() || self.last_rewind.is_some())
            }
            Action::Export => self
                .transcript
                .cells()
                .iter()
                .any(|cell| matches!(cell.body, CellBody::User(_))),
            // Both replace the conversation: not while a turn of this one runs.
            Action::ReopenLastSession | Action::NewSession => !self.is_turn_running(),
            Action::SwitchProvider
            | Action::ToggleThinking
            | Action::ToggleToolOutput
            | Action::TogglePlan
            | Action::Settings
            | Action::StandingPermissions
            | Action::ChooseModel
            | Action::ShowLogPath
            | Action::Help
            | Action::Quit => true,
        }
    }

    /// Whether something time-based is on screen (elapsed time, countdown, stop stage), so the
    /// event loop must redraw on a timer; otherwise it sleeps until an event arrives.
    pub fn needs_clock(&self) -> bool {
        self.turn.is_some() || self.quitting || self.quit_armed_until.is_some()
    }

    /// Time-based changes: the quit confirmation expires.
    pub fn on_clock(&mut self, now: Instant) {
        if self.quit_armed_until.is_some_and(|until| now >= until) {
            self.quit_armed = false;
            self.quit_armed_until = None;
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
    /// How agentty calls the user back when the terminal is not focused, from the config.
    pub(crate) fn set_notify(&mut self, notify: crate::config::NotifyMode) {
        self.notify = notify;
    }

    /// The colours chosen in the config, and what the terminal said about its background.
    pub fn set_theme(
        &mut self,
        theme: crate::config::Theme,
        terminal: Option<crate::config::Background>,
    ) {
        self.theme = theme;
        self.terminal_background = terminal;
    }

    /// The background the view draws for.
    pub fn background(&self) -> crate::config::Background {
        self.theme.background(self.terminal_background)
    }

    fn notice(&mut self, level: NoticeLevel, message: impl Into<InertText>) -> CellId {
        self.transcript
            .push(CellBody::Notice(NoticeCell::new(level, message).into()))
    }

    fn close_assistant(&mut self) {
        if let Some(turn) = self.turn.as_mut() {
            turn.open_assistant = None;
        }
    }

    /// Opens the `/resume` picker on these conversations (`current`: the one the chat is in).
    pub(crate) fn show_conversations(
        &mut self,
        conversations: Vec<ConversationSummary>,
        current: Option<String>,
        listed: WallClock,
    ) {
        self.overlay = Some(Overlay::Conversations(ConversationPicker::new(
            conversations,
            current,
            listed,
        )));
    }

    /// A frame was drawn: the transcript keeps where its top was laid out, the overlays that
    /// scroll learn how far they can.
    pub fn on_drawn(&mut self, drawn: Drawn) {
        if let Some(layout) = drawn.transcript {
            self.transcript_scroll.laid_out(layout);
        }
        match (
            self.overlay.as_mut(),
            drawn.help_scroll_limit,
            drawn.diff_page,
        ) {
            (Some(Overlay::Help(help)), Some(limit), _) => help.laid_out(limit),
            (Some(Overlay::Diff(diff)), _, Some(page)) => diff.laid_out(page),
            _ => {}
        }
    }

    /// Scrolls the transcript (keys, the mouse wheel).
    pub fn scroll_transcript(&mut self, action: ScrollAction) {
        self.transcript_scroll.scroll(&self.transcript, action);
    }

    /// Earlier prompts matching `query` (fuzzy), each once, best first; all of them newest
    /// first when the query is empty.
    pub(crate) fn history_matches(&self, query: &str) -> Vec<String> {
        let newest_first =
            crate::app::history_search::distinct_newest_first(self.composer.history());
        if query.is_empty() {
            return newest_first;
        }
        mentions::rank(query, &newest_first, usize::MAX)
    }

    /// Shows the outcome of saving the config (from the event loop's background save).
    /// `what` (a setting the user changed, in use already) was saved to the config file, or
    /// not: every setting says so the same way.
    pub(crate) fn on_config_saved(&mut self, what: &str, result: Result<PathBuf, String>) {
        match result {
            Ok(path) => {
                self.notice(
                    NoticeLevel::Info,
                    format!("{what} saved to {} (in use now)", path.display()),
                );
            }
            Err(error) => {
                self.notice(
                    NoticeLevel::Warning,
                    format!("{what} in use for this run, but not saved: {error}"),
                );
            }
        }
    }

    /// Shows a message from the event loop (signals, provider errors, ...).
    pub(crate) fn show_notice(&mut self, level: NoticeLevel, message: &str) {
        self.notice(level, message);
    }
}

fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}
