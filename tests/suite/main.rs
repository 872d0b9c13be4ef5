//! The integration tests, one module per former test file, in one binary: `tests/support/` is
//! compiled once, and cargo links one test binary instead of one per file. `cargo test --test
//! suite -- <module>::` runs one file's tests (`cargo test --test suite -- fuzz_mappers::`).
//!
//! The real-CLI tests (`real_*`) are `#[ignore]`d: they need the CLIs installed from npm.
//! `cargo test --test suite -- --ignored real_pi::` runs pi's (likewise `real_claude::`,
//! `real_codex::`, `real_gemini::`, `real_acp::`, `real_acp_chat::`; `real_` all of them).
//!
//! Every module here is safe to run beside the others in one process: none changes the
//! process's environment, working directory, signal dispositions or umask. `tests/line_memory.rs`
//! stays a binary of its own: it reads its process's peak memory, which other tests would raise.
//! Snapshots of module `x` are `snapshots/suite__x__<name>.snap` beside this file.

#[path = "../support/mod.rs"]
mod support;

mod acp_any_agent;
mod acp_gemini_like;
mod acp_headless;
mod acp_provider;
mod agent_commands;
mod agent_work_screens;
mod claude_fixtures;
mod claude_session_write;
mod claude_stream;
mod claude_stream_e2e;
mod claude_stream_fixtures;
mod codex_app_server;
mod codex_app_server_fixtures;
mod codex_app_server_modes;
mod codex_app_server_tmux;
mod codex_fixtures;
mod command_line;
mod compaction;
mod compaction_chat;
mod composer_keys;
mod composer_screens;
mod conversation;
mod crash_safety;
mod demo_agent;
mod demo_agent_acp;
mod demo_agent_rpc;
mod demo_provider;
mod e2e_big_turn;
mod e2e_composer;
mod e2e_composer_keys;
mod e2e_entry;
mod e2e_exit;
mod e2e_images;
mod e2e_model;
mod e2e_permission_diff;
mod e2e_permissions;
mod e2e_resume_choices;
mod e2e_review;
mod e2e_steering;
mod e2e_tmux;
mod entry_screens;
mod failure_headlines;
mod fuzz_mappers;
mod gemini_fixtures;
mod headless;
mod headless_thinking;
mod hostile;
mod images;
mod job_control;
mod layering;
mod live_rules;
mod orchestrator;
mod pi_fixtures;
mod pi_rpc;
mod pi_rpc_steer_at_stop;
mod process;
mod real_acp;
mod real_acp_any;
mod real_acp_chat;
mod real_acp_commands;
mod real_claude;
mod real_codex;
mod real_gemini;
mod real_pi;
mod resume_word;
mod secrets;
mod session_log_replay;
mod snapshot_processes;
mod theme_light;
mod tui_live_status;
mod tui_model;
mod tui_permissions;
mod tui_snapshots;
mod tui_steering;
mod turn_changes;
mod usage_errors;
