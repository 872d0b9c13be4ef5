//! The agent's changes to the tree: the turn's summary cell, `/diff`, `/undo`.

use crossterm::event::{KeyCode, KeyEvent};

use super::{AppEffect, AppState};
use crate::app::menu::Overlay;
use crate::app::review::{ChangedTurn, DiffOutcome, DiffRequest, DiffView, LoadedDiff, UndoConfirm};
use crate::app::transcript::{CellBody, ChangesCell, NoticeLevel};
use crate::orchestrator::{Command, TurnId};
use crate::sanitize::untrusted_owned;
use crate::snapshot::{describe_undo, UndoOutcome};
use crate::stream::FileChange;

/// Rows of the diff overlay a page key moves when the screen size is not known here.
const DIFF_PAGE: usize = 10;

impl AppState {
    /// A turn changed files: a summary cell, and the turn is remembered for `/diff` and `/undo`.
    pub(crate) fn on_turn_changes(&mut self, turn: TurnId, files: Vec<FileChange>) {
        if files.is_empty() {
            return;
        }
        let files: Vec<FileChange> = files
            .into_iter()
            .map(|file| FileChange {
                path: untrusted_owned(&file.path),
                ..file
            })
            .collect();
        self.close_assistant();
        let cell = self.transcript.push(CellBody::Changes(ChangesCell {
            files: files.clone(),
            expanded: self.expand_tools,
            undone: false,
        }));
        self.changed_turns.retain(|changed| changed.turn != turn);
        self.changed_turns.push(ChangedTurn {
            turn,
            files,
            undone: false,
            cell,
        });
    }

    /// The latest turn whose changes were not undone.
    pub(crate) fn undoable_turn(&self) -> Option<&ChangedTurn> {
        self.changed_turns.iter().rev().find(|changed| !changed.undone)
    }

    pub(super) fn request_diff(&mut self) -> Vec<AppEffect> {
        let turns: Vec<TurnId> = self
            .changed_turns
            .iter()
            .filter(|changed| !changed.undone)
            .map(|changed| changed.turn)
            .collect();
        let Some(last) = turns.last().copied() else {
            self.notice(
                NoticeLevel::Info,
                "Every turn's changes were undone: nothing to review.",
            );
            return Vec::new();
        };
        vec![AppEffect::LoadDiff(DiffRequest { turns, last })]
    }

    /// Opens `/diff` on what the event loop read.
    pub(crate) fn show_diff(&mut self, loaded: Result<LoadedDiff, String>) {
        match loaded {
            Ok(loaded) => self.overlay = Some(Overlay::Diff(DiffView::new(loaded))),
            Err(why) => {
                self.notice(
                    NoticeLevel::Warning,
                    untrusted_owned(&format!("Cannot show the diff: {why}")),
                );
            }
        }
    }

    pub(super) fn on_diff_key(&mut self, mut view: DiffView, key: KeyEvent) -> Vec<AppEffect> {
        if let DiffOutcome::Open = view.on_key(key, DIFF_PAGE) {
            self.overlay = Some(Overlay::Diff(view));
        }
        Vec::new()
    }

    pub(super) fn request_undo(&mut self) -> Vec<AppEffect> {
        match self.undoable_turn() {
            Some(changed) => vec![AppEffect::Command(Command::UndoTurn {
                turn: changed.turn,
                overwrite: false,
            })],
            None => Vec::new(),
        }
    }

    /// `y` overwrites the files changed since the turn; anything else keeps them.
    pub(super) fn on_confirm_undo_key(&mut self, confirm: UndoConfirm, key: KeyEvent) -> Vec<AppEffect> {
        match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => {
                vec![AppEffect::Command(Command::UndoTurn {
                    turn: confirm.turn,
                    overwrite: true,
                })]
            }
            KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc | KeyCode::Enter => {
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "Nothing undone: {} kept as changed since the turn.",
                        confirm.conflicts.join(", ")
                    ),
                );
                Vec::new()
            }
            _ => {
                self.overlay = Some(Overlay::ConfirmUndo(confirm));
                Vec::new()
            }
        }
    }

    /// What an undo did: a notice, the turn marked undone; files changed since the turn open
    /// the question whether to overwrite them.
    pub(crate) fn on_undone(&mut self, turn: TurnId, outcome: Result<UndoOutcome, String>) {
        if let Ok(done) = &outcome {
            if !done.conflicts.is_empty() && !done.changed_anything() && done.failed.is_empty() {
                self.overlay = Some(Overlay::ConfirmUndo(UndoConfirm {
                    turn,
                    conflicts: done
                        .conflicts
                        .iter()
                        .map(|path| untrusted_owned(path))
                        .collect(),
                }));
                return;
            }
            if let Some(changed) = self
                .changed_turns
                .iter_mut()
                .find(|changed| changed.turn == turn)
            {
                changed.undone = true;
                let cell = changed.cell;
                self.transcript.update(cell, |body| {
                    if let CellBody::Changes(changes) = body {
                        changes.undone = true;
                    }
                });
            }
        }
        let level = match &outcome {
            Ok(done) if done.failed.is_empty() => NoticeLevel::Info,
            _ => NoticeLevel::Warning,
        };
        self.notice(level, untrusted_owned(&describe_undo(&outcome)));
    }
}
