//! Gemini CLI's unmarked mid-stream retries, turned back into text shown once.
//!
//! When a response stream drops, Gemini CLI asks again (up to 4 times) and prints the new
//! attempt's deltas as if nothing had happened: the reply so far appears again from its start,
//! with no event in between (`d_drop_midstream`: "Partial answer before drop" four times). The
//! only sign of a retry is the text itself, so this guard watches for it.
//!
//! A delta that repeats the start of the current response is held back as a possible replay
//! (the current pass), and every following delta is added to that pass, which is compared as a
//! snapshot with what was shown ([`SnapshotReconciler`]). A pass counts as a retry once it has
//! repeated at least [`MIN_REPLAY_DELTAS`] deltas of the shown text (as sent, or as shown: a
//! retry may chunk the same text differently):
//! - it catches up with the shown text: a replay; nothing is shown again, a `warning` notice
//!   says the CLI retried, and text beyond the shown part is shown as new;
//! - it contradicts the shown text: the retry wrote a different answer; an `agent_retry`
//!   notice supersedes the partial text and the new pass is shown afresh;
//! - it is cut short by another restart or by the end of the response: a replay the CLI gave
//!   up on; nothing is shown again.
//!
//! A pass that repeated less than that was ordinary text that happened to repeat the
//! response's first words; it is shown late but unchanged. (So a retry of a response that was
//! one delta long is not recognised, and is shown twice: the text alone cannot tell it apart.)
//!
//! Invariant: the text is never changed without a notice saying so; the `assistant` deltas
//! since the last `agent_retry` notice are the current response with each replay shown once.
//! A response ends at a tool call, a tool result and the end of the run, because a retry only
//! ever repeats the response being streamed.

use crate::provider::reconcile::{SnapshotDelta, SnapshotReconciler};
use crate::stream::{AgentMessage, NoticeKind};

/// How many deltas a pass must repeat before it is taken for a retry rather than for ordinary
/// text that repeats the response's first words.
pub(crate) const MIN_REPLAY_DELTAS: usize = 2;

#[derive(Debug, Default)]
pub(crate) struct ReplayGuard {
    /// The current response's text as shown.
    shown: SnapshotReconciler,
    /// Where each delta shown in the current response ends (byte offsets into it), so that a
    /// retry re-chunked into fewer, longer deltas is still weighed by what it repeats.
    delta_ends: Vec<usize>,
    /// A suspected replay: the current pass, not shown yet.
    held: Option<HeldPass>,
    /// Retries detected in this run, for the notices.
    retries: usize,
}

#[derive(Debug)]
struct HeldPass {
    text: String,
    /// Deltas in `text` that each matched the shown text.
    matching_deltas: usize,
}

impl ReplayGuard {
    /// One assistant delta, as the CLI printed it.
    pub(crate) fn push(&mut self, delta: &str, out: &mut Vec<AgentMessage>) {
        if delta.is_empty() {
            return;
        }
        let Some(mut pass) = self.held.take() else {
            self.push_fresh(delta, out);
            return;
        };
        let shown_len = self.shown.shown().len();
        let held_len = pass.text.len();
        pass.text.push_str(delta);
        match self.shown.observe(&pass.text) {
            SnapshotDelta::Unchanged => {
                pass.matching_deltas += 1;
                let caught_up = pass.text.len() == shown_len;
                if caught_up && self.is_replay(&pass, shown_len) {
                    self.confirm_replay(out);
                } else {
                    self.held = Some(pass);
                }
            }
            SnapshotDelta::Append(beyond) => {
                // The pass repeated everything shown and goes on; `observe` took it as shown.
                let beyond = beyond.to_owned();
                pass.matching_deltas += usize::from(held_len < shown_len);
                if self.is_replay(&pass, shown_len) {
                    self.confirm_replay(out);
                    self.delta_ends.push(self.shown.shown().len());
                    out.push(AgentMessage::Assistant { delta: beyond });
                } else {
                    let mut shown = pass.text[..shown_len].to_owned();
                    shown.push_str(&pass.text);
                    self.shown.replace(&shown);
                    self.delta_ends.push(shown.len());
                    out.push(AgentMessage::Assistant { delta: pass.text });
                }
            }
            SnapshotDelta::Diverged { .. } => {
                pass.text.truncate(held_len);
                if self.shown.shown().starts_with(delta) {
                    // Another restart: the held pass was a replay cut short by another drop,
                    // or ordinary text.
                    self.settle(pass, out);
                    self.push_fresh(delta, out);
                } else if self.is_replay(&pass, held_len) {
                    pass.text.push_str(delta);
                    self.retries += 1;
                    out.push(AgentMessage::notice(
                        NoticeKind::AgentRetry,
                        format!(
                            "Gemini CLI lost the response stream and retried (retry {}); \
                             the new answer differs and replaces the partial one",
                            self.retries
                        ),
                    ));
                    self.shown.replace(&pass.text);
                    self.delta_ends = vec![pass.text.len()];
                    out.push(AgentMessage::Assistant { delta: pass.text });
                } else {
                    pass.text.push_str(delta);
                    self.show(pass.text, out);
                }
            }
        }
    }

