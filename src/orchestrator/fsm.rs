//! The orchestrator's state machine: inputs in, effects out. No IO, no clock, no async; the
//! driver performs the effects and feeds back what happened.
//!
//! Invariants:
//! - At most one attempt is live. An attempt's messages count only while it is the current
//!   attempt, so after its terminal message nothing more of it is processed (a failure
//!   short-circuits), and a late message of an earlier attempt is dropped.
//! - `terminal.completed` is the only success. A failed attempt is retried automatically only
//!   when the policy is on, attempts remain and the classifier calls the failure retryable; an
//!   attempt the user stopped is never retried. Each retry is a fresh `StartAttempt` with the
//!   same prompt and the session the turn started in.
//! - The queue is never dropped. After a completed turn, or one the user stopped, the next
//!   queued prompt starts (a stop cancels the running turn only). After a failed turn the queue
//!   pauses, kept and visible: the queued prompts were written expecting that answer, and the
//!   same error would likely hit them. The next `Submit` (appended, then the queue resumes from
//!   its head) or a `RetryLastTurn` (the queue resumes after it) continues it.
//! - Retry never duplicates. The session carried to the next turn is the id reported by the
//!   last attempt that completed or was stopped by the user (what was shown stands), unless
//!   `NewSession` was asked for after that attempt's turn began; a failed attempt's session is
//!   never carried. After a failed attempt in a continued session the machine asks for a
//!   `Rollback` (the driver restores the agent's stored session from the checkpoint it took
//!   when the turn's first attempt started), and so does a `RetryLastTurn` of a stopped turn,
//!   so the prompt reaches the agent's conversation once. When a rollback is impossible the
//!   conversation goes on in the agent's session as it is, and the driver says so: a prompt
//!   the model sees twice is far less harm than a conversation wiped.
//! - A failure that says the agent lost its session (`session_lost`) is not repeated: the turn
//!   goes on at once in a fresh agent session, with a notice, whatever the retry policy.
//! - The machine has no clock: `ScheduleRetry` asks the driver for a timer that comes back as
//!   `RetryDue`, which counts only if it names the retry still pending.

use super::verdict::{FailureVerdict, NextStep};
use super::{Command, OrchestratorEvent, RewindAsked, TurnId, TurnOutcome};
use crate::config::RetryPolicy;
use crate::provider::{AgentSetting, Interjection, SessionRef, StopProgress};
use crate::stream::{AgentMessage, Failure, NoticeKind};

/// What happens to the machine.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Input {
    Command(Command),
    /// One message of an attempt's stream (the driver synthesises a `terminal.failed` if a
    /// stream ends without a terminal message).
    Agent {
        turn: TurnId,
        attempt: u32,
        message: AgentMessage,
    },
    /// The three-stage stop of an attempt moved on.
    StopProgress {
        turn: TurnId,
        attempt: u32,
        progress: StopProgress,
    },
    /// The timer of a `ScheduleRetry` ran out.
    RetryDue {
        turn: TurnId,
        attempt: u32,
    },
    /// The undo of a rewind put the agent's session back: the next turn continues it.
    SessionRestored(SessionRef),
}

/// What the driver must do, in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Effect {
    Emit(OrchestratorEvent),
    /// Exactly one `Provider::execute`.
    StartAttempt {
        turn: TurnId,
        attempt: u32,
        prompt: String,
        images: Vec<crate::attachment::ImageAttachment>,
        session: SessionRef,
    },
    /// Exactly one `Provider::compact` (a compaction turn's attempt; `instructions`: what the
    /// summary should keep).
    StartCompaction {
        turn: TurnId,
        attempt: u32,
        instructions: Option<String>,
        session: SessionRef,
    },
    /// Start the three-stage stop of this attempt; asked again, skip to the kill.
    StopAttempt {
        turn: TurnId,
        attempt: u32,
    },
    /// Feed back `RetryDue { turn, attempt }` after `delay_ms`.
    ScheduleRetry {
        turn: TurnId,
        attempt: u32,
        delay_ms: u64,
    },
    CancelRetry {
        turn: TurnId,
        attempt: u32,
    },
    /// Undo this turn's attempts in the agent's stored session (restore the checkpoint taken
    /// when its first attempt started). Only asked for while no attempt runs.
    Rollback {
        turn: TurnId,
    },
    /// Hand `text` to this running attempt (the provider said it can); if the provider
    /// refuses, the driver feeds it back as a `Submit`.
    Interject {
        turn: TurnId,
        attempt: u32,
        kind: Interjection,
        text: String,
    },
    /// Hand the user's answer to this running attempt's permission request.
    AnswerPermission {
        turn: TurnId,
        attempt: u32,
        id: String,
        option: Option<String>,
        message: Option<String>,
    },
    /// Ask the agent to change a setting (whatever runs: the agent applies it to its next
    /// request).
    ChangeSetting(AgentSetting),
    /// Put back the files this turn changed (only asked for while no turn runs).
    UndoTurn {
        turn: TurnId,
        overwrite: bool,
    },
    /// Go back to before a turn, or undo that rewind (only asked for while no turn runs).
    Rewind(RewindAsked),
    /// The machine has shut down; nothing follows.
    Exit,
}

