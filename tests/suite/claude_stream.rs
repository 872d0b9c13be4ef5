//! Claude Code's stream-json transport on real processes: the demo agent in
//! `--mode claude-stream` (the stand-in for Claude Code in CI) behind the real stream provider,
//! Claude mapper and process layer.

use std::sync::Arc;

use futures::StreamExt;
use tokio::time::timeout;

use agentty::config::PermissionPolicy;
use agentty::demo_agent::state::{requests_file, settings_file, DemoRequest};
use agentty::orchestrator::{spawn_orchestrator, Command, OrchestratorOptions, TurnOutcome};
use agentty::provider::{
    build_backend, provider_on, AgentSetting, AgentStatus, AgentStream, AttemptRequest,
    Interjection, Provider, SessionRef, StopControl, Transport,
};
use agentty::stream::{AgentMessage, NoticeKind, StopStage};

use crate::support::agent_stream;
use crate::support::demo_launcher;

use agent_stream::{
    collect, read_until, session_id, text, turn_end, until_permission_request, PATIENCE,
};
use demo_launcher::DemoLauncher;

/// The demo agent playing Claude Code behind the stream provider.
struct World {
    demo: DemoLauncher,
    provider: Arc<dyn Provider>,
}

impl World {
    fn new(time_scale: &str, policy: PermissionPolicy) -> Self {
        let demo = DemoLauncher::new();
        let provider = Self::provider(&demo, time_scale, policy);
        Self { demo, provider }
    }