    /// The current response ended (tool call, tool result, end of run): a pass still held is
    /// settled, and the next text starts a new response.
    pub(crate) fn end_response(&mut self, out: &mut Vec<AgentMessage>) {
        if let Some(pass) = self.held.take() {
            self.settle(pass, out);
        }
        self.shown.reset();
        self.delta_ends.clear();
    }

    /// A pass counts as a retry once it repeated [`MIN_REPLAY_DELTAS`] deltas, counted as
    /// it arrived or as the shown deltas its first `repeated_len` bytes cover.
    fn is_replay(&self, pass: &HeldPass, repeated_len: usize) -> bool {
        let covered = self
            .delta_ends
            .iter()
            .take_while(|end| **end <= repeated_len)
            .count();
        pass.matching_deltas.max(covered) >= MIN_REPLAY_DELTAS
    }

    /// A held pass that will not grow: a replay cut short if it repeated enough, else text.
    fn settle(&mut self, pass: HeldPass, out: &mut Vec<AgentMessage>) {
        if self.is_replay(&pass, pass.text.len()) {
            self.confirm_replay(out);
        } else {
            self.show(pass.text, out);
        }
    }

    /// A delta with no pass held: held if it repeats the response's start, a replay at once if
    /// it repeats the whole response in one piece and goes on, else shown.
    fn push_fresh(&mut self, delta: &str, out: &mut Vec<AgentMessage>) {
        let shown = self.shown.shown();
        if !shown.is_empty() && shown.starts_with(delta) {
            self.held = Some(HeldPass {
                text: delta.to_owned(),
                matching_deltas: 1,
            });
            return;
        }
        let whole_response = HeldPass {
            text: String::new(),
            matching_deltas: 1,
        };
        let shown_len = shown.len();
        if shown_len > 0 && delta.starts_with(shown) && self.is_replay(&whole_response, shown_len) {
            self.confirm_replay(out);
            self.show(delta[shown_len..].to_owned(), out);
        } else {
            self.show(delta.to_owned(), out);
        }
    }

    fn show(&mut self, text: String, out: &mut Vec<AgentMessage>) {
        if !text.is_empty() {
            self.shown.push_delta(&text);
            self.delta_ends.push(self.shown.shown().len());
            out.push(AgentMessage::Assistant { delta: text });
        }
    }

