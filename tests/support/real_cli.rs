//! What the real-CLI tests (`tests/suite/real_*.rs`) share: the opt-in switch and finding the CLI,
//! a provider for it in a throwaway home and working directory ([`Rig`]), running an attempt
//! to its terminal message, finding the processes an attempt started, and whole conversations
//! through the real orchestrator whose retried turns are checked against what the model
//! received ([`retried_middle_turn_is_sent_once`], [`retried_first_turn_is_sent_once`], made
//! into a pair of tests per transport by [`retry_sends_the_prompt_once!`]).
//!
//! An attempt read with [`collect`] has been checked to end, with exactly one terminal
//! message, last.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentty::config::{Backoff, RetryPolicy};
use agentty::orchestrator::{
    spawn_orchestrator, Command, OrchestratorEvent, OrchestratorHandle, OrchestratorOptions,
    RewindAsked, TurnOutcome,
};
use agentty::provider::{AgentStream, AttemptRequest, Provider, SessionRef, StopControl};
use agentty::stream::{AgentMessage, Failure, NoticeKind, StopStage, Usage};
use futures::StreamExt;
use serde_json::Value;
use tempfile::TempDir;
use tokio::time::Instant;

/// How long one attempt of a real CLI against a fake server may take.
pub const RUN_LIMIT: Duration = Duration::from_secs(120);

/// The CLI to test: the path in `override_var`, else `default_path` (where the npm install
/// the test file names puts it), else the program of that name on PATH. The real-CLI tests are
/// `#[ignore]`d (`cargo test --test suite -- --ignored real_pi::` runs pi's): once run, a missing CLI
/// is a failure, never a skip.
pub fn real_cli(test: &str, override_var: &str, default_path: &str) -> PathBuf {
    eprintln!("{test}: against the real CLI");
    let default_path = PathBuf::from(default_path);
    let on_path = || {
        let name = default_path.file_name()?;
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
    };
    let path = std::env::var_os(override_var)
        .map(PathBuf::from)
        .or_else(|| default_path.is_file().then(|| default_path.clone()))
        .or_else(on_path)
        .unwrap_or_else(|| default_path.clone());
    assert!(
        path.is_file(),
        "{} is missing: install the CLI there from npm (or set {override_var})",
        path.display()
    );
    path
}

/// The running test's function name, without its module path: libtest runs each test on a
/// thread named after it. Called on the test's own thread (not in a spawned task).
pub fn test_name() -> String {
    let thread = std::thread::current();
    let full = thread
        .name()
        .expect("a test runs on a thread named after it");
    full.rsplit("::").next().unwrap_or(full).to_owned()
}

/// `label` made unique to this test run, to find its processes by their command line.
pub fn unique(label: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("{label}-{}-{nanos}", std::process::id())
}

/// A provider running one real CLI against the fake server `server`, with a throwaway HOME
/// (for the CLI's settings and sessions) and working directory.
pub struct Rig<Server> {
    pub server: Server,
    pub provider: Arc<dyn Provider>,
    pub home: TempDir,
    pub work: TempDir,
}

impl<Server> Rig<Server> {
    /// Attempt 1 of a turn, run in the rig's working directory.
    pub fn request(&self, prompt: &str, session: SessionRef) -> AttemptRequest {
        attempt_request(prompt, session, self.work.path())
    }

    pub fn start(&self, prompt: &str, session: SessionRef, stop: StopControl) -> AgentStream {
        self.provider.execute(self.request(prompt, session), stop)
    }

    /// Runs one attempt to its end (see [`collect`]).
    pub async fn run(&self, prompt: &str, session: SessionRef) -> Vec<AgentMessage> {
        let mut stream = self.start(prompt, session, StopControl::new());
        collect(&mut stream, RUN_LIMIT).await
    }

    /// Runs `first` in a new session, then `second` resuming it; checks that the second
    /// attempt announces `cli`'s resumed session and completes, and returns its messages.
    pub async fn run_then_resume(&self, cli: &str, first: &str, second: &str) -> Vec<AgentMessage> {
        let first = self.run(first, SessionRef::New).await;
        let session_id = started_session_id(&first);
        let resumed = self
            .run(second, SessionRef::Resume(session_id.clone()))
            .await;
        assert_resumed(&resumed, cli, &session_id);
        expect_completed(&resumed);
        resumed
    }

    /// The rig as the generated retry tests run it ([`retry_sends_the_prompt_once!`]):
    /// `requests` reads the user messages of every model request from the rig's server.
    pub fn flaky(self, requests: fn(&Server) -> Vec<UserTexts>) -> Flaky
    where
        Server: Send + Sync + 'static,
    {
        let (provider, work) = (self.provider.clone(), self.work.path().to_path_buf());
        Flaky::new(provider, work, self, move |rig| requests(&rig.server))
    }
}

/// Attempt 1 of a turn, run in `cwd`.
pub fn attempt_request(prompt: &str, session: SessionRef, cwd: &Path) -> AttemptRequest {
    AttemptRequest {
        prompt: prompt.into(),
        session,
        cwd: Some(cwd.to_path_buf()),
        attempt: 1,
        scenario: None,
        ..AttemptRequest::default()
    }
}

/// The next message of an attempt, or `None` when the stream ended or `limit` passed.
pub async fn next_message(stream: &mut AgentStream, limit: Duration) -> Option<AgentMessage> {
    tokio::time::timeout(limit, stream.next())
        .await
        .ok()
        .flatten()
}

