//! Claude Code's stream-json control protocol, from exchanges recorded with the real CLI
//! (tests/fixtures/claude_stream/): `replay.py` plays the CLI's recorded side to agentty's
//! stream transport, and logs how every line agentty writes compares with what the recording
//! shows the client wrote (the Agent SDK's shapes, which the CLI answered as recorded).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentty::config::PermissionPolicy;
use agentty::process::SpawnSpec;
use agentty::provider::{
    provider_on, AgentSetting, AttemptRequest, Backend, Interjection, LiveTransport, Mapper,
    Provider, SessionRef, StopControl, Transport,
};
use agentty::stream::{AgentMessage, NoticeKind, PermissionRequest, StopStage};
use futures::StreamExt;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(30);

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude_stream")
}

/// "Claude Code" is `replay.py` playing one recorded exchange.
struct Replay {
    exchange: PathBuf,
    log: PathBuf,
}

impl Backend for Replay {
    fn name(&self) -> &str {
        "claude"
    }
    fn spawn_spec(&self, _request: &AttemptRequest) -> SpawnSpec {
        SpawnSpec::new("false")
    }
    fn live_transports(&self) -> Vec<LiveTransport> {
        vec![LiveTransport::ready(Transport::Stream)]
    }
    fn live_spawn_spec(
        &self,
        _transport: Transport,
        _request: &AttemptRequest,
    ) -> Option<SpawnSpec> {
        Some(
            SpawnSpec::new("python3")
                .arg(fixtures().join("replay.py"))
                .arg(&self.exchange)
                .arg(&self.log),
        )
    }
    fn mapper(&self, _request: &AttemptRequest) -> Box<dyn Mapper> {
        Box::new(agentty::provider::claude::mapper::ClaudeMapper::new(false))
    }
}

struct Rig {
    provider: Arc<dyn Provider>,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

fn rig(fixture: &str, policy: PermissionPolicy) -> Rig {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("replay-log.jsonl");
    let backend = Replay {
        exchange: fixtures().join(format!("{fixture}.jsonl")),
        log: log.clone(),
    };
    let provider = provider_on(Arc::new(backend), Transport::Stream, policy).expect("stream");
    Rig {
        provider,
        log,
        _dir: dir,
    }
}

impl Rig {
    /// Plays one prompt, calling `on` with every message (to answer, steer, stop).
    async fn turn(
        &self,
        prompt: &str,
        session: SessionRef,
        mut on: impl FnMut(&AgentMessage, &dyn Provider, &StopControl),
    ) -> Vec<AgentMessage> {
        let stop = StopControl::new();
        let request = AttemptRequest {
            prompt: prompt.into(),
            session,
            attempt: 1,
            ..AttemptRequest::default()
        };
        let mut stream = self.provider.execute(request, stop.clone());
        let mut messages = Vec::new();
        let collected = tokio::time::timeout(LIMIT, async {
            while let Some(message) = stream.next().await {
                on(&message, self.provider.as_ref(), &stop);
                let done = message.is_terminal();
                messages.push(message);
                if done {
                    break;
                }
            }
        })
        .await;
        assert!(collected.is_ok(), "the turn did not end: {messages:?}");
        messages
    }

