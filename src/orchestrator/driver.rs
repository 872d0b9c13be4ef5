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
use super::{Command, OrchestratorEvent, Recorder, SnapshotBusy, TurnId};
use crate::config::RetryPolicy;
use crate::provider::checkpoint::CheckpointStore;
use crate::provider::{settings_overridden, AgentQueue, AgentSetting, AgentStatus};
use crate::provider::{
    AgentStream, AttemptRequest, Provider, SessionCheckpoint, SessionRef, StopControl, StopProgress,
};
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

/// What the user reads when a failed or stopped attempt cannot be taken out of the agent's
/// own session (no checkpoint of it, or the restore failed).
pub(crate) const FAILED_ATTEMPT_KEPT: &str =
    "The failed attempt could not be taken out of the agent's own session: the conversation \
     goes on in it, and the agent may see this prompt twice.";

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
    /// The first attempt and what follows it, set aside until the baseline is taken.
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
            .map(|setup| Snapshots::start(setup, options.first_turn));
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
        if self.snapshots.is_some() {
            self.emit(OrchestratorEvent::SnapshotBusy(Some(
                SnapshotBusy::Baseline,
            )));
        }
        loop {
            let input = if let Some(input) = self.feedback.pop_front() {
                input
            } else if self.receiver_gone && !shutdown_requested {
                Input::Command(Command::Shutdown)
            } else {
                // A sender of its own: the permit it gives must not borrow the driver.
                let events = self.events.clone();
                tokio::select! {
                    reply = next_snapshot_reply(&mut self.snapshots) => {
                        if self.on_snapshot_reply(reply) {
                            break;
                        }
                        continue;
                    }
                    command = commands.recv(), if commands_open => match command {
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
                    input = next_attempt_input(&mut self.live), if self.backlog.is_empty() => input,
                    input = retry_due(self.retry) => input,
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
                Input::Command(Command::ResolveRestore { id, finish }) => {
                    self.resolve_restore(id.clone(), *finish);
                    continue;
                }
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

    /// Carries out the effects in order; true once the machine has exited. The first attempt
    /// and the effects after it are set aside until the baseline is taken ([`Deferred`]), and
    /// so is the end of the stream until the last turn's changes are out; meanwhile new effects
    /// queue behind them, but a stop of the attempt held back ends it at once.
    fn perform(&mut self, effects: impl Into<VecDeque<Effect>>) -> bool {
        let mut exit = false;
        let mut effects: VecDeque<Effect> = effects.into();
        while let Some(effect) = effects.pop_front() {
            if let Some(deferred) = self.deferred.as_mut() {
                if let Effect::StopAttempt { turn, attempt } = &effect {
                    let (turn, attempt) = (*turn, *attempt);
                    if self.cancel_held_attempt(turn, attempt) {
                        // Nothing waits any more: what was set aside goes now, first.
                        if let Some(held) = self.deferred.take() {
                            for effect in held.effects.into_iter().rev() {
                                effects.push_front(effect);
                            }
                        }
                        continue;
                    }
                    if let Some(deferred) = self.deferred.as_mut() {
                        deferred.effects.push_back(effect);
                    }
                    continue;
                }
                deferred.effects.push_back(effect);
                continue;
            }
            match effect {
                effect @ (Effect::StartAttempt { .. } | Effect::StartCompaction { .. })
                    if self.awaiting_baseline() =>
                {
                    effects.push_front(effect);
                    self.deferred = Some(Deferred {
                        effects: std::mem::take(&mut effects),
                    });
                    return exit;
                }
                effect @ Effect::Emit(OrchestratorEvent::ShutDown)
                    if self.awaiting_snapshot_after() =>
                {
                    // The stream ends after the last turn's `turn.changes`.
                    effects.push_front(effect);
                    self.deferred = Some(Deferred {
                        effects: std::mem::take(&mut effects),
                    });
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
                } => self.rewind(turn, conversation, files, overwrite, false),
                Effect::UndoRewind {
                    turn,
                    conversation,
                    files,
                    overwrite,
                } => self.rewind(turn, conversation, files, overwrite, true),
                Effect::UndoTurn { turn, overwrite } => self.undo_turn(turn, overwrite),
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
                            kind: NoticeKind::PermissionFeedback,
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

    /// Restores the agent's stored session from the turn's checkpoint. When that is impossible
    /// the conversation goes on in the agent's session as it is, and the user is told in one
    /// line: a prompt the model sees twice is far less harm than a conversation wiped.
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
                tracing::info!(turn, "no checkpoint of the agent session to roll back to");
                false
            }
        };
        if !restored {
            self.emit(OrchestratorEvent::Notice {
                turn,
                kind: NoticeKind::Warning,
                message: FAILED_ATTEMPT_KEPT.to_owned(),
            });
        }
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
            // Each checkpoint holds a copy of the agent's session file, which grows with the
            // conversation: with a store on disk, only the last few stay in memory too (a
            // rewind further back reads its turn's from the disk).
            let in_memory = if self.checkpoint_store.is_some() {
                CHECKPOINTS_IN_MEMORY
            } else {
                REWINDABLE_TURNS
            };
            while self.turn_checkpoints.len() > in_memory {
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

#[path = "rewind.rs"]
mod rewind;
#[path = "snapshots.rs"]
mod snapshots;

use rewind::{conversation_rewind, CHECKPOINTS_DIR, CHECKPOINTS_IN_MEMORY, REWINDABLE_TURNS};
use snapshots::{next_snapshot_reply, Deferred, Snapshots};

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
