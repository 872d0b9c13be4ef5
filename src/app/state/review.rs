//! The agent's changes to the tree: the turn's summary cell, `/diff`, `/undo`.

use crossterm::event::{KeyCode, KeyEvent};

use super::{AppEffect, AppState};
use crate::app::action::Action;
use crate::app::menu::Overlay;
use crate::app::review::{ChangedTurn, DiffRequest, DiffView, LoadedDiff, UndoAnswer, UndoConfirm};
use crate::app::rewind::{PromptRecord, RewindEntry, RewindPicker, RewindRequest};
use crate::app::transcript::{CellBody, ChangesCell, NoticeLevel};
use crate::orchestrator::Rewind;
use crate::orchestrator::{Command, TurnId};
use crate::sanitize::untrusted_owned;
use crate::snapshot::{describe_undo, UndoOutcome};
use crate::stream::FileChange;
use std::time::{Duration, Instant};

/// The second Esc of an Esc Esc comes within this.
const ESC_ESC: Duration = Duration::from_millis(800);

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
            Ok(loaded) => self.overlay = Some(Overlay::Diff(DiffView::new(loaded))),
            Err(why) => {
                self.notice(NoticeLevel::Warning, format!("Cannot show the diff: {why}"));
            }
        }
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

    /// The answer to the `/undo` (or `/rewind`) question: overwrite the files changed since the
    /// turn, or keep them.
    pub(super) fn on_undo_answer(
        &mut self,
        confirm: UndoConfirm,
        answer: UndoAnswer,
    ) -> Vec<AppEffect> {
        match answer {
            UndoAnswer::Overwrite => match confirm.rewind {
                None => vec![AppEffect::Command(Command::UndoTurn {
                    turn: confirm.turn,
                    overwrite: true,
                })],
                Some(conversation) => vec![AppEffect::Command(Command::Rewind {
                    turn: confirm.turn,
                    conversation,
                    files: true,
                    overwrite: true,
                })],
            },
            UndoAnswer::Keep => {
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "Nothing undone: {} kept as changed since the turn.",
                        confirm.conflicts.join(", ")
                    ),
                );
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
                    rewind: None,
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
        self.notice(level, describe_undo(&outcome));
    }
}

impl AppState {
    pub(super) fn record_prompt(&mut self, turn: TurnId, prompt: &str, now: Instant) {
        self.turn_prompts.retain(|record| record.turn != turn);
        self.turn_prompts.push(PromptRecord {
            turn,
            prompt: untrusted_owned(prompt),
            sent: now,
        });
    }

