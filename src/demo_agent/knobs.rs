//! The demo agent's test knobs: environment variables the tests of the long-lived transports
//! set, so that one test runs the same way on every mode (a user never needs them).
//!
//! - `AGENTTY_DEMO_STDIN_LOG=<file>`: every line the agent reads on stdin is appended to the
//!   file, in order: what agentty wrote, and when relative to the rest.
//! - `AGENTTY_DEMO_LEAVE_TOOLS=1`: an in-band cancel leaves a running tool running (as Codex's
//!   app-server does), so that only agentty can end it.
//! - `AGENTTY_DEMO_IGNORE_CANCEL=1`: the in-band cancel of a `slow` answer is ignored (signals
//!   still work), so that a stop has to go on to the signal stages.

pub const STDIN_LOG_VAR: &str = "AGENTTY_DEMO_STDIN_LOG";
pub const LEAVE_TOOLS_VAR: &str = "AGENTTY_DEMO_LEAVE_TOOLS";
pub const IGNORE_CANCEL_VAR: &str = "AGENTTY_DEMO_IGNORE_CANCEL";

fn set(var: &str) -> bool {
    std::env::var(var).is_ok_and(|value| value == "1")
}

/// Whether an in-band cancel leaves a running tool running.
pub(crate) fn leaves_tools() -> bool {
    set(LEAVE_TOOLS_VAR)
}

/// Whether the in-band cancel of a slow answer is ignored.
pub(crate) fn ignores_cancel() -> bool {
    set(IGNORE_CANCEL_VAR)
}

/// Appends `line`, as read on stdin, to the stdin log when there is one.
pub(crate) fn log_stdin(line: &str) {
    let Some(path) = std::env::var_os(STDIN_LOG_VAR) else {
        return;
    };
    super::state::append_line(std::path::Path::new(&path), line);
}