    /// What replay.py logged: every line agentty wrote, with the recorded one.
    async fn log(&self, entries: usize) -> Vec<Value> {
        // The replayer logs as it reads; give it the moment the last line takes.
        for _ in 0..100 {
            let lines = self.log_now();
            if lines.len() >= entries {
                return lines;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.log_now()
    }

    fn log_now(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).expect("log line"))
            .collect()
    }
}

fn assert_same_as_recorded(log: &[Value], expected_entries: usize) {
    assert_eq!(log.len(), expected_entries, "{log:#?}");
    for entry in log {
        assert_eq!(
            entry["same"], true,
            "agentty wrote a line the recording does not show: {entry:#}"
        );
    }
}

fn permission_of(message: &AgentMessage) -> Option<PermissionRequest> {
    match message {
        AgentMessage::PermissionRequest(request) => Some((**request).clone()),
        _ => None,
    }
}

fn text_of(messages: &[AgentMessage]) -> String {
    messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::Assistant { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

fn completed(messages: &[AgentMessage]) -> bool {
    matches!(messages.last(), Some(AgentMessage::Completed { .. }))
}

#[tokio::test]
async fn a_permission_answered_allow_sends_the_sdks_allow_with_the_input() {
    let rig = rig("permission_allow", PermissionPolicy::Ask);
    let messages = rig
        .turn(
            "Touch the marker",
            SessionRef::New,
            |message, provider, _| {
                if let Some(request) = permission_of(message) {
                    assert!(provider.answer_permission(&request.id, Some("allow".into()), None));
                }
            },
        )
        .await;
    let request = messages.iter().find_map(permission_of).expect("asked");
    assert_eq!(request.title, "Bash: touch marker.txt");
    assert_eq!(request.kind, "execute");
    assert_eq!(request.command.as_deref(), Some("touch marker.txt"));
    let options: Vec<&str> = request.options.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(
        options,
        [
            "allow",
            "allow_always",
            "allow_in_mode:acceptEdits",
            "reject"
        ]
    );
    assert!(messages.iter().any(|message| matches!(
        message,
        AgentMessage::PermissionResolved { outcome, .. } if outcome == "allow"
    )));
    assert!(messages
        .iter()
        .any(|message| matches!(message, AgentMessage::ToolCompleted { .. })));
    assert!(completed(&messages), "{messages:?}");
    // initialize, the prompt, the answer: each as the SDK writes it.
    assert_same_as_recorded(&rig.log(3).await, 3);
}

#[tokio::test]
async fn a_rejection_with_a_note_is_denys_message() {
    let rig = rig("permission_deny", PermissionPolicy::Ask);
    let messages = rig
        .turn(
            "Touch the marker",
            SessionRef::New,
            |message, provider, _| {
                if let Some(request) = permission_of(message) {
                    assert!(provider.answer_permission(
                        &request.id,
                        Some("reject".into()),
                        Some("just say hi instead".into())
                    ));
                }
            },
        )
        .await;
    let failed = messages.iter().find_map(|message| match message {
        AgentMessage::ToolFailed { error, .. } => Some(error.clone()),
        _ => None,
    });
    assert_eq!(
        failed.as_deref(),
        Some("The user rejected this tool use and said: just say hi instead")
    );
    assert!(text_of(&messages).contains("just say hi instead"));
    assert!(completed(&messages));
    assert_same_as_recorded(&rig.log(3).await, 3);
}

#[tokio::test]
async fn always_adds_the_rule_for_the_session_and_the_next_turn_reuses_the_process() {
    let rig = rig("permission_always", PermissionPolicy::Ask);
    let first = rig
        .turn(
            "Touch the marker",
            SessionRef::New,
            |message, provider, _| {
                if let Some(request) = permission_of(message) {
                    assert!(provider.answer_permission(
                        &request.id,
                        Some("allow_always".into()),
                        None
                    ));
                }
            },
        )
        .await;
    assert!(completed(&first));
    // The same process (the replayer would start from the top otherwise), not asked again.
    let session_id = first.iter().find_map(|message| match message {
        AgentMessage::SessionStarted { session_id, .. } => session_id.clone(),
        _ => None,
    });
    let second = rig
        .turn(
            "Touch again",
            SessionRef::Resume(session_id.expect("an id")),
            |message, _, _| {
                assert!(permission_of(message).is_none(), "asked again: {message:?}");
            },
        )
        .await;
    assert!(matches!(
        second.first(),
        Some(AgentMessage::SessionResumed { .. })
    ));
    assert!(completed(&second), "{second:?}");
    assert_same_as_recorded(&rig.log(4).await, 4);
}

/// Claude Code's session-wide suggestion for a Write (`setMode acceptEdits`), chosen: the
/// answer carries it as recorded, Claude Code switches its mode (the status says so) and the
/// next prompt's write is not asked.
#[tokio::test]
async fn allow_all_edits_this_session_switches_claudes_mode_and_the_next_write_is_not_asked() {
    let rig = rig("permission_accept_edits", PermissionPolicy::Ask);
    let first = rig
        .turn(
            "Write the notes",
            SessionRef::New,
            |message, provider, _| {
                if let Some(request) = permission_of(message) {
                    assert!(provider.answer_permission(
                        &request.id,
                        Some("allow_in_mode:acceptEdits".into()),
                        None
                    ));
                }
            },
        )
        .await;
    let request = first.iter().find_map(permission_of).expect("asked");
    let options: Vec<(&str, &str)> = request
        .options
        .iter()
        .map(|option| (option.id.as_str(), option.name.as_str()))
        .collect();
    assert_eq!(
        options,
        [
            ("allow", "Allow once"),
            ("allow_in_mode:acceptEdits", "Allow all edits this session"),
            ("reject", "Reject"),
        ]
    );
    assert!(completed(&first), "{first:?}");
    let status = rig.provider.agent_status().expect("a status");
    assert_eq!(status.borrow().mode.as_deref(), Some("acceptEdits"));
    let session_id = first.iter().find_map(|message| match message {
        AgentMessage::SessionStarted { session_id, .. } => session_id.clone(),
        _ => None,
    });
    let second = rig
        .turn(
            "Write more notes",
            SessionRef::Resume(session_id.expect("an id")),
            |message, _, _| {
                assert!(permission_of(message).is_none(), "asked again: {message:?}");
            },
        )
        .await;
    assert!(completed(&second), "{second:?}");
    // initialize, the prompt, the answer with the mode, the next prompt: as recorded.
    assert_same_as_recorded(&rig.log(4).await, 4);
}

#[tokio::test]
async fn interrupt_is_stage_zero_and_settings_go_as_control_requests() {
    let rig = rig("interrupt_then_settings", PermissionPolicy::Ask);
    let mut stopped = false;
    let messages = rig
        .turn("Stream slowly", SessionRef::New, |message, _, stop| {
            // Once: a second stop skips to the kill.
            if matches!(message, AgentMessage::Assistant { .. }) && !stopped {
                stopped = true;
                stop.stop();
            }
        })
        .await;
    assert!(
        matches!(
            messages.last(),
            Some(AgentMessage::Cancelled {
                stop_stage: StopStage::Cancel,
                ..
            })
        ),
        "{messages:?}"
    );
    let mut status = rig.provider.agent_status().expect("a status");
    assert!(rig
        .provider
        .change_setting(AgentSetting::Model("sonnet".into())));
    tokio::time::timeout(
        LIMIT,
        status.wait_for(|status| status.model.as_deref() == Some("sonnet")),
    )
    .await
    .unwrap_or_else(|_| panic!("the model did not change: {:#?}", rig.log_now()))
    .expect("status");
    assert!(rig
        .provider
        .change_setting(AgentSetting::Mode("acceptEdits".into())));
    tokio::time::timeout(
        LIMIT,
        status.wait_for(|status| status.mode.as_deref() == Some("acceptEdits")),
    )
    .await
    .expect("the mode changed")
    .expect("status");
    let now = status.borrow().clone();
    let ids: Vec<&str> = now.modes.iter().map(|mode| mode.id.as_str()).collect();
    assert_eq!(ids, ["default", "acceptEdits", "plan"]);
    assert!(
        now.models.iter().any(|model| model.id == "sonnet"),
        "{:?}",
        now.models
    );
    // initialize, the prompt, interrupt, set_model, set_permission_mode.
    assert_same_as_recorded(&rig.log(5).await, 5);
}

#[tokio::test]
async fn a_message_typed_during_the_turn_is_a_user_line_taken_at_the_tool_boundary() {
    let rig = rig("steer_at_tool", PermissionPolicy::Ask);
    let mut asked = 0;
    let messages = rig
        .turn(
            "Touch the marker",
            SessionRef::New,
            |message, provider, _| {
                if let Some(request) = permission_of(message) {
                    asked += 1;
                    if asked == 1 {
                        assert!(provider.interject(Interjection::Steer, "Steer: also say banana"));
                        assert!(provider.answer_permission(
                            &request.id,
                            Some("allow".into()),
                            None
                        ));
                    }
                }
            },
        )
        .await;
    assert!(messages.contains(&AgentMessage::notice(
        NoticeKind::SteerDelivered,
        "Steer: also say banana"
    )));
    assert!(completed(&messages), "{messages:?}");
    // initialize, the prompt, the steering line, the answer.
    assert_same_as_recorded(&rig.log(4).await, 4);
}
