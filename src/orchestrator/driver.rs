//! Performs the orchestrator's effects on a background task. (Being built: see the
//! orchestrator issue.)

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::{Command, OrchestratorEvent};
use crate::config::RetryPolicy;
use crate::provider::{Provider, SessionRef};

/// What the orchestrator starts with.
pub struct OrchestratorOptions {
    pub provider: Arc<dyn Provider>,
    pub policy: RetryPolicy,
    /// The agent session the first turn continues (`SessionRef::New` for a fresh one).
    pub session: SessionRef,
    /// The agent's working directory (`None`: agentty's own).
    pub cwd: Option<PathBuf>,
    /// The demo scenario, passed to every attempt.
    pub scenario: Option<String>,
}

/// The UI's (or headless runner's) end of the orchestrator.
pub struct OrchestratorHandle {
    pub commands: mpsc::UnboundedSender<Command>,
    pub events: mpsc::UnboundedReceiver<OrchestratorEvent>,
}

/// Starts the orchestrator on a tokio task.
pub fn spawn_orchestrator(options: OrchestratorOptions) -> OrchestratorHandle {
    let _ = options;
    let (commands, _command_rx) = mpsc::unbounded_channel();
    let (_event_tx, events) = mpsc::unbounded_channel();
    OrchestratorHandle { commands, events }
}
