//! Synchronous tests of every transition of the orchestrator's state machine.

use super::*;
use crate::config::Backoff;
use crate::stream::{FailureReason, StopStage};
use OrchestratorEvent as Ev;

fn enabled_policy(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        enabled: true,
        max_attempts,
        retry_delay_ms: 2000,
        backoff: Backoff::Exponential,
        max_delay_ms: 30_000,
    }
}

fn disabled_policy() -> RetryPolicy {
    RetryPolicy {
        enabled: false,
        ..enabled_policy(3)
    }
}

fn machine() -> Machine {
    Machine::new(enabled_policy(3), SessionRef::New)
}

fn command(machine: &mut Machine, command: Command) -> Vec<Effect> {
    machine.handle(Input::Command(command))
}

fn submit(machine: &mut Machine, prompt: &str) -> Vec<Effect> {
    command(machine, Command::Submit(prompt.into()))
}

fn agent(machine: &mut Machine, turn: TurnId, attempt: u32, message: AgentMessage) -> Vec<Effect> {
    machine.handle(Input::Agent {
        turn,
        attempt,
        message,
    })
}

fn completed() -> AgentMessage {
    AgentMessage::Completed {
        stop_reason: "stop".into(),
        usage: None,
    }
}

fn cancelled() -> AgentMessage {
    AgentMessage::Cancelled {
        stop_stage: StopStage::Interrupt,
        elapsed_ms: 40,
    }
}

fn failure(message: &str, http_status: Option<u16>) -> Failure {
    Failure {
        reason: FailureReason::AgentError,
        message: message.into(),
        http_status,
        ..Failure::default()
    }
}

fn rate_limited() -> AgentMessage {
    AgentMessage::Failed(failure("429 Too Many Requests", Some(429)))
}

fn unauthorised() -> AgentMessage {
    AgentMessage::Failed(failure("401 Incorrect API key provided", Some(401)))
}

fn text(delta: &str) -> AgentMessage {
    AgentMessage::Assistant {
        delta: delta.into(),
    }
}

fn events(effects: &[Effect]) -> Vec<OrchestratorEvent> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Emit(event) => Some(event.clone()),
            _ => None,
        })
        .collect()
}

fn actions(effects: &[Effect]) -> Vec<Effect> {
    effects
        .iter()
        .filter(|effect| !matches!(effect, Effect::Emit(_)))
        .cloned()
        .collect()
}

fn start(turn: TurnId, attempt: u32, prompt: &str, session: SessionRef) -> Effect {
    Effect::StartAttempt {
        turn,
        attempt,
        prompt: prompt.into(),
        images: Vec::new(),
        session,
    }
}

fn ended(turn: TurnId, outcome: TurnOutcome) -> OrchestratorEvent {
    Ev::TurnEnded { turn, outcome }
}

fn failed_outcome(message: &str) -> TurnOutcome {
    TurnOutcome::Failed {
        reason: FailureReason::AgentError,
        message: message.into(),
    }
}

fn queue_event(queued: &[&str]) -> OrchestratorEvent {
    Ev::QueueChanged {
        queued: queued.iter().map(|prompt| prompt.to_string()).collect(),
    }
}

/// Turn 1 failed retryably and waits for attempt 2.
fn retry_due(machine: &mut Machine, turn: TurnId, attempt: u32) -> Vec<Effect> {
    machine.handle(Input::RetryDue { turn, attempt })
}

/// The countdown to attempt 2 of turn 1 cancelled, and the turn ended with `outcome`.
fn retry_cancelled(outcome: TurnOutcome) -> [Effect; 3] {
    [
        Effect::CancelRetry {
            turn: 1,
            attempt: 2,
        },
        Effect::Emit(Ev::RetryCancelled { turn: 1 }),
        Effect::Emit(ended(1, outcome)),
    ]
}

/// Turn 1's rate-limited attempt judged `next` and the turn ended failed, nothing retried.
fn assert_failed_for_good(effects: &[Effect], next: NextStep) {
    assert!(matches!(
        &events(effects)[1],
        Ev::FailureJudged { verdict, .. } if verdict.next == next
    ));
    assert_eq!(
        events(effects)[2],
        ended(1, failed_outcome("429 Too Many Requests"))
    );
    assert!(actions(effects).is_empty());
}

fn waiting_for_attempt_2() -> Machine {
    let mut machine = machine();
    submit(&mut machine, "hi");
    agent(&mut machine, 1, 1, rate_limited());
    assert!(matches!(
        machine.state(),
        State::WaitingToRetry {
            next_attempt: 2,
            ..
        }
    ));
    machine
}

// ---- idle -> running -> done ----

#[test]
fn submit_when_idle_starts_turn_1_attempt_1() {
    let mut machine = machine();
    let effects = submit(&mut machine, "hello");
    assert_eq!(
        effects,
        [
            Effect::Emit(Ev::TurnStarted {
                turn: 1,
                prompt: "hello".into()
            }),
            Effect::Emit(Ev::AttemptStarted {
                turn: 1,
                attempt: 1,
                max_attempts: 3
            }),
            start(1, 1, "hello", SessionRef::New),
        ]
    );
    assert!(matches!(machine.state(), State::Running { attempt: 1, .. }));
}

#[test]
fn an_empty_prompt_is_ignored() {
    let mut machine = machine();
    assert!(submit(&mut machine, "  \n").is_empty());
    assert_eq!(machine.state(), &State::Idle);
}

#[test]
fn messages_are_forwarded_tagged_with_turn_and_attempt() {
    let mut machine = machine();
    submit(&mut machine, "hello");
    let effects = agent(&mut machine, 1, 1, text("Hi"));
    assert_eq!(
        effects,
        [Effect::Emit(Ev::Message {
            turn: 1,
            attempt: 1,
            message: text("Hi")
        })]
    );
}

#[test]
fn completion_ends_the_turn_and_returns_to_idle() {
    let mut machine = machine();
    submit(&mut machine, "hello");
    let effects = agent(&mut machine, 1, 1, completed());
    assert_eq!(
        events(&effects),
        [
            Ev::Message {
                turn: 1,
                attempt: 1,
                message: completed()
            },
            ended(1, TurnOutcome::Completed)
        ]
    );
    assert!(actions(&effects).is_empty());
    assert_eq!(machine.state(), &State::Idle);
    // The next prompt is turn 2.
    let effects = submit(&mut machine, "again");
    assert_eq!(actions(&effects), [start(2, 1, "again", SessionRef::New)]);
}

