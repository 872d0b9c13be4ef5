//! `/compact` on real processes: the demo agent in pi's RPC mode (the stand-in for pi in CI)
//! behind the real RPC provider and orchestrator. The demo agent logs what it "sends to its
//! model" (`requests.jsonl`), so these tests read the summarisation request and what the next
//! prompt carries instead of the earlier turns. Claude Code's stream-json transport runs on a
//! fake Claude Code (a shell script, as its CLI is not in CI) that logs the user messages it
//! receives, so its tests read the `/compact` message and the outcome the chat gets from the
//! boundary, or from its absence.

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

/// The agent behind the orchestrator (the demo agent unless said), kept for as long as the
/// world runs, and the orchestrator.
struct World<Agent = DemoLauncher> {
    agent: Agent,
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
        Self {
            agent: demo,
            handle,
        }
    }

    fn requests(&self) -> Vec<DemoRequest> {
        std::fs::read_to_string(requests_file(self.agent.state.path()))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).expect("a request line"))
            .collect()
    }
}

impl<Agent> World<Agent> {
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
}

/// Compacts with the instructions "keep the names": the compaction says them when it starts,
/// and it is no prompt's turn.
async fn compact_keeping_the_names<A>(world: &mut World<A>) -> Vec<Ev> {
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
    events
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
    let events = compact_keeping_the_names(&mut world).await;
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
    assert_eq!(world.agent.starts().len(), 1, "one pi process throughout");
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
        world.agent.starts().len(),
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
    World {
        agent: demo,
        handle,
    }
}

/// The users of each request the demo app-server made, oldest first.
fn codex_requests(world: &World) -> Vec<Vec<String>> {
    let file = agentty::demo_agent::codex_app_server::requests_file(world.agent.state.path());
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
    assert_eq!(world.agent.starts().len(), 1, "one app-server throughout");
}

/// Claude Code in stream-json mode, as much of it as `/compact` needs (its CLI is not in CI):
/// it logs its start (`$FAKE_STARTS`) and every stdin line (`$FAKE_RECEIVED`), answers
/// `initialize`, answers a prompt with `said <prompt>`, and a `/compact` user message as Claude
/// Code 2.1.197 does: `system/compact_boundary` with the context's size before, then a `result`
/// with no text; `/compact nothing` as when there is too little to compact: text and no
/// boundary. After each turn's end it appends to its session file, as Claude Code does, so the
/// next checkpoint need not wait for that write.
const FAKE_CLAUDE_STREAM: &str = r#"
id=
while [ $# -gt 0 ]; do
  case "$1" in --session-id|--resume) id=$2; shift ;; esac
  shift
