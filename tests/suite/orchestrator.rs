//! The orchestrator driving real agent processes: small `sh` scripts that speak the shared
//! stream directly, run through the real process layer and provider runner.
//!
//! Each script appends a line to a counter file when it starts, so the spawn count is a fact
//! observed on disk, not something the orchestrator reports about itself. Retry delays are kept
//! to tens of milliseconds; the exact timer arithmetic is tested on a paused clock in the
//! driver's unit tests.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::time::timeout;

use agentty::config::{Backoff, RetryPolicy};
use agentty::orchestrator::{
    run_headless_turn, spawn_orchestrator, Command, OrchestratorEvent as Ev, OrchestratorHandle,
    OrchestratorOptions, TurnOutcome,
};
use agentty::process::SpawnSpec;
use agentty::provider::{
    AgentOutcome, AttemptRequest, Backend, CliProvider, ExitFacts, LineVerdict, Mapper, Provider,
    SessionRef, StopControl, StopProgress,
};
use agentty::stream::{AgentMessage, Failure, FailureReason};

/// Longest wait for any one event: far above what these scripts need.
const PATIENCE: Duration = Duration::from_secs(20);
/// How long to watch for a spawn nobody asked for.
const QUIET_PERIOD: Duration = Duration::from_millis(400);

// ---- test scaffolding: a backend whose agent is `sh -c SCRIPT` ----

/// Runs `sh -c <script> agent <prompt>` with `ATTEMPT`, `SESSION` and `WORK` (a temp folder)
/// in its environment.
struct ScriptBackend {
    program: String,
    script: String,
    work: PathBuf,
}

impl Backend for ScriptBackend {
    fn name(&self) -> &'static str {
        "script"
    }

    fn spawn_spec(&self, request: &AttemptRequest) -> SpawnSpec {
        let session = match &request.session {
            SessionRef::New => "new".to_owned(),
            SessionRef::ContinueLatest => "latest".to_owned(),
            SessionRef::Resume(id) => id.clone(),
        };
        SpawnSpec::new(&self.program)
            .args(["-c", self.script.as_str(), "agent", request.prompt.as_str()])
            .env("ATTEMPT", request.attempt.to_string())
            .env("SESSION", session)
            .env("WORK", &self.work)
    }

    fn mapper(&self, _request: &AttemptRequest) -> Box<dyn Mapper> {
        Box::new(SharedLineMapper::default())
    }

    /// A script keeps session ID, if it keeps one, as `$WORK/session-ID`.
    fn session_file(&self, session_id: &str, _request: &AttemptRequest) -> Option<PathBuf> {
        let file = self.work.join(format!("session-{session_id}"));
        file.exists().then_some(file)
    }
}

/// Reads stdout lines that are already shared messages; a terminal line sets the outcome (the
/// runner composes the terminal message itself).
#[derive(Default)]
struct SharedLineMapper {
    outcome: Option<AgentOutcome>,
}

impl Mapper for SharedLineMapper {
    fn map_line(&mut self, line: &str, out: &mut Vec<AgentMessage>) -> LineVerdict {
        let Ok(message) = AgentMessage::from_json_line(line) else {
            return LineVerdict::Invalid;
        };
        match message {
            AgentMessage::Completed { stop_reason, usage } => {
                self.outcome = Some(AgentOutcome::Completed { stop_reason, usage })
            }
            AgentMessage::Failed(failure) => {
                self.outcome = Some(AgentOutcome::Failed {
                    reason: failure.reason,
                    message: failure.message,
                    http_status: failure.http_status,
                })
            }
            AgentMessage::Cancelled { .. } => self.outcome = Some(AgentOutcome::Aborted),
            other => out.push(other),
        }
        LineVerdict::Event
    }

    fn outcome_reported(&self) -> bool {
        self.outcome.is_some()
    }

    fn finish(&mut self, _exit: ExitFacts, _out: &mut Vec<AgentMessage>) -> AgentOutcome {
        self.outcome.take().unwrap_or(AgentOutcome::Unfinished)
    }
}

/// A folder for one test's files, and the agent script.
struct Agent {
    work: tempfile::TempDir,
    provider: Arc<CliProvider>,
}

