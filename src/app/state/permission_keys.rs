//! Keys while a permission prompt is open: a number or a letter chooses one of the agent's
//! options, ↑/↓ and Enter choose the highlighted one, Esc rejects. The answer goes to the
//! orchestrator (`Command::AnswerPermission`) and the request's cell records it at once.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{AppEffect, AppState, ScrollAction};
use crate::app::permission::{choice_for_char, chosen, reject_choice};
use crate::app::transcript::PermissionOutcome;
use crate::orchestrator::Command;
use crate::stream::PermissionResolver;

impl AppState {
    pub(super) fn on_permission_key(
        &mut self,
        key: KeyEvent,
        now: Option<Instant>,
    ) -> Vec<AppEffect> {
        let Some(prompt) = self.permission_prompts.front_mut() else {
            return Vec::new();
        };
        let count = prompt.options.len();
        let kinds = prompt.kinds();
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        let choice = match key.code {
            // Rejecting is always safe to do at once: no arming delay.
            KeyCode::Esc => return self.answer_permission(reject_choice(&kinds), now),
            KeyCode::Up | KeyCode::BackTab if count > 0 => {
                prompt.selected = (prompt.selected + count - 1) % count;
                return Vec::new();
            }
            KeyCode::Down | KeyCode::Tab if count > 0 => {
                prompt.selected = (prompt.selected + 1) % count;
                return Vec::new();
            }
            KeyCode::PageUp => return vec![AppEffect::Scroll(ScrollAction::PageUp)],
            KeyCode::PageDown => return vec![AppEffect::Scroll(ScrollAction::PageDown)],
            KeyCode::Enter if plain && count > 0 => Some(prompt.selected.min(count - 1)),
            KeyCode::Char(ch) if plain => choice_for_char(&kinds, ch),
            _ => None,
        };
        match choice {
            Some(index) if prompt.is_armed(now) => self.answer_permission(Some(index), now),
            _ => Vec::new(),
        }
    }

    /// Answers the open prompt with its option `index` (`None`: cancelled).
    fn answer_permission(&mut self, index: Option<usize>, now: Option<Instant>) -> Vec<AppEffect> {
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
        let Some(prompt) = self.close_permission_prompt(0, outcome, now) else {
            return Vec::new();
        };
        vec![AppEffect::Command(Command::AnswerPermission {
            id: prompt.id,
            option: option.map(|option| option.id),
        })]
    }
}
