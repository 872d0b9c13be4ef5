//! Job control: when agentty is suspended (Ctrl+Z in the chat, SIGTSTP to `agentty run`), its
//! agents are suspended with it, and resumed with it on `fg`.
//!
//! Each agent runs in its own process group, so the terminal's SIGTSTP never reaches it: without
//! this an agent would go on working (and writing files) while the user believes everything is
//! stopped.

use nix::sys::signal::{raise, Signal};

use super::tree::signal_all_groups;

/// Suspends every agent's process group, then agentty itself; returns once agentty has been
/// continued (`fg`), after the agents were continued too.
pub(crate) fn suspend_with_agents() {
    signal_all_groups(Signal::SIGTSTP);
    // SIGSTOP cannot be caught: this works even while a SIGTSTP handler is installed.
    if let Err(error) = raise(Signal::SIGSTOP) {
        tracing::warn!(%error, "could not suspend agentty");
    }
    signal_all_groups(Signal::SIGCONT);
}