impl Agent {
    /// `body` runs after the spawn is counted: `$WORK/spawns` gets one line (`$ATTEMPT`) per
    /// spawn, and `$n` is this spawn's number.
    fn new(body: &str) -> Self {
        Self::with_program("sh", body)
    }

    fn with_program(program: &str, body: &str) -> Self {
        let work = tempfile::tempdir().unwrap();
        let script =
            format!("echo \"$ATTEMPT\" >> \"$WORK/spawns\"\nn=$(wc -l < \"$WORK/spawns\")\n{body}");
        let provider = Arc::new(CliProvider::new(ScriptBackend {
            program: program.to_owned(),
            script,
            work: work.path().to_path_buf(),
        }));
        Self { work, provider }
    }

    fn options(&self, policy: RetryPolicy) -> OrchestratorOptions {
        OrchestratorOptions {
            policy,
            ..OrchestratorOptions::new(self.provider.clone())
        }
    }

    fn start(&self, policy: RetryPolicy) -> OrchestratorHandle {
        spawn_orchestrator(self.options(policy))
    }

    /// The `ATTEMPT` of every spawn so far, in order.
    fn spawns(&self) -> Vec<String> {
        self.lines("spawns")
    }

    fn lines(&self, file: &str) -> Vec<String> {
        std::fs::read_to_string(self.work.path().join(file))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// A shell command printing `message` as one JSON line.
fn say(message: &AgentMessage) -> String {
    let line = message.to_json_line();
    assert!(
        !line.contains('\''),
        "keep test messages free of single quotes"
    );
    format!("printf '%s\\n' '{line}'")
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

fn agent_error(message: &str, http_status: Option<u16>) -> AgentMessage {
    AgentMessage::Failed(Failure {
        reason: FailureReason::AgentError,
        message: message.into(),
        http_status,
        ..Failure::default()
    })
}

/// Automatic retry off (it is on by default).
fn retry_off() -> RetryPolicy {
    RetryPolicy {
        enabled: false,
        ..RetryPolicy::default()
    }
}

fn retry_on(max_attempts: u32, retry_delay_ms: u64) -> RetryPolicy {
    RetryPolicy {
        enabled: true,
        max_attempts,
        retry_delay_ms,
        backoff: Backoff::Fixed,
        max_delay_ms: retry_delay_ms,
    }
}

async fn next_event(handle: &mut OrchestratorHandle) -> Ev {
    timeout(PATIENCE, handle.events.recv())
        .await
        .expect("an orchestrator event in time")
        .expect("the orchestrator is still running")
}

async fn events_until(handle: &mut OrchestratorHandle, last: impl Fn(&Ev) -> bool) -> Vec<Ev> {
    let mut seen = Vec::new();
    loop {
        let event = next_event(handle).await;
        let done = last(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

fn turn_ended(event: &Ev) -> bool {
    matches!(event, Ev::TurnEnded { .. })
}

fn outcome_of(events: &[Ev]) -> TurnOutcome {
    match events.last() {
        Some(Ev::TurnEnded { outcome, .. }) => outcome.clone(),
        other => panic!("the turn did not end: {other:?}"),
    }
}

fn count(events: &[Ev], wanted: impl Fn(&Ev) -> bool) -> usize {
    events.iter().filter(|event| wanted(event)).count()
}

/// Shuts the orchestrator down and checks nothing else happened before.
async fn shut_down(mut handle: OrchestratorHandle) {
    handle.commands.send(Command::Shutdown).unwrap();
    assert_eq!(next_event(&mut handle).await, Ev::ShutDown);
    assert_eq!(timeout(PATIENCE, handle.events.recv()).await.unwrap(), None);
}

// ---- retry ----

#[tokio::test]
async fn a_retryable_failure_then_success_spawns_twice() {
    let agent = Agent::new(&format!(
        "printf '%s\\n' \"{{\\\"type\\\":\\\"assistant\\\",\\\"delta\\\":\\\"attempt $n\\\"}}\"\n\
         if [ \"$n\" -lt 2 ]; then {}; else {}; fi",
        say(&agent_error("429 Too Many Requests", Some(429))),
        say(&completed())
    ));
    let mut handle = agent.start(retry_on(3, 50));
    handle.commands.send(Command::Submit("hi".into())).unwrap();
    let events = events_until(&mut handle, turn_ended).await;

    assert_eq!(outcome_of(&events), TurnOutcome::Completed);
    assert_eq!(
        agent.spawns(),
        ["1", "2"],
        "one spawn per attempt, numbered"
    );
    // The failed attempt's partial output was forwarded, tagged with its attempt number.
    assert!(events.contains(&Ev::Message {
        turn: 1,
        attempt: 1,
        message: text("attempt 1")
    }));
    assert!(events.contains(&Ev::Message {
        turn: 1,
        attempt: 2,
        message: text("attempt 2")
    }));
    let scheduled = events
        .iter()
        .find(|event| matches!(event, Ev::RetryScheduled { .. }))
        .expect("a retry was scheduled");
    assert_eq!(
        scheduled,
        &Ev::RetryScheduled {
            turn: 1,
            attempt: 2,
            max_attempts: 3,
            delay_ms: 50,
            reason: "rate limited (HTTP 429)".into()
        }
    );
    tokio::time::sleep(QUIET_PERIOD).await;
    assert_eq!(
        agent.spawns().len(),
        2,
        "nothing spawned on its own afterwards"
    );
    shut_down(handle).await;
}

#[tokio::test]
async fn a_non_retryable_failure_spawns_once_even_with_retry_on() {
    let agent = Agent::new(&say(&agent_error(
        "401 Incorrect API key provided",
        Some(401),
    )));
    let mut handle = agent.start(retry_on(5, 10));
    handle.commands.send(Command::Submit("hi".into())).unwrap();
    let events = events_until(&mut handle, turn_ended).await;

    assert_eq!(
        outcome_of(&events),
        TurnOutcome::Failed {
            reason: FailureReason::AgentError,
            message: "401 Incorrect API key provided".into()
        }
    );
    assert_eq!(
        count(&events, |event| matches!(event, Ev::RetryScheduled { .. })),
        0
    );
    tokio::time::sleep(QUIET_PERIOD).await;
    assert_eq!(agent.spawns(), ["1"]);
    shut_down(handle).await;
}

#[tokio::test]
async fn a_stop_during_the_retry_countdown_spawns_nothing_more() {
    let agent = Agent::new(&say(&agent_error(
        "overloaded_error: Overloaded",
        Some(529),
    )));
    // Long enough that the test's Stop surely lands inside the countdown, even on a busy machine.
    let delay_ms = 1000;
    let mut handle = agent.start(retry_on(3, delay_ms));
    handle.commands.send(Command::Submit("hi".into())).unwrap();
    events_until(&mut handle, |event| {
        matches!(event, Ev::RetryScheduled { .. })
    })
    .await;
    handle.commands.send(Command::Stop).unwrap();
    let events = events_until(&mut handle, turn_ended).await;
    assert_eq!(
        events,
        [
            Ev::RetryCancelled { turn: 1 },
            Ev::TurnEnded {
                turn: 1,
                outcome: TurnOutcome::Cancelled
            }
        ]
    );
    // Past the moment the retry was due.
    tokio::time::sleep(Duration::from_millis(delay_ms + 500)).await;
    assert_eq!(agent.spawns(), ["1"]);
    assert!(
        handle.events.try_recv().is_err(),
        "no event after the cancel"
    );
    shut_down(handle).await;
}

#[tokio::test]
async fn reaching_max_attempts_spawns_exactly_max_attempts() {
    let agent = Agent::new(&say(&agent_error("503 Service Unavailable", Some(503))));
    let mut handle = agent.start(retry_on(3, 20));
    handle.commands.send(Command::Submit("hi".into())).unwrap();
    let events = events_until(&mut handle, turn_ended).await;

    assert_eq!(
        outcome_of(&events),
        TurnOutcome::Failed {
            reason: FailureReason::AgentError,
            message: "503 Service Unavailable".into()
        }
    );
    assert_eq!(
        count(&events, |event| matches!(event, Ev::RetryScheduled { .. })),
        2
    );
    assert_eq!(
        count(&events, |event| matches!(event, Ev::AttemptStarted { .. })),
        3
    );
    tokio::time::sleep(QUIET_PERIOD).await;
    assert_eq!(agent.spawns(), ["1", "2", "3"]);
    shut_down(handle).await;
}

#[tokio::test]
async fn an_agent_killed_by_a_signal_it_did_not_get_from_us_is_retried() {
    let agent = Agent::new(&format!(
        "if [ \"$n\" -lt 2 ]; then kill -KILL $$; fi\n{}\n{}",
        say(&text("second time lucky")),
        say(&completed())
    ));
    let mut handle = agent.start(retry_on(2, 10));
    handle.commands.send(Command::Submit("hi".into())).unwrap();
    let events = events_until(&mut handle, turn_ended).await;

    let first_terminal = events.iter().find_map(|event| match event {
        Ev::Message {
            attempt: 1,
            message: AgentMessage::Failed(failure),
            ..
        } => Some(failure.clone()),
        _ => None,
    });
    let failure = first_terminal.expect("attempt 1 failed");
    assert_eq!(failure.reason, FailureReason::KilledBySignal);
    assert_eq!(failure.signal, Some(9));
    assert_eq!(outcome_of(&events), TurnOutcome::Completed);
    assert_eq!(agent.spawns(), ["1", "2"]);
    shut_down(handle).await;
}

#[tokio::test]
async fn a_start_failure_is_not_retried() {
    let agent = Agent::with_program("/nonexistent/agentty-test-agent", "true");
    let mut handle = agent.start(retry_on(3, 10));
    handle.commands.send(Command::Submit("hi".into())).unwrap();
    let events = events_until(&mut handle, turn_ended).await;

    assert!(matches!(
        outcome_of(&events),
        TurnOutcome::Failed { reason, .. } if reason == FailureReason::StartFailed
    ));
    assert_eq!(
        count(&events, |event| matches!(event, Ev::AttemptStarted { .. })),
        1
    );
    shut_down(handle).await;
}

#[tokio::test]
async fn a_provider_attempt_spawns_exactly_once_even_when_it_fails() {
    let agent = Agent::new(&say(&agent_error("500 Internal server error", Some(500))));
    let stream = agent.provider.execute(
        AttemptRequest {
            prompt: "hi".into(),
            attempt: 1,
            ..AttemptRequest::default()
        },
        StopControl::new(),
    );
    let messages: Vec<AgentMessage> = timeout(PATIENCE, stream.collect()).await.unwrap();
    assert!(matches!(messages.last(), Some(AgentMessage::Failed(_))));
    tokio::time::sleep(QUIET_PERIOD).await;
    assert_eq!(agent.spawns(), ["1"], "the provider never retries");
}

// ---- manual retry ----

#[tokio::test]
async fn retry_last_turn_resends_the_prompt_in_the_same_session_with_retry_off() {
    // The agent stores each prompt in its session file as it is sent, like a real CLI.
    let agent = Agent::new(&format!(
        "echo \"$1 in $SESSION\" >> \"$WORK/prompts\"\n\
         echo \"$1\" >> \"$WORK/session-$SESSION\"\n\
         if [ \"$n\" -lt 2 ]; then {}; else {}; fi",
        say(&agent_error("429 Too Many Requests", Some(429))),
        say(&completed())
    ));
    std::fs::write(agent.work.path().join("session-s-7"), "earlier\n").unwrap();
    let mut handle = spawn_orchestrator(OrchestratorOptions {
        session: SessionRef::Resume("s-7".into()),
        ..agent.options(retry_off())
    });
    handle
        .commands
        .send(Command::Submit("the prompt".into()))
        .unwrap();
    let events = events_until(&mut handle, turn_ended).await;
    assert!(matches!(outcome_of(&events), TurnOutcome::Failed { .. }));
    assert_eq!(agent.spawns(), ["1"], "retry is off");

    handle.commands.send(Command::RetryLastTurn).unwrap();
    let events = events_until(&mut handle, turn_ended).await;
    assert_eq!(
        events[0],
        Ev::TurnStarted {
            turn: 2,
            prompt: "the prompt".into()
        }
    );
    assert_eq!(outcome_of(&events), TurnOutcome::Completed);
    assert_eq!(
        agent.lines("prompts"),
        ["the prompt in s-7", "the prompt in s-7"]
    );
    // The failed attempt was rolled back: the session holds the prompt once.
    assert_eq!(agent.lines("session-s-7"), ["earlier", "the prompt"]);
    shut_down(handle).await;
}

#[tokio::test]
async fn without_a_session_file_to_roll_back_the_retry_continues_the_session_and_says_so() {
    let agent = Agent::new(&format!(
        "echo \"$1 in $SESSION\" >> \"$WORK/prompts\"\n\
         if [ \"$n\" -lt 2 ]; then {}; else {}; fi",
        say(&agent_error("429 Too Many Requests", Some(429))),
        say(&completed())
    ));
    let mut handle = spawn_orchestrator(OrchestratorOptions {
        session: SessionRef::Resume("s-7".into()),
        ..agent.options(retry_off())
    });
    handle
        .commands
        .send(Command::Submit("the prompt".into()))
        .unwrap();
    let failed = events_until(&mut handle, turn_ended).await;
    handle.commands.send(Command::RetryLastTurn).unwrap();
    let events = events_until(&mut handle, turn_ended).await;
    assert_eq!(outcome_of(&events), TurnOutcome::Completed);
    let kept = |event: &Ev| {
        matches!(event, Ev::Notice { kind, message, .. }
            if kind == agentty::stream::NoticeKind::Warning.wire()
                && message.contains("may see this prompt twice"))
    };
    assert_eq!(count(&failed, kept), 1, "{failed:#?}");
    let fresh = |event: &Ev| {
        matches!(event, Ev::Notice { kind, .. }
            if kind == agentty::stream::NoticeKind::FreshSession.wire())
    };
    assert_eq!(count(&failed, fresh) + count(&events, fresh), 0);
    // The conversation goes on in the agent's session: never a fresh one.
    assert_eq!(
        agent.lines("prompts"),
        ["the prompt in s-7", "the prompt in s-7"]
    );
}

// ---- sessions and the queue ----

#[tokio::test]
async fn the_session_id_is_carried_to_the_next_turn_and_new_session_drops_it() {
    let agent = Agent::new(&format!(
        "echo \"$SESSION\" >> \"$WORK/sessions\"\n\
         printf '%s\\n' \"{{\\\"type\\\":\\\"session.started\\\",\\\"provider\\\":\\\"script\\\",\\\"session_id\\\":\\\"sess-$n\\\"}}\"\n{}",
        say(&completed())
    ));
    let mut handle = agent.start(RetryPolicy::default());
    for prompt in ["one", "two"] {
        handle
            .commands
            .send(Command::Submit(prompt.into()))
            .unwrap();
        events_until(&mut handle, turn_ended).await;
    }
    handle.commands.send(Command::NewSession).unwrap();
    assert_eq!(
        next_event(&mut handle).await,
        Ev::SessionChanged { session_id: None }
    );
    handle
        .commands
        .send(Command::Submit("three".into()))
        .unwrap();
    events_until(&mut handle, turn_ended).await;

    assert_eq!(agent.lines("sessions"), ["new", "sess-1", "new"]);
    shut_down(handle).await;
}

#[tokio::test]
async fn a_prompt_submitted_during_a_turn_is_queued_and_sent_after_it() {
    let agent = Agent::new(&format!(
        "echo \"$1\" >> \"$WORK/prompts\"\n\
         if [ \"$1\" = first ]; then sleep 0.3; fi\n{}",
        say(&completed())
    ));
    let mut handle = agent.start(RetryPolicy::default());
    handle
        .commands
        .send(Command::Submit("first".into()))
        .unwrap();
    events_until(&mut handle, |event| {
        matches!(event, Ev::AttemptStarted { .. })
    })
    .await;
    handle
        .commands
        .send(Command::Submit("second".into()))
        .unwrap();
    let events = events_until(&mut handle, |event| {
        matches!(event, Ev::TurnEnded { turn: 2, .. })
    })
    .await;

    let queue_changes: Vec<&Ev> = events
        .iter()
        .filter(|event| matches!(event, Ev::QueueChanged { .. }))
        .collect();
    assert_eq!(
        queue_changes,
        [
            &Ev::QueueChanged {
                queued: vec!["second".into()]
            },
            &Ev::QueueChanged { queued: vec![] }
        ]
    );
    assert!(events.contains(&Ev::TurnStarted {
        turn: 2,
        prompt: "second".into()
    }));
    assert_eq!(agent.lines("prompts"), ["first", "second"]);
    shut_down(handle).await;
}

#[tokio::test]
async fn a_stop_cancels_the_running_turn_and_the_queue_waits() {
    let agent = Agent::new(&format!(
        "echo \"$1\" >> \"$WORK/prompts\"\n\
         if [ \"$1\" = slow ]; then {}; sleep 30; fi\n{}",
        say(&text("working")),
        say(&completed())
    ));
    let mut handle = agent.start(retry_on(3, 10));
    handle
        .commands
        .send(Command::Submit("slow".into()))
        .unwrap();
    events_until(&mut handle, |event| matches!(event, Ev::Message { .. })).await;
    handle
        .commands
        .send(Command::Submit("next".into()))
        .unwrap();
    handle.commands.send(Command::Stop).unwrap();
    let stopped = events_until(&mut handle, turn_ended).await;
    assert_eq!(outcome_of(&stopped), TurnOutcome::Cancelled);
    assert!(
        stopped.iter().any(|event| matches!(
            event,
            Ev::StopProgress { turn: 1, progress } if *progress != StopProgress::Running
        )),
        "the stop's progress is shown: {stopped:?}"
    );
    assert!(stopped.iter().any(|event| matches!(
        event,
        Ev::Message {
            attempt: 1,
            message: AgentMessage::Cancelled { .. },
            ..
        }
    )));
    // The queue waits for the user (the chat takes it back into the editor): nothing is sent
    // until the next prompt, which goes behind the waiting one.
    assert_eq!(agent.lines("prompts"), ["slow"]);
    handle
        .commands
        .send(Command::Submit("later".into()))
        .unwrap();
    let next = events_until(&mut handle, turn_ended).await;
    assert_eq!(outcome_of(&next), TurnOutcome::Completed);
    let later = events_until(&mut handle, turn_ended).await;
    assert_eq!(outcome_of(&later), TurnOutcome::Completed);
    assert_eq!(agent.lines("prompts"), ["slow", "next", "later"]);
    assert_eq!(
        agent.spawns().len(),
        3,
        "the cancelled turn was not retried"
    );
    shut_down(handle).await;
}

// ---- headless ----

#[tokio::test]
async fn headless_turn_retries_and_reports_the_retry_between_attempts() {
    let agent = Agent::new(&format!(
        "if [ \"$n\" -lt 2 ]; then {}; {}; else {}; {}; fi",
        say(&text("partial")),
        say(&agent_error("terminated", None)),
        say(&text("whole")),
        say(&completed())
    ));
    let mut seen = Vec::new();
    let outcome = timeout(
        PATIENCE,
        run_headless_turn(
            agent.options(retry_on(2, 30)),
            "hi".into(),
            StopControl::new(),
            |message| seen.push(message.clone()),
        ),
    )
    .await
    .unwrap();

    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(outcome.exit_status(), 0);
    let kinds: Vec<String> = seen
        .iter()
        .map(|message| {
            let value: serde_json::Value = serde_json::from_str(&message.to_json_line()).unwrap();
            value["type"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "assistant",
            "terminal.failed",
            "retry.scheduled",
            "assistant",
            "terminal.completed"
        ]
    );
    assert_eq!(agent.spawns(), ["1", "2"]);
}

#[tokio::test]
async fn headless_stop_runs_the_three_stage_stop() {
    let agent = Agent::new(&format!("{}\nsleep 30", say(&text("working"))));
    let stop = StopControl::new();
    let stopper = stop.clone();
    let outcome = timeout(
        PATIENCE,
        run_headless_turn(
            agent.options(retry_on(3, 10)),
            "hi".into(),
            stop.clone(),
            move |message| {
                if matches!(message, AgentMessage::Assistant { .. }) {
                    // What agentty's SIGINT handler would do.
                    stopper.stop();
                }
            },
        ),
    )
    .await
    .unwrap();
    assert_eq!(outcome, TurnOutcome::Cancelled);
    assert_eq!(outcome.exit_status(), 130);
    assert_eq!(stop.progress(), StopProgress::Stopped);
    assert_eq!(agent.spawns(), ["1"]);
}
