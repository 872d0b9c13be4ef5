//! A test backend whose agent is a small shell script, and whose "protocol" is the shared
//! stream itself: each stdout line is an `AgentMessage` JSON line, and a `terminal.completed`
//! or `terminal.failed` line is the agent saying how it ended. This exercises the real process
//! layer and runner with real child processes; only the JSON dialect is simplified.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentty::process::SpawnSpec;
use agentty::provider::{
    AgentOutcome, AgentStream, AttemptRequest, Backend, CliProvider, ExitFacts, LineVerdict,
    Mapper, Provider, StopControl,
};
use agentty::stream::{AgentMessage, StopStage};
use futures::StreamExt;
use tempfile::TempDir;

/// The line an agent script prints to say it completed.
pub const COMPLETED: &str = r#"{"type":"terminal.completed","stop_reason":"stop"}"#;

pub struct ScriptBackend {
    pub script: PathBuf,
    pub cwd: Option<PathBuf>,
}

impl Backend for ScriptBackend {
    fn name(&self) -> &'static str {
        "script"
    }

    fn spawn_spec(&self, request: &AttemptRequest) -> SpawnSpec {
        let mut spec = SpawnSpec::new(&self.script).arg(&request.prompt);
        spec.cwd = self.cwd.clone();
        spec
    }

    fn mapper(&self, _request: &AttemptRequest) -> Box<dyn Mapper> {
        Box::new(SharedStreamMapper::default())
    }
}

#[derive(Default)]
pub struct SharedStreamMapper {
    outcome: Option<AgentOutcome>,
}

impl Mapper for SharedStreamMapper {
    fn map_line(&mut self, line: &str, out: &mut Vec<AgentMessage>) -> LineVerdict {
        match AgentMessage::from_json_line(line) {
            Ok(AgentMessage::Completed { stop_reason, usage }) => {
                self.outcome = Some(AgentOutcome::Completed { stop_reason, usage });
                LineVerdict::Event
            }
            Ok(AgentMessage::Failed(failure)) => {
                self.outcome = Some(AgentOutcome::Failed {
                    reason: failure.reason,
                    message: failure.message,
                    http_status: failure.http_status,
                });
                LineVerdict::Event
            }
            Ok(message) => {
                out.push(message);
                LineVerdict::Event
            }
            Err(_) => LineVerdict::Invalid,
        }
    }

    fn outcome_reported(&self) -> bool {
        self.outcome.is_some()
    }

    fn finish(&mut self, _exit: ExitFacts, _out: &mut Vec<AgentMessage>) -> AgentOutcome {
        self.outcome.take().unwrap_or(AgentOutcome::Unfinished)
    }
}

/// Writes an executable `#!/bin/sh` script into `dir`.
pub fn write_script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

pub fn provider_for(script: &Path) -> CliProvider {
    CliProvider::new(ScriptBackend {
        script: script.to_path_buf(),
        cwd: None,
    })
}

pub fn request(prompt: &str) -> AttemptRequest {
    AttemptRequest {
        prompt: prompt.to_owned(),
        attempt: 1,
        ..AttemptRequest::default()
    }
}

/// Collects a whole stream (bounded in time, so a broken stream fails the test, not hangs it).
pub async fn collect(stream: AgentStream) -> Vec<AgentMessage> {
    tokio::time::timeout(Duration::from_secs(30), stream.collect::<Vec<_>>())
        .await
        .expect("the stream ended within 30 s")
}

pub async fn run_script(script: &Path, prompt: &str) -> Vec<AgentMessage> {
    collect(provider_for(script).execute(request(prompt), StopControl::new())).await
}

/// Runs an agent script with `body` on the prompt "hi", to its end.
pub async fn run_agent(body: &str) -> Vec<AgentMessage> {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(dir.path(), "agent", body);
    run_script(&script, "hi").await
}

/// Asserts the one-terminal-last rule and returns the terminal message.
pub fn terminal(messages: &[AgentMessage]) -> &AgentMessage {
    let terminals = messages
        .iter()
        .filter(|message| message.is_terminal())
        .count();
    assert_eq!(
        terminals, 1,
        "exactly one terminal message in {messages:#?}"
    );
    let last = messages.last().unwrap();
    assert!(
        last.is_terminal(),
        "the terminal message is last in {messages:#?}"
    );
    last
}

