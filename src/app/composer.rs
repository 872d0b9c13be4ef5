//! The prompt input: a multi-line tui-textarea plus the history of sent prompts.
//!
//! History recall only happens from an empty input, or while the input still shows the entry
//! last recalled, so Up/Down never throw away something the user typed. Editing keys are
//! readline's (tui-textarea's emacs set), except that Ctrl+U deletes to the line start as in a
//! shell rather than undoing, Ctrl+J inserts a new line (tui-textarea: kill-line) and Alt+F
//! stops at the end of the word. Drawing (with soft wrapping) lives in `view::composer`.
//!
//! tui-textarea edits by `char`; the cursor keys, Backspace and Delete are wrapped here so that
//! they move over and delete whole grapheme clusters (a ZWJ emoji, `e` + combining accent, a
//! skin-tone sequence), which is what the user sees as one character. Columns stay in chars
//! (tui-textarea's unit); only these keys look at graphemes, so typing costs nothing more.
//!
//! A large paste is folded: the input shows `[Pasted 200 lines]` and keeps the text aside;
//! [`Composer::expanded_text`] puts it back for sending. An attached image shows as its label
//! (`[image: shot.png 120 KB]`), which stays in the text sent; [`Composer::attached_images`]
//! are the images whose label is still there. Backspace takes a label as a whole.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tui_textarea::{CursorMove, TextArea};
use unicode_segmentation::UnicodeSegmentation;

/// Prompts kept for Up/Down and Ctrl+R (also the bound of the history file).
pub(crate) const MAX_HISTORY: usize = 500;
/// A paste with more lines than this is folded in the input.
pub(crate) const FOLD_PASTE_LINES: usize = 10;
/// A paste with more characters than this is folded in the input.
pub(crate) const FOLD_PASTE_CHARS: usize = 1000;

/// A folded paste: the label the input shows and the text it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FoldedPaste {
    label: String,
    text: String,
}

pub struct Composer {
    textarea: TextArea<'static>,
    history: Vec<String>,
    /// The history index shown now, and the text it put in the input.
    recalled: Option<(usize, String)>,
    /// Pastes folded in the input, in the order they were pasted.
    pastes: Vec<FoldedPaste>,
    /// Images attached, each with the label that stands for it in the input.
    images: Vec<(String, crate::attachment::ImageAttachment)>,
    /// Prompts waiting their turn in the editor (queued prompts brought back, one at a time).
    held: std::collections::VecDeque<String>,
    /// An unknown `/command` the user was warned about: Enter on the same text sends it.
    warned_command: Option<String>,
    /// Prompts sent with folded pastes (newest last, a few kept): the text as it was shown and
    /// its folds, so Up brings such a prompt back folded as it was typed.
    sent_folded: Vec<(String, String, Vec<FoldedPaste>)>,
}

/// Prompts whose folds [`Composer::sent_folded`] keeps.
const MAX_SENT_FOLDED: usize = 20;

impl Default for Composer {
    fn default() -> Self {
        Self::new()
    }
}

impl Composer {
    pub(crate) fn new() -> Self {
        Self {
            textarea: fresh_textarea(),
            history: Vec::new(),
            recalled: None,
            pastes: Vec::new(),
            images: Vec::new(),
            held: std::collections::VecDeque::new(),
            warned_command: None,
            sent_folded: Vec::new(),
        }
    }

    pub(crate) fn lines(&self) -> &[String] {
        self.textarea.lines()
    }

