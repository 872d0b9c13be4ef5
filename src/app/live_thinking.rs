//! The live thinking pane: `assistant.thinking` deltas stream into a thought cell as they come,
//! so thinking is visible while it happens; the complete `assistant.thought` released later
//! (the mapper's rule: after the message ends) replaces the streamed text and ends the pane.
//!
//! Panes wait for their complete thoughts in order: the first released thought completes the
//! oldest pane. Thinking that resumes after other content (text, a tool call) opens a new pane,
//! below that content, where it was thought.

use std::collections::VecDeque;

use super::transcript::{CellBody, CellId, InertText, ThoughtCell, Transcript};
use crate::stream::AgentMessage;
use crate::stream::NoticeKind;

#[derive(Debug, Default)]
pub(crate) struct LiveThinking {
    /// Panes that streamed thinking and wait for their complete thought, oldest first.
    panes: VecDeque<CellId>,
    /// The newest pane takes the next delta (no other content came since its last delta).
    open: bool,
}

impl LiveThinking {
    /// Whether the next delta goes to an open pane (else it starts a new one).
    pub(crate) fn is_open(&self) -> bool {
        self.open && !self.panes.is_empty()
    }

    /// Whether a pane waits for its complete thought.
    pub(crate) fn is_waiting(&self) -> bool {
        !self.panes.is_empty()
    }

    /// Any other content ends the open pane's run: later thinking opens a new pane. After the
    /// agent's own retry, the earlier try's panes will get no thought: they are settled.
    pub(crate) fn observe(&mut self, transcript: &mut Transcript, message: &AgentMessage) {
        match message {
            AgentMessage::Assistant { .. } | AgentMessage::ToolCall { .. } => self.open = false,
            AgentMessage::Notice { kind, .. } if *kind == NoticeKind::AgentRetry => {
                self.settle(transcript);
            }
            _ => {}
        }
    }

    /// Appends a (sanitised) delta to the open pane, or starts a pane with it.
    pub(crate) fn push_delta(&mut self, transcript: &mut Transcript, delta: &str, expanded: bool) {
        if delta.is_empty() {
            return;
        }
        if let (true, Some(&pane)) = (self.open, self.panes.back()) {
            transcript.update(pane, |body| {
                if let CellBody::Thought(thought) = body {
                    append_thinking(thought, delta);
                }
            });
            return;
        }
        let mut thought = ThoughtCell::new(InertText::default(), expanded);
        thought.live = true;
        append_thinking(&mut thought, delta);
        self.panes
            .push_back(transcript.push(CellBody::Thought(thought)));
        self.open = true;
    }

    /// Completes the oldest waiting pane with the whole thought; false when no pane waits (the
    /// agent streamed no thinking for it), so the caller shows the thought as a new cell.
    pub(crate) fn complete(&mut self, transcript: &mut Transcript, text: InertText) -> bool {
        // The thought is whole: thinking that follows belongs to a new block.
        let Some(pane) = self.panes.pop_front() else {
            return false;
        };
        if self.panes.is_empty() {
            self.open = false;
        }
        transcript
            .update(pane, |body| {
                if let CellBody::Thought(thought) = body {
                    let expanded = thought.expanded;
                    *thought = ThoughtCell::new(text, expanded);
                }
            })
            .is_some()
    }

    /// The turn or attempt is over: panes that never got their complete thought keep what
    /// streamed, and stop being live.
    pub(crate) fn settle(&mut self, transcript: &mut Transcript) {
        self.open = false;
        for pane in self.panes.drain(..) {
            transcript.update(pane, |body| {
                if let CellBody::Thought(thought) = body {
                    thought.live = false;
                }
            });
        }
    }
}

/// Appends `delta`, counting words incrementally (a long thought is not re-counted per delta):
/// a word split across two deltas counts once.
fn append_thinking(thought: &mut ThoughtCell, delta: &str) {
    let ends_in_word = thought
        .text
        .chars()
        .next_back()
        .is_some_and(|c| !c.is_whitespace());
    let starts_in_word = delta.chars().next().is_some_and(|c| !c.is_whitespace());
    let mut added = delta.split_whitespace().count();
    if ends_in_word && starts_in_word {
        added = added.saturating_sub(1);
    }
    thought.words += added;
    // Past the limit the words are still counted, the text no longer kept.
    let room = super::transcript::MAX_CELL_TEXT.saturating_sub(thought.text.len());
    let mut end = room.min(delta.len());
    while !delta.is_char_boundary(end) {
        end -= 1;
    }
    thought.text.push_str(&delta[..end]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thought(transcript: &Transcript, id: CellId) -> ThoughtCell {
        match &transcript.get(id).unwrap().body {
            CellBody::Thought(thought) => thought.clone(),
            other => panic!("not a thought: {other:?}"),
        }
    }

    #[test]
    fn deltas_stream_into_one_pane_that_the_whole_thought_completes() {
        let mut transcript = Transcript::default();
        let mut live = LiveThinking::default();
        for delta in ["Let me th", "ink about ", "this.\nSecond", " line"] {
            live.push_delta(&mut transcript, delta, false);
        }
        assert_eq!(transcript.cells().len(), 1);
        let id = transcript.cells()[0].id;
        let streaming = thought(&transcript, id);
        assert!(streaming.live);
        assert_eq!(streaming.words, 7, "{streaming:?}");
        assert_eq!(streaming.words, streaming.text.split_whitespace().count());
        assert!(live.complete(
            &mut transcript,
            "Let me think about this.\nSecond line.".into()
        ));
        let done = thought(&transcript, id);
        assert!(!done.live);
        assert_eq!(done.text, "Let me think about this.\nSecond line.");
        assert!(!live.complete(&mut transcript, "another".into()));
    }

    #[test]
    fn thinking_after_text_opens_a_new_pane_and_settling_ends_both() {
        let mut transcript = Transcript::default();
        let mut live = LiveThinking::default();
        live.push_delta(&mut transcript, "first", false);
        live.observe(
            &mut transcript,
            &AgentMessage::Assistant { delta: "x".into() },
        );
        live.push_delta(&mut transcript, "second", false);
        assert_eq!(transcript.cells().len(), 2);
        live.settle(&mut transcript);
        for cell in transcript.cells() {
            assert!(matches!(&cell.body, CellBody::Thought(thought) if !thought.live));
        }
        assert!(!live.is_open());
    }
}
