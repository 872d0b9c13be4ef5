//! ACP agents agentty has no code for, run from a config entry as a new user would: Qwen Code
//! (`qwen --acp`) and opencode (`opencode acp`), each pointed at the fake OpenAI-compatible
//! server of `support/fake_openai.rs` on 127.0.0.1, in a throwaway home. What the model saw is
//! the fake server's request log.
//!
//! Opt-in: every test is `#[ignore]`d (`cargo test --test suite -- --ignored real_acp_any::`);
//! a missing CLI fails the test. Installs: `npm install --prefix /tmp/qwen-cli
//! @qwen-code/qwen-code@0.24.4`, `npm install --prefix /tmp/opencode-cli opencode-ai@1.18.33`
//! (or `AGENTTY_QWEN_BIN`, `AGENTTY_OPENCODE_BIN`).

use crate::support::agent_stream;
use crate::support::fake_openai;
use crate::support::orchestrator_turn::{outcome, run_turn};
use crate::support::real_cli;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::timeout;

use agentty::config::{PermissionPolicy, ProviderSettings};
use agentty::orchestrator::{
    spawn_orchestrator, Command, OrchestratorEvent as Ev, OrchestratorHandle, OrchestratorOptions,
    TurnOutcome,
};
use agentty::provider::{
    build_provider_with, AgentSetting, AttemptRequest, Provider, SessionRef, StopControl, Transport,
};
use agentty::stream::AgentMessage;
use fake_openai::FakeOpenAi;
use real_cli::{assert_carries, UserTexts};

const QWEN_BIN: &str = "/tmp/qwen-cli/node_modules/.bin/qwen";
const OPENCODE_BIN: &str = "/tmp/opencode-cli/node_modules/.bin/opencode";
/// How long one turn of a real agent against the fake server may take.
const TURN_LIMIT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Agent {
    Qwen,
    Opencode,
}

/// One agent, its home and working directory, and the fake server it talks to.
struct Rig {
    agent: Agent,
    server: FakeOpenAi,
    home: tempfile::TempDir,
    work: tempfile::TempDir,
}

impl Rig {
    async fn new(agent: Agent, server: FakeOpenAi) -> Self {
        let rig = Self {
            agent,
            server,
            home: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir().unwrap(),
        };
        let home = rig.home.path();
        match agent {
            Agent::Qwen => {
                std::fs::create_dir_all(home.join(".qwen")).unwrap();
                std::fs::write(
                    home.join(".qwen/settings.json"),
                    r#"{"security":{"auth":{"selectedType":"openai"}}}"#,
                )
                .unwrap();
            }
            Agent::Opencode => {
                let config = home.join(".config/opencode");
                std::fs::create_dir_all(&config).unwrap();
                let models: serde_json::Map<String, serde_json::Value> =
                    ["plain", "think", "tool", "session"]
                        .iter()
                        .map(|id| ((*id).to_owned(), serde_json::json!({"name": id})))
                        .collect();
                let opencode = serde_json::json!({
                    "autoupdate": false,
                    "share": "disabled",
                    "provider": {"fake": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "Fake",
                        "options": {"baseURL": rig.server.base_url(), "apiKey": "dummy"},
                        "models": models,
                    }},
                    "model": "fake/session",
                });
                std::fs::write(config.join("opencode.json"), opencode.to_string()).unwrap();
            }
        }
        rig
    }

    fn program(&self) -> PathBuf {
        let (var, default) = match self.agent {
            Agent::Qwen => ("AGENTTY_QWEN_BIN", QWEN_BIN),
            Agent::Opencode => ("AGENTTY_OPENCODE_BIN", OPENCODE_BIN),
        };
        let program = std::env::var_os(var)
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(default));
        assert!(program.exists(), "{} is not installed", program.display());
        program
    }

    /// The config entry a user writes for it (`[providers.qwen]` / `[providers.opencode]`).
    fn settings(&self, model: Option<&str>) -> ProviderSettings {
        let home = self.home.path().display().to_string();
        let mut env = BTreeMap::from([("HOME".to_owned(), home.clone())]);
        let args = match self.agent {
            Agent::Qwen => {
                env.insert("OPENAI_API_KEY".into(), "dummy".into());
                env.insert("OPENAI_BASE_URL".into(), self.server.base_url());
                env.insert("OPENAI_MODEL".into(), "session".into());
                vec!["--acp".to_owned()]
            }
            Agent::Opencode => {
                for (var, dir) in [
                    ("XDG_CONFIG_HOME", ".config"),
                    ("XDG_DATA_HOME", ".local/share"),
                    ("XDG_CACHE_HOME", ".cache"),
                    ("XDG_STATE_HOME", ".local/state"),
                ] {
                    env.insert(var.into(), format!("{home}/{dir}"));
                }
                env.insert("OPENCODE_DISABLE_AUTOUPDATE".into(), "1".into());
                vec!["acp".to_owned()]
            }
        };
        ProviderSettings {
            command: Some(self.program()),
            args,
            env,
            model: model.map(str::to_owned),
            permissions: Some(PermissionPolicy::Allow),
            protocol: Some(Transport::Acp),
            ..ProviderSettings::default()
        }
    }

    fn name(&self) -> &'static str {
        match self.agent {
            Agent::Qwen => "qwen",
            Agent::Opencode => "opencode",
        }
    }

    fn provider(&self, model: Option<&str>) -> Arc<dyn Provider> {
        build_provider_with(self.name(), &self.settings(model), Transport::Acp).unwrap()
    }

    fn requests(&self) -> Vec<UserTexts> {
        self.server.user_texts_per_request()
    }
}

