//! The full-screen chat. (Being built: see the TUI issue.)

use crate::cli::Cli;

/// Runs the chat until the user quits; returns the exit status.
pub fn run(cli: Cli) -> i32 {
    let _ = cli;
    eprintln!("the full-screen chat is not built yet; try `agentty run --provider demo \"hi\"`");
    1
}
