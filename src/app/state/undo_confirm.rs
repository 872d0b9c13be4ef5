//! The question before an undo overwrites files changed since (by `/undo`, `/rewind` or
//! undoing a rewind): asked with the files, and the answer, overwrite or keep them.

use super::{AppEffect, AppState};
use crate::app::menu::Overlay;
use crate::app::review::{ConfirmFor, UndoAnswer, UndoConfirm};
use crate::app::transcript::{InertText, NoticeLevel};
use crate::orchestrator::{Command, RewindAsked, TurnId};

impl AppState {
    /// Files changed since `turn` (or the rewind) stopped what `asked_by` asked for: the user
    /// says whether to overwrite them.
    pub(super) fn ask_before_overwriting(
        &mut self,
        turn: TurnId,
        conflicts: &[String],
        asked_by: ConfirmFor,
        shared_with: Vec<u32>,
    ) {
        self.overlay = Some(Overlay::ConfirmUndo(UndoConfirm {
            turn,
            conflicts: conflicts.iter().map(|path| InertText::new(path)).collect(),
            asked_by,
            shared_with,
        }));
    }

    /// The answer to the `/undo` (or `/rewind`) question: overwrite the files changed since the
    /// turn, or keep them.
    pub(super) fn on_undo_answer(
        &mut self,
        confirm: UndoConfirm,
        answer: UndoAnswer,
    ) -> Vec<AppEffect> {
        match answer {
            UndoAnswer::Overwrite => match confirm.asked_by {
                ConfirmFor::Undo => vec![AppEffect::Command(Command::UndoTurn {
                    turn: confirm.turn,
                    overwrite: true,
                })],
                ConfirmFor::Rewind { conversation } => {
                    vec![AppEffect::Command(Command::Rewind(RewindAsked {
                        turn: confirm.turn,
                        conversation,
                        files: true,
                        overwrite: true,
                        undone: false,
                    }))]
                }
                ConfirmFor::UndoRewind { conversation } => {
                    vec![AppEffect::Command(Command::Rewind(RewindAsked {
                        turn: confirm.turn,
                        conversation,
                        files: true,
                        overwrite: true,
                        undone: true,
                    }))]
                }
            },
            UndoAnswer::Keep => {
                let since = match confirm.asked_by {
                    ConfirmFor::UndoRewind { .. } => "the rewind",
                    ConfirmFor::Undo | ConfirmFor::Rewind { .. } => "the turn",
                };
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "Nothing undone: {} kept as changed since {since}.",
                        // A turn may have changed thousands: the first few, and a count.
                        crate::snapshot::fold_list(
                            confirm.conflicts.iter().map(|path| path.as_ref())
                        )
                    ),
                );
                Vec::new()
            }
        }
    }
}