#[test]
fn nothing_of_an_ended_attempt_is_processed() {
    let mut machine = machine();
    submit(&mut machine, "hello");
    agent(&mut machine, 1, 1, completed());
    assert!(agent(&mut machine, 1, 1, text("late")).is_empty());
    assert!(agent(&mut machine, 1, 1, completed()).is_empty());
    // Nor a message for an attempt that never started.
    submit(&mut machine, "two");
    assert!(agent(&mut machine, 2, 7, text("??")).is_empty());
    assert!(agent(&mut machine, 9, 1, text("??")).is_empty());
}

// ---- failure and automatic retry ----

#[test]
fn a_retryable_failure_schedules_the_next_attempt() {
    let mut machine = machine();
    submit(&mut machine, "hi");
    let effects = agent(&mut machine, 1, 1, rate_limited());
    assert_eq!(
        effects,
        [
            Effect::Emit(Ev::Message {
                turn: 1,
                attempt: 1,
                message: rate_limited()
            }),
            Effect::Emit(Ev::FailureJudged {
                turn: 1,
                attempt: 1,
                verdict: FailureVerdict {
                    classification: crate::orchestrator::classify::Classification {
                        retryability: crate::orchestrator::classify::Retryability::Retryable,
                        cause: "rate limited (HTTP 429)",
                        retry_after_ms: None,
                    },
                    next: NextStep::RetryIn {
                        attempt: 2,
                        max_attempts: 3,
                        delay_ms: 2000
                    },
                },
            }),
            Effect::Emit(Ev::RetryScheduled {
                turn: 1,
                attempt: 2,
                max_attempts: 3,
                delay_ms: 2000,
                reason: "rate limited (HTTP 429)".into()
            }),
            Effect::ScheduleRetry {
                turn: 1,
                attempt: 2,
                delay_ms: 2000
            },
        ]
    );
    assert!(matches!(
        machine.state(),
        State::WaitingToRetry {
            failed_attempt: 1,
            next_attempt: 2,
            delay_ms: 2000,
            ..
        }
    ));
}

#[test]
fn the_failed_attempt_is_finished_once_it_failed() {
    let mut machine = waiting_for_attempt_2();
    assert!(agent(&mut machine, 1, 1, text("after the failure")).is_empty());
    assert!(agent(&mut machine, 1, 1, completed()).is_empty());
    assert!(matches!(machine.state(), State::WaitingToRetry { .. }));
    retry_due(&mut machine, 1, 2);
    assert!(agent(&mut machine, 1, 1, completed()).is_empty());
    assert!(matches!(machine.state(), State::Running { attempt: 2, .. }));
}

#[test]
fn retry_due_starts_a_fresh_attempt_with_the_same_prompt_and_session() {
    let mut machine = Machine::new(enabled_policy(3), SessionRef::Resume("s-0".into()));
    submit(&mut machine, "hi");
    agent(&mut machine, 1, 1, rate_limited());
    let effects = retry_due(&mut machine, 1, 2);
    assert_eq!(
        effects,
        [
            Effect::Emit(Ev::AttemptStarted {
                turn: 1,
                attempt: 2,
                max_attempts: 3
            }),
            start(1, 2, "hi", SessionRef::Resume("s-0".into())),
        ]
    );
    let effects = agent(&mut machine, 1, 2, completed());
    assert_eq!(events(&effects)[1], ended(1, TurnOutcome::Completed));
}

#[test]
fn a_stale_retry_timer_is_ignored() {
    let mut machine = waiting_for_attempt_2();
    assert!(retry_due(&mut machine, 1, 3).is_empty());
    assert!(retry_due(&mut machine, 2, 2).is_empty());
    retry_due(&mut machine, 1, 2);
    // The same timer again does not start a second attempt.
    assert!(retry_due(&mut machine, 1, 2).is_empty());
}

#[test]
fn max_attempts_bounds_the_attempts_with_backoff() {
    let mut machine = machine();
    submit(&mut machine, "hi");
    let mut starts = 1;
    let mut delays = Vec::new();
    for attempt in 1..=3 {
        let effects = agent(&mut machine, 1, attempt, rate_limited());
        for effect in &effects {
            match effect {
                Effect::ScheduleRetry {
                    attempt: next,
                    delay_ms,
                    ..
                } => {
                    delays.push(*delay_ms);
                    let started = machine.handle(Input::RetryDue {
                        turn: 1,
                        attempt: *next,
                    });
                    starts += actions(&started).len();
                }
                Effect::Emit(Ev::TurnEnded { outcome, .. }) => {
                    assert_eq!(outcome, &failed_outcome("429 Too Many Requests"));
                    assert_eq!(attempt, 3);
                }
                _ => {}
            }
        }
    }
    assert_eq!(starts, 3);
    assert_eq!(delays, [2000, 4000]);
    assert!(matches!(machine.state(), State::Failed { .. }));
}

#[test]
fn a_non_retryable_failure_ends_the_turn_even_with_retry_on() {
    let mut machine = machine();
    submit(&mut machine, "hi");
    let effects = agent(&mut machine, 1, 1, unauthorised());
    assert!(matches!(
        &events(&effects)[1],
        Ev::FailureJudged { turn: 1, attempt: 1, verdict }
            if verdict.next == NextStep::NotRetryable
                && verdict.classification.cause == "not authenticated (HTTP 401)"
    ));
    assert_eq!(
        events(&effects)[2],
        ended(1, failed_outcome("401 Incorrect API key provided"))
    );
    assert!(actions(&effects).is_empty());
    assert!(matches!(machine.state(), State::Failed { .. }));
}

#[test]
fn with_retry_off_a_turn_has_one_attempt() {
    let mut machine = Machine::new(RetryPolicy::off(), SessionRef::New);
    let effects = submit(&mut machine, "hi");
    assert!(effects.contains(&Effect::Emit(Ev::AttemptStarted {
        turn: 1,
        attempt: 1,
        max_attempts: 1
    })));
    let effects = agent(&mut machine, 1, 1, rate_limited());
    assert_failed_for_good(&effects, NextStep::RetryOff);
}

// ---- stop ----

