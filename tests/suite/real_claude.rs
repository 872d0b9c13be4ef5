//! The real Claude Code CLI, driven through `CliProvider` + `ClaudeBackend`, against the fake
//! Messages API in `support/fake_anthropic.rs` on 127.0.0.1.
//!
//! Opt-in: every test is `#[ignore]`d (`cargo test --test suite -- --ignored real_claude::` runs them),
//! and then needs the CLI installed (`npm install --prefix
//! /tmp/claude-cli @anthropic-ai/claude-code`, or `AGENTTY_CLAUDE_BIN`). Every run gets a
//! throwaway HOME and working directory, telemetry and non-essential traffic off.

use crate::support::fake_anthropic;
use crate::support::real_cli;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use agentty::config::ProviderSettings;
use agentty::provider::claude::ClaudeBackend;
use agentty::provider::{CliProvider, SessionRef, StopControl};
use agentty::stream::{AgentMessage, FailureReason, NoticeKind};
use fake_anthropic::{FakeAnthropic, Scenario};
use real_cli::{
    assistant_text, cancelled, collect, expect_completed, expect_failed, is_alive, notices,
    real_cli, started_session_id, test_name, FailFirst, Flaky, ProcessProbe, Rig, UserTexts,
    RUN_LIMIT,
};

const DEFAULT_BIN: &str = "/tmp/claude-cli/node_modules/.bin/claude";
/// The environment variable that marks every process of one test run.
const RUN_MARKER_VAR: &str = "AGENTTY_CLAUDE_TEST_RUN";

/// The real CLI against a fresh fake server, with telemetry and non-essential traffic off;
/// every process of the run carries a marker that `ProcessProbe` finds.
async fn rig(test: &str, scenario: Scenario, args: &[&str]) -> (Rig<FakeAnthropic>, ProcessProbe) {
    let (rig, probe, _) = rig_on(test, FakeAnthropic::start(scenario), args).await;
    (rig, probe)
}

/// [`rig`] on the server `server` starts, also returning the provider's settings.
async fn rig_on(
    test: &str,
    server: impl std::future::Future<Output = FakeAnthropic>,
    args: &[&str],
) -> (Rig<FakeAnthropic>, ProcessProbe, ProviderSettings) {
    let bin = real_cli(test, "AGENTTY_CLAUDE_BIN", DEFAULT_BIN);
    let server = server.await;
    let home = tempfile::tempdir().expect("temp HOME");
    let work = tempfile::tempdir().expect("temp working directory");
    let probe = ProcessProbe::new(RUN_MARKER_VAR);
    let mut env = fake_anthropic::cli_env(&server.base_url, home.path());
    env.insert(RUN_MARKER_VAR.to_owned(), probe.marker.clone());
    let settings = ProviderSettings {
        command: Some(bin),
        args: args.iter().map(|arg| arg.to_string()).collect(),
        env,
        ..ProviderSettings::default()
    };
    let provider = Arc::new(CliProvider::new(ClaudeBackend::new(settings.clone())));
    let rig = Rig {
        server,
        provider,
        home,
        work,
    };
    (rig, probe, settings)
}

fn delta_count(messages: &[AgentMessage]) -> usize {
    messages
        .iter()
        .filter(|message| matches!(message, AgentMessage::Assistant { .. }))
        .count()
}

fn assert_started_session(messages: &[AgentMessage]) {
    match messages.first() {
        Some(AgentMessage::SessionStarted {
            provider,
            session_id: Some(id),
            model,
        }) => {
            assert_eq!(provider, "claude");
            assert!(uuid::Uuid::parse_str(id).is_ok(), "session id {id}");
            // Claude Code names its model in `system/init`: the status bar shows it from the start.
            assert!(model.as_deref().is_some_and(|model| !model.is_empty()));
        }
        other => panic!("the stream starts with session.started, not {other:?}"),
    }
}