    fn provider(
        demo: &DemoLauncher,
        time_scale: &str,
        policy: PermissionPolicy,
    ) -> Arc<dyn Provider> {
        let backend = build_backend("demo", &demo.settings(&[], time_scale)).unwrap();
        provider_on(backend, Transport::Stream, policy).unwrap()
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

    /// A new launch's provider (a new process) resuming `session_id` with `settings`, and its
    /// first turn, which must complete.
    async fn relaunched_turn(
        &self,
        prompt: &str,
        session_id: String,
        settings: Vec<AgentSetting>,
    ) -> Arc<dyn Provider> {
        let request = AttemptRequest {
            prompt: prompt.into(),
            session: SessionRef::Resume(session_id),
            cwd: Some(self.demo.state.path().to_path_buf()),
            attempt: 1,
            settings,
            ..AttemptRequest::default()
        };
        let relaunched = Self::provider(&self.demo, "0", PermissionPolicy::Ask);
        let messages = collect(relaunched.execute(request, StopControl::new())).await;
        assert!(
            matches!(messages.last(), Some(AgentMessage::Completed { .. })),
            "{messages:?}"
        );
        relaunched
    }

    /// Asks the agent for `setting` and waits until its status shows it `held`.
    async fn choose(
        &self,
        status: &mut tokio::sync::watch::Receiver<AgentStatus>,
        setting: AgentSetting,
        held: impl FnMut(&AgentStatus) -> bool,
    ) {
        assert!(self.provider.change_setting(setting));
        timeout(PATIENCE, status.wait_for(held))
            .await
            .unwrap()
            .unwrap();
    }

    fn requests(&self) -> Vec<DemoRequest> {
        std::fs::read_to_string(requests_file(self.demo.state.path()))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

/// Reads `stream` to its end, answering each permission request with `option` (and `note`).
async fn answering(
    provider: &dyn Provider,
    mut stream: AgentStream,
    option: &str,
    note: Option<&str>,
) -> Vec<AgentMessage> {
    let mut seen = Vec::new();
    while let Some(message) = timeout(PATIENCE, stream.next()).await.expect("in time") {
        if let AgentMessage::PermissionRequest(request) = &message {
            assert!(provider.answer_permission(
                &request.id,
                Some(option.to_owned()),
                note.map(str::to_owned)
            ));
        }
        seen.push(message);
    }
    seen
}

#[tokio::test]
async fn a_write_asked_and_allowed_is_on_disk_and_the_next_turn_uses_the_same_process() {
    let world = World::new("0", PermissionPolicy::Ask);
    let stream = world.execute("please write it", SessionRef::New, &StopControl::new());
    let first = answering(world.provider.as_ref(), stream, "allow", None).await;
    let asked = first.iter().find_map(|message| match message {
        AgentMessage::PermissionRequest(request) => Some(request.clone()),
        _ => None,
    });
    let asked = asked.expect("the write was asked");
    assert_eq!(asked.kind, "edit");
    assert_eq!(asked.diffs[0].new_text, "written by the demo agent\n");
    let written = world.demo.state.path().join("demo-claude.txt");
    assert_eq!(
        std::fs::read_to_string(&written).unwrap(),
        "written by the demo agent\n"
    );
    assert!(text(&first).ends_with("Wrote demo-claude.txt."));
    let id = session_id(&first);
    let second = world
        .turn("and hello", SessionRef::Resume(id.clone()))
        .await;
    assert!(matches!(
        second.first(),
        Some(AgentMessage::SessionResumed { .. })
    ));
    assert!(text(&second).contains("messages=3"), "{second:?}");
    assert_eq!(world.starts_len(), 1, "one process for both turns");
}

impl World {
    fn starts_len(&self) -> usize {
        self.demo.starts().len()
    }
}

#[tokio::test]
async fn a_rejection_with_a_note_reaches_the_agent_and_nothing_is_written() {
    let world = World::new("0", PermissionPolicy::Ask);
    let stream = world.execute(
        "please write other.txt",
        SessionRef::New,
        &StopControl::new(),
    );
    let messages = answering(
        world.provider.as_ref(),
        stream,
        "reject",
        Some("use notes.md instead"),
    )
    .await;
    assert!(!world.demo.state.path().join("other.txt").exists());
    assert!(messages.iter().any(|message| matches!(
        message,
        AgentMessage::PermissionResolved { outcome, message: Some(note), .. }
            if outcome == "reject" && note == "use notes.md instead"
    )));
    assert!(
        text(&messages).contains("The user rejected this tool use and said: use notes.md instead"),
        "{messages:?}"
    );
    assert!(matches!(
        messages.last(),
        Some(AgentMessage::Completed { .. })
    ));
}

#[tokio::test]
async fn policies_answer_without_asking_and_a_refusal_says_how_to_allow() {
    let allow = World::new("0", PermissionPolicy::Allow);
    let messages = allow.turn("write it", SessionRef::New).await;
    assert!(allow.demo.state.path().join("demo-claude.txt").exists());
    assert!(messages.iter().any(|message| matches!(
        message,
        AgentMessage::PermissionResolved { outcome, .. } if outcome == "allow"
    )));
    let deny = World::new("0", PermissionPolicy::Deny);
    let messages = deny.turn("write it", SessionRef::New).await;
    assert!(!deny.demo.state.path().join("demo-claude.txt").exists());
    let notice = messages.iter().find_map(|message| match message {
        AgentMessage::Notice { kind, message } if *kind == NoticeKind::PermissionRefused => {
            Some(message.clone())
        }
        _ => None,
    });
    assert!(
        notice.is_some_and(|notice| notice.contains("--permissions allow")),
        "{messages:?}"
    );
}

#[tokio::test]
async fn always_is_not_asked_again_in_the_session() {
    let world = World::new("0", PermissionPolicy::Ask);
    let stream = world.execute("write a.txt", SessionRef::New, &StopControl::new());
    let first = answering(world.provider.as_ref(), stream, "allow_always", None).await;
    let id = session_id(&first);
    let second = world.turn("write b.txt", SessionRef::Resume(id)).await;
    assert!(
        !second
            .iter()
            .any(|message| matches!(message, AgentMessage::PermissionRequest(_))),
        "{second:?}"
    );
    assert!(world.demo.state.path().join("b.txt").exists());
}

/// "Allow all edits this session" (Claude's `setMode acceptEdits` suggestion): the agent's mode
/// is accept edits from then on, and the next write is not asked.
#[tokio::test]
async fn all_edits_this_session_switches_the_mode_and_the_next_write_is_not_asked() {
    let world = World::new("0", PermissionPolicy::Ask);
    let stream = world.execute("write a.txt", SessionRef::New, &StopControl::new());
    let first = answering(
        world.provider.as_ref(),
        stream,
        "allow_in_mode:acceptEdits",
        None,
    )
    .await;
    let asked = first.iter().find_map(|message| match message {
        AgentMessage::PermissionRequest(request) => Some(request.clone()),
        _ => None,
    });
    let names: Vec<String> = asked
        .expect("asked")
        .options
        .iter()
        .map(|option| option.name.clone())
        .collect();
    assert_eq!(
        names,
        [
            "Allow once",
            "Always allow in this session (Write)",
            "Allow all edits this session",
            "Reject"
        ]
    );
    assert!(world.demo.state.path().join("a.txt").exists());
    let status = world.provider.agent_status().unwrap();
    assert_eq!(status.borrow().mode.as_deref(), Some("acceptEdits"));
    let second = world
        .turn("write b.txt", SessionRef::Resume(session_id(&first)))
        .await;
    assert!(
        !second
            .iter()
            .any(|message| matches!(message, AgentMessage::PermissionRequest(_))),
        "{second:?}"
    );
    assert!(world.demo.state.path().join("b.txt").exists());
}

#[tokio::test]
async fn esc_interrupts_in_band_and_the_next_turn_runs_on_the_same_process() {
    let world = World::new("1", PermissionPolicy::Ask);
    let stop = StopControl::new();
    let mut stream = world.execute("go slow please", SessionRef::New, &stop);
    let seen = read_until(&mut stream, |message| {
        matches!(message, AgentMessage::Assistant { .. })
    })
    .await;
    let id = session_id(&seen);
    stop.stop();
    let rest = collect(stream).await;
    match rest.last() {
        Some(AgentMessage::Cancelled {
            stop_stage: StopStage::Cancel,
            elapsed_ms,
        }) => assert!(*elapsed_ms < 2000, "{elapsed_ms} ms"),
        other => panic!("stopped in-band, not {other:?}"),
    }
    let next = world.turn("hello again", SessionRef::Resume(id)).await;
    assert!(matches!(next.last(), Some(AgentMessage::Completed { .. })));
    assert_eq!(world.starts_len(), 1, "the process stayed");
    let requests = world.requests();
    assert_eq!(
        requests.last().unwrap().messages,
        ["go slow please", "hello again"]
    );
}

#[tokio::test]
async fn a_message_typed_mid_turn_is_delivered_as_a_user_line() {
    let world = World::new("0", PermissionPolicy::Ask);
    let mut stream = world.execute("write it", SessionRef::New, &StopControl::new());
    let request = until_permission_request(&mut stream).await;
    assert!(world.provider.can_interject());
    assert!(world
        .provider
        .interject(Interjection::Steer, "also mention bananas"));
    assert!(world
        .provider
        .answer_permission(&request.id, Some("allow".into()), None));
    let rest = collect(stream).await;
    assert!(rest.contains(&AgentMessage::notice(
        NoticeKind::SteerDelivered,
        "also mention bananas"
    )));
    assert!(
        text(&rest).contains("Steered by: also mention bananas."),
        "{rest:?}"
    );
    // Between turns there is nothing to steer.
    assert!(!world.provider.interject(Interjection::Steer, "late"));
}

#[tokio::test]
async fn a_turn_that_fails_twice_then_succeeds_reaches_the_model_with_each_prompt_once() {
    let world = World::new("0", PermissionPolicy::Ask);
    let mut options = OrchestratorOptions::new(world.provider.clone());
    options.cwd = Some(world.demo.state.path().to_path_buf());
    options.policy.enabled = true;
    options.policy.max_attempts = 3;
    options.policy.retry_delay_ms = 10;
    let mut handle = spawn_orchestrator(options);
    handle.commands.send(Command::Submit("hi".into())).unwrap();
    assert_eq!(turn_end(&mut handle, false).await, TurnOutcome::Completed);
    handle
        .commands
        .send(Command::Submit("this will fail twice".into()))
        .unwrap();
    assert_eq!(turn_end(&mut handle, false).await, TurnOutcome::Completed);
    handle
        .commands
        .send(Command::Submit("and then".into()))
        .unwrap();
    assert_eq!(turn_end(&mut handle, false).await, TurnOutcome::Completed);
    let requests: Vec<Vec<String>> = world
        .requests()
        .into_iter()
        .map(|request| request.messages)
        .collect();
    let expected = [
        vec!["hi"],
        vec!["hi", "this will fail twice"],
        vec!["hi", "this will fail twice"],
        vec!["hi", "this will fail twice"],
        vec!["hi", "this will fail twice", "and then"],
    ];
    assert_eq!(requests, expected, "each prompt once in every request");
}

#[tokio::test]
async fn a_resumed_conversation_continues_the_stored_session_in_a_new_process() {
    let demo = DemoLauncher::new();
    let first_provider = World::provider(&demo, "0", PermissionPolicy::Ask);
    let first = World {
        demo,
        provider: first_provider,
    };
    let one = first.turn("remember 42", SessionRef::New).await;
    let id = session_id(&one);
    // agentty quits and comes back (`--resume`): a new provider, a new process.
    let second_provider = World::provider(&first.demo, "0", PermissionPolicy::Ask);
    let world = World {
        demo: first.demo,
        provider: second_provider,
    };
    drop(first.provider);
    let two = world
        .turn("what was it?", SessionRef::Resume(id.clone()))
        .await;
    assert_eq!(session_id(&two), id);
    assert!(text(&two).contains("messages=3"), "{two:?}");
    assert_eq!(
        world.requests().last().unwrap().messages,
        ["remember 42", "what was it?"]
    );
    assert_eq!(world.starts_len(), 2);
}

#[tokio::test]
async fn model_and_mode_change_through_control_requests() {
    let world = World::new("0", PermissionPolicy::Ask);
    let one = world.turn("hi", SessionRef::New).await;
    let id = session_id(&one);
    let mut status = world.provider.agent_status().unwrap();
    assert_eq!(status.borrow().model.as_deref(), Some("default"));
    assert_eq!(status.borrow().mode.as_deref(), Some("default"));
    world
        .choose(
            &mut status,
            AgentSetting::Model("demo-claude-2".into()),
            |status| status.model.as_deref() == Some("demo-claude-2"),
        )
        .await;
    world
        .choose(&mut status, AgentSetting::Mode("plan".into()), |status| {
            status.mode.as_deref() == Some("plan")
        })
        .await;
    world.turn("again", SessionRef::Resume(id)).await;
    assert_eq!(
        world.requests().last().unwrap().model.as_deref(),
        Some("demo-claude-2")
    );
    let settings = std::fs::read_to_string(settings_file(world.demo.state.path())).unwrap();
    assert!(
        settings.contains(r#""method":"set_permission_mode","value":"plan""#),
        "{settings}"
    );
}

#[tokio::test]
async fn a_chosen_model_and_mode_hold_when_the_process_is_started_again() {
    let world = World::new("0", PermissionPolicy::Ask);
    let one = world.turn("hi", SessionRef::New).await;
    let id = session_id(&one);
    let mut status = world.provider.agent_status().unwrap();
    assert!(world
        .provider
        .change_setting(AgentSetting::Model("demo-claude-2".into())));
    assert!(world
        .provider
        .change_setting(AgentSetting::Mode("acceptEdits".into())));
    timeout(
        PATIENCE,
        status.wait_for(|status| {
            status.model.as_deref() == Some("demo-claude-2")
                && status.mode.as_deref() == Some("acceptEdits")
        }),
    )
    .await
    .unwrap()
    .unwrap();
    // A failed attempt ends the process; the retry starts another one.
    let failed = world
        .turn("this will fail", SessionRef::Resume(id.clone()))
        .await;
    assert!(
        matches!(failed.last(), Some(AgentMessage::Failed(_))),
        "{failed:?}"
    );
    let request = AttemptRequest {
        prompt: "this will fail".into(),
        session: SessionRef::Resume(id),
        cwd: Some(world.demo.state.path().to_path_buf()),
        attempt: 3,
        ..AttemptRequest::default()
    };
    let retried = collect(world.provider.execute(request, StopControl::new())).await;
    assert!(
        matches!(retried.last(), Some(AgentMessage::Completed { .. })),
        "{retried:?}"
    );
    assert_eq!(world.starts_len(), 2);
    assert_eq!(
        world.requests().last().unwrap().model.as_deref(),
        Some("demo-claude-2"),
        "the new process was told the chosen model"
    );
    let settings = std::fs::read_to_string(settings_file(world.demo.state.path())).unwrap();
    assert_eq!(
        settings
            .matches(r#""method":"set_permission_mode","value":"acceptEdits""#)
            .count(),
        2,
        "{settings}"
    );
    assert_eq!(status.borrow().mode.as_deref(), Some("acceptEdits"));
}

/// The settings an attempt carries (the choices of a resumed conversation) set a new process
/// as the user left it.
#[tokio::test]
async fn the_conversations_settings_set_a_resumed_process() {
    let world = World::new("0", PermissionPolicy::Ask);
    let one = world.turn("hi", SessionRef::New).await;
    // A new launch: a new process for the resumed session.
    let settings = vec![
        AgentSetting::Model("demo-claude-2".into()),
        AgentSetting::Mode("plan".into()),
    ];
    let relaunched = world
        .relaunched_turn("again", session_id(&one), settings)
        .await;
    assert_eq!(
        world.requests().last().unwrap().model.as_deref(),
        Some("demo-claude-2")
    );
    let settings = std::fs::read_to_string(settings_file(world.demo.state.path())).unwrap();
    assert!(
        settings.contains(r#""method":"set_permission_mode","value":"plan""#),
        "{settings}"
    );
    assert_eq!(
        relaunched.agent_status().unwrap().borrow().mode.as_deref(),
        Some("plan")
    );
}

/// Claude's effort: the levels the current model lists are offered, a chosen one goes with the
/// next request (`apply_flag_settings {effortLevel}`), a model with none offers none, and a
/// resumed conversation's effort sets the new process.
#[tokio::test]
async fn the_effort_the_model_takes_is_offered_and_goes_with_the_next_request() {
    let world = World::new("0", PermissionPolicy::Ask);
    let one = world.turn("hi", SessionRef::New).await;
    let id = session_id(&one);
    let mut status = world.provider.agent_status().unwrap();
    assert_eq!(
        status.borrow().thinking_levels,
        ["low", "medium", "high", "xhigh", "max"]
    );
    assert_eq!(status.borrow().thinking_level, None, "none until chosen");
    assert_eq!(world.requests().last().unwrap().effort, None);
    world
        .choose(
            &mut status,
            AgentSetting::ThinkingLevel("xhigh".into()),
            |status| status.thinking_level.as_deref() == Some("xhigh"),
        )
        .await;
    world.turn("again", SessionRef::Resume(id.clone())).await;
    assert_eq!(
        world.requests().last().unwrap().effort.as_deref(),
        Some("xhigh")
    );
    // A model that takes no effort: nothing offered, nothing shown.
    world
        .choose(
            &mut status,
            AgentSetting::Model("demo-claude-2".into()),
            |status| status.model.as_deref() == Some("demo-claude-2"),
        )
        .await;
    assert!(status.borrow().thinking_levels.is_empty());
    assert_eq!(status.borrow().thinking_level, None);

    // A new launch resuming the conversation with its logged effort.
    let relaunched = world
        .relaunched_turn(
            "resumed",
            id,
            vec![AgentSetting::ThinkingLevel("low".into())],
        )
        .await;
    assert_eq!(
        world.requests().last().unwrap().effort.as_deref(),
        Some("low")
    );
    assert_eq!(
        relaunched
            .agent_status()
            .unwrap()
            .borrow()
            .thinking_level
            .as_deref(),
        Some("low")
    );
}
