//! Performs the orchestrator's effects on a background task: the only IO the orchestrator does.
//!
//! One `select!` loop over the UI's commands, the live attempt's stream and stop progress, and
//! the retry timer. Each input goes through the pure [`Machine`]; its effects are carried out
//! here in order. At most one attempt stream is read at a time, and it is dropped right after
//! its terminal message (the runner's stream ends there anyway), so nothing of a finished
//! attempt reaches the machine twice. A stream that ends without a terminal message (a
//! provider bug) gets a synthesised `terminal.failed`, so a turn can never hang on it.
//!
//! The task ends after `Command::Shutdown` once the running agent has stopped; closing the
//! command channel or dropping the event receiver counts as a shutdown.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::fsm::{Effect, Input, Machine};
use super::{Command, OrchestratorEvent, Recorder, TurnId};
use crate::config::RetryPolicy;
use crate::provider::checkpoint::CheckpointStore;
use crate::provider::{settings_overridden, AgentQueue, AgentSetting, AgentStatus};
use crate::provider::{
    AgentStream, AttemptRequest, Provider, SessionCheckpoint, SessionRef, StopControl, StopProgress,
};
use crate::snapshot::{SnapshotReply, SnapshotWorker};
use crate::stream::{AgentMessage, Failure, FailureReason, NoticeKind};

/// What the orchestrator starts with.
pub struct OrchestratorOptions {
    pub provider: Arc<dyn Provider>,
    pub policy: RetryPolicy,
    /// The agent session the first turn continues (`SessionRef::New` for a fresh one).
    pub session: SessionRef,
    /// The agent's working directory (`None`: agentty's own).
    pub cwd: Option<PathBuf>,
    /// The demo scenario, passed to every attempt.
    pub scenario: Option<String>,
    /// Where every event and the agents' raw lines are recorded (`None`: nowhere).
    pub session_log: Option<Arc<dyn Recorder>>,
    /// The first turn's id (a resumed conversation numbers its turns on from its log).
    pub first_turn: TurnId,
    /// The settings the conversation runs with (the config's start, then what the user chose
    /// in a resumed conversation): every attempt carries them, with the user's later choices.
    pub settings: Vec<AgentSetting>,
    /// Where the working tree's snapshots go (`None`: none are taken, no `turn.changes`).
    pub snapshots: Option<crate::snapshot::SnapshotSetup>,
    /// The first turn waits (at most [`BASELINE_WAIT`]) for the baseline snapshot: for a prompt
    /// sent as the conversation opens (`agentty run`). The chat takes the baseline while the
    /// user types and never holds a prompt (nor a stop) for it.
    pub baseline_before_first_turn: bool,
}

impl OrchestratorOptions {
    /// The default retry policy, a new session, agentty's working directory, no scenario.
    pub fn new(provider: Arc<dyn Provider>) -> Self {
        Self {
            provider,
            policy: RetryPolicy::default(),
            session: SessionRef::New,
            cwd: None,
            scenario: None,
            session_log: None,
            first_turn: 1,
            settings: Vec::new(),
            snapshots: None,
            baseline_before_first_turn: false,
        }
    }
}

/// The UI's (or headless runner's) end of the orchestrator.
pub struct OrchestratorHandle {
    pub commands: mpsc::UnboundedSender<Command>,
    pub events: mpsc::Receiver<OrchestratorEvent>,
}

/// Events that may wait for the UI (or headless runner) to take them. When it falls behind (an
/// agent that floods), the driver stops reading the agent until it catches up, so the agent
/// waits on its pipe instead of agentty's memory growing; commands (a stop) are still taken.
const EVENTS_IN_FLIGHT: usize = 256;

/// Starts the orchestrator on a tokio task (call it from within a tokio runtime).
pub fn spawn_orchestrator(options: OrchestratorOptions) -> OrchestratorHandle {
    let (commands, command_rx) = mpsc::unbounded_channel();
    let (event_tx, events) = mpsc::channel(EVENTS_IN_FLIGHT);
    tokio::spawn(Driver::new(options, event_tx).run(command_rx));
    OrchestratorHandle { commands, events }
}

struct LiveAttempt {
    turn: TurnId,
    attempt: u32,
    stream: AgentStream,
    stop: StopControl,
    progress: watch::Receiver<StopProgress>,
    progress_open: bool,
}

#[derive(Debug, Clone, Copy)]
struct PendingRetry {
    turn: TurnId,
    attempt: u32,
    due: Instant,
}

/// What the driver set aside until the snapshot after a turn is taken: the next turn starts on
/// a settled tree (its agent cannot write before the last turn's snapshot is done), and the
/// stream does not end before that turn's `turn.changes`.
struct Deferred {
    effects: VecDeque<Effect>,
}

/// The snapshot thread and what the driver knows of it.
struct Snapshots {
    worker: SnapshotWorker,
    /// The turn whose "before" snapshot was asked for and whose "after" is still to come.
    open_turn: Option<TurnId>,
    /// The turn whose "after" snapshot was asked for and has not come back.
    awaiting_end: Option<TurnId>,
    /// The turn whose "before" snapshot waits for the model's first answer, and when its
    /// request went out ([`Driver::take_due_snapshot`]).
    begin_due: Option<(TurnId, std::time::SystemTime)>,
    /// The baseline (taken when the conversation opens) is not done yet. A first prompt sent
    /// before it (`agentty run`, a prompt given on the command line) waits for it: without
    /// it, what the agent changes at once could not be told from how the tree was. Not past
    /// `baseline_deadline`: a huge tree must not hold the first prompt (nor a stop) long.
    baseline_pending: bool,
    baseline_deadline: Instant,
}