    /// The cursor: (line, column in chars).
    pub(crate) fn cursor(&self) -> (usize, usize) {
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

    /// The text with every folded paste put back: what is sent.
    pub(crate) fn expanded_text(&self) -> String {
        let mut text = self.text();
        for paste in &self.pastes {
            if let Some(at) = text.find(&paste.label) {
                text.replace_range(at..at + paste.label.len(), &paste.text);
            }
        }
        text
    }

    /// Empties the input and returns what it held (folded pastes expanded); a held prompt, if
    /// any, comes into the input next.
    pub(crate) fn take(&mut self) -> String {
        let text = self.expanded_text();
        if !self.pastes.is_empty() {
            self.sent_folded.retain(|(sent, ..)| *sent != text);
            self.sent_folded
                .push((text.clone(), self.text(), self.pastes.clone()));
            if self.sent_folded.len() > MAX_SENT_FOLDED {
                self.sent_folded.remove(0);
            }
        }
        self.set_text("");
        if let Some(next) = self.held.pop_front() {
            self.set_text(&next);
        }
        text
    }

    pub fn set_text(&mut self, text: &str) {
        self.textarea = fresh_textarea();
        self.textarea.insert_str(text);
        self.recalled = None;
        self.pastes.clear();
        self.images.clear();
    }

    /// Puts `image` in at the cursor, as its label (numbered when the same label is already
    /// there) and a space.
    pub(crate) fn attach_image(&mut self, image: crate::attachment::ImageAttachment) {
        // The file's name is drawn: inert like any text from outside.
        let base = crate::sanitize::untrusted_owned(&image.label());
        let shown = self.text();
        let label = (1..)
            .map(|n| match n {
                1 => base.clone(),
                n => format!("{} #{n}]", base.trim_end_matches(']')),
            })
            .find(|label| !shown.contains(label.as_str()))
            .unwrap_or_default();
        self.textarea.insert_str(format!("{label} "));
        self.recalled = None;
        self.images.push((label, image));
    }

    /// The images whose label is still in the input, in the order they appear.
    pub fn attached_images(&self) -> Vec<crate::attachment::ImageAttachment> {
        let text = self.text();
        let mut shown: Vec<(usize, &crate::attachment::ImageAttachment)> = self
            .images
            .iter()
            .filter_map(|(label, image)| text.find(label.as_str()).map(|at| (at, image)))
            .collect();
        shown.sort_by_key(|(at, _)| *at);
        shown.into_iter().map(|(_, image)| image.clone()).collect()
    }

    /// Prompts back into the editor one at a time: the first now, the others (then what was in
    /// the input) each after the one before is sent or cleared, so they stay separate prompts.
    pub(crate) fn bring_back(&mut self, prompts: Vec<String>) {
        let draft = self.expanded_text();
        // Not `collect()` from a partly consumed `vec::IntoIter`: Rust 1.95's in-place
        // conversion leaves an empty deque's head at its capacity, and the next pop_front
        // reads past the buffer (a segfault).
        let mut waiting = std::collections::VecDeque::from(prompts);
        let Some(first) = waiting.pop_front() else {
            return;
        };
        if !draft.trim().is_empty() {
            waiting.push_back(draft);
        }
        waiting.extend(self.held.drain(..));
        self.held = waiting;
        self.set_text(&first);
    }

    /// Prompts waiting to come into the editor after the one shown.
    pub(crate) fn held_count(&self) -> usize {
        self.held.len()
    }

    /// Whether Enter on `text`, an unknown `/command`, sends it as a message: true when the user
    /// was already warned about this very text; otherwise it remembers the warning.
    pub(crate) fn confirm_unknown_command(&mut self, text: &str) -> bool {
        if self.warned_command.as_deref() == Some(text) {
            self.warned_command = None;
            return true;
        }
        self.warned_command = Some(text.to_owned());
        false
    }

    /// Pasted text: inserted as it is, or folded as `[Pasted N lines]` when it is large.
    pub(crate) fn paste(&mut self, text: &str) {
        let lines = text.lines().count();
        let chars = text.chars().count();
        if lines <= FOLD_PASTE_LINES && chars <= FOLD_PASTE_CHARS {
            self.insert_str(text);
            return;
        }
        let base = if lines > 1 {
            format!("Pasted {lines} lines")
        } else {
            format!("Pasted {chars} characters")
        };
        let shown = self.text();
        let label = (1..)
            .map(|n| match n {
                1 => format!("[{base}]"),
                n => format!("[{base} #{n}]"),
            })
            .find(|label| !shown.contains(label.as_str()) && !text.contains(label.as_str()))
            .unwrap_or_default();
        self.textarea.insert_str(&label);
        self.pastes.push(FoldedPaste {
            label,
            text: text.to_owned(),
        });
    }

    /// An ordinary key for the text area.
    pub(crate) fn input(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            // Readline and shells: delete to the line start (tui-textarea would undo).
            KeyCode::Char('u') if ctrl => {
                self.textarea.delete_line_by_head();
            }
            // Readline's undo is Ctrl+_ (terminals send it for Ctrl+/ and Ctrl+7 as well).
            KeyCode::Char('_' | '/' | '7') if ctrl => {
                self.textarea.undo();
            }
            // A line feed is a new line (tui-textarea binds it to kill-line).
            KeyCode::Char('j') if ctrl && !alt => self.textarea.insert_newline(),
            KeyCode::Backspace if !ctrl && !alt => self.delete_back(),
            KeyCode::Char('h') if ctrl && !alt => self.delete_back(),
            KeyCode::Delete if !ctrl && !alt => self.delete_forward(),
            KeyCode::Char('d') if ctrl && !alt => self.delete_forward(),
            KeyCode::Left if !ctrl && !alt => self.step_back(),
            KeyCode::Char('b') if ctrl && !alt => self.step_back(),
            KeyCode::Right if !ctrl && !alt => self.step_forward(),
            KeyCode::Char('f') if ctrl && !alt => self.step_forward(),
            // Readline's forward-word: to the end of this word, or of the next one.
            KeyCode::Char('f') if alt && !ctrl => self.word_end(),
            KeyCode::Right if ctrl && !alt => self.word_end(),
            _ => {
                self.textarea.input(key);
            }
        }
    }