#[test]
fn stop_while_running_stops_the_attempt_and_a_second_stop_escalates() {
    let mut machine = machine();
    submit(&mut machine, "hi");
    let stop = Effect::StopAttempt {
        turn: 1,
        attempt: 1,
    };
    assert_eq!(
        command(&mut machine, Command::Stop),
        std::slice::from_ref(&stop)
    );
    assert!(matches!(
        machine.state(),
        State::Stopping {
            then: AfterStop::Continue,
            ..
        }
    ));
    assert_eq!(command(&mut machine, Command::Stop), [stop]);
    // Output still arriving before the agent exits is kept.
    assert_eq!(agent(&mut machine, 1, 1, text("partial")).len(), 1);
    let effects = agent(&mut machine, 1, 1, cancelled());
    assert_eq!(events(&effects)[1], ended(1, TurnOutcome::Cancelled));
    assert!(matches!(machine.state(), State::Cancelled { .. }));
}

#[test]
fn stop_progress_is_shown_only_for_a_user_stop_and_only_when_it_changes() {
    let mut machine = machine();
    submit(&mut machine, "hi");
    let progress = |machine: &mut Machine, progress| {
        machine.handle(Input::StopProgress {
            turn: 1,
            attempt: 1,
            progress,
        })
    };
    // The runner stopping a lingering agent is not a user stop.
    assert!(progress(&mut machine, StopProgress::Interrupting).is_empty());
    command(&mut machine, Command::Stop);
    assert_eq!(
        progress(&mut machine, StopProgress::Interrupting),
        [Effect::Emit(Ev::StopProgress {
            turn: 1,
            progress: StopProgress::Interrupting
        })]
    );
    assert!(progress(&mut machine, StopProgress::Interrupting).is_empty());
    assert_eq!(progress(&mut machine, StopProgress::Waiting).len(), 1);
    assert!(machine
        .handle(Input::StopProgress {
            turn: 1,
            attempt: 2,
            progress: StopProgress::Killing
        })
        .is_empty());
}

#[test]
fn a_failure_racing_a_user_stop_is_not_retried() {
    let mut machine = machine();
    submit(&mut machine, "hi");
    command(&mut machine, Command::Stop);
    let effects = agent(&mut machine, 1, 1, rate_limited());
    assert_failed_for_good(&effects, NextStep::Stopped);
}

#[test]
fn a_completion_racing_a_user_stop_counts_as_completed() {
    let mut machine = machine();
    submit(&mut machine, "hi");
    command(&mut machine, Command::Stop);
    let effects = agent(&mut machine, 1, 1, completed());
    assert_eq!(events(&effects)[1], ended(1, TurnOutcome::Completed));
    assert_eq!(machine.state(), &State::Idle);
}

#[test]
fn stop_during_the_countdown_cancels_the_retry() {
    let mut machine = waiting_for_attempt_2();
    let effects = command(&mut machine, Command::Stop);
    assert_eq!(effects, retry_cancelled(TurnOutcome::Cancelled));
    assert!(matches!(machine.state(), State::Cancelled { .. }));
    // The timer firing anyway starts nothing.
    assert!(retry_due(&mut machine, 1, 2).is_empty());
}

#[test]
fn stop_with_nothing_running_does_nothing() {
    let mut machine = machine();
    assert!(command(&mut machine, Command::Stop).is_empty());
    submit(&mut machine, "hi");
    agent(&mut machine, 1, 1, unauthorised());
    assert!(command(&mut machine, Command::Stop).is_empty());
    assert!(matches!(machine.state(), State::Failed { .. }));
}

// ---- the queue ----

#[test]
fn a_prompt_submitted_during_a_turn_is_queued_and_sent_after_it() {
    let mut machine = machine();
    submit(&mut machine, "first");
    assert_eq!(
        submit(&mut machine, "second"),
        [Effect::Emit(queue_event(&["second"]))]
    );
    assert_eq!(
        submit(&mut machine, "third"),
        [Effect::Emit(queue_event(&["second", "third"]))]
    );
    let effects = agent(&mut machine, 1, 1, completed());
    assert_eq!(
        events(&effects)[1..],
        [
            ended(1, TurnOutcome::Completed),
            queue_event(&["third"]),
            Ev::TurnStarted {
                turn: 2,
                prompt: "second".into()
            },
            Ev::AttemptStarted {
                turn: 2,
                attempt: 1,
                max_attempts: 3
            },
        ]
    );
    assert_eq!(actions(&effects), [start(2, 1, "second", SessionRef::New)]);
    assert_eq!(machine.queue(), ["third"]);
}

#[test]
fn prompts_are_queued_during_a_countdown_and_a_stop() {
    let mut machine = waiting_for_attempt_2();
    assert_eq!(
        submit(&mut machine, "b"),
        [Effect::Emit(queue_event(&["b"]))]
    );
    retry_due(&mut machine, 1, 2);
    command(&mut machine, Command::Stop);
    assert_eq!(
        submit(&mut machine, "c"),
        [Effect::Emit(queue_event(&["b", "c"]))]
    );
}

#[test]
fn after_a_user_stop_the_queue_waits_and_can_be_taken_back() {
    let mut machine = machine();
    submit(&mut machine, "first");
    submit(&mut machine, "second");
    submit(&mut machine, "third");
    command(&mut machine, Command::Stop);
    let effects = agent(&mut machine, 1, 1, cancelled());
    assert!(
        actions(&effects).is_empty(),
        "nothing is sent after a stop: {effects:?}"
    );
    assert_eq!(machine.queue(), ["second", "third"]);
    // The chat takes the queue back into its editor, one RemoveQueued(0) per prompt.
    assert_eq!(
        command(&mut machine, Command::RemoveQueued(0)),
        [Effect::Emit(queue_event(&["third"]))]
    );
    assert_eq!(
        command(&mut machine, Command::RemoveQueued(0)),
        [Effect::Emit(queue_event(&[]))]
    );
    // The next prompt starts a turn at once.
    let effects = submit(&mut machine, "edited");
    assert_eq!(actions(&effects), [start(2, 1, "edited", SessionRef::New)]);
}

#[test]
fn after_a_stopped_countdown_the_queue_waits() {
    let mut machine = waiting_for_attempt_2();
    submit(&mut machine, "next");
    let effects = command(&mut machine, Command::Stop);
    assert_eq!(
        actions(&effects),
        [Effect::CancelRetry {
            turn: 1,
            attempt: 2
        }]
    );
    assert_eq!(machine.queue(), ["next"]);
}

