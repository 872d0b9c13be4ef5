//! Reading a provider's stream in process tests, and watching the processes it leaves.

use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::time::timeout;

use agentty::provider::AgentStream;
use agentty::stream::{AgentMessage, PermissionRequest};

/// How long a test waits for the next message (a loaded 2-core machine is slow).
pub const PATIENCE: Duration = Duration::from_secs(30);

pub async fn collect(mut stream: AgentStream) -> Vec<AgentMessage> {
    let mut messages = Vec::new();
    while let Some(message) = timeout(PATIENCE, stream.next()).await.expect("in time") {
        messages.push(message);
    }
    messages
}

/// Reads `stream` until `wanted` matches a message; returns what was read.
pub async fn read_until(
    stream: &mut AgentStream,
    wanted: impl Fn(&AgentMessage) -> bool,
) -> Vec<AgentMessage> {
    let mut seen = Vec::new();
    loop {
        let message = timeout(PATIENCE, stream.next())
            .await
            .expect("in time")
            .expect("the wanted message before the end");
        let found = wanted(&message);
        seen.push(message);
        if found {
            return seen;
        }
    }
}

/// Reads `stream` up to its first permission request; returns the request.
pub async fn until_permission_request(stream: &mut AgentStream) -> PermissionRequest {
    let mut seen = read_until(stream, |message| {
        matches!(message, AgentMessage::PermissionRequest(_))
    })
    .await;
    match seen.pop() {
        Some(AgentMessage::PermissionRequest(request)) => *request,
        _ => unreachable!("read_until stops at the request"),
    }
}

#[allow(unused_imports)]
pub use agentty::stream::assistant_text as text;

pub fn session_id(messages: &[AgentMessage]) -> String {
    match messages.first() {
        Some(AgentMessage::SessionStarted {
            session_id: Some(id),
            ..
        })
        | Some(AgentMessage::SessionResumed { session_id: id, .. }) => id.clone(),
        other => panic!("no session message first: {other:?}"),
    }
}

pub fn terminals(messages: &[AgentMessage]) -> Vec<&AgentMessage> {
    messages
        .iter()
        .filter(|message| message.is_terminal())
        .collect()
}

pub fn alive(pid: i32) -> bool {
    // A zombie is not alive: look at the process state.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            let state = stat.rsplit(") ").next().unwrap_or("").chars().next();
            state != Some('Z')
        })
        .unwrap_or(false)
}

pub async fn wait_gone(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// Reads the orchestrator's events until the running turn ends; with `stop_on_text`, stops it
/// at its first assistant text.
pub async fn turn_end(
    handle: &mut agentty::orchestrator::OrchestratorHandle,
    stop_on_text: bool,
) -> agentty::orchestrator::TurnOutcome {
    use agentty::orchestrator::{Command, OrchestratorEvent as Ev};
    let mut stopped = false;
    loop {
        let event = timeout(PATIENCE, handle.events.recv())
            .await
            .expect("in time")
            .expect("running");
        match event {
            Ev::Message {
                message: AgentMessage::Assistant { .. },
                ..
            } if stop_on_text && !stopped => {
                handle.commands.send(Command::Stop).unwrap();
                stopped = true;
            }
            Ev::TurnEnded { outcome, .. } => return outcome,
            _ => {}
        }
    }
}

/// How each permission request of `messages` was answered: (outcome, by whom).
pub fn resolutions(
    messages: &[AgentMessage],
) -> Vec<(String, agentty::stream::PermissionResolver)> {
    messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::PermissionResolved { outcome, by, .. } => Some((outcome.clone(), *by)),
            _ => None,
        })
        .collect()
}
