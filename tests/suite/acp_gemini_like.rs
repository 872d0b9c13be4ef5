//! agentty's Gemini backend over ACP against the demo agent's Gemini flavour (`agentty
//! demo-agent --mode acp --flavour gemini`), which plays `gemini --acp` 0.61's ways as measured
//! against the real CLI: session files named by the minute and wiped by a reload in that
//! minute, history replayed after `session/load`'s answer, failures answered with the HTTP status
//! as the JSON-RPC code and the API's JSON as the message, a cut stream ended `end_turn` with
//! zero token counts. Real processes throughout: the Gemini backend's own spawn spec (its
//! private home, `--acp -m …`) runs a script that starts the demo agent; the orchestrator is
//! the real one. What "the model" received is read from the demo's `requests.jsonl`.
//!
//! The demo runs with its delays scaled down (`AGENTTY_DEMO_TIME_SCALE`), so each test takes
//! seconds. Nothing is timed: the machine may be loaded.

use crate::support::real_cli;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use agentty::app::state::{AppState, StartupInfo};
use agentty::app::transcript::CellBody;
use agentty::config::{Backoff, RetryPolicy};
use agentty::config::{PermissionPolicy, ProviderSettings};
use agentty::demo_agent::state::{requests_file, DemoRequest, STATE_DIR_VAR};
use agentty::demo_agent::TIME_SCALE_VAR;
use agentty::orchestrator::{
    spawn_orchestrator, Command, OrchestratorEvent, OrchestratorHandle, OrchestratorOptions,
    TurnOutcome,
};
use agentty::provider::gemini::GeminiBackend;
use agentty::provider::{provider_on, Provider, SessionRef, StopControl, Transport};
use agentty::stream::{AgentMessage, Failure, FailureReason};
use tempfile::TempDir;

use real_cli::{
    assert_turn, assistant_text, attempt_request, collect, expect_completed, expect_failed,
    occurrences, print_request_log, retrying_orchestrator, run_turn, started_session_id, UserTexts,
    RUN_LIMIT,
};

/// The demo's answer to a prompt that names no scenario.
const HELLO: &str = "Hello from the demo ACP agent. How can I help?";

/// The Gemini backend on the demo agent's Gemini flavour, with a throwaway HOME (where the
/// flavour keeps Gemini's session files), demo state dir and working directory.
struct GeminiLike {
    home: TempDir,
    /// The demo's state (request log, flaky marks) and agentty's (the Gemini private home).
    state: TempDir,
    work: TempDir,
    _bin: TempDir,
    launcher: PathBuf,
    /// The launcher appends the PID of each agent it starts.
    starts: PathBuf,
}

impl GeminiLike {
    fn new() -> Self {
        let bin = tempfile::tempdir().unwrap();
        let launcher = bin.path().join("gemini");
        let starts = bin.path().join("starts");
        // The backend runs `gemini --acp [-m MODEL] [args]`: those arguments are Gemini's, and
        // the demo agent takes none of them.
        std::fs::write(
            &launcher,
            format!(
                "#!/bin/sh\necho $$ >> '{}'\nexec '{}' demo-agent --mode acp --flavour gemini\n",
                starts.display(),
                env!("CARGO_BIN_EXE_agentty")
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self {
            home: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir().unwrap(),
            _bin: bin,
            launcher,
            starts,
        }
    }

    /// How many agent processes were started so far.
    fn starts(&self) -> usize {
        std::fs::read_to_string(&self.starts)
            .unwrap_or_default()
            .lines()
            .count()
    }

    /// A new provider (as a new launch of agentty makes): the Gemini backend over ACP.
    fn provider(&self, policy: PermissionPolicy) -> Arc<dyn Provider> {
        let settings = ProviderSettings {
            command: Some(self.launcher.clone()),
            model: Some("gemini-2.5-pro".into()),
            env: BTreeMap::from([
                ("HOME".to_owned(), self.home.path().display().to_string()),
                (
                    STATE_DIR_VAR.to_owned(),
                    self.state.path().display().to_string(),
                ),
                (TIME_SCALE_VAR.to_owned(), "0.05".to_owned()),
            ]),
            ..ProviderSettings::default()
        };
        let backend =
            GeminiBackend::new(settings).with_state_dir(self.state.path().join("agentty"));
        provider_on(Arc::new(backend), Transport::Acp, policy).expect("gemini speaks ACP")
    }

    /// The user messages of every request the demo's "model" received, in order.
    fn requests(&self) -> Vec<UserTexts> {
        std::fs::read_to_string(requests_file(self.state.path()))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str::<DemoRequest>(line).unwrap().messages)
            .collect()
    }

    /// One attempt of `prompt` on `provider`, run to its end.
    async fn attempt(
        &self,
        provider: &Arc<dyn Provider>,
        prompt: &str,
        session: SessionRef,
    ) -> Vec<AgentMessage> {
        let request = attempt_request(prompt, session, self.work.path());
        collect(
            &mut provider.execute(request, StopControl::new()),
            RUN_LIMIT,
        )
        .await
    }
}

/// A tag unique to one test run, so that no prompt is a part of another test's.
fn run_tag() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_owned()
}