    fn confirm_replay(&mut self, out: &mut Vec<AgentMessage>) {
        self.retries += 1;
        out.push(AgentMessage::notice(
            NoticeKind::Warning,
            format!(
                "Gemini CLI lost the response stream and retried (retry {}); \
                 the text it sent again is shown once",
                self.retries
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Feeds deltas (an empty string ends the response) and returns (text shown, notice kinds).
    fn run(deltas: &[&str]) -> (String, Vec<String>) {
        let mut guard = ReplayGuard::default();
        let mut out = Vec::new();
        for delta in deltas {
            if delta.is_empty() {
                guard.end_response(&mut out);
            } else {
                guard.push(delta, &mut out);
            }
        }
        guard.end_response(&mut out);
        let mut text = String::new();
        let mut notices = Vec::new();
        for message in out {
            match message {
                AgentMessage::Assistant { delta } => text.push_str(&delta),
                AgentMessage::Notice { kind, .. } => notices.push(kind.into()),
                other => panic!("unexpected {other:?}"),
            }
        }
        (text, notices)
    }

    const PASS: [&str; 4] = ["Partial", " answer", " before", " drop"];

    #[test]
    fn identical_replays_are_shown_once_with_a_notice_each() {
        let deltas: Vec<&str> = PASS.iter().cycle().take(16).copied().collect();
        let (text, notices) = run(&deltas);
        assert_eq!(text, "Partial answer before drop");
        assert_eq!(notices, ["warning", "warning", "warning"]);
    }

    #[test]
    fn a_replay_chunked_differently_is_still_shown_once() {
        let first = ["Partial", " answer", " before", " drop"];
        for retry in [
            &["Partial answer before drop", " and more"][..],
            &["Partial answer before drop and more"],
            &["Partial ans", "wer before drop", " and more"],
            &["Partial answer", " before drop and more"],
        ] {
            let deltas: Vec<&str> = first.iter().chain(retry).copied().collect();
            let (text, notices) = run(&deltas);
            assert_eq!(text, "Partial answer before drop and more", "{retry:?}");
            assert_eq!(notices, ["warning"], "{retry:?}");
        }
    }

    #[test]
    fn a_replay_that_goes_on_shows_only_the_new_part() {
        let (text, notices) = run(&["Partial", " answer", "Partial", " answer", " and", " more"]);
        assert_eq!(text, "Partial answer and more");
        assert_eq!(notices, ["warning"]);
    }

    #[test]
    fn a_replay_cut_short_by_another_drop_is_not_shown() {
        let (text, notices) = run(&[
            "Partial", " answer", " before", // first pass
            "Partial", " answer", // second pass, dropped early
            "Partial", " answer", " before", " end", // third pass completes
        ]);
        assert_eq!(text, "Partial answer before end");
        assert_eq!(notices, ["warning", "warning"]);
    }

    #[test]
    fn a_retry_with_a_different_answer_supersedes_the_partial_text() {
        let (text, notices) = run(&[
            "Partial",
            " answer",
            " before",
            " drop", // first pass
            "Partial",
            " answer",
            ", rewritten", // the retry answers differently
            " and",
            " finished",
        ]);
        // After the notice the partial text is superseded: the new answer is shown afresh.
        assert_eq!(
            text,
            "Partial answer before dropPartial answer, rewritten and finished"
        );
        assert_eq!(notices, ["agent_retry"]);
        // A retry that repeats everything shown before it goes on is a replay, not a new answer.
        let (text, notices) = run(&["Partial", " answer", "Partial", " answer", ", then more"]);
        assert_eq!(text, "Partial answer, then more");
        assert_eq!(notices, ["warning"]);
    }

    #[test]
    fn ordinary_text_that_repeats_the_first_words_is_shown_unchanged() {
        let (text, notices) = run(&["- ", "one\n", "- ", "two\n", "- ", "three"]);
        assert_eq!(text, "- one\n- two\n- three");
        assert!(notices.is_empty());
        // Held at the end of the response: still shown.
        let (text, notices) = run(&["Hi", " there. ", "Hi"]);
        assert_eq!(text, "Hi there. Hi");
        assert!(notices.is_empty());
        // A one-delta response repeated: too little to tell a retry from text, so kept.
        let (text, notices) = run(&["\n", "\n", "Hello"]);
        assert_eq!(text, "\n\nHello");
        assert!(notices.is_empty());
        let (text, notices) = run(&["\n", "\n"]);
        assert_eq!(text, "\n\n");
        assert!(notices.is_empty());
    }

    #[test]
    fn a_new_response_after_a_tool_may_repeat_the_previous_one() {
        let (text, notices) = run(&["I'll run it.", "", "I'll run it.", " Done."]);
        assert_eq!(text, "I'll run it.I'll run it. Done.");
        assert!(notices.is_empty());
    }

    proptest! {
        /// The text is never changed silently: without a notice it is exactly what was sent.
        #[test]
        fn text_is_never_changed_without_a_notice(deltas in proptest::collection::vec("[ab ]{1,3}", 0..40)) {
            let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
            let (text, notices) = run(&refs);
            if notices.is_empty() {
                prop_assert_eq!(text, deltas.concat());
            }
        }

        /// Text whose deltas never repeat the response's start is shown exactly, with no notice.
        #[test]
        fn text_that_never_restarts_is_shown_exactly(words in proptest::collection::vec("[a-z ]{0,4}", 0..30)) {
            let deltas: Vec<String> = words.iter().enumerate().map(|(i, w)| format!("{i}:{w}")).collect();
            let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
            let (text, notices) = run(&refs);
            prop_assert!(notices.is_empty());
            prop_assert_eq!(text, deltas.concat());
        }

        /// A pass replayed any number of times, each cut anywhere, shows the longest pass once.
        #[test]
        fn replays_cut_anywhere_show_the_text_once(
            cuts in proptest::collection::vec(2usize..=6, 1..5),
        ) {
            let words = ["Alpha", " beta", " gamma", " delta", " epsilon", " zeta"];
            let mut deltas: Vec<&str> = Vec::new();
            for cut in &cuts {
                deltas.extend(&words[..*cut]);
            }
            let (text, _) = run(&deltas);
            let longest = cuts.iter().copied().max().unwrap_or(0);
            prop_assert_eq!(text, words[..longest].concat());
        }
    }
}
