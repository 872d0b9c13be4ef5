//! The agent's changes to the tree: the turn's summary cell, `/diff`, `/undo`.

use crossterm::event::{KeyCode, KeyEvent};

use super::{AppEffect, AppState};
use crate::app::action::Action;
use crate::app::menu::Overlay;
use crate::app::review::{
    ChangedTurn, ConfirmFor, DiffRequest, DiffView, EarlierTurn, LoadedDiff, RestoreAnswer,
    RestorePrompt, UndoAnswer, UndoConfirm,
};
use crate::app::rewind::{LastRewind, PromptRecord, RewindEntry, RewindPicker, RewindRequest};
use crate::app::transcript::{CellBody, ChangedFile, ChangesCell, InertText, NoticeLevel};
use crate::app::transcript::{CellId, NoticeCell};
use crate::orchestrator::Rewind;
use crate::orchestrator::SnapshotBusy;
use crate::orchestrator::{Command, TurnId, TurnOutcome};
use crate::snapshot::{describe_undo_of, UndoOutcome};
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

    /// The prompt cell of the first turn after `turn`, if one was sent already.
    fn cell_after_turn(&self, turn: TurnId) -> Option<CellId> {
        self.turn_prompts
            .iter()
            .find(|record| record.turn > turn)
            .and_then(|record| record.cells.first().copied())
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

    /// Restores a crash interrupted: the first is asked about now, the others after it.
    pub(crate) fn on_restores_interrupted(
        &mut self,
        mut found: Vec<crate::snapshot::InterruptedRestore>,
    ) {
        if found.is_empty() {
            return;
        }
        let restore = found.remove(0);
        self.overlay = Some(Overlay::InterruptedRestore(RestorePrompt {
            restore,
            more: found,
        }));
    }

    pub(super) fn on_restore_answer(
        &mut self,
        prompt: RestorePrompt,
        answer: RestoreAnswer,
    ) -> Vec<AppEffect> {
        let effects = match answer {
            RestoreAnswer::Finish | RestoreAnswer::RollBack => {
                vec![AppEffect::Command(Command::ResolveRestore {
                    id: prompt.restore.id.clone(),
                    finish: answer == RestoreAnswer::Finish,
                })]
            }
            RestoreAnswer::Later => {
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "{} Left as it is: asked again when agentty next opens here.",
                        prompt.restore.describe()
                    ),
                );
                Vec::new()
            }
        };
        self.on_restores_interrupted(prompt.more);
        effects
    }

    pub(crate) fn on_restore_resolved(
        &mut self,
        finish: bool,
        outcome: Result<UndoOutcome, String>,
    ) {
        let level = match &outcome {
            Ok(done) if done.failed.is_empty() => NoticeLevel::Info,
            _ => NoticeLevel::Warning,
        };
        self.notice(
            level,
            crate::orchestrator::describe_resolved(finish, &outcome),
        );
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
                ConfirmFor::Rewind { conversation } => vec![AppEffect::Command(Command::Rewind {
                    turn: confirm.turn,
                    conversation,
                    files: true,
                    overwrite: true,
                })],
                ConfirmFor::UndoRewind { conversation } => {
                    vec![AppEffect::Command(Command::UndoRewind {
                        turn: confirm.turn,
                        conversation,
                        files: true,
                        overwrite: true,
                    })]
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

    /// What an undo did: a notice, the turn marked undone; files changed since the turn open
    /// the question whether to overwrite them.
    pub(crate) fn on_undone(&mut self, turn: TurnId, outcome: Result<UndoOutcome, String>) {
        if let Ok(done) = &outcome {
            if done.stopped_by_conflicts() {
                self.overlay = Some(Overlay::ConfirmUndo(UndoConfirm {
                    turn,
                    conflicts: done
                        .conflicts
                        .iter()
                        .map(|path| InertText::new(path))
                        .collect(),
                    asked_by: ConfirmFor::Undo,
                    shared_with: done.shared_with.clone(),
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
        let what = self.named_prompt(turn);
        self.notice(level, describe_undo_of(&outcome, what.as_deref()));
    }

    /// The prompt of `turn` as the user knows it: "prompt 2 “fix the bug”" (its number among
    /// the prompts the agent has, its first line shortened); `None` when no prompt of the
    /// conversation sent it (taken back by a rewind).
    pub(super) fn named_prompt(&self, turn: TurnId) -> Option<String> {
        const SHOWN: usize = 40;
        let record = self
            .turn_prompts
            .iter()
            .find(|record| record.turn == turn)?;
        let first = record.prompt.lines().next().unwrap_or("");
        let shown: String = first.chars().take(SHOWN).collect();
        let cut = if shown.len() < first.len() { "…" } else { "" };
        Some(format!(
            "prompt {} “{shown}{cut}”",
            self.prompt_number(turn)
        ))
    }
}

impl AppState {
    /// Turn `turn` sent `prompt`. A retry of the last turn (`/retry` after it failed or was
    /// stopped: a new turn with the same prompt) takes that prompt's record over, so the picker
    /// lists each prompt once and numbers prompts, not attempts.
    pub(super) fn record_prompt(
        &mut self,
        turn: TurnId,
        prompt: &str,
        cell: crate::app::transcript::CellId,
        now: Instant,
    ) {
        // A new prompt goes on from here: the last rewind is no longer undone, and an undo
        // that waited for the last turn's summary is not made under the new turn.
        self.last_rewind = None;
        self.undo_after_snapshot = false;
        self.turn_prompts.retain(|record| record.turn != turn);
        let prompt = InertText::new(prompt);
        let retried = matches!(
            self.last_outcome,
            Some(TurnOutcome::Failed { .. } | TurnOutcome::Cancelled)
        );
        if let Some(last) = self
            .turn_prompts
            .last_mut()
            .filter(|last| retried && last.prompt == prompt)
        {
            last.turn = turn;
            last.cells.push(cell);
            last.conversation_rewind = Ok(());
            return;
        }
        self.turn_prompts.push(PromptRecord {
            turn,
            prompt,
            sent: now,
            cells: vec![cell],
            conversation_rewind: Ok(()),
        });
    }

    /// Where the prompt of `turn` stands among the conversation's prompts (those the agent
    /// still has), counted from 1.
    pub(super) fn prompt_number(&self, turn: TurnId) -> usize {
        self.turn_prompts
            .iter()
            .filter(|record| record.turn < turn)
            .count()
            + 1
    }

    /// The orchestrator kept (or could not keep) the agent's session as it was before `turn`.
    pub(super) fn on_turn_checkpointed(
        &mut self,
        turn: TurnId,
        conversation_rewind: Result<(), String>,
    ) {
        if let Some(record) = self
            .turn_prompts
            .iter_mut()
            .find(|record| record.turn == turn)
        {
            record.conversation_rewind = conversation_rewind.map_err(|why| InertText::new(&why));
        }
    }

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
            RewindRequest::UndoRewind(last) => vec![AppEffect::Command(Command::UndoRewind {
                turn: last.turn,
                conversation: last.conversation,
                files: last.files,
                overwrite: false,
            })],
            RewindRequest::Rewind {
                turn,
                prompt,
                conversation,
                files,
            } => {
                self.rewinding_prompt = conversation.then_some((turn, prompt));
                vec![AppEffect::Command(Command::Rewind {
                    turn,
                    conversation,
                    files,
                    overwrite: false,
                })]
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
            self.overlay = Some(Overlay::ConfirmUndo(UndoConfirm {
                turn: rewind.turn,
                conflicts: conflicts.iter().map(|path| InertText::new(path)).collect(),
                asked_by,
                shared_with: Vec::new(),
            }));
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

    fn mark_rewound(&mut self, cell: crate::app::transcript::CellId, rewound: bool) {
        self.transcript.update(cell, |body| {
            if let CellBody::User(user) = body {
                user.rewound = rewound;
            }
        });
    }

    fn mark_changes_undone(&mut self, turns: &[TurnId], undone: bool) {
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
            ..FileChange::default()
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
                undone: false,
            }),
            now,
        );
        assert_eq!(state.composer.text(), "prompt 2");
        assert_eq!(state.turn_prompts.len(), 1);
    }

    #[test]
    fn a_turn_whose_conversation_cannot_go_back_offers_its_files_only_and_says_why() {
        let now = Instant::now();
        let mut state = chat(2, now);
        state.on_orchestrator_event(
            OrchestratorEvent::TurnCheckpointed {
                turn: 2,
                conversation_rewind: Err("no session \u{1b}[31mfile".into()),
            },
            now,
        );
        state.perform(Action::Rewind, None);
        let Some(Overlay::Rewind(picker)) = &state.overlay else {
            panic!("{:?}", state.overlay);
        };
        let why = picker.entries[0].conversation_rewind.clone().unwrap_err();
        assert_eq!(why.as_str(), "no session ␛[31mfile");
        assert_eq!(picker.entries[1].conversation_rewind, Ok(()));
        let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
        let up = KeyEvent::new(KeyCode::Up, KeyModifiers::NONE);
        state.on_key_at(enter, now);
        let Some(Overlay::Rewind(picker)) = &state.overlay else {
            panic!("{:?}", state.overlay);
        };
        assert_eq!(
            picker.choices(),
            crate::app::rewind::RewindChoice::FILES_ONLY
        );
        state.on_key_at(up, now);
        assert_eq!(
            state.on_key_at(enter, now),
            [AppEffect::Command(Command::Rewind {
                turn: 2,
                conversation: false,
                files: true,
                overwrite: false,
            })]
        );
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

    fn user_cell_rewound(state: &AppState, prompt: &str) -> bool {
        state
            .transcript
            .cells()
            .iter()
            .find_map(|cell| match &cell.body {
                CellBody::User(user) if user.text == prompt => Some(user.rewound),
                _ => None,
            })
            .unwrap()
    }

    #[test]
    fn a_rewind_marks_the_turns_it_took_back_and_can_be_undone_until_the_next_prompt() {
        let now = Instant::now();
        let mut state = chat(3, now);
        state.rewinding_prompt = Some((2, "prompt 2".into()));
        state.on_orchestrator_event(
            OrchestratorEvent::Rewound(Rewind {
                turn: 2,
                conversation: Some(Ok(())),
                files: Some(Ok(UndoOutcome {
                    restored: vec!["b.txt".into()],
                    ..UndoOutcome::default()
                })),
                undone: false,
            }),
            now,
        );
        // Marked, not deleted; the turn's changes are marked undone.
        assert!(!user_cell_rewound(&state, "prompt 1"));
        assert!(user_cell_rewound(&state, "prompt 2"));
        assert!(user_cell_rewound(&state, "prompt 3"));
        assert!(state.undoable_turn().is_none());
        assert_eq!(state.composer.text(), "prompt 2");

        // The picker offers the undo first, and its choices start on Cancel.
        state.perform(Action::Rewind, None);
        let Some(Overlay::Rewind(picker)) = &state.overlay else {
            panic!("no picker");
        };
        assert!(picker.on_undo_row());
        assert_eq!(picker.entries.len(), 1, "prompt 1 only");
        let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
        let up = KeyEvent::new(KeyCode::Up, KeyModifiers::NONE);
        state.on_key_at(enter, now);
        state.on_key_at(up, now);
        assert_eq!(
            state.on_key_at(enter, now),
            [AppEffect::Command(Command::UndoRewind {
                turn: 2,
                conversation: true,
                files: true,
                overwrite: false,
            })]
        );
        // Files changed since the rewind: asked first.
        state.on_orchestrator_event(
            OrchestratorEvent::Rewound(Rewind {
                turn: 2,
                conversation: None,
                files: Some(Ok(UndoOutcome {
                    conflicts: vec!["b.txt".into()],
                    ..UndoOutcome::default()
                })),
                undone: true,
            }),
            now,
        );
        let yes = KeyEvent::new(KeyCode::Char('y'), KeyModifiers::NONE);
        assert_eq!(
            state.on_key_at(yes, now),
            [AppEffect::Command(Command::UndoRewind {
                turn: 2,
                conversation: true,
                files: true,
                overwrite: true,
            })]
        );
        state.on_orchestrator_event(
            OrchestratorEvent::Rewound(Rewind {
                turn: 2,
                conversation: Some(Ok(())),
                files: Some(Ok(UndoOutcome {
                    restored: vec!["b.txt".into()],
                    ..UndoOutcome::default()
                })),
                undone: true,
            }),
            now,
        );
        assert!(!user_cell_rewound(&state, "prompt 2"));
        assert!(!user_cell_rewound(&state, "prompt 3"));
        assert_eq!(state.undoable_turn().map(|changed| changed.turn), Some(2));
        let turns: Vec<TurnId> = state
            .turn_prompts
            .iter()
            .map(|record| record.turn)
            .collect();
        assert_eq!(turns, [1, 2, 3]);
        assert!(
            state.composer.is_empty(),
            "the prompt the rewind put back is gone"
        );
        assert!(state.last_rewind.is_none());

        // Rewound again, then a new prompt: the rewind can no longer be undone.
        state.on_orchestrator_event(
            OrchestratorEvent::Rewound(Rewind {
                turn: 3,
                conversation: Some(Ok(())),
                files: None,
                undone: false,
            }),
            now,
        );
        assert!(state.last_rewind.is_some());
        state.on_orchestrator_event(
            OrchestratorEvent::TurnStarted {
                turn: 4,
                prompt: "prompt 4".into(),
            },
            now,
        );
        assert!(state.last_rewind.is_none());
        assert!(user_cell_rewound(&state, "prompt 3"), "still marked");
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
        let bodies: Vec<&CellBody> = state
            .transcript
            .cells()
            .iter()
            .map(|cell| &cell.body)
            .collect();
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

    /// A restore a crash interrupted is asked about as the chat opens; the answer goes to the
    /// orchestrator and what it did is said.
    #[test]
    fn an_interrupted_restore_is_offered_and_its_outcome_said() {
        let now = Instant::now();
        let mut state = AppState::new(StartupInfo::default());
        let restore = crate::snapshot::InterruptedRestore {
            id: "9-1".into(),
            kind: crate::snapshot::RestoreKind::Undo,
            turn: 1,
            done: 281,
            pending: 2719,
            changed_since: 0,
        };
        state.on_orchestrator_event(OrchestratorEvent::RestoresInterrupted(vec![restore]), now);
        assert!(matches!(
            state.overlay,
            Some(Overlay::InterruptedRestore(_))
        ));
        let effects = state.on_key(KeyEvent::new(KeyCode::Char('f'), KeyModifiers::NONE));
        assert_eq!(
            effects,
            [AppEffect::Command(Command::ResolveRestore {
                id: "9-1".into(),
                finish: true
            })]
        );
        state.on_orchestrator_event(
            OrchestratorEvent::RestoreResolved {
                id: "9-1".into(),
                finish: true,
                outcome: Ok(UndoOutcome {
                    restored: vec!["f1.txt".into()],
                    ..UndoOutcome::default()
                }),
            },
            now,
        );
        let said = state.transcript.cells().iter().any(|cell| {
            matches!(&cell.body, CellBody::Notice(notice) if notice.message.contains("Interrupted restore finished"))
        });
        assert!(said, "{:#?}", state.transcript.cells());
    }
}
