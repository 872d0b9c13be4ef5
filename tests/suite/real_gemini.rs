//! The real Gemini CLI through `agentty::provider::CliProvider`, against a fake Gemini API on
//! 127.0.0.1. Opt-in: `#[ignore]`d (`cargo test --test suite -- --ignored real_gemini::`), with the CLI installed by
//! `npm install --prefix /tmp/gemini-cli @google/gemini-cli` (or `AGENTTY_GEMINI_BIN` pointing
//! at it).

use crate::support::fake_codex_server;
use crate::support::fake_gemini_server;
use crate::support::real_cli;

use std::path::Path;
use std::sync::Arc;

use agentty::config::ProviderSettings;
use agentty::provider::gemini::GeminiBackend;
use agentty::provider::{CliProvider, SessionRef};
use agentty::stream::AgentMessage;
use fake_codex_server::shared::FakeServer;
use fake_gemini_server::{GeminiScenario, STREAM_PATH};
use real_cli::{
    assistant_text, completed_tool_call, expect_completed, expect_failed, notices, real_cli,
    test_name, FailFirst, Flaky, Rig, UserTexts,
};
use tempfile::TempDir;

const DEFAULT_BIN: &str = "/tmp/gemini-cli/node_modules/.bin/gemini";

/// A throwaway HOME whose Gemini settings select API-key auth, and a provider that runs the
/// real CLI against the fake server. `max_attempts` is Gemini CLI's own retry bound
/// (`general.maxAttempts`; the CLI's default is 10, which takes about 4 minutes against a
/// server that always fails).
fn rig(
    test: &str,
    scenario: GeminiScenario,
    extra_args: &[&str],
    max_attempts: Option<u32>,
) -> Rig<FakeServer> {
    let server = || fake_gemini_server::start(scenario);
    let (rig, _) = rig_on(test, server, extra_args, max_attempts);
    rig
}

/// [`rig`] on the server `server` starts, also returning the provider's settings.
fn rig_on(
    test: &str,
    server: impl FnOnce() -> FakeServer,
    extra_args: &[&str],
    max_attempts: Option<u32>,
) -> (Rig<FakeServer>, ProviderSettings) {
    let bin = real_cli(test, "AGENTTY_GEMINI_BIN", DEFAULT_BIN);
    let server = server();
    let home = TempDir::new().expect("temp dir");
    let work = TempDir::new().expect("temp dir");
    fake_gemini_server::write_cli_settings(home.path(), max_attempts);
    let mut settings = ProviderSettings {
        command: Some(bin),
        args: extra_args.iter().map(|arg| arg.to_string()).collect(),
        // A pinned model skips the model-router side call that `auto` makes before each turn.
        model: Some("gemini-2.5-pro".into()),
        ..ProviderSettings::default()
    };
    for (key, value) in [
        ("HOME", home.path().to_string_lossy().into_owned()),
        ("GEMINI_API_KEY", "dummy-key".to_owned()),
        (
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://127.0.0.1:{}", server.port),
        ),
        ("GEMINI_CLI_TRUST_WORKSPACE", "true".to_owned()),
    ] {
        settings.env.insert(key.into(), value);
    }
    let rig = Rig {
        server,
        provider: Arc::new(CliProvider::new(backend(&settings, home.path()))),
        home,
        work,
    };
    (rig, settings)
}

