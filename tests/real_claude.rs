//! The real Claude Code CLI, driven through `CliProvider` + `ClaudeBackend`, against the fake
//! Messages API in `support/fake_anthropic.rs` on 127.0.0.1.
//!
//! Opt-in: runs only with `AGENTTY_REAL_CLI_TESTS=1` and the CLI installed
//! (`npm install --prefix /tmp/claude-cli @anthropic-ai/claude-code`, or `AGENTTY_CLAUDE_BIN`);
//! otherwise each test prints why it is skipped and returns. Every run gets a throwaway HOME
//! and working directory, telemetry and non-essential traffic off.

#[path = "support/fake_anthropic.rs"]
mod fake_anthropic;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use agentty::config::ProviderSettings;
use agentty::provider::claude::ClaudeBackend;
use agentty::provider::{AttemptRequest, CliProvider, Provider, SessionRef, StopControl};
use agentty::stream::{failure_reason, notice_kind, AgentMessage};
use fake_anthropic::{FakeAnthropic, Scenario};
use futures::StreamExt;

const TEST_TIMEOUT: Duration = Duration::from_secs(90);
/// The environment variable that marks every process of one test run.
const RUN_MARKER_VAR: &str = "AGENTTY_CLAUDE_TEST_RUN";

fn claude_bin() -> Option<PathBuf> {
    if std::env::var("AGENTTY_REAL_CLI_TESTS").as_deref() != Ok("1") {
        eprintln!("skipped: set AGENTTY_REAL_CLI_TESTS=1 to run the real Claude Code CLI");
        return None;
    }
    let bin = std::env::var_os("AGENTTY_CLAUDE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/claude-cli/node_modules/.bin/claude"));
    if !bin.exists() {
        eprintln!(
            "skipped: no Claude Code CLI at {} (npm install --prefix /tmp/claude-cli @anthropic-ai/claude-code)",
            bin.display()
        );
        return None;
    }
    Some(bin)
}

/// One attempt of the real CLI against a fresh fake server.
struct Run {
    server: FakeAnthropic,
    _home: tempfile::TempDir,
    work: tempfile::TempDir,
    provider: CliProvider,
    processes: ProcessProbe,
}

impl Run {
    async fn new(bin: PathBuf, scenario: Scenario, args: &[&str]) -> Run {
        let server = FakeAnthropic::start(scenario).await;
        let home = tempfile::tempdir().expect("temp HOME");
        let work = tempfile::tempdir().expect("temp working directory");
        let marker = uuid::Uuid::new_v4().simple().to_string();
        let home_path = home.path().to_string_lossy().into_owned();
        let env = BTreeMap::from(
            [
                ("ANTHROPIC_BASE_URL", server.base_url.clone()),
                ("ANTHROPIC_API_KEY", "sk-ant-fake-key".to_owned()),
                ("HOME", home_path.clone()),
                ("CLAUDE_CONFIG_DIR", format!("{home_path}/.claude")),
                ("DISABLE_TELEMETRY", "1".to_owned()),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
                ("DISABLE_AUTOUPDATER", "1".to_owned()),
                ("DISABLE_ERROR_REPORTING", "1".to_owned()),
                (RUN_MARKER_VAR, marker.clone()),
            ]
            .map(|(key, value)| (key.to_owned(), value)),
        );
        let provider = CliProvider::new(ClaudeBackend::new(ProviderSettings {
            command: Some(bin),
            args: args.iter().map(|arg| arg.to_string()).collect(),
            env,
            model: None,
        }));
        Run {
            server,
            _home: home,
            work,
            provider,
            processes: ProcessProbe { marker },
        }
    }

    fn request(&self, prompt: &str, session: SessionRef) -> AttemptRequest {
        AttemptRequest {
            prompt: prompt.into(),
            session,
            cwd: Some(self.work.path().to_path_buf()),
            attempt: 1,
            scenario: None,
            ..AttemptRequest::default()
        }
    }

    /// Runs to the terminal message; `on_message` may stop the attempt.
    async fn run(&self, prompt: &str, stop: StopControl) -> Vec<AgentMessage> {
        self.run_in(SessionRef::New, prompt, stop).await
    }

    async fn run_in(
        &self,
        session: SessionRef,
        prompt: &str,
        stop: StopControl,
    ) -> Vec<AgentMessage> {
        let stream = self.provider.execute(self.request(prompt, session), stop);
        let collect = stream.collect::<Vec<_>>();
        let messages = tokio::time::timeout(TEST_TIMEOUT, collect)
            .await
            .expect("the attempt ends in time");
        for message in &messages {
            eprintln!("{}", message.to_json_line());
        }
        let terminals = messages
            .iter()
            .filter(|message| message.is_terminal())
            .count();
        assert_eq!(terminals, 1, "exactly one terminal message");
        assert!(messages.last().is_some_and(AgentMessage::is_terminal));
        messages
    }
}