/// Whether a process is gone (absent, or a zombie nobody has reaped yet).
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.trim_start())
                .unwrap_or("");
            state.starts_with('Z') || state.starts_with('X')
        }
    }
}

/// An agent script in its own temporary folder that writes PIDs to a file there.
pub struct PidScript {
    pub script: PathBuf,
    pub pid_file: PathBuf,
    /// The folder, deleted when the script is dropped.
    _dir: TempDir,
}

/// Writes the agent script `body(pid_file)`, where `pid_file` is the path for its PIDs (one
/// line, ended by a newline once all are written).
pub fn pid_script(body: impl FnOnce(&str) -> String) -> PidScript {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let script = write_script(dir.path(), "agent", &body(&pid_file.display().to_string()));
    PidScript {
        script,
        pid_file,
        _dir: dir,
    }
}

/// How long an agent script may take to write its PIDs.
const PIDS_LIMIT: Duration = Duration::from_secs(10);

/// The PIDs in `path`, once a whole line of them is there.
fn pids_written(path: &Path) -> Option<Vec<i32>> {
    let text = std::fs::read_to_string(path).ok()?;
    let pids: Vec<i32> = text
        .split_whitespace()
        .map(|word| {
            word.parse()
                .unwrap_or_else(|_| panic!("{word:?} in {} is no PID", path.display()))
        })
        .collect();
    (!pids.is_empty() && text.ends_with('\n')).then_some(pids)
}

/// [`read_pids_blocking`] off the async runtime's threads.
pub async fn read_pids(path: &Path) -> Vec<i32> {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || read_pids_blocking(&path))
        .await
        .unwrap_or_else(|error| std::panic::resume_unwind(error.into_panic()))
}

/// Waits until `path` holds a line of PIDs and returns them.
pub fn read_pids_blocking(path: &Path) -> Vec<i32> {
    let deadline = Instant::now() + PIDS_LIMIT;
    loop {
        if let Some(pids) = pids_written(path) {
            return pids;
        }
        assert!(
            Instant::now() < deadline,
            "no PIDs written to {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `script`, waits for the PIDs it writes to `pid_file`, stops it, and returns the
/// terminal message, the time the stop took and the PIDs.
pub async fn stop_after_start(
    script: &Path,
    pid_file: &Path,
) -> (AgentMessage, Duration, Vec<i32>) {
    let stop = StopControl::new();
    let stream = provider_for(script).execute(request("go"), stop.clone());
    let collecting = tokio::spawn(collect(stream));
    let pids = read_pids(pid_file).await;
    let started = Instant::now();
    stop.stop();
    let messages = collecting.await.unwrap();
    let elapsed = started.elapsed();
    (terminal(&messages).clone(), elapsed, pids)
}

/// The stage and time of a `terminal.cancelled`; fails the test for any other message.
pub fn cancelled(terminal: &AgentMessage) -> (StopStage, u64) {
    match terminal {
        AgentMessage::Cancelled {
            stop_stage,
            elapsed_ms,
        } => (*stop_stage, *elapsed_ms),
        other => panic!("expected terminal.cancelled, got {other:?}"),
    }
}

/// Fails the test for each of `pids` that still runs `after` something.
pub fn assert_all_gone(pids: &[i32], after: &str) {
    let survivors: Vec<i32> = pids
        .iter()
        .copied()
        .filter(|pid| !process_gone(*pid))
        .collect();
    assert!(survivors.is_empty(), "{survivors:?} survived {after}");
}

/// Waits up to `limit` for every process in `pids` to be gone; fails the test if one is not,
/// naming what it survived.
pub async fn wait_until_gone(pids: &[i32], limit: Duration, after: &str) {
    let deadline = Instant::now() + limit;
    while !pids.iter().all(|pid| process_gone(*pid)) {
        if Instant::now() >= deadline {
            assert_all_gone(pids, after);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
