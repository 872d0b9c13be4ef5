//! Text is shown once: the streamed text of a block stays pending until the complete
//! `assistant` line that repeats it arrives; equal text shows nothing more, a longer one only
//! the missing suffix, a contradicting one is superseded by it (see the mapper's doc).

use super::ClaudeMapper;
use crate::provider::reconcile::{SnapshotDelta, SnapshotReconciler};
use crate::stream::{AgentMessage, NoticeKind};

#[derive(Debug, Default)]
pub(super) struct PendingText {
    pub(super) message_id: Option<String>,
    pub(super) shown: SnapshotReconciler,
}

impl ClaudeMapper {
    /// A complete text block: show what the streamed deltas have not shown yet.
    pub(super) fn confirm_text(&mut self, text: &str, out: &mut Vec<AgentMessage>) {
        let mut pending = self.pending_text.take().unwrap_or_default();
        let streamed_len = pending.shown.shown().len();
        match pending.shown.observe(text) {
            SnapshotDelta::Append(missing) => out.push(AgentMessage::Assistant {
                delta: missing.to_owned(),
            }),
            SnapshotDelta::Unchanged if streamed_len == text.len() => {}
            // Shorter than what was streamed, or different: the complete block wins.
            SnapshotDelta::Unchanged | SnapshotDelta::Diverged { .. } => {
                out.push(AgentMessage::notice(
                    NoticeKind::Superseded,
                    "Claude Code's final reply differs from the text streamed so far \
                     (the stream was cut or lines were lost); the final reply follows",
                ));
                if !text.is_empty() {
                    out.push(AgentMessage::Assistant {
                        delta: text.to_owned(),
                    });
                }
            }
        }
    }

    /// The pending text belongs to a message that was given up: nothing will confirm it.
    pub(super) fn abandon_pending_text(&mut self, out: &mut Vec<AgentMessage>) {
        let Some(pending) = self.pending_text.take() else {
            return;
        };
        if !pending.shown.shown().is_empty() {
            out.push(AgentMessage::notice(
                NoticeKind::Superseded,
                "Claude Code gave up the reply it was streaming (the stream was cut); \
                 that text is not part of the answer",
            ));
        }
    }

    pub(super) fn abandon_pending_text_of_other(
        &mut self,
        message_id: Option<&str>,
        out: &mut Vec<AgentMessage>,
    ) {
        let other = self
            .pending_text
            .as_ref()
            .is_some_and(|pending| pending.message_id.as_deref() != message_id);
        if other {
            self.abandon_pending_text(out);
        }
    }
}