/// The backend for `settings`, with agentty's private Gemini home (retries off) inside the
/// test's throwaway home.
fn backend(settings: &ProviderSettings, home: &Path) -> GeminiBackend {
    GeminiBackend::new(settings.clone()).with_state_dir(home.join("agentty-state"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_gemini:: (README, Tests)"]
async fn gemini_text_reply_completes_with_usage() {
    let rig = rig(&test_name(), GeminiScenario::Text, &[], None);
    let messages = rig.run("say hello", SessionRef::New).await;
    assert!(
        matches!(&messages[0], AgentMessage::SessionStarted { provider, session_id: Some(_), .. } if provider == "gemini"),
        "{messages:#?}"
    );
    assert_eq!(assistant_text(&messages), fake_gemini_server::TEXT_REPLY);
    let usage = expect_completed(&messages).1.expect("usage");
    assert!(usage.total_tokens.is_some_and(|total| total > 0));
    assert_eq!(rig.server.count(STREAM_PATH), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_gemini:: (README, Tests)"]
async fn gemini_reasoning_run_shows_the_answer_and_no_thought() {
    let rig = rig(&test_name(), GeminiScenario::Reasoning, &[], None);
    let messages = rig.run("think then say hello", SessionRef::New).await;
    assert_eq!(
        assistant_text(&messages),
        fake_gemini_server::REASONING_REPLY
    );
    // stream-json drops thinking: nothing of it may leak into the text or appear as a thought.
    assert!(!messages
        .iter()
        .any(|m| matches!(m, AgentMessage::Thought { .. })));
    expect_completed(&messages);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_gemini:: (README, Tests)"]
async fn gemini_shell_tool_call_runs_and_completes() {
    let rig = rig(
        &test_name(),
        GeminiScenario::Tool("echo hi".into()),
        &["--yolo"],
        None,
    );
    let messages = rig.run("run echo hi", SessionRef::New).await;
    let (input, output) = completed_tool_call(&messages, "run_shell_command");
    assert_eq!(input["command"], "echo hi");
    assert!(output.contains("hi"), "{messages:#?}");
    assert_eq!(
        assistant_text(&messages),
        format!(
            "{}{}",
            fake_gemini_server::TOOL_PREAMBLE,
            fake_gemini_server::TOOL_REPLY
        )
    );
    expect_completed(&messages);
    assert_eq!(rig.server.count(STREAM_PATH), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_gemini:: (README, Tests)"]
async fn gemini_http_500_costs_one_request_per_attempt() {
    // The user's settings leave Gemini CLI's default of 10 tries (about 4 minutes); agentty's
    // private home bounds them to one, so each attempt is one request and fails at once.
    let rig = rig(&test_name(), GeminiScenario::Http500, &[], None);
    for attempt in 1..=2 {
        let started = std::time::Instant::now();
        let messages = rig.run("say hello", SessionRef::New).await;
        let failure = expect_failed(&messages);
        assert_eq!(failure.reason, "agent_error");
        assert_eq!(failure.http_status, Some(500), "{failure:#?}");
        assert_eq!(failure.exit_code, Some(244));
        assert_eq!(failure.message, "fake internal error", "{failure:#?}");
        assert_eq!(notices(&messages, "agent_retry"), 0, "{messages:#?}");
        assert_eq!(rig.server.count(STREAM_PATH), attempt);
        eprintln!(
            "attempt {attempt}: {} request(s) so far, failed after {:.1} s",
            rig.server.count(STREAM_PATH),
            started.elapsed().as_secs_f64()
        );
    }
    // The user's own settings are untouched.
    let user_settings =
        std::fs::read_to_string(rig.home.path().join(".gemini/settings.json")).unwrap();
    assert!(!user_settings.contains("maxAttempts"), "{user_settings}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_gemini:: (README, Tests)"]
async fn gemini_dropped_stream_is_not_resent_behind_agenttys_back() {
    // Even with the user's settings allowing three tries, the private home allows one: the
    // dropped stream is not resent (a resend could glue a different answer to the partial one).
    let rig = rig(&test_name(), GeminiScenario::Drop, &[], Some(3));
    let messages = rig.run("say hello", SessionRef::New).await;
    assert_eq!(rig.server.count(STREAM_PATH), 1);
    assert_eq!(
        assistant_text(&messages),
        fake_gemini_server::DROPPED_PARTIAL
    );
    assert_eq!(notices(&messages, "warning"), 0, "{messages:#?}");
    expect_failed(&messages);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_gemini:: (README, Tests)"]
async fn gemini_stop_during_a_sleep_tool_leaves_no_process() {
    let sleep_arg = format!("4{}.{}", std::process::id() % 10, std::process::id() % 89);
    let rig = rig(
        &test_name(),
        GeminiScenario::Tool(format!("sleep {sleep_arg}; echo done")),
        &["--yolo"],
        None,
    );
    // The shell tool runs in its own process group, which Gemini CLI leaves behind.
    rig.assert_stop_mid_tool_leaves_no_process("gemini", &format!("sleep {sleep_arg}"))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_gemini:: (README, Tests)"]
async fn gemini_later_turn_resumes_the_session() {
    let rig = rig(&test_name(), GeminiScenario::Text, &[], None);
    rig.run_then_resume("gemini", "first prompt: remember 42", "second prompt")
        .await;
    let resumed_body = rig
        .server
        .requests()
        .iter()
        .rev()
        .find(|request| request.path.contains(STREAM_PATH))
        .map(|request| String::from_utf8_lossy(&request.body).into_owned())
        .unwrap_or_default();
    assert!(resumed_body.contains("remember 42"));
}

/// The user contents of every streamed turn request the server received.
fn model_requests(server: &FakeServer) -> Vec<UserTexts> {
    server
        .requests()
        .iter()
        .filter(|request| request.path.contains(STREAM_PATH))
        .map(fake_gemini_server::user_texts)
        .collect()
}

/// The real CLI against a server whose streamed requests fail (HTTP 500) the first two times
/// their last user content holds `flaky`. The CLI's own retries are bounded to one attempt
/// (`general.maxAttempts`), so that each failure reaches the orchestrator at once.
fn flaky_rig(test: &str, flaky: &str) -> Rig<FakeServer> {
    let fail = FailFirst::new(2, flaky);
    let server = move || {
        fake_gemini_server::start_failing(GeminiScenario::Text, move |text| fail.take(text))
    };
    rig_on(test, server, &[], Some(1)).0
}

/// The one-shot JSON mode against a server that fails `flaky` twice.
async fn flaky_json(test: &str, flaky: &str) -> Flaky {
    flaky_rig(test, flaky).flaky(model_requests)
}

crate::retry_sends_the_prompt_once!(json_retry: "gemini", super::flaky_json, "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_gemini:: (README, Tests)");

/// Gemini over ACP (its transport in the chat) against a server that fails `flaky` twice.
async fn flaky_acp(test: &str, flaky: &str) -> Flaky {
    let fail = FailFirst::new(2, flaky);
    let server = move || {
        fake_gemini_server::start_failing(GeminiScenario::Text, move |text| fail.take(text))
    };
    let (mut rig, settings) = rig_on(test, server, &[], Some(1));
    rig.provider = agentty::provider::provider_on(
        Arc::new(backend(&settings, rig.home.path())),
        agentty::provider::Transport::Acp,
        agentty::config::PermissionPolicy::Deny,
    )
    .expect("gemini speaks ACP");
    rig.flaky(model_requests)
}

crate::retry_sends_the_prompt_once!(acp_retry: "gemini (acp)", super::flaky_acp, "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_gemini:: (README, Tests)");

/// Gemini over ACP (its default transport in the chat): A fails twice then succeeds, B, C fails
/// twice then succeeds, D, on one long-lived agent, all within a minute or two. Gemini names a
/// session file by the minute, so every reload happens in the minute of an earlier start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_gemini:: (README, Tests)"]
async fn gemini_acp_two_retried_turns_keep_the_conversation() {
    let test = &test_name();
    let prompts = real_cli::four_prompts("gemini-acp");
    let fail = real_cli::fail_a_and_c_twice(&prompts);
    let server = move || fake_gemini_server::start_failing(GeminiScenario::Text, fail);
    let (rig, settings) = rig_on(test, server, &[], Some(1));
    let provider = agentty::provider::provider_on(
        Arc::new(backend(&settings, rig.home.path())),
        agentty::provider::Transport::Acp,
        agentty::config::PermissionPolicy::Deny,
    )
    .expect("gemini speaks ACP");
    real_cli::two_retried_turns_keep_the_conversation(
        "gemini acp",
        test,
        provider,
        rig.work.path(),
        &prompts,
        || model_requests(&rig.server),
    )
    .await;
}