/// One user prompt and the session it was sent in.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Turn {
    pub(crate) id: TurnId,
    pub(crate) prompt: String,
    /// The images every attempt of this turn sends.
    pub(crate) images: Vec<crate::attachment::ImageAttachment>,
    /// The session every attempt of this turn uses.
    pub(crate) session: SessionRef,
    /// `NewSession` requests seen before this turn began.
    pub(crate) session_epoch: u64,
    /// The session id the current attempt reported; carried on only if the attempt completes
    /// or is stopped by the user.
    pub(crate) reported_session: Option<String>,
    /// A compaction of the agent's conversation (`/compact`, `prompt` its instructions), not a
    /// prompt: never retried, never steered.
    pub(crate) compaction: bool,
}

/// What a turn's end leads to once its attempt has stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterStop {
    /// The user stopped the turn: go on with the queue.
    Continue,
    /// The orchestrator is shutting down.
    ShutDown,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum State {
    /// No turn yet, or the last one completed.
    Idle,
    Running {
        turn: Turn,
        attempt: u32,
    },
    /// A stop was requested; waiting for the attempt's terminal message.
    Stopping {
        turn: Turn,
        attempt: u32,
        progress: StopProgress,
        then: AfterStop,
    },
    /// `failed_attempt` failed retryably; `next_attempt` starts when the timer runs out.
    WaitingToRetry {
        turn: Turn,
        failed_attempt: u32,
        next_attempt: u32,
        delay_ms: u64,
        failure: Failure,
    },
    /// The last turn failed; the queue is paused.
    Failed {
        turn: Turn,
    },
    /// The last turn was stopped by the user.
    Cancelled {
        turn: Turn,
    },
    ShutDown,
}

/// The orchestrator's state machine.
#[derive(Debug, Clone)]
pub(crate) struct Machine {
    state: State,
    policy: RetryPolicy,
    session: SessionRef,
    session_epoch: u64,
    queue: Vec<String>,
    next_turn: TurnId,
    /// The provider can hand messages to a running turn (steer, follow-up).
    interjections: bool,
    /// The agent retries by itself: a retryable failure is left to it.
    agent_retries_itself: bool,
}

/// What a message of the current attempt means for the turn.
enum AttemptEnd {
    Completed,
    Cancelled,
    Failed(Failure),
}

impl Machine {
    /// `session`: the session the first turn continues (`SessionRef::New` for a fresh one).
    pub(crate) fn new(policy: RetryPolicy, session: SessionRef) -> Self {
        Self {
            state: State::Idle,
            policy,
            session,
            session_epoch: 0,
            queue: Vec::new(),
            next_turn: 1,
            interjections: false,
            agent_retries_itself: false,
        }
    }

    /// The agent retries by itself (`verdict::agent_retries_itself`): agentty does not retry
    /// on top of it.
    pub(crate) fn with_agent_retrying_itself(mut self, retries: bool) -> Self {
        self.agent_retries_itself = retries;
        self
    }

    /// The provider can steer a running turn: `Interject` goes to the agent instead of the
    /// queue while a turn runs.
    pub(crate) fn with_interjections(mut self, can_interject: bool) -> Self {
        self.interjections = can_interject;
        self
    }

    /// Numbers the turns from `first` on (a resumed conversation goes on after its last turn).
    pub(crate) fn numbering_turns_from(mut self, first: TurnId) -> Self {
        self.next_turn = first.max(1);
        self
    }