    /// The cursor's line and the byte offset of the cursor in it.
    fn cursor_line(&self) -> (&str, usize) {
        let (row, column) = self.cursor();
        let line = self.lines().get(row).map_or("", String::as_str);
        let byte = line
            .char_indices()
            .nth(column)
            .map_or(line.len(), |(byte, _)| byte);
        (line, byte)
    }

    /// Chars in the grapheme before the cursor (0 at a line start).
    fn grapheme_before(&self) -> usize {
        let (line, byte) = self.cursor_line();
        // A folded paste's label goes as a whole, and so does an image's.
        if let Some(label) = self
            .pastes
            .iter()
            .map(|paste| &paste.label)
            .chain(self.images.iter().map(|(label, _)| label))
            .find(|label| line[..byte].ends_with(label.as_str()))
        {
            return label.chars().count();
        }
        line[..byte]
            .graphemes(true)
            .next_back()
            .map_or(0, |grapheme| grapheme.chars().count())
    }

    /// Chars in the grapheme after the cursor (0 at a line end).
    fn grapheme_after(&self) -> usize {
        let (line, byte) = self.cursor_line();
        line[byte..]
            .graphemes(true)
            .next()
            .map_or(0, |grapheme| grapheme.chars().count())
    }

    fn delete_back(&mut self) {
        match self.grapheme_before() {
            0 => {
                self.textarea.delete_char();
            }
            chars => {
                for _ in 0..chars {
                    self.textarea.move_cursor(CursorMove::Back);
                }
                self.delete_chars(chars);
            }
        }
    }

    fn delete_forward(&mut self) {
        match self.grapheme_after() {
            0 => {
                self.textarea.delete_next_char();
            }
            chars => self.delete_chars(chars),
        }
    }

    /// Deletes `chars` after the cursor as one edit, leaving what Ctrl+Y yanks alone.
    fn delete_chars(&mut self, chars: usize) {
        let yank = self.textarea.yank_text();
        self.textarea.delete_str(chars);
        self.textarea.set_yank_text(yank);
    }

    fn step_back(&mut self) {
        for _ in 0..self.grapheme_before().max(1) {
            self.textarea.move_cursor(CursorMove::Back);
        }
    }

    fn step_forward(&mut self) {
        for _ in 0..self.grapheme_after().max(1) {
            self.textarea.move_cursor(CursorMove::Forward);
        }
    }

    /// Readline's forward-word: past any non-word characters, then to the end of the word (at
    /// a line end, on to the next line).
    fn word_end(&mut self) {
        let (line, byte) = self.cursor_line();
        let rest: Vec<char> = line[byte..].chars().collect();
        if rest.is_empty() {
            self.textarea.move_cursor(CursorMove::Forward);
            return;
        }
        let gap = rest.iter().take_while(|ch| !ch.is_alphanumeric()).count();
        let word = rest[gap..]
            .iter()
            .take_while(|ch| ch.is_alphanumeric())
            .count();
        for _ in 0..gap + word {
            self.textarea.move_cursor(CursorMove::Forward);
        }
    }

