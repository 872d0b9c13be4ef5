//! Codex reports a thread's running token total in `turn.completed`, not the turn's own
//! figures: a resumed thread of three 12-token turns reports 12, 24, 36 (protocols/codex). The
//! shared stream carries the turn's own figures, so each thread's last total is kept (for the
//! life of the backend, across attempts and turns) and the turn gets the difference.
//!
//! A thread first seen resumed (continued from an earlier launch of agentty) gets its earlier
//! total from Codex's own record of the thread, the rollout file
//! `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`, whose last `token_count`
//! event holds `info.total_token_usage` (seen with codex-cli 0.171: 12, 24, 36 over three
//! turns). Without that file the first turn's figures are the thread's total so far.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use crate::stream::Usage;

/// The last cumulative usage per Codex thread id, shared by the backend's mappers.
#[derive(Debug, Clone, Default)]
pub(crate) struct ThreadTotals(Arc<Mutex<HashMap<String, Usage>>>);

impl ThreadTotals {
    /// The turn's own usage from the thread's new running `total`; remembers `total`.
    pub(crate) fn turn_usage(&self, thread_id: &str, total: Usage) -> Usage {
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

    /// Before resuming `thread_id`, takes its running total from Codex's rollout file under
    /// `codex_home`, unless this backend already knows it.
    pub(crate) fn seed_from_rollout(&self, codex_home: &Path, thread_id: &str) {
        let Ok(mut totals) = self.0.lock() else {
            return;
        };
        if totals.contains_key(thread_id) {
            return;
        }
        if let Some(total) = rollout_file(codex_home, thread_id)
            .and_then(|path| fs::read_to_string(path).ok())
            .and_then(|text| last_total(&text))
        {
            totals.insert(thread_id.to_owned(), total);
        }
    }
}

/// The rollout file of `thread_id` (its name ends with the id).
fn rollout_file(codex_home: &Path, thread_id: &str) -> Option<PathBuf> {
    // Thread ids are UUIDs: anything else must not become part of a path search.
    if thread_id.is_empty() || !thread_id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return None;
    }
    let suffix = format!("-{thread_id}.jsonl");
    find_file(&codex_home.join("sessions"), &suffix, 4)
}

fn find_file(dir: &Path, suffix: &str, depth: usize) -> Option<PathBuf> {
    let entries = fs::read_dir(dir).ok()?;
    let mut subdirs = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
        if is_dir {
            subdirs.push(path);
        } else if entry.file_name().to_string_lossy().ends_with(suffix) {
            return Some(path);
        }
    }
    if depth == 0 {
        return None;
    }
    // Newest dates first: a resumed thread is usually recent.
    subdirs.sort_unstable_by(|a, b| b.cmp(a));
    subdirs
        .iter()
        .find_map(|subdir| find_file(subdir, suffix, depth - 1))
}

/// The last `total_token_usage` of a rollout file.
fn last_total(rollout: &str) -> Option<Usage> {
    #[derive(Deserialize)]
    struct Line {
        payload: Option<Payload>,
    }
    #[derive(Deserialize)]
    struct Payload {
        info: Option<Info>,
    }
    #[derive(Deserialize)]
    struct Info {
        total_token_usage: Option<Counts>,
    }
    #[derive(Deserialize)]
    struct Counts {
        input_tokens: Option<u64>,
        cached_input_tokens: Option<u64>,
        cache_write_input_tokens: Option<u64>,
        output_tokens: Option<u64>,
        reasoning_output_tokens: Option<u64>,
    }
    let counts = rollout
        .lines()
        .rev()
        .filter(|line| line.contains("\"token_count\""))
        .find_map(|line| {
            serde_json::from_str::<Line>(line)
                .ok()?
                .payload?
                .info?
                .total_token_usage
        })?;
    // The same figures, named as the mapper names them for `turn.completed`.
    Some(Usage {
        input_tokens: counts.input_tokens,
        output_tokens: counts.output_tokens,
        cache_read_tokens: counts.cached_input_tokens,
        cache_write_tokens: counts.cache_write_input_tokens,
        total_tokens: counts
            .input_tokens
            .zip(counts.output_tokens)
            .map(|(input, output)| input.saturating_add(output)),
        reasoning_tokens: counts.reasoning_output_tokens,
        ..Usage::default()
    })
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
    fn a_thread_resumed_from_an_earlier_launch_starts_from_its_rollout_total() {
        let home = tempfile::tempdir().unwrap();
        let thread = "01a22b72-93aa-7672-89da-b23dea68f38f";
        let day = home.path().join("sessions/2026/11/30");
        fs::create_dir_all(&day).unwrap();
        // Two turns recorded by codex-cli (lines shortened to the fields read).
        let token_count = |input: u64, output: u64| {
            format!(
                r#"{{"timestamp":"2026-11-30T07:54:20.080Z","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{input},"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":{output},"reasoning_output_tokens":3,"total_tokens":19}},"last_token_usage":{{"input_tokens":12}}}}}}}}"#
            )
        };
        fs::write(
            day.join(format!("rollout-2026-11-30T07-54-18-{thread}.jsonl")),
            [
                r#"{"type":"session_meta","payload":{}}"#.to_owned(),
                token_count(12, 7),
                r#"{"type":"response_item","payload":{"type":"message"}}"#.to_owned(),
                token_count(24, 14),
            ]
            .join("\n"),
        )
        .unwrap();
        let totals = ThreadTotals::default();
        totals.seed_from_rollout(home.path(), thread);
        // The third turn: Codex reports 36 in total, the turn's own share is 12.
        let third = totals.turn_usage(thread, input(36));
        assert_eq!(third.input_tokens, Some(12));
        // An unknown thread, or a name that is not an id, finds nothing.
        totals.seed_from_rollout(home.path(), "0000-unknown");
        totals.seed_from_rollout(home.path(), "../../etc");
        assert_eq!(
            totals.turn_usage("0000-unknown", input(24)).input_tokens,
            Some(24)
        );
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
