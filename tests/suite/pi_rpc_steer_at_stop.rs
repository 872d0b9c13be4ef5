//! A steer and a stop on pi's RPC transport, on real processes: the demo agent in `--mode rpc`
//! plays pi 0.73.1's behaviour (on `abort` during a tool, a queued steer is taken off the queue
//! and written into the session, unanswered), and the RPC provider takes such a steer back:
//! out of the session, back to the user, never in a later request. A steer delivered before
//! the stop stays.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use serde_json::Value;
use tokio::time::timeout;

use agentty::demo_agent::state::{requests_file, session_file, DemoRequest};
use agentty::provider::{
    build_provider_with, AgentStream, AttemptRequest, Interjection, Provider, SessionRef,
    StopControl, Transport,
};
use agentty::stream::{AgentMessage, NoticeKind};

use crate::support::agent_stream::{collect, read_until, session_id, terminals, text, PATIENCE};
use crate::support::demo_launcher::DemoLauncher;

/// The demo agent in RPC mode behind the RPC provider.
struct World {
    demo: DemoLauncher,
    provider: Arc<dyn Provider>,
}

impl World {
    fn new(time_scale: &str) -> Self {
        let demo = DemoLauncher::new();
        let provider =
            build_provider_with("demo", &demo.settings(&[], time_scale), Transport::Rpc).unwrap();
        Self { demo, provider }
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

    /// Every request the demo agent "sent to its model", oldest first.
    fn requests(&self) -> Vec<Vec<String>> {
        std::fs::read_to_string(requests_file(self.demo.state.path()))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str::<DemoRequest>(line).unwrap().messages)
            .collect()
    }

    fn session_text(&self, id: &str) -> String {
        std::fs::read_to_string(session_file(self.demo.state.path(), id).unwrap()).unwrap()
    }
}

/// The notices of `kind` in `messages`, their texts.
fn notices<'a>(messages: &'a [AgentMessage], kind: &NoticeKind) -> Vec<&'a str> {
    messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::Notice {
                kind: said,
                message,
            } if said == kind.wire() => Some(message.as_str()),
            _ => None,
        })
        .collect()
}