/// The current UTC minute, `(hour, minute)`.
fn minute_now() -> (u8, u8) {
    let now = time::OffsetDateTime::now_utc();
    (now.hour(), now.minute())
}

/// Waits for the next minute when this one has less than 15 s left, so that a short test runs
/// within one minute: the minute in which Gemini's reloads wipe a session.
fn wait_for_a_fresh_minute() {
    let second = time::OffsetDateTime::now_utc().second();
    if second >= 45 {
        std::thread::sleep(std::time::Duration::from_secs(u64::from(61 - second)));
    }
}

/// Turn A fails twice (HTTP 500) then succeeds, B continues, C fails twice then succeeds, D
/// continues, in one minute: each failed attempt ends the agent, and the next one loads the
/// restored session in a new agent in the minute its file is named for, which Gemini wipes
/// unless the backend readies the file first. Every request carries each earlier prompt once
/// and its own once, and the four turns continue one session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_retried_turns_in_one_minute_keep_the_conversation() {
    let test = "two_retried_turns_in_one_minute_keep_the_conversation";
    let rig = GeminiLike::new();
    let tag = run_tag();
    let prompts = [
        format!("prompt A {tag} flaky-twice: remember 42"),
        format!("prompt B {tag}: and now?"),
        format!("prompt C {tag} flaky-twice: once more"),
        format!("prompt D {tag}: the last"),
    ];
    wait_for_a_fresh_minute();
    let started = minute_now();
    real_cli::two_retried_turns_keep_the_conversation(
        "demo gemini flavour",
        test,
        rig.provider(PermissionPolicy::Deny),
        rig.work.path(),
        &prompts,
        || rig.requests(),
    )
    .await;
    let ended = minute_now();
    eprintln!(
        "{test}: {} one minute ({started:?} to {ended:?})",
        if started == ended {
            "within"
        } else {
            "NOT within"
        }
    );
}

/// The orchestrator on `provider`, continuing `session`, retrying a failed attempt twice
/// (as `real_cli::retrying_orchestrator`, which starts a new session).
fn retrying_orchestrator_on(
    provider: Arc<dyn Provider>,
    rig: &GeminiLike,
    session: SessionRef,
) -> OrchestratorHandle {
    let mut options = OrchestratorOptions::new(provider);
    options.policy = RetryPolicy {
        enabled: true,
        max_attempts: 3,
        retry_delay_ms: 10,
        backoff: Backoff::Fixed,
        max_delay_ms: 10,
    };
    options.cwd = Some(rig.work.path().to_path_buf());
    options.session = session;
    spawn_orchestrator(options)
}

