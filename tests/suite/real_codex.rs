//! The real Codex CLI, against a fake Responses API on 127.0.0.1: `codex exec --json` through
//! `agentty::provider::CliProvider`, and `codex app-server` through the app-server transport
//! (the `codex_app_server_*` tests). Opt-in: `#[ignore]`d (`cargo test --test suite -- --ignored real_codex::`), with the CLI installed by
//! `npm install --prefix /tmp/codex-cli @openai/codex` (or `AGENTTY_CODEX_BIN` pointing at it).

use crate::support::fake_codex_server;
use crate::support::real_cli;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentty::config::{PermissionPolicy, ProviderSettings};
use agentty::provider::codex::CodexBackend;
use agentty::provider::{
    provider_on, Backend, CliProvider, Provider, SessionRef, StopControl, Transport,
};
use agentty::stream::{AgentMessage, PermissionRequest, StopStage};
use fake_codex_server::shared::FakeServer;
use fake_codex_server::CodexScenario;
use real_cli::{
    assistant_text, completed_tool_call, expect_completed, expect_failed, notices, real_cli,
    started_session_id, test_name, FailFirst, Flaky, Rig, UserTexts,
};
use std::time::Instant;
use tempfile::TempDir;

const DEFAULT_BIN: &str = "/tmp/codex-cli/node_modules/.bin/codex";

/// A throwaway Codex home whose only model provider is the fake server, and a provider that
/// runs the real CLI with it.
fn rig(test: &str, scenario: CodexScenario, extra_args: &[&str]) -> Rig<FakeServer> {
    let (rig, _) = rig_on(test, || fake_codex_server::start(scenario), extra_args);
    rig
}

/// [`rig`] on the server `server` starts, also returning the provider's settings.
fn rig_on(
    test: &str,
    server: impl FnOnce() -> FakeServer,
    extra_args: &[&str],
) -> (Rig<FakeServer>, ProviderSettings) {
    let bin = real_cli(test, "AGENTTY_CODEX_BIN", DEFAULT_BIN);
    let server = server();
    let home = TempDir::new().expect("temp dir");
    let work = TempDir::new().expect("temp dir");
    let codex_home = home.path().join("codex_home");
    std::fs::create_dir_all(&codex_home).expect("create CODEX_HOME");
    fake_codex_server::write_codex_config(&codex_home, server.port, "fake-model");
    let settings = settings(bin, home.path(), extra_args);
    let rig = Rig {
        server,
        provider: Arc::new(CliProvider::new(CodexBackend::new(settings.clone()))),
        home,
        work,
    };
    (rig, settings)
}

