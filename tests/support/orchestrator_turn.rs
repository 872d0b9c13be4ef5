//! One turn through a real orchestrator: send a command, collect its events up to the turn's end.

use std::time::Duration;

use agentty::orchestrator::{Command, OrchestratorEvent as Ev, OrchestratorHandle, TurnOutcome};
use tokio::time::timeout;

/// Sends `command` and collects the events up to the end of the turn, each within `limit`.
pub async fn run_turn(
    handle: &mut OrchestratorHandle,
    command: Command,
    limit: Duration,
) -> Vec<Ev> {
    handle.commands.send(command).unwrap();
    let mut seen = Vec::new();
    loop {
        let event = timeout(limit, handle.events.recv())
            .await
            .expect("an event in time")
            .expect("the orchestrator runs");
        let done = matches!(event, Ev::TurnEnded { .. });
        seen.push(event);
        if done {
            return seen;
        }
    }
}

/// How the turn whose events are `events` ended.
pub fn outcome(events: &[Ev]) -> TurnOutcome {
    match events.last() {
        Some(Ev::TurnEnded { outcome, .. }) => outcome.clone(),
        other => panic!("no turn end: {other:?}"),
    }
}
