//! Conversations that stay whole, on real agent processes: the demo agent keeps sessions like a
//! real CLI and logs every request it "sends to its model" (`requests.jsonl`), so these tests
//! read what the model would have received after failed attempts, retries and lost sessions.

use crate::support::orchestrator_turn::{outcome, run_turn};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentty::config::{Backoff, ProviderSettings, RetryPolicy};
use agentty::demo_agent::state::{requests_file, DemoRequest, STATE_DIR_VAR};
use agentty::orchestrator::{
    spawn_orchestrator, Command, OrchestratorEvent as Ev, OrchestratorHandle, OrchestratorOptions,
    TurnOutcome,
};
use agentty::provider::{build_provider, SessionRef};
use agentty::stream::NoticeKind;

const PATIENCE: Duration = Duration::from_secs(30);

/// A demo agent with its own state dir (sessions, request log), run through the real demo
/// provider, pi mapper, runner and orchestrator.
struct DemoWorld {
    state: tempfile::TempDir,
    _bin: tempfile::TempDir,
    launcher: PathBuf,
}

impl DemoWorld {
    fn new() -> Self {
        let bin = tempfile::tempdir().unwrap();
        let launcher = bin.path().join("demo-agent");
        // The demo provider runs `PROGRAM --mode json ...`; the subcommand must come first.
        std::fs::write(
            &launcher,
            format!(
                "#!/bin/sh\nexec '{}' demo-agent \"$@\"\n",
                env!("CARGO_BIN_EXE_agentty")
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self {
            state: tempfile::tempdir().unwrap(),
            _bin: bin,
            launcher,
        }
    }

    fn state_dir(&self) -> &Path {
        self.state.path()
    }

    fn orchestrator(&self, policy: RetryPolicy, session: SessionRef) -> OrchestratorHandle {
        let settings = ProviderSettings {
            command: Some(self.launcher.clone()),
            args: Vec::new(),
            env: BTreeMap::from([
                (
                    STATE_DIR_VAR.to_owned(),
                    self.state_dir().display().to_string(),
                ),
                ("AGENTTY_DEMO_TIME_SCALE".to_owned(), "0".to_owned()),
            ]),
            model: None,
            ..ProviderSettings::default()
        };
        let provider = build_provider("demo", &settings).expect("the demo provider");
        let mut options = OrchestratorOptions::new(provider);
        options.policy = policy;
        options.session = session;
        spawn_orchestrator(options)
    }

    /// Every request the demo agent received, oldest first.
    fn requests(&self) -> Vec<DemoRequest> {
        std::fs::read_to_string(requests_file(self.state_dir()))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).expect("a request line"))
            .collect()
    }

