//! One list selection for every menu, picker and popup: up/down wrap around, Ctrl+P/N and
//! Tab/Shift+Tab as well, PgUp/PgDn move a page, Home/End jump. Drawing (with the selected row
//! kept in view) is `view::list`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::inert::InertText;

/// Rows a page key moves.
pub(crate) const PAGE: usize = 8;

/// A selected row in a list of `count` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ListSelection {
    pub(crate) selected: usize,
}

impl ListSelection {
    pub(crate) fn at(selected: usize) -> Self {
        Self { selected }
    }

    /// Moves for a navigation key; false if the key is not one (the caller handles it).
    pub(crate) fn on_key(&mut self, key: KeyEvent, count: usize) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if count == 0 {
            return false;
        }
        let last = count - 1;
        let current = self.selected.min(last);
        self.selected = match key.code {
            KeyCode::Up | KeyCode::BackTab => current.checked_sub(1).unwrap_or(last),
            KeyCode::Char('p') if ctrl => current.checked_sub(1).unwrap_or(last),
            KeyCode::Down | KeyCode::Tab => (current + 1) % count,
            KeyCode::Char('n') if ctrl => (current + 1) % count,
            KeyCode::PageUp => current.saturating_sub(PAGE),
            KeyCode::PageDown => (current + PAGE).min(last),
            KeyCode::Home => 0,
            KeyCode::End => last,
            _ => return false,
        };
        true
    }
}

/// A key on a list filtered by what is typed: Backspace and plain characters edit `query` (and
/// select the first match again), any other key moves `selected` among the `count` matches.
pub(crate) fn filter_key(query: &mut InertText, selected: &mut usize, key: KeyEvent, count: usize) {
    match key.code {
        KeyCode::Backspace => {
            query.pop();
            *selected = 0;
        }
        KeyCode::Char(ch)
            if !key
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
        {
            query.push_str(ch.encode_utf8(&mut [0; 4]));
            *selected = 0;
        }
        _ => {
            let mut list = ListSelection::at(*selected);
            list.on_key(key, count);
            *selected = list.selected;
        }
    }
}

/// A scroll offset into `count` rows moved by a scrolling key (help and other text overlays);
/// None if the key does not scroll. The view clamps the offset to what fits.
pub(crate) fn scroll_key(key: KeyEvent, offset: usize, count: usize) -> Option<usize> {
    let last = count.saturating_sub(1);
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    Some(match key.code {
        KeyCode::Up | KeyCode::Char('k') => offset.saturating_sub(1),
        KeyCode::Char('p') if ctrl => offset.saturating_sub(1),
        KeyCode::Down | KeyCode::Char('j') => (offset + 1).min(last),
        KeyCode::Char('n') if ctrl => (offset + 1).min(last),
        KeyCode::PageUp => offset.saturating_sub(PAGE),
        KeyCode::PageDown | KeyCode::Char(' ') => (offset + PAGE).min(last),
        KeyCode::Home | KeyCode::Char('g') => 0,
        KeyCode::End | KeyCode::Char('G') => last,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn selection_wraps_and_pages() {
        let mut list = ListSelection::default();
        assert!(list.on_key(press(KeyCode::Up), 5));
        assert_eq!(list.selected, 4);
        assert!(list.on_key(press(KeyCode::Down), 5));
        assert_eq!(list.selected, 0);
        assert!(list.on_key(press(KeyCode::PageDown), 20));
        assert_eq!(list.selected, PAGE);
        assert!(list.on_key(press(KeyCode::End), 20));
        assert_eq!(list.selected, 19);
        assert!(!list.on_key(press(KeyCode::Char('x')), 20));
        assert!(!list.on_key(press(KeyCode::Down), 0));
    }

    #[test]
    fn scrolling_stays_in_range() {
        assert_eq!(scroll_key(press(KeyCode::Up), 0, 10), Some(0));
        assert_eq!(scroll_key(press(KeyCode::End), 0, 10), Some(9));
        assert_eq!(scroll_key(press(KeyCode::PageDown), 5, 10), Some(9));
        assert_eq!(scroll_key(press(KeyCode::Enter), 5, 10), None);
    }
}
