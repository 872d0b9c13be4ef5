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

use tokio::sync::{mpsc, watch};

use super::fsm::{Effect, Input, Machine};
use super::{Command, OrchestratorEvent, Recorder, SnapshotBusy, TurnId};
use crate::config::RetryPolicy;
use crate::provider::checkpoint::CheckpointStore;
use crate::provider::{AgentQueue, AgentSetting, AgentStatus};
use crate::provider::{AttemptRequest, Provider, SessionCheckpoint, SessionRef};

#[path = "agent_settings.rs"]
mod agent_settings;
#[path = "attempt.rs"]
mod attempt;
#[path = "outbox.rs"]
mod outbox;
#[path = "rewind.rs"]
mod rewind;
#[path = "snapshots.rs"]
mod snapshots;
#[path = "turn_checkpoints.rs"]
mod turn_checkpoints;

use attempt::{next_attempt_input, retry_due, the_model_answered, LiveAttempt, PendingRetry};
use rewind::CHECKPOINTS_DIR;
use snapshots::{next_snapshot_reply, Deferred, Snapshots};

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
                    self.start_agent(turn, attempt, prompt, images, session, None)
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
                Effect::Rewind(asked) => self.rewind(asked),
                Effect::UndoTurn { turn, overwrite } => self.undo_turn(turn, overwrite),
                Effect::StopAttempt { turn, attempt } => self.stop_attempt(turn, attempt),
                Effect::ScheduleRetry {
                    turn,
                    attempt,
                    delay_ms,
                } => self.schedule_retry(turn, attempt, delay_ms),
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
                } => self.interject(turn, attempt, kind, text),
                Effect::AnswerPermission {
                    turn,
                    attempt,
                    id,
                    option,
                    message,
                } => self.answer_permission(turn, attempt, id, option, message),
                Effect::ChangeSetting(setting) => self.change_setting(setting),
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

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
