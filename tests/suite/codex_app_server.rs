//! The Codex app-server transport against the demo agent playing `codex app-server`
//! (`agentty demo-agent --mode codex-app-server`) as a real child process: live deltas, one
//! process for the whole conversation, permission prompts answered allow and decline, the
//! in-band stop, steering, retries that keep the conversation whole through `thread/revert`,
//! resume in a new process, `/model` and the reasoning effort, and `agentty run` honouring
//! `--permissions`. What the demo "sent to its model" is read from its request log.
//!
//! Timeouts are generous and nothing is timed: the machine may be loaded.

use crate::support::agent_stream;
use crate::support::demo_launcher;
use crate::support::real_cli;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_stream::{collect, read_until, session_id, text, until_permission_request, PATIENCE};
use agentty::config::{PermissionPolicy, ProviderSettings};
use agentty::demo_agent::codex_app_server::{requests_file, WRITTEN_FILE};
use agentty::provider::{
    build_backend, provider_on, AgentSetting, AttemptRequest, Interjection, Provider, SessionRef,
    StopControl, Transport,
};
use agentty::stream::{AgentMessage, StopStage};
use demo_launcher::DemoLauncher;
use serde_json::Value;
use tempfile::TempDir;

/// The demo agent (its state dir, the launcher that records each start) and a working
/// directory for its threads.
struct Rig {
    demo: DemoLauncher,
    work: TempDir,
}

impl Rig {
    fn new() -> Rig {
        Rig {
            demo: DemoLauncher::new(),
            work: TempDir::new().unwrap(),
        }
    }

    fn settings(&self) -> ProviderSettings {
        self.demo.settings(&[], "0.2")
    }

    fn provider(&self, policy: PermissionPolicy) -> Arc<dyn Provider> {
        let backend = build_backend("demo", &self.settings()).unwrap();
        provider_on(backend, Transport::AppServer, policy).unwrap()
    }

    fn request(&self, prompt: &str, session: SessionRef) -> AttemptRequest {
        AttemptRequest {
            prompt: prompt.to_owned(),
            session,
            cwd: Some(self.work.path().to_path_buf()),
            attempt: 1,
            ..AttemptRequest::default()
        }
    }

    async fn run(
        &self,
        provider: &dyn Provider,
        prompt: &str,
        session: SessionRef,
    ) -> Vec<AgentMessage> {
        collect(provider.execute(self.request(prompt, session), StopControl::new())).await
    }

    /// The demo's model requests: `(users, model, pid)` each.
    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(requests_file(self.demo.state.path()))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    fn users(&self) -> Vec<Vec<String>> {
        self.requests()
            .iter()
            .map(|request| {
                request["users"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|user| user.as_str().unwrap().to_owned())
                    .collect()
            })
            .collect()
    }

    fn written(&self) -> PathBuf {
        self.work.path().join(WRITTEN_FILE)
    }
}

fn completed(messages: &[AgentMessage]) -> bool {
    matches!(messages.last(), Some(AgentMessage::Completed { .. }))
}

/// The attempt ended `terminal.cancelled` by the in-band stop (`turn/interrupt`).
fn stopped_in_band(messages: &[AgentMessage]) -> bool {
    matches!(
        messages.last(),
        Some(AgentMessage::Cancelled {
            stop_stage: StopStage::Cancel,
            ..
        })
    )
}

