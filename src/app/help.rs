//! F1: the key help (its rows are the keymap's, [`super::keymap::help`]), scrolled.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent};

use super::keymap::help_len;
use super::list::scroll_key;
use super::pane::{OverlayPane, Step};

/// The help and how far it is scrolled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyHelp {
    /// The first row shown.
    pub(crate) scroll: usize,
    /// The largest useful `scroll` at the size last drawn (only the view knows how the help
    /// wraps; the chat passes it in after each frame, see `AppState::on_drawn`), so End and Up
    /// stay in step with what is shown.
    limit: usize,
}

impl Default for KeyHelp {
    fn default() -> Self {
        Self {
            scroll: 0,
            limit: usize::MAX,
        }
    }
}

impl KeyHelp {
    /// The frame just drawn could scroll the help down to `limit`.
    pub(crate) fn laid_out(&mut self, limit: usize) {
        self.limit = limit;
    }
}

impl OverlayPane for KeyHelp {
    type Input<'a> = ();
    type Request = ();

    /// Scrolling keys scroll it; Esc, Enter, F1 and q close it.
    fn on_key(&mut self, key: KeyEvent, _now: Option<Instant>, _input: ()) -> Step<()> {
        if matches!(
            key.code,
            KeyCode::Esc | KeyCode::Enter | KeyCode::F(1) | KeyCode::Char('q')
        ) {
            return Step::Close;
        }
        // Before the first frame the limit is unknown: a help row wraps to a few at most.
        let limit = self.limit.min(help_len() * 4);
        let scroll = self.scroll.min(limit);
        self.scroll = scroll_key(key, scroll, limit + 1).unwrap_or(scroll);
        Step::Open
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn press(help: &mut KeyHelp, code: KeyCode) -> Step<()> {
        help.on_key(KeyEvent::new(code, KeyModifiers::NONE), None, ())
    }

    #[test]
    fn scrolls_within_the_limit_last_drawn_and_closes() {
        let mut help = KeyHelp::default();
        help.laid_out(7);
        assert_eq!(press(&mut help, KeyCode::End), Step::Open);
        assert_eq!(help.scroll, 7);
        // A larger screen: the old offset is past the new limit; one Up moves at once.
        help.laid_out(3);
        press(&mut help, KeyCode::Up);
        assert_eq!(help.scroll, 2);
        assert_eq!(press(&mut help, KeyCode::Char('q')), Step::Close);
        assert_eq!(press(&mut help, KeyCode::F(1)), Step::Close);
    }
}
