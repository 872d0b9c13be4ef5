//! The real Codex CLI through `agentty::provider::CliProvider`, against a fake Responses API
//! on 127.0.0.1. Opt-in: `AGENTTY_REAL_CLI_TESTS=1`, with the CLI installed by
//! `npm install --prefix /tmp/codex-cli @openai/codex` (or `AGENTTY_CODEX_BIN` pointing at it);
//! each test prints a note and passes when the switch is unset.

#[path = "support/fake_codex_server.rs"]
mod fake_codex_server;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentty::config::ProviderSettings;
use agentty::provider::codex::CodexBackend;
use agentty::provider::{AttemptRequest, CliProvider, Provider, SessionRef, StopControl};
use agentty::stream::AgentMessage;
use fake_codex_server::shared::{
    assistant_text, collect, is_alive, next_message, notices, pids_running, real_cli,
    wait_for_process, FakeServer,
};
use fake_codex_server::CodexScenario;
use tempfile::TempDir;

const DEFAULT_BIN: &str = "/tmp/codex-cli/node_modules/.bin/codex";
const RUN_LIMIT: Duration = Duration::from_secs(90);

/// A throwaway Codex home whose only model provider is the fake server, and a provider that
/// runs the real CLI with it.
struct CodexRig {
    server: FakeServer,
    provider: CliProvider,
    work: TempDir,
    _home: TempDir,
}

fn rig(test: &str, scenario: CodexScenario, extra_args: &[&str]) -> Option<CodexRig> {
    let bin = real_cli(test, "AGENTTY_CODEX_BIN", DEFAULT_BIN)?;
    let server = fake_codex_server::start(scenario);
    let home = TempDir::new().expect("temp dir");
    let work = TempDir::new().expect("temp dir");
    let codex_home = home.path().join("codex_home");
    std::fs::create_dir_all(&codex_home).expect("create CODEX_HOME");
    write_config(&codex_home, server.port);
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
        .insert("HOME".into(), home.path().to_string_lossy().into_owned());
    settings
        .env
        .insert("FAKE_API_KEY".into(), "dummy-key".into());
    Some(CodexRig {
        server,
        provider: CliProvider::new(CodexBackend::new(settings)),
        work,
        _home: home,
    })
}

/// The config of `protocols/codex/capture.sh`: the fake provider, and no background traffic.
fn write_config(home: &Path, port: u16) {
    let config = format!(
        r#"model = "fake-model"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "Fake local"
base_url = "http://127.0.0.1:{port}/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
plugin_sharing = false
apps = false
in_app_updates = false
"#
    );
    std::fs::write(home.join("config.toml"), config).expect("write config.toml");
}

impl CodexRig {
    fn request(&self, prompt: &str, session: SessionRef) -> AttemptRequest {
        AttemptRequest {
            prompt: prompt.into(),
            session,
            cwd: Some(self.work.path().to_path_buf()),
            attempt: 1,
            scenario: None,
            ..AttemptRequest::default()
        }
    }

    async fn run(&self, prompt: &str, session: SessionRef) -> Vec<AgentMessage> {
        let mut stream = self
            .provider
            .execute(self.request(prompt, session), StopControl::new());
        collect(&mut stream, RUN_LIMIT).await
    }

    fn responses_requests(&self) -> usize {
        self.server.count("/responses")
    }
}