/// Ends an orchestrator (as quitting agentty does) and waits until it has stopped.
async fn shut_down(mut handle: OrchestratorHandle) {
    handle
        .commands
        .send(Command::Shutdown)
        .expect("the orchestrator runs");
    loop {
        let event = tokio::time::timeout(RUN_LIMIT, handle.events.recv())
            .await
            .expect("the orchestrator stops in time");
        if matches!(event, None | Some(OrchestratorEvent::ShutDown)) {
            return;
        }
    }
}

/// Turn A fails twice then succeeds and B continues; agentty quits and is launched again on
/// the conversation, in the same minute; C fails twice then succeeds and D continues. The
/// relaunch loads the session in the minute its file is named for (Gemini wipes it unless the
/// backend readies the file first). Every request carries each earlier prompt once and its own
/// once, and all four turns continue one session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relaunch_in_the_same_minute_keeps_the_conversation_through_retried_turns() {
    let test = "a_relaunch_in_the_same_minute_keeps_the_conversation_through_retried_turns";
    let rig = GeminiLike::new();
    let tag = run_tag();
    let prompts = [
        format!("prompt A {tag} flaky-twice: remember 42"),
        format!("prompt B {tag}: and now?"),
        format!("prompt C {tag} flaky-twice: once more"),
        format!("prompt D {tag}: the last"),
    ];
    let attempts = [3, 1, 3, 1];
    wait_for_a_fresh_minute();
    let started = minute_now();
    let mut bounds = vec![0];
    let mut sessions = Vec::new();
    let mut chat = retrying_orchestrator(rig.provider(PermissionPolicy::Deny), rig.work.path());
    for turn in 0..2 {
        sessions.push(assert_turn(
            &run_turn(&mut chat, &prompts[turn]).await,
            attempts[turn],
        ));
        bounds.push(rig.requests().len());
    }
    shut_down(chat).await;
    let session = sessions[0][2]
        .clone()
        .expect("turn A's last attempt reports its session");
    let mut chat = retrying_orchestrator_on(
        rig.provider(PermissionPolicy::Deny),
        &rig,
        SessionRef::Resume(session.clone()),
    );
    for turn in 2..4 {
        sessions.push(assert_turn(
            &run_turn(&mut chat, &prompts[turn]).await,
            attempts[turn],
        ));
        bounds.push(rig.requests().len());
    }
    let ended = minute_now();
    let log = rig.requests();
    let labels = [
        "turn A (fails twice)",
        "turn B",
        "relaunch, turn C (fails twice)",
        "turn D",
    ];
    let turns: Vec<(&str, &[UserTexts])> = labels
        .iter()
        .enumerate()
        .map(|(turn, label)| (*label, &log[bounds[turn]..bounds[turn + 1]]))
        .collect();
    print_request_log("demo gemini flavour", test, &turns);
    eprintln!(
        "{test}: {} one minute ({started:?} to {ended:?})",
        if started == ended {
            "within"
        } else {
            "NOT within"
        }
    );
    for (turn, (label, requests)) in turns.iter().enumerate() {
        assert_eq!(requests.len(), attempts[turn], "{label}: {log:#?}");
        for request in requests.iter() {
            for (earlier, prompt) in prompts.iter().enumerate() {
                let expected = usize::from(earlier <= turn);
                assert_eq!(
                    occurrences(request, prompt),
                    expected,
                    "{label}: prompt {earlier} should be in the request {expected} time(s): \
                     {request:#?}"
                );
            }
        }
    }
    for later in &sessions[1..] {
        for id in later {
            assert_eq!(id.as_ref(), Some(&session), "{sessions:?}");
        }
    }
}

