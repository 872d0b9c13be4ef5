//! The agent's streamed answer and thinking in the transcript: text appended to the open
//! answer, thinking shown live then settled, a finished thought placed before the text it
//! belongs to, and an attempt's text marked as replaced.

use super::AppState;
use crate::app::transcript::{AssistantCell, CellBody, InertText, ThoughtCell};

impl AppState {
    pub(super) fn append_assistant(&mut self, delta: &str) {
        let shown = InertText::new(delta);
        if shown.is_empty() {
            return;
        }
        let open = self.turn.as_ref().and_then(|turn| turn.open_assistant);
        match open {
            Some(id) => {
                self.transcript.update(id, |body| {
                    if let CellBody::Assistant(answer) = body {
                        answer.append(delta, &shown);
                    }
                });
            }
            None => {
                let mut answer = AssistantCell::default();
                answer.append(delta, &shown);
                let id = self.transcript.push(CellBody::Assistant(answer));
                if let Some(turn) = self.turn.as_mut() {
                    turn.open_assistant = Some(id);
                    turn.attempt_assistant_cells.push(id);
                }
            }
        }
    }

    pub(super) fn supersede_attempt_text(&mut self) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        turn.open_assistant = None;
        for id in std::mem::take(&mut turn.attempt_assistant_cells) {
            self.transcript.update(id, |body| {
                if let CellBody::Assistant(answer) = body {
                    answer.superseded = true;
                }
            });
        }
    }

    /// A piece of live thinking: a block of its own, after the text so far.
    pub(super) fn on_thinking(&mut self, delta: &str) {
        if !self.live_thinking.is_open() {
            self.close_assistant();
        }
        self.live_thinking.push_delta(
            &mut self.transcript,
            &InertText::new(delta),
            self.expand_thinking,
        );
    }

    /// A finished thought: it completes the live block waiting for it, or stands where it was
    /// thought.
    pub(super) fn on_thought(&mut self, text: &str) {
        if self.live_thinking.is_waiting() {
            self.live_thinking
                .complete(&mut self.transcript, InertText::new(text));
            return;
        }
        let cell = CellBody::Thought(ThoughtCell::new(InertText::new(text), self.expand_thinking));
        // Thinking is released after the message it belongs to: show it before that
        // message's text, where it was thought.
        match self.turn.as_ref().and_then(|turn| turn.open_assistant) {
            Some(answer) => {
                self.transcript.insert_before(answer, cell);
            }
            None => {
                self.transcript.push(cell);
            }
        }
    }
}
