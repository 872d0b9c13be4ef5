//! The full-screen chat: the event loop that owns the terminal, the orchestrator handle and the
//! timers, feeds keys and orchestrator events to the `app` reducers, performs the effects they
//! return and draws with `view`.
//!
//! It sits above both `app` (state and reducers, no IO) and `view` (pure rendering of that
//! state), so neither of them depends on the other's driver and the module graph stays acyclic.

mod clipboard;
mod event_loop;
mod external;

use crate::cli::Cli;

/// Runs the chat until the user quits; returns the exit status.
pub fn run(cli: Cli) -> i32 {
    event_loop::run(cli)
}
