//! Ctrl+R: the earlier prompts matching a typed query, best first, and its keys.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent};

use super::inert::InertText;
use super::keymap::{command_for, KeyCommand};
use super::list::filter_key;
use super::pane::{OverlayPane, Step};

/// The search as typed so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistorySearch {
    pub(crate) query: InertText,
    /// Index into the matches of `query`.
    pub(crate) selected: usize,
}

/// The prompts of `history` (oldest first), newest first and each only once (where it was
/// sent last): a prompt sent three times is one match, not three.
pub(crate) fn distinct_newest_first(history: &[String]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    history
        .iter()
        .rev()
        .filter(|prompt| seen.insert(prompt.as_str()))
        .cloned()
        .collect()
}

impl OverlayPane for HistorySearch {
    type Input<'a> = &'a [String];
    type Request = String;

    /// A key; `matches` are the prompts matching the query as it was before the key.
    fn on_key(
        &mut self,
        key: KeyEvent,
        _now: Option<Instant>,
        matches: Self::Input<'_>,
    ) -> Step<Self::Request> {
        match key.code {
            KeyCode::Esc => return Step::Close,
            KeyCode::Enter | KeyCode::Tab => {
                return match matches.get(self.selected) {
                    Some(prompt) => Step::Done(prompt.clone()),
                    None => Step::Close,
                }
            }
            // The search key again: the next older match, as in a shell.
            _ if command_for(key) == Some(KeyCommand::SearchHistory) => {
                self.selected = (self.selected + 1).min(matches.len().saturating_sub(1));
            }
            _ => filter_key(&mut self.query, &mut self.selected, key, matches.len()),
        }
        Step::Open
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn press(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn typing_narrows_ctrl_r_steps_older_and_enter_chooses() {
        let matches = ["newest".to_owned(), "older".to_owned(), "oldest".to_owned()];
        let mut search = HistorySearch::default();
        let ctrl_r = press(KeyCode::Char('r'), KeyModifiers::CONTROL);
        for _ in 0..5 {
            assert_eq!(search.on_key(ctrl_r, None, &matches), Step::Open);
        }
        assert_eq!(search.selected, 2, "stops at the oldest match");
        assert_eq!(
            search.on_key(press(KeyCode::Up, KeyModifiers::NONE), None, &matches),
            Step::Open
        );
        assert_eq!(
            search.on_key(press(KeyCode::Enter, KeyModifiers::NONE), None, &matches),
            Step::Done("older".to_owned())
        );
        search.on_key(
            press(KeyCode::Char('o'), KeyModifiers::NONE),
            None,
            &matches,
        );
        assert_eq!((search.query.as_str(), search.selected), ("o", 0));
        search.on_key(
            press(KeyCode::Backspace, KeyModifiers::NONE),
            None,
            &matches,
        );
        assert_eq!(search.query, "");
        assert_eq!(
            search.on_key(press(KeyCode::Enter, KeyModifiers::NONE), None, &[]),
            Step::Close
        );
        assert_eq!(
            search.on_key(press(KeyCode::Esc, KeyModifiers::NONE), None, &matches),
            Step::Close
        );
    }

    #[test]
    fn each_prompt_is_offered_once_where_it_was_sent_last() {
        let history = ["fix it", "run the tests", "fix it", "explain", "fix it"].map(String::from);
        assert_eq!(
            distinct_newest_first(&history),
            ["fix it", "explain", "run the tests"]
        );
    }
}
