//! Performs the orchestrator's effects. (Being built.)

pub struct OrchestratorHandle;
pub struct OrchestratorOptions;
pub fn spawn_orchestrator() {}
