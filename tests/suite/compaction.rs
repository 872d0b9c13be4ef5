//! `/compact` on real processes: the demo agent in pi's RPC mode (the stand-in for pi in CI)
//! behind the real RPC provider and orchestrator. The demo agent logs what it "sends to its
//! model" (`requests.jsonl`), so these tests read the summarisation request and what the next
//! prompt carries instead of the earlier turns.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::timeout;

use agentty::demo_agent::state::{requests_file, DemoRequest, COMPACTION_REQUEST, SUMMARY_PREFIX};
use agentty::orchestrator::{
    spawn_orchestrator, Command, OrchestratorEvent as Ev, OrchestratorHandle, OrchestratorOptions,
    TurnOutcome,
};
use agentty::provider::{build_provider_with, Provider, Transport};
use agentty::stream::AgentMessage;

use crate::support::demo_launcher::DemoLauncher;

const PATIENCE: Duration = Duration::from_secs(30);

struct World {
    demo: DemoLauncher,
    handle: OrchestratorHandle,
}

impl World {
    fn new(transport: Transport, time_scale: &str) -> Self {
        let demo = DemoLauncher::new();
        let provider: Arc<dyn Provider> =
            build_provider_with("demo", &demo.settings(&[], time_scale), transport).unwrap();
        let mut options = OrchestratorOptions::new(provider);
        options.cwd = Some(demo.state.path().to_path_buf());
        let handle = spawn_orchestrator(options);
        Self { demo, handle }
    }

    async fn next(&mut self) -> Ev {
        timeout(PATIENCE, self.handle.events.recv())
            .await
            .expect("an event in time")
            .expect("the orchestrator runs")
    }

    /// Sends `command` and collects the events up to the end of its turn.
    async fn turn(&mut self, command: Command) -> Vec<Ev> {
        self.handle.commands.send(command).unwrap();
        self.until(|event| matches!(event, Ev::TurnEnded { .. }))
            .await
    }

    async fn until(&mut self, done: impl Fn(&Ev) -> bool) -> Vec<Ev> {
        let mut seen = Vec::new();
        loop {
            let event = self.next().await;
            let last = done(&event);
            seen.push(event);
            if last {
                return seen;
            }
        }
    }

    fn requests(&self) -> Vec<DemoRequest> {
        std::fs::read_to_string(requests_file(self.demo.state.path()))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).expect("a request line"))
            .collect()
    }
}

fn outcome(events: &[Ev]) -> &TurnOutcome {
    events
        .iter()
        .find_map(|event| match event {
            Ev::TurnEnded { outcome, .. } => Some(outcome),
            _ => None,
        })
        .expect("the turn ended")
}

fn compacted_notices(events: &[Ev]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            Ev::Message {
                message: AgentMessage::Notice { kind, message },
                ..
            } if kind == "compacted" => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn refusal(events: &[Ev]) -> Option<String> {
    events.iter().find_map(|event| match event {
        Ev::CompactionRefused { message } => Some(message.clone()),
        _ => None,
    })
}

#[tokio::test]
async fn pi_rpc_compaction_replaces_the_earlier_turns_with_a_summary() {
    let mut world = World::new(Transport::Rpc, "0");
    for prompt in ["first prompt", "second prompt"] {
        let events = world.turn(Command::Submit(prompt.into())).await;
        assert_eq!(outcome(&events), &TurnOutcome::Completed);
    }
    let events = world
        .turn(Command::Compact(Some("keep the names".into())))
        .await;
    assert!(
        events.iter().any(|event| matches!(event,
            Ev::CompactionStarted { instructions: Some(text), .. } if text == "keep the names")),
        "{events:?}"
    );
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, Ev::TurnStarted { .. })),
        "a compaction is no prompt: {events:?}"
    );
    assert_eq!(outcome(&events), &TurnOutcome::Completed);
    assert_eq!(
        compacted_notices(&events),
        ["Conversation compacted: 2,580 tokens summarised"]
    );
    let summarise = world.requests().pop().expect("the summarisation request");
    assert_eq!(
        summarise.messages,
        [
            "first prompt".to_owned(),
            "second prompt".to_owned(),
            format!("{COMPACTION_REQUEST} Focus: keep the names"),
        ]
    );

    let events = world.turn(Command::Submit("third prompt".into())).await;
    assert_eq!(outcome(&events), &TurnOutcome::Completed);
    let next = world.requests().pop().expect("the next prompt's request");
    assert_eq!(next.messages.len(), 2, "{:?}", next.messages);
    assert!(next.messages[0].starts_with(SUMMARY_PREFIX), "{next:?}");
    assert_eq!(next.messages[1], "third prompt");
    assert_eq!(world.demo.starts().len(), 1, "one pi process throughout");
}

