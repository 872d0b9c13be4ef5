//! agentty: a full-screen terminal chat client for coding-agent CLIs.
//!
//! Data flows process -> provider (mapper) -> orchestrator -> app state -> view. `process`,
//! `provider`, `stream` and `orchestrator` never touch the terminal.

pub mod app;
pub mod attachment;
pub(crate) mod background;
pub mod chat;
pub mod cli;
pub mod config;
pub mod console;
pub mod demo_agent;
pub(crate) mod files;
pub mod headless;
pub(crate) mod launch;
pub mod logging;
pub mod orchestrator;
pub mod process;
pub mod provider;
pub(crate) mod retention;
pub(crate) mod sanitize;
pub mod session_log;
pub(crate) mod signals;
pub mod snapshot;
pub(crate) mod startup;
pub mod stream;
pub(crate) mod tui;
pub mod view;

/// The runtime for the chat and `agentty run`: two workers (the UI or output, and the agent's
/// reading) are all it needs. `None`, after saying why on stderr, when it cannot start.
pub(crate) fn async_runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| {
            console::err_line(format!("agentty: cannot start the async runtime: {error}"))
        })
        .ok()
}
