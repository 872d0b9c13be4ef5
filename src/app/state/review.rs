//! The agent's changes to the tree: the turn's summary cell (and notices that come after its
//! turn), `/diff`, `/undo` and what an undo did.

use super::{AppEffect, AppState};
use crate::app::menu::Overlay;
use crate::app::review::{ChangedTurn, ConfirmFor, DiffRequest, DiffView, EarlierTurn, LoadedDiff};
use crate::app::transcript::{
    CellBody, ChangedFile, ChangesCell, InertText, NoticeCell, NoticeLevel,
};
use crate::orchestrator::{Command, SnapshotBusy, TurnId};
use crate::snapshot::{describe_undo_of, UndoOutcome};
use crate::stream::FileChange;

impl AppState {
    /// A turn changed files: a summary cell, and the turn is remembered for `/diff` and `/undo`.
    pub(crate) fn on_turn_changes(&mut self, turn: TurnId, files: Vec<FileChange>) {
        if files.is_empty() {
            return;
        }
        let files: Vec<ChangedFile> = files.into_iter().map(ChangedFile::from).collect();
        let body = CellBody::Changes(ChangesCell {
            files: files.clone(),
            expanded: self.expand_tools,
            undone: false,
        });
        // Under its own turn, also when the next prompt was sent before it came.
        let cell = match self.cell_after_turn(turn) {
            Some(next) => self.transcript.insert_before(next, body),
            None => {
                self.close_assistant();
                self.transcript.push(body)
            }
        };
        self.changed_turns.retain(|changed| changed.turn != turn);
        self.changed_turns.push(ChangedTurn {
            turn,
            files,
            undone: false,
            cell,
        });
    }

    /// A notice about a turn that is over (or about the launch): under that turn.
    pub(crate) fn on_late_notice(&mut self, turn: TurnId, message: &str) {
        let body =
            CellBody::Notice(NoticeCell::new(NoticeLevel::Warning, InertText::new(message)).into());
        match self.cell_after_turn(turn) {
            Some(next) => {
                self.transcript.insert_before(next, body);
            }
            None => {
                self.transcript.push(body);
            }
        }
    }

    /// The last turn's changes are being summed up (the status says so).
    pub(crate) fn summing_up(&self) -> bool {
        matches!(self.snapshot_busy, Some(SnapshotBusy::TurnEnd { .. }))
    }

    pub(crate) fn on_snapshot_busy(&mut self, busy: Option<SnapshotBusy>) -> Vec<AppEffect> {
        self.snapshot_busy = busy;
        if self.undo_after_snapshot && !self.summing_up() {
            self.undo_after_snapshot = false;
            if self.undoable_turn().is_some() {
                return self.request_undo();
            }
            self.notice(
                NoticeLevel::Info,
                "The last turn changed no file: nothing to undo.",
            );
        }
        Vec::new()
    }