fn session_of(events: &[Ev]) -> Option<String> {
    events.iter().rev().find_map(|event| match event {
        Ev::SessionChanged {
            session_id: Some(id),
        } => Some(id.clone()),
        _ => None,
    })
}

/// The chat is left: the orchestrator shuts down and the agent with it.
async fn quit(mut chat: OrchestratorHandle, provider: Arc<dyn Provider>) {
    chat.commands.send(Command::Shutdown).unwrap();
    while timeout(TURN_LIMIT, chat.events.recv())
        .await
        .expect("shut down in time")
        .is_some()
    {}
    drop(provider);
    tokio::time::sleep(Duration::from_millis(500)).await;
}

/// Prints the requests since `from` under `label`: how many user messages each has, and which
/// of the test's prompts they carry (an agent may merge prompts into one message); returns
/// where the next label starts.
fn show(agent: &str, label: &str, requests: &[UserTexts], from: usize) -> usize {
    const KNOWN: [(&str, &str); 7] = [
        ("Remember alpha.", "A"),
        ("Remember beta.", "B"),
        ("Remember gamma.", "C"),
        ("Remember delta.", "D"),
        ("Remember epsilon.", "E"),
        ("What do you remember?", "what"),
        ("And now?", "now"),
    ];
    for (number, request) in requests.iter().enumerate().skip(from) {
        let carried: Vec<String> = KNOWN
            .iter()
            .filter_map(|(prompt, word)| {
                let times = request
                    .iter()
                    .map(|text| text.matches(prompt).count())
                    .sum::<usize>();
                match times {
                    0 => None,
                    1 => Some((*word).to_owned()),
                    n => Some(format!("{word}×{n}")),
                }
            })
            .collect();
        eprintln!(
            "{agent} #{} {label}: {} user message(s), prompts {carried:?}",
            number + 1,
            request.len()
        );
    }
    requests.len()
}

// ---- 1. A failure never costs the conversation, through /retry, quit and --resume ----

/// The prompts of [`a_failure_a_retry_and_a_resume_keep_the_conversation`]; the third is the
/// one the fake server fails.
pub const FIVE_PROMPTS: [&str; 5] = [
    "Remember alpha.",
    "Remember beta.",
    "Remember gamma.",
    "Remember delta.",
    "Remember epsilon.",
];