fn is_alive(pid: i32) -> bool {
    // A zombie has finished; only its exit status is left to collect.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

fn command_line(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| {
            String::from_utf8_lossy(&bytes)
                .replace('\0', " ")
                .trim()
                .to_owned()
        })
        .unwrap_or_default()
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

fn delta_count(messages: &[AgentMessage]) -> usize {
    messages
        .iter()
        .filter(|message| matches!(message, AgentMessage::Assistant { .. }))
        .count()
}

fn assert_started_session(messages: &[AgentMessage]) {
    match messages.first() {
        Some(AgentMessage::SessionStarted {
            provider,
            session_id: Some(id),
        }) => {
            assert_eq!(provider, "claude");
            assert!(uuid::Uuid::parse_str(id).is_ok(), "session id {id}");
        }
        other => panic!("the stream starts with session.started, not {other:?}"),
    }
}

fn assert_completed(messages: &[AgentMessage]) {
    match messages.last() {
        Some(AgentMessage::Completed { stop_reason, usage }) => {
            assert_eq!(stop_reason, "end_turn");
            let usage = usage.as_ref().expect("usage");
            assert!(usage.input_tokens.is_some_and(|tokens| tokens >= 1234));
            assert!(usage.cost_usd.is_some_and(|cost| cost > 0.0));
        }
        other => panic!("expected terminal.completed, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_streams_as_partial_deltas_shown_once() {
    let Some(bin) = claude_bin() else { return };
    let run = Run::new(bin, Scenario::Text, &[]).await;
    let messages = run.run("Say hello", StopControl::new()).await;
    assert_started_session(&messages);
    assert_eq!(
        text_of(&messages),
        "Hello from the fake server. You said: 'Say hello'. messages=2."
    );
    assert!(delta_count(&messages) > 1, "partial messages stream");
    assert_completed(&messages);
    assert_eq!(run.server.message_requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn later_turns_resume_the_session_and_a_bad_id_fails_clearly() {
    let Some(bin) = claude_bin() else { return };
    let run = Run::new(bin, Scenario::Text, &[]).await;
    let first = run
        .run("Remember the word banana", StopControl::new())
        .await;
    let Some(AgentMessage::SessionStarted {
        session_id: Some(id),
        ..
    }) = first.first()
    else {
        panic!("expected session.started, got {:?}", first.first());
    };
    let resumed = run
        .run_in(
            SessionRef::Resume(id.clone()),
            "What was the word?",
            StopControl::new(),
        )
        .await;
    assert_eq!(
        resumed.first(),
        Some(&AgentMessage::SessionResumed {
            provider: "claude".into(),
            session_id: id.clone(),
        })
    );
    // The whole history went to the model: two user and two assistant messages before.
    assert_eq!(
        text_of(&resumed),
        "Hello from the fake server. You said: 'What was the word?'. messages=4."
    );
    assert_completed(&resumed);
    let continued = run
        .run_in(
            SessionRef::ContinueLatest,
            "And once more?",
            StopControl::new(),
        )
        .await;
    assert!(
        text_of(&continued).ends_with("messages=6."),
        "{continued:?}"
    );

    let unknown = uuid::Uuid::new_v4().to_string();
    let bad = run
        .run_in(
            SessionRef::Resume(unknown.clone()),
            "Bad id",
            StopControl::new(),
        )
        .await;
    match bad.last() {
        Some(AgentMessage::Failed(failure)) => assert_eq!(
            failure.message,
            format!("No conversation found with session ID: {unknown}")
        ),
        other => panic!("expected terminal.failed, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinking_is_released_as_one_thought() {
    let Some(bin) = claude_bin() else { return };
    let run = Run::new(bin, Scenario::Thinking, &[]).await;
    let messages = run.run("Think then answer", StopControl::new()).await;
    assert_eq!(text_of(&messages), "After thinking: the answer is 42.");
    let thoughts: Vec<&AgentMessage> = messages
        .iter()
        .filter(|message| matches!(message, AgentMessage::Thought { .. }))
        .collect();
    assert_eq!(
        thoughts,
        [&AgentMessage::Thought {
            text: "Let me think about this carefully.".into()
        }]
    );
    assert_completed(&messages);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bash_tool_call_is_announced_and_completed() {
    let Some(bin) = claude_bin() else { return };
    let tool = Scenario::Tool {
        command: "echo hi".into(),
    };
    let run = Run::new(bin, tool, &["--allowedTools", "Bash"]).await;
    let messages = run.run("Run echo hi", StopControl::new()).await;
    let call = messages.iter().find_map(|message| match message {
        AgentMessage::ToolCall { id, name, input } => {
            Some((id.clone(), name.clone(), input.clone()))
        }
        _ => None,
    });
    let (id, name, input) = call.expect("a tool.call");
    assert_eq!(name, "Bash");
    assert_eq!(input["command"], "echo hi");
    assert!(messages.contains(&AgentMessage::ToolCompleted {
        id,
        output: "hi".into()
    }));
    assert_eq!(
        text_of(&messages),
        "I'll run a command.The command printed: hi. Done."
    );
    assert_completed(&messages);
    let main_requests = run
        .server
        .message_requests()
        .iter()
        .filter(|request| request.main)
        .count();
    assert_eq!(main_requests, 2, "the tool result went back to the model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_500_fails_after_exactly_one_request() {
    let Some(bin) = claude_bin() else { return };
    let run = Run::new(bin, Scenario::Error { status: 500 }, &[]).await;
    let messages = run.run("Say hello", StopControl::new()).await;
    assert_eq!(
        text_of(&messages),
        "",
        "the CLI's error message is not assistant text"
    );
    assert!(!messages
        .iter()
        .any(|message| matches!(message, AgentMessage::Notice { kind, .. } if kind == notice_kind::AGENT_RETRY)));
    match messages.last() {
        Some(AgentMessage::Failed(failure)) => {
            assert_eq!(failure.reason, failure_reason::AGENT_ERROR);
            assert_eq!(failure.http_status, Some(500));
            assert!(failure.message.contains("500"), "{}", failure.message);
        }
        other => panic!("expected terminal.failed, got {other:?}"),
    }
    let requests = run.server.message_requests();
    assert_eq!(
        requests.len(),
        1,
        "the CLI's own retries are off: {requests:?}"
    );
    assert!(requests[0].main && requests[0].stream);
    assert_eq!(requests[0].retry_count.as_deref(), Some("0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_during_a_tool_ends_the_attempt_and_leaves_no_process() {
    let Some(bin) = claude_bin() else { return };
    let tool = Scenario::Tool {
        command: "sleep 100".into(),
    };
    let run = Run::new(bin, tool, &["--allowedTools", "Bash"]).await;
    let stop = StopControl::new();
    let watcher = {
        let stop = stop.clone();
        let probe = run.processes.clone();
        tokio::spawn(async move {
            // Stop once `sleep 100` runs; remember every process of the run at that moment.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
            while tokio::time::Instant::now() < deadline {
                let processes = probe.live();
                if processes.iter().any(|(_, command)| command == "sleep 100") {
                    stop.stop();
                    return processes;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Vec::new()
        })
    };
    let messages = run.run("Run sleep", stop).await;
    let seen = watcher.await.expect("watcher");
    assert!(
        seen.iter().any(|(_, command)| command == "sleep 100"),
        "sleep 100 was running before the stop: {seen:?}"
    );
    let session_id = match messages.first() {
        Some(AgentMessage::SessionStarted {
            session_id: Some(id),
            ..
        }) => id.clone(),
        other => panic!("expected session.started, got {other:?}"),
    };
    assert!(
        seen.iter()
            .any(|(_, command)| command.contains(&format!(" --session-id {session_id} "))),
        "the CLI runs in the session agentty chose"
    );
    let pids: BTreeSet<i32> = seen.iter().map(|(pid, _)| *pid).collect();
    eprintln!("processes at the stop: {seen:?}");
    match messages.last() {
        Some(AgentMessage::Cancelled {
            stop_stage,
            elapsed_ms,
        }) => {
            eprintln!(
                "stopped at stage {} after {elapsed_ms} ms",
                stop_stage.as_str()
            );
        }
        other => panic!("expected terminal.cancelled, got {other:?}"),
    }
    let call_id = messages
        .iter()
        .find_map(|message| match message {
            AgentMessage::ToolCall { id, .. } => Some(id.clone()),
            _ => None,
        })
        .expect("a tool.call");
    assert!(messages
        .iter()
        .any(|message| matches!(message, AgentMessage::ToolFailed { id, .. } if *id == call_id)));
    let survivors: Vec<i32> = pids.into_iter().filter(|pid| is_alive(*pid)).collect();
    assert!(
        survivors.is_empty(),
        "still alive after the stop: {survivors:?}"
    );
    let left = run.processes.live();
    assert!(left.is_empty(), "processes of the run left: {left:?}");
}

/// Finds the processes of one run: the CLI and everything it started inherit the marker.
#[derive(Clone)]
struct ProcessProbe {
    marker: String,
}

impl ProcessProbe {
    /// Live processes carrying the marker in their environment, with their command lines.
    fn live(&self) -> Vec<(i32, String)> {
        let needle = format!("{RUN_MARKER_VAR}={}", self.marker);
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
