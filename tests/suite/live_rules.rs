//! The rules the one turn driver (`provider::live`) keeps for every long-lived transport,
//! each tested once and run on all four: the demo agent behind pi's RPC mode, Claude Code's
//! stream-json mode, Codex's app-server and ACP (`agentty demo-agent --mode rpc |
//! claude-stream | codex-app-server | acp`), real processes all. What agentty wrote to the
//! agent is read from the demo's stdin log; what the turn started, from /proc.
//!
//! - A stop that the agent answers in-band leaves none of the turn's tools running, even when
//!   the agent leaves them (the demo's `leave tools` knob plays Codex), and the process stays
//!   for the next turn.
//! - A stop while a question is open cancels in-band first, then answers it `cancelled`.
//! - An answer the agent did not offer is ignored; the question stays open for a real one.
//! - The time a stop reports runs to its terminal message: when the agent ignores the in-band
//!   cancel, the signal stages and the close are in it.
//! - A message typed while a turn stops comes back to the user (`not_delivered`), on every
//!   transport that takes messages mid-turn.
//!
//! Nothing here is timed but the last rule's report, against the time the test waited.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use agentty::config::PermissionPolicy;
use agentty::demo_agent::knobs::{IGNORE_CANCEL_VAR, LEAVE_TOOLS_VAR, STDIN_LOG_VAR};
use agentty::provider::{
    build_provider_with, AgentStream, Interjection, Provider, SessionRef, StopControl,
    StopProgress, Transport,
};
use agentty::stream::{
    AgentMessage, NoticeKind, PermissionOptionKind, PermissionResolver, StopStage,
    PERMISSION_CANCELLED,
};

use crate::support::agent_stream::{
    alive, collect, read_until, resolutions, session_id, terminals, until_permission_request,
    wait_gone, PATIENCE,
};
use crate::support::demo_launcher::DemoLauncher;

/// One of the demo agent's two-way modes, and the prompts that play each rule's scenario in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Rpc,
    ClaudeStream,
    CodexAppServer,
    Acp,
}

impl Mode {
    fn transport(self) -> Transport {
        match self {
            Mode::Rpc => Transport::Rpc,
            Mode::ClaudeStream => Transport::Stream,
            Mode::CodexAppServer => Transport::AppServer,
            Mode::Acp => Transport::Acp,
        }
    }

    /// A turn whose tool runs a real `sleep`.
    fn sleeping(self) -> &'static str {
        match self {
            Mode::Rpc => "run the sleep-tool",
            _ => "sleep a while",
        }
    }

    /// A turn that asks permission before it acts.
    fn asking(self) -> &'static str {
        match self {
            Mode::Rpc => unreachable!("pi asks no permission"),
            Mode::ClaudeStream | Mode::CodexAppServer => "write the file",
            Mode::Acp => "ask permission",
        }
    }

    /// Whether `line` (read on the agent's stdin) is the in-band cancel.
    fn is_cancel(self, line: &Value) -> bool {
        match self {
            Mode::Rpc => line["type"] == "abort",
            Mode::ClaudeStream => {
                line["type"] == "control_request" && line["request"]["subtype"] == "interrupt"
            }
            Mode::CodexAppServer => line["method"] == "turn/interrupt",
            Mode::Acp => line["method"] == "session/cancel",
        }
    }

    /// Whether `line` answers the agent's question `id`.
    fn answers(self, line: &Value, id: &str) -> bool {
        match self {
            Mode::ClaudeStream => {
                line["type"] == "control_response" && line["response"]["request_id"] == id
            }
            _ => {
                line.get("method").is_none()
                    && line.get("result").is_some()
                    && match &line["id"] {
                        Value::String(text) => text == id,
                        Value::Number(number) => number.to_string() == id,
                        _ => false,
                    }
            }
        }
    }
}

/// The demo agent in `mode` behind its provider (policy: ask), its stdin logged.
struct World {
    mode: Mode,
    demo: DemoLauncher,
    provider: Arc<dyn Provider>,
    stdin_log: PathBuf,
}

impl World {
    /// `knobs`: the demo's test knobs to set (see `agentty::demo_agent::knobs`).
    fn new(mode: Mode, knobs: &[&str]) -> World {
        World::paced(mode, knobs, "0.1")
    }

    /// [`World::new`] with the demo's delays scaled by `time_scale`.
    fn paced(mode: Mode, knobs: &[&str], time_scale: &str) -> World {
        let demo = DemoLauncher::new();
        let stdin_log = demo.state.path().join("stdin.jsonl");
        let mut settings = demo.settings(&[], time_scale);
        settings.permissions = Some(PermissionPolicy::Ask);
        settings
            .env
            .insert(STDIN_LOG_VAR.to_owned(), stdin_log.display().to_string());
        for knob in knobs {
            settings.env.insert((*knob).to_owned(), "1".to_owned());
        }
        let provider = build_provider_with("demo", &settings, mode.transport()).unwrap();
        World {
            mode,
            demo,
            provider,
            stdin_log,
        }
    }

