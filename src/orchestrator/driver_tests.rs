//! The driver with a scripted in-process provider: timers on a paused clock, no processes.
//! (Real agent processes are exercised in tests/suite/orchestrator.rs.)

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;

use super::*;
use crate::config::Backoff;
use crate::orchestrator::{run_headless_turn, RewindAsked, TurnOutcome};
use crate::provider::{AgentStream, StopControl, StopProgress};
use crate::stream::{AgentMessage, Failure, FailureReason, NoticeKind, StopStage};
use OrchestratorEvent as Ev;

/// What one scripted attempt does.
enum Script {
    /// These messages (the last one terminal, normally), then the stream ends.
    Messages(Vec<AgentMessage>),
    /// These messages, then waits for the stop and ends cancelled at the interrupt stage.
    UntilStopped(Vec<AgentMessage>),
    /// These messages, then ignores the interrupt and ends only when killed.
    UntilKilled(Vec<AgentMessage>),
    /// These messages, then waits for a permission answer, then the rest.
    UntilAnswered(Vec<AgentMessage>, Vec<AgentMessage>),
}

/// A permission answer as the provider received it: id, option, note.
type Answer = (String, Option<String>, Option<String>);

#[derive(Default)]
struct ScriptedProvider {
    scripts: Mutex<VecDeque<Script>>,
    requests: Mutex<Vec<AttemptRequest>>,
    answers: Mutex<Vec<Answer>>,
    answered: Arc<tokio::sync::Notify>,
    /// Whether the "protocol" carries a note with a rejection.
    carries_feedback: bool,
}

impl ScriptedProvider {
    fn new(scripts: impl IntoIterator<Item = Script>) -> Arc<Self> {
        Arc::new(Self {
            scripts: Mutex::new(scripts.into_iter().collect()),
            ..Self::default()
        })
    }

    fn carrying_feedback(scripts: impl IntoIterator<Item = Script>) -> Arc<Self> {
        Arc::new(Self {
            scripts: Mutex::new(scripts.into_iter().collect()),
            carries_feedback: true,
            ..Self::default()
        })
    }

    fn answers(&self) -> Vec<Answer> {
        self.answers.lock().unwrap().clone()
    }

    fn requests(&self) -> Vec<AttemptRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn answer_permission(&self, id: &str, option: Option<String>, message: Option<String>) -> bool {
        self.answers
            .lock()
            .unwrap()
            .push((id.to_owned(), option, message));
        self.answered.notify_one();
        true
    }

    fn takes_permission_feedback(&self) -> bool {
        self.carries_feedback
    }

    fn execute(&self, request: AttemptRequest, stop: StopControl) -> AgentStream {
        self.requests.lock().unwrap().push(request);
        let script = self
            .scripts
            .lock()
            .unwrap()
            .pop_front()
            .expect("the provider was called more often than scripted");
        let (messages, ends_on) = match script {
            Script::Messages(messages) => return futures::stream::iter(messages).boxed(),
            Script::UntilAnswered(before, after) => {
                let answered = self.answered.clone();
                let waits = async move {
                    answered.notified().await;
                    futures::stream::iter(after)
                };
                return futures::stream::iter(before)
                    .chain(futures::stream::once(waits).flatten())
                    .boxed();
            }
            Script::UntilStopped(messages) => (messages, StopStage::Interrupt),
            Script::UntilKilled(messages) => (messages, StopStage::Kill),
        };
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            for message in messages {
                let _ = tx.send(message);
            }
            let token = match ends_on {
                StopStage::Kill => stop.kill_token().clone(),
                _ => stop.stop_token().clone(),
            };
            token.cancelled().await;
            stop.set_progress(match ends_on {
                StopStage::Kill => StopProgress::Killing,
                _ => StopProgress::Interrupting,
            });
            tokio::time::sleep(Duration::from_millis(30)).await;
            stop.set_progress(StopProgress::Stopped);
            let _ = tx.send(AgentMessage::Cancelled {
                stop_stage: ends_on,
                elapsed_ms: 30,
            });
        });
        futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|message| (message, rx))
        })
        .boxed()
    }
}