/// Every message left in an attempt's stream; fails the test unless the stream ends within
/// `limit` and its last message is its one terminal message.
pub async fn collect(stream: &mut AgentStream, limit: Duration) -> Vec<AgentMessage> {
    let deadline = Instant::now() + limit;
    let mut messages = Vec::new();
    loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(message)) => {
                eprintln!("{}", message.to_json_line());
                messages.push(message);
            }
            Ok(None) => break,
            Err(_) => panic!("the attempt did not end within {limit:?}; so far: {messages:#?}"),
        }
    }
    assert_single_terminal_last(&messages);
    messages
}

/// Fails the test unless `messages` hold exactly one terminal message, last.
pub fn assert_single_terminal_last(messages: &[AgentMessage]) {
    let terminals = messages
        .iter()
        .filter(|message| message.is_terminal())
        .count();
    assert_eq!(terminals, 1, "exactly one terminal message: {messages:#?}");
    assert!(
        messages.last().is_some_and(AgentMessage::is_terminal),
        "the terminal message is last: {messages:#?}"
    );
}

/// The messages of an attempt up to and including its first tool call; fails the test if the
/// attempt ends first or no call comes within `limit`.
pub async fn messages_until_tool_call(
    stream: &mut AgentStream,
    limit: Duration,
) -> Vec<AgentMessage> {
    let deadline = Instant::now() + limit;
    let mut messages = Vec::new();
    loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(message)) => {
                let is_call = matches!(message, AgentMessage::ToolCall { .. });
                messages.push(message);
                if is_call {
                    return messages;
                }
            }
            Ok(None) => panic!("no tool call before the end: {messages:#?}"),
            Err(_) => panic!("no tool call within {limit:?}: {messages:#?}"),
        }
    }
}

