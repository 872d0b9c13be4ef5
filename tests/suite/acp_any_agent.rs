//! Any ACP agent from a config entry, held to the standard of the native ones: the demo agent
//! in `--mode acp` run as an agent agentty has no code for (`[providers.my-acp]`, `protocol =
//! "acp"`), on real processes, through the orchestrator. What the model saw is the demo
//! agent's request log.

use crate::support::agent_stream;
use crate::support::demo_launcher;
use crate::support::orchestrator_turn::{outcome, run_turn};

use std::sync::Arc;

use tokio::time::timeout;

use agent_stream::PATIENCE;
use agentty::config::{PermissionPolicy, ProviderSettings};
use agentty::demo_agent::state::{requests_file, DemoRequest};
use agentty::orchestrator::{
    spawn_orchestrator, Command, OrchestratorEvent as Ev, OrchestratorHandle, OrchestratorOptions,
    TurnOutcome,
};
use agentty::provider::{
    build_provider_with, AgentSetting, AgentStatus, AttemptRequest, Provider, SessionRef,
    StopControl, Transport,
};
use agentty::stream::{AgentMessage, NoticeKind};
use demo_launcher::DemoLauncher;

/// The name agentty knows nothing of.
const AGENT: &str = "my-acp";

/// The demo agent behind a config entry of its own.
struct AnyAgent {
    demo: DemoLauncher,
    provider: Arc<dyn Provider>,
}

impl AnyAgent {
    /// The agent run with `args` after `--mode acp`.
    fn new(args: &[&str]) -> Self {
        let demo = DemoLauncher::new();
        let mut all = vec!["--mode", "acp"];
        all.extend_from_slice(args);
        let settings = ProviderSettings {
            permissions: Some(PermissionPolicy::Ask),
            protocol: Some(Transport::Acp),
            ..demo.settings(&all, "0.1")
        };
        let provider = build_provider_with(AGENT, &settings, Transport::Acp).unwrap();
        Self { demo, provider }
    }

    /// A chat on it, with agentty's retry as the config leaves it for such an agent.
    fn chat(&self) -> OrchestratorHandle {
        let mut options = OrchestratorOptions::new(self.provider.clone());
        options.cwd = Some(self.demo.state.path().to_path_buf());
        spawn_orchestrator(options)
    }

    /// The user messages of each request the model received.
    fn requests(&self) -> Vec<Vec<String>> {
        std::fs::read_to_string(requests_file(self.demo.state.path()))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str::<DemoRequest>(line).unwrap().messages)
            .collect()
    }

    fn starts(&self) -> usize {
        self.demo.starts().len()
    }
}

fn submit(prompt: &str) -> Command {
    Command::Submit(prompt.to_owned())
}

/// The notices of `events` as (kind, text).
fn notices(events: &[Ev]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|event| match event {
            Ev::Notice { kind, message, .. } => Some((kind.wire().to_owned(), message.clone())),
            _ => None,
        })
        .collect()
}

fn said(prompts: &[&str]) -> Vec<String> {
    prompts.iter().map(|prompt| (*prompt).to_owned()).collect()
}

// ---- 1. A failure never costs the conversation ----

#[tokio::test]
async fn a_failed_turn_its_retry_and_the_next_turn_keep_the_conversation_and_the_agent() {
    let agent = AnyAgent::new(&[]);
    let mut chat = agent.chat();
    for prompt in ["hello one", "hello two"] {
        assert_eq!(
            outcome(&run_turn(&mut chat, submit(prompt), PATIENCE).await),
            TurnOutcome::Completed
        );
    }
    let failed = run_turn(&mut chat, submit("flaky three"), PATIENCE).await;
    assert!(
        matches!(outcome(&failed), TurnOutcome::Failed { .. }),
        "{failed:#?}"
    );
    let notices = notices(&failed);
    assert!(
        notices
            .iter()
            .all(|(kind, _)| kind != NoticeKind::FreshSession.wire()),
        "never a fresh session: {notices:#?}"
    );
    assert!(
        notices
            .iter()
            .any(|(kind, text)| kind == NoticeKind::Warning.wire()
                && text.contains("may see this prompt twice")),
        "the user is told the failed prompt stays with the agent: {notices:#?}"
    );
    let retried = run_turn(&mut chat, Command::RetryLastTurn, PATIENCE).await;
    assert_eq!(outcome(&retried), TurnOutcome::Completed, "{retried:#?}");
    assert_eq!(
        outcome(&run_turn(&mut chat, submit("hello four"), PATIENCE).await),
        TurnOutcome::Completed
    );

    let requests = agent.requests();
    assert_eq!(requests.len(), 5, "{requests:#?}");
    assert_eq!(
        requests[2],
        said(&["hello one", "hello two", "flaky three"])
    );
    assert_eq!(
        requests[3],
        said(&["hello one", "hello two", "flaky three", "flaky three"]),
        "the retry continues the conversation (the failed prompt kept by the agent)"
    );
    assert_eq!(
        requests[4],
        said(&[
            "hello one",
            "hello two",
            "flaky three",
            "flaky three",
            "hello four"
        ])
    );
    assert_eq!(agent.starts(), 1, "the agent and its session were kept");
}

