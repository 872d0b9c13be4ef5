//! `/rewind` in the chat: Esc Esc opens it, the picker lists the prompts with the files each
//! would put back, the choice goes to the orchestrator, and what a rewind (or its undo) did
//! marks the prompts and changes it took back.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent};

use super::{AppEffect, AppState};
use crate::app::action::Action;
use crate::app::menu::Overlay;
use crate::app::review::{ChangedTurn, ConfirmFor};
use crate::app::rewind::{LastRewind, RewindEntry, RewindPicker, RewindRequest};
use crate::app::transcript::{CellBody, CellId, InertText, NoticeLevel};
use crate::orchestrator::{Command, Rewind, RewindAsked, TurnId};

/// The second Esc of an Esc Esc comes within this.
const ESC_ESC: Duration = Duration::from_millis(800);

impl AppState {
    /// Esc twice on an empty composer while no turn runs opens `/rewind` (Claude Code's habit).
    pub(super) fn esc_esc_rewind(
        &mut self,
        key: KeyEvent,
        now: Option<Instant>,
    ) -> Option<Vec<AppEffect>> {
        let plain_esc = key.code == KeyCode::Esc && key.modifiers.is_empty();
        let idle_and_empty = !self.is_turn_running()
            && self.prompt_in_flight.is_none()
            && self.composer.is_empty()
            && self.permission_prompts.is_empty();
        let (Some(now), true, true) = (now, plain_esc, idle_and_empty) else {
            self.esc_at = None;
            return None;
        };
        match self.esc_at.take() {
            Some(first) if now.saturating_duration_since(first) <= ESC_ESC => {
                Some(self.perform(Action::Rewind, None))
            }
            _ => {
                self.esc_at = Some(now);
                None
            }
        }
    }

    pub(super) fn open_rewind(&mut self) -> Vec<AppEffect> {
        let live_changes: Vec<&ChangedTurn> = self
            .changed_turns
            .iter()
            .filter(|changed| !changed.undone)
            .collect();
        let count = self.turn_prompts.len();
        let entries = self
            .turn_prompts
            .iter()
            .enumerate()
            .rev()
            .map(|(index, record)| {
                let files_of = |turn: TurnId| -> Vec<InertText> {
                    live_changes
                        .iter()
                        .filter(|changed| changed.turn == turn)
                        .flat_map(|changed| changed.files.iter().map(|file| file.path.clone()))
                        .collect()
                };
                let mut files_put_back: Vec<InertText> = live_changes
                    .iter()
                    .filter(|changed| changed.turn >= record.turn)
                    .flat_map(|changed| changed.files.iter().map(|file| file.path.clone()))
                    .collect();
                files_put_back.sort();
                files_put_back.dedup();
                RewindEntry {
                    turn: record.turn,
                    prompt: record.prompt.clone(),
                    sent: record.sent,
                    files: files_of(record.turn),
                    prompts_taken_back: count - index,
                    files_put_back,
                    conversation_rewind: record.conversation_rewind.clone(),
                }
            })
            .collect();
        self.overlay = Some(Overlay::Rewind(RewindPicker::new(
            entries,
            self.last_rewind.clone(),
        )));
        Vec::new()
    }

    /// The rewind picker's choice: take back to before that turn, or undo the last rewind.
    pub(super) fn on_rewind_request(&mut self, request: RewindRequest) -> Vec<AppEffect> {
        match request {
            RewindRequest::UndoRewind(last) => {
                vec![AppEffect::Command(Command::Rewind(RewindAsked {
                    turn: last.turn,
                    conversation: last.conversation,
                    files: last.files,
                    overwrite: false,
                    undone: true,
                }))]
            }
            RewindRequest::Rewind {
                turn,
                prompt,
                conversation,
                files,
            } => {
                self.rewinding_prompt = conversation.then_some((turn, prompt));
                vec![AppEffect::Command(Command::Rewind(RewindAsked {
                    turn,
                    conversation,
                    files,
                    overwrite: false,
                    undone: false,
                }))]
            }
        }
    }