    pub(crate) fn insert_newline(&mut self) {
        self.textarea.insert_newline();
    }

    pub(crate) fn insert_str(&mut self, text: &str) {
        self.textarea.insert_str(text);
    }

    /// Adds a sent prompt to the history (consecutive duplicates once).
    pub(crate) fn remember(&mut self, prompt: &str) {
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

    /// Shows history entry `index` as it was typed: its pastes folded again (as they were,
    /// for a prompt sent in this run; a large prompt of an earlier run folded whole).
    fn show_recalled(&mut self, index: usize) {
        let text = self.history[index].clone();
        let folded = self
            .sent_folded
            .iter()
            .find(|(sent, ..)| *sent == text)
            .map(|(_, shown, pastes)| (shown.clone(), pastes.clone()));
        match folded {
            Some((shown, pastes)) => {
                self.set_text(&shown);
                self.pastes = pastes;
            }
            None => {
                self.set_text("");
                self.paste(&text);
            }
        }
        self.recalled = Some((index, self.text()));
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
    fn a_prompt_sent_with_a_folded_paste_comes_back_folded() {
        let mut composer = Composer::new();
        let pasted: String = (1..=200).map(|n| format!("line {n}\n")).collect();
        composer.insert_str("look: ");
        composer.paste(&pasted);
        composer.insert_str(" thanks");
        let sent = composer.take();
        assert_eq!(sent, format!("look: {pasted} thanks"));
        composer.remember(&sent);
        assert!(composer.recall_older());
        assert_eq!(composer.text(), "look: [Pasted 200 lines] thanks");
        // Sent again, it goes whole.
        assert_eq!(composer.take(), sent);
        // A large prompt of an earlier run (from the history file) comes back folded whole.
        let mut composer = Composer::new();
        composer.load_history(vec![pasted.clone(), "short".into()]);
        assert!(composer.recall_older());
        assert_eq!(composer.text(), "short");
        assert!(composer.recall_older());
        assert_eq!(composer.text(), "[Pasted 200 lines]");
        assert!(composer.recall_newer());
        assert_eq!(composer.text(), "short");
        assert!(composer.recall_older());
        assert_eq!(composer.take(), pasted);
    }

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

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn backspace_delete_and_arrows_go_by_grapheme() {
        let mut composer = Composer::new();
        // A ZWJ family, a skin-tone thumb, e + combining acute.
        composer.insert_str("A\u{1F469}\u{200D}\u{1F467}\u{1F44D}\u{1F3FD}e\u{301}");
        composer.input(key(KeyCode::Left));
        assert_eq!(composer.cursor(), (0, 6), "one step over e + accent");
        composer.input(key(KeyCode::Left));
        assert_eq!(
            composer.cursor(),
            (0, 4),
            "one step over the thumb and its tone"
        );
        composer.input(key(KeyCode::Backspace));
        assert_eq!(
            composer.text(),
            "A\u{1F44D}\u{1F3FD}e\u{301}",
            "the family goes in one Backspace"
        );
        composer.input(key(KeyCode::Delete));
        assert_eq!(composer.text(), "Ae\u{301}");
        composer.input(key(KeyCode::Right));
        assert_eq!(composer.cursor(), (0, 3));
        composer.input(key(KeyCode::Backspace));
        assert_eq!(composer.text(), "A", "the accent goes with its letter");
        // Ctrl+_ undoes a whole grapheme at once.
        composer.input(KeyEvent::new(KeyCode::Char('_'), KeyModifiers::CONTROL));
        assert_eq!(composer.text(), "Ae\u{301}");
        // Backspace at a line start joins the lines, as before.
        composer.set_text("a\nb");
        composer.input(KeyEvent::new(KeyCode::Char('a'), KeyModifiers::CONTROL));
        composer.input(key(KeyCode::Backspace));
        assert_eq!(composer.text(), "ab");
    }

    #[test]
    fn deleting_a_grapheme_keeps_what_ctrl_y_yanks() {
        let mut composer = Composer::new();
        composer.insert_str("keep word");
        composer.input(KeyEvent::new(KeyCode::Char('w'), KeyModifiers::CONTROL));
        composer.insert_str("x\u{1F44D}\u{1F3FD}");
        composer.input(key(KeyCode::Backspace));
        composer.input(KeyEvent::new(KeyCode::Char('y'), KeyModifiers::CONTROL));
        assert_eq!(composer.text(), "keep xword");
    }

    #[test]
    fn ctrl_j_is_a_new_line_and_alt_f_stops_at_the_end_of_the_word() {
        let mut composer = Composer::new();
        composer.insert_str("one two");
        composer.input(KeyEvent::new(KeyCode::Char('j'), KeyModifiers::CONTROL));
        composer.insert_str("three");
        assert_eq!(composer.text(), "one two\nthree");
        composer.set_text("hello, brave world");
        composer.input(KeyEvent::new(KeyCode::Char('a'), KeyModifiers::CONTROL));
        let alt_f = KeyEvent::new(KeyCode::Char('f'), KeyModifiers::ALT);
        composer.input(alt_f);
        assert_eq!(composer.cursor(), (0, 5), "the end of this word");
        composer.input(alt_f);
        assert_eq!(
            composer.cursor(),
            (0, 12),
            "past the gap, the end of the next"
        );
        composer.input(alt_f);
        assert_eq!(composer.cursor(), (0, 18));
        composer.input(KeyEvent::new(KeyCode::Char('b'), KeyModifiers::ALT));
        assert_eq!(composer.cursor(), (0, 13), "Alt+B: the start of the word");
    }

    #[test]
    fn a_large_paste_is_folded_and_sent_whole() {
        let mut composer = Composer::new();
        composer.insert_str("look: ");
        let big: String = (1..=200).map(|n| format!("row {n}\n")).collect();
        composer.paste(&big);
        composer.insert_str(" thanks");
        assert_eq!(composer.text(), "look: [Pasted 200 lines] thanks");
        assert_eq!(composer.expanded_text(), format!("look: {big} thanks"));
        let long_line = "x".repeat(FOLD_PASTE_CHARS + 1);
        composer.paste(&long_line);
        assert!(composer.text().ends_with("[Pasted 1001 characters]"));
        // Backspace takes a fold as a whole; small pastes are typed in.
        composer.input(key(KeyCode::Backspace));
        assert_eq!(composer.text(), "look: [Pasted 200 lines] thanks");
        composer.paste("a\nb");
        assert_eq!(composer.text(), "look: [Pasted 200 lines] thanksa\nb");
        assert_eq!(composer.take(), format!("look: {big} thanksa\nb"));
        assert!(composer.is_empty());
        // Two pastes of the same size get distinct labels.
        composer.paste(&big);
        composer.paste(&big);
        assert_eq!(composer.text(), "[Pasted 200 lines][Pasted 200 lines #2]");
        assert_eq!(composer.expanded_text(), format!("{big}{big}"));
    }

    #[test]
    fn prompts_brought_back_come_one_at_a_time_the_draft_last() {
        let mut composer = Composer::new();
        composer.insert_str("draft");
        composer.bring_back(vec!["second".into(), "third".into()]);
        assert_eq!(composer.text(), "second");
        assert_eq!(composer.held_count(), 2);
        assert_eq!(composer.take(), "second");
        assert_eq!(composer.text(), "third");
        assert_eq!(composer.take(), "third");
        assert_eq!(composer.text(), "draft");
        assert_eq!(composer.take(), "draft");
        assert!(composer.is_empty() && composer.held_count() == 0);
    }

    #[test]
    fn an_unknown_command_is_confirmed_by_enter_on_the_same_text() {
        let mut composer = Composer::new();
        assert!(!composer.confirm_unknown_command("/etc/hosts is wrong"));
        assert!(!composer.confirm_unknown_command("/etc/hosts is odd"));
        assert!(composer.confirm_unknown_command("/etc/hosts is odd"));
        assert!(
            !composer.confirm_unknown_command("/etc/hosts is odd"),
            "once"
        );
    }
}