#[tokio::test]
async fn an_agent_that_dies_mid_turn_is_started_again_on_its_session_not_a_new_one() {
    let agent = AnyAgent::new(&[]);
    let mut chat = agent.chat();
    for prompt in ["hello one", "hello two"] {
        run_turn(&mut chat, submit(prompt), PATIENCE).await;
    }
    let failed = run_turn(&mut chat, submit("exit-mid-turn three"), PATIENCE).await;
    assert!(
        matches!(outcome(&failed), TurnOutcome::Failed { .. }),
        "{failed:#?}"
    );
    let next = run_turn(&mut chat, submit("hello four"), PATIENCE).await;
    assert_eq!(outcome(&next), TurnOutcome::Completed, "{next:#?}");
    assert!(
        notices(&next)
            .iter()
            .all(|(kind, _)| kind != NoticeKind::FreshSession.wire()),
        "{next:#?}"
    );
    let requests = agent.requests();
    assert_eq!(
        requests.last().unwrap(),
        &said(&[
            "hello one",
            "hello two",
            "exit-mid-turn three",
            "hello four"
        ]),
        "session/load, never session/new: {requests:#?}"
    );
    assert_eq!(agent.starts(), 2);
}

// ---- 6. An agent that hangs never holds the user ----

/// The settings of an agent that answers nothing, not even `initialize`, and ignores SIGINT,
/// SIGTERM and stdin's end (`--silent-start`).
fn hung_agent() -> AnyAgent {
    AnyAgent::new(&["--silent-start"])
}

#[tokio::test]
async fn a_stop_before_the_agent_answers_initialize_ends_the_turn_at_once_and_kills_it() {
    let agent = hung_agent();
    let mut chat = agent.chat();
    chat.commands.send(submit("hello")).unwrap();
    // The agent is started (by the warm-up, or the attempt) and says nothing.
    let deadline = std::time::Instant::now() + PATIENCE;
    while agent.starts() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let pid = agent.demo.starts()[0];
    let stopped = std::time::Instant::now();
    let events = run_turn(&mut chat, Command::Stop, PATIENCE).await;
    let took = stopped.elapsed();
    eprintln!("Esc to idle with an agent silent at initialize: {took:?}");
    assert_eq!(outcome(&events), TurnOutcome::Cancelled, "{events:#?}");
    assert!(
        agent_stream::wait_gone(pid).await,
        "the hung agent was killed"
    );
    assert_eq!(agent.starts(), 1, "started once: {events:#?}");
}

#[tokio::test]
async fn a_warm_up_start_that_fails_is_the_waiting_turns_failure_not_a_second_start() {
    let demo = DemoLauncher::new();
    let script = demo.state.path().join("dies-at-start");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho $$ >> '{}'\nsleep 1\necho 'cannot reach the model' >&2\nexit 3\n",
            demo.state.path().join("starts").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let settings = ProviderSettings {
        command: Some(script),
        protocol: Some(Transport::Acp),
        ..ProviderSettings::default()
    };
    let provider = build_provider_with(AGENT, &settings, Transport::Acp).unwrap();
    let agent = AnyAgent { demo, provider };
    let mut chat = agent.chat();
    let events = run_turn(&mut chat, submit("hello"), PATIENCE).await;
    assert!(
        matches!(outcome(&events), TurnOutcome::Failed { .. }),
        "{events:#?}"
    );
    assert_eq!(agent.starts(), 1, "one start, one failure: {events:#?}");
}

