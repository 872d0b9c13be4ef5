//! The prompt input: a multi-line tui-textarea plus the history of sent prompts.
//!
//! History recall only happens from an empty input, or while the input still shows the entry
//! last recalled, so Up/Down never throw away something the user typed. Editing keys are
//! readline's (tui-textarea's emacs set), except that Ctrl+U deletes to the line start as in a
//! shell rather than undoing. Drawing (with soft wrapping) lives in `view::composer`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tui_textarea::TextArea;

/// Prompts kept for Up/Down and Ctrl+R (also the bound of the history file).
pub(crate) const MAX_HISTORY: usize = 500;

pub struct Composer {
    textarea: TextArea<'static>,
    history: Vec<String>,
    /// The history index shown now, and the text it put in the input.
    recalled: Option<(usize, String)>,
}

impl Default for Composer {
    fn default() -> Self {
        Self::new()
    }
}

impl Composer {
    pub fn new() -> Self {
        Self {
            textarea: fresh_textarea(),
            history: Vec::new(),
            recalled: None,
        }
    }

    pub fn lines(&self) -> &[String] {
        self.textarea.lines()
    }

    /// The cursor: (line, column in chars).
    pub fn cursor(&self) -> (usize, usize) {
        self.textarea.cursor()
    }

    /// The text of the cursor's line before the cursor.
    pub(crate) fn before_cursor(&self) -> String {
        let (line, column) = self.cursor();
        self.lines()
            .get(line)
            .map(|text| text.chars().take(column).collect())
            .unwrap_or_default()
    }

    /// Replaces the `count` characters before the cursor with `text`.
    pub(crate) fn replace_before_cursor(&mut self, count: usize, text: &str) {
        for _ in 0..count {
            self.textarea.delete_char();
        }
        self.textarea.insert_str(text);
    }

    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// Starts with these earlier prompts (oldest first), e.g. from the history file.
    pub fn load_history(&mut self, prompts: Vec<String>) {
        self.history = prompts;
        self.trim_history();
    }

    fn trim_history(&mut self) {
        if self.history.len() > MAX_HISTORY {
            let excess = self.history.len() - MAX_HISTORY;
            self.history.drain(..excess);
        }
    }

    pub fn text(&self) -> String {
        self.textarea.lines().join("\n")
    }

    pub fn is_empty(&self) -> bool {
        self.textarea.lines().iter().all(|line| line.is_empty())
    }

    pub(crate) fn line_count(&self) -> usize {
        self.textarea.lines().len()
    }

    /// Empties the input and returns what it held.
    pub fn take(&mut self) -> String {
        let text = self.text();
        self.set_text("");
        text
    }

    pub fn set_text(&mut self, text: &str) {
        self.textarea = fresh_textarea();
        self.textarea.insert_str(text);
        self.recalled = None;
    }

