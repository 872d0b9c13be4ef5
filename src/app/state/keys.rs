//! Key routing: a key goes to the quit confirmation, an overlay, the open permission prompt, the
//! `/`/`@` popup, a chat binding or the composer; paste, the mouse wheel and clicks on cells.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::{AppEffect, AppState, ScrollAction};
use crate::app::action::Action;
use crate::app::history_search::HistorySearch;
use crate::app::keymap::{command_for, KeyCommand, DOUBLE_PRESS, QUIT_CONFIRM};
use crate::app::menu::{ActionMenu, Overlay};
use crate::app::transcript::{CellBody, CellId};
use crate::orchestrator::Command;
use crate::provider::Interjection;
use crate::sanitize::untrusted_owned;

/// Lines a mouse wheel notch scrolls.
const WHEEL_LINES: isize = 3;

impl AppState {
    /// A key, with no clock: a quit confirmation then stays armed until the next key.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<AppEffect> {
        self.handle_key(key, None)
    }

    /// A key at `now` (the event loop's entry point: a quit confirmation expires).
    pub fn on_key_at(&mut self, key: KeyEvent, now: Instant) -> Vec<AppEffect> {
        self.handle_key(key, Some(now))
    }

    fn handle_key(&mut self, key: KeyEvent, now: Option<Instant>) -> Vec<AppEffect> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let command = command_for(key);
        if command != Some(KeyCommand::Interrupt) {
            self.quit_armed = false;
            self.quit_armed_until = None;
        }
        if let Some(command) = command.filter(|command| command.acts_over_overlays()) {
            return self.run_key_command(command, now);
        }
        if self.overlay.is_some() {
            return self.on_overlay_key(key, now);
        }
        // An open permission prompt comes after the chat's chords (help, menu, ...). It takes
        // only its focus key until the user gives it the focus; focused, it takes the keys it
        // answers to (Esc rejects rather than stopping the turn). Every other key is typing
        // and goes to the composer, whatever the pauses.
        if !self.permission_prompts.is_empty() {
            if let Some(command) = command {
                return self.run_key_command(command, now);
            }
            if let Some(effects) = self.on_permission_key(key, now) {
                return effects;
            }
            // No completion popup over a prompt: Tab is the prompt's focus key.
            self.popup = None;
            return self.on_chat_key(key);
        }
        if let Some(effects) = self.on_popup_key(key) {
            return effects;
        }
        let mut effects = match command {
            Some(command) => self.run_key_command(command, now),
            None => match self.esc_esc_rewind(key, now) {
                Some(effects) => effects,
                None => self.on_chat_key(key),
            },
        };
        if self.overlay.is_none() {
            effects.extend(self.refresh_popup());
        }
        effects
    }

    /// A chord of the keymap.
    fn run_key_command(&mut self, command: KeyCommand, now: Option<Instant>) -> Vec<AppEffect> {
        match command {
            KeyCommand::Interrupt => self.on_ctrl_c(now),
            KeyCommand::Suspend => vec![AppEffect::Suspend],
            KeyCommand::OpenMenu => self.open_overlay(Overlay::Menu(ActionMenu::default())),
            KeyCommand::SearchHistory => {
                self.open_overlay(Overlay::HistorySearch(HistorySearch::default()))
            }
            KeyCommand::EditPrompt => self.edit_prompt_in_editor(),
            KeyCommand::Run(action) => self.perform(action, None),
        }
    }

    /// A key for the transcript or the composer: Esc, scrolling, sending, history, editing.
    fn on_chat_key(&mut self, key: KeyEvent) -> Vec<AppEffect> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Esc => {
                if self.is_turn_running() || self.prompt_in_flight.is_some() {
                    self.request_stop()
                } else {
                    Vec::new()
                }
            }
            KeyCode::Up if alt => self.pull_back_last_queued(),
            KeyCode::PageUp => self.scrolled(ScrollAction::PageUp),
            KeyCode::PageDown => self.scrolled(ScrollAction::PageDown),
            KeyCode::Home if ctrl || self.composer.is_empty() => self.scrolled(ScrollAction::Top),
            KeyCode::End if ctrl || self.composer.is_empty() => self.scrolled(ScrollAction::Bottom),
            // pi's keys while a turn runs: Alt+Enter queues a follow-up, Enter steers.
            KeyCode::Enter if alt && self.can_steer() => {
                self.submit_as(Some(Interjection::FollowUp))
            }
            KeyCode::Enter if shift || alt => {
                self.composer.insert_newline();
                Vec::new()
            }
            KeyCode::Enter if !ctrl && self.can_steer() => {
                self.submit_as(Some(Interjection::Steer))
            }
            KeyCode::Enter if !ctrl => self.submit(),
            KeyCode::Up if !ctrl && self.composer.browsing_allowed() => {
                self.composer.recall_older();
                self.keep_popup_closed_for_recalled();
                Vec::new()
            }
            KeyCode::Down if !ctrl && !alt && self.composer.browsing_allowed() => {
                self.composer.recall_newer();
                self.keep_popup_closed_for_recalled();
                Vec::new()
            }
            // Ctrl+D on an empty prompt leaves, as in a shell (the same path as /quit); on text it
            // deletes the character under the cursor.
            KeyCode::Char('d') if ctrl && !alt && self.composer.is_empty() => {
                self.perform(Action::Quit, None)
            }
            // Shift+Tab: the agent's next mode, or thinking level.
            KeyCode::BackTab => self.cycle_mode_or_thinking_level(),
            // Tab with no popup: nothing to complete (no tab characters in prompts).
            KeyCode::Tab => Vec::new(),
            // Ctrl+V: the image path before the cursor becomes an attachment.
            KeyCode::Char('v') if ctrl && !alt => self.attach_path_before_cursor(),
            _ => {
                self.composer.input(key);
                Vec::new()
            }
        }
    }

    /// A paste: typing (never an answer to a permission prompt).
    pub fn on_paste(&mut self, text: &str) -> Vec<AppEffect> {
        self.paste(text)
    }

    /// A recalled prompt is not being typed: an `@path` at its end opens no popup (which would
    /// take Up and Down from the history walk).
    fn keep_popup_closed_for_recalled(&mut self) {
        self.popup = None;
        self.popup_dismissed_for = Some(self.composer.text());
    }

    fn paste(&mut self, text: &str) -> Vec<AppEffect> {
        if self.overlay.is_some() || self.paste_feedback(text) {
            return Vec::new();
        }
        // Never an answer: pasted text goes to the composer, whatever the prompt's state.
        // One path to an image file: an attachment (the text comes back if it is none).
        if let Some(effects) = self.pasted_image(&untrusted_owned(text)) {
            return effects;
        }
        // Pasted text is the user's own, but a stray escape sequence in it would still reach
        // the terminal when the input is drawn.
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        self.composer.paste(&untrusted_owned(&text));
        // A pasted `@path` or `/command` is not being typed: no popup for it.
        self.popup = None;
        self.popup_dismissed_for = Some(self.composer.text());
        Vec::new()
    }

    pub(crate) fn on_mouse_wheel(&mut self, up: bool) -> Vec<AppEffect> {
        self.scrolled(ScrollAction::Lines(if up {
            -WHEEL_LINES
        } else {
            WHEEL_LINES
        }))
    }

    /// Scrolls the transcript; nothing for the event loop to do.
    pub(super) fn scrolled(&mut self, action: ScrollAction) -> Vec<AppEffect> {
        self.scroll_transcript(action);
        Vec::new()
    }

    /// Shows or folds the steps of the plan pinned above the input (its key, or a click on it);
    /// the choice holds for the next turns' plans.
    pub fn toggle_plan(&mut self) -> Vec<AppEffect> {
        self.plan_folded = !self.plan_folded;
        Vec::new()
    }

    /// Toggles a cell's collapsed/expanded form (a click on it).
    pub fn toggle_cell(&mut self, id: CellId) -> bool {
        let expandable = self
            .transcript
            .get(id)
            .is_some_and(|cell| cell.body.is_expandable());
        if !expandable {
            return false;
        }
        self.transcript.restyle(id, |body| match body {
            CellBody::Thought(thought) => thought.expanded = !thought.expanded,
            CellBody::Tool(tool) => tool.expanded = !tool.expanded,
            CellBody::Notice(notice) => notice.expanded = !notice.expanded,
            CellBody::Permission(permission) => permission.expanded = !permission.expanded,
            CellBody::Plan(plan) => plan.expanded = !plan.expanded,
            CellBody::Changes(changes) => changes.expanded = !changes.expanded,
            CellBody::User(user) => user.expanded = !user.expanded,
            CellBody::Assistant(_) => {}
        });
        true
    }

    /// Ctrl+C: a second one soon after the first quits, whatever the chat is doing (within
    /// [`DOUBLE_PRESS`], or [`QUIT_CONFIRM`] on an idle chat where the first did nothing else;
    /// with no clock, until another key). The first clears the prompt (Up brings it back), else
    /// stops the running turn, else only arms the quit.
    fn on_ctrl_c(&mut self, now: Option<Instant>) -> Vec<AppEffect> {
        self.overlay = None;
        self.popup = None;
        if self.quitting || self.quit_armed {
            // Asked again while leaving: the way out stops waiting for the agent (and kills
            // it).
            return vec![AppEffect::Leave];
        }
        let (effects, window) = if !self.composer.is_empty() {
            let draft = self.composer.take();
            self.composer.remember(&draft);
            (Vec::new(), DOUBLE_PRESS)
        } else if self.is_turn_running() {
            (self.request_stop(), DOUBLE_PRESS)
        } else {
            (Vec::new(), QUIT_CONFIRM)
        };
        self.quit_armed = true;
        self.quit_armed_until = now.map(|now| now + window);
        effects
    }

    /// Alt+Up: the last queued prompt back into the editor (any draft comes back after it).
    fn pull_back_last_queued(&mut self) -> Vec<AppEffect> {
        let Some(prompt) = self.queued.pop() else {
            return Vec::new();
        };
        let index = self.queued.len();
        // A draft waits its turn after the prompt rather than merging into it.
        self.composer.bring_back(vec![prompt.into_string()]);
        vec![AppEffect::Command(Command::RemoveQueued(index))]
    }
}
