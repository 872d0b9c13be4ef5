//! Keys while a permission prompt is open and armed: a number or a letter chooses one of the
//! agent's options, ↑/↓ and Enter choose the highlighted one, Esc rejects, `r` opens a line to
//! reject and say what to do instead (which then takes every key until Enter sends or Esc goes
//! back). The answer goes to the orchestrator (`Command::AnswerPermission`) and the request's
//! cell records it at once. A key the prompt does not take (any key before it arms) is left to
//! the composer: it is typing.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{AppEffect, AppState, ScrollAction};
use unicode_segmentation::UnicodeSegmentation;

use crate::app::permission::{choice_for_char, chosen, reject_choice, FEEDBACK_KEY};
use crate::app::transcript::{CellBody, InertText, PermissionOutcome};
use crate::orchestrator::Command;
use crate::sanitize::untrusted_owned;
use crate::stream::PermissionResolver;

impl AppState {
    /// The open prompt's answer to `key`; `None` when the prompt does not take it (not armed
    /// yet, or a key it has no use for).
    pub(super) fn on_permission_key(
        &mut self,
        key: KeyEvent,
        now: Option<Instant>,
    ) -> Option<Vec<AppEffect>> {
        if self
            .permission_prompt()
            .is_some_and(|prompt| prompt.feedback.is_some())
        {
            return Some(self.on_feedback_key(key, now));
        }
        if let Some(effects) = self.scroll_permission_diff(key) {
            return Some(effects);
        }
        if !self.permission_armed(now) {
            return None;
        }
        let prompt = self.permission_prompts.front_mut()?;
        let count = prompt.options.len();
        let kinds = prompt.kinds();
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        let choice = match key.code {
            KeyCode::Esc => return Some(self.answer_permission(reject_choice(&kinds), now)),
            KeyCode::Up | KeyCode::BackTab if count > 0 => {
                let from = prompt.selected.unwrap_or(0);
                prompt.selected = Some((from + count - 1) % count);
                return Some(Vec::new());
            }
            KeyCode::Down | KeyCode::Tab if count > 0 => {
                prompt.selected = Some(prompt.selected.map_or(0, |from| (from + 1) % count));
                return Some(Vec::new());
            }
            KeyCode::PageUp => return Some(self.scrolled(ScrollAction::PageUp)),
            KeyCode::PageDown => return Some(self.scrolled(ScrollAction::PageDown)),
            KeyCode::Enter if plain && count > 0 => match prompt.selected {
                Some(index) => index.min(count - 1),
                None => {
                    // Nothing safe to preselect (only "always" answers): Enter highlights the
                    // first option, and a second, deliberate Enter chooses it.
                    prompt.selected = Some(0);
                    return Some(Vec::new());
                }
            },
            KeyCode::Char(FEEDBACK_KEY) if plain && reject_choice(&kinds).is_some() => {
                prompt.feedback = Some(String::new());
                return Some(Vec::new());
            }
            KeyCode::Char(ch) if plain => choice_for_char(&kinds, ch)?,
            _ => return None,
        };
        Some(self.answer_permission(Some(choice), now))
    }

    /// PgUp/PgDn over a prompt whose request carries a diff: PgDn shows the change in place of
    /// the options and scrolls it a row at a time (on a small screen only a few rows show, and
    /// none may be skipped); PgUp scrolls back, and at the top brings the options back. Armed
    /// or not: they are neither typing nor an answer.
    fn scroll_permission_diff(&mut self, key: KeyEvent) -> Option<Vec<AppEffect>> {
        let prompt = self.permission_prompts.front()?;
        let rows = match &self.transcript.get(prompt.cell)?.body {
            CellBody::Permission(cell) => cell.diff.len(),
            _ => 0,
        };
        if rows == 0 {
            return None;
        }
        let prompt = self.permission_prompts.front_mut()?;
        match key.code {
            KeyCode::PageUp => prompt.diff_scroll = prompt.diff_scroll.saturating_sub(1),
            KeyCode::PageDown => prompt.diff_scroll = (prompt.diff_scroll + 1).min(rows + 1),
            _ => return None,
        }
        Some(Vec::new())
    }

    /// A key for the line after `r`: it is text, Enter rejects with it, Esc goes back to the
    /// options (nothing sent).
    fn on_feedback_key(&mut self, key: KeyEvent, now: Option<Instant>) -> Vec<AppEffect> {
        let Some(prompt) = self.permission_prompts.front_mut() else {
            return Vec::new();
        };
        let Some(note) = prompt.feedback.as_mut() else {
            return Vec::new();
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Esc => prompt.feedback = None,
            KeyCode::Enter => {
                let note = note.trim().to_owned();
                let reject = reject_choice(&prompt.kinds());
                return self.answer_permission_with(
                    reject,
                    (!note.is_empty()).then_some(note),
                    now,
                );
            }
            KeyCode::Backspace => {
                if let Some((last, _)) = note.grapheme_indices(true).next_back() {
                    note.truncate(last);
                }
            }
            KeyCode::Char('u') if ctrl => note.clear(),
            KeyCode::Char(ch) if !ctrl && !alt => note.push(ch),
            // The line has no cursor to move: other keys do nothing to it.
            _ => {}
        }
        Vec::new()
    }

    /// A paste into the line after `r`, if it is open (on one line).
    pub(super) fn paste_feedback(&mut self, text: &str) -> bool {
        let Some(note) = self
            .permission_prompts
            .front_mut()
            .and_then(|prompt| prompt.feedback.as_mut())
        else {
            return false;
        };
        note.push_str(&untrusted_owned(&text.replace(['\r', '\n'], " ")));
        true
    }

    /// Answers the open prompt with its option `index` (`None`: cancelled).
    fn answer_permission(&mut self, index: Option<usize>, now: Option<Instant>) -> Vec<AppEffect> {
        self.answer_permission_with(index, None, now)
    }

    /// Answers the open prompt with its option `index` (`None`: cancelled) and the user's note.
    fn answer_permission_with(
        &mut self,
        index: Option<usize>,
        message: Option<String>,
        now: Option<Instant>,
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
        let Some(prompt) = self.close_permission_prompt(0, outcome, now) else {
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