    #[cfg(test)]
    pub(crate) fn state(&self) -> &State {
        &self.state
    }

    /// The prompts waiting for the running turn (or, after a failure, for the user).
    #[cfg(test)]
    pub(crate) fn queue(&self) -> &[String] {
        &self.queue
    }

    /// The session the next turn continues.
    #[cfg(test)]
    pub(crate) fn session(&self) -> &SessionRef {
        &self.session
    }

    #[cfg(test)]
    pub(crate) fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    pub(crate) fn handle(&mut self, input: Input) -> Vec<Effect> {
        let mut out = Vec::new();
        if self.state == State::ShutDown {
            return out;
        }
        match input {
            Input::Command(command) => self.command(command, &mut out),
            Input::Agent {
                turn,
                attempt,
                message,
            } => self.agent_message(turn, attempt, message, &mut out),
            Input::StopProgress {
                turn,
                attempt,
                progress,
            } => self.stop_progress(turn, attempt, progress, &mut out),
            Input::RetryDue { turn, attempt } => self.retry_due(turn, attempt, &mut out),
            Input::SessionRestored(session) => {
                if self.session != session {
                    let session_id = match &session {
                        SessionRef::Resume(id) => Some(id.clone()),
                        SessionRef::New | SessionRef::ContinueLatest => None,
                    };
                    self.session = session;
                    self.session_epoch += 1;
                    out.push(Effect::Emit(OrchestratorEvent::SessionChanged {
                        session_id,
                    }));
                }
            }
        }
        out
    }

    fn command(&mut self, command: Command, out: &mut Vec<Effect>) {
        match command {
            Command::Submit(prompt) => self.submit(prompt, out),
            Command::SubmitWithImages(prompt, images) => {
                self.submit_with_images(prompt, images, out)
            }
            Command::Stop => self.stop(out),
            Command::RetryLastTurn => self.retry_last_turn(out),
            Command::NewSession => self.new_session(out),
            Command::RemoveQueued(index) => {
                if index < self.queue.len() {
                    self.queue.remove(index);
                    self.emit_queue(out);
                }
            }
            Command::EditQueued(index, prompt) => {
                if index < self.queue.len() {
                    if prompt.trim().is_empty() {
                        self.queue.remove(index);
                    } else {
                        self.queue[index] = prompt;
                    }
                    self.emit_queue(out);
                }
            }
            Command::SetRetryPolicy(policy) => self.set_policy(policy, out),
            Command::Interject(kind, text) => self.interject(kind, text, out),
            Command::AnswerPermission {
                id,
                option,
                message,
            } => {
                // Only a running attempt can be waiting for an answer; a late one is dropped.
                if let State::Running { turn, attempt } = &self.state {
                    out.push(Effect::AnswerPermission {
                        turn: turn.id,
                        attempt: *attempt,
                        id,
                        option,
                        message,
                    });
                }
            }
            Command::ChangeSetting(setting) => {
                if !matches!(self.state, State::ShutDown) {
                    out.push(Effect::ChangeSetting(setting));
                }
            }
            Command::Rewind(asked) => self.rewind(asked, out),
            Command::UndoTurn { turn, overwrite } => match &self.state {
                State::Idle | State::Failed { .. } | State::Cancelled { .. } => {
                    out.push(Effect::UndoTurn { turn, overwrite });
                }
                State::ShutDown => {}
                State::Running { turn: running, .. }
                | State::Stopping { turn: running, .. }
                | State::WaitingToRetry { turn: running, .. } => {
                    out.push(Effect::Emit(OrchestratorEvent::Undone {
                        turn: running.id,
                        outcome: Err("a turn is running; undo once it has ended".to_owned()),
                    }));
                }
            },
            Command::Compact(instructions) => self.compact(instructions, out),
            Command::Shutdown => self.shutdown(out),
            // The driver finishes or rolls back an interrupted restore itself: no turn.
            Command::ResolveRestore { .. } => {}
        }
    }