    /// An ordinary key for the text area.
    pub fn input(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            // Readline and shells: delete to the line start (tui-textarea would undo).
            KeyCode::Char('u') if ctrl => {
                self.textarea.delete_line_by_head();
            }
            // Readline's undo is Ctrl+_ (terminals send it for Ctrl+/ and Ctrl+7 as well).
            KeyCode::Char('_' | '/' | '7') if ctrl => {
                self.textarea.undo();
            }
            _ => {
                self.textarea.input(key);
            }
        }
    }

    pub(crate) fn insert_newline(&mut self) {
        self.textarea.insert_newline();
    }

    pub(crate) fn insert_str(&mut self, text: &str) {
        self.textarea.insert_str(text);
    }

    /// Adds a sent prompt to the history (consecutive duplicates once).
    pub fn remember(&mut self, prompt: &str) {
        if prompt.trim().is_empty() || self.history.last().map(String::as_str) == Some(prompt) {
            return;
        }
        self.history.push(prompt.to_owned());
        self.trim_history();
    }

    /// Whether Up/Down should browse the history rather than move the cursor.
    pub(crate) fn browsing_allowed(&self) -> bool {
        match &self.recalled {
            Some((_, shown)) => *shown == self.text(),
            None => self.is_empty(),
        }
    }

    /// Shows the previous (older) prompt; false when there is none.
    pub(crate) fn recall_older(&mut self) -> bool {
        if !self.browsing_allowed() || self.history.is_empty() {
            return false;
        }
        let index = match &self.recalled {
            Some((0, _)) => return false,
            Some((index, _)) => index - 1,
            None => self.history.len() - 1,
        };
        self.show_recalled(index);
        true
    }

    /// Shows the next (newer) prompt, or an empty input after the newest.
    pub(crate) fn recall_newer(&mut self) -> bool {
        if !self.browsing_allowed() {
            return false;
        }
        match self.recalled.clone() {
            Some((index, _)) if index + 1 < self.history.len() => {
                self.show_recalled(index + 1);
                true
            }
            Some(_) => {
                self.set_text("");
                true
            }
            None => false,
        }
    }

    fn show_recalled(&mut self, index: usize) {
        let text = self.history[index].clone();
        self.set_text(&text);
        self.recalled = Some((index, text));
    }
}

/// The editing buffer (tui-textarea only edits here: `view::composer` draws the text).
fn fresh_textarea() -> TextArea<'static> {
    TextArea::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_recall_from_empty_input_only() {
        let mut composer = Composer::new();
        composer.remember("first");
        composer.remember("second");
        assert!(composer.recall_older());
        assert_eq!(composer.text(), "second");
        assert!(composer.recall_older());
        assert_eq!(composer.text(), "first");
        assert!(!composer.recall_older());
        assert!(composer.recall_newer());
        assert_eq!(composer.text(), "second");
        assert!(composer.recall_newer());
        assert_eq!(composer.text(), "");

        composer.set_text("typed");
        assert!(!composer.recall_older(), "typed text is never replaced");
        assert_eq!(composer.text(), "typed");
    }

    #[test]
    fn readline_keys_edit_the_line() {
        let mut composer = Composer::new();
        composer.insert_str("hello brave world");
        let ctrl = |ch| KeyEvent::new(KeyCode::Char(ch), KeyModifiers::CONTROL);
        let alt = |ch| KeyEvent::new(KeyCode::Char(ch), KeyModifiers::ALT);
        composer.input(alt('b'));
        composer.input(ctrl('k'));
        assert_eq!(composer.text(), "hello brave ");
        composer.input(ctrl('a'));
        composer.input(alt('d'));
        assert_eq!(composer.text(), " brave ");
        composer.input(ctrl('e'));
        composer.input(ctrl('w'));
        assert_eq!(composer.text(), " ");
        composer.insert_str("tail");
        composer.input(ctrl('b'));
        composer.input(ctrl('u'));
        assert_eq!(composer.text(), "l", "Ctrl+U deletes to the line start");
        composer.input(ctrl('y'));
        assert_eq!(composer.text(), " tail", "Ctrl+Y yanks what was deleted");
        composer.input(ctrl('_'));
        assert_eq!(composer.text(), "l", "Ctrl+_ undoes the yank");
    }

    #[test]
    fn history_is_bounded() {
        let mut composer = Composer::new();
        composer.load_history((0..MAX_HISTORY + 10).map(|n| n.to_string()).collect());
        assert_eq!(composer.history().len(), MAX_HISTORY);
        assert_eq!(composer.history()[0], "10");
        composer.remember("new");
        assert_eq!(composer.history().len(), MAX_HISTORY);
        assert_eq!(composer.history().last().unwrap(), "new");
    }

    #[test]
    fn multi_line_text_round_trips() {
        let mut composer = Composer::new();
        composer.insert_str("a");
        composer.insert_newline();
        composer.insert_str("b");
        assert_eq!(composer.line_count(), 2);
        assert_eq!(composer.take(), "a\nb");
        assert!(composer.is_empty());
    }
}
