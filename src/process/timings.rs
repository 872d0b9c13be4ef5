//! How long each stage of ending an agent may take: one table, from which the three-stage stop,
//! each transport's in-band cancel (stage 0), the blocking tree kills and the limit a shutdown
//! waits for all of it are computed.
//!
//! Why these values: an agent gets the same 2 s to honour a request to stop, whether it was
//! asked in band (stage 0) or by a signal (stage 2); a kill is confirmed within 5 s in the
//! supervisor, which can wait, and within 2 s where a caller blocks on it (a drop, a panic hook,
//! a launch ending what a predecessor left, a stopped turn's stray tools). The waits of a
//! long-lived agent's start and settings are here too, so that every transport waits alike.

use std::time::Duration;

/// An agent that exits within this window after the interrupt counts as having honoured it.
pub(crate) const INTERRUPT_WINDOW: Duration = Duration::from_millis(250);
/// Stage 2: how long the agent may take to exit after the interrupt before it is killed.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(2);
/// Stage 3: how long the supervisor waits for the kill to be confirmed.
pub(crate) const KILL_CONFIRM: Duration = Duration::from_secs(5);
/// Stage 0 of a long-lived transport's stop: how long its in-band cancel (pi `abort`, ACP
/// `session/cancel`, Claude Code's and Codex's interrupt) may take to end the turn before the
/// three-stage stop runs. The same patience as the signal stage.
pub(crate) const IN_BAND_CANCEL_GRACE: Duration = STOP_GRACE;
/// How long a kill of a process tree waits for it to be gone where the caller blocks on it.
pub(crate) const TREE_KILL_DEADLINE: Duration = Duration::from_secs(2);
/// How long the tools a stopped turn left behind (in a process that stays) may take to die.
pub(crate) const STRAY_KILL_DEADLINE: Duration = TREE_KILL_DEADLINE;
/// How long a launch spends ending what a predecessor left (its trees are killed together).
pub(crate) const REAP_LIMIT: Duration = TREE_KILL_DEADLINE;
/// After its stdin closes, how long an agent that exits on end of input (pi, Claude Code, the
/// Codex app-server) may take to exit before it is stopped: the stop's own grace.
pub(crate) const EXIT_AFTER_CLOSE: Duration = STOP_GRACE;
/// After its stdin closes, how long an ACP agent may take to exit before it is stopped. The
/// Claude and Codex ACP adapters never exit on end of input, so a long wait would only delay
/// every close; a short one still lets an agent that does exit end cleanly.
pub(crate) const EXIT_AFTER_CLOSE_ACP: Duration = Duration::from_millis(500);
/// After an agent exits, how long its stdout may stay open (a grandchild holding the pipe)
/// before the reader stops waiting for it.
pub(crate) const STDOUT_DRAIN_AFTER_EXIT: Duration = Duration::from_secs(1);
/// How long a long-lived agent may take to start and open its session (answer its first
/// requests): a cold start of pi, Claude Code or an ACP adapter is about 1.2 s here, far more
/// on a cold disk or a busy machine.
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a long-lived agent may take to answer a request to change a setting (model, mode,
/// thinking level) before the change counts as refused.
pub(crate) const SETTING_TIMEOUT: Duration = Duration::from_secs(10);
/// What a shutdown adds to the stop it waits for (the orchestrator's messages, the last log
/// writes).
const SHUTDOWN_SLACK: Duration = Duration::from_secs(1);
/// The longest a shutdown waits for the running agent to be stopped: every stage of the
/// longest stop (stage 0, the grace, the kill's confirmation) and some slack.
pub(crate) const SHUTDOWN_LIMIT: Duration = IN_BAND_CANCEL_GRACE
    .saturating_add(STOP_GRACE)
    .saturating_add(KILL_CONFIRM)
    .saturating_add(SHUTDOWN_SLACK);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shutdown_waits_for_every_stage_of_the_longest_stop() {
        assert!(SHUTDOWN_LIMIT > IN_BAND_CANCEL_GRACE + STOP_GRACE + KILL_CONFIRM);
        assert_eq!(SHUTDOWN_LIMIT, Duration::from_secs(10));
        assert!(INTERRUPT_WINDOW < STOP_GRACE);
    }
}