    /// `/compact`: a turn of its own when no turn runs and there is a conversation to compact
    /// (the driver has asked the provider whether it can); otherwise one notice says why not.
    fn compact(&mut self, instructions: Option<String>, out: &mut Vec<Effect>) {
        let refused = |message: &str| {
            Effect::Emit(OrchestratorEvent::CompactionRefused {
                message: message.to_owned(),
            })
        };
        match &self.state {
            State::Idle | State::Failed { .. } | State::Cancelled { .. } => {
                if self.session == SessionRef::New {
                    out.push(refused(
                        "Nothing to compact yet: the agent has no conversation (send a prompt first).",
                    ));
                    return;
                }
                let turn = Turn {
                    id: self.next_turn,
                    prompt: instructions.unwrap_or_default(),
                    images: Vec::new(),
                    session: self.session.clone(),
                    session_epoch: self.session_epoch,
                    reported_session: None,
                    compaction: true,
                };
                self.next_turn += 1;
                out.push(Effect::Emit(OrchestratorEvent::CompactionStarted {
                    turn: turn.id,
                    instructions: Some(turn.prompt.clone()).filter(|text| !text.is_empty()),
                }));
                self.start_attempt(turn, 1, out);
            }
            State::Running { .. } | State::Stopping { .. } | State::WaitingToRetry { .. } => {
                out.push(refused(
                    "A turn is running: compact the conversation once it has ended.",
                ));
            }
            State::ShutDown => {}
        }
    }

    fn submit(&mut self, prompt: String, out: &mut Vec<Effect>) {
        if prompt.trim().is_empty() {
            return;
        }
        match &self.state {
            State::Idle | State::Failed { .. } | State::Cancelled { .. } => {
                if self.queue.is_empty() {
                    self.start_turn(prompt, None, out);
                } else {
                    // A paused queue resumes from its head; the new prompt goes behind it.
                    self.queue.push(prompt);
                    self.start_next_queued(out);
                }
            }
            State::Running { .. }
            | State::WaitingToRetry { .. }
            | State::Stopping {
                then: AfterStop::Continue,
                ..
            } => {
                self.queue.push(prompt);
                self.emit_queue(out);
            }
            State::Stopping {
                then: AfterStop::ShutDown,
                ..
            }
            | State::ShutDown => {}
        }
    }

    /// A prompt with images starts a turn now or not at all: the queue holds text only.
    fn submit_with_images(
        &mut self,
        prompt: String,
        images: Vec<crate::attachment::ImageAttachment>,
        out: &mut Vec<Effect>,
    ) {
        let idle = matches!(
            self.state,
            State::Idle | State::Failed { .. } | State::Cancelled { .. }
        );
        if idle && self.queue.is_empty() {
            self.start_turn_with_images(prompt, images, None, out);
        } else if !matches!(self.state, State::ShutDown) {
            out.push(Effect::Emit(OrchestratorEvent::Notice {
                turn: self.next_turn.saturating_sub(1),
                kind: NoticeKind::Warning,
                message: "The prompt with images was not sent: another prompt went first. \
                          Attach the images again once the agent is done."
                    .to_owned(),
            }));
        }
    }

    /// A rewind to before `turn` (or, `undone`, its undo) goes ahead only while no turn runs;
    /// otherwise each part asked for is refused in one line.
    fn rewind(&mut self, asked: RewindAsked, out: &mut Vec<Effect>) {
        match &self.state {
            State::Idle | State::Failed { .. } | State::Cancelled { .. } => {
                out.push(Effect::Rewind(asked));
            }
            State::ShutDown => {}
            State::Running { .. } | State::Stopping { .. } | State::WaitingToRetry { .. } => {
                let what = if asked.undone {
                    "undo the rewind"
                } else {
                    "rewind"
                };
                let refused = format!("a turn is running; {what} once it has ended");
                out.push(Effect::Emit(OrchestratorEvent::Rewound(super::Rewind {
                    turn: asked.turn,
                    conversation: asked.conversation.then(|| Err(refused.clone())),
                    files: asked.files.then(|| Err(refused.clone())),
                    undone: asked.undone,
                })));
            }
        }
    }

    fn interject(&mut self, kind: Interjection, text: String, out: &mut Vec<Effect>) {
        if text.trim().is_empty() {
            return;
        }
        match &self.state {
            State::Running { turn, attempt } if self.interjections && !turn.compaction => {
                out.push(Effect::Interject {
                    turn: turn.id,
                    attempt: *attempt,
                    kind,
                    text,
                });
            }
            _ => self.submit(text, out),
        }
    }