#[test]
fn after_a_failure_the_queue_pauses_until_the_next_submit() {
    let mut machine = machine();
    submit(&mut machine, "a");
    submit(&mut machine, "b");
    let effects = agent(&mut machine, 1, 1, unauthorised());
    assert!(
        actions(&effects).is_empty(),
        "nothing is sent after a failure"
    );
    assert_eq!(machine.queue(), ["b"]);
    // A new prompt goes behind the paused queue, which resumes from its head.
    let effects = submit(&mut machine, "c");
    assert_eq!(events(&effects)[0], queue_event(&["c"]));
    assert_eq!(actions(&effects), [start(2, 1, "b", SessionRef::New)]);
}

#[test]
fn after_a_failure_a_manual_retry_runs_first_then_the_queue() {
    let mut machine = machine();
    submit(&mut machine, "a");
    submit(&mut machine, "b");
    agent(&mut machine, 1, 1, unauthorised());
    let effects = command(&mut machine, Command::RetryLastTurn);
    assert_eq!(actions(&effects), [start(2, 1, "a", SessionRef::New)]);
    let effects = agent(&mut machine, 2, 1, completed());
    assert_eq!(actions(&effects), [start(3, 1, "b", SessionRef::New)]);
}

#[test]
fn queued_prompts_can_be_edited_and_removed() {
    let mut machine = machine();
    submit(&mut machine, "running");
    submit(&mut machine, "a");
    submit(&mut machine, "b");
    submit(&mut machine, "c");
    assert_eq!(
        command(&mut machine, Command::EditQueued(1, "B!".into())),
        [Effect::Emit(queue_event(&["a", "B!", "c"]))]
    );
    assert_eq!(
        command(&mut machine, Command::RemoveQueued(0)),
        [Effect::Emit(queue_event(&["B!", "c"]))]
    );
    assert_eq!(
        command(&mut machine, Command::EditQueued(1, " ".into())),
        [Effect::Emit(queue_event(&["B!"]))],
        "editing to nothing removes"
    );
    assert!(command(&mut machine, Command::RemoveQueued(5)).is_empty());
    assert!(command(&mut machine, Command::EditQueued(1, "x".into())).is_empty());
    assert_eq!(machine.queue(), ["B!"]);
}

// ---- manual retry ----

#[test]
fn retry_last_turn_resends_a_failed_turn_in_its_session() {
    let mut machine = Machine::new(RetryPolicy::off(), SessionRef::Resume("s-1".into()));
    submit(&mut machine, "hi");
    agent(&mut machine, 1, 1, rate_limited());
    let effects = command(&mut machine, Command::RetryLastTurn);
    assert_eq!(
        effects,
        [
            Effect::Emit(Ev::TurnStarted {
                turn: 2,
                prompt: "hi".into()
            }),
            Effect::Emit(Ev::AttemptStarted {
                turn: 2,
                attempt: 1,
                max_attempts: 1
            }),
            start(2, 1, "hi", SessionRef::Resume("s-1".into())),
        ]
    );
}

#[test]
fn retry_last_turn_resends_a_cancelled_turn() {
    let mut machine = machine();
    submit(&mut machine, "hi");
    command(&mut machine, Command::Stop);
    agent(&mut machine, 1, 1, cancelled());
    let effects = command(&mut machine, Command::RetryLastTurn);
    assert_eq!(actions(&effects), [start(2, 1, "hi", SessionRef::New)]);
}

#[test]
fn retry_last_turn_does_nothing_after_success_or_while_running() {
    let mut machine = machine();
    assert!(command(&mut machine, Command::RetryLastTurn).is_empty());
    submit(&mut machine, "hi");
    assert!(command(&mut machine, Command::RetryLastTurn).is_empty());
    command(&mut machine, Command::Stop);
    assert!(command(&mut machine, Command::RetryLastTurn).is_empty());
    agent(&mut machine, 1, 1, completed());
    assert!(command(&mut machine, Command::RetryLastTurn).is_empty());
}

#[test]
fn retry_last_turn_during_the_countdown_retries_now() {
    let mut machine = waiting_for_attempt_2();
    let effects = command(&mut machine, Command::RetryLastTurn);
    assert_eq!(
        actions(&effects),
        [
            Effect::CancelRetry {
                turn: 1,
                attempt: 2
            },
            start(1, 2, "hi", SessionRef::New)
        ]
    );
}

// ---- sessions ----

fn session_started(id: &str) -> AgentMessage {
    AgentMessage::SessionStarted {
        provider: "pi".into(),
        session_id: Some(id.into()),
        model: None,
    }
}

#[test]
fn the_reported_session_is_carried_to_the_next_turn() {
    let mut machine = machine();
    submit(&mut machine, "one");
    let effects = agent(&mut machine, 1, 1, session_started("s-1"));
    assert_eq!(effects.len(), 1, "carried only once the attempt completes");
    let effects = agent(&mut machine, 1, 1, completed());
    assert_eq!(
        events(&effects)[1],
        Ev::SessionChanged {
            session_id: Some("s-1".into())
        }
    );
    let effects = submit(&mut machine, "two");
    assert_eq!(
        actions(&effects),
        [start(2, 1, "two", SessionRef::Resume("s-1".into()))]
    );
    // Resumed with the same id: no change to announce.
    let effects = agent(
        &mut machine,
        2,
        1,
        AgentMessage::SessionResumed {
            provider: "pi".into(),
            session_id: "s-1".into(),
            model: None,
        },
    );
    assert_eq!(effects.len(), 1);
    // A session.started without an id changes nothing.
    let effects = agent(
        &mut machine,
        2,
        1,
        AgentMessage::SessionStarted {
            provider: "pi".into(),
            session_id: None,
            model: None,
        },
    );
    assert_eq!(effects.len(), 1);
    assert_eq!(machine.session(), &SessionRef::Resume("s-1".into()));
}

#[test]
fn new_session_makes_the_next_turn_start_fresh() {
    let mut machine = Machine::new(enabled_policy(3), SessionRef::Resume("s-1".into()));
    assert_eq!(
        command(&mut machine, Command::NewSession),
        [Effect::Emit(Ev::SessionChanged { session_id: None })]
    );
    let effects = submit(&mut machine, "fresh");
    assert_eq!(actions(&effects), [start(1, 1, "fresh", SessionRef::New)]);
}

