//! The real Codex CLI through `agentty::provider::CliProvider`, against a fake Responses API
//! on 127.0.0.1. Opt-in: `#[ignore]`d (`cargo test --test real_codex -- --ignored`), with the CLI installed by
//! `npm install --prefix /tmp/codex-cli @openai/codex` (or `AGENTTY_CODEX_BIN` pointing at it).

#[path = "support/fake_codex_server.rs"]
mod fake_codex_server;
#[path = "support/real_cli.rs"]
mod real_cli;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentty::config::ProviderSettings;
use agentty::provider::codex::CodexBackend;
use agentty::provider::{CliProvider, SessionRef};
use agentty::stream::AgentMessage;
use fake_codex_server::shared::FakeServer;
use fake_codex_server::CodexScenario;
use real_cli::{
    assistant_text, completed_tool_call, expect_completed, expect_failed, notices, real_cli,
    retried_first_turn_is_sent_once, retried_middle_turn_is_sent_once, started_session_id,
    three_prompts, FailFirst, Rig, UserTexts,
};
use tempfile::TempDir;

const DEFAULT_BIN: &str = "/tmp/codex-cli/node_modules/.bin/codex";

/// A throwaway Codex home whose only model provider is the fake server, and a provider that
/// runs the real CLI with it.
fn rig(test: &str, scenario: CodexScenario, extra_args: &[&str]) -> Option<Rig<FakeServer>> {
    let (rig, _) = rig_on(test, || fake_codex_server::start(scenario), extra_args)?;
    Some(rig)
}

/// [`rig`] on the server `server` starts, also returning the provider's settings.
fn rig_on(
    test: &str,
    server: impl FnOnce() -> FakeServer,
    extra_args: &[&str],
) -> Option<(Rig<FakeServer>, ProviderSettings)> {
    let bin = real_cli(test, "AGENTTY_CODEX_BIN", DEFAULT_BIN)?;
    let server = server();
    let home = TempDir::new().expect("temp dir");
    let work = TempDir::new().expect("temp dir");
    let codex_home = home.path().join("codex_home");
    std::fs::create_dir_all(&codex_home).expect("create CODEX_HOME");
    fake_codex_server::write_codex_config(&codex_home, server.port, "fake-model");
    let settings = settings(bin, home.path(), extra_args);
    let rig = Rig {
        server,
        provider: CliProvider::new(CodexBackend::new(settings.clone())),
        home,
        work,
    };
    Some((rig, settings))
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
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn codex_text_reply_completes_with_usage() {
    let Some(rig) = rig(
        "codex_text_reply_completes_with_usage",
        CodexScenario::Text,
        &[],
    ) else {
        return;
    };
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
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn codex_reasoning_summary_is_a_thought_before_the_text() {
    let Some(rig) = rig(
        "codex_reasoning_summary_is_a_thought_before_the_text",
        CodexScenario::Reasoning,
        &[],
    ) else {
        return;
    };
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
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn codex_shell_tool_call_runs_and_completes() {
    let Some(rig) = rig(
        "codex_shell_tool_call_runs_and_completes",
        CodexScenario::Tool("echo hi".into()),
        &["--dangerously-bypass-approvals-and-sandbox"],
    ) else {
        return;
    };
    let messages = rig.run("run echo hi", SessionRef::New).await;
    let (input, output) = completed_tool_call(&messages, "shell");
    assert!(input["command"].as_str().unwrap_or("").contains("echo hi"));
    assert!(output.contains("hi"), "{messages:#?}");
    assert_eq!(assistant_text(&messages), fake_codex_server::TOOL_REPLY);
    expect_completed(&messages);
    assert_eq!(rig.server.count("/responses"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn codex_http_500_fails_after_one_request_with_the_status() {
    let Some(rig) = rig(
        "codex_http_500_fails_after_one_request_with_the_status",
        CodexScenario::Http500,
        &[],
    ) else {
        return;
    };
    let messages = rig.run("say hello", SessionRef::New).await;
    let failure = expect_failed(&messages);
    assert_eq!(failure.reason, "agent_error");
    assert_eq!(failure.http_status, Some(500), "{failure:#?}");
    // Both of Codex's retry layers are off: one failure is one request, and no retry notice.
    assert_eq!(rig.server.count("/responses"), 1);
    assert_eq!(notices(&messages, "agent_retry"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn codex_stop_during_a_sleep_tool_leaves_no_process() {
    let sleep_arg = format!("3{}.{}", std::process::id() % 10, std::process::id() % 97);
    let Some(rig) = rig(
        "codex_stop_during_a_sleep_tool_leaves_no_process",
        CodexScenario::Tool(format!("sleep {sleep_arg}; echo done")),
        &["--dangerously-bypass-approvals-and-sandbox"],
    ) else {
        return;
    };
    rig.assert_stop_mid_tool_leaves_no_process("codex", &format!("sleep {sleep_arg}"))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn codex_later_turn_resumes_the_thread() {
    let Some(rig) = rig(
        "codex_later_turn_resumes_the_thread",
        CodexScenario::Text,
        &[],
    ) else {
        return;
    };
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
/// their last user message holds `flaky`, and an orchestrator-ready provider for it.
fn flaky_rig(test: &str, flaky: &str) -> Option<(Rig<FakeServer>, Arc<CliProvider>)> {
    let fail = FailFirst::new(2, flaky);
    let server =
        move || fake_codex_server::start_failing(CodexScenario::Text, move |text| fail.take(text));
    let (rig, settings) = rig_on(test, server, &[])?;
    let provider = Arc::new(CliProvider::new(CodexBackend::new(settings)));
    Some((rig, provider))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn codex_retried_turn_reaches_the_model_with_each_prompt_once() {
    let test = "codex_retried_turn_reaches_the_model_with_each_prompt_once";
    let prompts = three_prompts("codex");
    let Some((rig, provider)) = flaky_rig(test, &prompts[1]) else {
        return;
    };
    retried_middle_turn_is_sent_once("codex", test, provider, rig.work.path(), &prompts, || {
        model_requests(&rig.server)
    })
    .await;
    assert_thread_history_matches_the_rollout(rig.home.path(), &prompts);
}

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
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn codex_retried_first_turn_reaches_the_model_with_its_prompt_once() {
    let test = "codex_retried_first_turn_reaches_the_model_with_its_prompt_once";
    let prompts = three_prompts("codex");
    let Some((rig, provider)) = flaky_rig(test, &prompts[0]) else {
        return;
    };
    retried_first_turn_is_sent_once("codex", test, provider, rig.work.path(), &prompts, || {
        model_requests(&rig.server)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test <name> -- --ignored (README, Tests)"]
async fn codex_resumed_turn_after_a_relaunch_reports_its_own_usage() {
    let test = "codex_resumed_turn_after_a_relaunch_reports_its_own_usage";
    let Some(mut rig) = rig(test, CodexScenario::Text, &[]) else {
        return;
    };
    let first = rig.run("first prompt", SessionRef::New).await;
    let thread = started_session_id(&first);
    // A new launch of agentty: a fresh backend that has seen no turn of this thread.
    let bin = real_cli(test, "AGENTTY_CODEX_BIN", DEFAULT_BIN).expect("the CLI");
    rig.provider = CliProvider::new(CodexBackend::new(settings(bin, rig.home.path(), &[])));
    let resumed = rig.run("second prompt", SessionRef::Resume(thread)).await;
    // Codex reports 24 (the thread's total); the rollout file gives the earlier 12.
    let usage = expect_completed(&resumed).1.expect("usage");
    assert_eq!(usage.input_tokens, Some(12), "{usage:?}");
}
