//! Queued prompts taken back: after a stopped turn the orchestrator keeps its queue waiting,
//! and the chat brings the prompts back into the editor instead.

use super::{plural, AppEffect, AppState};
use crate::app::keymap::{QUIT_KEY, SEND_KEY};
use crate::app::transcript::NoticeLevel;
use crate::orchestrator::Command;

impl AppState {
    /// After a stopped turn the orchestrator keeps the queue waiting: its prompts come back into
    /// the editor (before any draft), for the user to edit, send or drop.
    pub(super) fn take_back_queue(&mut self) -> Vec<AppEffect> {
        if self.quitting || self.queued.is_empty() {
            return Vec::new();
        }
        let queued = std::mem::take(&mut self.queued);
        // One prompt at a time, each still its own prompt (a draft comes after them).
        self.composer
            .bring_back(queued.iter().map(ToString::to_string).collect());
        let how = if queued.len() > 1 {
            format!("one at a time: {SEND_KEY} sends, {QUIT_KEY} clears, and the next comes in")
        } else {
            format!("{SEND_KEY} sends, {QUIT_KEY} clears")
        };
        self.notice(
            NoticeLevel::Info,
            format!(
                "{} back in the editor, {how}",
                plural(queued.len(), "queued prompt")
            ),
        );
        queued
            .iter()
            .map(|_| AppEffect::Command(Command::RemoveQueued(0)))
            .collect()
    }
}
