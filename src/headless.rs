//! `agentty run` and `agentty replay`. (Being built.)

use crate::cli::{AgentArgs, ReplayArgs, RunArgs};

pub fn run(agent: AgentArgs, args: RunArgs) -> i32 {
    let _ = (agent, args);
    1
}

pub fn replay(agent: AgentArgs, args: ReplayArgs) -> i32 {
    let _ = (agent, args);
    1
}
