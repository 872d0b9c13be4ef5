//! The real Claude Code CLI, driven through `CliProvider` + `ClaudeBackend`, against the fake
//! Messages API in `support/fake_anthropic.rs` on 127.0.0.1.
//!
//! Opt-in: every test is `#[ignore]`d (`cargo test --test real_claude -- --ignored` runs them),
//! and then needs the CLI installed (`npm install --prefix
//! /tmp/claude-cli @anthropic-ai/claude-code`, or `AGENTTY_CLAUDE_BIN`). Every run gets a
//! throwaway HOME and working directory, telemetry and non-essential traffic off.

#[path = "support/fake_anthropic.rs"]
mod fake_anthropic;
#[path = "support/real_cli.rs"]
mod real_cli;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use agentty::config::ProviderSettings;
use agentty::provider::claude::ClaudeBackend;
use agentty::provider::{CliProvider, SessionRef, StopControl};
use agentty::stream::{notice_kind, AgentMessage, FailureReason};
use fake_anthropic::{FakeAnthropic, Scenario};
use real_cli::{
    assistant_text, cancelled, collect, expect_completed, expect_failed, is_alive, notices,
    real_cli, retried_first_turn_is_sent_once, retried_middle_turn_is_sent_once,
    started_session_id, three_prompts, FailFirst, ProcessProbe, Rig, UserTexts, RUN_LIMIT,
};

const DEFAULT_BIN: &str = "/tmp/claude-cli/node_modules/.bin/claude";
/// The environment variable that marks every process of one test run.
const RUN_MARKER_VAR: &str = "AGENTTY_CLAUDE_TEST_RUN";

/// The real CLI against a fresh fake server, with telemetry and non-essential traffic off;
/// every process of the run carries a marker that `ProcessProbe` finds.
async fn rig(
    test: &str,
    scenario: Scenario,
    args: &[&str],
) -> Option<(Rig<FakeAnthropic>, ProcessProbe)> {
    let (rig, probe, _) = rig_on(test, FakeAnthropic::start(scenario), args).await?;
    Some((rig, probe))
}

/// [`rig`] on the server `server` starts, also returning the provider's settings.
async fn rig_on(
    test: &str,
    server: impl std::future::Future<Output = FakeAnthropic>,
    args: &[&str],
) -> Option<(Rig<FakeAnthropic>, ProcessProbe, ProviderSettings)> {
    let bin = real_cli(test, "AGENTTY_CLAUDE_BIN", DEFAULT_BIN)?;
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
    let provider = CliProvider::new(ClaudeBackend::new(settings.clone()));
    let rig = Rig {
        server,
        provider,
        home,
        work,
    };
    Some((rig, probe, settings))
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
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn text_streams_as_partial_deltas_shown_once() {
    let Some((rig, _)) = rig(
        "text_streams_as_partial_deltas_shown_once",
        Scenario::Text,
        &[],
    )
    .await
    else {
        return;
    };
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
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn later_turns_resume_the_session_and_a_bad_id_fails_clearly() {
    let Some((rig, _)) = rig(
        "later_turns_resume_the_session_and_a_bad_id_fails_clearly",
        Scenario::Text,
        &[],
    )
    .await
    else {
        return;
    };
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
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn thinking_is_released_as_one_thought() {
    let Some((rig, _)) = rig(
        "thinking_is_released_as_one_thought",
        Scenario::Thinking,
        &[],
    )
    .await
    else {
        return;
    };
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
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn a_bash_tool_call_is_announced_and_completed() {
    let tool = Scenario::Tool {
        command: "echo hi".into(),
    };
    let Some((rig, _)) = rig(
        "a_bash_tool_call_is_announced_and_completed",
        tool,
        &["--allowedTools", "Bash"],
    )
    .await
    else {
        return;
    };
    let messages = rig.run("Run echo hi", SessionRef::New).await;
    let call = messages.iter().find_map(|message| match message {
        AgentMessage::ToolCall { id, name, input } => {
            Some((id.clone(), name.clone(), input.clone()))
        }
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
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn an_http_500_fails_after_exactly_one_request() {
    let Some((rig, _)) = rig(
        "an_http_500_fails_after_exactly_one_request",
        Scenario::Error { status: 500 },
        &[],
    )
    .await
    else {
        return;
    };
    let messages = rig.run("Say hello", SessionRef::New).await;
    assert_eq!(
        assistant_text(&messages),
        "",
        "the CLI's error message is not assistant text"
    );
    assert_eq!(notices(&messages, notice_kind::AGENT_RETRY), 0);
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
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn a_cut_stream_fails_without_a_hidden_refetch() {
    let Some((rig, _)) = rig(
        "a_cut_stream_fails_without_a_hidden_refetch",
        Scenario::Cut {
            text: "Partial words before the cut and the rest after it".into(),
            words: 3,
        },
        &[],
    )
    .await
    else {
        return;
    };
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
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn a_stop_during_a_tool_ends_the_attempt_and_leaves_no_process() {
    let tool = Scenario::Tool {
        command: "sleep 100".into(),
    };
    let Some((rig, processes)) = rig(
        "a_stop_during_a_tool_ends_the_attempt_and_leaves_no_process",
        tool,
        &["--allowedTools", "Bash"],
    )
    .await
    else {
        return;
    };
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
/// last user message holds `flaky`, and an orchestrator-ready provider for it.
async fn flaky_rig(test: &str, flaky: &str) -> Option<(Rig<FakeAnthropic>, Arc<CliProvider>)> {
    let fail = FailFirst::new(2, flaky);
    let server = FakeAnthropic::start_failing(Scenario::Text, move |text| fail.take(text));
    let (rig, _, settings) = rig_on(test, server, &[]).await?;
    let provider = Arc::new(CliProvider::new(ClaudeBackend::new(settings)));
    Some((rig, provider))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn a_retried_turn_reaches_the_model_with_each_prompt_once() {
    let test = "a_retried_turn_reaches_the_model_with_each_prompt_once";
    let prompts = three_prompts("claude");
    let Some((rig, provider)) = flaky_rig(test, &prompts[1]).await else {
        return;
    };
    retried_middle_turn_is_sent_once("claude", test, provider, rig.work.path(), &prompts, || {
        model_requests(&rig.server)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn a_retried_first_turn_reaches_the_model_with_its_prompt_once() {
    let test = "a_retried_first_turn_reaches_the_model_with_its_prompt_once";
    let prompts = three_prompts("claude");
    let Some((rig, provider)) = flaky_rig(test, &prompts[0]).await else {
        return;
    };
    retried_first_turn_is_sent_once("claude", test, provider, rig.work.path(), &prompts, || {
        model_requests(&rig.server)
    })
    .await;
}