/// The longest a first prompt waits for the baseline snapshot.
const BASELINE_WAIT: Duration = Duration::from_secs(2);

struct Driver {
    options: OrchestratorOptions,
    machine: Machine,
    events: mpsc::Sender<OrchestratorEvent>,
    /// Events emitted while the channel was full, sent first once it has room; while any
    /// wait, the agent is not read.
    backlog: VecDeque<OrchestratorEvent>,
    live: Option<LiveAttempt>,
    retry: Option<PendingRetry>,
    /// The agent's stored session as it was when the last turn's first attempt started.
    checkpoint: Option<(TurnId, Option<SessionCheckpoint>)>,
    /// A rollback failed: the next attempt starts in a fresh agent session.
    fresh_session_next: bool,
    /// Inputs the driver itself feeds back to the machine, handled before any other.
    feedback: VecDeque<Input>,
    /// The event receiver was dropped: nobody watches, so shut down.
    receiver_gone: bool,
    /// The agent's own steering queue and status, for providers that report them.
    agent_queue: Option<watch::Receiver<AgentQueue>>,
    agent_status: Option<watch::Receiver<AgentStatus>>,
    /// The conversation's settings (see `OrchestratorOptions`), with the user's choices.
    settings: Vec<AgentSetting>,
    /// Settings the user asked for that the agent has not taken yet.
    settings_asked: Vec<AgentSetting>,
    /// The agent's count of refused changes, as last seen.
    refusals_seen: u64,
    snapshots: Option<Snapshots>,
    /// Effects set aside until the snapshot thread answers; nothing else is taken meanwhile.
    deferred: Option<Deferred>,
    /// Each recent turn's session and the agent's stored session before it, for `/rewind`.
    turn_checkpoints: std::collections::BTreeMap<TurnId, (SessionRef, Option<SessionCheckpoint>)>,
    /// A rewind waiting for its files: the turn, and whether the conversation goes back too.
    pending_rewind: Option<(TurnId, bool)>,
    /// `turn_checkpoints` on disk, beside the snapshots: `/rewind` after `--resume`.
    checkpoint_store: Option<CheckpointStore>,
    /// The agent's session as it was before each rewind of the conversation (by the turn
    /// rewound to), so the rewind can be undone; also on disk.
    rewound_sessions: std::collections::BTreeMap<TurnId, (SessionRef, Option<SessionCheckpoint>)>,
    /// An undo of a rewind waiting for its files: the turn, and whether the conversation
    /// comes back too.
    pending_undo_rewind: Option<(TurnId, bool)>,
    /// The agent session the next turn continues, as the machine last reported it.
    agent_session: SessionRef,
}

/// Whether the agent's conversation can go back to before a turn, from what was kept of its
/// session when the turn began: nothing to keep (a new session), its files, or the point where
/// the agent that holds its session can branch it.
fn conversation_rewind(
    session: &SessionRef,
    checkpoint: Option<&SessionCheckpoint>,
) -> Result<(), String> {
    match checkpoint {
        _ if *session == SessionRef::New => Ok(()),
        None => Err("the agent's session file was not found when that turn began".to_owned()),
        Some(checkpoint)
            if checkpoint.is_held_by_agent() && checkpoint.branch_point().is_none() =>
        {
            Err(format!(
                "where {} stood when that turn began is not known",
                checkpoint.path().display()
            ))
        }
        Some(_) => Ok(()),
    }
}

/// Turns whose session checkpoints are kept for `/rewind` (each holds a copy of the agent's
/// session file, which grows with the conversation).
const REWINDABLE_TURNS: usize = 50;

/// The folder of the conversation's snapshot store that keeps its turns' session checkpoints.
const CHECKPOINTS_DIR: &str = "checkpoints";

impl Driver {
    fn new(options: OrchestratorOptions, events: mpsc::Sender<OrchestratorEvent>) -> Self {
        let machine = Machine::new(options.policy.clone(), options.session.clone())
            .numbering_turns_from(options.first_turn)
            .with_interjections(options.provider.can_interject())
            .with_agent_retrying_itself(super::verdict::agent_retries_itself(
                options.provider.name(),
                options.provider.transport(),
            ));
        let agent_queue = options.provider.agent_queue();
        let agent_status = options.provider.agent_status();
        let settings = options.settings.clone();
        let snapshots = options
            .snapshots
            .clone()
            .filter(|setup| setup.limits.enabled)
            .map(|setup| Snapshots {
                worker: SnapshotWorker::start(setup.root, setup.dir, setup.limits),
                open_turn: None,
                awaiting_end: None,
                begin_due: None,
                baseline_pending: options.baseline_before_first_turn,
                baseline_deadline: Instant::now() + BASELINE_WAIT,
            });
        let checkpoint_store = options
            .snapshots
            .as_ref()
            .map(|setup| CheckpointStore::new(setup.dir.join(CHECKPOINTS_DIR)));
        let agent_session = options.session.clone();
        Self {
            options,
            machine,
            events,
            backlog: VecDeque::new(),
            live: None,
            retry: None,
            checkpoint: None,
            fresh_session_next: false,
            feedback: VecDeque::new(),
            receiver_gone: false,
            agent_queue,
            agent_status,
            settings,
            settings_asked: Vec::new(),
            refusals_seen: 0,
            snapshots,
            deferred: None,
            turn_checkpoints: std::collections::BTreeMap::new(),
            pending_rewind: None,
            checkpoint_store,
            rewound_sessions: std::collections::BTreeMap::new(),
            pending_undo_rewind: None,
            agent_session,
        }
    }