    fn stop(&mut self, out: &mut Vec<Effect>) {
        self.stop_turn(AfterStop::Continue, out);
    }

    fn retry_last_turn(&mut self, out: &mut Vec<Effect>) {
        let was_cancelled = matches!(self.state, State::Cancelled { .. });
        match std::mem::replace(&mut self.state, State::Idle) {
            // A compaction is not retried: `/compact` again asks for another.
            State::Failed { turn } | State::Cancelled { turn } if turn.compaction => {
                self.state = if was_cancelled {
                    State::Cancelled { turn }
                } else {
                    State::Failed { turn }
                };
            }
            State::Failed { turn } | State::Cancelled { turn } => {
                // A stopped turn's attempt stayed in the agent's session (what was shown
                // stands); its retry must not add the prompt a second time. A failed turn was
                // rolled back when it failed.
                if was_cancelled && turn.session != SessionRef::New {
                    out.push(Effect::Rollback { turn: turn.id });
                }
                // "The same session" is the failed turn's, unless the user asked for a new one
                // since.
                let session = if turn.session_epoch == self.session_epoch {
                    turn.session
                } else {
                    self.session.clone()
                };
                self.start_turn_with_images(turn.prompt, turn.images, Some(session), out);
            }
            State::WaitingToRetry {
                turn, next_attempt, ..
            } => {
                // Retry now instead of at the end of the countdown.
                out.push(Effect::CancelRetry {
                    turn: turn.id,
                    attempt: next_attempt,
                });
                self.start_attempt(turn, next_attempt, out);
            }
            other => self.state = other,
        }
    }

    fn new_session(&mut self, out: &mut Vec<Effect>) {
        self.session = SessionRef::New;
        self.session_epoch += 1;
        out.push(Effect::Emit(OrchestratorEvent::SessionChanged {
            session_id: None,
        }));
    }

    fn set_policy(&mut self, policy: RetryPolicy, out: &mut Vec<Effect>) {
        if policy.validate().is_err() {
            // The driver logs why; the machine keeps the policy it has.
            return;
        }
        self.policy = policy;
        let pending_retry_now_forbidden = match &self.state {
            State::WaitingToRetry { next_attempt, .. } => {
                !self.policy.enabled || *next_attempt > self.policy.max_attempts
            }
            _ => false,
        };
        if pending_retry_now_forbidden {
            if let State::WaitingToRetry {
                turn,
                next_attempt,
                failure,
                ..
            } = std::mem::replace(&mut self.state, State::Idle)
            {
                self.cancel_retry(&turn, next_attempt, out);
                self.end_turn(turn, failed_outcome(failure), AfterStop::Continue, out);
            }
        }
    }

    /// Asks the running attempt to stop; `then` says what follows once it has.
    fn begin_stop(&mut self, turn: Turn, attempt: u32, then: AfterStop, out: &mut Vec<Effect>) {
        out.push(Effect::StopAttempt {
            turn: turn.id,
            attempt,
        });
        self.state = State::Stopping {
            turn,
            attempt,
            progress: StopProgress::Running,
            then,
        };
    }

    fn shutdown(&mut self, out: &mut Vec<Effect>) {
        // With a turn in progress, wait for the agent to stop (it may be saving its session)
        // before exiting.
        if !self.stop_turn(AfterStop::ShutDown, out) {
            self.shut_down(out);
        }
    }

