//! `/permissions`' picker of the agent's modes (how much it may do without asking): the current
//! one marked, the most permissive ones (which Shift+Tab never steps to) marked as such. Enter
//! switches; on a most permissive mode the picker first asks, naming what the mode allows, and
//! only `y` switches: Enter, `n` and Esc keep the current mode. The modes are the agent's, read
//! from the state each time; the picker keeps the selection and whether it asks.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent};

use super::agent_status::{AgentValue, ShownMode};
use super::list::ListSelection;
use super::pane::{OverlayPane, Step};

/// The picker's selection, and whether it is asking before a most permissive mode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModePicker {
    pub(crate) selected: usize,
    /// The selected mode is a most permissive one, and the picker asks before switching to it.
    pub(crate) confirming: bool,
}

impl ModePicker {
    /// A picker on the current mode (`current`, its id).
    pub(crate) fn new(modes: &[ShownMode], current: Option<&AgentValue>) -> Self {
        let selected = current
            .and_then(|current| modes.iter().position(|mode| mode.id == *current))
            .unwrap_or(0);
        Self {
            selected,
            confirming: false,
        }
    }
}

impl OverlayPane for ModePicker {
    type Input<'a> = &'a [ShownMode];
    /// The mode chosen (its id, the agent's own text).
    type Request = String;

    fn on_key(
        &mut self,
        key: KeyEvent,
        _now: Option<Instant>,
        modes: Self::Input<'_>,
    ) -> Step<String> {
        let Some(mode) = modes.get(self.selected.min(modes.len().saturating_sub(1))) else {
            return match key.code {
                KeyCode::Esc | KeyCode::Enter => Step::Close,
                _ => Step::Open,
            };
        };
        if self.confirming {
            // Only `y` switches to a most permissive mode; anything else keeps the current one.
            return match key.code {
                KeyCode::Char('y') => Step::Done(mode.id.raw().to_owned()),
                KeyCode::Char('n') | KeyCode::Esc | KeyCode::Enter => {
                    self.confirming = false;
                    Step::Open
                }
                _ => Step::Open,
            };
        }
        match key.code {
            KeyCode::Esc => Step::Close,
            KeyCode::Enter if mode.most_permissive.is_some() => {
                self.confirming = true;
                Step::Open
            }
            KeyCode::Enter => Step::Done(mode.id.raw().to_owned()),
            _ => {
                let mut list = ListSelection::at(self.selected);
                list.on_key(key, modes.len());
                self.selected = list.selected;
                Step::Open
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ModeChoice;
    use crossterm::event::KeyModifiers;

    fn modes() -> Vec<ShownMode> {
        [
            ("default", None),
            ("autoEdit", None),
            ("yolo", Some("every tool runs unasked")),
        ]
        .into_iter()
        .map(|(id, permissive)| {
            ShownMode::from(ModeChoice {
                id: id.into(),
                name: id.into(),
                most_permissive: permissive.map(str::to_owned),
            })
        })
        .collect()
    }

    fn press(picker: &mut ModePicker, code: KeyCode) -> Step<String> {
        picker.on_key(KeyEvent::new(code, KeyModifiers::NONE), None, &modes())
    }

    #[test]
    fn a_most_permissive_mode_takes_an_explicit_yes_and_enter_means_no() {
        let modes = modes();
        let mut picker = ModePicker::new(&modes, Some(&AgentValue::new("default".into())));
        assert_eq!(press(&mut picker, KeyCode::Down), Step::Open);
        assert_eq!(
            press(&mut picker, KeyCode::Enter),
            Step::Done("autoEdit".into())
        );
        let mut picker = ModePicker::new(&modes, None);
        press(&mut picker, KeyCode::End);
        assert_eq!(press(&mut picker, KeyCode::Enter), Step::Open);
        assert!(picker.confirming);
        // Enter again is not a yes: it keeps the current mode.
        assert_eq!(press(&mut picker, KeyCode::Enter), Step::Open);
        assert!(!picker.confirming);
        press(&mut picker, KeyCode::Enter);
        assert_eq!(press(&mut picker, KeyCode::Char('x')), Step::Open);
        assert_eq!(
            press(&mut picker, KeyCode::Char('y')),
            Step::Done("yolo".into())
        );
    }
}