    fn execute(&self, prompt: &str, session: SessionRef, stop: &StopControl) -> AgentStream {
        self.provider
            .execute(self.demo.request(prompt, session), stop.clone())
    }

    async fn turn(&self, prompt: &str, session: SessionRef) -> Vec<AgentMessage> {
        collect(self.execute(prompt, session, &StopControl::new())).await
    }

    /// What agentty wrote on the agent's stdin, in order.
    fn stdin(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.stdin_log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or(Value::Null))
            .collect()
    }

    /// The agent's process, as its launcher recorded it (the launcher execs the agent).
    fn agent(&self) -> i32 {
        let starts = self.demo.starts();
        assert_eq!(
            starts.len(),
            1,
            "{:?}: one process for the conversation",
            self.mode
        );
        starts[0]
    }

    /// The next turn completes on the same process.
    async fn next_turn_completes_on_the_same_process(&self, session: String) {
        let next = self.turn("hello again", SessionRef::Resume(session)).await;
        assert!(
            matches!(terminals(&next)[..], [AgentMessage::Completed { .. }]),
            "{:?}: {next:#?}",
            self.mode
        );
        self.agent();
    }
}

/// Runs `$rule` on each mode named, as a test of its own (`live_rules::$rule::$mode`).
macro_rules! on_modes {
    ($rule:ident: $($mode:ident => $variant:ident),+ $(,)?) => {
        mod $rule {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $mode() {
                    super::$rule(super::Mode::$variant).await;
                }
            )+
        }
    };
}

on_modes!(a_stop_leaves_none_of_the_turns_tools_running:
    rpc => Rpc, claude_stream => ClaudeStream, codex_app_server => CodexAppServer, acp => Acp);