    /// The latest turn whose changes were not undone.
    pub(crate) fn undoable_turn(&self) -> Option<&ChangedTurn> {
        self.changed_turns
            .iter()
            .rev()
            .find(|changed| !changed.undone)
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
            Ok(loaded) => {
                let last = loaded.last;
                let mut view = DiffView::new(loaded);
                // The last prompt changed no file (or runs still): the scope names its turn.
                if self.turn_prompts.last().map(|record| record.turn) != Some(last) {
                    view.earlier = self.named_prompt(last).map(|named| EarlierTurn {
                        number: self.prompt_number(last),
                        named,
                    });
                }
                self.overlay = Some(Overlay::Diff(view));
            }
            Err(why) => {
                self.notice(NoticeLevel::Warning, format!("Cannot show the diff: {why}"));
            }
        }
    }

    pub(super) fn request_undo(&mut self) -> Vec<AppEffect> {
        if self.summing_up() {
            // The last turn's changes are not in yet: the undo waits for them.
            self.undo_after_snapshot = true;
            self.notice(
                NoticeLevel::Info,
                "Summing up the last turn's changes first; /undo follows.",
            );
            return Vec::new();
        }
        match self.undoable_turn() {
            Some(changed) => vec![AppEffect::Command(Command::UndoTurn {
                turn: changed.turn,
                overwrite: false,
            })],
            None => Vec::new(),
        }
    }

    /// What an undo did: a notice, the turn marked undone; files changed since the turn open
    /// the question whether to overwrite them.
    pub(crate) fn on_undone(&mut self, turn: TurnId, outcome: Result<UndoOutcome, String>) {
        if let Ok(done) = &outcome {
            if done.stopped_by_conflicts() {
                self.ask_before_overwriting(
                    turn,
                    &done.conflicts,
                    ConfirmFor::Undo,
                    done.shared_with.clone(),
                );
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
        let what = self.named_prompt(turn);
        self.notice(level, describe_undo_of(&outcome, what.as_deref()));
    }

    pub(super) fn mark_changes_undone(&mut self, turns: &[TurnId], undone: bool) {
        let cells: Vec<_> = self
            .changed_turns
            .iter_mut()
            .filter(|changed| turns.contains(&changed.turn))
            .map(|changed| {
                changed.undone = undone;
                changed.cell
            })
            .collect();
        for cell in cells {
            self.transcript.update(cell, |body| {
                if let CellBody::Changes(changes) = body {
                    changes.undone = undone;
                }
            });
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::time::Instant;

    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::*;
    use crate::app::action::Action;
    use crate::app::state::StartupInfo;
    use crate::orchestrator::{OrchestratorEvent, TurnOutcome};
    use crate::snapshot::UndoOutcome;
    use crate::stream::{ChangeStatus, FileChange};

    fn changed(path: &str) -> FileChange {
        FileChange {
            path: path.into(),
            status: ChangeStatus::Modified,
            added: 1,
            removed: 0,
            too_big: false,
            ..FileChange::default()
        }
    }

    /// A chat after `turns` turns, turn 2 having changed `b.txt`.
    pub(in crate::app::state) fn chat(turns: u64, now: Instant) -> AppState {
        let mut state = AppState::new(StartupInfo::default());
        for turn in 1..=turns {
            state.on_orchestrator_event(
                OrchestratorEvent::TurnStarted {
                    turn,
                    prompt: format!("prompt {turn}"),
                },
                now,
            );
            if turn == 2 {
                state.on_orchestrator_event(
                    OrchestratorEvent::TurnChanges {
                        turn,
                        files: vec![changed("b.txt")],
                    },
                    now,
                );
            }
            state.on_orchestrator_event(
                OrchestratorEvent::TurnEnded {
                    turn,
                    outcome: TurnOutcome::Completed,
                },
                now,
            );
        }
        state
    }

    #[test]
    fn undo_goes_back_turn_by_turn_and_asks_before_overwriting() {
        let now = Instant::now();
        let mut state = chat(2, now);
        assert_eq!(
            state.perform(Action::Undo, None),
            [AppEffect::Command(Command::UndoTurn {
                turn: 2,
                overwrite: false
            })]
        );
        let conflict = UndoOutcome {
            conflicts: vec!["b.txt".into()],
            ..UndoOutcome::default()
        };
        state.on_orchestrator_event(
            OrchestratorEvent::Undone {
                turn: 2,
                outcome: Ok(conflict),
            },
            now,
        );
        assert!(matches!(state.overlay, Some(Overlay::ConfirmUndo(_))));
        let yes = KeyEvent::new(KeyCode::Char('y'), KeyModifiers::NONE);
        assert_eq!(
            state.on_key_at(yes, now),
            [AppEffect::Command(Command::UndoTurn {
                turn: 2,
                overwrite: true
            })]
        );
        state.on_orchestrator_event(
            OrchestratorEvent::Undone {
                turn: 2,
                outcome: Ok(UndoOutcome {
                    restored: vec!["b.txt".into()],
                    ..UndoOutcome::default()
                }),
            },
            now,
        );
        assert!(state.undoable_turn().is_none());
        assert!(!state.is_action_enabled(Action::Undo));
        // /diff has nothing left to show either.
        assert!(state.perform(Action::Diff, None).is_empty());
    }

    #[test]
    fn diff_pages_by_the_rows_the_last_frame_showed() {
        use crate::app::state::Drawn;
        use crate::snapshot::{DiffLineKind, FileDiffView};
        let start = Instant::now();
        let mut state = chat(2, start);
        let file = FileDiffView {
            path: "b.txt".into(),
            status: ChangeStatus::Modified,
            added: 100,
            removed: 0,
            lines: (0..100)
                .map(|n| (DiffLineKind::Added, format!("line {n}")))
                .collect(),
        };
        state.show_diff(Ok(LoadedDiff {
            conversation: vec![file.clone()],
            last_turn: vec![file],
            turns: 1,
            last: 1,
        }));
        let page_down = KeyEvent::new(KeyCode::PageDown, KeyModifiers::NONE);
        let scroll = |state: &AppState| match &state.overlay {
            Some(Overlay::Diff(view)) => view.scroll,
            other => panic!("the diff closed: {other:?}"),
        };
        state.on_drawn(Drawn {
            diff_page: Some(37),
            ..Drawn::default()
        });
        state.on_key_at(page_down, start);
        assert_eq!(scroll(&state), 37);
        // A smaller screen, a smaller page.
        state.on_drawn(Drawn {
            diff_page: Some(5),
            ..Drawn::default()
        });
        state.on_key_at(page_down, start);
        assert_eq!(scroll(&state), 42);
    }

    #[test]
    fn page_keys_scroll_the_transcript_in_the_state_and_a_frame_lays_it_out() {
        use crate::app::scroll::{TopRow, TranscriptLayout};
        use crate::app::state::Drawn;
        let start = Instant::now();
        let mut state = chat(3, start);
        let page_up = KeyEvent::new(KeyCode::PageUp, KeyModifiers::NONE);
        assert!(state.on_key_at(page_up, start).is_empty());
        assert_eq!(state.transcript_scroll.top(), TopRow::AboveFollow(1));
        let id = state.transcript.cells()[1].id;
        state.on_drawn(Drawn {
            transcript: Some(TranscriptLayout {
                anchor: Some((id, 2)),
                width: 30,
                height: 10,
            }),
            ..Drawn::default()
        });
        // A frame without room for the transcript keeps where it was.
        state.on_drawn(Drawn::default());
        assert_eq!(
            state.transcript_scroll.top(),
            TopRow::Cell {
                id,
                skip: 2,
                width: 30
            }
        );
        state.on_key_at(page_up, start);
        assert_eq!(
            state.transcript_scroll.top(),
            TopRow::Cell {
                id,
                skip: -6,
                width: 30
            }
        );
        state.on_mouse_wheel(false);
        let end = KeyEvent::new(KeyCode::End, KeyModifiers::CONTROL);
        state.on_key_at(end, start);
        assert!(state.transcript_scroll.follows());
    }

    /// Issue 37: the turn's summary is walked after the turn ended; meanwhile the status does
    /// not say idle, `/undo` waits for it, and a summary (or notice) that arrives after the
    /// next prompt was sent lands under its own turn.
    #[test]
    fn while_a_turn_s_changes_are_summed_up_nothing_says_idle_and_they_land_under_their_turn() {
        let now = Instant::now();
        let mut state = chat(1, now);
        state.on_orchestrator_event(
            OrchestratorEvent::SnapshotBusy(Some(SnapshotBusy::TurnEnd { turn: 1 })),
            now,
        );
        assert!(matches!(
            state.activity(now),
            crate::app::state::Activity::Snapshotting(SnapshotBusy::TurnEnd { turn: 1 })
        ));
        assert!(state.perform(Action::Undo, None).is_empty(), "waits");
        state.on_orchestrator_event(
            OrchestratorEvent::TurnChanges {
                turn: 1,
                files: vec![changed("a.txt")],
            },
            now,
        );
        let effects = state.on_orchestrator_event(OrchestratorEvent::SnapshotBusy(None), now);
        assert_eq!(
            effects,
            [AppEffect::Command(Command::UndoTurn {
                turn: 1,
                overwrite: false
            })]
        );
        assert!(matches!(
            state.activity(now),
            crate::app::state::Activity::Idle
        ));

        // The summary and its notice arrive after the next prompt started.
        let mut state = chat(1, now);
        state.on_orchestrator_event(
            OrchestratorEvent::TurnStarted {
                turn: 2,
                prompt: "next".into(),
            },
            now,
        );
        state.on_orchestrator_event(
            OrchestratorEvent::TurnChanges {
                turn: 1,
                files: vec![changed("a.txt")],
            },
            now,
        );
        state.on_orchestrator_event(
            OrchestratorEvent::Notice {
                turn: 1,
                kind: crate::stream::NoticeKind::Snapshot,
                message: "1 file not kept".into(),
            },
            now,
        );
        let bodies: Vec<&CellBody> = state.transcript.bodies().collect();
        let changes = bodies
            .iter()
            .position(|body| matches!(body, CellBody::Changes(_)))
            .unwrap();
        let notice = bodies
            .iter()
            .position(|body| matches!(body, CellBody::Notice(notice) if notice.message.contains("not kept")))
            .unwrap();
        let second_prompt = bodies
            .iter()
            .rposition(|body| matches!(body, CellBody::User(_)))
            .unwrap();
        assert!(
            changes < second_prompt && notice < second_prompt,
            "{bodies:#?}"
        );
    }
}
