use std::process::ExitCode;

use clap::Parser;

use agentty::cli::{Cli, CliCommand};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            // clap: help/version exit 0; usage errors exit 2 (DESIGN.md).
            return ExitCode::from(if error.use_stderr() { 2 } else { 0 });
        }
    };
    let status = match cli.command {
        Some(CliCommand::DemoAgent(args)) => agentty::demo_agent::run(args),
        Some(CliCommand::Run(args)) => {
            let _guard = agentty::logging::init();
            agentty::headless::run(cli.agent, args)
        }
        Some(CliCommand::Replay(args)) => agentty::headless::replay(cli.agent, args),
        None => {
            let _guard = agentty::logging::init();
            agentty::app::run(cli)
        }
    };
    ExitCode::from(status.clamp(0, 255) as u8)
}