    /// A setting the user asked for that the agent now holds is the conversation's: logged,
    /// and carried by every later attempt (a restarted agent is set to it again).
    fn follow_settings(&mut self, status: &AgentStatus) {
        if status.refusals > self.refusals_seen {
            self.refusals_seen = status.refusals;
            self.settings_asked.clear();
        }
        let (taken, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.settings_asked)
            .into_iter()
            .partition(|setting| setting.is_held_by(status));
        self.settings_asked = waiting;
        for setting in taken {
            self.settings =
                settings_overridden(std::mem::take(&mut self.settings), [setting.clone()]);
            self.emit(OrchestratorEvent::SettingChosen(setting));
        }
    }

    async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Command>) {
        // A long-lived agent starts now, while the user types the first prompt.
        self.options.provider.warm_up(AttemptRequest {
            session: self.options.session.clone(),
            cwd: self.options.cwd.clone(),
            attempt: 1,
            scenario: self.options.scenario.clone(),
            settings: self.settings.clone(),
            ..AttemptRequest::default()
        });
        let mut commands_open = true;
        let mut shutdown_requested = false;
        loop {
            let waiting = self.deferred.is_some();
            let input = if let Some(input) = self.feedback.pop_front().filter(|_| !waiting) {
                input
            } else if self.receiver_gone && !shutdown_requested && !waiting {
                Input::Command(Command::Shutdown)
            } else {
                // A sender of its own: the permit it gives must not borrow the driver.
                let events = self.events.clone();
                let baseline_deadline = self
                    .snapshots
                    .as_ref()
                    .filter(|snapshots| snapshots.baseline_pending)
                    .map(|snapshots| snapshots.baseline_deadline);
                tokio::select! {
                    reply = next_snapshot_reply(&mut self.snapshots) => {
                        if self.on_snapshot_reply(reply) {
                            break;
                        }
                        continue;
                    }
                    _ = sleep_until_opt(baseline_deadline), if waiting && baseline_deadline.is_some() => {
                        tracing::warn!("the baseline snapshot is slow; the first prompt goes without it");
                        if let Some(snapshots) = self.snapshots.as_mut() {
                            snapshots.baseline_pending = false;
                        }
                        if self.resume_deferred() {
                            break;
                        }
                        continue;
                    }
                    command = commands.recv(), if commands_open && !waiting => match command {
                        Some(command) => Input::Command(command),
                        None => {
                            commands_open = false;
                            Input::Command(Command::Shutdown)
                        }
                    },
                    permit = events.reserve(), if !self.backlog.is_empty() => {
                        match permit {
                            Ok(permit) => self.send_backlog(permit),
                            Err(_) => self.receiver_left(),
                        }
                        continue;
                    }
                    input = next_attempt_input(&mut self.live), if self.backlog.is_empty() && !waiting => input,
                    input = retry_due(self.retry), if !waiting => input,
                    queue = watch_next(&mut self.agent_queue) => {
                        self.emit(OrchestratorEvent::AgentQueueChanged(queue));
                        continue;
                    }
                    status = watch_next(&mut self.agent_status) => {
                        self.follow_settings(&status);
                        self.emit(OrchestratorEvent::AgentStatusChanged(status));
                        continue;
                    }
                }
            };
            match &input {
                Input::Command(Command::Shutdown) => shutdown_requested = true,
                Input::Command(Command::SetRetryPolicy(policy)) => {
                    if let Err(problems) = policy.validate() {
                        tracing::warn!(?problems, "ignoring an invalid retry policy");
                    }
                }
                Input::Agent { message, .. } => {
                    if message.is_terminal() {
                        self.live = None;
                    }
                    if the_model_answered(message) {
                        self.take_due_snapshot();
                    }
                }
                Input::RetryDue { .. } => self.retry = None,
                // Whether the agent can compact is the provider's to say, at this moment (an
                // ACP agent announces its commands once its session is open).
                Input::Command(Command::Compact(_)) if !self.options.provider.can_compact() => {
                    let provider = &self.options.provider;
                    let message = crate::provider::compaction::unavailable_reason(
                        provider.name(),
                        provider.transport(),
                    );
                    self.emit(OrchestratorEvent::CompactionRefused { message });
                    continue;
                }
                _ => {}
            }
            let effects = self.machine.handle(input);
            if self.perform(effects) {
                break;
            }
        }
        if let Some(live) = self.live.take() {
            // Only reachable if the machine exited with an attempt running (it waits for the
            // terminal message); the runner kills the agent when its stream is dropped, too.
            live.stop.kill_now();
        }
    }

    /// Carries out the effects in order; true once the machine has exited. Effects after one
    /// that must wait for the snapshot thread are set aside ([`Deferred`]).
    fn perform(&mut self, effects: impl Into<VecDeque<Effect>>) -> bool {
        let mut exit = false;
        let mut effects: VecDeque<Effect> = effects.into();
        while let Some(effect) = effects.pop_front() {
            match effect {
                effect @ Effect::StartAttempt { .. } if self.awaiting_baseline() => {
                    effects.push_front(effect);
                    self.deferred = Some(Deferred { effects });
                    return exit;
                }
                effect @ (Effect::StartAttempt { .. }
                | Effect::StartCompaction { .. }
                | Effect::Emit(OrchestratorEvent::ShutDown))
                    if self.awaiting_snapshot_after() =>
                {
                    // The next turn starts (or the stream ends) on a settled tree, after the
                    // last turn's `turn.changes`.
                    effects.push_front(effect);
                    self.deferred = Some(Deferred { effects });
                    return exit;
                }
                Effect::Emit(OrchestratorEvent::TurnEnded { turn, outcome }) => {
                    self.snapshot_after(turn);
                    self.emit(OrchestratorEvent::TurnEnded { turn, outcome });
                }
                Effect::Emit(event) => self.emit(event),
                Effect::StartAttempt {
                    turn,
                    attempt,
                    prompt,
                    images,
                    session,
                } => {
                    if attempt == 1 {
                        self.snapshot_before(turn);
                    }
                    self.start_attempt(turn, attempt, prompt, images, session)
                }
                // No snapshot: a compaction changes no file.
                Effect::StartCompaction {
                    turn,
                    attempt,
                    instructions,
                    session,
                } => self.start_agent(
                    turn,
                    attempt,
                    String::new(),
                    Vec::new(),
                    session,
                    Some(instructions),
                ),
                Effect::Rewind {
                    turn,
                    conversation,
                    files,
                    overwrite,
                } => match (&self.snapshots, files) {
                    (Some(snapshots), true) => {
                        snapshots.worker.rewind(turn, overwrite);
                        self.pending_rewind = Some((turn, conversation));
                    }
                    (None, true) => {
                        let conversation = conversation.then(|| self.rewind_conversation(turn));
                        self.emit(OrchestratorEvent::Rewound(super::Rewind {
                            turn,
                            conversation,
                            files: Some(Err("no snapshots of the files are kept".to_owned())),
                            undone: false,
                        }));
                    }
                    (_, false) => {
                        let conversation = conversation.then(|| self.rewind_conversation(turn));
                        self.emit(OrchestratorEvent::Rewound(super::Rewind {
                            turn,
                            conversation,
                            files: None,
                            undone: false,
                        }));
                    }
                },
                Effect::UndoRewind {
                    turn,
                    conversation,
                    files,
                    overwrite,
                } => match (&self.snapshots, files) {
                    (Some(snapshots), true) => {
                        snapshots.worker.undo_rewind(turn, overwrite);
                        self.pending_undo_rewind = Some((turn, conversation));
                    }
                    (snapshots, _) => {
                        let no_snapshots = files && snapshots.is_none();
                        let conversation =
                            conversation.then(|| self.undo_rewind_conversation(turn));
                        self.emit(OrchestratorEvent::Rewound(super::Rewind {
                            turn,
                            conversation,
                            files: no_snapshots
                                .then(|| Err("no snapshots of the files are kept".to_owned())),
                            undone: true,
                        }));
                    }
                },
                Effect::UndoTurn { turn, overwrite } => match &self.snapshots {
                    Some(snapshots) => snapshots.worker.undo(turn, overwrite),
                    None => self.emit(OrchestratorEvent::Undone {
                        turn,
                        outcome: Err(
                            "no snapshots are kept ([snapshots] enabled = false in the config, \
                             or they could not be taken)"
                                .to_owned(),
                        ),
                    }),
                },
                Effect::StopAttempt { turn, attempt } => {
                    if let Some(live) = &self.live {
                        if live.turn == turn && live.attempt == attempt {
                            tracing::info!(turn, attempt, "stopping the agent");
                            live.stop.stop();
                        }
                    }
                }
                Effect::ScheduleRetry {
                    turn,
                    attempt,
                    delay_ms,
                } => {
                    tracing::info!(turn, attempt, delay_ms, "retry scheduled");
                    self.retry = Some(PendingRetry {
                        turn,
                        attempt,
                        due: Instant::now() + Duration::from_millis(delay_ms),
                    });
                }
                Effect::CancelRetry { turn, attempt } => {
                    tracing::info!(turn, attempt, "retry cancelled");
                    self.retry = None;
                }
                Effect::Rollback { turn } => self.roll_back(turn),
                Effect::Interject {
                    turn,
                    attempt,
                    kind,
                    text,
                } => {
                    let live = self
                        .live
                        .as_ref()
                        .is_some_and(|live| live.turn == turn && live.attempt == attempt);
                    if !(live && self.options.provider.interject(kind, &text)) {
                        // Not delivered: it waits in the queue like any prompt.
                        tracing::info!(turn, ?kind, "interjection not delivered; queued");
                        self.feedback
                            .push_back(Input::Command(Command::Submit(text)));
                    }
                }
                Effect::AnswerPermission {
                    turn,
                    attempt,
                    id,
                    option,
                    message,
                } => {
                    let live = self
                        .live
                        .as_ref()
                        .is_some_and(|live| live.turn == turn && live.attempt == attempt);
                    let provider = &self.options.provider;
                    if !(live && provider.answer_permission(&id, option, message.clone())) {
                        tracing::warn!(turn, id, "permission answer not delivered");
                    } else if let Some(message) = message
                        .filter(|message| !message.trim().is_empty())
                        .filter(|_| !provider.takes_permission_feedback())
                    {
                        // The answer could not carry it: it goes as the next prompt, and the
                        // user is told so.
                        self.emit(OrchestratorEvent::Notice {
                            turn,
                            kind: NoticeKind::PermissionFeedback.wire().to_owned(),
                            message: message.clone(),
                        });
                        self.feedback
                            .push_back(Input::Command(Command::Submit(message)));
                    }
                }
                Effect::ChangeSetting(setting) => {
                    self.settings_asked.retain(|kept| !kept.same_kind(&setting));
                    if self.options.provider.change_setting(setting.clone()) {
                        self.settings_asked.push(setting);
                    } else {
                        tracing::warn!(?setting, "the agent cannot change this setting now");
                    }
                }
                Effect::Exit => exit = true,
            }
        }
        exit
    }

    /// Asks for the snapshot before turn `turn`'s first request, which goes out at once: the
    /// snapshot is taken beside it (what the agent writes meanwhile is taken from the previous
    /// snapshot), so Enter never waits for a walk of the tree.
    fn snapshot_before(&mut self, turn: TurnId) {
        if let Some(snapshots) = self.snapshots.as_mut() {
            snapshots.open_turn = Some(turn);
            snapshots.begin_due = Some((turn, std::time::SystemTime::now()));
        }
    }

    /// Starts the walk of the "before" snapshot asked for: once the model has answered (the
    /// request is out, and the walk no longer competes with the agent for a core while it
    /// sends it), or before anything else the snapshot thread is asked. Correct whenever it
    /// runs: what the agent wrote since the request is taken from the previous snapshot.
    fn take_due_snapshot(&mut self) {
        if let Some(snapshots) = self.snapshots.as_mut() {
            if let Some((turn, since)) = snapshots.begin_due.take() {
                snapshots.worker.begin(turn, since);
            }
        }
    }

    /// Asks for the snapshot after turn `turn` (the turn has ended: the UI need not wait for
    /// it; its `turn.changes` follows).
    fn snapshot_after(&mut self, turn: TurnId) {
        self.take_due_snapshot();
        if let Some(snapshots) = self.snapshots.as_mut() {
            if snapshots.open_turn == Some(turn) {
                snapshots.open_turn = None;
                snapshots.awaiting_end = Some(turn);
                snapshots.worker.end(turn);
            }
        }
    }

    /// The baseline snapshot is still being taken.
    fn awaiting_baseline(&self) -> bool {
        self.snapshots
            .as_ref()
            .is_some_and(|snapshots| snapshots.baseline_pending)
    }

    /// The snapshot after the last turn is asked for and not yet taken.
    fn awaiting_snapshot_after(&self) -> bool {
        self.snapshots
            .as_ref()
            .is_some_and(|snapshots| snapshots.awaiting_end.is_some())
    }

    /// Handles the snapshot thread's answer and goes on with what waited for it; true once
    /// the machine has exited.
    fn on_snapshot_reply(&mut self, reply: Option<SnapshotReply>) -> bool {
        let Some(reply) = reply else {
            tracing::warn!("the snapshot thread is gone; no more snapshots");
            self.snapshots = None;
            return self.resume_deferred();
        };
        let Some(snapshots) = self.snapshots.as_mut() else {
            return false;
        };
        match reply {
            SnapshotReply::Ready => {
                snapshots.baseline_pending = false;
                self.resume_deferred()
            }
            SnapshotReply::Began { turn, notice } => {
                if let Some(message) = notice {
                    self.emit_snapshot_notice(turn, message);
                }
                false
            }
            SnapshotReply::Ended {
                turn,
                changes,
                notice,
            } => {
                if snapshots.awaiting_end == Some(turn) {
                    snapshots.awaiting_end = None;
                }
                if !changes.is_empty() {
                    self.emit(OrchestratorEvent::TurnChanges {
                        turn,
                        files: changes,
                    });
                }
                if let Some(message) = notice {
                    self.emit_snapshot_notice(turn, message);
                }
                self.resume_deferred()
            }
            SnapshotReply::Undone { turn, outcome } => {
                self.emit(OrchestratorEvent::Undone { turn, outcome });
                false
            }
            SnapshotReply::Rewound { turn, outcome } => {
                let conversation = self
                    .pending_rewind
                    .take()
                    .is_some_and(|(pending, conversation)| pending == turn && conversation);
                let mut rewind = super::Rewind {
                    turn,
                    conversation: None,
                    files: Some(outcome),
                    undone: false,
                };
                // Files changed since stop the whole rewind until the user decides.
                if conversation && rewind.stopped_by_conflicts().is_none() {
                    rewind.conversation = Some(self.rewind_conversation(turn));
                }
                self.emit(OrchestratorEvent::Rewound(rewind));
                false
            }
            SnapshotReply::RewindUndone { turn, outcome } => {
                let conversation = self
                    .pending_undo_rewind
                    .take()
                    .is_some_and(|(pending, conversation)| pending == turn && conversation);
                let mut undone = super::Rewind {
                    turn,
                    conversation: None,
                    files: Some(outcome),
                    undone: true,
                };
                if conversation && undone.stopped_by_conflicts().is_none() {
                    undone.conversation = Some(self.undo_rewind_conversation(turn));
                }
                self.emit(OrchestratorEvent::Rewound(undone));
                false
            }
        }
    }

    /// Puts the agent's stored session back as it was before turn `turn`, so the model no
    /// longer receives that turn or any later one.
    fn rewind_conversation(&mut self, turn: TurnId) -> Result<(), String> {
        if !self.turn_checkpoints.contains_key(&turn) {
            // A turn of an earlier run (`--resume`): its checkpoint was kept on disk.
            let name = CheckpointStore::turn_name(turn);
            match self
                .checkpoint_store
                .as_ref()
                .map(|store| store.load(&name))
            {
                Some(Ok(kept)) => {
                    self.turn_checkpoints.insert(turn, kept);
                }
                Some(Err(error)) => {
                    tracing::info!(turn, %error, "no stored checkpoint of that turn")
                }
                None => {}
            }
        }
        let before_rewind = self.current_session_checkpoint();
        let restored = match self.turn_checkpoints.get(&turn) {
            None => Err(format!(
                "agentty keeps the agent's session for the last {REWINDABLE_TURNS} turns only"
            )),
            Some((session, checkpoint)) => {
                conversation_rewind(session, checkpoint.as_ref()).and_then(|()| match checkpoint {
                    // The turn began the agent's session: before it there was none.
                    _ if *session == SessionRef::New => {
                        self.feedback.push_back(Input::Command(Command::NewSession));
                        Ok(())
                    }
                    // The agent branches its own history there; its history as it is now stays
                    // whole.
                    Some(checkpoint) if checkpoint.is_held_by_agent() => {
                        let point = checkpoint.branch_point();
                        if self.options.provider.branch_session(point) {
                            tracing::info!(turn, ?point, "agent session branched back");
                            Ok(())
                        } else {
                            Err(format!(
                                "{} is kept by the agent, which cannot branch it",
                                checkpoint.path().display()
                            ))
                        }
                    }
                    Some(checkpoint) => match checkpoint.restore() {
                        Ok(()) => {
                            tracing::info!(turn, file = %checkpoint.path().display(), "agent session rewound");
                            self.options.provider.session_restored();
                            Ok(())
                        }
                        Err(error) => Err(format!("its session file cannot be written: {error}")),
                    },
                    None => Ok(()),
                })
            }
        };
        if restored.is_ok() {
            self.turn_checkpoints.retain(|kept, _| *kept <= turn);
            // A retry of an earlier turn's failure must not bring a later session back.
            self.checkpoint = None;
            if let Some(store) = &self.checkpoint_store {
                let (session, checkpoint) = &before_rewind;
                let name = CheckpointStore::rewind_name(turn);
                if let Err(error) = store.save(&name, session, checkpoint.as_ref()) {
                    tracing::warn!(turn, %error, "cannot keep the session from before the rewind");
                }
            }
            self.rewound_sessions.insert(turn, before_rewind);
        }
        restored
    }

    /// The agent's stored session as it is now (what a rewind takes away).
    fn current_session_checkpoint(&self) -> (SessionRef, Option<SessionCheckpoint>) {
        let request = AttemptRequest {
            prompt: String::new(),
            session: self.agent_session.clone(),
            cwd: self.options.cwd.clone(),
            attempt: 1,
            scenario: self.options.scenario.clone(),
            settings: self.settings.clone(),
            raw_line_tap: None,
            ..AttemptRequest::default()
        };
        let checkpoint = self.options.provider.checkpoint(&request);
        (self.agent_session.clone(), checkpoint)
    }

    /// Puts the agent's stored session back as it was before the rewind to before `turn`, and
    /// the next turn continues it.
    fn undo_rewind_conversation(&mut self, turn: TurnId) -> Result<(), String> {
        let name = CheckpointStore::rewind_name(turn);
        let kept = match self.rewound_sessions.remove(&turn) {
            Some(kept) => Some(kept),
            None => self
                .checkpoint_store
                .as_ref()
                .and_then(|store| store.load(&name).ok()),
        };
        let Some((session, checkpoint)) = kept else {
            return Err("the agent's session from before that rewind is not kept".to_owned());
        };
        match (&session, &checkpoint) {
            // The agent keeps that session itself, untouched by the rewind (which started a
            // new one or branched it): going back to it is enough, and a branch not yet made
            // is not made.
            (_, Some(checkpoint)) if checkpoint.is_held_by_agent() => {
                self.options.provider.branch_session(None);
            }
            (_, Some(checkpoint)) => {
                checkpoint
                    .restore()
                    .map_err(|error| format!("its session file cannot be written: {error}"))?;
                tracing::info!(turn, file = %checkpoint.path().display(), "rewind undone in the agent session");
                self.options.provider.session_restored();
            }
            (SessionRef::New, None) => {}
            (_, None) => {
                return Err(
                    "the agent's session file was not found when the rewind was made".to_owned(),
                )
            }
        }
        self.feedback.push_back(Input::SessionRestored(session));
        self.checkpoint = None;
        if let Some(store) = &self.checkpoint_store {
            store.remove(&name);
        }
        Ok(())
    }

    fn emit_snapshot_notice(&mut self, turn: TurnId, message: String) {
        self.emit(OrchestratorEvent::Notice {
            turn,
            kind: NoticeKind::Snapshot.wire().to_owned(),
            message,
        });
    }

    /// Goes on with the effects set aside; true once the machine has exited.
    fn resume_deferred(&mut self) -> bool {
        let Some(deferred) = self.deferred.take() else {
            return false;
        };
        self.perform(deferred.effects)
    }

    fn emit(&mut self, event: OrchestratorEvent) {
        if let OrchestratorEvent::TurnEnded { turn, outcome } = &event {
            tracing::info!(turn, ?outcome, "turn ended");
        }
        if let OrchestratorEvent::SessionChanged { session_id } = &event {
            self.agent_session = session_id
                .clone()
                .map_or(SessionRef::New, SessionRef::Resume);
        }
        if let Some(log) = &self.options.session_log {
            log.record_event(&event);
        }
        if self.receiver_gone {
            return;
        }
        if !self.backlog.is_empty() {
            self.backlog.push_back(event);
            return;
        }
        match self.events.try_send(event) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(event)) => self.backlog.push_back(event),
            Err(mpsc::error::TrySendError::Closed(_)) => self.receiver_left(),
        }
    }

    /// Sends the waiting events, the first with `permit`, the rest while there is room.
    fn send_backlog(&mut self, permit: mpsc::Permit<'_, OrchestratorEvent>) {
        let Some(first) = self.backlog.pop_front() else {
            return;
        };
        permit.send(first);
        while let Some(event) = self.backlog.pop_front() {
            match self.events.try_send(event) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(event)) => {
                    self.backlog.push_front(event);
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    self.receiver_left();
                    return;
                }
            }
        }
    }

    fn receiver_left(&mut self) {
        if !self.receiver_gone {
            tracing::info!("orchestrator events are no longer read; shutting down");
            self.receiver_gone = true;
            self.backlog.clear();
        }
    }

    /// Restores the agent's stored session from the turn's checkpoint; when that is impossible
    /// the next attempt runs in a fresh agent session (never in the one holding the failed
    /// attempt, which would show the model the prompt twice).
    fn roll_back(&mut self, turn: TurnId) {
        let restored = match &self.checkpoint {
            Some((checkpoint_turn, Some(checkpoint))) if *checkpoint_turn == turn => {
                match checkpoint.restore() {
                    Ok(()) => {
                        tracing::info!(turn, file = %checkpoint.path().display(), "agent session rolled back");
                        self.options.provider.session_restored();
                        true
                    }
                    Err(error) => {
                        tracing::warn!(turn, %error, file = %checkpoint.path().display(), "cannot roll the agent session back");
                        false
                    }
                }
            }
            _ => {
                tracing::warn!(turn, "no checkpoint of the agent session to roll back to");
                false
            }
        };
        self.fresh_session_next = !restored;
    }

    /// The session the attempt really starts in, after a failed rollback.
    fn session_for_attempt(&mut self, turn: TurnId, session: SessionRef) -> SessionRef {
        if !self.fresh_session_next || session == SessionRef::New {
            self.fresh_session_next = false;
            return session;
        }
        self.fresh_session_next = false;
        self.emit(OrchestratorEvent::Notice {
            turn,
            kind: NoticeKind::FreshSession.wire().to_owned(),
            message: "The failed attempt could not be undone in the agent's own session, so \
                      this attempt starts a fresh agent session (the agent does not remember \
                      the earlier turns; the transcript stays here)."
                .to_owned(),
        });
        self.feedback.push_back(Input::SessionReset { turn });
        SessionRef::New
    }

    fn start_attempt(
        &mut self,
        turn: TurnId,
        attempt: u32,
        prompt: String,
        images: Vec<crate::attachment::ImageAttachment>,
        session: SessionRef,
    ) {
        self.start_agent(turn, attempt, prompt, images, session, None);
    }

    /// Starts one attempt: the prompt's, or with `compaction` (its instructions) a compaction.
    fn start_agent(
        &mut self,
        turn: TurnId,
        attempt: u32,
        prompt: String,
        images: Vec<crate::attachment::ImageAttachment>,
        session: SessionRef,
        compaction: Option<Option<String>>,
    ) {
        let session = self.session_for_attempt(turn, session);
        if let Some(previous) = self.live.take() {
            // The machine never starts an attempt while one is live; if it did, the old one
            // must not run on unobserved.
            tracing::error!(
                turn = previous.turn,
                attempt = previous.attempt,
                "an attempt was still live when the next started; killing it"
            );
            previous.stop.kill_now();
        }
        tracing::info!(turn, attempt, ?session, "starting attempt");
        let stop = StopControl::new();
        let request = AttemptRequest {
            prompt,
            images,
            session,
            cwd: self.options.cwd.clone(),
            attempt,
            scenario: self.options.scenario.clone(),
            settings: self.settings.clone(),
            raw_line_tap: self
                .options
                .session_log
                .as_ref()
                .and_then(|log| log.raw_line_tap(turn, attempt)),
        };
        if attempt == 1 {
            // The first attempt of a turn: remember the agent's session as it is before it.
            let checkpoint = self.options.provider.checkpoint(&request);
            if request.session != SessionRef::New && checkpoint.is_none() {
                tracing::info!(turn, "the agent's session file was not found: no rollback");
            }
            self.emit(OrchestratorEvent::TurnCheckpointed {
                turn,
                conversation_rewind: conversation_rewind(&request.session, checkpoint.as_ref()),
            });
            self.turn_checkpoints
                .insert(turn, (request.session.clone(), checkpoint.clone()));
            while self.turn_checkpoints.len() > REWINDABLE_TURNS {
                self.turn_checkpoints.pop_first();
            }
            if let Some(store) = self.checkpoint_store.clone() {
                // Written on a thread of its own while the request goes out: a session file
                // grows with the conversation, and Enter must not wait for its copy, nor the
                // agent for a core.
                let session = request.session.clone();
                let checkpoint = checkpoint.clone();
                let saver = crate::background::spawn("agentty-checkpoint", move || {
                    let name = CheckpointStore::turn_name(turn);
                    if let Err(error) = store.save(&name, &session, checkpoint.as_ref()) {
                        tracing::warn!(turn, %error, "cannot keep the session checkpoint on disk");
                    }
                    // Turns are numbered one after another, also across `--resume`.
                    if let Some(old) = turn.checked_sub(REWINDABLE_TURNS as TurnId) {
                        store.remove(&CheckpointStore::turn_name(old));
                    }
                });
                if let Err(error) = saver {
                    tracing::warn!(turn, %error, "cannot start the checkpoint's writer");
                }
            }
            self.checkpoint = Some((turn, checkpoint));
        }
        let stream = match compaction {
            Some(instructions) => {
                self.options
                    .provider
                    .compact(request, instructions, stop.clone())
            }
            None => self.options.provider.execute(request, stop.clone()),
        };
        let progress = stop.subscribe();
        self.live = Some(LiveAttempt {
            turn,
            attempt,
            stream,
            stop,
            progress,
            progress_open: true,
        });
    }
}

