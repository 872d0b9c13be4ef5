//! The built-in scripted agent (`agentty demo-agent`). (Being built.)

#[derive(Debug, Clone, Default, clap::Args)]
pub struct DemoAgentArgs {
    /// The scenario to play (see assets/scenarios); default: chosen by a keyword in the prompt.
    #[arg(long)]
    pub scenario: Option<String>,
    /// pi's output mode; only `json` is spoken.
    #[arg(long, default_value = "json")]
    pub mode: String,
    /// Continue this session id.
    #[arg(long)]
    pub session: Option<String>,
    /// Continue the most recent session.
    #[arg(long = "continue", short = 'c')]
    pub continue_latest: bool,
    /// The prompt(s).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub prompt: Vec<String>,
}

/// Runs the demo agent; returns the process exit status.
pub fn run(args: DemoAgentArgs) -> i32 {
    let _ = args;
    0
}