/// `agentty run` on the hung agent, given `signal` once the agent has started: it ends within
/// moments, the agent killed, and says the turn was stopped.
fn headless_run_on_a_hung_agent_ends_on(signal: nix::sys::signal::Signal) {
    let demo = DemoLauncher::new();
    let launcher = demo.settings(&[], "0").command.unwrap();
    let config = demo.state.path().join("agentty.toml");
    std::fs::write(
        &config,
        format!(
            "[providers.hung]\nprotocol = \"acp\"\ncommand = \"{}\"\n\
             args = [\"--mode\", \"acp\", \"--silent-start\"]\n",
            launcher.display()
        ),
    )
    .unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(["run", "--config", config.to_str().unwrap()])
        .args(["--provider", "hung", "hello"])
        .current_dir(demo.state.path())
        .env("AGENTTY_STATE_DIR", demo.state.path().join("state"))
        .env("XDG_CONFIG_HOME", demo.state.path().join("config"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + PATIENCE;
    while demo.starts().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let agent = demo.starts()[0];
    let signalled = std::time::Instant::now();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
    let output = child.wait_with_output().unwrap();
    let took = signalled.elapsed();
    eprintln!("agentty run on an agent silent at initialize: {signal} to exit in {took:?}");
    assert!(took < PATIENCE, "{took:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("terminal.cancelled"),
        "the turn ends stopped: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_ne!(output.status.code(), Some(0));
    assert!(!agent_stream::alive(agent), "the hung agent was killed");
}

#[test]
fn headless_run_on_an_agent_silent_at_initialize_ends_on_sigterm() {
    headless_run_on_a_hung_agent_ends_on(nix::sys::signal::Signal::SIGTERM);
}

#[test]
fn headless_run_on_an_agent_silent_at_initialize_ends_on_sigint() {
    headless_run_on_a_hung_agent_ends_on(nix::sys::signal::Signal::SIGINT);
}

// ---- 2. Every settings form: configOptions and session/set_config_option ----

impl AnyAgent {
    /// One turn on the provider itself, with `settings` (as the conversation carries them).
    async fn turn_with(
        &self,
        prompt: &str,
        session: SessionRef,
        settings: Vec<AgentSetting>,
    ) -> Vec<AgentMessage> {
        let request = AttemptRequest {
            prompt: prompt.into(),
            session,
            cwd: Some(self.demo.state.path().to_path_buf()),
            attempt: 1,
            settings,
            ..AttemptRequest::default()
        };
        agent_stream::collect(self.provider.execute(request, StopControl::new())).await
    }

    /// The models the requests went to, in order.
    fn models(&self) -> Vec<Option<String>> {
        std::fs::read_to_string(requests_file(self.demo.state.path()))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str::<DemoRequest>(line).unwrap().model)
            .collect()
    }

    /// The agent's settings log (`settings.jsonl`): (method, value) per change.
    fn settings_log(&self) -> Vec<(String, String)> {
        std::fs::read_to_string(self.demo.state.path().join("settings.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| {
                let value: serde_json::Value = serde_json::from_str(line).unwrap();
                (
                    value["method"].as_str().unwrap().to_owned(),
                    value["value"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }
}

/// Waits until the agent's status satisfies `wanted`.
async fn status_until(
    status: &mut tokio::sync::watch::Receiver<AgentStatus>,
    wanted: impl Fn(&AgentStatus) -> bool,
) -> AgentStatus {
    timeout(PATIENCE, status.wait_for(|status| wanted(status)))
        .await
        .expect("the status in time")
        .expect("the agent's status")
        .clone()
}

#[tokio::test]
async fn config_options_list_models_modes_and_levels_and_a_choice_goes_by_set_config_option() {
    let agent = AnyAgent::new(&["--flavour", "config-options"]);
    let first = agent.turn_with("hello", SessionRef::New, Vec::new()).await;
    let id = agent_stream::session_id(&first);
    let mut status = agent.provider.agent_status().expect("an ACP status");
    let listed = status.borrow().clone();
    let names: Vec<&str> = listed.models.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["Demo ACP One", "Demo ACP Two"], "{listed:#?}");
    assert_eq!(listed.model.as_deref(), Some("demo-acp-1"));
    let modes: Vec<&str> = listed.modes.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(modes, ["default", "accept-edits", "yolo"]);
    assert!(
        listed.modes[2].most_permissive.is_some(),
        "yolo is marked: {listed:#?}"
    );
    assert_eq!(listed.thinking_levels, ["low", "medium", "high"]);
    assert_eq!(listed.thinking_level.as_deref(), Some("low"));

    assert!(agent
        .provider
        .change_setting(AgentSetting::Model("demo-acp-2".into())));
    status_until(&mut status, |s| s.model.as_deref() == Some("demo-acp-2")).await;
    assert!(agent
        .provider
        .change_setting(AgentSetting::ThinkingLevel("high".into())));
    status_until(&mut status, |s| s.thinking_level.as_deref() == Some("high")).await;
    assert!(agent
        .provider
        .change_setting(AgentSetting::Mode("accept-edits".into())));
    status_until(&mut status, |s| s.mode.as_deref() == Some("accept-edits")).await;
    agent
        .turn_with("hello again", SessionRef::Resume(id), Vec::new())
        .await;
    assert_eq!(
        agent.models(),
        [Some("demo-acp-1".to_owned()), Some("demo-acp-2".to_owned())],
        "the next request goes to the model chosen"
    );
    assert_eq!(
        agent.settings_log(),
        [
            ("session/set_model".to_owned(), "demo-acp-2".to_owned()),
            ("session/set_thought_level".to_owned(), "high".to_owned()),
            ("session/set_mode".to_owned(), "accept-edits".to_owned()),
        ],
        "each by session/set_config_option"
    );
}

#[tokio::test]
async fn a_configured_model_is_matched_by_name_and_one_the_agent_lacks_is_said() {
    let agent = AnyAgent::new(&["--flavour", "config-options"]);
    let by_name = vec![AgentSetting::Model("demo acp two".into())];
    agent.turn_with("hello", SessionRef::New, by_name).await;
    assert_eq!(agent.models(), [Some("demo-acp-2".to_owned())]);

    let other = AnyAgent::new(&[]);
    let unknown = vec![AgentSetting::Model("nonesuch".into())];
    let messages = other.turn_with("hello", SessionRef::New, unknown).await;
    assert!(
        matches!(
            agent_stream::terminals(&messages)[..],
            [AgentMessage::Completed { .. }]
        ),
        "{messages:?}"
    );
    let status = other.provider.agent_status().unwrap().borrow().clone();
    assert_eq!(status.refusals, 1, "{status:#?}");
    let said = status.refusal.unwrap_or_default();
    assert!(
        said.contains("nonesuch") && said.contains("Demo ACP One"),
        "the user is told, with what the agent offers: {said}"
    );
    assert_eq!(other.models(), [Some("demo-acp-1".to_owned())]);
}

// ---- 3. Tool calls follow every update ----

#[tokio::test]
async fn a_tool_update_with_the_real_title_and_input_restates_the_call() {
    let agent = AnyAgent::new(&[]);
    let messages = agent
        .turn_with("refined-tool please", SessionRef::New, Vec::new())
        .await;
    let calls: Vec<(String, String, serde_json::Value)> = messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolCall {
                id, name, input, ..
            } => Some((id.clone(), name.clone(), input.clone())),
            _ => None,
        })
        .collect();
    // The shell call is shown at once (it has an input, `{cwd}`), then restated; the write,
    // announced with nothing, is shown once its update brings its path.
    assert_eq!(calls.len(), 3, "{calls:#?}");
    assert_eq!(calls[0].1, "bash");
    assert_eq!(calls[1].0, calls[0].0, "the same call");
    assert_eq!(calls[1].1, "echo refined");
    assert_eq!(calls[1].2["command"], "echo refined");
    let written = agent.demo.state.path().join("agentty-demo-write.txt");
    assert_eq!(calls[2].1, "write");
    assert_eq!(
        calls[2].2["filePath"],
        written.display().to_string(),
        "the write names its path"
    );
    assert!(messages.iter().any(|message| matches!(message,
        AgentMessage::ToolCompleted { id, output } if *id == calls[0].0 && output.contains("refined"))));
}

// ---- 5. Every stop reason said truthfully ----

#[tokio::test]
async fn refusal_max_tokens_and_max_turn_requests_are_failures_that_say_why() {
    let agent = AnyAgent::new(&[]);
    for (scenario, words) in [
        ("refusal", "refused"),
        ("max-tokens", "output token limit"),
        ("max-turn-requests", "model requests for one turn"),
    ] {
        let messages = agent
            .turn_with(&format!("{scenario} please"), SessionRef::New, Vec::new())
            .await;
        let [AgentMessage::Failed(failure)] = agent_stream::terminals(&messages)[..] else {
            panic!("{scenario}: not a failure: {messages:?}");
        };
        assert!(
            failure.message.contains(words),
            "{scenario}: {}",
            failure.message
        );
        assert!(
            !failure.text.is_empty(),
            "{scenario}: the text so far is kept"
        );
    }
}

#[test]
fn headless_run_exits_failed_on_a_refusal() {
    let demo = DemoLauncher::new();
    let launcher = demo.settings(&[], "0").command.unwrap();
    let config = demo.state.path().join("agentty.toml");
    std::fs::write(
        &config,
        format!(
            "[providers.mine]\nprotocol = \"acp\"\ncommand = \"{}\"\nargs = [\"--mode\", \"acp\"]\n\
             env = {{ AGENTTY_DEMO_TIME_SCALE = \"0\", AGENTTY_DEMO_STATE_DIR = \"{}\" }}\n",
            launcher.display(),
            demo.state.path().display()
        ),
    )
    .unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(["run", "--config", config.to_str().unwrap()])
        .args(["--provider", "mine", "refusal please"])
        .current_dir(demo.state.path())
        .env("AGENTTY_STATE_DIR", demo.state.path().join("state"))
        .env("XDG_CONFIG_HOME", demo.state.path().join("config"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("stop reason: refusal"), "{stdout}");
    assert!(!stdout.contains("terminal.completed"), "{stdout}");
}