#[test]
fn new_session_during_a_turn_ignores_that_turns_session_id() {
    let mut machine = Machine::new(enabled_policy(3), SessionRef::Resume("old".into()));
    submit(&mut machine, "one");
    command(&mut machine, Command::NewSession);
    let effects = agent(
        &mut machine,
        1,
        1,
        AgentMessage::SessionResumed {
            provider: "pi".into(),
            session_id: "old".into(),
            model: None,
        },
    );
    assert_eq!(effects.len(), 1, "no SessionChanged");
    agent(&mut machine, 1, 1, completed());
    let effects = submit(&mut machine, "two");
    assert_eq!(actions(&effects), [start(2, 1, "two", SessionRef::New)]);
}

#[test]
fn automatic_retries_use_the_session_the_turn_started_in() {
    let mut machine = machine();
    submit(&mut machine, "hi");
    agent(&mut machine, 1, 1, session_started("half-made"));
    agent(&mut machine, 1, 1, rate_limited());
    let effects = retry_due(&mut machine, 1, 2);
    assert_eq!(actions(&effects), [start(1, 2, "hi", SessionRef::New)]);
}

#[test]
fn a_manual_retry_after_new_session_starts_fresh() {
    let mut machine = Machine::new(RetryPolicy::default(), SessionRef::Resume("s-1".into()));
    submit(&mut machine, "hi");
    agent(&mut machine, 1, 1, unauthorised());
    command(&mut machine, Command::NewSession);
    let effects = command(&mut machine, Command::RetryLastTurn);
    assert_eq!(actions(&effects), [start(2, 1, "hi", SessionRef::New)]);
}

// ---- policy changes ----

#[test]
fn an_invalid_policy_is_ignored() {
    let mut machine = machine();
    let invalid = RetryPolicy {
        max_attempts: 0,
        ..enabled_policy(3)
    };
    assert!(command(&mut machine, Command::SetRetryPolicy(invalid)).is_empty());
    assert_eq!(machine.policy(), &enabled_policy(3));
}

#[test]
fn a_new_policy_applies_to_the_next_decision() {
    let mut machine = Machine::new(RetryPolicy::default(), SessionRef::New);
    submit(&mut machine, "hi");
    command(&mut machine, Command::SetRetryPolicy(enabled_policy(2)));
    let effects = agent(&mut machine, 1, 1, rate_limited());
    assert!(actions(&effects).contains(&Effect::ScheduleRetry {
        turn: 1,
        attempt: 2,
        delay_ms: 2000
    }));
}

#[test]
fn turning_retry_off_during_the_countdown_ends_the_turn_as_failed() {
    let mut machine = waiting_for_attempt_2();
    let effects = command(&mut machine, Command::SetRetryPolicy(RetryPolicy::off()));
    assert_eq!(
        effects,
        retry_cancelled(failed_outcome("429 Too Many Requests"))
    );
    assert!(matches!(machine.state(), State::Failed { .. }));
}

#[test]
fn lowering_max_attempts_below_the_pending_one_ends_the_turn() {
    let mut machine = waiting_for_attempt_2();
    let effects = command(&mut machine, Command::SetRetryPolicy(enabled_policy(1)));
    assert!(events(&effects).contains(&ended(1, failed_outcome("429 Too Many Requests"))));
    let mut machine = waiting_for_attempt_2();
    let effects = command(&mut machine, Command::SetRetryPolicy(enabled_policy(5)));
    assert!(effects.is_empty(), "the pending retry stays");
}

// ---- shutdown ----

#[test]
fn shutdown_when_idle_exits_at_once() {
    let mut machine = machine();
    assert_eq!(
        command(&mut machine, Command::Shutdown),
        [Effect::Emit(Ev::ShutDown), Effect::Exit]
    );
    assert_eq!(machine.state(), &State::ShutDown);
    assert!(submit(&mut machine, "too late").is_empty());
    assert!(command(&mut machine, Command::Shutdown).is_empty());
}

#[test]
fn shutdown_while_running_waits_for_the_agent_and_drops_no_queue_silently() {
    let mut machine = machine();
    submit(&mut machine, "a");
    submit(&mut machine, "queued");
    let stop = Effect::StopAttempt {
        turn: 1,
        attempt: 1,
    };
    assert_eq!(
        command(&mut machine, Command::Shutdown),
        std::slice::from_ref(&stop)
    );
    assert!(submit(&mut machine, "ignored").is_empty());
    // Asked again: the kill.
    assert_eq!(command(&mut machine, Command::Shutdown), [stop]);
    let effects = agent(&mut machine, 1, 1, cancelled());
    assert_eq!(
        events(&effects)[1..],
        [ended(1, TurnOutcome::Cancelled), Ev::ShutDown]
    );
    assert_eq!(
        actions(&effects),
        [Effect::Exit],
        "the queue is not started"
    );
}

#[test]
fn shutdown_during_a_user_stop_does_not_escalate_at_first() {
    let mut machine = machine();
    submit(&mut machine, "a");
    command(&mut machine, Command::Stop);
    assert!(command(&mut machine, Command::Shutdown).is_empty());
    assert!(matches!(
        machine.state(),
        State::Stopping {
            then: AfterStop::ShutDown,
            ..
        }
    ));
    let effects = agent(&mut machine, 1, 1, cancelled());
    assert_eq!(actions(&effects), [Effect::Exit]);
}

#[test]
fn shutdown_during_the_countdown_cancels_it() {
    let mut machine = waiting_for_attempt_2();
    let effects = command(&mut machine, Command::Shutdown);
    assert_eq!(
        effects,
        [
            Effect::CancelRetry {
                turn: 1,
                attempt: 2
            },
            Effect::Emit(Ev::RetryCancelled { turn: 1 }),
            Effect::Emit(ended(1, TurnOutcome::Cancelled)),
            Effect::Emit(Ev::ShutDown),
            Effect::Exit,
        ]
    );
}

#[test]
fn shutdown_after_a_failure_exits() {
    let mut machine = machine();
    submit(&mut machine, "a");
    agent(&mut machine, 1, 1, unauthorised());
    assert_eq!(
        command(&mut machine, Command::Shutdown),
        [Effect::Emit(Ev::ShutDown), Effect::Exit]
    );
}

#[test]
fn the_retry_reason_is_one_short_line() {
    let long = "x".repeat(500);
    let reason = retry_reason(
        &failure(&format!("{long}\nsecond line"), None),
        "server error",
    );
    assert!(reason.starts_with("server error: xxx"));
    assert!(reason.ends_with('…'));
    assert!(!reason.contains('\n'));
    assert_eq!(retry_reason(&failure("", None), "timed out"), "timed out");
}