/// Every assistant delta, concatenated.
pub fn assistant_text(messages: &[AgentMessage]) -> String {
    messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::Assistant { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

/// How many notices of `kind` there are.
pub fn notices(messages: &[AgentMessage], kind: &str) -> usize {
    messages
        .iter()
        .filter(|message| matches!(message, AgentMessage::Notice { kind: k, .. } if k == kind))
        .count()
}

/// The stop reason and usage of an attempt that ended `terminal.completed`; fails the test
/// for any other ending.
pub fn expect_completed(messages: &[AgentMessage]) -> (&str, Option<&Usage>) {
    match messages.last() {
        Some(AgentMessage::Completed { stop_reason, usage }) => (stop_reason, usage.as_ref()),
        other => panic!("expected terminal.completed, got {other:?}: {messages:#?}"),
    }
}

/// The failure of an attempt that ended `terminal.failed`; fails the test for any other
/// ending.
pub fn expect_failed(messages: &[AgentMessage]) -> &Failure {
    match messages.last() {
        Some(AgentMessage::Failed(failure)) => failure,
        other => panic!("expected terminal.failed, got {other:?}: {messages:#?}"),
    }
}

/// The input and output of the call of tool `name`; fails the test unless there is one and
/// it completed.
pub fn completed_tool_call(messages: &[AgentMessage], tool: &str) -> (Value, String) {
    let (call_id, input) = messages
        .iter()
        .find_map(|message| match message {
            AgentMessage::ToolCall {
                id, name, input, ..
            } if name == tool => Some((id, input)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {tool} tool call: {messages:#?}"));
    let output = messages
        .iter()
        .find_map(|message| match message {
            AgentMessage::ToolCompleted { id, output } if id == call_id => Some(output),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the {tool} call {call_id} did not complete: {messages:#?}"));
    (input.clone(), output.clone())
}

/// The session id of a stream that starts with `session.started`; fails the test otherwise.
pub fn started_session_id(messages: &[AgentMessage]) -> String {
    match messages.first() {
        Some(AgentMessage::SessionStarted {
            session_id: Some(id),
            ..
        }) => id.clone(),
        other => panic!("expected session.started with an id, got {other:?}: {messages:#?}"),
    }
}

/// The stream starts by announcing that `provider` resumed session `session_id`.
pub fn assert_resumed(messages: &[AgentMessage], provider: &str, session_id: &str) {
    assert!(
        matches!(
            messages.first(),
            Some(AgentMessage::SessionResumed { provider: named, session_id: id, .. })
                if named == provider && id == session_id
        ),
        "{messages:#?}"
    );
}

/// The process exists and is not a zombie.
pub fn is_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// The command line of a process, arguments separated by spaces (empty when it is gone).
pub fn command_line(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| {
            String::from_utf8_lossy(&bytes)
                .replace('\0', " ")
                .trim()
                .to_owned()
        })
        .unwrap_or_default()
}

/// PIDs of live processes (other than this test) whose command line contains `token`.
pub fn pids_running(token: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != std::process::id() as i32)
        .filter(|pid| command_line(*pid).contains(token))
        .filter(|pid| is_alive(*pid))
        .collect()
}

/// Finds the processes of one run: every process whose environment holds `var=marker` (the
/// CLI and whatever it starts inherit it, unless they scrub their environment).
#[derive(Clone, Debug)]
pub struct ProcessProbe {
    pub var: &'static str,
    pub marker: String,
}

impl ProcessProbe {
    /// A probe with a fresh marker for `var`.
    pub fn new(var: &'static str) -> ProcessProbe {
        ProcessProbe {
            var,
            marker: uuid::Uuid::new_v4().simple().to_string(),
        }
    }

    /// Live processes carrying the marker in their environment, with their command lines.
    pub fn live(&self) -> Vec<(i32, String)> {
        let needle = format!("{}={}", self.var, self.marker);
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| is_alive(*pid))
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                    environ
                        .split(|byte| *byte == 0)
                        .any(|entry| entry == needle.as_bytes())
                })
            })
            .map(|pid| (pid, command_line(pid)))
            .collect()
    }
}

/// Waits up to `limit` for a live process whose command line contains `token`.
pub async fn wait_for_process(token: &str, limit: Duration) -> Vec<i32> {
    let deadline = Instant::now() + limit;
    loop {
        let pids = pids_running(token);
        if !pids.is_empty() || Instant::now() > deadline {
            return pids;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits up to `limit` for every process in `pids` to be gone (init may take a moment to
/// reap); returns those still alive.
pub async fn survivors(pids: impl IntoIterator<Item = i32>, limit: Duration) -> Vec<i32> {
    let pids: Vec<i32> = pids.into_iter().collect();
    let deadline = Instant::now() + limit;
    loop {
        let alive: Vec<i32> = pids.iter().copied().filter(|pid| is_alive(*pid)).collect();
        if alive.is_empty() || Instant::now() > deadline {
            return alive;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How a stream that ends `terminal.cancelled` was stopped: the stage (printed, as it
/// depends on the machine's load: a busy machine can keep a CLI's own shutdown past the 2 s
/// grace) and the time the stop took. Fails the test for any other ending.
pub fn cancelled(cli: &str, messages: &[AgentMessage]) -> (StopStage, u64) {
    match messages.last() {
        Some(AgentMessage::Cancelled {
            stop_stage,
            elapsed_ms,
        }) => {
            eprintln!(
                "{cli} stopped at stage {} after {elapsed_ms} ms",
                stop_stage.as_str()
            );
            (*stop_stage, *elapsed_ms)
        }
        other => panic!("expected terminal.cancelled, got {other:?}: {messages:#?}"),
    }
}

impl<Server> Rig<Server> {
    /// Starts an attempt, stops it once its sleep tool (a process whose command line holds
    /// `sleep_token`) runs, and checks that the stop cancels the attempt in time, fails the
    /// open tool call, and leaves neither the tool nor the agent running.
    pub async fn assert_stop_mid_tool_leaves_no_process(&self, cli: &str, sleep_token: &str) {
        // Unique, so that the agent's process can be found by its command line.
        let prompt = unique("sleep-for-the-stop-test");
        let stop = StopControl::new();
        let mut stream = self.start(&prompt, SessionRef::New, stop.clone());
        let mut messages = messages_until_tool_call(&mut stream, RUN_LIMIT).await;
        let sleepers = wait_for_process(sleep_token, Duration::from_secs(20)).await;
        assert!(!sleepers.is_empty(), "the sleep tool never started");
        let agent = pids_running(&prompt);
        assert!(!agent.is_empty(), "the {cli} process was not found");

        stop.stop();
        messages.extend(collect(&mut stream, Duration::from_secs(15)).await);
        let (_, elapsed_ms) = cancelled(cli, &messages);
        assert!(elapsed_ms < 2_000 + 5_000 + 1_000, "{messages:#?}");
        assert!(
            messages
                .iter()
                .any(|m| matches!(m, AgentMessage::ToolFailed { .. })),
            "the tool call was left open: {messages:#?}"
        );
        let survivors: Vec<i32> = sleepers
            .iter()
            .chain(&agent)
            .copied()
            .filter(|pid| is_alive(*pid))
            .collect();
        assert!(
            survivors.is_empty(),
            "still running after the stop: {survivors:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Retry never duplicates, against the real CLI: whole turns through the real orchestrator, and
// what the model received, read from the fake server's request log.

/// A counter for a fake server's "fail the first `count` model requests whose last user
/// message contains `marker`" behaviour (what a flaky upstream does to one prompt).
pub struct FailFirst {
    marker: String,
    left: AtomicUsize,
}

impl FailFirst {
    pub fn new(count: usize, marker: &str) -> Arc<Self> {
        Arc::new(Self {
            marker: marker.to_owned(),
            left: AtomicUsize::new(count),
        })
    }

    /// Whether this request (its last user message's text) is to fail; counts it if so.
    pub fn take(&self, last_user_text: &str) -> bool {
        last_user_text.contains(&self.marker)
            && self
                .left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                    left.checked_sub(1)
                })
                .is_ok()
    }
}

/// What the model received in one request: the text of each user message, in order.
pub type UserTexts = Vec<String>;

/// A check of what a test's three prompts left behind.
pub type Check = Box<dyn Fn(&[String; 3]) + Send + Sync>;

/// A real CLI on one transport, its fake model server failing a prompt twice (see
/// [`FailFirst`]), as the generated retry tests run it ([`retry_sends_the_prompt_once!`]).
pub struct Flaky {
    pub provider: Arc<dyn Provider>,
    /// The working directory of its turns.
    pub work: PathBuf,
    /// What the model received, request by request.
    pub requests: Box<dyn Fn() -> Vec<UserTexts> + Send + Sync>,
    /// What else a retried middle turn must leave true (the CLI's own stored history).
    pub then: Option<Check>,
    /// What lives as long as the test: the server, the throwaway homes.
    pub _kept: Box<dyn std::any::Any + Send + Sync>,
}

impl Flaky {
    /// `provider` working in `work`, with what must live as long as the test (`kept`) and how
    /// to read the model's requests from it.
    pub fn new<Kept: Send + Sync + 'static>(
        provider: Arc<dyn Provider>,
        work: PathBuf,
        kept: Kept,
        requests: impl Fn(&Kept) -> Vec<UserTexts> + Send + Sync + 'static,
    ) -> Flaky {
        let kept = Arc::new(kept);
        let reader = kept.clone();
        Flaky {
            provider,
            work,
            requests: Box::new(move || requests(&reader)),
            then: None,
            _kept: Box::new(kept),
        }
    }

    /// `check` runs after the retried middle turn.
    pub fn then(mut self, check: impl Fn(&[String; 3]) + Send + Sync + 'static) -> Self {
        self.then = Some(Box::new(check));
        self
    }
}

/// The opt-in tests that a retried turn reaches the model with each prompt once, on one
/// transport of a real CLI, made from the generic [`retried_middle_turn_is_sent_once`] and
/// [`retried_first_turn_is_sent_once`]: `mod $module` with two tests, `$start(test, flaky)`
/// giving the CLI behind a server that fails the requests carrying `flaky` twice.
#[macro_export]
macro_rules! retry_sends_the_prompt_once {
    ($module:ident: $cli:literal, $start:path, $ignore:literal) => {
        mod $module {
            $crate::retry_sends_the_prompt_once!(@test
                a_retried_middle_turn_reaches_the_model_with_each_prompt_once,
                retried_middle_turn_is_sent_once, 1, $cli, $start, $ignore);
            $crate::retry_sends_the_prompt_once!(@test
                a_retried_first_turn_reaches_the_model_with_its_prompt_once,
                retried_first_turn_is_sent_once, 0, $cli, $start, $ignore);
        }
    };
    // One test: prompt `$flaky` (of three) fails twice, then `$check` looks at what the model got.
    (@test $name:ident, $check:ident, $flaky:literal, $cli:literal, $start:path, $ignore:literal) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        #[ignore = $ignore]
        async fn $name() {
            use $crate::support::real_cli;
            let test = &real_cli::test_name();
            let prompts = real_cli::three_prompts(stringify!($name));
            let flaky = $start(test, &prompts[$flaky]).await;
            let requests = || (flaky.requests)();
            let provider = flaky.provider.clone();
            real_cli::$check($cli, test, provider, &flaky.work, &prompts, requests).await;
            if let (Some(then), 1) = (&flaky.then, $flaky) {
                then(&prompts);
            }
        }
    };
}

/// The orchestrator on `provider` in `cwd`, retrying a failed attempt twice, 10 ms apart.
pub fn retrying_orchestrator(provider: Arc<dyn Provider>, cwd: &Path) -> OrchestratorHandle {
    let mut options = OrchestratorOptions::new(provider);
    options.policy = RetryPolicy {
        enabled: true,
        max_attempts: 3,
        retry_delay_ms: 10,
        backoff: Backoff::Fixed,
        max_delay_ms: 10,
    };
    options.cwd = Some(cwd.to_path_buf());
    spawn_orchestrator(options)
}

/// Submits `prompt` and collects the orchestrator's events up to the end of the turn.
pub async fn run_turn(handle: &mut OrchestratorHandle, prompt: &str) -> Vec<OrchestratorEvent> {
    collect_turn(handle, Command::Submit(prompt.to_owned()), |_, _| {}).await
}

/// Sends `command` and collects the orchestrator's events up to the end of the turn, showing
/// each to `watch` as it arrives (with the handle, to send more commands).
async fn collect_turn(
    handle: &mut OrchestratorHandle,
    command: Command,
    mut watch: impl FnMut(&OrchestratorEvent, &OrchestratorHandle),
) -> Vec<OrchestratorEvent> {
    handle
        .commands
        .send(command)
        .expect("the orchestrator runs");
    let deadline = Instant::now() + RUN_LIMIT * 3;
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout_at(deadline, handle.events.recv())
            .await
            .unwrap_or_else(|_| panic!("the turn did not end in time; so far: {seen:#?}"))
            .expect("the orchestrator runs");
        watch(&event, handle);
        let done = matches!(event, OrchestratorEvent::TurnEnded { .. });
        seen.push(event);
        if done {
            return seen;
        }
    }
}

/// A turn that completed after `attempts` attempts, none of them in a fresh session forced by
/// a missing checkpoint or a lost session; returns the session id each attempt reported.
pub fn assert_turn(events: &[OrchestratorEvent], attempts: usize) -> Vec<Option<String>> {
    assert!(
        matches!(
            events.last(),
            Some(OrchestratorEvent::TurnEnded {
                outcome: TurnOutcome::Completed,
                ..
            })
        ),
        "the turn completes: {events:#?}"
    );
    let started = events
        .iter()
        .filter(|event| matches!(event, OrchestratorEvent::AttemptStarted { .. }))
        .count();
    assert_eq!(started, attempts, "attempts: {events:#?}");
    let fresh: Vec<&OrchestratorEvent> = events
        .iter()
        .filter(|event| {
            matches!(event, OrchestratorEvent::Notice { kind, .. } if *kind == NoticeKind::FreshSession)
        })
        .collect();
    assert!(fresh.is_empty(), "no fresh-session fallback: {fresh:#?}");
    let mut sessions = vec![None; attempts];
    for event in events {
        if let OrchestratorEvent::Message {
            attempt, message, ..
        } = event
        {
            let id = match message {
                AgentMessage::SessionStarted { session_id, .. } => session_id.clone(),
                AgentMessage::SessionResumed { session_id, .. } => Some(session_id.clone()),
                _ => continue,
            };
            sessions[*attempt as usize - 1] = id;
        }
    }
    sessions
}

/// How often `needle` occurs in the user messages of one request.
pub fn occurrences(request: &[String], needle: &str) -> usize {
    request
        .iter()
        .map(|text| text.matches(needle).count())
        .sum()
}

/// Fails the test unless the user messages of one request carry each prompt the number of
/// times it is paired with.
pub fn assert_carries(request: &[String], expected: &[(&str, usize)]) {
    for (prompt, times) in expected {
        assert_eq!(
            occurrences(request, prompt),
            *times,
            "{prompt} should be in the request {times} time(s): {request:#?}"
        );
    }
}

/// Fails the test unless the user messages of one request carry each of `prompts` once.
pub fn assert_each_once(request: &[String], prompts: &[String]) {
    let once: Vec<(&str, usize)> = prompts.iter().map(|prompt| (prompt.as_str(), 1)).collect();
    assert_carries(request, &once);
}

/// Prints what the model received, request by request (user-message texts, long ones cut).
pub fn print_request_log(cli: &str, test: &str, turns: &[(&str, &[UserTexts])]) {
    eprintln!("=== {cli}: {test}: user messages per model request ===");
    let mut number = 0;
    for (label, requests) in turns {
        for request in *requests {
            number += 1;
            let texts: Vec<String> = request.iter().map(|text| shorten(text)).collect();
            eprintln!("#{number} {label}: {texts:?}");
        }
    }
}

fn shorten(text: &str) -> String {
    const MAX: usize = 120;
    // The CLIs' own context blocks (Claude's `<system-reminder>`, Codex's
    // `<environment_context>`, ...) are named, not shown.
    let mut rest = text;
    let mut kept = String::new();
    while let Some(open) = rest.find('<') {
        let tag: String = rest[open + 1..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        let close = format!("</{tag}>");
        match rest[open..].find(&close) {
            Some(end) if !tag.is_empty() && rest[open..].starts_with(&format!("<{tag}>")) => {
                kept.push_str(&rest[..open]);
                kept.push_str(&format!("[{tag}]"));
                rest = &rest[open + end + close.len()..];
            }
            _ => {
                kept.push_str(&rest[..=open]);
                rest = &rest[open + 1..];
            }
        }
    }
    kept.push_str(rest);
    let text = kept.split_whitespace().collect::<Vec<_>>().join(" ");
    let count = text.chars().count();
    if count <= MAX {
        return text;
    }
    // The head names the context blocks; the prompt itself comes last.
    let head: String = text.chars().take(MAX / 3).collect();
    let tail: String = text.chars().skip(count - MAX * 2 / 3).collect();
    format!("{head} …({count} chars)… {tail}")
}

/// Three prompts unique to one test (none is a part of another); the marked one is made to
/// fail twice by the fake server.
pub fn three_prompts(tag: &str) -> [String; 3] {
    let run = uuid_like();
    [
        format!("first prompt {tag} {run}: remember 42"),
        format!("second prompt {tag} {run}: and now?"),
        format!("third prompt {tag} {run}: once more"),
    ]
}

fn uuid_like() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{:x}-{:x}", std::process::id(), nanos)
}

/// Turn 1 completes; turn 2's model requests fail (HTTP 500) twice, then succeed; turn 3
/// completes. `requests` returns the user messages of every model request so far.
/// Checks that each request of turn 2 carries turn 1's and turn 2's prompts once each, and
/// turn 3's request each of the three once.
pub async fn retried_middle_turn_is_sent_once(
    cli: &str,
    test: &str,
    provider: Arc<dyn Provider>,
    cwd: &Path,
    prompts: &[String; 3],
    requests: impl Fn() -> Vec<UserTexts>,
) {
    let mut chat = retrying_orchestrator(provider, cwd);
    let one = assert_turn(&run_turn(&mut chat, &prompts[0]).await, 1);
    let after_one = requests().len();
    let two = assert_turn(&run_turn(&mut chat, &prompts[1]).await, 3);
    let after_two = requests().len();
    let three = assert_turn(&run_turn(&mut chat, &prompts[2]).await, 1);
    let log = requests();
    print_request_log(
        cli,
        test,
        &[
            ("turn 1", &log[..after_one]),
            ("turn 2 (fails twice)", &log[after_one..after_two]),
            ("turn 3", &log[after_two..]),
        ],
    );
    assert_eq!(after_one, 1, "turn 1 is one model request: {log:#?}");
    assert_eq!(after_two - after_one, 3, "turn 2 is three: {log:#?}");
    assert_eq!(log.len() - after_two, 1, "turn 3 is one: {log:#?}");
    for request in &log[after_one..after_two] {
        assert_each_once(request, &prompts[..2]);
    }
    assert_each_once(&log[after_two], prompts);
    // One agent session throughout: turns 2 and 3 continue turn 1's.
    let session = one[0].clone().expect("turn 1 reports its session");
    for id in two.iter().chain(&three) {
        assert_eq!(id.as_ref(), Some(&session), "{two:?} {three:?}");
    }
}

/// Turn 1's model requests fail twice, then succeed (each attempt a new agent session); turn 2
/// completes in the successful attempt's session. Checks that each request of turn 1 carries
/// its prompt once, and turn 2's request each prompt once.
pub async fn retried_first_turn_is_sent_once(
    cli: &str,
    test: &str,
    provider: Arc<dyn Provider>,
    cwd: &Path,
    prompts: &[String; 3],
    requests: impl Fn() -> Vec<UserTexts>,
) {
    let mut chat = retrying_orchestrator(provider, cwd);
    let one = assert_turn(&run_turn(&mut chat, &prompts[0]).await, 3);
    let after_one = requests().len();
    let two = assert_turn(&run_turn(&mut chat, &prompts[1]).await, 1);
    let log = requests();
    print_request_log(
        cli,
        test,
        &[
            ("turn 1 (fails twice)", &log[..after_one]),
            ("turn 2", &log[after_one..]),
        ],
    );
    assert_eq!(after_one, 3, "turn 1 is three model requests: {log:#?}");
    assert_eq!(log.len() - after_one, 1, "turn 2 is one: {log:#?}");
    for request in &log[..after_one] {
        assert_each_once(request, &prompts[..1]);
    }
    assert_each_once(&log[after_one], &prompts[..2]);
    // Turn 2 continues the session of turn 1's successful (third) attempt.
    let successful = one[2]
        .clone()
        .expect("the successful attempt reports its session");
    assert_eq!(two[0].as_ref(), Some(&successful), "{one:?} {two:?}");
    for failed in one[..2].iter().flatten() {
        assert_ne!(
            failed, &successful,
            "a failed attempt's session is left behind"
        );
    }
}

/// [`run_turn`], also timing each recovery: from a failed attempt's terminal message to the
/// next attempt's session header (sent once the agent is ready and the prompt goes to it).
async fn run_turn_timing_recovery(
    handle: &mut OrchestratorHandle,
    prompt: &str,
) -> (Vec<OrchestratorEvent>, Vec<Duration>) {
    let mut failed_at = None;
    let mut recoveries = Vec::new();
    let events = collect_turn(
        handle,
        Command::Submit(prompt.to_owned()),
        |event, _| match event {
            OrchestratorEvent::Message {
                message: AgentMessage::Failed(_),
                ..
            } => failed_at = Some(Instant::now()),
            OrchestratorEvent::Message {
                message: AgentMessage::SessionStarted { .. } | AgentMessage::SessionResumed { .. },
                ..
            } => {
                if let Some(failed) = failed_at.take() {
                    recoveries.push(failed.elapsed());
                }
            }
            _ => {}
        },
    )
    .await;
    (events, recoveries)
}

/// Four prompts unique to one test; the first and the third are made to fail twice.
pub fn four_prompts(tag: &str) -> [String; 4] {
    let run = uuid_like();
    [
        format!("prompt A {tag} {run}: remember 42"),
        format!("prompt B {tag} {run}: and now?"),
        format!("prompt C {tag} {run}: once more"),
        format!("prompt D {tag} {run}: the last"),
    ]
}

/// The fake server's failure rule for [`four_prompts`]: the first two model requests whose
/// last user message holds prompt A fail, and likewise for prompt C.
pub fn fail_a_and_c_twice(prompts: &[String; 4]) -> impl Fn(&str) -> bool + Send + Sync {
    let a = FailFirst::new(2, &prompts[0]);
    let c = FailFirst::new(2, &prompts[2]);
    move |last_user_text: &str| a.take(last_user_text) || c.take(last_user_text)
}

/// Turn A fails twice then succeeds, B continues, C fails twice then succeeds, D continues, on
/// one provider (for a long-lived transport: one conversation, in one minute when the agent is
/// quick). `requests` returns the user messages of every model request so far. Checks, from
/// what the model received, that every request carries each earlier prompt of the conversation
/// once and its own prompt once, and that the four turns continue one agent session.
pub async fn two_retried_turns_keep_the_conversation(
    cli: &str,
    test: &str,
    provider: Arc<dyn Provider>,
    cwd: &Path,
    prompts: &[String; 4],
    requests: impl Fn() -> Vec<UserTexts>,
) {
    let started = SystemTime::now();
    let mut chat = retrying_orchestrator(provider, cwd);
    let attempts = [3, 1, 3, 1];
    let mut sessions = Vec::new();
    let mut bounds = vec![0];
    let mut recoveries = Vec::new();
    for (prompt, attempts) in prompts.iter().zip(attempts) {
        let (events, recovered) = run_turn_timing_recovery(&mut chat, prompt).await;
        recoveries.extend(recovered);
        sessions.push(assert_turn(&events, attempts));
        bounds.push(requests().len());
    }
    let millis: Vec<u128> = recoveries.iter().map(Duration::as_millis).collect();
    eprintln!("{test}: from a failed attempt's end to the retry's prompt reaching the agent: {millis:?} ms");
    let log = requests();
    let labels = [
        "turn A (fails twice)",
        "turn B",
        "turn C (fails twice)",
        "turn D",
    ];
    let turns: Vec<(&str, &[UserTexts])> = labels
        .iter()
        .enumerate()
        .map(|(turn, label)| (*label, &log[bounds[turn]..bounds[turn + 1]]))
        .collect();
    print_request_log(cli, test, &turns);
    eprintln!(
        "{test}: four turns in {:.1} s",
        started.elapsed().unwrap_or_default().as_secs_f64()
    );
    for (turn, (label, requests)) in turns.iter().enumerate() {
        assert_eq!(
            requests.len(),
            attempts[turn],
            "{label}: one model request per attempt: {log:#?}"
        );
        for request in requests.iter() {
            for (earlier, prompt) in prompts.iter().enumerate() {
                let expected = usize::from(earlier <= turn);
                assert_eq!(
                    occurrences(request, prompt),
                    expected,
                    "{label}: prompt {earlier} should be in the request {expected} time(s): \
                     {request:#?}"
                );
            }
        }
    }
    // Turns B, C and D continue the session of turn A's successful (third) attempt.
    let session = sessions[0][2]
        .clone()
        .expect("the successful attempt reports its session");
    for later in &sessions[1..] {
        for id in later {
            assert_eq!(id.as_ref(), Some(&session), "{sessions:?}");
        }
    }
}

/// Sends `command` and collects the orchestrator's events up to the end of the turn; sends
/// `Stop` once the turn shows assistant text when `stop_on_text`.
async fn turn_with(
    handle: &mut OrchestratorHandle,
    command: Command,
    stop_on_text: bool,
) -> Vec<OrchestratorEvent> {
    let mut stopped = false;
    collect_turn(handle, command, |event, handle| {
        let text = matches!(
            event,
            OrchestratorEvent::Message {
                message: AgentMessage::Assistant { .. },
                ..
            }
        );
        if stop_on_text && text && !stopped {
            handle
                .commands
                .send(Command::Stop)
                .expect("the orchestrator runs");
            stopped = true;
        }
    })
    .await
}

/// Prompts for [`a_stop_then_retry_keep_the_conversation`]: the second is to stream slowly.
pub fn stop_prompts(tag: &str) -> [String; 3] {
    let run = uuid_like();
    [
        format!("prompt A {tag} {run}: remember 42"),
        format!("prompt B {tag} {run}: slow please"),
        format!("prompt C {tag} {run}: and now?"),
    ]
}

/// Turn A completes; turn B (a slow answer) is stopped at its first text and retried by hand
/// (`/retry`); turn C continues. Checks from the model's side that the retry and C carry each
/// earlier prompt once, and prints the time from the stop's end to the retry's first model
/// request and from C's Enter to its first model request. `request_times` returns when each
/// model request arrived.
pub async fn a_stop_then_retry_keep_the_conversation(
    cli: &str,
    test: &str,
    provider: Arc<dyn Provider>,
    cwd: &Path,
    prompts: &[String; 3],
    requests: impl Fn() -> Vec<UserTexts>,
    request_times: impl Fn() -> Vec<Instant>,
) {
    let mut chat = retrying_orchestrator(provider, cwd);
    assert_turn(
        &turn_with(&mut chat, Command::Submit(prompts[0].clone()), false).await,
        1,
    );
    let stopped = turn_with(&mut chat, Command::Submit(prompts[1].clone()), true).await;
    assert!(
        matches!(
            stopped.last(),
            Some(OrchestratorEvent::TurnEnded {
                outcome: TurnOutcome::Cancelled,
                ..
            })
        ),
        "turn B was stopped: {stopped:#?}"
    );
    let before_retry = requests().len();
    let retry_sent = Instant::now();
    assert_turn(
        &turn_with(&mut chat, Command::RetryLastTurn, false).await,
        1,
    );
    let retry_request = request_times()
        .into_iter()
        .filter(|at| *at >= retry_sent)
        .min();
    let before_c = requests().len();
    let c_sent = Instant::now();
    assert_turn(
        &turn_with(&mut chat, Command::Submit(prompts[2].clone()), false).await,
        1,
    );
    let c_request = request_times().into_iter().filter(|at| *at >= c_sent).min();
    let log = requests();
    print_request_log(
        cli,
        test,
        &[
            ("turns A and B (stopped)", &log[..before_retry]),
            ("retry of B", &log[before_retry..before_c]),
            ("turn C", &log[before_c..]),
        ],
    );
    let millis = |at: Option<Instant>, since: Instant| at.map(|at| (at - since).as_millis());
    eprintln!(
        "{test}: /retry after a stop -> first model request {:?} ms; the next prompt -> first model request {:?} ms",
        millis(retry_request, retry_sent),
        millis(c_request, c_sent)
    );
    for request in &log[before_retry..before_c] {
        assert_each_once(request, &prompts[..2]);
    }
    assert_each_once(log.last().expect("turn C reached the model"), prompts);
}

/// Prompts for [`a_stopped_first_turn_stays_in_the_conversation`]: the first is to stream
/// slowly.
pub fn first_stop_prompts(tag: &str) -> [String; 3] {
    let run = uuid_like();
    [
        format!("prompt A {tag} {run}: slow please"),
        format!("prompt B {tag} {run}: remember 42"),
        format!("prompt C {tag} {run}: and now?"),
    ]
}

/// The conversation's first turn (a slow answer) is stopped at its first text; turns B and C
/// continue. From the model's side: B's request carries the stopped prompt once and B once, and
/// C's carries all three once, as after a stop in any later turn.
pub async fn a_stopped_first_turn_stays_in_the_conversation(
    cli: &str,
    test: &str,
    provider: Arc<dyn Provider>,
    cwd: &Path,
    prompts: &[String; 3],
    requests: impl Fn() -> Vec<UserTexts>,
) {
    let mut chat = retrying_orchestrator(provider, cwd);
    let stopped = turn_with(&mut chat, Command::Submit(prompts[0].clone()), true).await;
    assert!(
        matches!(
            stopped.last(),
            Some(OrchestratorEvent::TurnEnded {
                outcome: TurnOutcome::Cancelled,
                ..
            })
        ),
        "turn A was stopped: {stopped:#?}"
    );
    let before_b = requests().len();
    assert_turn(
        &turn_with(&mut chat, Command::Submit(prompts[1].clone()), false).await,
        1,
    );
    let before_c = requests().len();
    assert_turn(
        &turn_with(&mut chat, Command::Submit(prompts[2].clone()), false).await,
        1,
    );
    let log = requests();
    print_request_log(
        cli,
        test,
        &[
            ("turn A (stopped)", &log[..before_b]),
            ("turn B", &log[before_b..before_c]),
            ("turn C", &log[before_c..]),
        ],
    );
    for request in &log[before_b..before_c] {
        assert_each_once(request, &prompts[..2]);
    }
    assert_each_once(log.last().expect("turn C reached the model"), prompts);
}

/// Sends a rewind (or its undo) and waits for the orchestrator's answer.
pub async fn rewound(
    chat: &mut agentty::orchestrator::OrchestratorHandle,
    command: agentty::orchestrator::Command,
) -> agentty::orchestrator::Rewind {
    chat.commands.send(command).unwrap();
    loop {
        let event = tokio::time::timeout(RUN_LIMIT, chat.events.recv())
            .await
            .expect("the rewind is answered")
            .expect("the orchestrator runs");
        if let agentty::orchestrator::OrchestratorEvent::Rewound(rewind) = event {
            eprintln!("{}", rewind.describe());
            return rewind;
        }
    }
}

/// Rewinds the conversation (not the files) to before `turn`; fails the test unless it was.
pub async fn rewind_conversation(chat: &mut OrchestratorHandle, turn: u64) {
    let done = rewound(
        chat,
        Command::Rewind(RewindAsked {
            turn,
            conversation: true,
            files: false,
            overwrite: false,
            undone: false,
        }),
    )
    .await;
    assert_eq!(done.conversation, Some(Ok(())), "{done:?}");
}

/// Undoes the rewind of the conversation to before `turn`; fails the test unless it was.
pub async fn undo_conversation_rewind(chat: &mut OrchestratorHandle, turn: u64) {
    let undone = rewound(
        chat,
        Command::Rewind(RewindAsked {
            turn,
            conversation: true,
            files: false,
            overwrite: false,
            undone: true,
        }),
    )
    .await;
    assert_eq!(undone.conversation, Some(Ok(())), "{undone:?}");
}

/// Three turns, a rewind of the conversation to before the second (a finished turn): the next
/// request carries the first prompt and the new one only. Then a rewind to before that turn
/// undone before the next prompt: the request after it carries that turn again. `requests` is
/// the fake model server's log, one entry per model request.
pub async fn after_a_rewind_the_next_request_no_longer_carries_the_rewound_prompts(
    test: &str,
    provider: Arc<dyn Provider>,
    cwd: &Path,
    requests: impl Fn() -> Vec<UserTexts>,
) {
    let mut options = OrchestratorOptions::new(provider);
    options.cwd = Some(cwd.to_path_buf());
    let mut chat = spawn_orchestrator(options);
    for prompt in ["Remember alpha.", "Remember beta.", "Remember gamma."] {
        assert_turn(&run_turn(&mut chat, prompt).await, 1);
    }
    let last_request = |after: &str| {
        let request = requests().last().cloned().unwrap();
        eprintln!("{test}: the request {after}: {request:#?}");
        request
    };
    rewind_conversation(&mut chat, 2).await;
    assert_turn(&run_turn(&mut chat, "What do you remember?").await, 1);
    assert_carries(
        &last_request("after the rewind"),
        &[
            ("Remember alpha.", 1),
            ("Remember beta.", 0),
            ("Remember gamma.", 0),
            ("What do you remember?", 1),
        ],
    );

    rewind_conversation(&mut chat, 4).await;
    undo_conversation_rewind(&mut chat, 4).await;
    assert_turn(&run_turn(&mut chat, "And now?").await, 1);
    assert_carries(
        &last_request("after the rewind was undone"),
        &[
            ("Remember alpha.", 1),
            ("Remember beta.", 0),
            ("What do you remember?", 1),
            ("And now?", 1),
        ],
    );
}

/// A real 1×1 PNG (a CLI may decode what it sends), written to `dir` and attached from there
/// as the chat attaches it; the request-log assertions compare against its base64.
pub fn one_pixel_png(dir: &Path) -> agentty::attachment::ImageAttachment {
    use base64::Engine;
    const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
    let path = dir.join("pixel.png");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(PIXEL)
        .unwrap();
    std::fs::write(&path, bytes).unwrap();
    agentty::attachment::load(&path, agentty::attachment::DEFAULT_MAX_BYTES).unwrap()
}
