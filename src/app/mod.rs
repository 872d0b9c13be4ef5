//! The full-screen chat: app state, its reducers, and the event loop that drives them.
//!
//! `state` is a pure reducer over orchestrator events and keys (tested with hand-made event
//! sequences); `event_loop` owns the terminal, the orchestrator handle and the timers, and is
//! the only place that performs effects.

pub mod activity;
pub mod completion;
pub mod composer;
pub mod conversation_picker;
pub mod event_loop;
pub mod failure_text;
pub mod history;
pub mod keymap;
pub mod list;
pub mod live_thinking;
pub mod mentions;
pub mod menu;
pub mod resume;
pub mod state;
pub mod transcript;

use crate::cli::{AgentArgs, Cli};
use crate::config::Config;
use crate::provider::select::ProviderChoice;

/// Runs the chat until the user quits; returns the exit status.
pub fn run(cli: Cli) -> i32 {
    event_loop::run(cli)
}

/// The provider to use and its settings (see `provider::select::resolve_provider`).
pub fn resolve_provider(args: &AgentArgs, config: &Config) -> Result<ProviderChoice, String> {
    crate::provider::select::resolve_provider(args, config)
}