    /// Stops the turn in progress, `then` saying what follows once it has; `false`, with the
    /// state unchanged, when no turn is in progress.
    fn stop_turn(&mut self, then: AfterStop, out: &mut Vec<Effect>) -> bool {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Running { turn, attempt } => self.begin_stop(turn, attempt, then, out),
            State::Stopping {
                turn,
                attempt,
                progress,
                then: before,
            } => {
                // Asked again: a second stop skips the rest of the grace period, and so does a
                // second shutdown (on to the kill); a first shutdown only turns the user's stop
                // into one that exits.
                if then == AfterStop::Continue || before == AfterStop::ShutDown {
                    out.push(Effect::StopAttempt {
                        turn: turn.id,
                        attempt,
                    });
                }
                let then = if before == AfterStop::ShutDown {
                    AfterStop::ShutDown
                } else {
                    then
                };
                self.state = State::Stopping {
                    turn,
                    attempt,
                    progress,
                    then,
                };
            }
            State::WaitingToRetry {
                turn, next_attempt, ..
            } => {
                self.cancel_retry(&turn, next_attempt, out);
                self.end_turn(turn, TurnOutcome::Cancelled, then, out);
            }
            other @ (State::Idle
            | State::Failed { .. }
            | State::Cancelled { .. }
            | State::ShutDown) => {
                self.state = other;
                return false;
            }
        }
        true
    }

    fn agent_message(
        &mut self,
        turn_id: TurnId,
        attempt: u32,
        message: AgentMessage,
        out: &mut Vec<Effect>,
    ) {
        let current_turn = match &mut self.state {
            State::Running { turn, attempt: a }
            | State::Stopping {
                turn, attempt: a, ..
            } if turn.id == turn_id && *a == attempt => turn,
            // Not the current attempt: it has already ended (or never was).
            _ => return,
        };
        let reported_session = match &message {
            AgentMessage::SessionStarted {
                session_id: Some(id),
                ..
            }
            | AgentMessage::SessionResumed { session_id: id, .. } => Some(id.clone()),
            _ => None,
        };
        let end = match &message {
            AgentMessage::Completed { .. } => Some(AttemptEnd::Completed),
            AgentMessage::Cancelled { .. } => Some(AttemptEnd::Cancelled),
            AgentMessage::Failed(failure) => Some(AttemptEnd::Failed(failure.clone())),
            _ => None,
        };
        if let Some(id) = reported_session.filter(|id| !id.is_empty()) {
            current_turn.reported_session = Some(id);
        }
        out.push(Effect::Emit(OrchestratorEvent::Message {
            turn: turn_id,
            attempt,
            message,
        }));
        if let Some(end) = end {
            self.end_attempt(end, out);
        }
    }

    /// Carries the session of an attempt that completed or was stopped to the next turn.
    fn adopt_session(&mut self, turn: &Turn, out: &mut Vec<Effect>) {
        let Some(id) = turn.reported_session.clone() else {
            return;
        };
        if turn.session_epoch != self.session_epoch {
            return;
        }
        let session = SessionRef::Resume(id.clone());
        if self.session != session {
            self.session = session;
            out.push(Effect::Emit(OrchestratorEvent::SessionChanged {
                session_id: Some(id),
            }));
        }
    }

    fn end_attempt(&mut self, end: AttemptEnd, out: &mut Vec<Effect>) {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Running { turn, attempt } => match end {
                AttemptEnd::Completed => {
                    self.adopt_session(&turn, out);
                    self.end_turn(turn, TurnOutcome::Completed, AfterStop::Continue, out)
                }
                AttemptEnd::Cancelled => {
                    self.adopt_session(&turn, out);
                    self.end_turn(turn, TurnOutcome::Cancelled, AfterStop::Continue, out)
                }
                AttemptEnd::Failed(failure) => self.after_failure(turn, attempt, failure, out),
            },
            State::Stopping {
                turn,
                attempt,
                then,
                ..
            } => {
                // The user asked for a stop, so a failure that raced it is not retried.
                let outcome = match end {
                    AttemptEnd::Completed => {
                        self.adopt_session(&turn, out);
                        TurnOutcome::Completed
                    }
                    AttemptEnd::Cancelled => {
                        self.adopt_session(&turn, out);
                        TurnOutcome::Cancelled
                    }
                    AttemptEnd::Failed(failure) => {
                        out.push(Effect::Emit(OrchestratorEvent::FailureJudged {
                            turn: turn.id,
                            attempt,
                            verdict: FailureVerdict::stopped(&failure),
                        }));
                        self.roll_back(&turn, out);
                        failed_outcome(failure)
                    }
                };
                self.end_turn(turn, outcome, then, out);
            }
            other => self.state = other,
        }
    }

    /// Asks for the failed or stopped attempts of `turn` to be undone in the agent's session.
    fn roll_back(&self, turn: &Turn, out: &mut Vec<Effect>) {
        // A compaction adds no prompt to the session: there is nothing of it to undo.
        if turn.session != SessionRef::New && !turn.compaction {
            out.push(Effect::Rollback { turn: turn.id });
        }
    }

    /// The agent lost the session this turn continued: go on in a fresh one, now.
    fn continue_in_fresh_session(
        &mut self,
        mut turn: Turn,
        attempt: u32,
        failure: &Failure,
        out: &mut Vec<Effect>,
    ) {
        let lost = match &turn.session {
            SessionRef::Resume(id) => format!("session {id}"),
            _ => "its latest session".to_owned(),
        };
        let detail = failure.message.lines().next().unwrap_or("").trim();
        out.push(Effect::Emit(OrchestratorEvent::Notice {
            turn: turn.id,
            kind: NoticeKind::FreshSession,
            message: format!(
                "The agent could not find {lost} ({detail}); continuing in a fresh agent session. \
                 The transcript stays here, but the agent does not remember the earlier turns."
            ),
        }));
        turn.session = SessionRef::New;
        self.forget_session_of(&turn, out);
        self.start_attempt(turn, attempt + 1, out);
    }

    /// The next turns start a new agent session, if `turn` was continuing the current one.
    fn forget_session_of(&mut self, turn: &Turn, out: &mut Vec<Effect>) {
        if turn.session_epoch == self.session_epoch && self.session != SessionRef::New {
            self.session = SessionRef::New;
            out.push(Effect::Emit(OrchestratorEvent::SessionChanged {
                session_id: None,
            }));
        }
    }

    fn after_failure(&mut self, turn: Turn, attempt: u32, failure: Failure, out: &mut Vec<Effect>) {
        if turn.compaction {
            // Not a prompt: nothing to retry, nothing of it to undo in the agent's session.
            self.end_turn(turn, failed_outcome(failure), AfterStop::Continue, out);
            return;
        }
        let verdict = FailureVerdict::judge(
            &self.policy,
            attempt,
            &failure,
            turn.session != SessionRef::New,
        );
        let verdict = if self.agent_retries_itself {
            verdict.for_agent_retrying_itself()
        } else {
            verdict
        };
        out.push(Effect::Emit(OrchestratorEvent::FailureJudged {
            turn: turn.id,
            attempt,
            verdict: verdict.clone(),
        }));
        match verdict.next {
            NextStep::FreshSession => self.continue_in_fresh_session(turn, attempt, &failure, out),
            NextStep::RetryIn {
                attempt: next_attempt,
                max_attempts,
                delay_ms,
            } => {
                self.roll_back(&turn, out);
                out.push(Effect::Emit(OrchestratorEvent::RetryScheduled {
                    turn: turn.id,
                    attempt: next_attempt,
                    max_attempts,
                    delay_ms,
                    reason: retry_reason(&failure, verdict.classification.cause),
                }));
                out.push(Effect::ScheduleRetry {
                    turn: turn.id,
                    attempt: next_attempt,
                    delay_ms,
                });
                self.state = State::WaitingToRetry {
                    turn,
                    failed_attempt: attempt,
                    next_attempt,
                    delay_ms,
                    failure,
                };
            }
            NextStep::NotRetryable
            | NextStep::RetryOff
            | NextStep::AgentRetries
            | NextStep::WaitTooLong { .. }
            | NextStep::GaveUp { .. }
            | NextStep::Stopped => {
                self.roll_back(&turn, out);
                self.end_turn(turn, failed_outcome(failure), AfterStop::Continue, out);
            }
        }
    }

    fn retry_due(&mut self, turn_id: TurnId, attempt: u32, out: &mut Vec<Effect>) {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::WaitingToRetry {
                turn, next_attempt, ..
            } if turn.id == turn_id && next_attempt == attempt => {
                self.start_attempt(turn, next_attempt, out);
            }
            // A timer for a retry that was cancelled or already started.
            other => self.state = other,
        }
    }

    fn stop_progress(
        &mut self,
        turn_id: TurnId,
        attempt_id: u32,
        new_progress: StopProgress,
        out: &mut Vec<Effect>,
    ) {
        // Only a stop the user asked for is shown (the runner also stops lingering agents).
        if let State::Stopping {
            turn,
            attempt,
            progress,
            ..
        } = &mut self.state
        {
            if turn.id == turn_id && *attempt == attempt_id && *progress != new_progress {
                *progress = new_progress;
                out.push(Effect::Emit(OrchestratorEvent::StopProgress {
                    turn: turn_id,
                    progress: new_progress,
                }));
            }
        }
    }

    fn start_turn(&mut self, prompt: String, session: Option<SessionRef>, out: &mut Vec<Effect>) {
        self.start_turn_with_images(prompt, Vec::new(), session, out);
    }

    fn start_turn_with_images(
        &mut self,
        prompt: String,
        images: Vec<crate::attachment::ImageAttachment>,
        session: Option<SessionRef>,
        out: &mut Vec<Effect>,
    ) {
        let turn = Turn {
            id: self.next_turn,
            prompt,
            images,
            session: session.unwrap_or_else(|| self.session.clone()),
            session_epoch: self.session_epoch,
            reported_session: None,
            compaction: false,
        };
        self.next_turn += 1;
        out.push(Effect::Emit(OrchestratorEvent::TurnStarted {
            turn: turn.id,
            prompt: turn.prompt.clone(),
        }));
        if !turn.images.is_empty() {
            out.push(Effect::Emit(OrchestratorEvent::ImagesAttached {
                turn: turn.id,
                images: turn.images.iter().map(|image| image.record()).collect(),
            }));
        }
        self.start_attempt(turn, 1, out);
    }

    fn start_attempt(&mut self, mut turn: Turn, attempt: u32, out: &mut Vec<Effect>) {
        turn.reported_session = None;
        out.push(Effect::Emit(OrchestratorEvent::AttemptStarted {
            turn: turn.id,
            attempt,
            max_attempts: self.policy.attempts_per_turn().max(attempt),
        }));
        out.push(if turn.compaction {
            Effect::StartCompaction {
                turn: turn.id,
                attempt,
                instructions: Some(turn.prompt.clone()).filter(|text| !text.is_empty()),
                session: turn.session.clone(),
            }
        } else {
            Effect::StartAttempt {
                turn: turn.id,
                attempt,
                prompt: turn.prompt.clone(),
                images: turn.images.clone(),
                session: turn.session.clone(),
            }
        });
        self.state = State::Running { turn, attempt };
    }

    fn cancel_retry(&mut self, turn: &Turn, attempt: u32, out: &mut Vec<Effect>) {
        out.push(Effect::CancelRetry {
            turn: turn.id,
            attempt,
        });
        out.push(Effect::Emit(OrchestratorEvent::RetryCancelled {
            turn: turn.id,
        }));
    }

    fn end_turn(
        &mut self,
        turn: Turn,
        outcome: TurnOutcome,
        then: AfterStop,
        out: &mut Vec<Effect>,
    ) {
        out.push(Effect::Emit(OrchestratorEvent::TurnEnded {
            turn: turn.id,
            outcome: outcome.clone(),
        }));
        if then == AfterStop::ShutDown {
            self.shut_down(out);
            return;
        }
        match outcome {
            TurnOutcome::Completed => {
                self.state = State::Idle;
                self.start_next_queued(out);
            }
            // The user stopped this turn: the queue waits (the chat takes it back into the
            // editor) instead of sending the next prompt they may no longer want.
            TurnOutcome::Cancelled => self.state = State::Cancelled { turn },
            TurnOutcome::Failed { .. } => self.state = State::Failed { turn },
        }
    }

    fn start_next_queued(&mut self, out: &mut Vec<Effect>) {
        if self.queue.is_empty() {
            return;
        }
        let prompt = self.queue.remove(0);
        self.emit_queue(out);
        self.start_turn(prompt, None, out);
    }

    fn emit_queue(&self, out: &mut Vec<Effect>) {
        out.push(Effect::Emit(OrchestratorEvent::QueueChanged {
            queued: self.queue.clone(),
        }));
    }

    fn shut_down(&mut self, out: &mut Vec<Effect>) {
        self.state = State::ShutDown;
        out.push(Effect::Emit(OrchestratorEvent::ShutDown));
        out.push(Effect::Exit);
    }
}

fn failed_outcome(failure: Failure) -> TurnOutcome {
    TurnOutcome::Failed {
        reason: failure.reason,
        message: failure.message,
    }
}

/// The countdown's one-line reason: the classifier's cause and what the message adds.
fn retry_reason(failure: &Failure, cause: &str) -> String {
    super::classify::headline(cause, &failure.message)
}

#[cfg(test)]
#[path = "fsm_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "fsm_interject_tests.rs"]
mod interject_tests;