fn unique(label: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("{label}-{}-{nanos}", std::process::id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
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
        matches!(&messages[0], AgentMessage::SessionStarted { provider, session_id: Some(_) } if provider == "codex"),
        "{messages:#?}"
    );
    assert_eq!(assistant_text(&messages), fake_codex_server::TEXT_REPLY);
    // The model-metadata error item is a warning, not a failure.
    assert!(notices(&messages, "warning") >= 1, "{messages:#?}");
    match messages.last() {
        Some(AgentMessage::Completed {
            usage: Some(usage), ..
        }) => {
            assert_eq!(usage.input_tokens, Some(12));
            assert_eq!(usage.output_tokens, Some(7));
        }
        other => panic!("not completed with usage: {other:?}"),
    }
    assert_eq!(rig.responses_requests(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
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
    assert!(matches!(
        messages.last(),
        Some(AgentMessage::Completed { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_shell_tool_call_runs_and_completes() {
    let Some(rig) = rig(
        "codex_shell_tool_call_runs_and_completes",
        CodexScenario::Tool("echo hi".into()),
        &["--dangerously-bypass-approvals-and-sandbox"],
    ) else {
        return;
    };
    let messages = rig.run("run echo hi", SessionRef::New).await;
    let call_id = messages
        .iter()
        .find_map(|m| match m {
            AgentMessage::ToolCall { id, name, input } if name == "shell" => {
                assert!(input["command"].as_str().unwrap_or("").contains("echo hi"));
                Some(id.clone())
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no shell tool call: {messages:#?}"));
    assert!(
        messages.iter().any(|m| matches!(m, AgentMessage::ToolCompleted { id, output } if *id == call_id && output.contains("hi"))),
        "{messages:#?}"
    );
    assert_eq!(assistant_text(&messages), fake_codex_server::TOOL_REPLY);
    assert!(matches!(
        messages.last(),
        Some(AgentMessage::Completed { .. })
    ));
    assert_eq!(rig.responses_requests(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_http_500_fails_after_one_request_with_the_status() {
    let Some(rig) = rig(
        "codex_http_500_fails_after_one_request_with_the_status",
        CodexScenario::Http500,
        &[],
    ) else {
        return;
    };
    let messages = rig.run("say hello", SessionRef::New).await;
    match messages.last() {
        Some(AgentMessage::Failed(failure)) => {
            assert_eq!(failure.reason, "agent_error");
            assert_eq!(failure.http_status, Some(500), "{failure:#?}");
        }
        other => panic!("not failed: {other:?}"),
    }
    // Both of Codex's retry layers are off: one failure is one request, and no retry notice.
    assert_eq!(rig.responses_requests(), 1);
    assert_eq!(notices(&messages, "agent_retry"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_stop_during_a_sleep_tool_leaves_no_process() {
    let sleep_arg = format!("3{}.{}", std::process::id() % 10, std::process::id() % 97);
    let Some(rig) = rig(
        "codex_stop_during_a_sleep_tool_leaves_no_process",
        CodexScenario::Tool(format!("sleep {sleep_arg}; echo done")),
        &["--dangerously-bypass-approvals-and-sandbox"],
    ) else {
        return;
    };
    let prompt = unique("sleep-for-the-stop-test");
    let stop = StopControl::new();
    let mut stream = rig
        .provider
        .execute(rig.request(&prompt, SessionRef::New), stop.clone());
    let mut messages = Vec::new();
    while !messages
        .iter()
        .any(|m| matches!(m, AgentMessage::ToolCall { .. }))
    {
        match next_message(&mut stream, RUN_LIMIT).await {
            Some(message) => messages.push(message),
            None => panic!("no tool call before the end: {messages:#?}"),
        }
    }
    let sleepers = wait_for_process(&format!("sleep {sleep_arg}"), Duration::from_secs(20)).await;
    assert!(!sleepers.is_empty(), "the sleep tool never started");
    let agent = pids_running(&prompt);
    assert!(!agent.is_empty(), "the codex process was not found");

    stop.stop();
    messages.extend(collect(&mut stream, Duration::from_secs(15)).await);
    match messages.last() {
        Some(AgentMessage::Cancelled {
            stop_stage,
            elapsed_ms,
        }) => {
            // Which stage ended it depends on the machine's load (a busy machine can keep the
            // CLI's own shutdown past the 2 s grace); that the stop ends it is what counts.
            eprintln!(
                "codex stopped at stage {} after {elapsed_ms} ms",
                stop_stage.as_str()
            );
            assert!(*elapsed_ms < 2_000 + 5_000 + 1_000, "{messages:#?}");
        }
        other => panic!("not cancelled: {other:?}"),
    }
    assert!(
        messages
            .iter()
            .any(|m| matches!(m, AgentMessage::ToolFailed { .. })),
        "the tool call was left open: {messages:#?}"
    );
    let survivors: Vec<i32> = sleepers
        .iter()
        .chain(&agent)
        .copied()
        .filter(|pid| is_alive(*pid))
        .collect();
    assert!(
        survivors.is_empty(),
        "still running after the stop: {survivors:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_later_turn_resumes_the_thread() {
    let Some(rig) = rig(
        "codex_later_turn_resumes_the_thread",
        CodexScenario::Text,
        &[],
    ) else {
        return;
    };
    let first = rig.run("first prompt: remember 42", SessionRef::New).await;
    let Some(AgentMessage::SessionStarted {
        session_id: Some(thread_id),
        ..
    }) = first.first()
    else {
        panic!("no session id: {first:#?}");
    };
    let second = rig
        .run("second prompt", SessionRef::Resume(thread_id.clone()))
        .await;
    assert_eq!(
        second.first(),
        Some(&AgentMessage::SessionResumed {
            provider: "codex".into(),
            session_id: thread_id.clone()
        })
    );
    assert!(matches!(
        second.last(),
        Some(AgentMessage::Completed { .. })
    ));
    // The resumed turn carried the first turn to the model.
    let last_body = String::from_utf8_lossy(&rig.server.requests()[1].body).into_owned();
    assert!(last_body.contains("first prompt: remember 42"));
}