/// The settings that run `bin` with the Codex home under `home`.
fn settings(bin: PathBuf, home: &Path, extra_args: &[&str]) -> ProviderSettings {
    let codex_home = home.join("codex_home");
    let mut settings = ProviderSettings {
        command: Some(bin),
        args: extra_args.iter().map(|arg| arg.to_string()).collect(),
        ..ProviderSettings::default()
    };
    settings.env.insert(
        "CODEX_HOME".into(),
        codex_home.to_string_lossy().into_owned(),
    );
    // Codex runs tools in login shells: a throwaway HOME keeps the user's shell start-up
    // files (and anything they lock, such as pyenv's rehash lock) out of the test.
    settings
        .env
        .insert("HOME".into(), home.to_string_lossy().into_owned());
    settings
        .env
        .insert("FAKE_API_KEY".into(), "dummy-key".into());
    settings
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)"]
async fn codex_text_reply_completes_with_usage() {
    let rig = rig(&test_name(), CodexScenario::Text, &[]);
    let messages = rig.run("say hello", SessionRef::New).await;
    assert!(
        matches!(&messages[0], AgentMessage::SessionStarted { provider, session_id: Some(_), .. } if provider == "codex"),
        "{messages:#?}"
    );
    assert_eq!(assistant_text(&messages), fake_codex_server::TEXT_REPLY);
    // The model-metadata error item is a warning, not a failure.
    assert!(notices(&messages, "warning") >= 1, "{messages:#?}");
    let usage = expect_completed(&messages).1.expect("usage");
    assert_eq!(usage.input_tokens, Some(12));
    assert_eq!(usage.output_tokens, Some(7));
    assert_eq!(rig.server.count("/responses"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)"]
async fn codex_reasoning_summary_is_a_thought_before_the_text() {
    let rig = rig(&test_name(), CodexScenario::Reasoning, &[]);
    let messages = rig.run("think then say hello", SessionRef::New).await;
    let thought = messages
        .iter()
        .position(|m| matches!(m, AgentMessage::Thought { text } if text == fake_codex_server::REASONING_SUMMARY));
    let text = messages
        .iter()
        .position(|m| matches!(m, AgentMessage::Assistant { .. }));
    assert!(
        matches!((thought, text), (Some(t), Some(a)) if t < a),
        "{messages:#?}"
    );
    assert_eq!(
        assistant_text(&messages),
        fake_codex_server::REASONING_REPLY
    );
    expect_completed(&messages);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)"]
async fn codex_shell_tool_call_runs_and_completes() {
    let rig = rig(
        &test_name(),
        CodexScenario::Tool("echo hi".into()),
        &["--dangerously-bypass-approvals-and-sandbox"],
    );
    let messages = rig.run("run echo hi", SessionRef::New).await;
    let (input, output) = completed_tool_call(&messages, "shell");
    assert!(input["command"].as_str().unwrap_or("").contains("echo hi"));
    assert!(output.contains("hi"), "{messages:#?}");
    assert_eq!(assistant_text(&messages), fake_codex_server::TOOL_REPLY);
    expect_completed(&messages);
    assert_eq!(rig.server.count("/responses"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)"]
async fn codex_http_500_fails_after_one_request_with_the_status() {
    let rig = rig(&test_name(), CodexScenario::Http500, &[]);
    let messages = rig.run("say hello", SessionRef::New).await;
    let failure = expect_failed(&messages);
    assert_eq!(failure.reason, "agent_error");
    assert_eq!(failure.http_status, Some(500), "{failure:#?}");
    // Both of Codex's retry layers are off: one failure is one request, and no retry notice.
    assert_eq!(rig.server.count("/responses"), 1);
    assert_eq!(notices(&messages, "agent_retry"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)"]
async fn codex_stop_during_a_sleep_tool_leaves_no_process() {
    let sleep_arg = format!("3{}.{}", std::process::id() % 10, std::process::id() % 97);
    let rig = rig(
        &test_name(),
        CodexScenario::Tool(format!("sleep {sleep_arg}; echo done")),
        &["--dangerously-bypass-approvals-and-sandbox"],
    );
    rig.assert_stop_mid_tool_leaves_no_process("codex", &format!("sleep {sleep_arg}"))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)"]
async fn codex_later_turn_resumes_the_thread() {
    let rig = rig(&test_name(), CodexScenario::Text, &[]);
    let resumed = rig
        .run_then_resume("codex", "first prompt: remember 42", "second prompt")
        .await;
    // Codex reports the thread's running total (12 + 12 input tokens); the shared stream
    // carries the resumed turn's own figures: one request of 12.
    let usage = expect_completed(&resumed).1.expect("usage");
    assert_eq!(usage.input_tokens, Some(12), "{usage:?}");
    // The resumed turn carried the first turn to the model.
    let last_body = String::from_utf8_lossy(&rig.server.requests()[1].body).into_owned();
    assert!(last_body.contains("first prompt: remember 42"));
}

/// The user messages of every model request (`/responses`) the server received.
fn model_requests(server: &FakeServer) -> Vec<UserTexts> {
    server
        .requests()
        .iter()
        .filter(|request| request.path.contains("/responses"))
        .map(fake_codex_server::user_texts)
        .collect()
}

/// The real CLI against a server whose model requests fail (HTTP 500) the first two times
/// their last user message holds `flaky`.
fn flaky_rig(test: &str, flaky: &str) -> Rig<FakeServer> {
    let fail = FailFirst::new(2, flaky);
    let server =
        move || fake_codex_server::start_failing(CodexScenario::Text, move |text| fail.take(text));
    rig_on(test, server, &[]).0
}

/// The one-shot JSON mode against a server that fails `flaky` twice; after a retried turn,
/// Codex's own stored thread holds each prompt once too.
async fn flaky_json(test: &str, flaky: &str) -> Flaky {
    let rig = flaky_rig(test, flaky);
    let home = rig.home.path().to_path_buf();
    rig.flaky(model_requests)
        .then(move |prompts| assert_thread_history_matches_the_rollout(&home, prompts))
}

crate::retry_sends_the_prompt_once!(json_retry: "codex", super::flaky_json, "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)");

/// Codex's own thread-history projection (`thread_history_1.sqlite`, restored with the rollout)
/// holds each prompt once and has projected exactly the rollout's bytes: Codex's stored thread
/// is as if the failed attempts never happened. Read with python3's sqlite3 module.
fn assert_thread_history_matches_the_rollout(home: &std::path::Path, prompts: &[String; 3]) {
    let codex_home = home.join("codex_home");
    let script = r#"
import sqlite3, sys, glob, os, json
home = sys.argv[1]
db = sqlite3.connect(os.path.join(home, "thread_history_1.sqlite"))
(offset,) = db.execute("select * from thread_history_projection_state").fetchone()[1:2]
rollout = glob.glob(os.path.join(home, "sessions", "**", "rollout-*.jsonl"), recursive=True)[0]
texts = [json.loads(item)["content"][0]["text"] for (item,) in
         db.execute("select item_json from thread_items where item_type = 'userMessage'")]
print(json.dumps({"offset": offset, "size": os.path.getsize(rollout), "texts": texts}))
"#;
    let output = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&codex_home)
        .output()
        .expect("python3 reads Codex's thread history");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let found: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    eprintln!("codex thread history: {found}");
    assert_eq!(
        found["offset"], found["size"],
        "projected up to the rollout's end"
    );
    let texts: Vec<&str> = found["texts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|text| text.as_str())
        .collect();
    for prompt in prompts {
        assert_eq!(
            texts
                .iter()
                .filter(|text| text.contains(prompt.as_str()))
                .count(),
            1,
            "{prompt:?} in {texts:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)"]
async fn codex_resumed_turn_after_a_relaunch_reports_its_own_usage() {
    let test = &test_name();
    let mut rig = rig(test, CodexScenario::Text, &[]);
    let first = rig.run("first prompt", SessionRef::New).await;
    let thread = started_session_id(&first);
    // A new launch of agentty: a fresh backend that has seen no turn of this thread.
    let bin = real_cli(test, "AGENTTY_CODEX_BIN", DEFAULT_BIN);
    rig.provider = Arc::new(CliProvider::new(CodexBackend::new(settings(
        bin,
        rig.home.path(),
        &[],
    ))));
    let resumed = rig.run("second prompt", SessionRef::Resume(thread)).await;
    // Codex reports 24 (the thread's total); the rollout file gives the earlier 12.
    let usage = expect_completed(&resumed).1.expect("usage");
    assert_eq!(usage.input_tokens, Some(12), "{usage:?}");
}

// ---------------------------------------------------------------------------------------------
// `codex app-server`: the chat's and `agentty run`'s default transport for Codex.

/// The real `codex app-server` against a fake server: a [`Rig`] whose provider is agentty's
/// app-server provider.
struct AppServerRig {
    rig: Rig<FakeServer>,
    settings: ProviderSettings,
    /// In the app-server's command line (a config override naming the fake provider), so the
    /// test finds its processes.
    marker: String,
}

impl std::ops::Deref for AppServerRig {
    type Target = Rig<FakeServer>;

    fn deref(&self) -> &Rig<FakeServer> {
        &self.rig
    }
}

impl std::ops::DerefMut for AppServerRig {
    fn deref_mut(&mut self) -> &mut Rig<FakeServer> {
        &mut self.rig
    }
}

impl AppServerRig {
    fn start(
        test: &str,
        server: impl FnOnce() -> FakeServer,
        policy: PermissionPolicy,
    ) -> AppServerRig {
        let marker = format!("agentty-test-{}-{}", std::process::id(), test.len());
        let name_override = format!("model_providers.fake.name=\"Fake {marker}\"");
        let (mut rig, settings) = rig_on(test, server, &["-c", &name_override]);
        rig.provider = app_server_provider(&settings, policy);
        AppServerRig {
            rig,
            settings,
            marker,
        }
    }

    /// The app-server processes running for this rig (the Node launcher and Codex itself).
    fn processes(&self) -> Vec<i32> {
        let mut pids = real_cli::pids_running(&self.marker);
        pids.sort_unstable();
        pids
    }

    /// When the fake server received its first model request after `since`.
    fn first_request_after(&self, since: Instant) -> Option<Instant> {
        self.server
            .requests()
            .iter()
            .filter(|request| request.path.contains("/responses"))
            .map(|request| request.received_at)
            .find(|at| *at >= since)
    }
}

fn app_server_provider(settings: &ProviderSettings, policy: PermissionPolicy) -> Arc<dyn Provider> {
    let backend: Arc<dyn Backend> = Arc::new(CodexBackend::new(settings.clone()));
    provider_on(backend, Transport::AppServer, policy).expect("codex has an app-server")
}

/// Reads the attempt until Codex asks permission; returns the request.
async fn permission_request(stream: &mut agentty::provider::AgentStream) -> Box<PermissionRequest> {
    loop {
        let message = real_cli::next_message(stream, real_cli::RUN_LIMIT)
            .await
            .expect("a permission request before the end");
        if let AgentMessage::PermissionRequest(request) = message {
            return request;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)"]
async fn codex_app_server_permission_allowed_writes_the_file_and_declined_does_not() {
    let test = &test_name();
    let scenario = CodexScenario::EscalatedTool("touch approved.txt".into());
    let rig = AppServerRig::start(
        test,
        || fake_codex_server::start(scenario),
        PermissionPolicy::Ask,
    );
    let file = rig.work.path().join("approved.txt");
    for (answer, written) in [("decline", false), ("accept", true)] {
        let mut stream = rig.provider.execute(
            rig.request("write approved.txt", SessionRef::New),
            StopControl::new(),
        );
        let request = permission_request(&mut stream).await;
        eprintln!("{test}: the prompt: {request:#?}");
        assert_eq!(request.command.as_deref(), Some("touch approved.txt"));
        assert!(
            request.title.contains(fake_codex_server::ESCALATION_REASON),
            "{request:?}"
        );
        assert!(!file.exists(), "nothing ran before the answer");
        assert!(rig
            .provider
            .answer_permission(&request.id, Some(answer.into()), None));
        let rest = real_cli::collect(&mut stream, real_cli::RUN_LIMIT).await;
        expect_completed(&rest);
        assert_eq!(file.exists(), written, "{answer}: {rest:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)"]
async fn codex_app_server_headless_permissions_allow_and_deny_are_honoured() {
    let test = &test_name();
    let scenario = CodexScenario::EscalatedTool("touch headless.txt".into());
    let rig = AppServerRig::start(
        test,
        || fake_codex_server::start(scenario),
        PermissionPolicy::Ask,
    );
    let bin = rig.settings.command.clone().unwrap();
    let file = rig.work.path().join("headless.txt");
    for (permissions, written) in [("deny", false), ("allow", true)] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentty"))
            .args(["run", "--provider", "codex", "--agent-bin"])
            .arg(&bin)
            .args(["--permissions", permissions, "write headless.txt"])
            .envs(rig.settings.env.iter())
            .env("XDG_STATE_HOME", rig.home.path().join("state"))
            .env("XDG_CONFIG_HOME", rig.home.path().join("config"))
            .current_dir(rig.work.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        eprintln!("{test}: --permissions {permissions}:\n{stdout}");
        assert!(
            output.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(file.exists(), written, "--permissions {permissions}");
        assert!(stdout.contains("\"permission.request\""), "{stdout}");
        assert_eq!(
            stdout.contains("\"permission_refused\""),
            !written,
            "{stdout}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)"]
async fn codex_app_server_stop_then_next_turn_on_the_same_process() {
    let test = &test_name();
    let words = (0..60)
        .map(|i| format!("word{i}"))
        .collect::<Vec<_>>()
        .join(" ");
    let slow = CodexScenario::Say {
        text: words,
        pause: std::time::Duration::from_millis(100),
    };
    let rig = AppServerRig::start(
        test,
        || fake_codex_server::start(slow),
        PermissionPolicy::Ask,
    );
    let stop = StopControl::new();
    let mut stream = rig
        .provider
        .execute(rig.request("talk slowly", SessionRef::New), stop.clone());
    let mut seen = Vec::new();
    while !seen
        .iter()
        .any(|message| matches!(message, AgentMessage::Assistant { .. }))
    {
        seen.push(
            real_cli::next_message(&mut stream, real_cli::RUN_LIMIT)
                .await
                .expect("text"),
        );
    }
    let before = rig.processes();
    assert!(!before.is_empty(), "the app-server runs");
    stop.stop();
    let rest = real_cli::collect(&mut stream, real_cli::RUN_LIMIT).await;
    let (stage, elapsed_ms) = real_cli::cancelled("codex", &rest);
    eprintln!("{test}: stopped at stage {stage:?} in {elapsed_ms} ms");
    assert_eq!(stage, StopStage::Cancel, "turn/interrupt ended it");
    let thread = started_session_id(&seen);
    let next = rig
        .run("talk slowly again", SessionRef::Resume(thread.clone()))
        .await;
    expect_completed(&next);
    real_cli::assert_resumed(&next, "codex", &thread);
    assert_eq!(
        rig.processes(),
        before,
        "the same app-server took the next turn"
    );
}

/// The app-server against a server that fails `flaky` twice; the retries need no new
/// process (`thread/revert` undoes a failed turn in the running one).
async fn flaky_app_server(test: &str, flaky: &str) -> Flaky {
    let fail = FailFirst::new(2, flaky);
    let server =
        move || fake_codex_server::start_failing(CodexScenario::Text, move |text| fail.take(text));
    let rig = AppServerRig::start(test, server, PermissionPolicy::Ask);
    let marker = rig.marker.clone();
    rig.rig.flaky(model_requests).then(move |_| {
        let running = real_cli::pids_running(&marker);
        assert!(
            !running.is_empty() && running.len() <= 2,
            "one app-server (its launcher and Codex) took every attempt: {running:?}"
        );
    })
}

crate::retry_sends_the_prompt_once!(app_server_retry: "codex (app-server)", super::flaky_app_server, "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)");

/// The app-server processes of a rig: the Node launcher and Codex (one conversation).
fn before_len(rig: &AppServerRig) -> usize {
    let running = rig.processes();
    assert!(!running.is_empty() && running.len() <= 2, "{running:?}");
    running.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)"]
async fn codex_app_server_resumes_the_thread_in_a_new_process() {
    let test = &test_name();
    let mut rig = AppServerRig::start(
        test,
        || fake_codex_server::start(CodexScenario::Text),
        PermissionPolicy::Ask,
    );
    let first = rig.run("first prompt: remember 42", SessionRef::New).await;
    expect_completed(&first);
    let thread = started_session_id(&first);
    // A new launch of agentty: a new provider, a new app-server.
    rig.provider = app_server_provider(&rig.settings, PermissionPolicy::Ask);
    let resumed = rig
        .run("second prompt", SessionRef::Resume(thread.clone()))
        .await;
    expect_completed(&resumed);
    real_cli::assert_resumed(&resumed, "codex", &thread);
    let requests = model_requests(&rig.server);
    let last = requests.last().unwrap();
    assert_eq!(
        last.iter()
            .filter(|text| text.contains("first prompt: remember 42"))
            .count(),
        1,
        "{requests:#?}"
    );
    assert!(last.iter().any(|text| text.contains("second prompt")));
}

/// Enter -> the fake server's first model request, for turns 1-3 of one conversation: on the
/// app-server (started ahead of the first prompt, as the chat does) and, for comparison, on
/// `codex exec --json` (a cold start every turn).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)"]
async fn codex_app_server_enter_to_request_for_turns_one_to_three() {
    let test = &test_name();
    let rig = AppServerRig::start(
        test,
        || fake_codex_server::start(CodexScenario::Text),
        PermissionPolicy::Ask,
    );
    let first = rig.request("turn 1", SessionRef::New);
    rig.provider.warm_up(first.clone());
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let mut app_server = Vec::new();
    let mut session = SessionRef::New;
    for turn in 1..=3 {
        let enter = Instant::now();
        let messages = rig.run(&format!("turn {turn}"), session.clone()).await;
        expect_completed(&messages);
        if turn == 1 {
            session = SessionRef::Resume(started_session_id(&messages));
        }
        let at = rig.first_request_after(enter).expect("a request");
        app_server.push(at.duration_since(enter).as_millis());
    }
    let exec = CliProvider::new(CodexBackend::new(rig.settings.clone()));
    let mut one_shot = Vec::new();
    let mut session = SessionRef::New;
    for turn in 1..=3 {
        let enter = Instant::now();
        let mut stream = exec.execute(
            rig.request(&format!("exec turn {turn}"), session.clone()),
            StopControl::new(),
        );
        let messages = real_cli::collect(&mut stream, real_cli::RUN_LIMIT).await;
        expect_completed(&messages);
        if turn == 1 {
            session = SessionRef::Resume(started_session_id(&messages));
        }
        let at = rig.first_request_after(enter).expect("a request");
        one_shot.push(at.duration_since(enter).as_millis());
    }
    eprintln!("{test}: Enter -> first request, turns 1-3: app-server {app_server:?} ms, exec --json {one_shot:?} ms");
    assert!(
        app_server[1] < one_shot[1] && app_server[2] < one_shot[2],
        "{app_server:?} {one_shot:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)"]
async fn codex_app_server_stop_during_a_sleep_tool_leaves_no_tool_process() {
    let test = &test_name();
    let sleep_arg = format!("4{}.{}", std::process::id() % 10, std::process::id() % 97);
    let scenario = CodexScenario::Tool(format!("sleep {sleep_arg}; echo done"));
    let rig = AppServerRig::start(
        test,
        || fake_codex_server::start(scenario),
        PermissionPolicy::Ask,
    );
    let stop = StopControl::new();
    let mut stream = rig
        .provider
        .execute(rig.request("sleep a while", SessionRef::New), stop.clone());
    let token = format!("sleep {sleep_arg}");
    loop {
        let message = real_cli::next_message(&mut stream, real_cli::RUN_LIMIT)
            .await
            .expect("the tool call");
        if let AgentMessage::PermissionRequest(request) = &message {
            rig.provider
                .answer_permission(&request.id, Some("accept".into()), None);
        }
        if matches!(message, AgentMessage::ToolCall { .. }) {
            break;
        }
    }
    let sleeping = real_cli::wait_for_process(&token, std::time::Duration::from_secs(20)).await;
    assert!(!sleeping.is_empty(), "the tool runs");
    let app_server = rig.processes();
    stop.stop();
    let rest = real_cli::collect(&mut stream, real_cli::RUN_LIMIT).await;
    let (stage, elapsed_ms) = real_cli::cancelled("codex", &rest);
    eprintln!("{test}: stopped at stage {stage:?} in {elapsed_ms} ms");
    let left = real_cli::survivors(sleeping, std::time::Duration::from_secs(3)).await;
    assert!(
        left.is_empty(),
        "the stopped turn's tool survived: {left:?}"
    );
    assert_eq!(rig.processes(), app_server, "the app-server stays");
}

/// Three turns on Codex's app-server (its default chat transport), a rewind of the conversation
/// to before the second, a finished turn: Codex forks the thread through the first turn, and
/// the next request carries the first prompt and the new one only (the fake server's request
/// log). A rewind undone before the next prompt continues the whole thread: every prompt again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)"]
async fn codex_app_server_after_a_rewind_the_next_request_no_longer_carries_the_rewound_prompts() {
    let test =
        "codex_app_server_after_a_rewind_the_next_request_no_longer_carries_the_rewound_prompts";
    let rig = AppServerRig::start(
        test,
        || fake_codex_server::start(CodexScenario::Text),
        PermissionPolicy::Ask,
    );
    real_cli::after_a_rewind_the_next_request_no_longer_carries_the_rewound_prompts(
        test,
        rig.provider.clone(),
        rig.work.path(),
        || model_requests(&rig.server),
    )
    .await;
    assert_eq!(
        rig.processes().len(),
        before_len(&rig),
        "forks, not restarts"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)"]
async fn codex_app_server_an_attached_image_reaches_the_model_as_an_input_image() {
    let test = "codex_app_server_an_attached_image_reaches_the_model";
    let rig = AppServerRig::start(
        test,
        || fake_codex_server::start(CodexScenario::Text),
        PermissionPolicy::Deny,
    );
    let image = real_cli::one_pixel_png(rig.work.path());
    let mut request = rig.request("What is in this image?", SessionRef::New);
    request.images = vec![image.clone()];
    let mut stream = rig.provider.execute(request, StopControl::new());
    let messages = real_cli::collect(&mut stream, real_cli::RUN_LIMIT).await;
    real_cli::expect_completed(&messages);
    let requests = rig.server.requests();
    let model_request = requests
        .iter()
        .rfind(|request| request.path.contains("/responses"))
        .expect("a model request");
    let body = model_request.json().unwrap();
    let urls: Vec<String> = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["role"] == "user")
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter(|part| part["type"] == "input_image")
        .filter_map(|part| part["image_url"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        urls,
        [format!("data:image/png;base64,{}", image.base64())],
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_codex:: (README, Tests)"]
async fn codex_app_server_compact_summarises_and_the_next_prompt_carries_the_summary() {
    let test = "codex_app_server_compact_summarises";
    let rig = AppServerRig::start(
        test,
        || fake_codex_server::start(CodexScenario::Text),
        PermissionPolicy::Ask,
    );
    let first = rig.run("first prompt: remember 42", SessionRef::New).await;
    let thread = started_session_id(&first);
    let session = || SessionRef::Resume(thread.clone());
    expect_completed(&rig.run("second prompt: remember 43", session()).await);
    let before = model_requests(&rig.server).len();
    assert!(rig.provider.can_compact());
    let mut stream = rig
        .provider
        .compact(rig.request("", session()), None, StopControl::new());
    let compacted = real_cli::collect(&mut stream, real_cli::RUN_LIMIT).await;
    expect_completed(&compacted);
    assert_eq!(notices(&compacted, "compacted"), 1, "{compacted:?}");
    let requests = model_requests(&rig.server);
    assert!(requests.len() > before, "a summarisation request was made");
    eprintln!("the summarisation request: {:#?}", &requests[before..]);

    expect_completed(&rig.run("third prompt", session()).await);
    let requests = model_requests(&rig.server);
    let last = requests.last().unwrap();
    eprintln!("after the compaction the model received: {last:#?}");
    // Codex's compaction keeps the user's own messages and replaces the rest of the history
    // (answers, tools) by the summary, which comes right before the new prompt.
    let summary = last
        .iter()
        .position(|text| text.contains("Here is the summary produced by the other language model"))
        .expect("the summary is carried");
    assert!(
        last[summary].ends_with("Hello from the fake server."),
        "{last:#?}"
    );
    assert_eq!(last.last().map(String::as_str), Some("third prompt"));
    assert_eq!(summary, last.len() - 2, "{last:#?}");
}
