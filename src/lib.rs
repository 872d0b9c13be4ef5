//! agentty: a full-screen terminal chat client for coding-agent CLIs.
//!
//! Data flows process -> provider (mapper) -> orchestrator -> app state -> view. `process`,
//! `provider`, `stream` and `orchestrator` never touch the terminal.

pub mod app;
pub mod cli;
pub mod config;
pub mod demo_agent;
pub mod headless;
pub mod logging;
pub mod orchestrator;
pub mod process;
pub mod provider;
pub mod session_log;
pub mod stream;
pub mod tui;
pub mod view;
