//! Providers: one attempt of one agent CLI, mapped into the shared stream.
//!
//! `contract` is what every backend implements and the orchestrator calls, `capabilities`
//! what a backend and a transport declare they can do; `registry` is the factory (name and
//! transport to backend and provider), which no backend imports. `runner` plays a one-shot
//! attempt; `live` is the one turn driver of the long-lived transports (pi's `rpc`, Claude's
//! `stream`, Codex's `app_server`, `acp`), each a protocol it plays; `json_rpc` is the
//! connection ACP and the app-server share.
//!
//! A provider never retries. Its stream always ends with exactly one `terminal.*` message, and
//! a failed start is such a message (`start_failed`), never an error return. Retry policy lives
//! in the orchestrator only.

pub(crate) mod acp;
mod agent_status;
pub(crate) mod capabilities;
pub(crate) mod checkpoint;
pub mod claude;
pub mod codex;
pub(crate) mod common;
pub mod compaction;
pub(crate) mod config_mirror;
pub(crate) mod configured;
pub(crate) mod contract;
pub(crate) mod demo;
pub(crate) mod errors;
pub mod gemini;
pub(crate) mod http_status;
pub(crate) mod json_rpc;
pub(crate) mod live;
pub(crate) mod mapper;
pub mod pi;
pub(crate) mod reconcile;
pub(crate) mod registry;
pub mod runner;
pub(crate) mod session_header;
pub(crate) mod tool_calls;

pub use crate::config::Transport;
pub use crate::process::{StopControl, StopProgress};
pub use agent_status::{
    configured_settings, settings_overridden, AgentCommand, AgentQueue, AgentSetting, AgentStatus,
    ContextUse, ModeChoice, ModelChoice,
};
pub use capabilities::{Capabilities, Images, Interjection, Interjections, LiveTransport, Quirks};
pub(crate) use checkpoint::{BranchPoint, SessionCheckpoint};
pub use contract::{AgentStream, AttemptRequest, Backend, Provider, RawLineTap, SessionRef};
pub(crate) use contract::{ProviderKind, PROVIDER_NAMES};
pub use mapper::{AgentOutcome, ExitFacts, LineVerdict, Mapper};
pub use registry::{build_backend, build_provider, build_provider_with, provider_on};
pub(crate) use registry::{
    default_chat_transport, default_run_transport, not_installed, permissions_not_honoured,
    INSTALL_COMMANDS,
};
pub use runner::CliProvider;