/// Two turns, a failed turn and its `/retry`, a new turn, quit, `--resume`, a new turn, on
/// the agents `provider` makes (one per launch of the chat, with agentty's retry `retries`
/// times at most): what the model saw at each step is printed, and each later request must
/// carry every earlier prompt (the failed one at least once).
pub async fn a_failure_a_retry_and_a_resume_keep_the_conversation(
    name: &str,
    provider: impl Fn() -> Arc<dyn Provider>,
    cwd: &std::path::Path,
    retries: u32,
    requests: impl Fn() -> Vec<UserTexts>,
    after_failure: impl Fn(),
) {
    let prompts = FIVE_PROMPTS;
    let chat_on = |provider: Arc<dyn Provider>, session: SessionRef| {
        let mut options = OrchestratorOptions::new(provider);
        options.cwd = Some(cwd.to_path_buf());
        options.session = session;
        options.policy.enabled = retries > 1;
        options.policy.max_attempts = retries.max(1);
        options.policy.retry_delay_ms = 10;
        spawn_orchestrator(options)
    };
    let launched = provider();
    let mut chat = chat_on(launched.clone(), SessionRef::New);
    let mut shown = 0;
    let mut session = None;
    for prompt in &prompts[..2] {
        let events = run_turn(&mut chat, Command::Submit((*prompt).into()), TURN_LIMIT).await;
        assert_eq!(outcome(&events), TurnOutcome::Completed, "{events:#?}");
        session = session_of(&events).or(session);
        shown = show(name, prompt, &requests(), shown);
    }
    let failed = run_turn(&mut chat, Command::Submit(prompts[2].into()), TURN_LIMIT).await;
    shown = show(name, "gamma (fails)", &requests(), shown);
    assert!(
        matches!(outcome(&failed), TurnOutcome::Failed { .. }),
        "{failed:#?}"
    );
    let notices: Vec<&Ev> = failed
        .iter()
        .filter(|event| matches!(event, Ev::Notice { .. }))
        .collect();
    eprintln!("{name}: notices of the failed turn: {notices:#?}");
    after_failure();
    let retried = run_turn(&mut chat, Command::RetryLastTurn, TURN_LIMIT).await;
    shown = show(name, "gamma (/retry)", &requests(), shown);
    assert_eq!(outcome(&retried), TurnOutcome::Completed, "{retried:#?}");
    let events = run_turn(&mut chat, Command::Submit(prompts[3].into()), TURN_LIMIT).await;
    shown = show(name, "delta", &requests(), shown);
    assert_eq!(outcome(&events), TurnOutcome::Completed, "{events:#?}");
    session = session_of(&events).or(session);
    let all = requests();
    let delta = all.last().unwrap();
    assert_carries(delta, &[(prompts[0], 1), (prompts[1], 1), (prompts[3], 1)]);
    assert!(
        delta.iter().any(|text| text.contains(prompts[2])),
        "gamma stays in the conversation: {delta:#?}"
    );
    quit(chat, launched).await;

    let session = session.expect("the agent's session id");
    let launched = provider();
    let mut chat = chat_on(launched.clone(), SessionRef::Resume(session));
    let events = run_turn(&mut chat, Command::Submit(prompts[4].into()), TURN_LIMIT).await;
    show(name, "epsilon (after --resume)", &requests(), shown);
    assert_eq!(outcome(&events), TurnOutcome::Completed, "{events:#?}");
    let all = requests();
    let epsilon = all.last().unwrap();
    assert_carries(
        epsilon,
        &[
            (prompts[0], 1),
            (prompts[1], 1),
            (prompts[3], 1),
            (prompts[4], 1),
        ],
    );
    assert!(epsilon.iter().any(|text| text.contains(prompts[2])));
    quit(chat, launched).await;
}

