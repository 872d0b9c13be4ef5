//! The command line (a contract, like the message fields: see DESIGN.md).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::demo_agent::DemoAgentArgs;

#[derive(Debug, Parser)]
#[command(
    name = "agentty",
    version,
    about = "A full-screen terminal chat client for coding-agent CLIs"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<CliCommand>,
    #[command(flatten)]
    pub agent: AgentArgs,
    /// Continue the agent CLI's own most recent session.
    #[arg(long = "continue", conflicts_with_all = ["session", "resume"])]
    pub continue_latest: bool,
    /// Continue the given agent session.
    #[arg(long, conflicts_with = "resume")]
    pub session: Option<String>,
    /// Reopen a conversation and continue its agent session: the last one of this directory,
    /// or the one whose id starts with ID.
    #[arg(long, value_name = "ID", num_args = 0..=1)]
    pub resume: Option<Option<String>>,
}

/// Which agent to run and how; shared by the chat and `run`.
#[derive(Debug, Clone, Default, Args)]
pub struct AgentArgs {
    /// pi, claude, codex, gemini or demo. Default: the configured one, else pi when it is on
    /// PATH, else demo.
    #[arg(long, global = true)]
    pub provider: Option<String>,
    /// The executable to run for that provider instead of the one on PATH.
    #[arg(long, global = true)]
    pub agent_bin: Option<PathBuf>,
    /// The config file (default: agentty/config.toml in the platform's config dir).
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// The demo agent's scenario (hello, thinking, tool, markdown, slow, ...).
    #[arg(long, global = true)]
    pub scenario: Option<String>,
    /// The model, for CLIs that take one.
    #[arg(long, global = true)]
    pub model: Option<String>,
    /// An extra argument for the agent CLI (repeatable).
    #[arg(long = "provider-arg", global = true, allow_hyphen_values = true)]
    pub provider_args: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum CliCommand {
    /// Headless: print the shared stream as JSON lines on stdout.
    Run(RunArgs),
    /// The built-in scripted agent (speaks pi's JSON mode).
    DemoAgent(DemoAgentArgs),
    /// Map a saved raw agent log again, printing the shared stream.
    Replay(ReplayArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Attempts for this run (1: no retry); overrides the configured retry policy.
    #[arg(long)]
    pub max_attempts: Option<u32>,
    /// Continue this agent session.
    #[arg(long)]
    pub session: Option<String>,
    /// Continue the agent CLI's most recent session.
    #[arg(long = "continue", conflicts_with = "session")]
    pub continue_latest: bool,
    /// The prompt.
    #[arg(required = true)]
    pub prompt: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A file of raw agent stdout lines (or an agentty session log).
    pub file: PathBuf,
}
