//! The ACP transport on real processes: the demo agent in `--mode acp` (a scripted ACP agent)
//! behind the real ACP provider, mapper and process layer, and through the orchestrator.

use crate::support::agent_stream;
use crate::support::demo_launcher;

use demo_launcher::DemoLauncher;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::time::timeout;

use agent_stream::{
    alive, collect, read_until, resolutions, session_id, terminals, text, turn_end, wait_gone,
    PATIENCE,
};
use agentty::config::{PermissionPolicy, ProviderSettings};
use agentty::demo_agent::state::{requests_file, DemoRequest};
use agentty::orchestrator::{
    spawn_orchestrator, Command, OrchestratorEvent as Ev, OrchestratorOptions, TurnOutcome,
};
use agentty::provider::{
    build_provider_with, AgentStream, AttemptRequest, Provider, SessionRef, StopControl, Transport,
};
use agentty::stream::{
    AgentMessage, FailureReason, NoticeKind, PermissionRequest, PermissionResolver, StopStage,
    PERMISSION_CANCELLED,
};

/// The demo agent in ACP mode behind the ACP provider.
struct AcpWorld {
    demo: DemoLauncher,
    provider: Arc<dyn Provider>,
}

impl AcpWorld {
    fn new(args: &[&str], policy: PermissionPolicy) -> Self {
        let demo = DemoLauncher::new();
        let settings = ProviderSettings {
            permissions: Some(policy),
            ..demo.settings(args, "0.1")
        };
        let provider = build_provider_with("demo", &settings, Transport::Acp).unwrap();
        Self { demo, provider }
    }

    /// A world whose agent plays `scenario` for every prompt.
    fn playing(scenario: &str) -> Self {
        Self::new(&["--scenario", scenario], PermissionPolicy::Ask)
    }

    fn starts(&self) -> Vec<i32> {
        self.demo.starts()
    }

    fn request(&self, prompt: &str, session: SessionRef) -> AttemptRequest {
        AttemptRequest {
            prompt: prompt.into(),
            session,
            cwd: Some(self.demo.state.path().to_path_buf()),
            attempt: 1,
            ..AttemptRequest::default()
        }
    }

    fn execute(&self, prompt: &str, session: SessionRef, stop: &StopControl) -> AgentStream {
        self.provider
            .execute(self.request(prompt, session), stop.clone())
    }

    async fn turn(&self, prompt: &str, session: SessionRef) -> Vec<AgentMessage> {
        collect(self.execute(prompt, session, &StopControl::new())).await
    }

