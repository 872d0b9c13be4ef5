//! Keys while a permission prompt is open: the prompt answers them itself
//! (`PermissionPrompt`'s [`OverlayPane::on_key`]); here the chat carries out what it asks. The
//! answer goes to the orchestrator (`Command::AnswerPermission`) and the request's cell records
//! it at once. A key the prompt does not take (any key while it has no focus) is left to the
//! composer: it is typing.

use std::time::Instant;

use crossterm::event::KeyEvent;

use super::{AppEffect, AppState};
use crate::app::pane::{OverlayPane, Step};
use crate::app::permission::{PermissionAsk, PermissionInput};
use crate::app::permission_record::chosen;
use crate::app::transcript::{CellBody, InertText, PermissionOutcome};
use crate::orchestrator::Command;
use crate::stream::PermissionResolver;

impl AppState {
    /// The open prompt's answer to `key` (the prompt answers it itself,
    /// [`OverlayPane::on_key`]; here the chat carries out what it asks); `None` when the
    /// prompt does not take it (it has no focus, or no use for the key).
    pub(super) fn on_permission_key(
        &mut self,
        key: KeyEvent,
        now: Option<Instant>,
    ) -> Option<Vec<AppEffect>> {
        let input = PermissionInput {
            diff_rows: self.permission_diff_rows(),
        };
        let prompt = self.permission_prompts.front_mut()?;
        let ask = match prompt.on_key(key, now, input) {
            Step::Open | Step::Close => return Some(Vec::new()),
            Step::Done(ask) | Step::Ask(ask) => ask,
        };
        match ask {
            PermissionAsk::Answer { index, note } => Some(self.answer_permission_with(index, note)),
            PermissionAsk::Scroll(action) => Some(self.scrolled(action)),
            PermissionAsk::Pass => None,
        }
    }

    /// Rows of the change the open prompt asks about (0: none).
    fn permission_diff_rows(&self) -> usize {
        let Some(prompt) = self.permission_prompts.front() else {
            return 0;
        };
        match self.transcript.get(prompt.cell).map(|cell| &cell.body) {
            Some(CellBody::Permission(cell)) => cell.diff.len(),
            _ => 0,
        }
    }

    /// A paste into the open prompt's line of feedback, if it is open.
    pub(super) fn paste_feedback(&mut self, text: &str) -> bool {
        self.permission_prompts
            .front_mut()
            .is_some_and(|prompt| prompt.paste(text))
    }

    /// Answers the open prompt with its option `index` (`None`: cancelled) and the user's note.
    fn answer_permission_with(
        &mut self,
        index: Option<usize>,
        message: Option<String>,
    ) -> Vec<AppEffect> {
        let Some(prompt) = self.permission_prompts.front() else {
            return Vec::new();
        };
        let option = index.and_then(|index| prompt.options.get(index)).cloned();
        let outcome = match &option {
            Some(option) => chosen(option, PermissionResolver::User),
            None => PermissionOutcome::Cancelled {
                by: PermissionResolver::User,
            },
        };
        let Some(prompt) = self.close_permission_prompt(0, outcome) else {
            return Vec::new();
        };
        if let Some(note) = &message {
            let note = InertText::new(note);
            self.transcript.update(prompt.cell, |body| {
                if let CellBody::Permission(permission) = body {
                    permission.feedback = Some(note);
                }
            });
        }
        vec![AppEffect::Command(Command::AnswerPermission {
            id: prompt.id,
            option: option.map(|option| option.id),
            message,
        })]
    }
}