fn policy(max_attempts: u32, retry_delay_ms: u64) -> RetryPolicy {
    RetryPolicy {
        enabled: true,
        max_attempts,
        retry_delay_ms,
        backoff: Backoff::Exponential,
        max_delay_ms: 600_000,
    }
}

fn options(provider: &Arc<ScriptedProvider>, policy: RetryPolicy) -> OrchestratorOptions {
    OrchestratorOptions {
        policy,
        ..OrchestratorOptions::new(provider.clone())
    }
}

fn text(delta: &str) -> AgentMessage {
    AgentMessage::Assistant {
        delta: delta.into(),
    }
}

fn completed() -> AgentMessage {
    AgentMessage::Completed {
        stop_reason: "stop".into(),
        usage: None,
    }
}

fn failed(message: &str, http_status: u16) -> AgentMessage {
    AgentMessage::Failed(Failure {
        reason: FailureReason::AgentError,
        message: message.into(),
        // 0: the agent reported no status.
        http_status: (http_status != 0).then_some(http_status),
        ..Failure::default()
    })
}

/// Events, with the (virtual) time each arrived, until one matches `last`.
async fn events_until(
    handle: &mut OrchestratorHandle,
    last: impl Fn(&OrchestratorEvent) -> bool,
) -> Vec<(Instant, OrchestratorEvent)> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(3600), handle.events.recv())
            .await
            .unwrap_or_else(|_| panic!("no event for an hour; so far: {seen:#?}"))
            .unwrap_or_else(|| panic!("the orchestrator ended; so far: {seen:#?}"));
        let done = last(&event);
        seen.push((Instant::now(), event));
        if done {
            return seen;
        }
    }
}

fn turn_ended(event: &OrchestratorEvent) -> bool {
    matches!(event, Ev::TurnEnded { .. })
}

fn only_events(timed: &[(Instant, OrchestratorEvent)]) -> Vec<OrchestratorEvent> {
    timed.iter().map(|(_, event)| event.clone()).collect()
}

fn arrival(
    timed: &[(Instant, OrchestratorEvent)],
    wanted: impl Fn(&OrchestratorEvent) -> bool,
) -> Instant {
    timed
        .iter()
        .find(|(_, event)| wanted(event))
        .map(|(at, _)| *at)
        .expect("the event arrived")
}

#[tokio::test(start_paused = true)]
async fn each_retry_waits_exactly_the_backoff_delay() {
    let provider = ScriptedProvider::new([
        Script::Messages(vec![text("one"), failed("429 Too Many Requests", 429)]),
        Script::Messages(vec![failed("503 Service Unavailable", 503)]),
        Script::Messages(vec![text("done"), completed()]),
    ]);
    let mut handle = spawn_orchestrator(options(&provider, policy(3, 2000)));
    handle.commands.send(Command::Submit("hi".into())).unwrap();
    let timed = events_until(&mut handle, turn_ended).await;

    let scheduled = |attempt: u32| {
        arrival(
            &timed,
            move |event| matches!(event, Ev::RetryScheduled { attempt: a, .. } if *a == attempt),
        )
    };
    let started = |attempt: u32| {
        arrival(
            &timed,
            move |event| matches!(event, Ev::AttemptStarted { attempt: a, .. } if *a == attempt),
        )
    };
    assert_eq!(started(2) - scheduled(2), Duration::from_millis(2000));
    assert_eq!(started(3) - scheduled(3), Duration::from_millis(4000));
    assert_eq!(
        timed.last().map(|(_, event)| event.clone()),
        Some(Ev::TurnEnded {
            turn: 1,
            outcome: TurnOutcome::Completed
        })
    );
    let requests = provider.requests();
    let attempts: Vec<u32> = requests.iter().map(|request| request.attempt).collect();
    assert_eq!(attempts, [1, 2, 3], "one provider call per attempt");
    assert!(requests.iter().all(|request| request.prompt == "hi"));
    // The failed attempt's partial output was forwarded, tagged with its attempt.
    assert!(only_events(&timed).contains(&Ev::Message {
        turn: 1,
        attempt: 1,
        message: text("one")
    }));
}

