//! The chat's keys in one table: the help overlay renders it and the footer and first-start
//! screen take their hints from here; `AppState::on_key` dispatches the chords (the composer
//! screen tests press them).
//!
//! Editing keys are readline's (as in Codex and shells), so the action menu moved off Ctrl+K to
//! Ctrl+X; F2 still opens it.

/// One row of the help: the keys and what they do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyHelp {
    pub keys: &'static str,
    pub what: &'static str,
}

const fn key(keys: &'static str, what: &'static str) -> KeyHelp {
    KeyHelp { keys, what }
}

/// The chord that opens the action menu (besides F2).
pub const MENU_KEY: &str = "Ctrl+X";
/// The footer's hint.
pub const FOOTER_HINT: &str = "Ctrl+X actions · F1 help";
/// How long "Ctrl+C again to quit" stays armed.
pub const QUIT_CONFIRM_SECS: u64 = 2;

/// Every key, in the order the help shows them.
pub const KEYMAP: &[KeyHelp] = &[
    key("Enter", "send the prompt (queue it while a turn runs)"),
    key("Alt+Enter / Shift+Enter", "new line in the prompt"),
    key(
        "Tab",
        "complete the / command or @ file shown above the prompt",
    ),
    key(
        "@",
        "mention a file (fuzzy search here); @file:10-20 adds lines",
    ),
    key("Up / Down", "earlier prompts (on an empty prompt)"),
    key(
        "Ctrl+R",
        "search earlier prompts (also from earlier launches)",
    ),
    key(
        "Esc",
        "stop the turn, queued prompts back to the editor; again: kill",
    ),
    key("Alt+Up", "pull the last queued prompt back into the editor"),
    key(
        "Ctrl+C",
        "clear the prompt (Up brings it back) / stop the turn / quit",
    ),
    key("Ctrl+X / F2", "actions menu"),
    key("F1", "this help"),
    key("Ctrl+Z", "suspend agentty and the agent (fg resumes)"),
    key("Ctrl+A / Ctrl+E", "start / end of the line"),
    key("Ctrl+B / Ctrl+F", "back / forward one character"),
    key("Alt+B / Alt+F", "back / forward one word"),
    key("Ctrl+K / Ctrl+U", "delete to the end / start of the line"),
    key(
        "Ctrl+W / Alt+D",
        "delete the word before / after the cursor",
    ),
    key("Ctrl+Y", "paste what was deleted last"),
    key("Ctrl+_", "undo the last edit"),
    key("Ctrl+T", "expand/collapse all thinking"),
    key("Ctrl+O", "expand/collapse all tool output and diagnostics"),
    key(
        "Click",
        "expand/collapse one thinking block, tool or notice",
    ),
    key("PgUp / PgDn", "scroll the transcript a page"),
    key("Mouse wheel", "scroll the transcript"),
    key("Home / End", "top / bottom (when the prompt is empty)"),
    key("Ctrl+Home / Ctrl+End", "top / bottom (always)"),
    key("/retry /stop /new", "retry last turn · stop · new session"),
    key(
        "/provider [NAME]",
        "switch provider (pi claude codex gemini demo)",
    ),
    key(
        "/thinking /tools",
        "expand/collapse all thinking / tool output",
    ),
    key(
        "/copy /settings /log",
        "copy last answer · retry policy · log path",
    ),
    key("/help /quit", "this help · quit"),
    key(
        "Shift+drag",
        "select text with the mouse (terminal selection)",
    ),
];
