//! pi's RPC transport on real processes: the demo agent in `--mode rpc` (the stand-in for pi in
//! CI) behind the real RPC provider, pi mapper and process layer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::time::timeout;

use agentty::config::ProviderSettings;
use agentty::provider::{
    build_provider_with, AgentStream, AttemptRequest, Interjection, Provider, SessionRef,
    StopControl, Transport,
};
use agentty::stream::{AgentMessage, FailureReason, NoticeKind, StopStage};

use crate::support::agent_stream;
use crate::support::demo_launcher;

use demo_launcher::DemoLauncher;

use agent_stream::{
    alive, collect, read_until, session_id, terminals, text, turn_end, wait_gone, PATIENCE,
};

/// The demo agent in RPC mode behind the RPC provider.
struct RpcWorld {
    demo: DemoLauncher,
    provider: Arc<dyn Provider>,
}

impl RpcWorld {
    fn new(time_scale: &str) -> Self {
        let demo = DemoLauncher::new();
        let provider =
            build_provider_with("demo", &demo.settings(&[], time_scale), Transport::Rpc).unwrap();
        Self { demo, provider }
    }

    fn starts(&self) -> Vec<i32> {
        self.demo.starts()
    }

    fn execute(&self, prompt: &str, session: SessionRef, stop: &StopControl) -> AgentStream {
        let request = AttemptRequest {
            prompt: prompt.into(),
            session,
            cwd: Some(self.demo.state.path().to_path_buf()),
            attempt: 1,
            ..AttemptRequest::default()
        };
        self.provider.execute(request, stop.clone())
    }

    async fn turn(&self, prompt: &str, session: SessionRef) -> Vec<AgentMessage> {
        collect(self.execute(prompt, session, &StopControl::new())).await
    }
}

#[tokio::test]
async fn two_turns_run_on_one_process_in_one_session() {
    let world = RpcWorld::new("0");
    let first = world.turn("hi", SessionRef::New).await;
    assert!(
        matches!(first.first(), Some(AgentMessage::SessionStarted { provider, .. }) if provider == "demo")
    );
    assert!(text(&first).contains("You wrote:"));
    assert!(matches!(
        terminals(&first)[..],
        [AgentMessage::Completed { .. }]
    ));
    assert!(first.last().unwrap().is_terminal());
    let id = session_id(&first);

    let second = world.turn("hi again", SessionRef::Resume(id.clone())).await;
    assert_eq!(session_id(&second), id);
    assert!(matches!(
        second.first(),
        Some(AgentMessage::SessionResumed { .. })
    ));
    assert!(
        text(&second).contains("_Prompt 2 in session"),
        "{}",
        text(&second)
    );
    assert!(matches!(
        terminals(&second)[..],
        [AgentMessage::Completed { .. }]
    ));
    assert_eq!(
        world.starts().len(),
        1,
        "the second turn reused the process"
    );
}