/// The demo agent plays pi's behaviour, so that the provider's answer to it runs in CI: on
/// `abort` during a tool, the queued steer leaves the queue, comes out as a user message, and
/// is written into the session without a request of its own (the next request would carry it).
#[test]
fn the_demo_agent_writes_a_steer_queued_at_an_abort_into_the_session_as_pi_does() {
    let state = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(["demo-agent", "--mode", "rpc"])
        .env("AGENTTY_DEMO_STATE_DIR", state.path())
        .env("AGENTTY_DEMO_TIME_SCALE", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });
    let mut send = |line: &str| {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    };
    let until = |wanted: &dyn Fn(&Value) -> bool| -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let line = lines
                .recv_timeout(Duration::from_secs(20))
                .expect("a line in time");
            let done = wanted(&line);
            seen.push(line);
            if done {
                return seen;
            }
        }
    };
    send(r#"{"id":"s","type":"get_state"}"#);
    let state_line = until(&|line| line["id"] == "s");
    let session_path = state_line.last().unwrap()["data"]["sessionFile"]
        .as_str()
        .unwrap()
        .to_owned();
    send(r#"{"id":"p1","type":"prompt","message":"run the sleep-tool"}"#);
    until(&|line| line["type"] == "tool_execution_update");
    send(r#"{"id":"st","type":"steer","message":"my steer"}"#);
    until(&|line| line["id"] == "st");
    send(r#"{"id":"ab","type":"abort"}"#);
    let after = until(&|line| line["id"] == "ab");
    let position = |wanted: &dyn Fn(&Value) -> bool| after.iter().position(wanted);
    let tool_end = position(&|line| line["type"] == "tool_execution_end").unwrap();
    let emptied = position(&|line| {
        line["type"] == "queue_update" && line["steering"] == serde_json::json!([])
    })
    .expect("the steer left the queue");
    let steer = position(&|line| {
        line["type"] == "message_start"
            && line["message"]["role"] == "user"
            && line["message"]["content"][0]["text"] == "my steer"
    })
    .expect("the steer came out as a user message");
    let aborted = position(&|line| {
        line["type"] == "message_end" && line["message"]["stopReason"] == "aborted"
    })
    .unwrap();
    let agent_end = position(&|line| line["type"] == "agent_end").unwrap();
    assert!(tool_end < emptied && emptied < steer && steer < aborted && aborted < agent_end);
    let session = std::fs::read_to_string(&session_path).unwrap();
    assert!(
        session.ends_with("\"run the sleep-tool\"\n\"my steer\"\n"),
        "{session}"
    );
    let requests = std::fs::read_to_string(requests_file(state.path())).unwrap();
    assert!(
        !requests.contains("my steer"),
        "no request carried it: {requests}"
    );
    // stdin closed: the demo agent exits.
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// Esc while a tool runs and a steer waits: pi takes the steer at the stop and writes it into the
/// session. The provider takes it out again (the session reads as a stop without it), gives it
/// back to the user (`not_delivered`), and the same pi re-reads its session: the next request
/// carries no steer.
#[tokio::test]
async fn a_steer_taken_at_a_stop_during_a_tool_is_taken_back_and_reaches_no_request() {
    let world = World::new("0");
    let mut queue = world.provider.agent_queue().expect("rpc has a queue");
    let stop = StopControl::new();
    let mut stream = world.execute("run the sleep-tool", SessionRef::New, &stop);
    let seen = read_until(&mut stream, |message| {
        matches!(message, AgentMessage::ToolCall { .. })
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
        "{rest:#?}"
    );
    assert_eq!(notices(&rest, &NoticeKind::NotDelivered), ["my steer"]);
    assert!(
        notices(&rest, &NoticeKind::SteerDelivered).is_empty(),
        "the model never answered it: {rest:#?}"
    );
    assert_eq!(
        *queue.borrow(),
        Default::default(),
        "nothing is left queued"
    );
    let session = world.session_text(&id);
    assert!(!session.contains("my steer"), "{session}");
    assert!(
        session.contains("run the sleep-tool"),
        "the stopped prompt stays"
    );

    let next =
        collect(world.execute("hello", SessionRef::Resume(id.clone()), &StopControl::new())).await;
    assert_eq!(session_id(&next), id, "the conversation goes on");
    assert!(matches!(
        terminals(&next)[..],
        [AgentMessage::Completed { .. }]
    ));
    assert!(!text(&next).contains("You steered me"), "{}", text(&next));
    let requests = world.requests();
    assert_eq!(
        requests.last().unwrap(),
        &["run the sleep-tool", "hello"],
        "{requests:#?}"
    );
    assert!(
        requests
            .iter()
            .all(|messages| !messages.iter().any(|text| text == "my steer")),
        "{requests:#?}"
    );
    assert_eq!(
        world.demo.starts().len(),
        1,
        "pi re-read its session: no cold start"
    );
}

/// A steer the agent took before the stop (the model's request carried it) stays in the
/// conversation: it is not given back, and the next request carries it.
#[tokio::test]
async fn a_steer_delivered_before_the_stop_stays_in_the_conversation() {
    let world = World::new("0.05");
    let stop = StopControl::new();
    let mut stream = world.execute("be slow please", SessionRef::New, &stop);
    let seen = read_until(&mut stream, |message| {
        matches!(message, AgentMessage::Assistant { .. })
    })
    .await;
    let id = session_id(&seen);
    assert!(world.provider.interject(Interjection::Steer, "go left"));
    let steered = read_until(&mut stream, |message| {
        matches!(message, AgentMessage::Notice { kind, .. } if *kind == NoticeKind::SteerDelivered)
    })
    .await;
    assert_eq!(notices(&steered, &NoticeKind::SteerDelivered), ["go left"]);
    stop.stop();
    let rest = collect(stream).await;
    assert!(
        matches!(terminals(&rest)[..], [AgentMessage::Cancelled { .. }]),
        "{rest:#?}"
    );
    assert!(
        notices(&rest, &NoticeKind::NotDelivered).is_empty(),
        "{rest:#?}"
    );
    let next =
        collect(world.execute("hello", SessionRef::Resume(id.clone()), &StopControl::new())).await;
    assert!(matches!(
        terminals(&next)[..],
        [AgentMessage::Completed { .. }]
    ));
    let requests = world.requests();
    assert_eq!(
        requests.last().unwrap(),
        &["be slow please", "go left", "hello"],
        "{requests:#?}"
    );
}

/// The chat's side: a `not_delivered` message comes back into the editor (made inert, as any
/// text from the agent's side), and the transcript says so; nothing the user typed is lost.
#[test]
fn a_message_not_delivered_comes_back_into_the_editor() {
    use crate::support::chat;
    use agentty::orchestrator::TurnOutcome;
    use agentty::stream::StopStage;
    use chat::{startup, Chat};

    let mut chat = Chat::with_startup(startup("pi", None, None));
    chat.start_turn(0, "run the sleep-tool");
    chat.message(
        10,
        AgentMessage::notice(NoticeKind::NotDelivered, "my steer\u{1b}]0;owned\u{7}"),
    );
    chat.message(
        20,
        AgentMessage::Cancelled {
            stop_stage: StopStage::Cancel,
            elapsed_ms: 20,
        },
    );
    chat.end(20, TurnOutcome::Cancelled);
    let text = chat.state.composer.text();
    assert!(text.starts_with("my steer"), "{text:?}");
    assert!(!text.chars().any(|c| c.is_control()), "{text:?}");
    let screen = chat.screen(100, 24, 30);
    assert!(
        screen.contains("Not delivered to the agent (the turn ended first), back in the editor:"),
        "{screen}"
    );
}

/// In tmux, as a user: Esc while the demo agent's tool runs and a steer waits above the
/// composer. The steer comes back into the editor, nothing is left pending, and Enter sends it
/// as the next prompt, once: the agent's answer is to it, not to a steer from the stopped turn.
#[test]
fn esc_during_a_tool_with_a_steer_waiting_puts_it_back_into_the_editor() {
    use crate::support::tmux;
    if !tmux::tmux_available() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let command = format!(
        "AGENTTY_STATE_DIR={state} AGENTTY_DEMO_STATE_DIR={state}/demo \
         AGENTTY_DEMO_TIME_SCALE=0 exec {bin} --provider demo --transport rpc",
        state = state.path().display(),
        bin = env!("CARGO_BIN_EXE_agentty"),
    );
    /// The tmux server goes with the test, also when it fails.
    struct Guard(tmux::Pane);
    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.kill_server();
        }
    }
    let guard = Guard(tmux::Pane::spawn(
        tmux::socket_name("steer-at-stop"),
        100,
        30,
        &command,
    ));
    let pane = &guard.0;
    pane.wait_for_text("Ask the agent anything");
    pane.type_text("run the sleep-tool");
    pane.keys(&["Enter"]);
    pane.wait_for_text("Enter steers");
    pane.wait_for_text("pid ");
    pane.type_text("my steer");
    pane.keys(&["Enter"]);
    pane.wait_for_text("↳ steer: my steer");
    pane.keys(&["Escape"]);
    let stopped = pane.wait_for_text("back in the editor: my steer");
    eprintln!("after Esc:\n{stopped}");
    let screen = pane.wait_for_text("Enter sends");
    assert!(!screen.contains("↳ steer: my steer"), "{screen}");
    assert!(
        screen.lines().any(|line| line.trim_end() == "my steer"),
        "the steer is back in the editor: {screen}"
    );
    pane.keys(&["Enter"]);
    let after = pane.wait_for_text("Prompt 2 in session");
    eprintln!("the next turn:\n{after}");
    assert!(!after.contains("You steered me"), "{after}");
    let requests: Vec<Vec<String>> =
        std::fs::read_to_string(requests_file(&state.path().join("demo")))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str::<DemoRequest>(line).unwrap().messages)
            .collect();
    assert_eq!(
        requests.last().unwrap(),
        &["run the sleep-tool", "my steer"],
        "the steer reached the agent once, as the prompt the user sent: {requests:#?}"
    );
}