#[tokio::test(start_paused = true)]
async fn stop_during_the_countdown_starts_no_further_attempt() {
    let provider = ScriptedProvider::new([Script::Messages(vec![failed("overloaded", 529)])]);
    let mut handle = spawn_orchestrator(options(&provider, policy(3, 60_000)));
    handle.commands.send(Command::Submit("hi".into())).unwrap();
    events_until(&mut handle, |event| {
        matches!(event, Ev::RetryScheduled { .. })
    })
    .await;
    handle.commands.send(Command::Stop).unwrap();
    let timed = events_until(&mut handle, turn_ended).await;
    assert_eq!(
        only_events(&timed),
        [
            Ev::RetryCancelled { turn: 1 },
            Ev::TurnEnded {
                turn: 1,
                outcome: TurnOutcome::Cancelled
            }
        ]
    );
    // Long past the retry's due time: still one call.
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(provider.requests().len(), 1);
    handle.commands.send(Command::Shutdown).unwrap();
    assert_eq!(handle.events.recv().await, Some(Ev::ShutDown));
    assert_eq!(handle.events.recv().await, None);
}

#[tokio::test(start_paused = true)]
async fn a_stream_without_a_terminal_message_fails_the_turn() {
    let provider = ScriptedProvider::new([Script::Messages(vec![text("cut off")])]);
    let mut handle = spawn_orchestrator(options(&provider, policy(3, 10)));
    handle.commands.send(Command::Submit("hi".into())).unwrap();
    let events = only_events(&events_until(&mut handle, turn_ended).await);
    assert_eq!(
        events.last(),
        Some(&Ev::TurnEnded {
            turn: 1,
            outcome: TurnOutcome::Failed {
                reason: FailureReason::NoCompletion,
                message: "the provider ended the attempt without a terminal message".into()
            }
        })
    );
    assert_eq!(
        provider.requests().len(),
        1,
        "an unrecognised failure is not retried"
    );
}

