//! The real pi CLI, end to end through `CliProvider` + `PiBackend` (a real process), against a
//! fake OpenAI-compatible server on 127.0.0.1 that pi reaches through a private
//! `PI_CODING_AGENT_DIR` holding a `models.json`.
//!
//! Opt-in: `#[ignore]`d (`cargo test --test suite -- --ignored real_pi::`). pi comes
//! from npm (`npm install --prefix /tmp/pi-cli @mariozechner/pi-coding-agent`) and is found
//! through `AGENTTY_PI_BIN`, in `/tmp/pi-cli`, or on PATH; with the switch on, a missing pi is
//! a failure.

use crate::support::fake_openai;
use crate::support::real_cli;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentty::config::{PermissionPolicy, ProviderSettings};
use agentty::provider::pi::PiBackend;
use agentty::provider::{
    provider_on, AgentQueue, AgentStream, CliProvider, Interjection, Provider, SessionRef,
    StopControl, Transport,
};
use agentty::stream::{AgentMessage, FailureReason, NoticeKind, StopStage};
use fake_openai::FakeOpenAi;
use real_cli::{
    assert_single_terminal_last, assistant_text, attempt_request, collect, command_line,
    expect_completed, expect_failed, is_alive, messages_until_tool_call, notices, real_cli,
    survivors, test_name, FailFirst, Flaky, RUN_LIMIT,
};

const DEFAULT_BIN: &str = "/tmp/pi-cli/node_modules/.bin/pi";

/// One isolated pi world: HOME, config dir, agentty state dir, working dir, fake server.
struct PiWorld {
    root: tempfile::TempDir,
    pi: PathBuf,
    fake: FakeOpenAi,
}

impl PiWorld {
    async fn new(test: &str) -> PiWorld {
        Self::with_server(test, FakeOpenAi::start().await).await
    }

    async fn with_server(test: &str, fake: FakeOpenAi) -> PiWorld {
        let pi = real_cli(test, "AGENTTY_PI_BIN", DEFAULT_BIN);
        let world = PiWorld {
            root: tempfile::tempdir().unwrap(),
            pi,
            fake,
        };
        for dir in [world.home(), world.agent_dir(), world.work_dir()] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(
            world.agent_dir().join("models.json"),
            world.fake.pi_models_json().to_string(),
        )
        .unwrap();
        let version = std::process::Command::new(&world.pi)
            .arg("--version")
            .stdin(std::process::Stdio::null())
            .output()
            .map(|output| {
                String::from_utf8_lossy(&[output.stdout, output.stderr].concat())
                    .trim()
                    .to_owned()
            })
            .unwrap_or_default();
        eprintln!("pi {version} at {}", world.pi.display());
        world
    }

    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    /// The "user's" pi config dir (what `~/.pi/agent` is for a real user).
    fn agent_dir(&self) -> PathBuf {
        self.home().join(".pi/agent")
    }

    fn state_dir(&self) -> PathBuf {
        self.root.path().join("state")
    }

    fn work_dir(&self) -> PathBuf {
        self.root.path().join("work")
    }

    /// The provider on the transport `AGENTTY_PI_TRANSPORT` names (`json`, the default, or
    /// `rpc`), so that every test here runs on either.
    fn provider(&self, model: &str) -> Arc<dyn Provider> {
        let transport = match std::env::var("AGENTTY_PI_TRANSPORT").as_deref() {
            Ok("rpc") => Transport::Rpc,
            _ => Transport::Json,
        };
        self.provider_on(model, transport, &self.pi)
    }

    fn provider_on(&self, model: &str, transport: Transport, program: &Path) -> Arc<dyn Provider> {
        let backend = Arc::new(
            PiBackend::new(self.settings(model, program)).with_state_dir(self.state_dir()),
        );
        match transport {
            Transport::Json => Arc::new(CliProvider::from_arc(backend)),
            Transport::Rpc => {
                provider_on(backend, Transport::Rpc, PermissionPolicy::Ask).expect("pi speaks rpc")
            }
            _ => unreachable!("pi speaks only its JSON and RPC modes"),
        }
    }