// ---- every input in every state keeps the invariants ----

mod properties {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Step {
        Submit,
        Stop,
        RetryLastTurn,
        NewSession,
        RemoveQueued(usize),
        EditQueued(usize),
        Policy(bool, u32),
        AnswerPermission,
        Undo,
        Shutdown,
        /// A message for the live attempt (if any), or for a stale one.
        Agent {
            live: bool,
            kind: u8,
        },
        Progress(u8),
        /// The pending timer (if any), or a stale one.
        RetryDue {
            pending: bool,
        },
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => Just(Step::Submit),
            2 => Just(Step::Stop),
            1 => Just(Step::RetryLastTurn),
            1 => Just(Step::NewSession),
            1 => (0usize..3).prop_map(Step::RemoveQueued),
            1 => (0usize..3).prop_map(Step::EditQueued),
            1 => (any::<bool>(), 1u32..5).prop_map(|(on, max)| Step::Policy(on, max)),
            1 => Just(Step::Shutdown),
            1 => Just(Step::AnswerPermission),
            1 => Just(Step::Undo),
            8 => (any::<bool>(), 0u8..7).prop_map(|(live, kind)| Step::Agent { live, kind }),
            1 => (0u8..5).prop_map(Step::Progress),
            3 => any::<bool>().prop_map(|pending| Step::RetryDue { pending }),
        ]
    }

    fn message(kind: u8) -> AgentMessage {
        match kind {
            0 => text("t"),
            1 => session_started("s"),
            2 => completed(),
            3 => cancelled(),
            4 => rate_limited(),
            5 => unauthorised(),
            _ => AgentMessage::notice(NoticeKind::Warning, "w"),
        }
    }

    fn progress(kind: u8) -> StopProgress {
        [
            StopProgress::Running,
            StopProgress::Interrupting,
            StopProgress::Waiting,
            StopProgress::Killing,
            StopProgress::Stopped,
        ][usize::from(kind) % 5]
    }

    /// What the driver would know, rebuilt from the effects alone.
    #[derive(Default)]
    struct Observer {
        live: Option<(TurnId, u32)>,
        pending_retry: Option<(TurnId, u32)>,
        started_turns: Vec<TurnId>,
        ended_turns: Vec<TurnId>,
        exited: bool,
        shown_queue: Vec<String>,
    }

    impl Observer {
        fn apply(&mut self, effects: &[Effect]) -> Result<(), TestCaseError> {
            prop_assert!(!self.exited || effects.is_empty(), "effects after Exit");
            for effect in effects {
                match effect {
                    Effect::StartAttempt { turn, attempt, .. }
                    | Effect::StartCompaction { turn, attempt, .. } => {
                        prop_assert!(self.live.is_none(), "two live attempts");
                        prop_assert!(self.pending_retry.is_none(), "start with a timer pending");
                        prop_assert!(!self.ended_turns.contains(turn), "attempt of an ended turn");
                        self.live = Some((*turn, *attempt));
                    }
                    Effect::StopAttempt { turn, attempt } => {
                        prop_assert_eq!(self.live, Some((*turn, *attempt)));
                    }
                    Effect::ScheduleRetry { turn, attempt, .. } => {
                        prop_assert!(self.live.is_none());
                        self.pending_retry = Some((*turn, *attempt));
                    }
                    Effect::CancelRetry { turn, attempt } => {
                        prop_assert_eq!(self.pending_retry, Some((*turn, *attempt)));
                        self.pending_retry = None;
                    }
                    Effect::Interject { turn, attempt, .. }
                    | Effect::AnswerPermission { turn, attempt, .. } => {
                        prop_assert_eq!(self.live, Some((*turn, *attempt)));
                    }
                    Effect::UndoTurn { .. } | Effect::Rewind(_) => {
                        prop_assert!(self.live.is_none(), "undo while an attempt runs");
                        prop_assert!(self.pending_retry.is_none(), "undo with a retry pending");
                    }
                    Effect::Rollback { turn } => {
                        prop_assert!(self.live.is_none(), "rollback while an attempt runs");
                        prop_assert!(self.started_turns.contains(turn));
                    }
                    Effect::Emit(Ev::TurnStarted { turn, .. }) => {
                        prop_assert!(!self.started_turns.contains(turn));
                        self.started_turns.push(*turn);
                    }
                    Effect::Emit(Ev::TurnEnded { turn, .. }) => {
                        prop_assert!(self.started_turns.contains(turn));
                        prop_assert!(!self.ended_turns.contains(turn), "turn ended twice");
                        prop_assert!(self.live.is_none(), "turn ended with a live attempt");
                        prop_assert!(self.pending_retry.is_none());
                        self.ended_turns.push(*turn);
                    }
                    Effect::Emit(Ev::QueueChanged { queued }) => {
                        self.shown_queue = queued.clone();
                    }
                    Effect::Emit(Ev::Message {
                        turn,
                        attempt,
                        message,
                    }) => {
                        prop_assert_eq!(self.live, Some((*turn, *attempt)));
                        if message.is_terminal() {
                            self.live = None;
                        }
                    }
                    Effect::Exit => {
                        prop_assert!(self.live.is_none(), "exit with a live attempt");
                        self.exited = true;
                    }
                    Effect::ChangeSetting(_) => prop_assert!(!self.exited),
                    Effect::Emit(_) => {}
                }
            }
            Ok(())
        }
    }

    proptest! {
        #[test]
        fn any_input_sequence_keeps_the_invariants(steps in proptest::collection::vec(step(), 1..80)) {
            let mut machine = machine();
            let mut observer = Observer::default();
            for step in steps {
                let input = match step {
                    Step::Submit => Input::Command(Command::Submit("p".into())),
                    Step::Stop => Input::Command(Command::Stop),
                    Step::RetryLastTurn => Input::Command(Command::RetryLastTurn),
                    Step::NewSession => Input::Command(Command::NewSession),
                    Step::RemoveQueued(index) => Input::Command(Command::RemoveQueued(index)),
                    Step::EditQueued(index) => Input::Command(Command::EditQueued(index, "e".into())),
                    Step::Policy(enabled, max_attempts) => Input::Command(Command::SetRetryPolicy(RetryPolicy {
                        enabled,
                        max_attempts,
                        retry_delay_ms: 10,
                        backoff: Backoff::Fixed,
                        max_delay_ms: 10,
                    })),
                    Step::Shutdown => Input::Command(Command::Shutdown),
                    Step::AnswerPermission => Input::Command(Command::AnswerPermission {
                        id: "0".into(),
                        option: Some("allow".into()),
                        message: None,
                    }),
                    Step::Undo => Input::Command(Command::UndoTurn { turn: 1, overwrite: false }),
                    Step::Agent { live, kind } => {
                        let (turn, attempt) = match observer.live {
                            Some(current) if live => current,
                            Some((turn, attempt)) => (turn, attempt.saturating_sub(1)),
                            None => (1, 1),
                        };
                        Input::Agent { turn, attempt, message: message(kind) }
                    }
                    Step::Progress(kind) => {
                        let (turn, attempt) = observer.live.unwrap_or((1, 1));
                        Input::StopProgress { turn, attempt, progress: progress(kind) }
                    }
                    Step::RetryDue { pending } => {
                        let (turn, attempt) = match observer.pending_retry {
                            // The driver's timer fires once.
                            Some(current) if pending => observer.pending_retry.take().unwrap_or(current),
                            Some((turn, attempt)) => (turn, attempt + 1),
                            None => (1, 2),
                        };
                        Input::RetryDue { turn, attempt }
                    }
                };
                let effects = machine.handle(input);
                observer.apply(&effects)?;
                // The queue the UI was last shown is the machine's queue.
                prop_assert_eq!(observer.shown_queue.as_slice(), machine.queue());
            }
        }
    }
}