done
printf '%s\n' "$$" >> "$FAKE_STARTS"
sessions="$CLAUDE_CONFIG_DIR/projects/work"
mkdir -p "$sessions"
answer() {
  printf '{"type":"assistant","session_id":"%s","message":{"id":"m-%s","role":"assistant","content":[{"type":"text","text":"%s"}],"stop_reason":"end_turn"}}\n' "$id" "$$" "$1"
  printf '{"type":"result","subtype":"success","is_error":false,"result":"%s","stop_reason":"end_turn","session_id":"%s"}\n' "$1" "$id"
}
while IFS= read -r line; do
  printf '%s\n' "$line" >> "$FAKE_RECEIVED"
  case "$line" in
  *'"subtype":"initialize"'*)
    request=${line#*'"request_id":"'}
    printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":{}}}\n' "${request%%\"*}"
    ;;
  *'"type":"user"'*)
    printf '{"type":"system","subtype":"init","session_id":"%s"}\n' "$id"
    case "$line" in
    *'"content":"/compact nothing"'*)
      answer "Not enough messages to compact."
      ;;
    *'"content":"/compact'*)
      printf '{"type":"system","subtype":"compact_boundary","session_id":"%s","compact_metadata":{"trigger":"manual","pre_tokens":2580}}\n' "$id"
      printf '{"type":"result","subtype":"success","is_error":false,"result":"","stop_reason":null,"session_id":"%s"}\n' "$id"
      ;;
    *)
      prompt=${line#*'"content":"'}
      answer "said ${prompt%%\"*}"
      ;;
    esac
    (sleep 0.1; printf '{"turn":"ended"}\n' >> "$sessions/$id.jsonl") </dev/null >/dev/null 2>&1 &
    ;;
  esac
done
"#;

/// The fake Claude Code's files: the script, its config directory, its logs.
struct FakeClaude {
    dir: tempfile::TempDir,
}

impl FakeClaude {
    fn log(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join(name))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The content of each user message Claude Code received, oldest first.
    fn user_messages(&self) -> Vec<String> {
        self.log("received.jsonl")
            .iter()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .filter(|line| line["type"] == "user")
            .map(|line| line["message"]["content"].as_str().unwrap().to_owned())
            .collect()
    }

    fn starts(&self) -> usize {
        self.log("starts").len()
    }
}

/// The fake Claude Code behind the real Claude backend, its stream-json provider and the
/// orchestrator.
fn claude_world() -> World<FakeClaude> {
    use agentty::config::{PermissionPolicy, ProviderSettings};
    use agentty::provider::{build_backend, provider_on};
    let dir = tempfile::tempdir().unwrap();
    let fake = crate::support::script_agent::write_script(dir.path(), "claude", FAKE_CLAUDE_STREAM);
    let path = |name: &str| dir.path().join(name).display().to_string();
    let settings = ProviderSettings {
        command: Some(fake),
        env: [
            ("CLAUDE_CONFIG_DIR", path("config")),
            ("FAKE_RECEIVED", path("received.jsonl")),
            ("FAKE_STARTS", path("starts")),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect(),
        ..ProviderSettings::default()
    };
    let backend = build_backend("claude", &settings).unwrap();
    let provider = provider_on(backend, Transport::Stream, PermissionPolicy::Ask).unwrap();
    let mut options = OrchestratorOptions::new(provider);
    options.cwd = Some(dir.path().to_path_buf());
    let handle = spawn_orchestrator(options);
    World {
        agent: FakeClaude { dir },
        handle,
    }
}

#[tokio::test]
async fn claude_stream_compaction_sends_the_slash_command_and_reports_the_boundary() {
    let mut world = claude_world();
    for prompt in ["first prompt", "second prompt"] {
        let events = world.turn(Command::Submit(prompt.into())).await;
        assert_eq!(outcome(&events), &TurnOutcome::Completed, "{events:?}");
    }
    let events = compact_keeping_the_names(&mut world).await;
    assert_eq!(outcome(&events), &TurnOutcome::Completed, "{events:?}");
    assert_eq!(
        compacted_notices(&events),
        ["Conversation compacted: 2,580 tokens summarised"]
    );
    assert_eq!(
        world.agent.user_messages(),
        ["first prompt", "second prompt", "/compact keep the names"]
    );

    let events = world.turn(Command::Submit("third prompt".into())).await;
    assert_eq!(outcome(&events), &TurnOutcome::Completed);
    assert_eq!(
        world.agent.user_messages().last().map(String::as_str),
        Some("third prompt")
    );
    assert_eq!(
        world.agent.starts(),
        1,
        "one Claude Code process throughout"
    );
}

#[tokio::test]
async fn a_claude_compaction_without_a_boundary_is_one_failure_with_what_claude_said() {
    let mut world = claude_world();
    world.turn(Command::Submit("only prompt".into())).await;
    let events = world.turn(Command::Compact(Some("nothing".into()))).await;
    match outcome(&events) {
        TurnOutcome::Failed { message, .. } => assert_eq!(
            message,
            "Claude did not compact the conversation: Not enough messages to compact."
        ),
        other => panic!("not a failure: {other:?}"),
    }
    assert!(compacted_notices(&events).is_empty(), "{events:?}");
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, Ev::RetryScheduled { .. })),
        "{events:?}"
    );
    assert_eq!(
        world.agent.user_messages(),
        ["only prompt", "/compact nothing"]
    );
}

/// An ACP agent that announced its own compaction command (the demo agent's `compress`, as
/// Qwen Code's): `/compact` sends it as the prompt `/compress …`, and its words are the result.
#[tokio::test]
async fn acp_compaction_uses_the_agents_own_compress_command() {
    let mut world = World::new(Transport::Acp, "0");
    let events = world.turn(Command::Submit("first prompt".into())).await;
    assert_eq!(outcome(&events), &TurnOutcome::Completed, "{events:?}");
    let events = compact_keeping_the_names(&mut world).await;
    assert_eq!(outcome(&events), &TurnOutcome::Completed, "{events:?}");
    assert_eq!(
        compacted_notices(&events),
        ["Conversation compacted (/compress): Compressing context...Context compressed (1234 -> ~1056)."]
    );
    let last = world.requests().last().unwrap().messages.clone();
    assert_eq!(last, ["first prompt", "/compress keep the names"]);
}