#[tokio::test]
async fn nothing_to_compact_before_the_first_prompt() {
    let mut world = World::new(Transport::Rpc, "0");
    world.handle.commands.send(Command::Compact(None)).unwrap();
    let events = world
        .until(|event| matches!(event, Ev::CompactionRefused { .. }))
        .await;
    assert!(refusal(&events)
        .unwrap()
        .starts_with("Nothing to compact yet"));
    assert!(world.requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn a_transport_without_compaction_says_so_and_sends_nothing() {
    let mut world = World::new(Transport::Json, "0");
    world.turn(Command::Submit("hello".into())).await;
    let sent = world.requests().len();
    world.handle.commands.send(Command::Compact(None)).unwrap();
    let events = world
        .until(|event| matches!(event, Ev::CompactionRefused { .. }))
        .await;
    let message = refusal(&events).unwrap();
    assert!(
        message.contains("not available with demo over json"),
        "{message}"
    );
    assert_eq!(world.requests().len(), sent, "nothing was sent");
    // The conversation goes on as before.
    let events = world.turn(Command::Submit("still here".into())).await;
    assert_eq!(outcome(&events), &TurnOutcome::Completed);
}

#[tokio::test]
async fn a_failed_compaction_is_one_notice_and_not_retried() {
    let mut world = World::new(Transport::Rpc, "0");
    world.turn(Command::Submit("only prompt".into())).await;
    world.turn(Command::Compact(None)).await;
    let sent = world.requests().len();
    let events = world.turn(Command::Compact(None)).await;
    match outcome(&events) {
        TurnOutcome::Failed { message, .. } => {
            assert!(message.contains("Already compacted"), "{message}")
        }
        other => panic!("not a failure: {other:?}"),
    }
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, Ev::RetryScheduled { .. })),
        "{events:?}"
    );
    // Retry means a prompt's turn: it does not compact again.
    world.handle.commands.send(Command::RetryLastTurn).unwrap();
    let events = world.turn(Command::Submit("after".into())).await;
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, Ev::CompactionStarted { .. })),
        "{events:?}"
    );
    assert_eq!(outcome(&events), &TurnOutcome::Completed);
    let requests = world.requests();
    assert_eq!(requests.len(), sent + 1, "only the new prompt went out");
    assert_eq!(requests.last().unwrap().messages.last().unwrap(), "after");
}

#[tokio::test]
async fn a_stopped_compaction_leaves_the_conversation_whole() {
    let mut world = World::new(Transport::Rpc, "1");
    world.turn(Command::Submit("one".into())).await;
    world
        .handle
        .commands
        .send(Command::Compact(Some("slow".into())))
        .unwrap();
    world
        .until(|event| matches!(event, Ev::AttemptStarted { .. }))
        .await;
    world.handle.commands.send(Command::Stop).unwrap();
    let events = world
        .until(|event| matches!(event, Ev::TurnEnded { .. }))
        .await;
    assert_eq!(outcome(&events), &TurnOutcome::Cancelled);
    assert!(compacted_notices(&events).is_empty());

    let events = world.turn(Command::Submit("two".into())).await;
    assert_eq!(outcome(&events), &TurnOutcome::Completed);
    let last = world.requests().pop().unwrap();
    assert_eq!(
        last.messages,
        ["one", "two"],
        "the session was not compacted"
    );
    assert_eq!(
        world.demo.starts().len(),
        2,
        "pi was stopped and started again"
    );
}

/// The demo agent as Codex's app-server, behind the real app-server provider.
fn codex_world() -> World {
    use agentty::config::PermissionPolicy;
    use agentty::provider::{build_backend, provider_on};
    let demo = DemoLauncher::new();
    let backend = build_backend("demo", &demo.settings(&[], "0")).unwrap();
    let provider = provider_on(backend, Transport::AppServer, PermissionPolicy::Ask).unwrap();
    let mut options = OrchestratorOptions::new(provider);
    options.cwd = Some(demo.state.path().to_path_buf());
    let handle = spawn_orchestrator(options);
    World { demo, handle }
}

/// The users of each request the demo app-server made, oldest first.
fn codex_requests(world: &World) -> Vec<Vec<String>> {
    let file = agentty::demo_agent::codex_app_server::requests_file(world.demo.state.path());
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let request: serde_json::Value = serde_json::from_str(line).unwrap();
            serde_json::from_value(request["users"].clone()).unwrap()
        })
        .collect()
}

#[tokio::test]
async fn codex_app_server_compaction_replaces_the_earlier_turns_with_a_summary() {
    let mut world = codex_world();
    for prompt in ["first prompt", "second prompt"] {
        let events = world.turn(Command::Submit(prompt.into())).await;
        assert_eq!(outcome(&events), &TurnOutcome::Completed, "{events:?}");
    }
    let events = world.turn(Command::Compact(None)).await;
    assert_eq!(outcome(&events), &TurnOutcome::Completed, "{events:?}");
    assert_eq!(compacted_notices(&events), ["Conversation compacted"]);
    let summarise = codex_requests(&world).pop().unwrap();
    assert_eq!(
        summarise,
        ["first prompt", "second prompt", COMPACTION_REQUEST]
    );

    let events = world.turn(Command::Submit("third prompt".into())).await;
    assert_eq!(outcome(&events), &TurnOutcome::Completed);
    let next = codex_requests(&world).pop().unwrap();
    assert_eq!(next.len(), 2, "{next:?}");
    assert!(next[0].starts_with(SUMMARY_PREFIX), "{next:?}");
    assert_eq!(next[1], "third prompt");
    assert_eq!(world.demo.starts().len(), 1, "one app-server throughout");
}