    fn requests(&self) -> Vec<DemoRequest> {
        std::fs::read_to_string(requests_file(self.demo.state.path()))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    /// The demo tools' `sleep 100` processes of this world still alive.
    fn sleepers(&self) -> Vec<i32> {
        self.demo.sleepers()
    }
}

fn asked(messages: &[AgentMessage]) -> &PermissionRequest {
    messages
        .iter()
        .find_map(|message| match message {
            AgentMessage::PermissionRequest(request) => Some(&**request),
            _ => None,
        })
        .expect("a permission request")
}

fn completed(messages: &[AgentMessage]) -> bool {
    matches!(terminals(messages)[..], [AgentMessage::Completed { .. }])
}

#[tokio::test]
async fn two_turns_run_on_one_process_in_one_session() {
    let world = AcpWorld::playing("hello");
    let first = world.turn("hi", SessionRef::New).await;
    assert!(completed(&first), "{first:?}");
    assert!(matches!(first[0], AgentMessage::SessionStarted { .. }));
    assert!(!text(&first).is_empty());
    let id = session_id(&first);
    let second = world.turn("again", SessionRef::Resume(id.clone())).await;
    assert!(completed(&second), "{second:?}");
    assert!(
        matches!(&second[0], AgentMessage::SessionResumed { session_id, .. } if *session_id == id)
    );
    assert_eq!(
        world.starts().len(),
        1,
        "one agent process for the conversation"
    );
    let requests = world.requests();
    assert_eq!(requests.last().unwrap().messages, ["hi", "again"]);
}

#[tokio::test]
async fn an_allowed_permission_runs_the_tool() {
    let world = AcpWorld::playing("permission");
    let mut stream = world.execute("make the file", SessionRef::New, &StopControl::new());
    let before = read_until(&mut stream, |message| {
        matches!(message, AgentMessage::PermissionRequest(_))
    })
    .await;
    let request = asked(&before);
    assert_eq!(request.command.as_deref(), Some("touch agentty-demo.txt"));
    assert_eq!(request.options.len(), 4);
    assert!(
        !world.demo.state.path().join("agentty-demo.txt").exists(),
        "nothing runs before the answer"
    );
    assert!(world
        .provider
        .answer_permission(&request.id, Some("allow_once".into()), None));
    let after = collect(stream).await;
    assert_eq!(
        resolutions(&after),
        [("allow_once".to_owned(), PermissionResolver::User)]
    );
    assert!(after
        .iter()
        .any(|message| matches!(message, AgentMessage::ToolCompleted { .. })));
    assert!(completed(&after), "{after:?}");
    assert!(
        world.demo.state.path().join("agentty-demo.txt").exists(),
        "the tool ran"
    );
}

#[tokio::test]
async fn a_rejected_permission_never_runs_the_tool() {
    let world = AcpWorld::playing("permission");
    let mut stream = world.execute("make the file", SessionRef::New, &StopControl::new());
    let before = read_until(&mut stream, |message| {
        matches!(message, AgentMessage::PermissionRequest(_))
    })
    .await;
    let id = asked(&before).id.clone();
    // An option the agent did not offer is not an answer: the request still waits.
    world
        .provider
        .answer_permission(&id, Some("not-offered".into()), None);
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The user's note is recorded with the answer (ACP itself has no place for it).
    assert!(world.provider.answer_permission(
        &id,
        Some("reject_once".into()),
        Some("use mkdir instead".into())
    ));
    let after = collect(stream).await;
    assert_eq!(
        resolutions(&after),
        [("reject_once".to_owned(), PermissionResolver::User)]
    );
    assert!(after.iter().any(|message| matches!(
        message,
        AgentMessage::PermissionResolved { message: Some(note), .. } if note == "use mkdir instead"
    )));
    assert!(after
        .iter()
        .any(|message| matches!(message, AgentMessage::ToolFailed { .. })));
    assert!(completed(&after), "{after:?}");
    assert!(!world.demo.state.path().join("agentty-demo.txt").exists());
}

#[tokio::test]
async fn a_stop_while_asked_answers_cancelled_and_keeps_the_agent() {
    let world = AcpWorld::new(&[], PermissionPolicy::Ask);
    let stop = StopControl::new();
    let mut stream = world.execute("permission to make the file", SessionRef::New, &stop);
    let before = read_until(&mut stream, |message| {
        matches!(message, AgentMessage::PermissionRequest(_))
    })
    .await;
    let id = session_id(&before);
    stop.stop();
    let after = collect(stream).await;
    assert_eq!(
        resolutions(&after),
        [(PERMISSION_CANCELLED.to_owned(), PermissionResolver::User)]
    );
    assert!(
        matches!(
            terminals(&after)[..],
            [AgentMessage::Cancelled {
                stop_stage: StopStage::Cancel,
                ..
            }]
        ),
        "{after:?}"
    );
    assert!(!world.demo.state.path().join("agentty-demo.txt").exists());
    let agent = world.starts()[0];
    assert!(alive(agent), "an in-band cancel keeps the agent");
    let next = world.turn("hello", SessionRef::Resume(id)).await;
    assert!(completed(&next), "{next:?}");
    assert_eq!(world.starts().len(), 1);
}

#[tokio::test]
async fn a_deny_policy_refuses_without_asking_and_says_how_to_allow() {
    let world = AcpWorld::new(&["--scenario", "permission"], PermissionPolicy::Deny);
    let messages = world.turn("make the file", SessionRef::New).await;
    assert_eq!(
        resolutions(&messages),
        [("reject_once".to_owned(), PermissionResolver::Policy)]
    );
    let notice = messages
        .iter()
        .find_map(|message| match message {
            AgentMessage::Notice { kind, message } if *kind == NoticeKind::PermissionRefused => {
                Some(message.clone())
            }
            _ => None,
        })
        .expect("a notice of the refusal");
    assert!(
        notice.contains("touch agentty-demo.txt") && notice.contains("--permissions allow"),
        "{notice}"
    );
    assert!(completed(&messages));
    assert!(!world.demo.state.path().join("agentty-demo.txt").exists());
}

#[tokio::test]
async fn an_allow_policy_runs_the_tool_without_asking() {
    let world = AcpWorld::new(&["--scenario", "permission"], PermissionPolicy::Allow);
    let messages = world.turn("make the file", SessionRef::New).await;
    assert_eq!(
        resolutions(&messages),
        [("allow_once".to_owned(), PermissionResolver::Policy)]
    );
    assert!(world.demo.state.path().join("agentty-demo.txt").exists());
}

#[tokio::test]
async fn a_stop_during_a_sleeping_tool_leaves_no_process() {
    let world = AcpWorld::playing("sleep");
    let stop = StopControl::new();
    let mut stream = world.execute("sleep", SessionRef::New, &stop);
    read_until(&mut stream, |message| {
        matches!(message, AgentMessage::ToolCall { .. })
    })
    .await;
    let deadline = Instant::now() + PATIENCE;
    while world.sleepers().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let sleepers = world.sleepers();
    assert!(!sleepers.is_empty(), "the tool runs");
    stop.stop();
    let after = collect(stream).await;
    assert!(
        matches!(terminals(&after)[..], [AgentMessage::Cancelled { .. }]),
        "{after:?}"
    );
    for pid in sleepers {
        assert!(wait_gone(pid).await, "sleep {pid} outlived the stop");
    }
    assert!(
        alive(world.starts()[0]),
        "the agent stays for the next turn"
    );
}

#[tokio::test]
async fn an_ignored_cancel_escalates_to_the_signal_stages_and_the_next_turn_loads_the_session() {
    let world = AcpWorld::new(
        &["--scenario", "ignore-cancel", "--stay-on-eof"],
        PermissionPolicy::Ask,
    );
    let stop = StopControl::new();
    let mut stream = world.execute("go", SessionRef::New, &stop);
    let before = read_until(&mut stream, |message| {
        matches!(message, AgentMessage::Assistant { .. })
    })
    .await;
    let id = session_id(&before);
    let agent = world.starts()[0];
    stop.stop();
    let after = collect(stream).await;
    let [AgentMessage::Cancelled {
        stop_stage,
        elapsed_ms,
    }] = terminals(&after)[..]
    else {
        panic!("not cancelled: {after:?}");
    };
    // The cancel did not end the turn: after its grace, the signal stages did.
    assert!(
        *elapsed_ms >= 2000,
        "stage 0 waited its grace: {elapsed_ms} ms ({stop_stage:?})"
    );
    assert!(wait_gone(agent).await, "the agent was stopped");
    let next = world.turn("hello", SessionRef::Resume(id.clone())).await;
    assert!(
        matches!(&next[0], AgentMessage::SessionResumed { session_id, .. } if *session_id == id),
        "{next:?}"
    );
    assert_eq!(world.starts().len(), 2, "the agent started again");
}

#[tokio::test]
async fn bad_lines_unknown_updates_and_stray_responses_never_end_the_turn() {
    for scenario in ["malformed", "unknown-update", "stray-response"] {
        let world = AcpWorld::playing(scenario);
        let messages = world.turn("go", SessionRef::New).await;
        assert!(completed(&messages), "{scenario}: {messages:?}");
        assert!(!text(&messages).is_empty(), "{scenario}");
    }
}

#[tokio::test]
async fn an_agent_that_exits_mid_turn_fails_the_attempt_and_the_next_loads_the_session() {
    let world = AcpWorld::new(&[], PermissionPolicy::Ask);
    let first = world.turn("hello", SessionRef::New).await;
    let id = session_id(&first);
    let failed = world
        .turn("exit-mid-turn please", SessionRef::Resume(id.clone()))
        .await;
    let [AgentMessage::Failed(failure)] = terminals(&failed)[..] else {
        panic!("not failed: {failed:?}");
    };
    assert_eq!(failure.exit_code, Some(3));
    assert!(!failure.text.is_empty(), "the text so far is kept");
    let next = world.turn("hello again", SessionRef::Resume(id)).await;
    assert!(completed(&next), "{next:?}");
    assert_eq!(world.starts().len(), 2);
}

#[tokio::test]
async fn a_prompt_error_is_the_agents_failure_with_its_status() {
    let world = AcpWorld::playing("error");
    let messages = world.turn("go", SessionRef::New).await;
    let [AgentMessage::Failed(failure)] = terminals(&messages)[..] else {
        panic!("not failed: {messages:?}");
    };
    assert_eq!(failure.reason, FailureReason::AgentError);
    assert_eq!(failure.http_status, Some(500));
    assert!(
        failure.message.contains("fake overload"),
        "{}",
        failure.message
    );
}

#[tokio::test]
async fn a_missing_agent_is_a_start_failure() {
    let settings = ProviderSettings {
        command: Some("/nonexistent/acp-agent".into()),
        ..ProviderSettings::default()
    };
    let provider = build_provider_with("demo", &settings, Transport::Acp).unwrap();
    let messages = collect(provider.execute(AttemptRequest::default(), StopControl::new())).await;
    let [AgentMessage::Failed(failure)] = &messages[..] else {
        panic!("{messages:?}");
    };
    assert_eq!(failure.reason, FailureReason::StartFailed);
}

#[tokio::test]
async fn dropping_the_provider_ends_an_agent_that_ignores_eof() {
    let world = AcpWorld::new(&["--stay-on-eof"], PermissionPolicy::Ask);
    world.turn("hello", SessionRef::New).await;
    let agent = world.starts()[0];
    assert!(alive(agent));
    drop(world.provider);
    assert!(wait_gone(agent).await, "the agent outlived its provider");
}

#[tokio::test]
async fn a_retried_middle_turn_reaches_the_agent_with_its_prompt_once() {
    let world = AcpWorld::new(&[], PermissionPolicy::Ask);
    let mut options = OrchestratorOptions::new(world.provider.clone());
    options.cwd = Some(world.demo.state.path().to_path_buf());
    options.policy.enabled = true;
    options.policy.max_attempts = 3;
    options.policy.retry_delay_ms = 10;
    let mut handle = spawn_orchestrator(options);
    handle
        .commands
        .send(Command::Submit("hello".into()))
        .unwrap();
    assert_eq!(turn_end(&mut handle, false).await, TurnOutcome::Completed);
    handle
        .commands
        .send(Command::Submit("flaky one".into()))
        .unwrap();
    assert_eq!(turn_end(&mut handle, false).await, TurnOutcome::Completed);
    let requests = world.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    assert_eq!(
        requests[1].messages,
        ["hello", "flaky one"],
        "the failed attempt"
    );
    assert_eq!(
        requests[2].messages,
        ["hello", "flaky one"],
        "the retry sees the prompt once: {requests:#?}"
    );
    assert_eq!(
        world.starts().len(),
        2,
        "the retry loaded the restored session in a new agent"
    );
}

#[tokio::test]
async fn the_turn_after_a_stop_gets_its_own_answer_from_an_agent_that_answers_late() {
    let world = AcpWorld::new(&[], PermissionPolicy::Ask);
    let mut options = OrchestratorOptions::new(world.provider.clone());
    options.cwd = Some(world.demo.state.path().to_path_buf());
    options.scenario = Some("lag-after-cancel".into());
    let mut handle = spawn_orchestrator(options);
    handle
        .commands
        .send(Command::Submit("first".into()))
        .unwrap();
    assert_eq!(turn_end(&mut handle, true).await, TurnOutcome::Cancelled);
    handle
        .commands
        .send(Command::Submit("second".into()))
        .unwrap();
    let mut answer = String::new();
    loop {
        let event = timeout(PATIENCE, handle.events.recv())
            .await
            .unwrap()
            .unwrap();
        match event {
            Ev::Message {
                message: AgentMessage::Assistant { delta },
                ..
            } => answer.push_str(&delta),
            Ev::TurnEnded { outcome, .. } => {
                assert_eq!(outcome, TurnOutcome::Completed);
                break;
            }
            _ => {}
        }
    }
    assert!(!answer.is_empty(), "the turn after the stop got an answer");
    assert!(
        !answer.contains("\"first\""),
        "not the stopped turn's late answer: {answer}"
    );
}

#[tokio::test]
async fn a_later_launch_loads_the_session_and_the_agent_sees_its_history_once() {
    let world = AcpWorld::new(&[], PermissionPolicy::Ask);
    let first = world.turn("remember 42", SessionRef::New).await;
    let id = session_id(&first);
    drop(world.provider);
    // A new launch: a new provider and agent process, resuming the conversation's session.
    let settings = ProviderSettings {
        permissions: Some(PermissionPolicy::Ask),
        ..world.demo.settings(&[], "0.1")
    };
    let provider = build_provider_with("demo", &settings, Transport::Acp).unwrap();
    let request = AttemptRequest {
        prompt: "what did I say?".into(),
        session: SessionRef::Resume(id.clone()),
        cwd: Some(world.demo.state.path().to_path_buf()),
        attempt: 1,
        ..AttemptRequest::default()
    };
    let second = collect(provider.execute(request, StopControl::new())).await;
    assert!(
        matches!(&second[0], AgentMessage::SessionResumed { session_id, .. } if *session_id == id),
        "{second:?}"
    );
    assert!(completed(&second), "{second:?}");
    assert_eq!(world.demo.starts().len(), 2);
    let requests: Vec<DemoRequest> =
        std::fs::read_to_string(requests_file(world.demo.state.path()))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
    assert_eq!(
        requests.last().unwrap().messages,
        ["remember 42", "what did I say?"]
    );
}

/// The models an ACP agent lists with its session are the status bar's and `/model`'s; a
/// choice goes to the running agent as `session/set_model` and shows once accepted, and one
/// the agent refuses is said in its words.
#[tokio::test]
async fn the_agents_models_are_listed_and_a_choice_reaches_it_as_set_model() {
    use agentty::provider::AgentSetting;
    let world = AcpWorld::playing("hello");
    let mut status = world
        .provider
        .agent_status()
        .expect("ACP reports its models");
    let first = world.turn("hi", SessionRef::New).await;
    assert!(completed(&first), "{first:?}");
    {
        let now = status.borrow_and_update();
        let ids: Vec<&str> = now.models.iter().map(|model| model.id.as_str()).collect();
        assert_eq!(ids, ["demo-acp-1", "demo-acp-2"], "{now:?}");
        assert_eq!(now.model.as_deref(), Some("demo-acp-1"));
    }
    assert!(world
        .provider
        .change_setting(AgentSetting::Model("demo-acp-2".into())));
    tokio::time::timeout(Duration::from_secs(10), status.changed())
        .await
        .expect("the agent answered")
        .unwrap();
    assert_eq!(status.borrow().model.as_deref(), Some("demo-acp-2"));
    let logged = std::fs::read_to_string(world.demo.state.path().join("settings.jsonl")).unwrap();
    assert!(
        logged.contains(r#""method":"session/set_model","value":"demo-acp-2""#),
        "{logged}"
    );
    assert!(world
        .provider
        .change_setting(AgentSetting::Model("no-such-model".into())));
    tokio::time::timeout(Duration::from_secs(10), status.changed())
        .await
        .expect("the agent answered")
        .unwrap();
    let now = status.borrow();
    assert_eq!(now.model.as_deref(), Some("demo-acp-2"), "unchanged");
    assert_eq!(now.refusals, 1);
    assert!(
        now.refusal
            .as_deref()
            .is_some_and(|why| why.contains("no-such-model")),
        "{now:?}"
    );
}

/// The modes an ACP agent lists with its session are the status bar's and Shift+Tab's; a choice
/// goes to the running agent as `session/set_mode`, and the agent's own `current_mode_update`
/// is followed (here, the one it sends after switching).
#[tokio::test]
async fn the_agents_modes_are_listed_and_a_choice_reaches_it_as_set_mode() {
    use agentty::provider::AgentSetting;
    let world = AcpWorld::playing("hello");
    let mut status = world
        .provider
        .agent_status()
        .expect("ACP reports its modes");
    let first = world.turn("hi", SessionRef::New).await;
    assert!(completed(&first), "{first:?}");
    {
        let now = status.borrow_and_update();
        let ids: Vec<&str> = now.modes.iter().map(|mode| mode.id.as_str()).collect();
        assert_eq!(ids, ["default", "accept-edits", "yolo"], "{now:?}");
        // Only yolo is declared the most permissive (off the Shift+Tab cycle).
        let permissive: Vec<&str> = now
            .modes
            .iter()
            .filter(|mode| mode.most_permissive.is_some())
            .map(|mode| mode.id.as_str())
            .collect();
        assert_eq!(permissive, ["yolo"], "{now:?}");
        assert_eq!(
            now.current_mode().map(|mode| mode.name.as_str()),
            Some("Default")
        );
    }
    assert!(world
        .provider
        .change_setting(AgentSetting::Mode("accept-edits".into())));
    tokio::time::timeout(Duration::from_secs(10), async {
        while status.borrow().mode.as_deref() != Some("accept-edits") {
            status.changed().await.unwrap();
        }
    })
    .await
    .expect("the agent switched");
    assert_eq!(
        status
            .borrow()
            .current_mode()
            .map(|mode| mode.name.as_str()),
        Some("Accept edits")
    );
    let logged = std::fs::read_to_string(world.demo.state.path().join("settings.jsonl")).unwrap();
    assert!(
        logged.contains(r#""method":"session/set_mode","value":"accept-edits""#),
        "{logged}"
    );
    assert!(world
        .provider
        .change_setting(AgentSetting::Mode("no-such-mode".into())));
    tokio::time::timeout(Duration::from_secs(10), async {
        while status.borrow().refusals == 0 {
            status.changed().await.unwrap();
        }
    })
    .await
    .expect("the agent refused");
    let now = status.borrow();
    assert_eq!(now.mode.as_deref(), Some("accept-edits"), "unchanged");
    assert!(
        now.refusal
            .as_deref()
            .is_some_and(|why| why.contains("no-such-mode")),
        "{now:?}"
    );
}

/// An agent that changes its mode by itself (`current_mode_update`) is followed: the status
/// says the new mode without the user asking.
#[tokio::test]
async fn a_mode_the_agent_switches_to_by_itself_is_followed() {
    let world = AcpWorld::playing("switch-mode");
    let status = world
        .provider
        .agent_status()
        .expect("ACP reports its modes");
    let turn = world.turn("go on", SessionRef::New).await;
    assert!(completed(&turn), "{turn:?}");
    assert_eq!(status.borrow().mode.as_deref(), Some("accept-edits"));
    assert_eq!(status.borrow().refusals, 0);
}