/// A new launch loads the session (in the minute it was written) and Gemini replays its
/// history after the load's answer: thoughts, text, a tool call. The next turn's answer is
/// that turn's own; nothing of the history shows as its text, thought or tool call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reloaded_sessions_replayed_history_is_not_the_next_answer() {
    let rig = GeminiLike::new();
    let tag = run_tag();
    let first = format!("thinking {tag}");
    let second = format!("permission-unannounced {tag}");
    let third = format!("what did I ask? {tag}");
    let session = {
        let provider = rig.provider(PermissionPolicy::Allow);
        let one = rig.attempt(&provider, &first, SessionRef::New).await;
        expect_completed(&one);
        let session = started_session_id(&one);
        let two = rig
            .attempt(&provider, &second, SessionRef::Resume(session.clone()))
            .await;
        expect_completed(&two);
        assert!(
            two.iter()
                .any(|message| matches!(message, AgentMessage::ToolCompleted { .. })),
            "{two:#?}"
        );
        session
    };
    let provider = rig.provider(PermissionPolicy::Allow);
    let three = rig
        .attempt(&provider, &third, SessionRef::Resume(session.clone()))
        .await;
    expect_completed(&three);
    assert!(
        matches!(&three[0], AgentMessage::SessionResumed { session_id, .. } if *session_id == session),
        "{three:#?}"
    );
    assert_eq!(assistant_text(&three), HELLO, "only the turn's own answer");
    let leaked: Vec<&AgentMessage> = three
        .iter()
        .filter(|message| {
            matches!(
                message,
                AgentMessage::Thinking { .. }
                    | AgentMessage::Thought { .. }
                    | AgentMessage::ToolCall { .. }
                    | AgentMessage::ToolCompleted { .. }
                    | AgentMessage::ToolFailed { .. }
            )
        })
        .collect();
    assert!(
        leaked.is_empty(),
        "history shown as the new turn: {leaked:#?}"
    );
    assert_eq!(
        rig.requests().last().unwrap(),
        &[first, second, third],
        "the model got the whole conversation once"
    );
}