// ---- retry never duplicates ----

fn lost_session() -> AgentMessage {
    AgentMessage::Failed(Failure {
        reason: FailureReason::SessionLost,
        message: "No conversation found with session ID: s-1".into(),
        ..Failure::default()
    })
}

#[test]
fn a_failed_first_turn_does_not_leave_its_session_to_the_next_turn() {
    let mut machine = Machine::new(disabled_policy(), SessionRef::New);
    submit(&mut machine, "one");
    agent(&mut machine, 1, 1, session_started("failed-session"));
    let effects = agent(&mut machine, 1, 1, rate_limited());
    assert!(
        !actions(&effects)
            .iter()
            .any(|effect| matches!(effect, Effect::Rollback { .. })),
        "a new session has nothing to roll back"
    );
    assert_eq!(machine.session(), &SessionRef::New);
    let effects = submit(&mut machine, "two");
    assert_eq!(actions(&effects), [start(2, 1, "two", SessionRef::New)]);
}

#[test]
fn a_failure_in_a_continued_session_is_rolled_back_before_anything_else() {
    let resumed = SessionRef::Resume("s-1".into());
    let mut machine = Machine::new(enabled_policy(3), resumed.clone());
    submit(&mut machine, "hi");
    let effects = agent(&mut machine, 1, 1, rate_limited());
    assert_eq!(
        actions(&effects),
        [
            Effect::Rollback { turn: 1 },
            Effect::ScheduleRetry {
                turn: 1,
                attempt: 2,
                delay_ms: 2000
            }
        ]
    );
    let effects = retry_due(&mut machine, 1, 2);
    assert_eq!(actions(&effects), [start(1, 2, "hi", resumed.clone())]);
    // The last failure is rolled back too, and the session is still the one to continue.
    let effects = agent(&mut machine, 1, 2, unauthorised());
    assert_eq!(actions(&effects), [Effect::Rollback { turn: 1 }]);
    assert_eq!(machine.session(), &resumed);
}

#[test]
fn retrying_a_stopped_turn_rolls_its_attempt_back_first() {
    let resumed = SessionRef::Resume("s-1".into());
    let mut machine = Machine::new(enabled_policy(3), resumed.clone());
    submit(&mut machine, "hi");
    command(&mut machine, Command::Stop);
    agent(&mut machine, 1, 1, cancelled());
    let effects = command(&mut machine, Command::RetryLastTurn);
    assert_eq!(
        actions(&effects),
        [Effect::Rollback { turn: 1 }, start(2, 1, "hi", resumed)]
    );
}

#[test]
fn a_lost_session_goes_on_at_once_in_a_fresh_one_with_a_notice() {
    // Even with retries off: this is not a retry of a transient failure.
    let mut machine = Machine::new(disabled_policy(), SessionRef::Resume("s-1".into()));
    submit(&mut machine, "hi");
    let effects = agent(&mut machine, 1, 1, lost_session());
    assert_eq!(actions(&effects), [start(1, 2, "hi", SessionRef::New)]);
    let notices: Vec<_> = events(&effects)
        .into_iter()
        .filter_map(|event| match event {
            Ev::Notice { kind, message, .. } => Some((kind, message)),
            _ => None,
        })
        .collect();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].0, NoticeKind::FreshSession);
    assert!(notices[0].1.contains("s-1"), "{}", notices[0].1);
    assert!(events(&effects).contains(&Ev::SessionChanged { session_id: None }));
    // The fresh session's id is carried once the attempt completes.
    agent(&mut machine, 1, 2, session_started("fresh"));
    agent(&mut machine, 1, 2, completed());
    assert_eq!(machine.session(), &SessionRef::Resume("fresh".into()));
}

#[test]
fn a_second_lost_session_in_the_same_turn_is_an_ordinary_failure() {
    let mut machine = Machine::new(disabled_policy(), SessionRef::Resume("s-1".into()));
    submit(&mut machine, "hi");
    agent(&mut machine, 1, 1, lost_session());
    let effects = agent(&mut machine, 1, 2, lost_session());
    assert!(matches!(
        events(&effects).last(),
        Some(Ev::TurnEnded {
            outcome: TurnOutcome::Failed { .. },
            ..
        })
    ));
}

#[test]
fn a_setting_change_reaches_the_agent_whatever_runs_until_shutdown() {
    use crate::provider::AgentSetting;
    let mut machine = Machine::new(RetryPolicy::default(), SessionRef::New);
    let change = || Input::Command(Command::ChangeSetting(AgentSetting::Model("m2".into())));
    let expected = [Effect::ChangeSetting(AgentSetting::Model("m2".into()))];
    assert_eq!(machine.handle(change()), expected, "idle");
    machine.handle(Input::Command(Command::Submit("go".into())));
    assert_eq!(machine.handle(change()), expected, "during a turn");
    let mut idle = Machine::new(RetryPolicy::default(), SessionRef::New);
    idle.handle(Input::Command(Command::Shutdown));
    assert_eq!(idle.state(), &State::ShutDown);
    assert!(idle.handle(change()).is_empty(), "after shutdown");
}

