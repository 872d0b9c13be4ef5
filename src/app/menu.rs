//! The overlays stacked over the chat, which one is open and its state (one type per overlay,
//! each keeping the contract of [`super::pane`]), and the first of them: the action menu.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent};

use super::action::Action;
use super::list::ListSelection;
use super::pane::{OverlayPane, Step};

/// What sits over the chat and takes the keys.
#[derive(Debug, Clone, PartialEq)]
pub enum Overlay {
    Menu(ActionMenu),
    /// F1: the keys.
    Help(super::help::KeyHelp),
    ProviderPicker(super::provider_picker::ProviderPicker),
    Settings(super::settings::SettingsDraft),
    Conversations(super::conversation_picker::ConversationPicker),
    /// Ctrl+R: earlier prompts matching a query.
    HistorySearch(super::history_search::HistorySearch),
    /// `/model`: the agent's models.
    ModelPicker(super::model_picker::ModelPicker),
    /// `/permissions`: the agent's modes, and the question before a most permissive one.
    ModePicker(super::mode_picker::ModePicker),
    /// `/diff`: what the agent changed, scrollable.
    Diff(super::review::DiffView),
    /// `/undo` found files changed since the turn: overwrite them?
    ConfirmUndo(super::review::UndoConfirm),
    /// `/rewind`: an earlier prompt, then what to take back.
    Rewind(super::rewind::RewindPicker),
    /// A restore a crash interrupted: finish it or roll it back?
    InterruptedRestore(super::review::RestorePrompt),
}

/// The action menu: every [`Action`], in `Action::ALL`'s order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActionMenu {
    pub(crate) selected: usize,
}

impl OverlayPane for ActionMenu {
    type Input<'a> = ();
    /// The action to run.
    type Request = Action;

    /// Enter runs the selected action.
    fn on_key(&mut self, key: KeyEvent, _now: Option<Instant>, _input: ()) -> Step<Action> {
        let count = Action::ALL.len();
        match key.code {
            KeyCode::Esc => Step::Close,
            KeyCode::Enter => Step::Done(Action::ALL[self.selected.min(count - 1)]),
            _ => {
                let mut list = ListSelection::at(self.selected);
                list.on_key(key, count);
                self.selected = list.selected;
                Step::Open
            }
        }
    }
}