    /// What a rewind did: a notice; the prompts taken back leave the picker (their cells are
    /// marked) and the first goes back into the composer; files put back mark their turns
    /// undone. Files changed since the last turn ask first. Until the next prompt, the rewind
    /// can be undone.
    pub(crate) fn on_rewound(&mut self, rewind: Rewind) {
        // Numbered before the rewind changes the prompts (an undone rewind's prompts are back
        // only after it).
        let number = match (&self.last_rewind, rewind.undone) {
            (Some(last), true) => last.prompt_number,
            _ => self.prompt_number(rewind.turn),
        };
        let point = format!("prompt {number}");
        if let Some(conflicts) = rewind.stopped_by_conflicts() {
            let asked_by = if rewind.undone {
                ConfirmFor::UndoRewind {
                    conversation: self
                        .last_rewind
                        .as_ref()
                        .is_some_and(|last| last.turn == rewind.turn && last.conversation),
                }
            } else {
                ConfirmFor::Rewind {
                    conversation: self
                        .rewinding_prompt
                        .as_ref()
                        .is_some_and(|(turn, _)| *turn == rewind.turn),
                }
            };
            self.ask_before_overwriting(rewind.turn, conflicts, asked_by, Vec::new());
            return;
        }
        if rewind.undone {
            self.rewind_undone(&rewind);
        } else {
            self.rewound(&rewind);
        }
        let failed = matches!(rewind.conversation, Some(Err(_)))
            || matches!(&rewind.files, Some(Err(_)))
            || matches!(&rewind.files, Some(Ok(done)) if !done.failed.is_empty());
        let level = if failed {
            NoticeLevel::Warning
        } else {
            NoticeLevel::Info
        };
        self.notice(level, rewind.describe_at(&point));
    }

    fn rewound(&mut self, rewind: &Rewind) {
        let prompt = self
            .rewinding_prompt
            .take()
            .filter(|(turn, _)| *turn == rewind.turn)
            .map(|(_, prompt)| prompt);
        let mut last = LastRewind {
            turn: rewind.turn,
            prompt_number: self.prompt_number(rewind.turn),
            conversation: false,
            files: false,
            prompts: Vec::new(),
            changed_turns: Vec::new(),
            files_back: Vec::new(),
            files_deleted_again: Vec::new(),
        };
        if matches!(rewind.conversation, Some(Ok(()))) {
            let (kept, taken_back): (Vec<_>, Vec<_>) = std::mem::take(&mut self.turn_prompts)
                .into_iter()
                .partition(|record| record.turn < rewind.turn);
            self.turn_prompts = kept;
            for cell in taken_back.iter().flat_map(|record| &record.cells) {
                self.mark_rewound(*cell, true);
            }
            last.conversation = true;
            last.prompts = taken_back;
            if let Some(prompt) = prompt {
                if self.composer.is_empty() {
                    self.composer.set_text(&prompt);
                } else {
                    self.composer.remember(&prompt);
                }
            }
        }
        if let Some(Ok(done)) = &rewind.files {
            last.files = true;
            let (mut deleted_again, mut back): (Vec<&String>, Vec<&String>) = done
                .restored
                .iter()
                .partition(|path| done.recreated.contains(path));
            back.extend(&done.removed);
            back.sort();
            deleted_again.sort();
            let inert = |paths: Vec<&String>| -> Vec<InertText> {
                paths.into_iter().map(|path| InertText::new(path)).collect()
            };
            last.files_back = inert(back);
            last.files_deleted_again = inert(deleted_again);
            if done.failed.is_empty() {
                let turns: Vec<TurnId> = self
                    .changed_turns
                    .iter()
                    .filter(|changed| changed.turn >= rewind.turn && !changed.undone)
                    .map(|changed| changed.turn)
                    .collect();
                self.mark_changes_undone(&turns, true);
                last.changed_turns = turns;
            }
        }
        if last.conversation || last.files {
            self.last_rewind = Some(last);
        }
    }

    /// The last rewind was undone: what it took back is back.
    fn rewind_undone(&mut self, undone: &Rewind) {
        let Some(last) = self
            .last_rewind
            .take()
            .filter(|last| last.turn == undone.turn)
        else {
            return;
        };
        if matches!(undone.conversation, Some(Ok(()))) {
            // The prompt the rewind put into the composer goes, unless edited since.
            if let Some(first) = last.prompts.first() {
                if first.prompt == self.composer.text() {
                    self.composer.set_text("");
                }
            }
            for cell in last.prompts.iter().flat_map(|record| &record.cells) {
                self.mark_rewound(*cell, false);
            }
            self.turn_prompts.extend(last.prompts.iter().cloned());
            self.turn_prompts.sort_by_key(|record| record.turn);
        }
        if matches!(&undone.files, Some(Ok(done)) if done.failed.is_empty()) {
            self.mark_changes_undone(&last.changed_turns, false);
        }
    }

    fn mark_rewound(&mut self, cell: CellId, rewound: bool) {
        self.transcript.update(cell, |body| {
            if let CellBody::User(user) = body {
                user.rewound = rewound;
            }
        });
    }
}