fn assert_completed(messages: &[AgentMessage]) {
    let (stop_reason, usage) = expect_completed(messages);
    assert_eq!(stop_reason, "end_turn");
    let usage = usage.expect("usage");
    assert!(usage.input_tokens.is_some_and(|tokens| tokens >= 1234));
    assert!(usage.cost_usd.is_some_and(|cost| cost > 0.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn text_streams_as_partial_deltas_shown_once() {
    let (rig, _) = rig(&test_name(), Scenario::Text, &[]).await;
    let messages = rig.run("Say hello", SessionRef::New).await;
    assert_started_session(&messages);
    assert_eq!(
        assistant_text(&messages),
        "Hello from the fake server. You said: 'Say hello'. messages=2."
    );
    assert!(delta_count(&messages) > 1, "partial messages stream");
    assert_completed(&messages);
    assert_eq!(rig.server.message_requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn later_turns_resume_the_session_and_a_bad_id_fails_clearly() {
    let (rig, _) = rig(&test_name(), Scenario::Text, &[]).await;
    let resumed = rig
        .run_then_resume("claude", "Remember the word banana", "What was the word?")
        .await;
    // The whole history went to the model: two user and two assistant messages before.
    assert_eq!(
        assistant_text(&resumed),
        "Hello from the fake server. You said: 'What was the word?'. messages=4."
    );
    assert_completed(&resumed);
    let continued = rig.run("And once more?", SessionRef::ContinueLatest).await;
    assert!(
        assistant_text(&continued).ends_with("messages=6."),
        "{continued:?}"
    );

    let unknown = uuid::Uuid::new_v4().to_string();
    let bad = rig.run("Bad id", SessionRef::Resume(unknown.clone())).await;
    assert_eq!(
        expect_failed(&bad).message,
        format!("No conversation found with session ID: {unknown}")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn thinking_is_released_as_one_thought() {
    let (rig, _) = rig(&test_name(), Scenario::Thinking, &[]).await;
    let messages = rig.run("Think then answer", SessionRef::New).await;
    assert_eq!(
        assistant_text(&messages),
        "After thinking: the answer is 42."
    );
    let thoughts: Vec<&AgentMessage> = messages
        .iter()
        .filter(|message| matches!(message, AgentMessage::Thought { .. }))
        .collect();
    assert_eq!(
        thoughts,
        [&AgentMessage::Thought {
            text: "Let me think about this carefully.".into()
        }]
    );
    assert_completed(&messages);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn a_bash_tool_call_is_announced_and_completed() {
    let tool = Scenario::Tool {
        command: "echo hi".into(),
    };
    let (rig, _) = rig(&test_name(), tool, &["--allowedTools", "Bash"]).await;
    let messages = rig.run("Run echo hi", SessionRef::New).await;
    let call = messages.iter().find_map(|message| match message {
        AgentMessage::ToolCall {
            id,
            name,
            input,
            parent_id: None,
        } => Some((id.clone(), name.clone(), input.clone())),
        _ => None,
    });
    let (id, name, input) = call.expect("a tool.call");
    assert_eq!(name, "Bash");
    assert_eq!(input["command"], "echo hi");
    assert!(messages.contains(&AgentMessage::ToolCompleted {
        id,
        output: "hi".into()
    }));
    assert_eq!(
        assistant_text(&messages),
        "I'll run a command.The command printed: hi. Done."
    );
    assert_completed(&messages);
    let main_requests = rig
        .server
        .message_requests()
        .iter()
        .filter(|request| request.main)
        .count();
    assert_eq!(main_requests, 2, "the tool result went back to the model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn an_http_500_fails_after_exactly_one_request() {
    let (rig, _) = rig(&test_name(), Scenario::Error { status: 500 }, &[]).await;
    let messages = rig.run("Say hello", SessionRef::New).await;
    assert_eq!(
        assistant_text(&messages),
        "",
        "the CLI's error message is not assistant text"
    );
    assert_eq!(notices(&messages, NoticeKind::AgentRetry.wire()), 0);
    let failure = expect_failed(&messages);
    assert_eq!(failure.reason, FailureReason::AgentError);
    assert_eq!(failure.http_status, Some(500));
    assert!(failure.message.contains("500"), "{}", failure.message);
    let requests = rig.server.message_requests();
    assert_eq!(
        requests.len(),
        1,
        "the CLI's own retries are off: {requests:?}"
    );
    assert!(requests[0].main && requests[0].stream);
    assert_eq!(requests[0].retry_count.as_deref(), Some("0"));
}

/// A stream cut mid-answer fails the attempt with the text shown so far; the CLI does not ask
/// the model again without streaming (its hidden fallback is off).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn a_cut_stream_fails_without_a_hidden_refetch() {
    let (rig, _) = rig(
        &test_name(),
        Scenario::Cut {
            text: "Partial words before the cut and the rest after it".into(),
            words: 3,
        },
        &[],
    )
    .await;
    let messages = rig.run("Say hello", SessionRef::New).await;
    assert_eq!(assistant_text(&messages), "Partial words before ");
    let failure = expect_failed(&messages);
    assert!(
        failure
            .message
            .starts_with("the connection to the model dropped mid-reply"),
        "{}",
        failure.message
    );
    let streams: Vec<bool> = rig
        .server
        .message_requests()
        .iter()
        .filter(|request| request.main)
        .map(|request| request.stream)
        .collect();
    assert_eq!(streams, [true], "one streamed request, no re-request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn a_stop_during_a_tool_ends_the_attempt_and_leaves_no_process() {
    let tool = Scenario::Tool {
        command: "sleep 100".into(),
    };
    let (rig, processes) = rig(&test_name(), tool, &["--allowedTools", "Bash"]).await;
    let stop = StopControl::new();
    let watcher = {
        let stop = stop.clone();
        let probe = processes.clone();
        tokio::spawn(async move {
            // Stop once `sleep 100` runs; remember every process of the run at that moment.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
            while tokio::time::Instant::now() < deadline {
                let processes = probe.live();
                if processes.iter().any(|(_, command)| command == "sleep 100") {
                    stop.stop();
                    return processes;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Vec::new()
        })
    };
    let messages = collect(
        &mut rig.start("Run sleep", SessionRef::New, stop),
        RUN_LIMIT,
    )
    .await;
    let seen = watcher.await.expect("watcher");
    assert!(
        seen.iter().any(|(_, command)| command == "sleep 100"),
        "sleep 100 was running before the stop: {seen:?}"
    );
    let session_id = started_session_id(&messages);
    assert!(
        seen.iter()
            .any(|(_, command)| command.contains(&format!(" --session-id {session_id} "))),
        "the CLI runs in the session agentty chose"
    );
    let pids: BTreeSet<i32> = seen.iter().map(|(pid, _)| *pid).collect();
    eprintln!("processes at the stop: {seen:?}");
    cancelled("claude", &messages);
    let call_id = messages
        .iter()
        .find_map(|message| match message {
            AgentMessage::ToolCall { id, .. } => Some(id.clone()),
            _ => None,
        })
        .expect("a tool.call");
    assert!(messages
        .iter()
        .any(|message| matches!(message, AgentMessage::ToolFailed { id, .. } if *id == call_id)));
    let survivors: Vec<i32> = pids.into_iter().filter(|pid| is_alive(*pid)).collect();
    assert!(
        survivors.is_empty(),
        "still alive after the stop: {survivors:?}"
    );
    let left = processes.live();
    assert!(left.is_empty(), "processes of the run left: {left:?}");
}

/// The user messages of every main (conversation) request the server received.
fn model_requests(server: &FakeAnthropic) -> Vec<UserTexts> {
    server
        .message_requests()
        .iter()
        .filter(|request| request.main)
        .map(|request| request.user_texts())
        .collect()
}

/// The real CLI against a server whose main requests fail (HTTP 500) the first two times their
/// last user message holds `flaky`.
async fn flaky_rig(test: &str, flaky: &str) -> Rig<FakeAnthropic> {
    let fail = FailFirst::new(2, flaky);
    let server = FakeAnthropic::start_failing(Scenario::Text, move |text| fail.take(text));
    rig_on(test, server, &[]).await.0
}

/// The one-shot JSON mode against a server that fails `flaky` twice.
async fn flaky_json(test: &str, flaky: &str) -> Flaky {
    flaky_rig(test, flaky).await.flaky(model_requests)
}

crate::retry_sends_the_prompt_once!(json_retry: "claude", super::flaky_json, "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)");

// ---- `--transport stream`: Claude Code's own long-lived mode with its control protocol ----

use agentty::config::PermissionPolicy;
use agentty::provider::{provider_on, AgentStream, Provider, Transport};
use real_cli::{attempt_request, next_message, occurrences};

/// The real CLI behind the stream transport, against `server`, answering by `policy` (the
/// rig's provider is the stream transport's).
struct StreamRig {
    rig: Rig<FakeAnthropic>,
    settings: ProviderSettings,
    probe: ProcessProbe,
}

async fn stream_rig(
    test: &str,
    server: impl std::future::Future<Output = FakeAnthropic>,
    policy: PermissionPolicy,
) -> StreamRig {
    let (mut rig, probe, settings) = rig_on(test, server, &[]).await;
    rig.provider = stream_provider(&settings, policy);
    StreamRig {
        rig,
        settings,
        probe,
    }
}

fn stream_provider(settings: &ProviderSettings, policy: PermissionPolicy) -> Arc<dyn Provider> {
    provider_on(
        Arc::new(ClaudeBackend::new(settings.clone())),
        Transport::Stream,
        policy,
    )
    .expect("the stream transport")
}

impl StreamRig {
    fn start(&self, prompt: &str, session: SessionRef, stop: StopControl) -> AgentStream {
        self.rig.start(prompt, session, stop)
    }

    /// Runs one attempt to its end, answering permission requests with `answer`.
    async fn run(
        &self,
        prompt: &str,
        session: SessionRef,
        answer: Option<(&str, Option<&str>)>,
    ) -> Vec<AgentMessage> {
        let mut stream = self.start(prompt, session, StopControl::new());
        let mut seen = Vec::new();
        while let Some(message) = next_message(&mut stream, RUN_LIMIT).await {
            if let (AgentMessage::PermissionRequest(request), Some((option, note))) =
                (&message, answer)
            {
                assert!(self.rig.provider.answer_permission(
                    &request.id,
                    Some(option.to_owned()),
                    note.map(str::to_owned)
                ));
            }
            let done = message.is_terminal();
            seen.push(message);
            if done {
                break;
            }
        }
        seen
    }

    /// The PIDs of the Claude Code processes of this run.
    fn claude_pids(&self) -> Vec<i32> {
        self.probe
            .live()
            .into_iter()
            .filter(|(_, command)| command.contains("--input-format stream-json"))
            .map(|(pid, _)| pid)
            .collect()
    }
}

fn touch() -> Scenario {
    Scenario::Tool {
        command: "touch marker.txt".into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn stream_a_permission_prompt_allowed_writes_the_file_and_rejected_does_not() {
    let test = &test_name();
    let allowed = stream_rig(test, FakeAnthropic::start(touch()), PermissionPolicy::Ask).await;
    let messages = allowed
        .run("Touch the marker", SessionRef::New, Some(("allow", None)))
        .await;
    let request = messages.iter().find_map(|message| match message {
        AgentMessage::PermissionRequest(request) => Some(request.clone()),
        _ => None,
    });
    let request = request.expect("Claude Code asked");
    eprintln!("permission prompt: {request:#?}");
    assert_eq!(request.command.as_deref(), Some("touch marker.txt"));
    assert!(allowed.rig.work.path().join("marker.txt").exists());
    expect_completed(&messages);

    let rejected = stream_rig(test, FakeAnthropic::start(touch()), PermissionPolicy::Ask).await;
    let messages = rejected
        .run(
            "Touch the marker",
            SessionRef::New,
            Some(("reject", Some("just say hi"))),
        )
        .await;
    assert!(!rejected.rig.work.path().join("marker.txt").exists());
    // The model read the note as the tool's result (the fake echoes it).
    let results = model_requests(&rejected.rig.server);
    assert!(
        rejected
            .rig
            .server
            .message_requests()
            .iter()
            .any(|request| request
                .tool_results()
                .iter()
                .any(|result| result.contains("just say hi"))),
        "{results:#?}"
    );
    expect_completed(&messages);
}

/// `agentty run --provider claude` against a fresh fake server: its stdout lines and status.
fn headless(work: &std::path::Path, env: &ProviderSettings, args: &[&str]) -> (String, i32) {
    let bin = env.command.clone().expect("the CLI");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(["run", "--provider", "claude", "--agent-bin"])
        .arg(bin)
        .args(args)
        .envs(&env.env)
        .current_dir(work)
        .output()
        .expect("agentty runs");
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        output.status.code().unwrap_or(-1),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn stream_headless_permissions_allow_and_deny_are_honoured() {
    let test = &test_name();
    let (rig, _, settings) = rig_on(test, FakeAnthropic::start(touch()), &[]).await;
    let work = rig.work.path();
    let (out, status) = headless(work, &settings, &["--permissions", "allow", "Touch it"]);
    assert_eq!(status, 0, "{out}");
    assert!(work.join("marker.txt").exists(), "{out}");
    std::fs::remove_file(work.join("marker.txt")).unwrap();
    let (out, status) = headless(work, &settings, &["--permissions", "deny", "Touch it"]);
    assert_eq!(status, 0, "{out}");
    assert!(!work.join("marker.txt").exists());
    assert!(out.contains(r#""kind":"permission_refused""#), "{out}");
    // The one-shot mode cannot ask: --permissions there is a usage error, not ignored.
    let (out, status) = headless(
        work,
        &settings,
        &["--transport", "json", "--permissions", "allow", "Touch it"],
    );
    assert_eq!(status, 2, "{out}");
    // Without --permissions the one-shot mode's refusal says why and how to allow.
    let (out, status) = headless(work, &settings, &["--transport", "json", "Touch it"]);
    assert_eq!(status, 0, "{out}");
    assert!(!work.join("marker.txt").exists());
    assert!(
        out.contains("cannot ask you. Use --transport stream"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn stream_esc_interrupts_in_band_and_the_next_turn_runs_on_the_same_process() {
    let test = &test_name();
    let slow = |text: &str| {
        if text.contains("slowly") {
            Scenario::Say {
                text: (0..60).map(|n| format!("tok{n} ")).collect(),
                pause: Duration::from_millis(200),
            }
        } else {
            Scenario::Text
        }
    };
    let rig = stream_rig(
        test,
        FakeAnthropic::start_choosing(slow),
        PermissionPolicy::Ask,
    )
    .await;
    let stop = StopControl::new();
    let mut stream = rig.start("Stream slowly", SessionRef::New, stop.clone());
    let mut seen = Vec::new();
    while let Some(message) = next_message(&mut stream, RUN_LIMIT).await {
        let delta = matches!(message, AgentMessage::Assistant { .. });
        seen.push(message);
        if delta {
            break;
        }
    }
    let pids = rig.claude_pids();
    assert_eq!(pids.len(), 1, "{pids:?}");
    stop.stop();
    seen.extend(collect(&mut stream, RUN_LIMIT).await);
    let (stage, elapsed_ms) = cancelled("claude", &seen);
    eprintln!("stopped at stage {stage:?} after {elapsed_ms} ms");
    assert_eq!(stage, agentty::stream::StopStage::Cancel);
    let id = started_session_id(&seen);
    let next = rig.run("And now?", SessionRef::Resume(id), None).await;
    expect_completed(&next);
    assert_eq!(
        rig.claude_pids(),
        pids,
        "the same process served the next turn"
    );
    let last = model_requests(&rig.rig.server).pop().unwrap();
    assert_eq!(occurrences(&last, "Stream slowly"), 1, "{last:#?}");
    assert_eq!(occurrences(&last, "And now?"), 1, "{last:#?}");
}

/// The stream transport against a server that fails `flaky` twice.
async fn flaky_stream(test: &str, flaky: &str) -> Flaky {
    let fail = FailFirst::new(2, flaky);
    let server = FakeAnthropic::start_failing(Scenario::Text, move |text| fail.take(text));
    let rig = stream_rig(test, server, PermissionPolicy::Ask).await;
    rig.rig.flaky(model_requests)
}

crate::retry_sends_the_prompt_once!(stream_retry: "claude (stream)", super::flaky_stream, "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn stream_a_resumed_conversation_continues_its_session_in_a_new_process() {
    let test = &test_name();
    let rig = stream_rig(
        test,
        FakeAnthropic::start(Scenario::Text),
        PermissionPolicy::Ask,
    )
    .await;
    let first = rig
        .run("Remember the word banana", SessionRef::New, None)
        .await;
    let id = started_session_id(&first);
    // agentty quits and comes back (`--resume`): a new provider, so a new process.
    let mut rig = rig;
    rig.rig.provider = stream_provider(&rig.settings, PermissionPolicy::Ask);
    let resumed = rig
        .run("What was the word?", SessionRef::Resume(id.clone()), None)
        .await;
    real_cli::assert_resumed(&resumed, "claude", &id);
    assert_eq!(
        assistant_text(&resumed),
        "Hello from the fake server. You said: 'What was the word?'. messages=4."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn stream_enter_to_request_for_three_turns_against_the_one_shot_mode() {
    let test = &test_name();
    let rig = stream_rig(
        test,
        FakeAnthropic::start(Scenario::Text),
        PermissionPolicy::Ask,
    )
    .await;
    // As the chat does: the process starts when the conversation opens.
    rig.rig
        .provider
        .warm_up(rig.rig.request("", SessionRef::New));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut stream_ms = Vec::new();
    let mut session = SessionRef::New;
    for turn in 1..=3 {
        let before = rig.rig.server.message_requests().len();
        let enter = std::time::Instant::now();
        let messages = rig
            .run(&format!("turn {turn}"), session.clone(), None)
            .await;
        let request = rig.rig.server.message_requests()[before].received_at;
        stream_ms.push(request.duration_since(enter).as_millis());
        session = SessionRef::Resume(any_session_id(&messages));
    }
    let one_shot = CliProvider::new(ClaudeBackend::new(rig.settings.clone()));
    let mut json_ms = Vec::new();
    let mut session = SessionRef::New;
    for turn in 1..=3 {
        let before = rig.rig.server.message_requests().len();
        let enter = std::time::Instant::now();
        let request = attempt_request(
            &format!("json turn {turn}"),
            session.clone(),
            rig.rig.work.path(),
        );
        let messages = collect(
            &mut one_shot.execute(request, StopControl::new()),
            RUN_LIMIT,
        )
        .await;
        let request = rig.rig.server.message_requests()[before].received_at;
        json_ms.push(request.duration_since(enter).as_millis());
        session = SessionRef::Resume(any_session_id(&messages));
    }
    eprintln!(
        "Enter -> first model request, turns 1-3: stream {stream_ms:?} ms, json {json_ms:?} ms"
    );
    assert!(stream_ms[1] < json_ms[1] && stream_ms[2] < json_ms[2]);
}

/// The session id a turn reported (started or resumed).
fn any_session_id(messages: &[AgentMessage]) -> String {
    messages
        .iter()
        .find_map(|message| match message {
            AgentMessage::SessionStarted { session_id, .. } => session_id.clone(),
            AgentMessage::SessionResumed { session_id, .. } => Some(session_id.clone()),
            _ => None,
        })
        .expect("a session id")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn stream_a_stop_during_a_tool_kills_the_tool_and_keeps_the_process() {
    let test = &test_name();
    let sleep = Scenario::Tool {
        command: "sleep 100".into(),
    };
    let rig = stream_rig(test, FakeAnthropic::start(sleep), PermissionPolicy::Allow).await;
    let stop = StopControl::new();
    let mut stream = rig.start("Run sleep", SessionRef::New, stop.clone());
    let watcher = {
        let stop = stop.clone();
        let marker = rig.probe.marker.clone();
        tokio::spawn(async move {
            let probe = ProcessProbe {
                var: RUN_MARKER_VAR,
                marker,
            };
            let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
            while tokio::time::Instant::now() < deadline {
                let sleeping: Vec<i32> = probe
                    .live()
                    .into_iter()
                    .filter(|(_, command)| command == "sleep 100")
                    .map(|(pid, _)| pid)
                    .collect();
                if !sleeping.is_empty() {
                    stop.stop();
                    return sleeping;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Vec::new()
        })
    };
    let messages = collect(&mut stream, RUN_LIMIT).await;
    let sleeping = watcher.await.expect("watcher");
    assert!(!sleeping.is_empty(), "sleep 100 ran before the stop");
    let (stage, elapsed_ms) = cancelled("claude", &messages);
    eprintln!("stopped at stage {stage:?} after {elapsed_ms} ms");
    assert_eq!(stage, agentty::stream::StopStage::Cancel);
    let survivors = real_cli::survivors(sleeping, Duration::from_secs(5)).await;
    assert!(
        survivors.is_empty(),
        "the tool outlived the stop: {survivors:?}"
    );
    assert_eq!(
        rig.claude_pids().len(),
        1,
        "Claude Code stays for the next turn"
    );
}

// ---- /rewind on Claude Code's stream transport (its default chat transport) ----

/// Three turns in one Claude session over the stream transport, a rewind of the conversation
/// to before the second: the next request carries the first prompt and the new one only (the
/// fake server's request log). The rewind undone, the next request carries all of them again;
/// rewound once more, they are gone again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn stream_after_a_rewind_the_next_request_no_longer_carries_the_rewound_prompts() {
    let test = &test_name();
    let rig = stream_rig(
        test,
        FakeAnthropic::start(Scenario::Text),
        PermissionPolicy::Ask,
    )
    .await;
    real_cli::after_a_rewind_the_next_request_no_longer_carries_the_rewound_prompts(
        test,
        rig.rig.provider.clone(),
        rig.rig.work.path(),
        || model_requests(&rig.rig.server),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn stream_an_attached_image_reaches_the_model_as_a_base64_image_block() {
    let test = "stream_an_attached_image_reaches_the_model_as_a_base64_image_block";
    let stream = stream_rig(
        test,
        FakeAnthropic::start(Scenario::Text),
        PermissionPolicy::Deny,
    )
    .await;
    let image = real_cli::one_pixel_png(stream.rig.work.path());
    let mut request = attempt_request(
        "What is in this image?",
        SessionRef::New,
        stream.rig.work.path(),
    );
    request.images = vec![image.clone()];
    let messages = collect(
        &mut stream.rig.provider.execute(request, StopControl::new()),
        RUN_LIMIT,
    )
    .await;
    expect_completed(&messages);
    let requests = stream.rig.server.message_requests();
    let main = requests
        .iter()
        .rfind(|request| request.main)
        .expect("the conversation's request");
    let images: Vec<&serde_json::Value> = main.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "user")
        .flat_map(|message| message["content"].as_array().into_iter().flatten())
        .filter(|block| block["type"] == "image")
        .collect();
    assert_eq!(images.len(), 1, "{}", main.body);
    assert_eq!(images[0]["source"]["type"], "base64");
    assert_eq!(images[0]["source"]["media_type"], "image/png");
    assert_eq!(images[0]["source"]["data"], image.base64().as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn stream_compact_summarises_and_the_next_prompt_carries_the_summary() {
    let test = "stream_compact_summarises_and_the_next_prompt_carries_the_summary";
    let rig = stream_rig(
        test,
        FakeAnthropic::start(Scenario::Text),
        PermissionPolicy::Ask,
    )
    .await;
    let first = rig.run("Remember banana", SessionRef::New, None).await;
    let id = started_session_id(&first);
    let session = || SessionRef::Resume(id.clone());
    // Claude Code refuses to compact a conversation this short ("Not enough messages").
    for prompt in ["Remember apple", "Remember cherry"] {
        rig.run(prompt, session(), None).await;
    }
    let before = rig.rig.server.message_requests().len();
    assert!(rig.rig.provider.can_compact());
    let request = attempt_request("", session(), rig.rig.work.path());
    let compacted = collect(
        &mut rig
            .rig
            .provider
            .compact(request, Some("keep the fruit".into()), StopControl::new()),
        RUN_LIMIT,
    )
    .await;
    expect_completed(&compacted);
    let notice = compacted
        .iter()
        .find_map(|message| match message {
            AgentMessage::Notice { kind, message } if kind == "compacted" => Some(message.clone()),
            _ => None,
        })
        .expect("the compacted notice");
    assert!(
        notice.starts_with("Conversation compacted: ") && notice.contains(" → "),
        "{notice}"
    );
    let requests = rig.rig.server.message_requests();
    assert!(requests.len() > before, "a summarisation request was made");
    let summarising = requests[before..]
        .iter()
        .flat_map(|request| request.user_texts())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(summarising.contains("keep the fruit"), "{summarising}");

    let next = rig.run("What was the word?", session(), None).await;
    expect_completed(&next);
    let users = rig
        .rig
        .server
        .message_requests()
        .last()
        .unwrap()
        .user_texts();
    eprintln!("after the compaction the model received: {users:#?}");
    assert!(
        users[0].contains("continued from a previous conversation"),
        "the summary comes first: {users:?}"
    );
    assert!(
        !users.iter().any(|text| text.contains("Remember banana")),
        "the earliest prompt is summarised, not sent again: {users:?}"
    );
    assert!(users.last().unwrap().ends_with("What was the word?"));
}

/// On the default retry settings (no config), a rate limit (HTTP 429, once) on Claude Code's
/// chat transport is retried after the countdown, and the model receives the prompt once in
/// the request that answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn stream_a_rate_limit_on_the_default_settings_is_retried_and_sent_once() {
    use agentty::config::RetryPolicy;
    use agentty::orchestrator::{spawn_orchestrator, OrchestratorEvent, OrchestratorOptions};
    use std::sync::atomic::{AtomicBool, Ordering};
    let test = &test_name();
    let limited = Arc::new(AtomicBool::new(false));
    let server = FakeAnthropic::start_choosing(move |text| {
        if text.contains("limited") && !limited.swap(true, Ordering::SeqCst) {
            Scenario::Error { status: 429 }
        } else {
            Scenario::Text
        }
    });
    let rig = stream_rig(test, server, PermissionPolicy::Ask).await;
    let mut options = OrchestratorOptions::new(rig.rig.provider.clone());
    assert_eq!(options.policy, RetryPolicy::default(), "the defaults");
    assert!(options.policy.enabled);
    options.cwd = Some(rig.rig.work.path().to_path_buf());
    let mut handle = spawn_orchestrator(options);
    let prompt = "limited: say hello";
    let events = real_cli::run_turn(&mut handle, prompt).await;
    let scheduled: Vec<(u32, u64, String)> = events
        .iter()
        .filter_map(|event| match event {
            OrchestratorEvent::RetryScheduled {
                attempt,
                delay_ms,
                reason,
                ..
            } => Some((*attempt, *delay_ms, reason.clone())),
            _ => None,
        })
        .collect();
    eprintln!("{test}: retries scheduled: {scheduled:?}");
    assert_eq!(scheduled.len(), 1, "{events:#?}");
    assert_eq!(scheduled[0].0, 2);
    assert_eq!(scheduled[0].1, RetryPolicy::default().retry_delay_ms);
    assert!(scheduled[0].2.contains("429"), "{scheduled:?}");
    real_cli::assert_turn(&events, 2);
    let requests = model_requests(&rig.rig.server);
    eprintln!("{test}: the model received: {requests:?}");
    assert_eq!(requests.len(), 2, "the 429, then the answered request");
    assert_eq!(occurrences(requests.last().unwrap(), prompt), 1);
}

/// The shared stream `agentty run` printed, one message a line.
fn messages_of(out: &str) -> Vec<AgentMessage> {
    out.lines()
        .filter_map(|line| AgentMessage::from_json_line(line).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn stream_the_task_list_is_the_plan_and_a_sub_agents_calls_nest() {
    use serde_json::json;
    let test = &test_name();
    let call = |name: &str, input: serde_json::Value| (name.to_owned(), input);
    let script = Scenario::Script {
        main: vec![
            vec![call(
                "TaskCreate",
                json!({"subject": "Read the notes", "description": "read"}),
            )],
            vec![call(
                "TaskUpdate",
                json!({"taskId": "1", "status": "in_progress"}),
            )],
            vec![call(
                "Agent",
                json!({"description": "Run two commands",
                "subagent_type": "general-purpose",
                "prompt": format!("{}: run echo one, then echo two", fake_anthropic::SUB_AGENT)}),
            )],
            vec![call(
                "TaskUpdate",
                json!({"taskId": "1", "status": "completed"}),
            )],
        ],
        sub_agent: vec![
            vec![call(
                "Bash",
                json!({"command": "echo one", "description": "one"}),
            )],
            vec![call(
                "Bash",
                json!({"command": "echo two", "description": "two"}),
            )],
        ],
    };
    let (rig, _, settings) = rig_on(test, FakeAnthropic::start(script), &[]).await;
    let (out, status) = headless(
        rig.work.path(),
        &settings,
        &["--permissions", "allow", "Work"],
    );
    assert_eq!(status, 0, "{out}");
    let messages = messages_of(&out);
    let plans = crate::support::replay::plans(&messages);
    let entry = |status: &str| vec![("Read the notes".to_owned(), status.to_owned())];
    assert_eq!(
        plans,
        [entry("pending"), entry("in_progress"), entry("completed")],
        "{out}"
    );
    let calls: Vec<(&str, Option<&str>)> = messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolCall {
                name, parent_id, ..
            } => Some((name.as_str(), parent_id.as_deref())),
            _ => None,
        })
        .collect();
    let agent = messages
        .iter()
        .find_map(|message| match message {
            AgentMessage::ToolCall { id, name, .. } if name == "Agent" => Some(id.as_str()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the Agent call: {out}"));
    assert_eq!(
        calls,
        [
            ("Agent", None),
            ("Bash", Some(agent)),
            ("Bash", Some(agent))
        ],
        "{out}"
    );
    assert!(!out.contains("agentId") && !out.contains("taskId"), "{out}");
    // The model that ran, as Claude Code's `init` names it, heads the session.
    assert!(
        matches!(&messages[0], AgentMessage::SessionStarted { model: Some(model), .. } if model.starts_with("claude-")),
        "{out}"
    );
}

// ---- Claude's effort over the stream transport ----

/// The effort Claude Code 2.1.197 lists for its models is offered; a chosen one reaches the
/// next model request as `output_config.effort` (through `apply_flag_settings`), and a resumed
/// conversation's effort reaches the new process's request too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn stream_a_chosen_effort_reaches_the_model_request() {
    use agentty::provider::AgentSetting;
    use serde_json::{json, Value};
    let test = &test_name();
    let mut rig = stream_rig(
        test,
        FakeAnthropic::start(Scenario::Text),
        PermissionPolicy::Ask,
    )
    .await;
    let first = rig.run("one", SessionRef::New, None).await;
    let id = started_session_id(&first);
    let mut status = rig.rig.provider.agent_status().expect("a status");
    assert_eq!(
        status.borrow().thinking_levels,
        ["low", "medium", "high", "xhigh", "max"],
        "the levels the CLI lists for its default model"
    );
    assert!(rig
        .rig
        .provider
        .change_setting(AgentSetting::ThinkingLevel("low".into())));
    tokio::time::timeout(
        RUN_LIMIT,
        status.wait_for(|status| status.thinking_level.as_deref() == Some("low")),
    )
    .await
    .expect("in time")
    .expect("the status");
    rig.run("two", SessionRef::Resume(id.clone()), None).await;
    let efforts = |server: &FakeAnthropic| -> Vec<Value> {
        server
            .message_requests()
            .iter()
            .filter(|request| request.main)
            .map(|request| request.body["output_config"]["effort"].clone())
            .collect()
    };
    let seen = efforts(&rig.rig.server);
    assert_eq!(seen.last(), Some(&json!("low")), "{seen:?}");
    assert_ne!(seen.first(), Some(&json!("low")), "{seen:?}");

    // agentty comes back (`--resume`) with the effort the conversation logged.
    rig.rig.provider = stream_provider(&rig.settings, PermissionPolicy::Ask);
    let mut request = rig.rig.request("three", SessionRef::Resume(id));
    request.settings = vec![AgentSetting::ThinkingLevel("max".into())];
    let mut stream = rig.rig.provider.execute(request, StopControl::new());
    let resumed = collect(&mut stream, RUN_LIMIT).await;
    expect_completed(&resumed);
    let seen = efforts(&rig.rig.server);
    assert_eq!(seen.last(), Some(&json!("max")), "{seen:?}");
}

/// Claude Code's session-wide suggestion for a Write (`setMode acceptEdits`) is offered as
/// "Allow all edits this session"; chosen, the CLI switches to accept edits (the status says
/// so) and its next write is not asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_claude:: (README, Tests)"]
async fn stream_all_edits_this_session_switches_claudes_mode_and_the_next_write_is_not_asked() {
    use serde_json::json;
    let test = &test_name();
    let work = tempfile::tempdir().expect("a work dir");
    let write = |name: &str| {
        let path = work.path().join(name).display().to_string();
        vec![(
            "Write".to_owned(),
            json!({"file_path": path, "content": "hello\n"}),
        )]
    };
    let server = FakeAnthropic::start(Scenario::Script {
        main: vec![write("a.txt"), write("b.txt")],
        sub_agent: Vec::new(),
    });
    let mut rig = stream_rig(test, server, PermissionPolicy::Ask).await;
    // The rig's own working directory is where the script writes.
    rig.rig.work = work;
    let messages = rig
        .run(
            "Write two files",
            SessionRef::New,
            Some(("allow_in_mode:acceptEdits", None)),
        )
        .await;
    let asked: Vec<_> = messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::PermissionRequest(request) => Some(request.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        asked.len(),
        1,
        "the second write is not asked: {messages:#?}"
    );
    let names: Vec<&str> = asked[0]
        .options
        .iter()
        .map(|option| option.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["Allow once", "Allow all edits this session", "Reject"]
    );
    expect_completed(&messages);
    assert!(rig.rig.work.path().join("a.txt").exists());
    assert!(rig.rig.work.path().join("b.txt").exists());
    let status = rig.rig.provider.agent_status().expect("a status");
    assert_eq!(status.borrow().mode.as_deref(), Some("acceptEdits"));
}
