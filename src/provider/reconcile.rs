//! Cumulative snapshots -> true deltas, by prefix comparison.
//!
//! Several agents send (or re-send) the whole text so far instead of, or as well as, the new
//! part: older pi sends snapshots only and replays earlier text after a tool turn; Gemini CLI
//! re-streams a reply from its start after an internal retry. The reconciler remembers what was
//! already shown and turns each snapshot into exactly the text that is new, so nothing is shown
//! twice. When a snapshot disagrees with what was shown, it says so and the mapper decides
//! (usually: a `superseded` notice, then the new text).

use xxhash_rust::xxh3::{xxh3_128, Xxh3};

/// The outcome of comparing one snapshot with the text already shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SnapshotDelta<'a> {
    /// The snapshot extends what was shown by this suffix.
    Append(&'a str),
    /// Nothing new: the snapshot equals, or is a prefix of, what was shown (a replay catching up).
    Unchanged,
    /// The snapshot contradicts what was shown.
    Diverged,
}

#[derive(Debug, Default, Clone)]
pub(crate) struct SnapshotReconciler {
    shown: String,
}

impl SnapshotReconciler {
    pub(crate) fn new() -> Self {
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
        SnapshotDelta::Diverged
    }

    /// Appends an incremental delta to the shown text (for agents that send deltas).
    pub(crate) fn push_delta(&mut self, delta: &str) {
        self.shown.push_str(delta);
    }

    /// Takes `snapshot` as the new shown text (after a divergence was reported to the user).
    pub(crate) fn replace(&mut self, snapshot: &str) {
        self.shown.clear();
        self.shown.push_str(snapshot);
    }

    pub(crate) fn reset(&mut self) {
        self.shown.clear();
    }

    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }
}

/// What a stream of deltas has shown, kept as its length and a 128-bit hash instead of the
/// text itself: for a block whose deltas are the truth and whose snapshots only check them (pi's
/// delta protocol). The runner already keeps the attempt's text (a failure's `text`); a second
/// copy here would add half of a long reply's longest line to the memory it costs.
///
/// What it cannot do that [`SnapshotReconciler`] does: tell whether a snapshot *shorter* than
/// what was shown is a prefix of it. Such a snapshot is reported as
/// [`SnapshotDelta::Unchanged`], and a caller that trusts it ([`Self::len`] tells) decides by
/// length. Two different texts of the same length have the same hash with a chance of 2^-128.
#[derive(Clone, Default)]
pub(crate) struct ShownDigest {
    len: usize,
    /// Boxed: the hasher's state is 640 bytes, the text it stands for is often shorter.
    hasher: Box<Xxh3>,
}

impl ShownDigest {
    pub(crate) fn push_delta(&mut self, delta: &str) {
        self.len += delta.len();
        self.hasher.update(delta.as_bytes());
    }

    /// As [`SnapshotReconciler::observe`], except that a shorter snapshot is `Unchanged`.
    pub(crate) fn observe<'a>(&mut self, snapshot: &'a str) -> SnapshotDelta<'a> {
        let Some((seen, suffix)) = snapshot.split_at_checked(self.len) else {
            return if snapshot.len() < self.len {
                SnapshotDelta::Unchanged
            } else {
                SnapshotDelta::Diverged
            };
        };
        if xxh3_128(seen.as_bytes()) != self.hasher.digest128() {
            return SnapshotDelta::Diverged;
        }
        if suffix.is_empty() {
            return SnapshotDelta::Unchanged;
        }
        self.push_delta(suffix);
        SnapshotDelta::Append(suffix)
    }

    pub(crate) fn replace(&mut self, snapshot: &str) {
        *self = Self::default();
        self.push_delta(snapshot);
    }

    /// The length in bytes of the text shown.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl std::fmt::Debug for ShownDigest {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ShownDigest")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
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
    fn a_contradiction_is_reported_and_replace_takes_the_snapshot() {
        let mut reconciler = SnapshotReconciler::new();
        reconciler.observe("héllo");
        assert_eq!(reconciler.observe("hélp"), SnapshotDelta::Diverged);
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

    #[test]
    fn a_digest_finds_what_extends_equals_or_contradicts_the_streamed_text() {
        let mut digest = ShownDigest::default();
        digest.push_delta("héllo");
        digest.push_delta(" wor");
        assert_eq!(digest.len(), "héllo wor".len());
        assert_eq!(digest.observe("héllo wor"), SnapshotDelta::Unchanged);
        assert_eq!(digest.observe("héllo world"), SnapshotDelta::Append("ld"));
        assert_eq!(digest.len(), "héllo world".len());
        // Same length, other text; a cut inside a character; a longer text that does not
        // start with what was shown.
        assert_eq!(digest.observe("hello world!"), SnapshotDelta::Diverged);
        assert_eq!(digest.observe("héllo worl€"), SnapshotDelta::Diverged);
        assert_eq!(
            digest.observe("Héllo world, again"),
            SnapshotDelta::Diverged
        );
        // Shorter: taken as a replay catching up (the caller decides by length).
        assert_eq!(digest.observe("hé"), SnapshotDelta::Unchanged);
        digest.replace("new");
        assert_eq!(digest.observe("new text"), SnapshotDelta::Append(" text"));
    }

    proptest! {
        /// On every snapshot at least as long as what was shown, the digest and the text agree.
        #[test]
        fn a_digest_answers_as_the_kept_text_does(
            (text, cuts) in snapshot_sequence(),
            other in "[a-zé€ ]{0,60}",
        ) {
            let boundaries: Vec<usize> = (0..=text.len()).filter(|i| text.is_char_boundary(*i)).collect();
            let mut kept = SnapshotReconciler::new();
            let mut digest = ShownDigest::default();
            let snapshots = cuts.iter().map(|cut| &text[..boundaries[(*cut).min(boundaries.len() - 1)]]);
            for snapshot in snapshots.chain([other.as_str(), text.as_str()]) {
                let shorter = snapshot.len() < kept.shown().len();
                let (expected, got) = (kept.observe(snapshot), digest.observe(snapshot));
                if shorter {
                    prop_assert_eq!(got, SnapshotDelta::Unchanged);
                    continue;
                }
                if expected == SnapshotDelta::Diverged {
                    kept.replace(snapshot);
                    digest.replace(snapshot);
                }
                prop_assert_eq!(expected, got);
                prop_assert_eq!(kept.shown().len(), digest.len());
            }
        }

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
