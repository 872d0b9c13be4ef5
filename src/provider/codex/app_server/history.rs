//! The turns of the Codex thread in use, as far as agentty has seen them. Where the thread
//! stands when a turn begins is the point a rewind branches back to (`thread/fork` through the
//! last turn before it), so it must be known without asking Codex: a checkpoint is taken before
//! the turn, synchronously.

use std::sync::{Arc, Mutex};

use crate::provider::BranchPoint;

/// Shared by the provider (which reads it for checkpoints) and the live session (which sees
/// threads open, turns start and turns reverted).
#[derive(Clone, Default)]
pub(super) struct ThreadHistory(Arc<Mutex<Known>>);

#[derive(Default)]
struct Known {
    thread: String,
    /// The thread's turns seen, oldest first; after a resume, from its newest turn on.
    turns: Vec<String>,
    /// Turns before `turns[0]` may exist (a resumed thread's older turns are not fetched).
    older_unseen: bool,
    /// Nothing is known of `thread`'s turns (Codex did not list them).
    unknown: bool,
}

impl ThreadHistory {
    /// Thread `thread` is open; `newest` is its newest turn (`Ok(None)`: it has none), or the
    /// error when Codex could not say.
    pub(super) fn opened(&self, thread: &str, newest: Result<Option<String>, String>) {
        let Ok(mut known) = self.0.lock() else {
            return;
        };
        *known = Known {
            thread: thread.to_owned(),
            ..Known::default()
        };
        match newest {
            Ok(Some(turn)) => {
                known.turns.push(turn);
                known.older_unseen = true;
            }
            Ok(None) => {}
            Err(error) => {
                tracing::info!(thread, %error, "the Codex thread's turns are not known");
                known.unknown = true;
            }
        }
    }

    /// Turn `turn` began in `thread`.
    pub(super) fn turn_started(&self, thread: &str, turn: &str) {
        if let Ok(mut known) = self.0.lock() {
            if known.thread == thread && known.turns.last().map(String::as_str) != Some(turn) {
                known.turns.push(turn.to_owned());
            }
        }
    }

    /// Codex forgot `turn` and every later one of `thread` (`thread/revert`).
    pub(super) fn reverted(&self, thread: &str, turn: &str) {
        let Ok(mut known) = self.0.lock() else {
            return;
        };
        if known.thread != thread {
            return;
        }
        match known.turns.iter().position(|seen| seen == turn) {
            Some(at) => {
                known.turns.truncate(at);
                // The turns before the first one seen are unseen, not gone.
                known.unknown |= known.turns.is_empty() && known.older_unseen;
            }
            None => known.unknown = true,
        }
    }

    /// Where `thread` stands now (`None`: the thread in use, whichever it is), when known.
    pub(super) fn branch_point(&self, thread: Option<&str>) -> Option<BranchPoint> {
        let known = self.0.lock().ok()?;
        if known.unknown || known.thread.is_empty() || thread.is_some_and(|id| id != known.thread) {
            return None;
        }
        Some(BranchPoint {
            thread: known.thread.clone(),
            after_turn: known.turns.last().cloned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(thread: &str, turn: Option<&str>) -> Option<BranchPoint> {
        Some(BranchPoint {
            thread: thread.into(),
            after_turn: turn.map(str::to_owned),
        })
    }

    #[test]
    fn a_new_thread_stands_at_its_start_then_after_each_turn_begun() {
        let history = ThreadHistory::default();
        assert_eq!(history.branch_point(None), None, "no thread yet");
        history.opened("t", Ok(None));
        assert_eq!(history.branch_point(Some("t")), after("t", None));
        history.turn_started("t", "a");
        history.turn_started("t", "a");
        history.turn_started("t", "b");
        assert_eq!(history.branch_point(Some("t")), after("t", Some("b")));
        assert_eq!(history.branch_point(None), after("t", Some("b")));
        assert_eq!(history.branch_point(Some("other")), None);
        history.turn_started("other", "x");
        assert_eq!(history.branch_point(None), after("t", Some("b")));
    }

    #[test]
    fn a_reverted_turn_takes_the_thread_back_to_the_turn_before_it() {
        let history = ThreadHistory::default();
        history.opened("t", Ok(Some("old".into())));
        history.turn_started("t", "a");
        history.turn_started("t", "failed");
        history.reverted("t", "failed");
        assert_eq!(history.branch_point(Some("t")), after("t", Some("a")));
        history.reverted("t", "a");
        assert_eq!(history.branch_point(Some("t")), after("t", Some("old")));
        // Before the newest turn of a resumed thread lie turns agentty never saw.
        history.reverted("t", "old");
        assert_eq!(history.branch_point(Some("t")), None);
    }

    #[test]
    fn a_thread_whose_turns_codex_did_not_list_has_no_branch_point() {
        let history = ThreadHistory::default();
        history.opened("t", Err("unknown method".into()));
        history.turn_started("t", "a");
        assert_eq!(history.branch_point(Some("t")), None);
        history.opened("u", Ok(Some("z".into())));
        history.reverted("u", "never-seen");
        assert_eq!(history.branch_point(Some("u")), None);
    }
}
