//! A test backend whose agent is a small shell script, and whose "protocol" is the shared
//! stream itself: each stdout line is an `AgentMessage` JSON line, and a `terminal.completed`
//! or `terminal.failed` line is the agent saying how it ended. This exercises the real process
//! layer and runner with real child processes; only the JSON dialect is simplified.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentty::process::SpawnSpec;
use agentty::provider::{
    AgentOutcome, AgentStream, AttemptRequest, Backend, CliProvider, ExitFacts, LineVerdict,
    Mapper, Provider, StopControl,
};
use agentty::stream::AgentMessage;
use futures::StreamExt;

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

/// Waits until `path` holds a line of PIDs and returns them.
pub async fn read_pids(path: &Path) -> Vec<i32> {
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(path) {
            let pids: Vec<i32> = text
                .split_whitespace()
                .filter_map(|word| word.parse().ok())
                .collect();
            if !pids.is_empty() && text.ends_with('\n') {
                return pids;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no PIDs written to {}", path.display());
}