    /// The prompts stored in the demo agent's session `id`.
    fn stored_prompts(&self, id: &str) -> Vec<String> {
        let file = self
            .state_dir()
            .join("sessions")
            .join(format!("{id}.jsonl"));
        std::fs::read_to_string(file)
            .unwrap()
            .lines()
            .skip(1)
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

fn retry_on(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        enabled: true,
        max_attempts,
        retry_delay_ms: 10,
        backoff: Backoff::Fixed,
        max_delay_ms: 10,
    }
}

fn retry_off() -> RetryPolicy {
    RetryPolicy {
        enabled: false,
        ..retry_on(1)
    }
}

fn attempts(events: &[Ev]) -> usize {
    events
        .iter()
        .filter(|event| matches!(event, Ev::AttemptStarted { .. }))
        .count()
}

fn submit(prompt: &str) -> Command {
    Command::Submit(prompt.to_owned())
}

fn messages(prompts: &[&str]) -> Vec<String> {
    prompts.iter().map(|prompt| prompt.to_string()).collect()
}

#[tokio::test]
async fn a_first_turn_that_fails_twice_sends_its_prompt_once_per_request_and_once_after() {
    let world = DemoWorld::new();
    let mut chat = world.orchestrator(retry_on(3), SessionRef::New);
    let question = "flaky-twice: what is the answer?";
    let first = run_turn(&mut chat, submit(question), PATIENCE).await;
    assert_eq!(outcome(&first), TurnOutcome::Completed);
    assert_eq!(attempts(&first), 3);
    let second = run_turn(&mut chat, submit("hello again"), PATIENCE).await;
    assert_eq!(outcome(&second), TurnOutcome::Completed);

    let requests = world.requests();
    assert_eq!(requests.len(), 4, "{requests:#?}");
    for request in &requests[..3] {
        assert_eq!(request.messages, messages(&[question]));
    }
    // The successful attempt's session is the one the next turn continues; the failed ones
    // are left behind.
    assert_eq!(requests[3].session_id, requests[2].session_id);
    assert_ne!(requests[0].session_id, requests[2].session_id);
    assert_eq!(requests[3].messages, messages(&[question, "hello again"]));
}

#[tokio::test]
async fn failed_attempts_in_a_continued_session_are_rolled_back() {
    let world = DemoWorld::new();
    let mut chat = world.orchestrator(retry_on(3), SessionRef::New);
    assert_eq!(
        outcome(&run_turn(&mut chat, submit("hello one"), PATIENCE).await),
        TurnOutcome::Completed
    );
    let two = "flaky-twice two";
    let retried = run_turn(&mut chat, submit(two), PATIENCE).await;
    assert_eq!(outcome(&retried), TurnOutcome::Completed);
    assert_eq!(attempts(&retried), 3);
    run_turn(&mut chat, submit("hello three"), PATIENCE).await;

    let requests = world.requests();
    assert_eq!(requests.len(), 5, "{requests:#?}");
    let session = &requests[0].session_id;
    assert!(requests
        .iter()
        .all(|request| &request.session_id == session));
    for request in &requests[1..4] {
        assert_eq!(request.messages, messages(&["hello one", two]));
    }
    assert_eq!(
        requests[4].messages,
        messages(&["hello one", two, "hello three"])
    );
    assert_eq!(
        world.stored_prompts(session),
        messages(&["hello one", two, "hello three"])
    );
}

#[tokio::test]
async fn a_manual_retry_after_a_failed_turn_sends_the_prompt_once() {
    let world = DemoWorld::new();
    let mut chat = world.orchestrator(retry_off(), SessionRef::New);
    run_turn(&mut chat, submit("hello one"), PATIENCE).await;
    let failed = run_turn(&mut chat, submit("flaky two"), PATIENCE).await;
    assert!(matches!(outcome(&failed), TurnOutcome::Failed { .. }));
    let retried = run_turn(&mut chat, Command::RetryLastTurn, PATIENCE).await;
    assert_eq!(outcome(&retried), TurnOutcome::Completed);
    run_turn(&mut chat, submit("hello three"), PATIENCE).await;

    let requests = world.requests();
    assert_eq!(requests.len(), 4, "{requests:#?}");
    assert_eq!(requests[1].messages, messages(&["hello one", "flaky two"]));
    assert_eq!(requests[2].messages, messages(&["hello one", "flaky two"]));
    assert_eq!(
        requests[3].messages,
        messages(&["hello one", "flaky two", "hello three"])
    );
}

#[tokio::test]
async fn a_new_prompt_after_a_failed_turn_continues_without_the_failed_prompt() {
    let world = DemoWorld::new();
    let mut chat = world.orchestrator(retry_off(), SessionRef::New);
    run_turn(&mut chat, submit("hello one"), PATIENCE).await;
    run_turn(&mut chat, submit("flaky two"), PATIENCE).await;
    run_turn(&mut chat, submit("hello three"), PATIENCE).await;
    let requests = world.requests();
    assert_eq!(
        requests.last().unwrap().messages,
        messages(&["hello one", "hello three"])
    );
}

#[tokio::test]
async fn a_lost_agent_session_goes_on_in_a_fresh_one_with_a_notice() {
    let world = DemoWorld::new();
    let gone = "01a228fb-f8fa-72c2-b06b-c6550b2b460c";
    let mut chat = world.orchestrator(retry_off(), SessionRef::Resume(gone.to_owned()));
    let events = run_turn(&mut chat, submit("hello after the loss"), PATIENCE).await;
    assert_eq!(outcome(&events), TurnOutcome::Completed);
    let notice = events
        .iter()
        .find_map(|event| match event {
            Ev::Notice { kind, message, .. } if *kind == NoticeKind::FreshSession => {
                Some(message.clone())
            }
            _ => None,
        })
        .expect("a notice that says the session was lost");
    assert!(notice.contains(gone), "{notice}");
    assert!(notice.contains("fresh agent session"), "{notice}");
    // The next turn continues the fresh session, and does not fail again.
    let next = run_turn(&mut chat, submit("hello once more"), PATIENCE).await;
    assert_eq!(outcome(&next), TurnOutcome::Completed);
    assert_eq!(attempts(&next), 1);
    let requests = world.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].messages, messages(&["hello after the loss"]));
    assert_eq!(
        requests[1].messages,
        messages(&["hello after the loss", "hello once more"])
    );
}

// ---- `--resume` refusals, before any terminal is touched ----

/// `agentty ARGS` in `cwd` with its own state dir; (exit status, stderr).
fn agentty(state: &Path, cwd: &Path, args: &[&str]) -> (Option<i32>, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(args)
        .current_dir(cwd)
        .env("AGENTTY_STATE_DIR", state)
        .env(STATE_DIR_VAR, state.join("demo"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run agentty");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn resume_refuses_with_one_clear_line_what_it_cannot_continue() {
    let state = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    // Nothing to resume here yet.
    let (code, stderr) = agentty(state.path(), project.path(), &["--resume"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no earlier conversation in"), "{stderr}");
    // A headless run is a conversation of its own: not the one `--resume` picks...
    let (code, stderr) = agentty(
        state.path(),
        project.path(),
        &["run", "--provider", "demo", "--scenario", "hello", "hi"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stderr) = agentty(state.path(), project.path(), &["--resume"]);
    assert_eq!(code, Some(2), "{stderr}");
    // ...but it can be named, and then only under its own provider and directory.
    let summaries = agentty::session_log::list_conversations(&state.path().join("sessions"));
    assert_eq!(summaries.len(), 1);
    let id = &summaries[0].id[..8];
    let (code, stderr) = agentty(
        state.path(),
        project.path(),
        &["--provider", "pi", "--resume", id],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("ran on demo, not pi"), "{stderr}");
    let (code, stderr) = agentty(state.path(), elsewhere.path(), &["--resume", id]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("belongs to"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let (code, stderr) = agentty(state.path(), project.path(), &["--resume", "0b1e7c99"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no conversation \"0b1e7c99\""), "{stderr}");
}