#[tokio::test(start_paused = true)]
async fn a_user_stop_shows_its_progress_and_cancels_the_turn() {
    let provider = ScriptedProvider::new([Script::UntilStopped(vec![text("working")])]);
    let mut handle = spawn_orchestrator(options(&provider, policy(3, 10)));
    handle.commands.send(Command::Submit("hi".into())).unwrap();
    events_until(&mut handle, |event| matches!(event, Ev::Message { .. })).await;
    handle.commands.send(Command::Stop).unwrap();
    let events = only_events(&events_until(&mut handle, turn_ended).await);
    assert_eq!(
        events,
        [
            Ev::StopProgress {
                turn: 1,
                progress: StopProgress::Interrupting
            },
            Ev::StopProgress {
                turn: 1,
                progress: StopProgress::Stopped
            },
            Ev::Message {
                turn: 1,
                attempt: 1,
                message: AgentMessage::Cancelled {
                    stop_stage: StopStage::Interrupt,
                    elapsed_ms: 30
                }
            },
            Ev::TurnEnded {
                turn: 1,
                outcome: TurnOutcome::Cancelled
            },
        ]
    );
    assert_eq!(provider.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_second_stop_kills() {
    let provider = ScriptedProvider::new([Script::UntilKilled(vec![text("stubborn")])]);
    let mut handle = spawn_orchestrator(options(&provider, policy(3, 10)));
    handle.commands.send(Command::Submit("hi".into())).unwrap();
    events_until(&mut handle, |event| matches!(event, Ev::Message { .. })).await;
    handle.commands.send(Command::Stop).unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    handle.commands.send(Command::Stop).unwrap();
    let events = only_events(&events_until(&mut handle, turn_ended).await);
    assert!(events.contains(&Ev::StopProgress {
        turn: 1,
        progress: StopProgress::Killing
    }));
    assert_eq!(
        events.last(),
        Some(&Ev::TurnEnded {
            turn: 1,
            outcome: TurnOutcome::Cancelled
        })
    );
}

#[tokio::test(start_paused = true)]
async fn closing_the_command_channel_stops_the_agent_and_shuts_down() {
    let provider = ScriptedProvider::new([Script::UntilStopped(vec![text("working")])]);
    let OrchestratorHandle {
        commands,
        mut events,
    } = spawn_orchestrator(options(&provider, policy(3, 10)));
    commands.send(Command::Submit("hi".into())).unwrap();
    drop(commands);
    let mut seen = Vec::new();
    while let Some(event) = events.recv().await {
        seen.push(event);
    }
    let tail = &seen[seen.len() - 2..];
    assert_eq!(
        tail,
        [
            Ev::TurnEnded {
                turn: 1,
                outcome: TurnOutcome::Cancelled
            },
            Ev::ShutDown
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn the_session_cwd_and_scenario_reach_each_request() {
    let provider = ScriptedProvider::new([
        Script::Messages(vec![
            AgentMessage::SessionStarted {
                provider: "scripted".into(),
                session_id: Some("s-1".into()),
                model: None,
            },
            completed(),
        ]),
        Script::Messages(vec![completed()]),
        Script::Messages(vec![completed()]),
    ]);
    let mut handle = spawn_orchestrator(OrchestratorOptions {
        cwd: Some("/tmp".into()),
        scenario: Some("hello".into()),
        ..options(&provider, RetryPolicy::default())
    });
    handle.commands.send(Command::Submit("one".into())).unwrap();
    let events = only_events(&events_until(&mut handle, turn_ended).await);
    assert!(events.contains(&Ev::SessionChanged {
        session_id: Some("s-1".into())
    }));
    handle.commands.send(Command::Submit("two".into())).unwrap();
    events_until(&mut handle, turn_ended).await;
    handle.commands.send(Command::NewSession).unwrap();
    handle
        .commands
        .send(Command::Submit("three".into()))
        .unwrap();
    events_until(&mut handle, turn_ended).await;

    let requests = provider.requests();
    let sessions: Vec<SessionRef> = requests
        .iter()
        .map(|request| request.session.clone())
        .collect();
    assert_eq!(
        sessions,
        [
            SessionRef::New,
            SessionRef::Resume("s-1".into()),
            SessionRef::New
        ]
    );
    assert!(requests.iter().all(|request| request.cwd.as_deref()
        == Some(std::path::Path::new("/tmp"))
        && request.scenario.as_deref() == Some("hello")
        && request.attempt == 1));
}

// ---- the headless helper ----

#[tokio::test(start_paused = true)]
async fn headless_reports_every_attempt_with_the_retry_between() {
    let provider = ScriptedProvider::new([
        Script::Messages(vec![text("par"), failed("fetch failed", 0)]),
        Script::Messages(vec![text("ok"), completed()]),
    ]);
    let mut seen = Vec::new();
    let outcome = run_headless_turn(
        options(&provider, policy(3, 1500)),
        "hi".into(),
        StopControl::new(),
        |message| seen.push(message.clone()),
    )
    .await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(outcome.exit_status(), 0);
    assert_eq!(
        seen,
        [
            text("par"),
            failed("fetch failed", 0),
            AgentMessage::RetryScheduled {
                attempt: 2,
                max_attempts: 3,
                delay_ms: 1500,
                reason: "network error: fetch failed".into()
            },
            text("ok"),
            completed(),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn headless_exit_status_is_the_final_attempts() {
    let provider = ScriptedProvider::new([
        Script::Messages(vec![failed("500 boom", 500)]),
        Script::Messages(vec![failed("401 bad key", 401)]),
    ]);
    let outcome = run_headless_turn(
        options(&provider, policy(3, 10)),
        "hi".into(),
        StopControl::new(),
        |_| {},
    )
    .await;
    assert_eq!(
        outcome,
        TurnOutcome::Failed {
            reason: FailureReason::AgentError,
            message: "401 bad key".into()
        }
    );
    assert_eq!(outcome.exit_status(), 1);
    assert_eq!(provider.requests().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn headless_stop_cancels_a_pending_retry() {
    let provider = ScriptedProvider::new([Script::Messages(vec![failed("rate limit", 429)])]);
    let stop = StopControl::new();
    let stopper = stop.clone();
    let outcome = run_headless_turn(
        options(&provider, policy(3, 60_000)),
        "hi".into(),
        stop,
        move |message| {
            if matches!(message, AgentMessage::RetryScheduled { .. }) {
                stopper.stop();
            }
        },
    )
    .await;
    assert_eq!(outcome, TurnOutcome::Cancelled);
    assert_eq!(outcome.exit_status(), 130);
    assert_eq!(provider.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn headless_stop_stops_the_running_attempt_and_mirrors_progress() {
    let provider = ScriptedProvider::new([Script::UntilStopped(vec![text("working")])]);
    let stop = StopControl::new();
    let stopper = stop.clone();
    let outcome = run_headless_turn(
        options(&provider, policy(3, 10)),
        "hi".into(),
        stop.clone(),
        move |message| {
            if matches!(message, AgentMessage::Assistant { .. }) {
                stopper.stop();
            }
        },
    )
    .await;
    assert_eq!(outcome, TurnOutcome::Cancelled);
    assert_eq!(stop.progress(), StopProgress::Stopped);
}

#[tokio::test(start_paused = true)]
async fn headless_rejects_an_empty_prompt_without_calling_the_provider() {
    let provider = ScriptedProvider::new([]);
    let outcome = run_headless_turn(
        options(&provider, policy(3, 10)),
        " ".into(),
        StopControl::new(),
        |_| {},
    )
    .await;
    assert!(matches!(outcome, TurnOutcome::Failed { .. }));
    assert!(provider.requests().is_empty());
}

/// A turn that asks permission and, answered, completes; then a plain one.
fn asks_then_completes() -> [Script; 2] {
    let request = AgentMessage::PermissionRequest(Box::new(crate::stream::PermissionRequest {
        id: "0".into(),
        title: "touch x".into(),
        kind: "execute".into(),
        ..Default::default()
    }));
    [
        Script::UntilAnswered(vec![request], vec![completed()]),
        Script::Messages(vec![text("ok"), completed()]),
    ]
}

fn reject_with_note() -> Command {
    Command::AnswerPermission {
        id: "0".into(),
        option: Some("reject".into()),
        message: Some("use mkdir instead".into()),
    }
}

/// Turn 1 ("go") started on `provider`, its permission question answered "reject" with a note.
async fn rejected_with_a_note(provider: &Arc<ScriptedProvider>) -> OrchestratorHandle {
    let mut handle = spawn_orchestrator(options(provider, policy(1, 10)));
    handle.commands.send(Command::Submit("go".into())).unwrap();
    events_until(&mut handle, |event| {
        matches!(
            event,
            Ev::Message {
                message: AgentMessage::PermissionRequest(_),
                ..
            }
        )
    })
    .await;
    handle.commands.send(reject_with_note()).unwrap();
    handle
}

#[tokio::test(start_paused = true)]
async fn a_note_the_protocol_cannot_carry_goes_as_the_next_prompt_and_says_so() {
    let provider = ScriptedProvider::new(asks_then_completes());
    let mut handle = rejected_with_a_note(&provider).await;
    let first = only_events(&events_until(&mut handle, turn_ended).await);
    assert!(
        first.contains(&Ev::Notice {
            turn: 1,
            kind: NoticeKind::PermissionFeedback,
            message: "use mkdir instead".into(),
        }),
        "{first:#?}"
    );
    let second = only_events(&events_until(&mut handle, turn_ended).await);
    assert!(
        second.contains(&Ev::TurnStarted {
            turn: 2,
            prompt: "use mkdir instead".into()
        }),
        "{second:#?}"
    );
    assert_eq!(
        provider.answers(),
        [(
            "0".to_owned(),
            Some("reject".to_owned()),
            Some("use mkdir instead".to_owned())
        )]
    );
    let prompts: Vec<String> = provider
        .requests()
        .iter()
        .map(|request| request.prompt.clone())
        .collect();
    assert_eq!(prompts, ["go", "use mkdir instead"]);
}

#[tokio::test(start_paused = true)]
async fn a_note_the_protocol_carries_goes_with_the_answer_only() {
    let provider = ScriptedProvider::carrying_feedback(asks_then_completes());
    let mut handle = rejected_with_a_note(&provider).await;
    let events = only_events(&events_until(&mut handle, turn_ended).await);
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, Ev::Notice { .. })),
        "{events:#?}"
    );
    assert_eq!(provider.answers().len(), 1);
    // Nothing else is sent: the next prompt is the user's.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(provider.requests().len(), 1);
    assert!(handle.events.try_recv().is_err());
}

/// A provider whose one attempt is `deltas` text deltas then the end, counting how many of
/// them the driver has taken.
struct FloodingProvider {
    deltas: usize,
    taken: Arc<std::sync::atomic::AtomicUsize>,
}

impl Provider for FloodingProvider {
    fn name(&self) -> &str {
        "flooding"
    }

    fn execute(&self, _request: AttemptRequest, _stop: StopControl) -> AgentStream {
        let taken = self.taken.clone();
        futures::stream::iter(0..self.deltas)
            .map(move |index| {
                taken.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                text(&format!("{index} "))
            })
            .chain(futures::stream::iter([completed()]))
            .boxed()
    }
}

#[tokio::test]
async fn an_agent_that_floods_waits_for_the_reader_instead_of_memory_growing() {
    let taken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let provider = Arc::new(FloodingProvider {
        deltas: 20_000,
        taken: taken.clone(),
    });
    let mut handle = spawn_orchestrator(OrchestratorOptions::new(provider));
    handle.commands.send(Command::Submit("hi".into())).unwrap();
    // Nobody reads for a while: the driver stops taking the agent's output.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let in_flight = taken.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        in_flight <= EVENTS_IN_FLIGHT + 8,
        "{in_flight} deltas taken with nobody reading"
    );
    // Once read, everything comes, in order.
    let mut text_read = String::new();
    loop {
        match handle.events.recv().await.expect("the turn ends") {
            Ev::Message {
                message: AgentMessage::Assistant { delta },
                ..
            } => text_read.push_str(&delta),
            Ev::TurnEnded { outcome, .. } => {
                assert_eq!(outcome, TurnOutcome::Completed);
                break;
            }
            _ => {}
        }
    }
    let expected: String = (0..20_000).map(|index| format!("{index} ")).collect();
    assert!(text_read == expected, "the text comes whole and in order");
}

/// What the rewind picker says before anything is chosen comes from the same judgement as the
/// rewind itself: a turn that began a session can go back, one whose session was not kept
/// cannot, and a rewind to it says the same reason.
#[tokio::test]
async fn each_turn_says_whether_its_conversation_can_go_back_and_the_rewind_agrees() {
    let session_started = AgentMessage::SessionStarted {
        provider: "scripted".into(),
        session_id: Some("s-1".into()),
        model: None,
    };
    let provider = ScriptedProvider::new([
        Script::Messages(vec![session_started, completed()]),
        Script::Messages(vec![completed()]),
    ]);
    let mut handle = spawn_orchestrator(options(&provider, RetryPolicy::default()));
    let mut said = Vec::new();
    for prompt in ["one", "two"] {
        handle
            .commands
            .send(Command::Submit(prompt.into()))
            .unwrap();
        for event in only_events(&events_until(&mut handle, turn_ended).await) {
            if let Ev::TurnCheckpointed {
                turn,
                conversation_rewind,
            } = event
            {
                said.push((turn, conversation_rewind));
            }
        }
    }
    // The scripted provider keeps no session file.
    let not_kept = Err("the agent's session file was not found when that turn began".to_owned());
    assert_eq!(said, [(1, Ok(())), (2, not_kept.clone())]);

    handle
        .commands
        .send(Command::Rewind(RewindAsked {
            turn: 2,
            conversation: true,
            files: false,
            overwrite: false,
            undone: false,
        }))
        .unwrap();
    let rewound = events_until(&mut handle, |event| matches!(event, Ev::Rewound(_))).await;
    let Some(Ev::Rewound(rewind)) = only_events(&rewound).pop() else {
        panic!("{rewound:?}");
    };
    assert_eq!(rewind.conversation, Some(not_kept));
}
