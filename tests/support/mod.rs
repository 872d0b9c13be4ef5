//! What the integration tests share (compiled once, in the `suite` binary; `http.rs` is also
//! read by `benches/enter_to_request.rs`, `script_agent.rs` by `tests/line_memory.rs`).

pub mod acp_rig;
pub mod agent_stream;
pub mod captures;
pub mod chat;
pub mod chat_pane;
pub mod demo_launcher;
pub mod fake_anthropic;
pub mod fake_codex_server;
pub mod fake_gemini_server;
pub mod fake_openai;
pub mod headless_run;
pub mod http;
pub mod orchestrator_turn;
pub mod real_cli;
pub mod replay;
pub mod script_agent;
pub mod tmux;