async fn a_stop_leaves_none_of_the_turns_tools_running(mode: Mode) {
    let world = World::new(mode, &[LEAVE_TOOLS_VAR]);
    let stop = StopControl::new();
    let mut stream = world.execute(mode.sleeping(), SessionRef::New, &stop);
    let mut seen = read_until(&mut stream, |message| {
        matches!(message, AgentMessage::ToolCall { .. })
    })
    .await;
    let deadline = Instant::now() + PATIENCE;
    let sleepers = loop {
        let sleepers = world.demo.sleepers();
        if !sleepers.is_empty() || Instant::now() > deadline {
            break sleepers;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(!sleepers.is_empty(), "{mode:?}: the tool's sleep never ran");
    stop.stop();
    seen.extend(collect(stream).await);
    assert!(
        matches!(
            terminals(&seen)[..],
            [AgentMessage::Cancelled {
                stop_stage: StopStage::Cancel,
                ..
            }]
        ),
        "{mode:?}: stopped in-band: {seen:#?}"
    );
    for sleeper in sleepers {
        assert!(
            wait_gone(sleeper).await,
            "{mode:?}: the tool the agent left running ({sleeper}) outlived the stop"
        );
    }
    assert!(alive(world.agent()), "{mode:?}: the agent stays");
    world
        .next_turn_completes_on_the_same_process(session_id(&seen))
        .await;
}

on_modes!(a_stop_cancels_in_band_before_it_answers_the_open_question:
    claude_stream => ClaudeStream, codex_app_server => CodexAppServer, acp => Acp);

async fn a_stop_cancels_in_band_before_it_answers_the_open_question(mode: Mode) {
    let world = World::new(mode, &[]);
    let stop = StopControl::new();
    let mut stream = world.execute(mode.asking(), SessionRef::New, &stop);
    let asked = until_permission_request(&mut stream).await;
    stop.stop();
    let rest = collect(stream).await;
    assert!(
        matches!(terminals(&rest)[..], [AgentMessage::Cancelled { .. }]),
        "{mode:?}: {rest:#?}"
    );
    assert_eq!(
        resolutions(&rest),
        [(PERMISSION_CANCELLED.to_owned(), PermissionResolver::User)],
        "{mode:?}"
    );
    let written = world.stdin();
    let at = |wanted: &dyn Fn(&Value) -> bool| {
        written
            .iter()
            .position(wanted)
            .unwrap_or_else(|| panic!("{mode:?}: not written: {written:#?}"))
    };
    let cancel = at(&|line| mode.is_cancel(line));
    let answer = at(&|line| mode.answers(line, &asked.id));
    assert!(
        cancel < answer,
        "{mode:?}: the cancel ({cancel}) goes before the answer ({answer}): {written:#?}"
    );
}

on_modes!(an_answer_the_agent_did_not_offer_is_ignored:
    claude_stream => ClaudeStream, codex_app_server => CodexAppServer, acp => Acp);

async fn an_answer_the_agent_did_not_offer_is_ignored(mode: Mode) {
    let world = World::new(mode, &[]);
    let mut stream = world.execute(mode.asking(), SessionRef::New, &StopControl::new());
    let asked = until_permission_request(&mut stream).await;
    assert!(!asked.options.iter().any(|option| option.id == "always-yes"));
    assert!(
        world
            .provider
            .answer_permission(&asked.id, Some("always-yes".to_owned()), None),
        "{mode:?}: the running turn takes the answer"
    );
    let allow = asked
        .option_of(PermissionOptionKind::AllowOnce)
        .expect("an allow-once option")
        .id
        .clone();
    assert!(world
        .provider
        .answer_permission(&asked.id, Some(allow.clone()), None));
    let rest = collect(stream).await;
    assert_eq!(
        resolutions(&rest),
        [(allow, PermissionResolver::User)],
        "{mode:?}: only the offered answer reached the agent"
    );
    assert!(
        matches!(terminals(&rest)[..], [AgentMessage::Completed { .. }]),
        "{mode:?}: {rest:#?}"
    );
    let answers = world
        .stdin()
        .iter()
        .filter(|line| mode.answers(line, &asked.id))
        .count();
    assert_eq!(answers, 1, "{mode:?}: one answer written");
}

on_modes!(a_stops_time_runs_to_its_terminal_message:
    rpc => Rpc, claude_stream => ClaudeStream, codex_app_server => CodexAppServer, acp => Acp);

async fn a_stops_time_runs_to_its_terminal_message(mode: Mode) {
    // At full pace a slow answer outlasts the in-band grace in every mode.
    let world = World::paced(mode, &[IGNORE_CANCEL_VAR], "1");
    let stop = StopControl::new();
    let mut stream = world.execute("slow", SessionRef::New, &stop);
    read_until(&mut stream, |message| {
        matches!(message, AgentMessage::Assistant { .. })
    })
    .await;
    let stopped_at = Instant::now();
    stop.stop();
    let rest = collect(stream).await;
    let waited = stopped_at.elapsed();
    let (stage, elapsed_ms) = match terminals(&rest)[..] {
        [AgentMessage::Cancelled {
            stop_stage,
            elapsed_ms,
        }] => (*stop_stage, *elapsed_ms),
        _ => panic!("{mode:?}: {rest:#?}"),
    };
    assert_ne!(stage, StopStage::Cancel, "{mode:?}: the cancel was ignored");
    let reported = Duration::from_millis(elapsed_ms);
    assert!(
        reported >= Duration::from_secs(2),
        "{mode:?}: the in-band grace is in the stop's time: {reported:?}"
    );
    assert!(
        reported <= waited && waited - reported < Duration::from_secs(1),
        "{mode:?}: the stop's time ({reported:?}) is what the turn took to end after the stop \
         ({waited:?}), the process's end included"
    );
    // The next turn starts the agent again.
    let next = world.turn("hello", SessionRef::New).await;
    assert!(
        matches!(terminals(&next)[..], [AgentMessage::Completed { .. }]),
        "{mode:?}: {next:#?}"
    );
    assert_eq!(world.demo.starts().len(), 2, "{mode:?}");
}

on_modes!(a_message_typed_while_the_turn_stops_comes_back_to_the_user:
    rpc => Rpc, claude_stream => ClaudeStream, codex_app_server => CodexAppServer);

/// A message typed while the turn stops never goes out, and comes back to the user
/// (`not_delivered`), once.
async fn a_message_typed_while_the_turn_stops_comes_back_to_the_user(mode: Mode) {
    // An agent that ignores the in-band cancel: the turn is still stopping when the message
    // comes (the signal stages end it 2 s later).
    let world = World::paced(mode, &[IGNORE_CANCEL_VAR], "1");
    let stop = StopControl::new();
    let mut stream = world.execute("slow", SessionRef::New, &stop);
    let mut seen = read_until(&mut stream, |message| {
        matches!(message, AgentMessage::Assistant { .. })
    })
    .await;
    let mut progress = stop.subscribe();
    stop.stop();
    // The in-band cancel is out (the stop's first stage runs).
    tokio::time::timeout(
        PATIENCE,
        progress.wait_for(|now| *now != StopProgress::Running),
    )
    .await
    .expect("in time")
    .expect("the stop runs");
    assert!(
        world.provider.interject(Interjection::Steer, "too late"),
        "{mode:?}: the running turn takes the message"
    );
    seen.extend(collect(stream).await);
    let notices = |kind: NoticeKind| -> Vec<&str> {
        seen.iter()
            .filter_map(|message| match message {
                AgentMessage::Notice {
                    kind: said,
                    message,
                } if *said == kind.wire() => Some(message.as_str()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(
        notices(NoticeKind::NotDelivered),
        ["too late"],
        "{mode:?}: {seen:#?}"
    );
    assert!(notices(NoticeKind::SteerDelivered).is_empty(), "{mode:?}");
    assert!(
        matches!(terminals(&seen)[..], [AgentMessage::Cancelled { .. }]),
        "{mode:?}: {seen:#?}"
    );
}