/// Qwen Code or opencode through the sequence above: gamma's requests fail with HTTP 400 until
/// the turn has failed (opencode retries even a 400 by itself), then get through.
async fn any_agent_keeps_the_conversation(agent: Agent) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let failing = Arc::new(AtomicBool::new(true));
    let server = {
        let failing = failing.clone();
        FakeOpenAi::start_failing_with(400, move |text| {
            failing.load(Ordering::SeqCst) && text.contains(FIVE_PROMPTS[2])
        })
        .await
    };
    let rig = Rig::new(agent, server).await;
    a_failure_a_retry_and_a_resume_keep_the_conversation(
        rig.name(),
        || rig.provider(None),
        rig.work.path(),
        1,
        || rig.requests(),
        || failing.store(false, Ordering::SeqCst),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp_any::"]
async fn qwen_a_failure_a_retry_and_a_resume_keep_the_conversation() {
    any_agent_keeps_the_conversation(Agent::Qwen).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp_any::"]
async fn opencode_a_failure_a_retry_and_a_resume_keep_the_conversation() {
    any_agent_keeps_the_conversation(Agent::Opencode).await;
}

// ---- 2. configOptions: opencode's models and modes, chosen and by name ----

/// The `model` of each completion request.
fn request_models(server: &FakeOpenAi) -> Vec<String> {
    server
        .completion_requests()
        .iter()
        .filter_map(|request| request.json()?["model"].as_str().map(str::to_owned))
        .collect()
}

async fn one_turn(
    rig: &Rig,
    provider: &Arc<dyn Provider>,
    prompt: &str,
    session: SessionRef,
    settings: Vec<AgentSetting>,
) -> Vec<AgentMessage> {
    let request = AttemptRequest {
        prompt: prompt.into(),
        session,
        cwd: Some(rig.work.path().to_path_buf()),
        attempt: 1,
        settings,
        ..AttemptRequest::default()
    };
    let mut stream = provider.execute(request, StopControl::new());
    real_cli::collect(&mut stream, TURN_LIMIT).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp_any::"]
async fn opencode_models_and_modes_from_config_options_reach_the_agent() {
    let rig = Rig::new(Agent::Opencode, FakeOpenAi::start().await).await;
    // `--model think`: by the name the agent gives it, not its id `fake/think`.
    let provider = rig.provider(Some("think"));
    let settings = vec![AgentSetting::Model("think".into())];
    let first = one_turn(&rig, &provider, "hello", SessionRef::New, settings).await;
    let id = agent_stream::session_id(&first);
    assert_eq!(
        request_models(&rig.server).last().map(String::as_str),
        Some("think")
    );
    let status = provider.agent_status().unwrap().borrow().clone();
    eprintln!(
        "opencode: models {:?}",
        status
            .models
            .iter()
            .map(|m| (&m.id, &m.name))
            .collect::<Vec<_>>()
    );
    eprintln!(
        "opencode: modes {:?}, current {:?}",
        status.modes.iter().map(|m| &m.id).collect::<Vec<_>>(),
        status.mode
    );
    assert!(
        status.models.iter().any(|model| model.id == "fake/plain"),
        "{status:#?}"
    );
    assert!(
        status.modes.iter().any(|mode| mode.id == "plan"),
        "{status:#?}"
    );
    assert_eq!(status.model.as_deref(), Some("fake/think"));

    assert!(provider.change_setting(AgentSetting::Model("fake/plain".into())));
    assert!(provider.change_setting(AgentSetting::Mode("plan".into())));
    let mut watch = provider.agent_status().unwrap();
    timeout(
        TURN_LIMIT,
        watch.wait_for(|s| {
            s.model.as_deref() == Some("fake/plain") && s.mode.as_deref() == Some("plan")
        }),
    )
    .await
    .expect("the changes in time")
    .unwrap();
    one_turn(
        &rig,
        &provider,
        "hello again",
        SessionRef::Resume(id),
        Vec::new(),
    )
    .await;
    let last = rig
        .server
        .completion_requests()
        .last()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(last["model"], "plain");
    let system = last["messages"].to_string().to_lowercase();
    assert!(
        system.contains("plan"),
        "plan mode reached the request: {system:.400}"
    );
}

// ---- 3. An opencode shell pane with its command ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp_any::"]
async fn opencode_shell_call_is_shown_with_its_command() {
    let rig = Rig::new(Agent::Opencode, FakeOpenAi::start().await).await;
    let provider = rig.provider(Some("fake/tool"));
    let settings = vec![AgentSetting::Model("fake/tool".into())];
    let messages = one_turn(&rig, &provider, "run it", SessionRef::New, settings).await;
    let calls: Vec<(String, serde_json::Value)> = messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolCall { name, input, .. } => Some((name.clone(), input.clone())),
            _ => None,
        })
        .collect();
    eprintln!("opencode: tool calls as shown: {calls:#?}");
    let last = calls.last().expect("a tool call");
    assert_eq!(last.1["command"], "echo hi", "{calls:#?}");
}

/// Two turns, `/rewind` of the conversation to before the second, a new prompt, quit,
/// `--resume`, a prompt: the last request carries the first prompt, the one after the rewind
/// and its own, never the rewound one (Gemini CLI lost the whole conversation here).
pub async fn a_rewind_a_prompt_a_quit_and_a_resume_keep_the_conversation(
    name: &str,
    provider: impl Fn() -> Arc<dyn Provider>,
    cwd: &std::path::Path,
    requests: impl Fn() -> Vec<UserTexts>,
) {
    let chat_on = |provider: Arc<dyn Provider>, session: SessionRef| {
        let mut options = OrchestratorOptions::new(provider);
        options.cwd = Some(cwd.to_path_buf());
        options.session = session;
        spawn_orchestrator(options)
    };
    let launched = provider();
    let mut chat = chat_on(launched.clone(), SessionRef::New);
    let mut session = None;
    let mut shown = 0;
    for prompt in ["Remember alpha.", "Remember beta."] {
        let events = run_turn(&mut chat, Command::Submit(prompt.into()), TURN_LIMIT).await;
        assert_eq!(outcome(&events), TurnOutcome::Completed, "{events:#?}");
        session = session_of(&events).or(session);
        shown = show(name, prompt, &requests(), shown);
    }
    real_cli::rewind_conversation(&mut chat, 2).await;
    let events = run_turn(
        &mut chat,
        Command::Submit("Remember gamma.".into()),
        TURN_LIMIT,
    )
    .await;
    assert_eq!(outcome(&events), TurnOutcome::Completed, "{events:#?}");
    session = session_of(&events).or(session);
    shown = show(name, "gamma (after /rewind)", &requests(), shown);
    quit(chat, launched).await;
    let launched = provider();
    let mut chat = chat_on(
        launched.clone(),
        SessionRef::Resume(session.expect("a session")),
    );
    let events = run_turn(
        &mut chat,
        Command::Submit("What do you remember?".into()),
        TURN_LIMIT,
    )
    .await;
    show(name, "after --resume", &requests(), shown);
    assert_eq!(outcome(&events), TurnOutcome::Completed, "{events:#?}");
    let all = requests();
    assert_carries(
        all.last().unwrap(),
        &[
            ("Remember alpha.", 1),
            ("Remember beta.", 0),
            ("Remember gamma.", 1),
            ("What do you remember?", 1),
        ],
    );
    quit(chat, launched).await;
}