/// The failure of one attempt in `events` (the last one).
fn last_failure(events: &[OrchestratorEvent]) -> &Failure {
    events
        .iter()
        .rev()
        .find_map(|event| match event {
            OrchestratorEvent::Message {
                message: AgentMessage::Failed(failure),
                ..
            } => Some(failure),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no failed attempt: {events:#?}"))
}

fn attempts(events: &[OrchestratorEvent]) -> usize {
    events
        .iter()
        .filter(|event| matches!(event, OrchestratorEvent::AttemptStarted { .. }))
        .count()
}

fn failed_turn(events: &[OrchestratorEvent]) -> bool {
    matches!(
        events.last(),
        Some(OrchestratorEvent::TurnEnded {
            outcome: TurnOutcome::Failed { .. },
            ..
        })
    )
}

/// The failure notice the chat shows for `failure` (automatic retry off): its headline, and
/// the one-line summary of its folded diagnostics.
fn chat_headline(failure: &Failure) -> String {
    let now = Instant::now();
    let mut state = AppState::new(StartupInfo::default());
    for event in [
        OrchestratorEvent::TurnStarted {
            turn: 1,
            prompt: "hi".into(),
        },
        OrchestratorEvent::AttemptStarted {
            turn: 1,
            attempt: 1,
            max_attempts: 1,
        },
        OrchestratorEvent::Message {
            turn: 1,
            attempt: 1,
            message: AgentMessage::Failed(failure.clone()),
        },
    ] {
        state.on_orchestrator_event(event, now);
    }
    let notice = state
        .transcript
        .cells()
        .iter()
        .find_map(|cell| match &cell.body {
            CellBody::Notice(notice) => Some(notice.clone()),
            _ => None,
        })
        .expect("a failure notice");
    if notice.details_summary.is_empty() {
        notice.message.to_string()
    } else {
        format!(
            "{} [diagnostics: {}]",
            notice.message, notice.details_summary
        )
    }
}

/// Gemini answers a failed model request with the HTTP status as the JSON-RPC code and the
/// API's JSON body as the message: a 500 and a 429 are retried (all three attempts), their
/// status read from the code and their headline in the API's words; a 401 is not retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_failures_are_classified_by_their_status_and_said_in_the_apis_words() {
    let rig = GeminiLike::new();
    let tag = run_tag();
    let mut chat = retrying_orchestrator(rig.provider(PermissionPolicy::Deny), rig.work.path());
    for (scenario, status, words) in [
        ("http-error", 500, "fake internal error"),
        ("rate-limit", 429, "Resource exhausted (fake)."),
    ] {
        let events = run_turn(&mut chat, &format!("{scenario} {tag}")).await;
        assert!(failed_turn(&events), "{events:#?}");
        assert_eq!(
            attempts(&events),
            3,
            "HTTP {status} is retried: {events:#?}"
        );
        let failure = last_failure(&events);
        assert_eq!(failure.reason, FailureReason::AgentError);
        assert_eq!(failure.http_status, Some(status), "{failure:#?}");
        assert_eq!(failure.message, words, "{failure:#?}");
        let headline = chat_headline(failure);
        eprintln!("HTTP {status}: {headline}");
        assert!(
            headline.starts_with(&format!("Failed: {words}")),
            "{headline}"
        );
        assert!(headline.contains(&format!("HTTP {status}")), "{headline}");
        assert!(!headline.contains('{'), "no raw JSON: {headline}");
        // The process served several failed attempts: each reports its own stderr only.
        assert!(
            failure
                .stderr
                .lines()
                .filter(|line| !line.trim().is_empty())
                .count()
                <= 1,
            "earlier turns' stderr left out: {failure:#?}"
        );
    }
    let events = run_turn(&mut chat, &format!("auth-error {tag}")).await;
    assert!(failed_turn(&events), "{events:#?}");
    assert_eq!(attempts(&events), 1, "HTTP 401 is not retried: {events:#?}");
    let failure = last_failure(&events);
    assert_eq!(failure.http_status, Some(401), "{failure:#?}");
    assert_eq!(failure.message, "API key not valid (fake).");
    assert_eq!(
        rig.requests().len(),
        3 + 3 + 1,
        "one model request per attempt"
    );
}

/// Gemini ends a turn whose model stream broke off mid-answer with `end_turn`, zero token
/// counts and the partial text: that is not a completed answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_stream_is_not_a_completed_answer() {
    let rig = GeminiLike::new();
    let provider = rig.provider(PermissionPolicy::Deny);
    let prompt = format!("cut-stream {}", run_tag());
    let messages = rig.attempt(&provider, &prompt, SessionRef::New).await;
    let partial = "The answer starts, and then the";
    assert_eq!(
        assistant_text(&messages),
        partial,
        "what the model will see is shown"
    );
    let failure = expect_failed(&messages);
    assert_eq!(failure.text, partial, "{failure:#?}");
    assert!(
        failure.message.contains("dropped"),
        "said as a dropped connection: {failure:#?}"
    );
    assert_eq!(
        failure.message.matches("dropped").count(),
        1,
        "said once: {failure:#?}"
    );
}

/// Turn A completes; turn B (a slow answer) is stopped at its first text and retried by hand
/// (`/retry`); turn C continues, in one minute. The stopped prompt stays in Gemini's session,
/// so the retry needs the restored file read again, in the minute Gemini's reload wipes it
/// unless the backend readies the file first. The retry and C carry each earlier prompt once,
/// and the running agent serves them all (no cold start).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_then_retry_in_one_minute_keep_the_conversation() {
    let test = "a_stop_then_retry_in_one_minute_keep_the_conversation";
    let rig = GeminiLike::new();
    let prompts = real_cli::stop_prompts("demo-gemini");
    wait_for_a_fresh_minute();
    real_cli::a_stop_then_retry_keep_the_conversation(
        "demo gemini flavour",
        test,
        rig.provider(PermissionPolicy::Deny),
        rig.work.path(),
        &prompts,
        || rig.requests(),
        Vec::new,
    )
    .await;
    assert_eq!(rig.starts(), 1, "the stop and the retry cost no new agent");
}