#[tokio::test]
async fn steer_and_follow_up_reach_the_running_turn() {
    let world = RpcWorld::new("0.05");
    let mut queue = world.provider.agent_queue().expect("rpc has a queue");
    let mut stream = world.execute("be slow please", SessionRef::New, &StopControl::new());
    read_until(&mut stream, |message| {
        matches!(message, AgentMessage::Assistant { .. })
    })
    .await;
    assert!(world.provider.interject(Interjection::Steer, "go left"));
    assert!(world
        .provider
        .interject(Interjection::FollowUp, "then right"));
    timeout(
        PATIENCE,
        queue.wait_for(|queue| !queue.follow_up.is_empty()),
    )
    .await
    .expect("a queue update in time")
    .unwrap();
    let rest = collect(stream).await;
    let text = text(&rest);
    let steered = text
        .find("You steered me while I worked: \"go left\"")
        .expect(&text);
    let followed = text.find("Your follow-up: \"then right\"").expect(&text);
    assert!(steered < followed);
    let delivered: Vec<(&str, &str)> = rest
        .iter()
        .filter_map(|message| match message {
            AgentMessage::Notice { kind, message } if kind.wire().ends_with("_delivered") => {
                Some((kind.wire(), message.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        delivered,
        [
            (NoticeKind::SteerDelivered.wire(), "go left"),
            (NoticeKind::FollowUpDelivered.wire(), "then right")
        ]
    );
    assert!(matches!(
        terminals(&rest)[..],
        [AgentMessage::Completed { .. }]
    ));
    assert_eq!(
        *queue.borrow(),
        Default::default(),
        "the queue is empty after the turn"
    );
}

#[tokio::test]
async fn a_steer_without_a_running_turn_is_refused() {
    let world = RpcWorld::new("0");
    assert!(!world
        .provider
        .interject(Interjection::Steer, "nobody listens"));
}

#[tokio::test]
async fn abort_during_a_tool_ends_the_turn_in_band_and_kills_the_tool() {
    let world = RpcWorld::new("0");
    let stop = StopControl::new();
    let mut stream = world.execute("run the sleep-tool", SessionRef::New, &stop);
    let seen = read_until(&mut stream, |message| {
        matches!(message, AgentMessage::ToolUpdate { output, .. } if output.starts_with("pid "))
    })
    .await;
    let id = session_id(&seen);
    let tool_pid: i32 = seen
        .iter()
        .find_map(|message| match message {
            AgentMessage::ToolUpdate { output, .. } => {
                output.trim().strip_prefix("pid ")?.parse().ok()
            }
            _ => None,
        })
        .unwrap();
    assert!(alive(tool_pid));
    stop.stop();
    let rest = collect(stream).await;
    match terminals(&rest)[..] {
        [AgentMessage::Cancelled {
            stop_stage: StopStage::Cancel,
            elapsed_ms,
        }] => assert!(*elapsed_ms < 2000, "{elapsed_ms}"),
        ref other => panic!("{other:?}"),
    }
    assert!(rest.iter().any(|message| matches!(message, AgentMessage::ToolFailed { error, .. } if error == "Command aborted")));
    assert!(wait_gone(tool_pid).await, "the tool's sleep was killed");
    let agent = world.starts()[0];
    assert!(alive(agent), "the agent stays for the next turn");

    let next = world.turn("hi", SessionRef::Resume(id.clone())).await;
    assert_eq!(session_id(&next), id);
    assert!(matches!(
        terminals(&next)[..],
        [AgentMessage::Completed { .. }]
    ));
    assert_eq!(world.starts().len(), 1);
}

#[tokio::test]
async fn an_ignored_abort_escalates_to_the_signal_stages_and_the_next_turn_starts_again() {
    let world = RpcWorld::new("0.1");
    let stop = StopControl::new();
    let mut stream = world.execute("ignore-sigint", SessionRef::New, &stop);
    let seen = read_until(&mut stream, |message| {
        matches!(message, AgentMessage::Assistant { .. })
    })
    .await;
    let id = session_id(&seen);
    let started = Instant::now();
    stop.stop();
    let rest = collect(stream).await;
    match terminals(&rest)[..] {
        [AgentMessage::Cancelled {
            stop_stage: StopStage::Kill,
            elapsed_ms,
        }] => assert!(*elapsed_ms >= 2000, "abort had its 2 s first: {elapsed_ms}"),
        ref other => panic!("{other:?}"),
    }
    assert!(
        started.elapsed() >= Duration::from_secs(4),
        "2 s abort + 2 s grace"
    );
    let first_agent = world.starts()[0];
    assert!(wait_gone(first_agent).await);

    let next = world.turn("hi", SessionRef::Resume(id.clone())).await;
    assert_eq!(session_id(&next), id, "pi starts again on the same session");
    assert!(matches!(
        terminals(&next)[..],
        [AgentMessage::Completed { .. }]
    ));
    assert_eq!(world.starts().len(), 2);
}

#[tokio::test]
async fn an_agent_that_exits_mid_turn_fails_the_attempt_and_the_next_starts_again() {
    let world = RpcWorld::new("0");
    let crashed = world.turn("crash", SessionRef::New).await;
    match terminals(&crashed)[..] {
        [AgentMessage::Failed(failure)] => {
            assert_eq!(failure.reason, FailureReason::ExitNonzero, "{failure:?}");
            assert!(!failure.stderr.is_empty());
        }
        ref other => panic!("{other:?}"),
    }
    assert!(crashed.last().unwrap().is_terminal());
    let next = world.turn("hi", SessionRef::New).await;
    assert!(matches!(
        terminals(&next)[..],
        [AgentMessage::Completed { .. }]
    ));
    assert_eq!(world.starts().len(), 2);
}

#[tokio::test]
async fn dropping_the_provider_closes_stdin_and_nothing_survives() {
    let world = RpcWorld::new("0");
    let done = world.turn("hi", SessionRef::New).await;
    assert!(matches!(
        terminals(&done)[..],
        [AgentMessage::Completed { .. }]
    ));
    let agent = world.starts()[0];
    assert!(alive(agent));
    drop(world.provider);
    assert!(
        wait_gone(agent).await,
        "the agent exits once agentty lets go"
    );
}

#[tokio::test]
async fn a_missing_binary_is_a_start_failure() {
    let settings = ProviderSettings {
        command: Some("/nonexistent/pi".into()),
        ..ProviderSettings::default()
    };
    let provider = build_provider_with("pi", &settings, Transport::Rpc).unwrap();
    let messages = collect(provider.execute(AttemptRequest::default(), StopControl::new())).await;
    match &messages[..] {
        [AgentMessage::Failed(failure)] => {
            assert_eq!(failure.reason, FailureReason::StartFailed)
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_process_started_ahead_serves_the_first_prompt_as_a_new_session() {
    let world = RpcWorld::new("0");
    world.provider.warm_up(AttemptRequest {
        session: SessionRef::New,
        cwd: Some(world.demo.state.path().to_path_buf()),
        ..AttemptRequest::default()
    });
    let deadline = Instant::now() + PATIENCE;
    while world.starts().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(world.starts().len(), 1, "started before any prompt");
    let first = world.turn("hi", SessionRef::New).await;
    assert!(
        matches!(first.first(), Some(AgentMessage::SessionStarted { .. })),
        "{first:?}"
    );
    assert!(matches!(
        terminals(&first)[..],
        [AgentMessage::Completed { .. }]
    ));
    // A second New is another conversation: a new session (`new_session`) in the same pi,
    // holding nothing of the first one.
    let other = world.turn("hello again", SessionRef::New).await;
    assert_ne!(session_id(&other), session_id(&first));
    assert_eq!(world.starts().len(), 1, "no cold start for a new session");
    let requests = demo_requests(&world);
    assert_eq!(
        requests.last().unwrap().messages,
        ["hello again"],
        "{requests:#?}"
    );
}

fn demo_requests(world: &RpcWorld) -> Vec<agentty::demo_agent::state::DemoRequest> {
    let file = agentty::demo_agent::state::requests_file(world.demo.state.path());
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[tokio::test]
async fn through_the_orchestrator_a_steer_reaches_the_running_turn() {
    use agentty::orchestrator::{
        spawn_orchestrator, Command, OrchestratorEvent as Ev, OrchestratorOptions, TurnOutcome,
    };
    let world = RpcWorld::new("0.05");
    let mut options = OrchestratorOptions::new(world.provider.clone());
    options.cwd = Some(world.demo.state.path().to_path_buf());
    let mut handle = spawn_orchestrator(options);
    handle
        .commands
        .send(Command::Submit("be slow please".into()))
        .unwrap();
    let mut steered = false;
    let mut seen = Vec::new();
    loop {
        let event = timeout(PATIENCE, handle.events.recv())
            .await
            .expect("in time")
            .expect("running");
        if !steered
            && matches!(
                &event,
                Ev::Message {
                    message: AgentMessage::Assistant { .. },
                    ..
                }
            )
        {
            handle
                .commands
                .send(Command::Interject(Interjection::Steer, "go left".into()))
                .unwrap();
            steered = true;
        }
        let ended = matches!(event, Ev::TurnEnded { .. });
        seen.push(event);
        if ended {
            break;
        }
    }
    assert!(matches!(
        seen.last(),
        Some(Ev::TurnEnded {
            outcome: TurnOutcome::Completed,
            ..
        })
    ));
    assert!(seen.iter().any(|event| matches!(event,
        Ev::Message { message: AgentMessage::Notice { kind, message }, .. }
            if *kind == NoticeKind::SteerDelivered && message == "go left")));
    assert!(seen.iter().any(|event| matches!(event,
        Ev::AgentQueueChanged(queue) if queue.steering == ["go left"])));
    assert!(
        !seen
            .iter()
            .any(|event| matches!(event, Ev::TurnStarted { turn: 2, .. })),
        "the steer was no turn of its own"
    );
    assert_eq!(
        world.starts().len(),
        1,
        "the warm-up process served the turn"
    );
    // The status bar's model and thinking level, from get_state.
    let saw_model = seen.iter().any(|event| {
        matches!(event, Ev::AgentStatusChanged(status)
            if status.model.as_deref() == Some("demo-1")
                && status.thinking_level.as_deref() == Some("off"))
    });
    assert!(saw_model);
}

#[tokio::test]
async fn an_agent_that_speaks_only_json_mode_is_a_start_failure_naming_the_fix() {
    let bin = tempfile::tempdir().unwrap();
    let script = bin.path().join("json-only");
    std::fs::write(
        &script,
        "#!/bin/sh\necho '{\"type\":\"session\",\"version\":3,\"id\":\"x\"}'\nexit 0\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let settings = ProviderSettings {
        command: Some(script),
        ..ProviderSettings::default()
    };
    let provider = build_provider_with("pi", &settings, Transport::Rpc).unwrap();
    let messages = collect(provider.execute(AttemptRequest::default(), StopControl::new())).await;
    match &messages[..] {
        [AgentMessage::Failed(failure)] => {
            assert_eq!(failure.reason, FailureReason::StartFailed);
            assert!(failure.message.contains("--transport json"), "{failure:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn retrying_a_stopped_turn_reloads_the_restored_session_so_the_prompt_is_sent_once() {
    use agentty::orchestrator::{spawn_orchestrator, Command, OrchestratorOptions, TurnOutcome};
    let world = RpcWorld::new("0.05");
    let mut options = OrchestratorOptions::new(world.provider.clone());
    options.cwd = Some(world.demo.state.path().to_path_buf());
    let mut handle = spawn_orchestrator(options);
    handle.commands.send(Command::Submit("hi".into())).unwrap();
    assert_eq!(turn_end(&mut handle, false).await, TurnOutcome::Completed);
    handle
        .commands
        .send(Command::Submit("be slow please".into()))
        .unwrap();
    assert_eq!(turn_end(&mut handle, true).await, TurnOutcome::Cancelled);
    assert_eq!(world.starts().len(), 1, "the abort kept the agent");
    handle.commands.send(Command::RetryLastTurn).unwrap();
    assert_eq!(turn_end(&mut handle, false).await, TurnOutcome::Completed);
    let requests = demo_requests(&world);
    let last = requests.last().unwrap();
    assert_eq!(last.messages, ["hi", "be slow please"], "{requests:#?}");
    assert_eq!(
        world.starts().len(),
        1,
        "the same pi re-read the restored session file (switch_session)"
    );
}

#[tokio::test]
async fn a_failed_attempt_is_undone_in_the_same_pi_so_the_retry_sends_the_prompt_once() {
    use agentty::orchestrator::{spawn_orchestrator, Command, OrchestratorOptions, TurnOutcome};
    let world = RpcWorld::new("0");
    let mut options = OrchestratorOptions::new(world.provider.clone());
    options.cwd = Some(world.demo.state.path().to_path_buf());
    options.policy.enabled = true;
    options.policy.max_attempts = 3;
    options.policy.retry_delay_ms = 10;
    let mut handle = spawn_orchestrator(options);
    handle.commands.send(Command::Submit("hi".into())).unwrap();
    assert_eq!(turn_end(&mut handle, false).await, TurnOutcome::Completed);
    // `flaky` fails the first time a prompt is sent and succeeds the next.
    handle
        .commands
        .send(Command::Submit("flaky please".into()))
        .unwrap();
    assert_eq!(turn_end(&mut handle, false).await, TurnOutcome::Completed);
    // The demo logs a request once it answers (the failed try logs none): the retry's.
    let requests = demo_requests(&world);
    assert_eq!(
        requests.last().unwrap().messages,
        ["hi", "flaky please"],
        "{requests:#?}"
    );
    assert_eq!(world.starts().len(), 1, "no cold start for the retry");
}

#[tokio::test]
async fn an_agent_killed_between_turns_is_started_again_on_the_same_session() {
    let world = RpcWorld::new("0");
    let first = world.turn("hi", SessionRef::New).await;
    let id = session_id(&first);
    let agent = world.starts()[0];
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(agent),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert!(wait_gone(agent).await);
    // Between turns, as a user would be: agentty has seen the exit by the time of the prompt
    // (a second: the reaped process's end reaches the session's reader later on a loaded CI).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let next = world.turn("hi again", SessionRef::Resume(id.clone())).await;
    assert_eq!(session_id(&next), id);
    assert!(
        matches!(terminals(&next)[..], [AgentMessage::Completed { .. }]),
        "{next:?}"
    );
    assert_eq!(world.starts().len(), 2);
}

#[tokio::test]
async fn the_models_pi_offers_are_listed_and_set_model_switches_the_next_request() {
    use agentty::demo_agent::state::{requests_file, DemoRequest};
    use agentty::provider::AgentSetting;
    let world = RpcWorld::new("0");
    let mut status = world.provider.agent_status().expect("rpc reports a status");
    assert!(
        !world
            .provider
            .change_setting(AgentSetting::Model("demo-2".into())),
        "no pi runs yet to ask"
    );
    let first = world.turn("hi", SessionRef::New).await;
    let id = session_id(&first);
    {
        let status = status.borrow_and_update();
        let models: Vec<(&str, &str, bool)> = status
            .models
            .iter()
            .map(|model| (model.id.as_str(), model.name.as_str(), model.reasoning))
            .collect();
        assert_eq!(
            models,
            [
                ("demo-1", "Demo One", false),
                ("demo-2", "Demo Two (thinks)", true)
            ]
        );
        assert_eq!(status.model.as_deref(), Some("demo-1"));
        assert!(status.thinking_levels.is_empty(), "demo-1 does not think");
    }
    // Between turns: pi is asked, and its answer updates the status.
    assert!(world
        .provider
        .change_setting(AgentSetting::Model("demo-2".into())));
    timeout(
        PATIENCE,
        status.wait_for(|status| status.model.as_deref() == Some("demo-2")),
    )
    .await
    .expect("the switch in time")
    .unwrap();
    assert!(status.borrow().thinking_levels.contains(&"high".to_owned()));
    assert!(world
        .provider
        .change_setting(AgentSetting::ThinkingLevel("high".into())));
    timeout(
        PATIENCE,
        status.wait_for(|status| status.thinking_level.as_deref() == Some("high")),
    )
    .await
    .expect("the level in time")
    .unwrap();
    // A model pi does not have is refused, and says why; the model stays.
    assert!(world
        .provider
        .change_setting(AgentSetting::Model("demo-9".into())));
    timeout(PATIENCE, status.wait_for(|status| status.refusals == 1))
        .await
        .expect("the refusal in time")
        .unwrap();
    let refusal = status.borrow().refusal.clone().unwrap();
    assert!(refusal.contains("Model not found"), "{refusal}");
    assert_eq!(status.borrow().model.as_deref(), Some("demo-2"));
    world.turn("hi again", SessionRef::Resume(id)).await;
    let requests: Vec<DemoRequest> =
        std::fs::read_to_string(requests_file(world.demo.state.path()))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
    let models: Vec<Option<&str>> = requests
        .iter()
        .map(|request| request.model.as_deref())
        .collect();
    assert_eq!(models, [None, Some("demo-2")], "{requests:#?}");
    assert_eq!(world.starts().len(), 1, "one pi all along");
}

/// pi keeps its steering queue across `abort` (and RPC has no command that clears it): a steer
/// still queued when the user stops the turn must not be delivered into the next prompt's turn.
#[tokio::test]
async fn a_steer_still_queued_when_the_turn_is_stopped_is_not_delivered_into_the_next_turn() {
    let world = RpcWorld::new("0.1");
    let mut queue = world.provider.agent_queue().expect("rpc has a queue");
    let stop = StopControl::new();
    let mut stream = world.execute("be slow please", SessionRef::New, &stop);
    let seen = read_until(&mut stream, |message| {
        matches!(message, AgentMessage::Assistant { .. })
    })
    .await;
    let id = session_id(&seen);
    assert!(world.provider.interject(Interjection::Steer, "my steer"));
    timeout(PATIENCE, queue.wait_for(|queue| !queue.steering.is_empty()))
        .await
        .expect("a queue update in time")
        .unwrap();
    stop.stop();
    let rest = collect(stream).await;
    assert!(
        matches!(terminals(&rest)[..], [AgentMessage::Cancelled { .. }]),
        "{rest:?}"
    );
    let warned = rest.iter().any(|message| {
        matches!(message, AgentMessage::Notice { kind, message }
            if *kind == NoticeKind::NotDelivered && message == "my steer")
    });
    assert!(
        warned,
        "the user is told the steer did not arrive: {rest:?}"
    );
    assert_eq!(
        *queue.borrow(),
        Default::default(),
        "nothing is left queued"
    );

    let next = world.turn("hello", SessionRef::Resume(id.clone())).await;
    assert_eq!(session_id(&next), id, "the conversation goes on");
    assert!(matches!(
        terminals(&next)[..],
        [AgentMessage::Completed { .. }]
    ));
    let answer = text(&next);
    assert!(!answer.contains("my steer"), "{answer}");
    assert!(!answer.contains("You steered me"), "{answer}");
    let requests = demo_requests(&world);
    assert!(
        requests
            .iter()
            .all(|request| !request.messages.iter().any(|text| text == "my steer")),
        "{requests:#?}"
    );
    assert_eq!(
        requests.last().unwrap().messages.last().map(String::as_str),
        Some("hello")
    );
}

/// After each turn pi is asked how full the model's context window is (`get_session_stats`).
#[tokio::test]
async fn after_a_turn_the_status_tells_how_full_the_context_window_is() {
    let world = RpcWorld::new("0");
    let mut status = world.provider.agent_status().expect("rpc has a status");
    assert_eq!(status.borrow().context, None);
    let first = world.turn("hi", SessionRef::New).await;
    let context = timeout(PATIENCE, status.wait_for(|status| status.context.is_some()))
        .await
        .expect("pi answered get_session_stats in time")
        .unwrap()
        .context;
    // The demo agent counts 1,290 tokens a prompt, of a 200k window.
    assert_eq!(context, agentty::provider::ContextUse::new(1290, 200_000));
    world
        .turn("hi again", SessionRef::Resume(session_id(&first)))
        .await;
    let context = timeout(
        PATIENCE,
        status.wait_for(|status| status.context.is_some_and(|context| context.tokens == 2580)),
    )
    .await
    .expect("the second turn's figure in time")
    .unwrap()
    .context;
    assert_eq!(context.map(|context| context.percent()), Some(1));
}
