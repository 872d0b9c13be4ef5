//! `/provider`: the built-in providers, the current one marked; Enter switches.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent};

use super::list::ListSelection;
use super::pane::{OverlayPane, Step};
use crate::provider::PROVIDER_NAMES;

/// The picker and its selection (an index into `PROVIDER_NAMES`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderPicker {
    pub(crate) selected: usize,
}

impl ProviderPicker {
    /// The picker with `current` selected.
    pub(crate) fn new(current: &str) -> Self {
        Self {
            selected: PROVIDER_NAMES
                .iter()
                .position(|name| *name == current)
                .unwrap_or(0),
        }
    }
}

impl OverlayPane for ProviderPicker {
    type Input<'a> = ();
    /// The provider to switch to.
    type Request = &'static str;

    fn on_key(&mut self, key: KeyEvent, _now: Option<Instant>, _input: ()) -> Step<&'static str> {
        let count = PROVIDER_NAMES.len();
        match key.code {
            KeyCode::Esc => Step::Close,
            KeyCode::Enter => Step::Done(PROVIDER_NAMES[self.selected.min(count - 1)]),
            _ => {
                let mut list = ListSelection::at(self.selected);
                list.on_key(key, count);
                self.selected = list.selected;
                Step::Open
            }
        }
    }
}
