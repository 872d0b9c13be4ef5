//! Cumulative snapshots -> true deltas, by prefix comparison.
//!
//! Several agents send (or re-send) the whole text so far instead of, or as well as, the new
//! part: older pi sends snapshots only and replays earlier text after a tool turn; Gemini CLI
//! re-streams a reply from its start after an internal retry. The reconciler remembers what was
//! already shown and turns each snapshot into exactly the text that is new, so nothing is shown
//! twice. When a snapshot disagrees with what was shown, it says so and the mapper decides
//! (usually: a `superseded` notice, then the new text).

/// The outcome of comparing one snapshot with the text already shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SnapshotDelta<'a> {
    /// The snapshot extends what was shown by this suffix.
    Append(&'a str),
    /// Nothing new: the snapshot equals, or is a prefix of, what was shown (a replay catching up).
    Unchanged,
    /// The snapshot contradicts what was shown after `common_prefix` bytes.
    Diverged { common_prefix: usize },
}

#[derive(Debug, Default, Clone)]
pub(crate) struct SnapshotReconciler {
    shown: String,
}

impl SnapshotReconciler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Compares `snapshot` with the text shown so far. On `Append`, the shown text becomes the
    /// snapshot; on `Diverged` nothing changes until the caller calls [`Self::replace`].
    pub(crate) fn observe<'a>(&mut self, snapshot: &'a str) -> SnapshotDelta<'a> {
        if let Some(suffix) = snapshot.strip_prefix(self.shown.as_str()) {
            if suffix.is_empty() {
                return SnapshotDelta::Unchanged;
            }
            self.shown.push_str(suffix);
            return SnapshotDelta::Append(suffix);
        }
        if self.shown.starts_with(snapshot) {
            return SnapshotDelta::Unchanged;
        }
        SnapshotDelta::Diverged {
            common_prefix: common_prefix_len(&self.shown, snapshot),
        }
    }

    /// Appends an incremental delta to the shown text (for agents that send deltas).
    pub(crate) fn push_delta(&mut self, delta: &str) {
        self.shown.push_str(delta);
    }

    /// Takes `snapshot` as the new shown text (after a divergence was reported to the user).
    pub fn replace(&mut self, snapshot: &str) {
        self.shown.clear();
        self.shown.push_str(snapshot);
    }

    pub fn reset(&mut self) {
        self.shown.clear();
    }

    pub fn shown(&self) -> &str {
        &self.shown
    }
}

/// Length in bytes of the longest common prefix, on a char boundary.
fn common_prefix_len(a: &str, b: &str) -> usize {
    let mut len = 0;
    for ((index, ca), cb) in a.char_indices().zip(b.chars()) {
        if ca != cb {
            return index;
        }
        len = index + ca.len_utf8();
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn extension_yields_only_the_new_suffix() {
        let mut reconciler = SnapshotReconciler::new();
        assert_eq!(reconciler.observe("Hel"), SnapshotDelta::Append("Hel"));
        assert_eq!(reconciler.observe("Hello"), SnapshotDelta::Append("lo"));
        assert_eq!(reconciler.observe("Hello"), SnapshotDelta::Unchanged);
    }

    #[test]
    fn replay_after_a_tool_turn_is_not_shown_again() {
        let mut reconciler = SnapshotReconciler::new();
        reconciler.observe("Before the tool.");
        // The agent replays its earlier text from the start, then continues.
        assert_eq!(reconciler.observe("Before"), SnapshotDelta::Unchanged);
        assert_eq!(
            reconciler.observe("Before the tool."),
            SnapshotDelta::Unchanged
        );
        assert_eq!(
            reconciler.observe("Before the tool. After."),
            SnapshotDelta::Append(" After.")
        );
    }

    #[test]
    fn contradiction_is_reported_on_a_char_boundary() {
        let mut reconciler = SnapshotReconciler::new();
        reconciler.observe("héllo");
        assert_eq!(
            reconciler.observe("hélp"),
            SnapshotDelta::Diverged { common_prefix: 4 }
        );
        reconciler.replace("hélp");
        assert_eq!(reconciler.shown(), "hélp");
    }

    /// Snapshot sequences as agents send them: each one a prefix of the final text, growing or
    /// replaying from an earlier point.
    fn snapshot_sequence() -> impl Strategy<Value = (String, Vec<usize>)> {
        (
            "[a-zé€ ]{0,60}",
            proptest::collection::vec(0usize..=60, 0..30),
        )
    }

    proptest! {
        #[test]
        fn deltas_concatenate_to_the_longest_snapshot((text, cuts) in snapshot_sequence()) {
            let boundaries: Vec<usize> = (0..=text.len()).filter(|i| text.is_char_boundary(*i)).collect();
            let mut reconciler = SnapshotReconciler::new();
            let mut concatenated = String::new();
            let mut longest = 0;
            for cut in cuts.iter().chain(std::iter::once(&usize::MAX)) {
                let end = boundaries[(*cut).min(boundaries.len() - 1)];
                longest = longest.max(end);
                match reconciler.observe(&text[..end]) {
                    SnapshotDelta::Append(delta) => concatenated.push_str(delta),
                    SnapshotDelta::Unchanged => {}
                    SnapshotDelta::Diverged { .. } => prop_assert!(false, "prefixes never diverge"),
                }
            }
            prop_assert_eq!(&concatenated, &text[..longest]);
            prop_assert_eq!(reconciler.shown(), concatenated.as_str());
        }
    }
}
