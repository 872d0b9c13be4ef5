//! The `/resume` picker: this directory's conversations, newest first, filtered as the user types.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent};

use super::list::filter_key;
use super::pane::{OverlayPane, Step};
use super::transcript::InertText;
use crate::session_log::ConversationSummary;

#[derive(Debug, Clone, PartialEq)]
pub struct ConversationPicker {
    pub(crate) conversations: Vec<ListedConversation>,
    /// Typed text: a conversation is shown when one of its prompts, its provider or id contains
    /// it.
    pub(crate) filter: InertText,
    /// Index into [`ConversationPicker::visible`].
    pub(crate) selected: usize,
    /// The conversation the chat is in now (marked, and not reopened).
    pub(crate) current: Option<String>,
    /// When the list was read, against which the view tells each conversation's age.
    pub(crate) listed: WallClock,
}

/// A conversation as the picker lists it: what it shows of the log made inert once, as it is
/// listed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ListedConversation {
    pub(crate) summary: ConversationSummary,
    /// The first line of its first prompt.
    pub(crate) first_line: InertText,
    pub(crate) provider: InertText,
}

impl From<ConversationSummary> for ListedConversation {
    fn from(summary: ConversationSummary) -> Self {
        Self {
            first_line: InertText::new(summary.first_prompt.lines().next().unwrap_or("")),
            provider: InertText::new(&summary.provider),
            summary,
        }
    }
}

/// The wall-clock time (ms since the epoch) at one instant: a later "now" (an `Instant`, as
/// every reducer and frame gets) reads as wall time without reading the clock again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct WallClock {
    pub(crate) ms: u64,
    pub(crate) at: Instant,
}

impl WallClock {
    pub(crate) fn ms_at(&self, now: Instant) -> u64 {
        let since = now.saturating_duration_since(self.at).as_millis();
        self.ms
            .saturating_add(u64::try_from(since).unwrap_or(u64::MAX))
    }
}

impl ConversationPicker {
    pub(crate) fn new(
        conversations: Vec<ConversationSummary>,
        current: Option<String>,
        listed: WallClock,
    ) -> Self {
        Self {
            conversations: conversations.into_iter().map(Into::into).collect(),
            filter: InertText::default(),
            selected: 0,
            current,
            listed,
        }
    }

    pub(crate) fn visible(&self) -> Vec<&ListedConversation> {
        let filter = self.filter.to_lowercase();
        self.conversations
            .iter()
            .filter(|listed| {
                let summary = &listed.summary;
                filter.is_empty()
                    || std::iter::once(&summary.first_prompt)
                        .chain(&summary.later_prompts)
                        .any(|prompt| prompt.to_lowercase().contains(&filter))
                    || summary.provider.to_lowercase().contains(&filter)
                    || summary.id.starts_with(&filter)
            })
            .collect()
    }
}

impl OverlayPane for ConversationPicker {
    type Input<'a> = ();
    type Request = Box<ConversationSummary>;

    fn on_key(&mut self, key: KeyEvent, _now: Option<Instant>, _input: ()) -> Step<Self::Request> {
        let count = self.visible().len();
        match key.code {
            KeyCode::Esc => return Step::Close,
            KeyCode::Enter => {
                return match self.visible().get(self.selected) {
                    Some(listed) => Step::Done(Box::new(listed.summary.clone())),
                    None => Step::Open,
                }
            }
            _ => filter_key(&mut self.filter, &mut self.selected, key, count),
        }
        Step::Open
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    /// A conversation of one turn, for tests.
    pub(in crate::app) fn summary(id: &str, provider: &str, prompt: &str) -> ConversationSummary {
        ConversationSummary {
            path: format!("/s/{id}.jsonl").into(),
            id: id.into(),
            first_prompt: prompt.into(),
            ..crate::session_log::tests_summary(provider)
        }
    }

    /// The picker over `conversations`, listed at 0 ms (now).
    pub(in crate::app) fn picker(conversations: Vec<ConversationSummary>) -> ConversationPicker {
        let listed = WallClock {
            ms: 0,
            at: Instant::now(),
        };
        ConversationPicker::new(conversations, None, listed)
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn type_in(picker: &mut ConversationPicker, text: &str) {
        for typed in text.chars() {
            picker.on_key(key(KeyCode::Char(typed)), None, ());
        }
    }

    /// The ids of the conversations the picker shows.
    fn shown(picker: &ConversationPicker) -> Vec<String> {
        let visible = picker.visible();
        visible
            .iter()
            .map(|listed| listed.summary.id.clone())
            .collect()
    }

    #[test]
    fn the_wall_clock_moves_with_the_instant_it_is_read_at() {
        let at = Instant::now();
        let listed = WallClock { ms: 5_000, at };
        assert_eq!(listed.ms_at(at), 5_000);
        assert_eq!(
            listed.ms_at(at + std::time::Duration::from_secs(90)),
            95_000
        );
        // An instant before the list was read is the moment it was read.
        assert_eq!(
            listed.ms_at(at.checked_sub(std::time::Duration::from_secs(1)).unwrap()),
            5_000
        );
    }

    #[test]
    fn typing_filters_arrows_move_and_enter_chooses() {
        let mut picker = picker(vec![
            summary("aaa", "pi", "Fix the parser"),
            summary("bbb", "claude", "Write tests"),
            summary("ccc", "pi", "Parser docs"),
        ]);
        assert_eq!(picker.visible().len(), 3);
        type_in(&mut picker, "parser");
        assert_eq!(shown(&picker), ["aaa", "ccc"]);
        picker.on_key(key(KeyCode::Down), None, ());
        assert_eq!(
            picker.on_key(key(KeyCode::Enter), None, ()),
            Step::Done(Box::new(summary("ccc", "pi", "Parser docs")))
        );
        picker.on_key(key(KeyCode::Down), None, ());
        assert_eq!(picker.selected, 0, "wraps around");
        for _ in 0..6 {
            picker.on_key(key(KeyCode::Backspace), None, ());
        }
        type_in(&mut picker, "cl");
        assert_eq!(picker.visible().len(), 1, "matches the provider");
        assert_eq!(picker.on_key(key(KeyCode::Esc), None, ()), Step::Close);
    }

    #[test]
    fn the_filter_finds_a_conversation_by_any_of_its_prompts() {
        let mut later = summary("ddd", "pi", "Fix the parser");
        later.later_prompts = vec!["now the lexer".into(), "and the tokenizer".into()];
        let mut picker = picker(vec![summary("aaa", "pi", "Write tests"), later]);
        type_in(&mut picker, "tokenizer");
        assert_eq!(shown(&picker), ["ddd"]);
    }
}