/// The next message or stop progress of the live attempt; pending forever without one.
async fn next_attempt_input(live: &mut Option<LiveAttempt>) -> Input {
    let Some(live) = live.as_mut() else {
        return std::future::pending().await;
    };
    let LiveAttempt {
        turn,
        attempt,
        stream,
        progress,
        progress_open,
        ..
    } = live;
    loop {
        tokio::select! {
            // Progress first, so "stopped" is shown before the turn ends.
            biased;
            changed = progress.changed(), if *progress_open => match changed {
                Ok(()) => {
                    return Input::StopProgress {
                        turn: *turn,
                        attempt: *attempt,
                        progress: *progress.borrow_and_update(),
                    }
                }
                Err(_) => *progress_open = false,
            },
            message = stream.next() => {
                return Input::Agent {
                    turn: *turn,
                    attempt: *attempt,
                    message: message.unwrap_or_else(missing_terminal),
                }
            }
        }
    }
}

/// The snapshot thread's next answer; pending for ever without the thread.
async fn next_snapshot_reply(snapshots: &mut Option<Snapshots>) -> Option<SnapshotReply> {
    match snapshots.as_mut() {
        Some(snapshots) => snapshots.worker.next().await,
        None => std::future::pending().await,
    }
}

/// The next value of a watched agent report; pending forever without one (or once closed).
async fn watch_next<T: Clone>(receiver: &mut Option<watch::Receiver<T>>) -> T {
    if let Some(watched) = receiver.as_mut() {
        if watched.changed().await.is_ok() {
            return watched.borrow_and_update().clone();
        }
        *receiver = None;
    }
    std::future::pending().await
}

async fn retry_due(retry: Option<PendingRetry>) -> Input {
    match retry {
        Some(retry) => {
            tokio::time::sleep_until(retry.due).await;
            Input::RetryDue {
                turn: retry.turn,
                attempt: retry.attempt,
            }
        }
        None => std::future::pending().await,
    }
}

fn missing_terminal() -> AgentMessage {
    AgentMessage::Failed(Failure {
        reason: FailureReason::NoCompletion,
        message: "the provider ended the attempt without a terminal message".into(),
        ..Failure::default()
    })
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;

/// Sleeps until `deadline`, or for ever without one.
async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The model's own output (or the attempt's end): the request has reached it.
fn the_model_answered(message: &AgentMessage) -> bool {
    matches!(
        message,
        AgentMessage::Assistant { .. }
            | AgentMessage::Thinking { .. }
            | AgentMessage::Thought { .. }
            | AgentMessage::ToolCall { .. }
    ) || message.is_terminal()
}
