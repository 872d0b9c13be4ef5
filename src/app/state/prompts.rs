//! The conversation's prompts as the user knows them: each turn's prompt recorded once however
//! often it was retried, numbered among the prompts the agent still has, named by its first
//! line, and whether the agent's conversation can go back to before it.

use std::time::Instant;

use super::AppState;
use crate::app::rewind::PromptRecord;
use crate::app::transcript::{CellId, InertText};
use crate::orchestrator::{TurnId, TurnOutcome};

impl AppState {
    /// Turn `turn` sent `prompt`. A retry of the last turn (`/retry` after it failed or was
    /// stopped: a new turn with the same prompt) takes that prompt's record over, so the picker
    /// lists each prompt once and numbers prompts, not attempts.
    pub(super) fn record_prompt(&mut self, turn: TurnId, prompt: &str, cell: CellId, now: Instant) {
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

    /// The prompt cell of the first turn after `turn`, if one was sent already.
    pub(super) fn cell_after_turn(&self, turn: TurnId) -> Option<CellId> {
        self.turn_prompts
            .iter()
            .find(|record| record.turn > turn)
            .and_then(|record| record.cells.first().copied())
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
}