fn notices<'m>(messages: &'m [AgentMessage], wanted: &str) -> Vec<&'m str> {
    messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::Notice { kind, message } if kind == wanted => Some(message.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_stream_live_on_one_process_and_the_repeated_warning_shows_once() {
    let rig = Rig::new();
    let provider = rig.provider(PermissionPolicy::Ask);
    let one = rig
        .run(provider.as_ref(), "say hello", SessionRef::New)
        .await;
    assert!(completed(&one), "{one:?}");
    assert_eq!(text(&one), "Hello from the demo Codex app-server.");
    let deltas = one
        .iter()
        .filter(|message| matches!(message, AgentMessage::Assistant { .. }))
        .count();
    assert!(deltas > 1, "live deltas: {one:?}");
    let thread = session_id(&one);
    let two = rig
        .run(
            provider.as_ref(),
            "and again",
            SessionRef::Resume(thread.clone()),
        )
        .await;
    assert!(completed(&two), "{two:?}");
    assert!(
        matches!(&two[0], AgentMessage::SessionResumed { session_id, .. } if *session_id == thread)
    );
    // Codex warns about the unknown model every turn; agentty says it once.
    assert_eq!(notices(&one, "warning").len(), 1, "{one:?}");
    assert!(notices(&two, "warning").is_empty(), "{two:?}");
    let requests = rig.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0]["pid"], requests[1]["pid"],
        "one process for both turns"
    );
    assert_eq!(rig.users()[1], ["say hello", "and again"]);
    let AgentMessage::Completed { usage, .. } = two.last().unwrap() else {
        unreachable!()
    };
    assert_eq!(
        usage.as_ref().and_then(|usage| usage.input_tokens),
        Some(12),
        "the turn's own"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_answered_allow_writes_the_file_and_decline_does_not() {
    let rig = Rig::new();
    let provider = rig.provider(PermissionPolicy::Ask);
    for (answer, written) in [("decline", false), ("accept", true)] {
        let mut stream = provider.execute(
            rig.request("please write it", SessionRef::New),
            StopControl::new(),
        );
        let request = until_permission_request(&mut stream).await;
        assert_eq!(
            request.command.as_deref(),
            Some(format!("touch {WRITTEN_FILE}").as_str())
        );
        assert!(!rig.written().exists(), "nothing runs before the answer");
        assert!(provider.answer_permission(&request.id, Some(answer.to_owned()), None));
        let rest = collect(stream).await;
        assert!(completed(&rest), "{rest:?}");
        assert_eq!(rig.written().exists(), written, "{answer}: {rest:?}");
        let resolved = rest.iter().any(|message| {
            matches!(message,
            AgentMessage::PermissionResolved { outcome, .. } if outcome == answer)
        });
        assert!(resolved, "{rest:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_that_stops_the_turn_ends_it_and_says_so() {
    let rig = Rig::new();
    let provider = rig.provider(PermissionPolicy::Ask);
    let mut stream = provider.execute(
        rig.request("please write it", SessionRef::New),
        StopControl::new(),
    );
    let request = until_permission_request(&mut stream).await;
    assert!(provider.answer_permission(
        &request.id,
        Some("cancel".into()),
        Some("use echo".into())
    ));
    let rest = collect(stream).await;
    assert!(
        matches!(rest.last(), Some(AgentMessage::Completed { stop_reason, .. }) if stop_reason == "refused"),
        "{rest:?}"
    );
    assert_eq!(
        notices(&rest, "warning"),
        ["Codex stopped the turn: you refused what it asked to do."]
    );
    assert!(!rig.written().exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_interrupts_in_band_and_the_process_takes_the_next_turn() {
    let rig = Rig::new();
    let provider = rig.provider(PermissionPolicy::Ask);
    let stop = StopControl::new();
    let mut stream = provider.execute(rig.request("a slow one", SessionRef::New), stop.clone());
    let seen = read_until(&mut stream, |message| {
        matches!(message, AgentMessage::Assistant { .. })
    })
    .await;
    stop.stop();
    let rest = collect(stream).await;
    assert!(stopped_in_band(&rest), "stage 0 ended it: {rest:?}");
    let thread = session_id(&seen);
    let next = rig
        .run(provider.as_ref(), "say hello", SessionRef::Resume(thread))
        .await;
    assert!(completed(&next), "{next:?}");
    let requests = rig.requests();
    assert_eq!(requests[0]["pid"], requests[1]["pid"], "the process stayed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_sent_mid_turn_steers_it_and_is_said_delivered() {
    let rig = Rig::new();
    let provider = rig.provider(PermissionPolicy::Ask);
    assert!(provider.can_interject());
    let mut stream = provider.execute(
        rig.request("a slow one", SessionRef::New),
        StopControl::new(),
    );
    read_until(&mut stream, |message| {
        matches!(message, AgentMessage::Assistant { .. })
    })
    .await;
    assert!(provider.interject(Interjection::Steer, "go left"));
    // A follow-up waits in agentty's own queue: Codex has none for after the turn.
    assert!(!provider.interject(Interjection::FollowUp, "later"));
    let rest = collect(stream).await;
    assert!(completed(&rest), "{rest:?}");
    assert_eq!(notices(&rest, "steer_delivered"), ["go left"]);
    assert!(text(&rest).contains("(steered: go left)"));
    assert_eq!(rig.users().last().unwrap(), &["a slow one", "go left"]);
    assert!(provider.agent_queue().unwrap().borrow().steering.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_middle_turn_reaches_the_model_with_each_prompt_once() {
    let rig = Rig::new();
    let provider = rig.provider(PermissionPolicy::Ask);
    let prompts = [
        "first prompt: remember 42".to_owned(),
        "second prompt, flaky: and now?".to_owned(),
        "third prompt: once more".to_owned(),
    ];
    let users = || rig.users();
    real_cli::retried_middle_turn_is_sent_once(
        "demo codex app-server",
        "a_retried_middle_turn_reaches_the_model_with_each_prompt_once",
        provider,
        rig.work.path(),
        &prompts,
        users,
    )
    .await;
    let pids: std::collections::HashSet<String> = rig
        .requests()
        .iter()
        .map(|request| request["pid"].to_string())
        .collect();
    assert_eq!(pids.len(), 1, "thread/revert, not a restart: {pids:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_first_turn_reaches_the_model_with_its_prompt_once() {
    let rig = Rig::new();
    let provider = rig.provider(PermissionPolicy::Ask);
    let prompts = [
        "first prompt, flaky: remember 42".to_owned(),
        "second prompt: and now?".to_owned(),
        "third prompt: unused".to_owned(),
    ];
    let users = || rig.users();
    real_cli::retried_first_turn_is_sent_once(
        "demo codex app-server",
        "a_retried_first_turn_reaches_the_model_with_its_prompt_once",
        provider,
        rig.work.path(),
        &prompts,
        users,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_resumes_in_a_new_process() {
    let rig = Rig::new();
    let first = rig.provider(PermissionPolicy::Ask);
    let one = rig
        .run(first.as_ref(), "remember 42", SessionRef::New)
        .await;
    let thread = session_id(&one);
    drop(first);
    let second = rig.provider(PermissionPolicy::Ask);
    let two = rig
        .run(
            second.as_ref(),
            "what was it?",
            SessionRef::Resume(thread.clone()),
        )
        .await;
    assert!(completed(&two), "{two:?}");
    assert!(
        matches!(&two[0], AgentMessage::SessionResumed { session_id, .. } if *session_id == thread)
    );
    assert_eq!(rig.users()[1], ["remember 42", "what was it?"]);
    let requests = rig.requests();
    assert_ne!(requests[0]["pid"], requests[1]["pid"]);
    // A thread Codex does not know is a lost session, not a retryable failure.
    let lost = rig
        .run(
            second.as_ref(),
            "hello",
            SessionRef::Resume("no-such-thread".into()),
        )
        .await;
    assert!(
        matches!(lost.last(), Some(AgentMessage::Failed(failure)) if failure.reason == agentty::stream::FailureReason::SessionLost),
        "{lost:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_come_from_model_list_and_a_choice_goes_with_the_next_turn() {
    let rig = Rig::new();
    let provider = rig.provider(PermissionPolicy::Ask);
    let one = rig
        .run(provider.as_ref(), "say hello", SessionRef::New)
        .await;
    let mut status = provider.agent_status().unwrap();
    let listed = tokio::time::timeout(PATIENCE, status.wait_for(|status| status.models.len() == 2))
        .await
        .expect("model/list in time")
        .unwrap()
        .clone();
    assert_eq!(listed.model.as_deref(), Some("demo-model"));
    assert_eq!(listed.thinking_levels, ["low", "medium", "high"]);
    assert_eq!(
        listed.thinking_level.as_deref(),
        Some("medium"),
        "the model's default"
    );
    assert!(provider.change_setting(AgentSetting::Model("demo-deep".into())));
    assert!(provider.change_setting(AgentSetting::ThinkingLevel("xhigh".into())));
    let now = provider.agent_status().unwrap().borrow().clone();
    assert_eq!(now.model.as_deref(), Some("demo-deep"));
    assert_eq!(now.thinking_levels, ["medium", "high", "xhigh"]);
    assert_eq!(now.thinking_level.as_deref(), Some("xhigh"));
    let two = rig
        .run(
            provider.as_ref(),
            "say hello",
            SessionRef::Resume(session_id(&one)),
        )
        .await;
    assert!(completed(&two));
    let last = rig.requests().pop().unwrap();
    assert_eq!(
        (last["model"].as_str(), last["effort"].as_str()),
        (Some("demo-deep"), Some("xhigh"))
    );
}

impl Rig {
    /// `agentty run` with `args` on the demo agent, in the rig's working directory.
    fn headless(&self, args: &[&str]) -> std::process::Output {
        std::process::Command::new(env!("CARGO_BIN_EXE_agentty"))
            .arg("run")
            .args(args)
            .env("AGENTTY_DEMO_STATE_DIR", self.demo.state.path())
            .env("AGENTTY_DEMO_TIME_SCALE", "0.1")
            .env("XDG_STATE_HOME", self.demo.state.path().join("xdg"))
            .current_dir(self.work.path())
            .output()
            .unwrap()
    }
}

/// `agentty run` on the app-server transport honours `--permissions`.
#[test]
fn headless_permissions_allow_writes_and_deny_refuses() {
    for (permissions, written) in [("deny", false), ("allow", true)] {
        let rig = Rig::new();
        let output = rig.headless(&[
            "--provider",
            "demo",
            "--transport",
            "app-server",
            "--permissions",
            permissions,
            "please write it",
        ]);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{permissions}: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(rig.written().exists(), written, "{permissions}: {stdout}");
        assert_eq!(stdout.contains("permission_refused"), !written, "{stdout}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_modes_are_codexs_approval_presets_and_full_access_runs_without_asking() {
    let rig = Rig::new();
    let provider = rig.provider(PermissionPolicy::Ask);
    let one = rig
        .run(provider.as_ref(), "say hello", SessionRef::New)
        .await;
    let status = provider.agent_status().unwrap().borrow().clone();
    let modes: Vec<&str> = status.modes.iter().map(|mode| mode.id.as_str()).collect();
    assert_eq!(modes, ["read-only", "auto", "full-access"]);
    assert_eq!(
        status.mode.as_deref(),
        Some("read-only"),
        "what the thread started with"
    );
    assert!(!provider.change_setting(AgentSetting::Mode("yolo".into())));
    assert!(provider.change_setting(AgentSetting::Mode("full-access".into())));
    assert_eq!(
        provider.agent_status().unwrap().borrow().mode.as_deref(),
        Some("full-access")
    );
    let two = rig
        .run(
            provider.as_ref(),
            "please write it",
            SessionRef::Resume(session_id(&one)),
        )
        .await;
    assert!(completed(&two), "{two:?}");
    assert!(
        !two.iter()
            .any(|message| matches!(message, AgentMessage::PermissionRequest(_))),
        "full access asks nothing: {two:?}"
    );
    assert!(rig.written().exists());
    let last = rig.requests().pop().unwrap();
    assert_eq!(last["approvalPolicy"], "never");
    assert_eq!(last["sandbox"], "dangerFullAccess");
}

/// Where the agent cannot ask (a one-shot transport), `--permissions` says it has no effect
/// instead of being ignored in silence.
#[test]
fn headless_permissions_on_a_transport_that_cannot_ask_say_so() {
    let rig = Rig::new();
    let output = rig.headless(&[
        "--provider",
        "demo",
        "--transport",
        "json",
        "--permissions",
        "allow",
        "hi",
    ]);
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--permissions allow has no effect over the json transport"),
        "{stderr}"
    );
}

/// Codex's `turn/interrupt` leaves a running command running; after the stop nothing the turn
/// started survives, and the app-server stays for the next turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_mid_command_kills_the_command_the_agent_left_running() {
    let rig = Rig::new();
    let provider = rig.provider(PermissionPolicy::Ask);
    let stop = StopControl::new();
    let mut stream = provider.execute(rig.request("please sleep", SessionRef::New), stop.clone());
    let seen = read_until(&mut stream, |message| {
        matches!(message, AgentMessage::ToolCall { .. })
    })
    .await;
    // Another test of the suite may run a `sleep 30` of its own at the same time: wait for one
    // under this test's agent.
    let agent = rig.demo.starts();
    let deadline = std::time::Instant::now() + PATIENCE;
    let ours: Vec<i32> = loop {
        let ours: Vec<i32> = real_cli::pids_running("sleep 30")
            .into_iter()
            .filter(|pid| agent.iter().any(|agent| is_descendant(*pid, *agent)))
            .collect();
        if !ours.is_empty() || std::time::Instant::now() > deadline {
            break ours;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(!ours.is_empty(), "the command runs under the agent");
    stop.stop();
    let rest = collect(stream).await;
    assert!(stopped_in_band(&rest), "stage 0 ended it: {rest:?}");
    let left = real_cli::survivors(ours, Duration::from_secs(5)).await;
    assert!(left.is_empty(), "the command survived the stop: {left:?}");
    let next = rig
        .run(
            provider.as_ref(),
            "say hello",
            SessionRef::Resume(session_id(&seen)),
        )
        .await;
    assert!(completed(&next), "{next:?}");
    assert_eq!(rig.demo.starts().len(), 1, "the same agent process");
}

/// Whether `pid` descends from `ancestor` (by /proc's parent links).
fn is_descendant(pid: i32, ancestor: i32) -> bool {
    let mut current = pid;
    for _ in 0..64 {
        if current == ancestor {
            return true;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{current}/stat")) else {
            return false;
        };
        let Some(parent) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|parent| parent.parse().ok())
        else {
            return false;
        };
        if parent <= 1 {
            return false;
        }
        current = parent;
    }
    false
}

/// `--continue`: the most recent thread of the directory, resumed in a new process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_resumes_the_latest_thread_of_the_directory() {
    let rig = Rig::new();
    let first = rig.provider(PermissionPolicy::Ask);
    let one = rig.run(first.as_ref(), "remember 7", SessionRef::New).await;
    drop(first);
    let second = rig.provider(PermissionPolicy::Ask);
    let two = rig
        .run(second.as_ref(), "what was it?", SessionRef::ContinueLatest)
        .await;
    assert!(completed(&two), "{two:?}");
    assert_eq!(session_id(&two), session_id(&one));
    assert!(
        matches!(&two[0], AgentMessage::SessionResumed { .. }),
        "{two:?}"
    );
    assert_eq!(rig.users()[1], ["remember 7", "what was it?"]);
}

/// The conversation's settings an attempt carries (the config's start, or the choices of a
/// resumed conversation) go with the turn of a new app-server, unless the user chose otherwise
/// in this run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conversations_mode_goes_with_the_first_turn_of_a_new_process() {
    let rig = Rig::new();
    let provider = rig.provider(PermissionPolicy::Ask);
    let request = AttemptRequest {
        settings: vec![AgentSetting::Mode("full-access".into())],
        ..rig.request("please write it", SessionRef::New)
    };
    let turn = collect(provider.execute(request, StopControl::new())).await;
    assert!(completed(&turn), "{turn:?}");
    assert!(rig.written().exists(), "full access asks nothing: {turn:?}");
    let last = rig.requests().pop().unwrap();
    assert_eq!(last["approvalPolicy"], "never");
    assert_eq!(last["sandbox"], "dangerFullAccess");
    // The user's own choice in this run wins over the carried one.
    assert!(provider.change_setting(AgentSetting::Mode("read-only".into())));
    let request = AttemptRequest {
        settings: vec![AgentSetting::Mode("full-access".into())],
        ..rig.request("say hello", SessionRef::Resume(session_id(&turn)))
    };
    collect(provider.execute(request, StopControl::new())).await;
    assert_eq!(rig.requests().pop().unwrap()["sandbox"], "readOnly");
}

/// A rewind of the conversation to before a finished turn forks the thread through the turn
/// before it (`thread/fork`): the next request carries the earlier prompts and the new one
/// only, on the same app-server. The thread forked from is kept, so a rewind undone before the
/// next prompt continues it whole; and a second rewind reaches through the first one's fork.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_to_a_finished_turn_forks_the_thread_and_an_undone_one_keeps_every_prompt() {
    use agentty::orchestrator::{spawn_orchestrator, OrchestratorOptions};

    let rig = Rig::new();
    let mut options = OrchestratorOptions::new(rig.provider(PermissionPolicy::Ask));
    options.cwd = Some(rig.work.path().to_path_buf());
    let mut chat = spawn_orchestrator(options);
    for prompt in ["one", "two", "three"] {
        real_cli::assert_turn(&real_cli::run_turn(&mut chat, prompt).await, 1);
    }
    real_cli::rewind_conversation(&mut chat, 2).await;
    real_cli::assert_turn(&real_cli::run_turn(&mut chat, "again").await, 1);
    assert_eq!(rig.users().last().unwrap(), &["one", "again"]);

    // Turn 4 ("again") began on the fork to be made: a rewind to before it and its undo.
    real_cli::rewind_conversation(&mut chat, 4).await;
    real_cli::undo_conversation_rewind(&mut chat, 4).await;
    real_cli::assert_turn(&real_cli::run_turn(&mut chat, "four").await, 1);
    assert_eq!(rig.users().last().unwrap(), &["one", "again", "four"]);

    // Back to before turn 4 for real: the fork of the first rewind, through "one".
    real_cli::rewind_conversation(&mut chat, 4).await;
    real_cli::assert_turn(&real_cli::run_turn(&mut chat, "five").await, 1);
    assert_eq!(rig.users().last().unwrap(), &["one", "five"]);

    let requests = rig.requests();
    let threads: std::collections::BTreeSet<&str> = requests
        .iter()
        .map(|request| request["thread"].as_str().unwrap())
        .collect();
    assert_eq!(
        threads.len(),
        3,
        "the thread, then one fork per rewind: {requests:?}"
    );
    let pids: std::collections::BTreeSet<u64> = requests
        .iter()
        .map(|request| request["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(pids.len(), 1, "forks, not restarts: {pids:?}");
}
