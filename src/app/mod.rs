//! The chat's state and its reducers, and the helpers that load what the state shows (prompt
//! history, file mentions, conversations to resume). Nothing here touches the terminal or reads
//! the clock ("now" is passed in).
//!
//! `state` is a pure reducer over orchestrator events and keys (tested with hand-made event
//! sequences) that returns effects; `crate::chat` owns the terminal, performs those effects and
//! draws the state with `crate::view`.

pub(crate) mod action;
pub(crate) mod activity;
pub(crate) mod agent_status;
pub(crate) mod attention;
pub(crate) mod completion;
pub(crate) mod composer;
pub(crate) mod conversation_picker;
pub(crate) mod export;
pub(crate) mod failure_text;
pub(crate) mod help;
pub(crate) mod history;
pub(crate) mod history_search;
pub(crate) mod inert;
pub(crate) mod keymap;
pub(crate) mod list;
pub(crate) mod live_thinking;
pub mod mentions;
pub mod menu;
pub(crate) mod mode_picker;
pub(crate) mod model_picker;
pub(crate) mod pane;
pub mod permission;
pub(crate) mod permission_record;
pub(crate) mod plan_cell;
pub(crate) mod provider_picker;
pub mod resume;
pub(crate) mod review;
pub(crate) mod rewind;
pub(crate) mod scroll;
pub mod settings;
pub mod state;
pub(crate) mod tool_summary;
pub mod transcript;