    /// A launcher for pi that appends its PID to `starts` on every start.
    fn counting_launcher(&self, starts: &Path) -> PathBuf {
        let launcher = self.root.path().join("pi-launcher");
        std::fs::write(
            &launcher,
            format!(
                "#!/bin/sh\necho $$ >> '{}'\nexec '{}' \"$@\"\n",
                starts.display(),
                self.pi.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
        launcher
    }

    fn settings(&self, model: &str, program: &Path) -> ProviderSettings {
        let env = [
            ("HOME", self.home().to_string_lossy().into_owned()),
            (
                "PI_CODING_AGENT_DIR",
                self.agent_dir().to_string_lossy().into_owned(),
            ),
            ("PI_OFFLINE", "1".to_owned()),
            ("PI_SKIP_VERSION_CHECK", "1".to_owned()),
            ("PI_TELEMETRY", "0".to_owned()),
            ("NO_COLOR", "1".to_owned()),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect();
        ProviderSettings {
            command: Some(program.to_path_buf()),
            args: Vec::new(),
            env,
            model: Some(format!("fake/{model}")),
            ..ProviderSettings::default()
        }
    }

    fn start(
        &self,
        model: &str,
        prompt: &str,
        session: SessionRef,
        stop: StopControl,
    ) -> AgentStream {
        let request = attempt_request(prompt, session, &self.work_dir());
        self.provider(model).execute(request, stop)
    }

    async fn run(&self, model: &str, prompt: &str, session: SessionRef) -> Vec<AgentMessage> {
        let mut stream = self.start(model, prompt, session, StopControl::new());
        collect(&mut stream, RUN_LIMIT).await
    }

    /// pi over RPC through a launcher that appends its PID to the returned file on every
    /// start.
    fn counted_rpc_provider(&self, model: &str) -> (Arc<dyn Provider>, PathBuf) {
        let starts = self.root.path().join("starts");
        let launcher = self.counting_launcher(&starts);
        (self.provider_on(model, Transport::Rpc, &launcher), starts)
    }

    /// Runs one attempt of `provider` in the working directory to its end.
    async fn run_on(
        &self,
        provider: &dyn Provider,
        prompt: &str,
        session: SessionRef,
    ) -> Vec<AgentMessage> {
        let request = rpc_request(prompt, session, &self.work_dir());
        collect(
            &mut provider.execute(request, StopControl::new()),
            RUN_LIMIT,
        )
        .await
    }
}

/// Waits until pi holds a steer in its queue.
async fn until_steer_queued(queue: &mut tokio::sync::watch::Receiver<AgentQueue>) {
    tokio::time::timeout(
        Duration::from_secs(10),
        queue.wait_for(|queue| !queue.steering.is_empty()),
    )
    .await
    .expect("pi queued the steer")
    .unwrap();
}

/// Reads a stopped attempt to its end into `messages`; fails the test unless it ended
/// `terminal.cancelled`.
async fn read_stopped(stream: &mut AgentStream, messages: &mut Vec<AgentMessage>) {
    messages.extend(collect(stream, RUN_LIMIT).await);
    assert!(
        matches!(messages.last(), Some(AgentMessage::Cancelled { .. })),
        "{messages:#?}"
    );
}

fn assert_completed(messages: &[AgentMessage]) {
    let (stop_reason, usage) = expect_completed(messages);
    assert_eq!(stop_reason, "stop");
    let usage = usage.expect("pi reports usage");
    assert!(usage.input_tokens.unwrap_or(0) >= 1234, "{usage:?}");
}

fn session_id(messages: &[AgentMessage]) -> String {
    match messages.first() {
        Some(AgentMessage::SessionStarted {
            session_id: Some(id),
            ..
        })
        | Some(AgentMessage::SessionResumed { session_id: id, .. }) => id.clone(),
        other => panic!("the stream starts with the session: {other:?}"),
    }
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn text_then_the_session_continues() {
    let world = PiWorld::new(&test_name()).await;
    let messages = world.run("plain", "Please answer.", SessionRef::New).await;
    assert!(
        matches!(&messages[0], AgentMessage::SessionStarted { provider, .. } if provider == "pi")
    );
    assert_eq!(assistant_text(&messages), fake_openai::PLAIN_TEXT);
    assert_completed(&messages);
    let id = session_id(&messages);

    // The session went to the user's session dir, through the private config dir's link.
    let user_sessions = world.agent_dir().join("sessions");
    assert!(
        files_under(&user_sessions)
            .iter()
            .any(|file| file.to_string_lossy().contains(&id)),
        "session {id} is in {}",
        user_sessions.display()
    );

    let resumed = world
        .run("session", "second prompt", SessionRef::Resume(id.clone()))
        .await;
    assert_eq!(
        resumed[0],
        AgentMessage::SessionResumed {
            provider: "pi".into(),
            session_id: id.clone(),
            model: None,
        }
    );
    assert_eq!(
        assistant_text(&resumed),
        "This request carried 2 user message(s)."
    );
    assert_completed(&resumed);

    let continued = world
        .run("session", "third prompt", SessionRef::ContinueLatest)
        .await;
    assert_eq!(session_id(&continued), id);
    assert_eq!(
        assistant_text(&continued),
        "This request carried 3 user message(s)."
    );
    assert_completed(&continued);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn thinking_is_one_thought_after_the_text() {
    let world = PiWorld::new(&test_name()).await;
    let messages = world.run("think", "Please answer.", SessionRef::New).await;
    assert_eq!(assistant_text(&messages), fake_openai::THINK_ANSWER);
    let thoughts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, message)| matches!(message, AgentMessage::Thought { .. }))
        .map(|(index, _)| index)
        .collect();
    assert_eq!(thoughts.len(), 1, "{messages:#?}");
    assert_eq!(
        messages[thoughts[0]],
        AgentMessage::Thought {
            text: fake_openai::THOUGHT.into()
        }
    );
    let last_text = messages
        .iter()
        .rposition(|message| matches!(message, AgentMessage::Assistant { .. }))
        .unwrap();
    assert!(thoughts[0] > last_text, "released when the message ends");
    assert_completed(&messages);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn one_bash_tool_call() {
    let world = PiWorld::new(&test_name()).await;
    let messages = world.run("tool", "Run echo hi", SessionRef::New).await;
    let call = messages
        .iter()
        .position(|message| {
            *message
                == AgentMessage::ToolCall {
                    id: "call_echo_1".into(),
                    name: "bash".into(),
                    input: serde_json::json!({"command": "echo hi"}),
                    parent_id: None,
                }
        })
        .unwrap_or_else(|| panic!("tool.call: {messages:#?}"));
    let completed = messages
        .iter()
        .position(|message| {
            *message
                == AgentMessage::ToolCompleted {
                    id: "call_echo_1".into(),
                    output: "hi\n".into(),
                }
        })
        .unwrap_or_else(|| panic!("tool.completed: {messages:#?}"));
    assert!(call < completed);
    assert_eq!(
        assistant_text(&messages),
        format!("{}{}", fake_openai::TOOL_INTRO, fake_openai::TOOL_ANSWER)
    );
    assert_completed(&messages);
    assert_eq!(world.fake.completion_requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn http_500_fails_after_exactly_one_request() {
    let world = PiWorld::new(&test_name()).await;
    // The user has retries on; agentty's runs must not retry inside pi anyway.
    let user_settings = r#"{"retry":{"enabled":true,"maxRetries":3}}"#;
    std::fs::write(world.agent_dir().join("settings.json"), user_settings).unwrap();

    let messages = world.run("err500", "Please answer.", SessionRef::New).await;
    let failure = expect_failed(&messages);
    assert_eq!(failure.reason, FailureReason::AgentError);
    assert_eq!(failure.message, format!("500 {}", fake_openai::ERROR_500));
    assert_eq!(failure.http_status, Some(500));
    assert_eq!(failure.exit_code, Some(0), "pi exits 0 after an API error");
    assert_eq!(notices(&messages, NoticeKind::AgentRetry.wire()), 0);
    let requests = world.fake.completion_requests();
    assert_eq!(requests.len(), 1, "pi and its SDK did not retry");
    assert_eq!(
        std::fs::read_to_string(world.agent_dir().join("settings.json")).unwrap(),
        user_settings,
        "the user's settings are untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn stop_during_a_sleeping_tool_leaves_no_process() {
    let world = PiWorld::new(&test_name()).await;
    let pid_file = world.root.path().join("sleep.pid");
    let stop = StopControl::new();
    let prompt = format!("Sleep and write your pid to {}", pid_file.display());
    let mut stream = world.start("sleep", &prompt, SessionRef::New, stop.clone());

    let mut messages = messages_until_tool_call(&mut stream, RUN_LIMIT).await;
    let sleep_pid = sleeping_tool_pid(&pid_file).await;
    assert!(is_alive(sleep_pid));

    stop.stop();
    messages.extend(collect(&mut stream, RUN_LIMIT).await);
    eprintln!("stop ended with {:?}", messages.last());
    assert_single_terminal_last(&messages);
    assert!(
        matches!(
            messages.last(),
            Some(AgentMessage::Cancelled {
                stop_stage: StopStage::Cancel
                    | StopStage::Interrupt
                    | StopStage::Grace
                    | StopStage::Kill,
                ..
            })
        ),
        "{messages:#?}"
    );
    // JSON mode: the mapper fails the open call; RPC mode: pi's abort fails it itself.
    assert!(
        messages.contains(&AgentMessage::ToolFailed {
            id: "call_sleep_1".into(),
            error: "stopped before the tool call finished".into(),
        }) || messages.contains(&AgentMessage::ToolFailed {
            id: "call_sleep_1".into(),
            error: "Command aborted".into(),
        }),
        "{messages:#?}"
    );

    // The tree kill runs before the terminal message; allow init a moment to reap.
    let left = survivors([sleep_pid], Duration::from_secs(2)).await;
    assert!(left.is_empty(), "sleep {sleep_pid} survived the stop");
}

// ---- retry never duplicates the prompt (what the model receives) ----

/// A pi world whose fake server fails the first two requests whose last user message is
/// `flaky`.
async fn flaky_world(test: &str, flaky: &str) -> PiWorld {
    let fail = FailFirst::new(2, flaky);
    let fake = FakeOpenAi::start_failing(move |text| fail.take(text)).await;
    PiWorld::with_server(test, fake).await
}

/// pi on `transport` (`None`: the one `AGENTTY_PI_TRANSPORT` names, JSON by default) against a
/// server that fails `flaky` twice.
async fn flaky_pi(test: &str, flaky: &str, transport: Option<Transport>) -> Flaky {
    let world = flaky_world(test, flaky).await;
    let provider = match transport {
        Some(transport) => world.provider_on("session", transport, &world.pi),
        None => world.provider("session"),
    };
    let work = world.work_dir();
    Flaky::new(provider, work, world, |world| {
        world.fake.user_texts_per_request()
    })
}

async fn flaky_json(test: &str, flaky: &str) -> Flaky {
    flaky_pi(test, flaky, None).await
}

async fn flaky_rpc(test: &str, flaky: &str) -> Flaky {
    flaky_pi(test, flaky, Some(Transport::Rpc)).await
}

crate::retry_sends_the_prompt_once!(json_retry: "pi", super::flaky_json, "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)");
crate::retry_sends_the_prompt_once!(rpc_retry: "pi rpc", super::flaky_rpc, "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)");

// ---- the RPC transport: one pi per conversation, steering, in-band stop ----

fn print_requests(label: &str, requests: &[Vec<String>]) {
    eprintln!(
        "{label}: {} requests reached the fake server",
        requests.len()
    );
    for (index, users) in requests.iter().enumerate() {
        eprintln!("  request {}: user messages {users:?}", index + 1);
    }
}

/// On the RPC transport, sends `text` as `how` while the "nap" turn's tool runs and collects
/// the turn to its completion: its messages and the user texts of each request the fake server
/// saw.
async fn interject_during_a_nap(
    test: &str,
    how: Interjection,
    text: &str,
    label: &str,
) -> (Vec<AgentMessage>, Vec<Vec<String>>) {
    let world = PiWorld::new(test).await;
    let provider = world.provider_on("nap", Transport::Rpc, &world.pi);
    let mut stream = provider.execute(
        rpc_request("Take a nap.", SessionRef::New, &world.work_dir()),
        StopControl::new(),
    );
    let mut messages = messages_until_tool_call(&mut stream, RUN_LIMIT).await;
    assert!(provider.interject(how, text));
    messages.extend(collect(&mut stream, RUN_LIMIT).await);
    expect_completed(&messages);
    let requests = world.fake.user_texts_per_request();
    print_requests(label, &requests);
    (messages, requests)
}

/// The pid of the `sleep` that the bash tool started and wrote to `pid_file`, polled for 10 s.
async fn sleeping_tool_pid(pid_file: &Path) -> i32 {
    for _ in 0..200 {
        let pid = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|text| text.trim().parse::<i32>().ok());
        if let Some(pid) = pid.filter(|pid| command_line(*pid).starts_with("sleep")) {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the bash tool started `sleep 100`");
}

fn starts(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

fn rpc_request(prompt: &str, session: SessionRef, cwd: &Path) -> agentty::provider::AttemptRequest {
    attempt_request(prompt, session, cwd)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn rpc_the_second_turn_reaches_the_model_without_a_new_pi_start() {
    let world = PiWorld::new("rpc_the_second_turn_needs_no_new_pi_start").await;
    let (provider, starts_file) = world.counted_rpc_provider("session");
    let first = world
        .run_on(provider.as_ref(), "Remember alpha.", SessionRef::New)
        .await;
    assert_eq!(
        assistant_text(&first),
        "This request carried 1 user message(s)."
    );
    let id = session_id(&first);
    let second = world
        .run_on(
            provider.as_ref(),
            "And beta.",
            SessionRef::Resume(id.clone()),
        )
        .await;
    assert_eq!(session_id(&second), id);
    assert_eq!(
        assistant_text(&second),
        "This request carried 2 user message(s)."
    );
    assert_eq!(starts(&starts_file).len(), 1, "one pi served both turns");
    assert_eq!(world.fake.completion_requests().len(), 2);
    drop(provider);
    let pi = starts(&starts_file)[0];
    assert!(
        survivors([pi], Duration::from_secs(5)).await.is_empty(),
        "pi ends with the provider"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn rpc_a_steer_during_a_sleep_3_tool_arrives_in_the_next_request() {
    let (messages, requests) = interject_during_a_nap(
        "rpc_a_steer_during_a_sleep_3_tool",
        Interjection::Steer,
        "Steer: make it short.",
        "pi rpc, steer",
    )
    .await;
    assert_eq!(
        requests.len(),
        2,
        "the steer rode on the request after the tool"
    );
    assert_eq!(requests[0], ["Take a nap."]);
    assert_eq!(requests[1], ["Take a nap.", "Steer: make it short."]);
    assert_eq!(
        assistant_text(&messages),
        "This request carried 2 user message(s)."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn rpc_a_follow_up_runs_after_the_turn() {
    let (_messages, requests) = interject_during_a_nap(
        &test_name(),
        Interjection::FollowUp,
        "Follow-up: and now?",
        "pi rpc, follow-up",
    )
    .await;
    assert_eq!(
        requests.len(),
        3,
        "the follow-up was a request of its own, after the turn"
    );
    assert_eq!(
        requests[1],
        ["Take a nap."],
        "not delivered during the turn"
    );
    assert_eq!(requests[2], ["Take a nap.", "Follow-up: and now?"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn rpc_abort_during_sleep_100_ends_the_turn_in_band_with_no_process_left() {
    let world = PiWorld::new("rpc_abort_during_sleep_100").await;
    let (provider, starts_file) = world.counted_rpc_provider("sleep");
    let pid_file = world.root.path().join("sleep.pid");
    let stop = StopControl::new();
    let prompt = format!("Sleep and write your pid to {}", pid_file.display());
    let mut stream = provider.execute(
        rpc_request(&prompt, SessionRef::New, &world.work_dir()),
        stop.clone(),
    );
    let mut messages = messages_until_tool_call(&mut stream, RUN_LIMIT).await;
    let sleep_pid = sleeping_tool_pid(&pid_file).await;
    stop.stop();
    messages.extend(collect(&mut stream, RUN_LIMIT).await);
    assert_single_terminal_last(&messages);
    let Some(AgentMessage::Cancelled {
        stop_stage,
        elapsed_ms,
    }) = messages.last()
    else {
        panic!("{messages:#?}");
    };
    eprintln!("pi rpc abort during sleep 100: the turn ended {elapsed_ms} ms after the stop");
    assert_eq!(
        *stop_stage,
        StopStage::Cancel,
        "ended in-band, no signal needed"
    );
    assert!(messages.contains(&AgentMessage::ToolFailed {
        id: "call_sleep_1".into(),
        error: "Command aborted".into(),
    }));
    let left = survivors([sleep_pid], Duration::from_secs(2)).await;
    assert!(left.is_empty(), "sleep {sleep_pid} survived the abort");
    let pi = starts(&starts_file)[0];
    assert!(is_alive(pi), "pi stays for the next turn");
    drop(stream);
    drop(provider);
    assert!(survivors([pi], Duration::from_secs(5)).await.is_empty());
}

/// pi's RPC mode (its default transport in the chat): A fails twice then succeeds, B, C fails
/// twice then succeeds, D, on one conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn rpc_two_retried_turns_keep_the_conversation() {
    let test = &test_name();
    let prompts = real_cli::four_prompts("pi-rpc");
    let fail = real_cli::fail_a_and_c_twice(&prompts);
    let fake = FakeOpenAi::start_failing(fail).await;
    let world = PiWorld::with_server(test, fake).await;
    let provider = world.provider_on("session", Transport::Rpc, &world.pi);
    real_cli::two_retried_turns_keep_the_conversation(
        "pi rpc",
        test,
        provider,
        &world.work_dir(),
        &prompts,
        || world.fake.user_texts_per_request(),
    )
    .await;
}

/// pi's JSON transport writes nothing before the model's first answer, so a first turn stopped
/// mid-answer used to vanish from the conversation; agentty writes the session pi would have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn a_stopped_first_turn_stays_in_the_conversation() {
    let test = &test_name();
    let world = PiWorld::new(test).await;
    let prompts = real_cli::first_stop_prompts("pi");
    real_cli::a_stopped_first_turn_stays_in_the_conversation(
        "pi",
        test,
        world.provider("session"),
        &world.work_dir(),
        &prompts,
        || world.fake.user_texts_per_request(),
    )
    .await;
}

// ---- /rewind: the agent's conversation goes back to before an earlier prompt ----

/// Three turns in one pi session (over RPC, as the chat runs it), a rewind of the conversation
/// (and the files) to before the second, then a fourth prompt: the request pi sends for it
/// carries the first prompt and the fourth, not the two rewound away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn rpc_after_a_rewind_the_next_request_no_longer_carries_the_rewound_prompts() {
    use agentty::orchestrator::{spawn_orchestrator, Command, OrchestratorOptions};

    let test = &test_name();
    let world = PiWorld::new(test).await;
    let mut options =
        OrchestratorOptions::new(world.provider_on("session", Transport::Rpc, &world.pi));
    options.cwd = Some(world.work_dir());
    options.snapshots = Some(agentty::snapshot::SnapshotSetup {
        root: world.work_dir(),
        dir: world.state_dir().join("snapshots/rewind"),
        state: world.state_dir(),
        limits: agentty::snapshot::SnapshotLimits::default(),
    });
    let mut chat = spawn_orchestrator(options);
    let prompts = [
        "Remember alpha.",
        "Remember beta.",
        "Remember gamma.",
        "What do you remember?",
    ];
    for prompt in &prompts[..3] {
        real_cli::assert_turn(&real_cli::run_turn(&mut chat, prompt).await, 1);
    }
    let rewind = real_cli::rewound(
        &mut chat,
        Command::Rewind(agentty::orchestrator::RewindAsked {
            turn: 2,
            conversation: true,
            files: true,
            overwrite: false,
            undone: false,
        }),
    )
    .await;
    assert_eq!(rewind.conversation, Some(Ok(())), "{rewind:?}");
    real_cli::assert_turn(&real_cli::run_turn(&mut chat, prompts[3]).await, 1);
    let requests = world.fake.user_texts_per_request();
    print_requests(test, &requests);
    assert_eq!(requests.len(), 4, "{requests:#?}");
    real_cli::assert_carries(
        requests.last().unwrap(),
        &[
            (prompts[0], 1),
            (prompts[1], 0),
            (prompts[2], 0),
            (prompts[3], 1),
        ],
    );
}

/// A steer sent during a tool that the user then stops must not reach the model with the next
/// prompt (the fake server's request log shows what pi sent).
///
/// pi 0.73.1 polls its steering queue after the aborted tool step: it takes the steer off its
/// queue and writes it into the stopped turn's session, where the next request would carry it
/// (`["Sleep ...", "Steer: my steer.", "And now?"]`). agentty takes it back: out of the session
/// file, which the same pi re-reads (`switch_session`, no cold start), and back to the user as
/// `not_delivered`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn rpc_a_steer_left_queued_by_a_stop_does_not_reach_the_next_request() {
    let world = PiWorld::new("rpc_a_steer_left_queued_by_a_stop").await;
    let (provider, starts_file) = world.counted_rpc_provider("sleep");
    let mut queue = provider.agent_queue().expect("rpc has a queue");
    let pid_file = world.root.path().join("sleep.pid");
    let stop = StopControl::new();
    let prompt = format!("Sleep and write your pid to {}", pid_file.display());
    let mut stream = provider.execute(
        rpc_request(&prompt, SessionRef::New, &world.work_dir()),
        stop.clone(),
    );
    let mut messages = messages_until_tool_call(&mut stream, RUN_LIMIT).await;
    sleeping_tool_pid(&pid_file).await;
    assert!(provider.interject(Interjection::Steer, "Steer: my steer."));
    until_steer_queued(&mut queue).await;
    stop.stop();
    read_stopped(&mut stream, &mut messages).await;
    let notices: Vec<&AgentMessage> = messages
        .iter()
        .filter(|message| matches!(message, AgentMessage::Notice { .. }))
        .collect();
    eprintln!("notices of the stopped turn: {notices:?}");
    assert_eq!(
        notices,
        [&AgentMessage::notice(
            NoticeKind::NotDelivered,
            "Steer: my steer."
        )],
        "given back, never said delivered"
    );
    let id = session_id(&messages);
    let next = world
        .run_on(
            provider.as_ref(),
            "And now?",
            SessionRef::Resume(id.clone()),
        )
        .await;
    assert!(
        matches!(next.last(), Some(AgentMessage::Completed { .. })),
        "{next:#?}"
    );
    assert_eq!(session_id(&next), id, "the conversation goes on");
    let requests = world.fake.user_texts_per_request();
    print_requests("pi rpc, steer left by a stop", &requests);
    let last = requests.last().expect("the next prompt reached the model");
    assert_eq!(last.last().map(String::as_str), Some("And now?"));
    assert!(
        requests
            .iter()
            .all(|users| !users.iter().any(|text| text.contains("my steer"))),
        "the steer reached the model: {requests:?}"
    );
    assert_eq!(starts(&starts_file).len(), 1, "the same pi went on");
}

// ---- what a turn changed, and /undo, with pi's own bash tool ----

/// pi's bash tool runs `printf 'v2\n' > notes.txt` (over RPC, as the chat runs it): the turn's
/// `turn.changes` names notes.txt modified (+1 −1), and `/undo` puts "v1" back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn rpc_a_bash_edit_is_summed_up_and_undone() {
    use agentty::orchestrator::{
        spawn_orchestrator, Command, OrchestratorEvent, OrchestratorOptions,
    };
    use agentty::stream::{ChangeStatus, FileChange};

    let test = &test_name();
    let world = PiWorld::new(test).await;
    let notes = world.work_dir().join("notes.txt");
    std::fs::write(&notes, "v1\n").unwrap();
    let mut options =
        OrchestratorOptions::new(world.provider_on("edit", Transport::Rpc, &world.pi));
    options.cwd = Some(world.work_dir());
    options.snapshots = Some(agentty::snapshot::SnapshotSetup {
        root: world.work_dir(),
        dir: world.state_dir().join("snapshots/edit"),
        state: world.state_dir(),
        limits: agentty::snapshot::SnapshotLimits::default(),
    });
    let mut chat = spawn_orchestrator(options);
    let events = real_cli::run_turn(&mut chat, "Write v2 into notes.txt").await;
    real_cli::assert_turn(&events, 1);
    assert!(
        events.iter().any(|event| matches!(
            event,
            OrchestratorEvent::Message { message: AgentMessage::ToolCall { name, input, .. }, .. }
                if name == "bash" && input["command"] == fake_openai::EDIT_COMMAND
        )),
        "pi ran the bash call: {events:#?}"
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "v2\n");
    // The snapshot after the turn is taken once it has ended: `turn.changes` follows.
    let changes = loop {
        let event = tokio::time::timeout(RUN_LIMIT, chat.events.recv())
            .await
            .expect("turn.changes comes")
            .expect("the orchestrator runs");
        if let OrchestratorEvent::TurnChanges { files, .. } = event {
            break files;
        }
    };
    eprintln!("turn.changes: {changes:?}");
    assert_eq!(
        changes,
        [FileChange {
            path: "notes.txt".into(),
            status: ChangeStatus::Modified,
            added: 1,
            removed: 1,
            ..FileChange::default()
        }],
    );
    let turn = match events.last() {
        Some(OrchestratorEvent::TurnEnded { turn, .. }) => *turn,
        other => panic!("{other:?}"),
    };
    chat.commands
        .send(Command::UndoTurn {
            turn,
            overwrite: false,
        })
        .unwrap();
    let outcome = loop {
        let event = tokio::time::timeout(RUN_LIMIT, chat.events.recv())
            .await
            .expect("the undo is answered")
            .expect("the orchestrator runs");
        if let OrchestratorEvent::Undone { outcome, .. } = event {
            break outcome;
        }
    };
    eprintln!("{}", agentty::snapshot::describe_undo(&outcome));
    assert_eq!(outcome.unwrap().restored, ["notes.txt"]);
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "v1\n");
}

// ---- steering and the stop (issue 28): what reaches the model after Esc ----

/// The messages of `stream` up to and including the first that `wanted` accepts, within
/// [`RUN_LIMIT`].
async fn messages_until(
    stream: &mut AgentStream,
    wanted: impl Fn(&AgentMessage) -> bool,
) -> Vec<AgentMessage> {
    use futures::StreamExt;
    let mut messages = Vec::new();
    loop {
        match tokio::time::timeout(RUN_LIMIT, stream.next()).await {
            Ok(Some(message)) => {
                let found = wanted(&message);
                messages.push(message);
                if found {
                    return messages;
                }
            }
            other => panic!("not seen ({other:?}): {messages:#?}"),
        }
    }
}

/// A steer pi delivered before the stop (the model's request carried it and the model began
/// to answer) stays: it is not given back, and the next request carries it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn rpc_a_steer_delivered_before_a_stop_stays_in_the_conversation() {
    let world = PiWorld::new("rpc_a_steer_delivered_before_a_stop").await;
    let provider = world.provider_on("nap", Transport::Rpc, &world.pi);
    let stop = StopControl::new();
    let mut stream = provider.execute(
        rpc_request("Take a nap.", SessionRef::New, &world.work_dir()),
        stop.clone(),
    );
    let mut messages = messages_until_tool_call(&mut stream, RUN_LIMIT).await;
    // The steer asks the fake model to answer slowly, so the stop lands mid-answer.
    let steer = format!("Steer: {}.", fake_openai::SLOW_PLEASE);
    assert!(provider.interject(Interjection::Steer, &steer));
    messages.extend(
        messages_until(&mut stream, |message| {
            matches!(message, AgentMessage::Assistant { .. })
        })
        .await,
    );
    stop.stop();
    read_stopped(&mut stream, &mut messages).await;
    assert_eq!(notices(&messages, NoticeKind::SteerDelivered.wire()), 1);
    assert_eq!(notices(&messages, NoticeKind::NotDelivered.wire()), 0);
    let id = session_id(&messages);
    let next = world
        .run_on(provider.as_ref(), "And now?", SessionRef::Resume(id))
        .await;
    expect_completed(&next);
    let requests = world.fake.user_texts_per_request();
    print_requests("pi rpc, steer delivered before a stop", &requests);
    assert_eq!(
        requests.last().unwrap(),
        &["Take a nap.", steer.as_str(), "And now?"],
        "the delivered steer is part of the conversation"
    );
}

/// A steer still in pi's queue when the user stops a streaming answer (pi takes steering only
/// after a step, and an aborted answer ends the loop): given back, and the same pi re-reads
/// its session, which leaves its queue behind: the next request carries no steer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn rpc_a_steer_queued_during_a_stopped_answer_does_not_reach_the_next_request() {
    let world = PiWorld::new("rpc_a_steer_queued_during_a_stopped_answer").await;
    let (provider, starts_file) = world.counted_rpc_provider("session");
    let mut queue = provider.agent_queue().expect("rpc has a queue");
    let stop = StopControl::new();
    let prompt = format!("Count, {}.", fake_openai::SLOW_PLEASE);
    let mut stream = provider.execute(
        rpc_request(&prompt, SessionRef::New, &world.work_dir()),
        stop.clone(),
    );
    let mut messages = messages_until(&mut stream, |message| {
        matches!(message, AgentMessage::Assistant { .. })
    })
    .await;
    assert!(provider.interject(Interjection::Steer, "Steer: my steer."));
    until_steer_queued(&mut queue).await;
    stop.stop();
    read_stopped(&mut stream, &mut messages).await;
    assert_eq!(notices(&messages, NoticeKind::NotDelivered.wire()), 1);
    let id = session_id(&messages);
    let next = world
        .run_on(
            provider.as_ref(),
            "And now?",
            SessionRef::Resume(id.clone()),
        )
        .await;
    expect_completed(&next);
    assert_eq!(session_id(&next), id, "the conversation goes on");
    let requests = world.fake.user_texts_per_request();
    print_requests("pi rpc, steer queued during a stopped answer", &requests);
    assert_eq!(
        requests.last().unwrap(),
        &[prompt.as_str(), "And now?"],
        "{requests:?}"
    );
    assert_eq!(starts(&starts_file).len(), 1, "the same pi went on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn rpc_an_attached_image_reaches_the_model_as_an_image_url() {
    let world = PiWorld::new("rpc_an_attached_image_reaches_the_model").await;
    // pi sends images only to a model that takes them (else a placeholder text).
    let mut models = world.fake.pi_models_json();
    for model in models["providers"]["fake"]["models"]
        .as_array_mut()
        .unwrap()
    {
        model["input"] = serde_json::json!(["text", "image"]);
    }
    std::fs::write(world.agent_dir().join("models.json"), models.to_string()).unwrap();
    let image = real_cli::one_pixel_png(&world.work_dir());
    let provider = world.provider_on("plain", Transport::Rpc, &world.pi);
    let mut request = rpc_request("What is in this image?", SessionRef::New, &world.work_dir());
    request.images = vec![image.clone()];
    let messages = collect(
        &mut provider.execute(request, StopControl::new()),
        RUN_LIMIT,
    )
    .await;
    expect_completed(&messages);
    let requests = world.fake.completion_requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].json().unwrap();
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|message| message["role"] == "user")
        .unwrap()
        .clone();
    let urls: Vec<&str> = user["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| part["image_url"]["url"].as_str())
        .collect();
    assert_eq!(
        urls,
        [format!("data:image/png;base64,{}", image.base64())],
        "{user}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_pi:: (README, Tests)"]
async fn rpc_compact_summarises_and_the_next_prompt_carries_the_summary() {
    let world = PiWorld::new("rpc_compact_summarises").await;
    // Keep no recent turn whole: everything before the compaction is summarised.
    std::fs::write(
        world.agent_dir().join("settings.json"),
        r#"{"compaction": {"keepRecentTokens": 1}}"#,
    )
    .unwrap();
    let provider = world.provider_on("session", Transport::Rpc, &world.pi);
    let first = world
        .run_on(provider.as_ref(), "Remember alpha.", SessionRef::New)
        .await;
    let id = session_id(&first);
    let session = || SessionRef::Resume(id.clone());
    collect(
        &mut provider.execute(
            rpc_request("And beta.", session(), &world.work_dir()),
            StopControl::new(),
        ),
        RUN_LIMIT,
    )
    .await;
    assert!(provider.can_compact());
    let compacted = collect(
        &mut provider.compact(
            rpc_request("", session(), &world.work_dir()),
            Some("Keep the words.".into()),
            StopControl::new(),
        ),
        RUN_LIMIT,
    )
    .await;
    assert_single_terminal_last(&compacted);
    expect_completed(&compacted);
    assert_eq!(notices(&compacted, "compacted"), 1, "{compacted:?}");
    // Two prompts, then pi's summarisation request(s) (pi 0.73.1 makes two when the cut
    // splits a turn: the history's summary and the turn prefix's).
    let summarising: Vec<String> = world.fake.user_texts_per_request()[2..]
        .iter()
        .map(|texts| texts.join("\n"))
        .collect();
    assert!(!summarising.is_empty(), "a summarisation request was made");
    assert!(
        summarising
            .iter()
            .any(|text| text.contains("Keep the words.") && text.contains("Remember alpha.")),
        "{summarising:#?}"
    );

    let next = collect(
        &mut provider.execute(
            rpc_request("And gamma.", session(), &world.work_dir()),
            StopControl::new(),
        ),
        RUN_LIMIT,
    )
    .await;
    expect_completed(&next);
    let users = world.fake.user_texts_per_request().pop().unwrap();
    eprintln!("after the compaction the model received: {users:#?}");
    assert!(
        !users.iter().any(|text| text == "Remember alpha."),
        "the earlier prompt is summarised, not sent again: {users:?}"
    );
    assert_eq!(users.last().map(String::as_str), Some("And gamma."));
}