#[test]
fn a_permission_answer_reaches_the_running_attempt_only() {
    let mut machine = Machine::new(RetryPolicy::default(), SessionRef::New);
    let answer = || {
        Input::Command(Command::AnswerPermission {
            id: "0".into(),
            option: Some("reject".into()),
            message: Some("use mkdir".into()),
        })
    };
    assert!(machine.handle(answer()).is_empty(), "no turn runs");
    machine.handle(Input::Command(Command::Submit("go".into())));
    let effects = machine.handle(answer());
    assert!(
        matches!(&effects[..], [Effect::AnswerPermission { turn: 1, attempt: 1, id, option: Some(option), message: Some(message) }] if id == "0" && option == "reject" && message == "use mkdir"),
        "{effects:?}"
    );
}

#[test]
fn undo_is_asked_for_only_while_no_turn_runs() {
    let mut machine = Machine::new(RetryPolicy::default(), SessionRef::New);
    let undo = || {
        Input::Command(Command::UndoTurn {
            turn: 1,
            overwrite: true,
        })
    };
    assert_eq!(
        machine.handle(undo()),
        [Effect::UndoTurn {
            turn: 1,
            overwrite: true
        }]
    );
    machine.handle(Input::Command(Command::Submit("edit".into())));
    let refused = machine.handle(undo());
    assert!(
        matches!(
            refused.as_slice(),
            [Effect::Emit(OrchestratorEvent::Undone {
                turn: 1,
                outcome: Err(_)
            })]
        ),
        "{refused:?}"
    );
}

fn started_images(
    effects: &[Effect],
) -> Option<(TurnId, u32, Vec<crate::attachment::ImageAttachment>)> {
    effects.iter().find_map(|effect| match effect {
        Effect::StartAttempt {
            turn,
            attempt,
            images,
            ..
        } => Some((*turn, *attempt, images.clone())),
        _ => None,
    })
}

#[test]
fn a_prompt_with_images_sends_them_on_every_attempt_and_on_its_retry() {
    let image = crate::attachment::ImageAttachment::from_bytes(
        "/work/shot.png".into(),
        b"\x89PNG\r\n\x1a\nbytes".to_vec(),
    )
    .unwrap();
    let mut machine = Machine::new(enabled_policy(2), SessionRef::New);
    let effects = command(
        &mut machine,
        Command::SubmitWithImages("look".into(), vec![image.clone()]),
    );
    assert!(
        events(&effects).contains(&Ev::ImagesAttached {
            turn: 1,
            images: vec![image.record()],
        }),
        "the log is told what the turn carries"
    );
    assert_eq!(started_images(&effects), Some((1, 1, vec![image.clone()])));
    // A second prompt with images while this one runs is refused, not queued without them.
    let refused = command(
        &mut machine,
        Command::SubmitWithImages("another".into(), vec![image.clone()]),
    );
    assert!(
        matches!(&events(&refused)[..], [Ev::Notice { message, .. }] if message.contains("was not sent")),
        "{refused:?}"
    );
    agent(&mut machine, 1, 1, rate_limited());
    let retried = retry_due(&mut machine, 1, 2);
    assert_eq!(started_images(&retried), Some((1, 2, vec![image.clone()])));
    agent(&mut machine, 1, 2, rate_limited());
    assert!(matches!(machine.state(), State::Failed { .. }));
    let again = command(&mut machine, Command::RetryLastTurn);
    assert_eq!(started_images(&again), Some((2, 1, vec![image])));
}

/// `/compact` is a turn of its own: no prompt, not retried, not steered, refused while a
/// turn runs or before there is a conversation.
mod compaction {
    use super::super::*;
    use crate::stream::{Failure, FailureReason};

    fn retrying() -> RetryPolicy {
        RetryPolicy {
            enabled: true,
            max_attempts: 3,
            ..RetryPolicy::default()
        }
    }

    fn refused(effects: &[Effect]) -> Option<&str> {
        effects.iter().find_map(|effect| match effect {
            Effect::Emit(OrchestratorEvent::CompactionRefused { message }) => {
                Some(message.as_str())
            }
            _ => None,
        })
    }

    #[test]
    fn a_new_session_has_nothing_to_compact() {
        let mut machine = Machine::new(retrying(), SessionRef::New);
        let effects = machine.handle(Input::Command(Command::Compact(None)));
        assert!(refused(&effects)
            .unwrap()
            .starts_with("Nothing to compact yet"));
        assert_eq!(machine.state(), &State::Idle);
    }

    #[test]
    fn a_failed_compaction_is_not_retried_nor_rolled_back() {
        let session = SessionRef::Resume("s1".into());
        let mut machine = Machine::new(retrying(), session.clone()).with_interjections(true);
        let effects = machine.handle(Input::Command(Command::Compact(Some("keep it".into()))));
        assert!(effects.contains(&Effect::StartCompaction {
            turn: 1,
            attempt: 1,
            instructions: Some("keep it".into()),
            session,
        }));
        // While it runs: a prompt waits (no steering into a compaction), `/compact` is refused.
        let effects = machine.handle(Input::Command(Command::Interject(
            Interjection::Steer,
            "next".into(),
        )));
        assert!(!effects
            .iter()
            .any(|effect| matches!(effect, Effect::Interject { .. })));
        assert_eq!(machine.queue(), ["next".to_owned()]);
        let effects = machine.handle(Input::Command(Command::Compact(None)));
        assert!(refused(&effects).unwrap().starts_with("A turn is running"));
        // A retryable failure (HTTP 503) still ends it: no retry, no rollback.
        let effects = machine.handle(Input::Agent {
            turn: 1,
            attempt: 1,
            message: AgentMessage::Failed(Failure {
                reason: FailureReason::AgentError,
                message: "HTTP 503 service unavailable".into(),
                http_status: Some(503),
                ..Failure::default()
            }),
        });
        assert!(!effects.iter().any(|effect| matches!(
            effect,
            Effect::ScheduleRetry { .. } | Effect::Rollback { .. }
        )));
        assert!(matches!(machine.state(), State::Failed { .. }));
        // Retry means a prompt's turn: it does not compact again.
        let effects = machine.handle(Input::Command(Command::RetryLastTurn));
        assert!(effects.is_empty(), "{effects:?}");
    }
}
