//! Codex reports a thread's running token total in `turn.completed`, not the turn's own
//! figures: a resumed thread of three 12-token turns reports 12, 24, 36 (protocols/codex). The
//! shared stream carries the turn's own figures, so each thread's last total is kept (for the
//! life of the backend, across attempts and turns) and the turn gets the difference.
//!
//! A thread first seen resumed (continued from an earlier launch of agentty) has no known
//! earlier total; its first turn's figures are the thread's total so far.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::stream::Usage;

/// The last cumulative usage per Codex thread id, shared by the backend's mappers.
#[derive(Debug, Clone, Default)]
pub struct ThreadTotals(Arc<Mutex<HashMap<String, Usage>>>);

impl ThreadTotals {
    /// The turn's own usage from the thread's new running `total`; remembers `total`.
    pub fn turn_usage(&self, thread_id: &str, total: Usage) -> Usage {
        let Ok(mut totals) = self.0.lock() else {
            return total;
        };
        let turn = match totals.get(thread_id) {
            Some(previous) => difference(&total, previous),
            None => total.clone(),
        };
        totals.insert(thread_id.to_owned(), total);
        turn
    }
}

/// `total - previous`, field by field. A count that went down means Codex started counting
/// afresh (a compacted or forked thread): then the new count is the turn's own.
fn difference(total: &Usage, previous: &Usage) -> Usage {
    let minus = |now: Option<u64>, before: Option<u64>| match (now, before) {
        (Some(now), Some(before)) if now >= before => Some(now - before),
        (now, _) => now,
    };
    Usage {
        input_tokens: minus(total.input_tokens, previous.input_tokens),
        output_tokens: minus(total.output_tokens, previous.output_tokens),
        cache_read_tokens: minus(total.cache_read_tokens, previous.cache_read_tokens),
        cache_write_tokens: minus(total.cache_write_tokens, previous.cache_write_tokens),
        total_tokens: minus(total.total_tokens, previous.total_tokens),
        reasoning_tokens: minus(total.reasoning_tokens, previous.reasoning_tokens),
        cost_usd: total.cost_usd,
        model: total.model.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(tokens: u64) -> Usage {
        Usage {
            input_tokens: Some(tokens),
            output_tokens: Some(7 * tokens / 12),
            ..Usage::default()
        }
    }

    #[test]
    fn a_threads_running_totals_become_each_turns_own_figures() {
        // protocols/codex f_*: a thread resumed twice reports 12, 24, 36 input tokens.
        let totals = ThreadTotals::default();
        let turns: Vec<Option<u64>> = [12, 24, 36]
            .into_iter()
            .map(|total| totals.turn_usage("t1", input(total)).input_tokens)
            .collect();
        assert_eq!(turns, [Some(12), Some(12), Some(12)]);
        // Another thread has its own total.
        assert_eq!(totals.turn_usage("t2", input(24)).input_tokens, Some(24));
        // A total that went down was counted afresh.
        assert_eq!(totals.turn_usage("t1", input(12)).input_tokens, Some(12));
    }
}