    /// Esc twice on an empty composer while no turn runs opens `/rewind` (Claude Code's habit).
    pub(super) fn esc_esc_rewind(
        &mut self,
        key: KeyEvent,
        now: Option<Instant>,
    ) -> Option<Vec<AppEffect>> {
        let plain_esc = key.code == KeyCode::Esc && key.modifiers.is_empty();
        let idle_and_empty = !self.is_turn_running()
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
                let files_of = |turn: TurnId| -> Vec<String> {
                    live_changes
                        .iter()
                        .filter(|changed| changed.turn == turn)
                        .flat_map(|changed| changed.files.iter().map(|file| file.path.clone()))
                        .collect()
                };
                let mut files_put_back: Vec<String> = live_changes
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
                }
            })
            .collect();
        self.overlay = Some(Overlay::Rewind(RewindPicker::new(entries)));
        Vec::new()
    }

    /// The rewind picker's choice: take back to before that turn.
    pub(super) fn on_rewind_request(&mut self, request: RewindRequest) -> Vec<AppEffect> {
        let RewindRequest {
            turn,
            prompt,
            conversation,
            files,
        } = request;
        self.rewinding_prompt = conversation.then_some((turn, prompt));
        vec![AppEffect::Command(Command::Rewind {
            turn,
            conversation,
            files,
            overwrite: false,
        })]
    }

    /// What a rewind did: a notice; the prompts taken back leave the picker and the first goes
    /// back into the composer; files put back mark their turns undone. Files changed since
    /// the last turn ask first.
    pub(crate) fn on_rewound(&mut self, rewind: Rewind) {
        if let Some(conflicts) = rewind.stopped_by_conflicts() {
            let conversation = self
                .rewinding_prompt
                .as_ref()
                .is_some_and(|(turn, _)| *turn == rewind.turn);
            self.overlay = Some(Overlay::ConfirmUndo(UndoConfirm {
                turn: rewind.turn,
                conflicts: conflicts.iter().map(|path| untrusted_owned(path)).collect(),
                rewind: Some(conversation),
            }));
            return;
        }
        let prompt = self
            .rewinding_prompt
            .take()
            .filter(|(turn, _)| *turn == rewind.turn)
            .map(|(_, prompt)| prompt);
        if matches!(rewind.conversation, Some(Ok(()))) {
            self.turn_prompts.retain(|record| record.turn < rewind.turn);
            if let Some(prompt) = prompt {
                if self.composer.is_empty() {
                    self.composer.set_text(&prompt);
                } else {
                    self.composer.remember(&prompt);
                }
            }
        }
        if let Some(Ok(done)) = &rewind.files {
            if done.failed.is_empty() {
                let cells: Vec<_> = self
                    .changed_turns
                    .iter_mut()
                    .filter(|changed| changed.turn >= rewind.turn && !changed.undone)
                    .map(|changed| {
                        changed.undone = true;
                        changed.cell
                    })
                    .collect();
                for cell in cells {
                    self.transcript.update(cell, |body| {
                        if let CellBody::Changes(changes) = body {
                            changes.undone = true;
                        }
                    });
                }
            }
        }
        let failed = matches!(rewind.conversation, Some(Err(_)))
            || matches!(&rewind.files, Some(Err(_)))
            || matches!(&rewind.files, Some(Ok(done)) if !done.failed.is_empty());
        let level = if failed {
            NoticeLevel::Warning
        } else {
            NoticeLevel::Info
        };
        self.notice(level, rewind.describe());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::state::StartupInfo;
    use crate::orchestrator::{OrchestratorEvent, TurnOutcome};
    use crate::snapshot::UndoOutcome;
    use crate::stream::{ChangeStatus, FileChange};
    use crossterm::event::KeyModifiers;

    fn esc() -> KeyEvent {
        KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)
    }

    fn changed(path: &str) -> FileChange {
        FileChange {
            path: path.into(),
            status: ChangeStatus::Modified,
            added: 1,
            removed: 0,
            too_big: false,
        }
    }

    /// A chat after `turns` turns, turn 2 having changed `b.txt`.
    fn chat(turns: u64, now: Instant) -> AppState {
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
    fn esc_esc_opens_the_rewind_picker_only_within_the_window_and_only_when_idle_and_empty() {
        let start = Instant::now();
        let mut state = chat(3, start);
        state.on_key_at(esc(), start);
        state.on_key_at(esc(), start + Duration::from_millis(900));
        assert!(state.overlay.is_none(), "too slow: two single Escs");
        state.on_key_at(esc(), start + Duration::from_millis(1200));
        let picker = match &state.overlay {
            Some(Overlay::Rewind(picker)) => picker.clone(),
            other => panic!("{other:?}"),
        };
        let turns: Vec<TurnId> = picker.entries.iter().map(|entry| entry.turn).collect();
        assert_eq!(turns, [3, 2, 1], "newest first");
        assert_eq!(picker.entries[1].files, ["b.txt"]);
        assert_eq!(picker.entries[2].prompts_taken_back, 3);
        assert_eq!(picker.entries[2].files_put_back, ["b.txt"]);
        assert!(picker.entries[0].files_put_back.is_empty());

        // With a draft in the composer, Esc Esc is not a rewind.
        let mut state = chat(1, start);
        state.composer.set_text("draft");
        state.on_key_at(esc(), start);
        state.on_key_at(esc(), start + Duration::from_millis(100));
        assert!(state.overlay.is_none());
    }

    #[test]
    fn the_choice_starts_on_cancel_and_a_confirmed_rewind_is_one_command() {
        let now = Instant::now();
        let mut state = chat(2, now);
        state.perform(Action::Rewind, None);
        let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
        let up = KeyEvent::new(KeyCode::Up, KeyModifiers::NONE);
        assert!(state.on_key_at(enter, now).is_empty());
        // Enter again: Cancel, nothing sent.
        assert!(state.on_key_at(enter, now).is_empty());
        assert!(state.overlay.is_none());
        state.perform(Action::Rewind, None);
        state.on_key_at(enter, now);
        state.on_key_at(up, now);
        state.on_key_at(up, now);
        assert_eq!(
            state.on_key_at(enter, now),
            [AppEffect::Command(Command::Rewind {
                turn: 2,
                conversation: true,
                files: false,
                overwrite: false,
            })]
        );
        state.on_orchestrator_event(
            OrchestratorEvent::Rewound(Rewind {
                turn: 2,
                conversation: Some(Ok(())),
                files: None,
            }),
            now,
        );
        assert_eq!(state.composer.text(), "prompt 2");
        assert_eq!(state.turn_prompts.len(), 1);
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
}
