//! The orchestrator: turns, sessions, the prompt queue, and the retry policy.
//!
//! It is the only place that retries. `fsm` is a pure state machine (events in, effects out, no
//! IO, no clock); `driver` performs the effects (provider attempts, stop requests, retry timers)
//! on a background task and talks to the UI or the headless runner through the typed channels
//! below.

pub mod classify;
pub mod driver;
pub mod fsm;

use crate::config::RetryPolicy;
use crate::provider::StopProgress;
use crate::stream::AgentMessage;

pub use driver::{spawn_orchestrator, OrchestratorHandle, OrchestratorOptions};

/// Identifies a turn (one user prompt) within an agentty run.
pub type TurnId = u64;

/// What the UI (or the headless runner) asks the orchestrator to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// A user prompt: starts a turn, or is queued while one runs.
    Submit(String),
    /// Stop the running turn (three-stage stop), or cancel a pending retry. Repeated: kill.
    Stop,
    /// Re-send the last failed or cancelled turn's prompt in the same session.
    RetryLastTurn,
    /// Forget the agent session: the next turn starts a new one.
    NewSession,
    /// Remove the queued prompt at this index.
    RemoveQueued(usize),
    /// Replace the queued prompt at this index.
    EditQueued(usize, String),
    /// Use this retry policy from now on.
    SetRetryPolicy(RetryPolicy),
    /// Stop whatever runs and end the orchestrator.
    Shutdown,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnOutcome {
    Completed,
    Failed { reason: String, message: String },
    Cancelled,
}

/// What the orchestrator tells the UI. Agent messages arrive tagged with their turn and attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum OrchestratorEvent {
    TurnStarted {
        turn: TurnId,
        prompt: String,
    },
    AttemptStarted {
        turn: TurnId,
        attempt: u32,
        max_attempts: u32,
    },
    /// One message of the current attempt's shared stream (terminal messages included).
    Message {
        turn: TurnId,
        attempt: u32,
        message: AgentMessage,
    },
    /// Progress of a stop the user asked for.
    StopProgress {
        turn: TurnId,
        progress: StopProgress,
    },
    /// The next attempt starts after `delay_ms`, unless the user stops it.
    RetryScheduled {
        turn: TurnId,
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        reason: String,
    },
    RetryCancelled {
        turn: TurnId,
    },
    TurnEnded {
        turn: TurnId,
        outcome: TurnOutcome,
    },
    /// The prompts waiting for the running turn to end.
    QueueChanged {
        queued: Vec<String>,
    },
    /// The agent session the next turn continues (`None`: a new one).
    SessionChanged {
        session_id: Option<String>,
    },
    /// The orchestrator has stopped (after `Shutdown`); nothing follows.
    ShutDown,
}
