//! `/model`: the models the agent reports, the current one marked, narrowed as the user types
//! (by name, id or provider, ignoring case); Enter chooses, Shift+Tab steps the thinking level of
//! the current model. The picker keeps only the query and the selection: the list is the
//! agent's, read from the state each time.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent};

use super::agent_status::{AgentValue, ShownModel};
use super::list::filter_key;
use super::pane::{OverlayPane, Step};
use super::transcript::InertText;

/// The picker as typed so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelPicker {
    pub(crate) query: InertText,
    /// Index into the matches of `query`.
    pub(crate) selected: usize,
}

/// What the picker asks of the chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ModelRequest {
    /// The model with this id (the agent's, unchanged) was chosen.
    Choose(String),
    /// The next thinking level, please (the picker stays open).
    NextThinkingLevel,
}

impl ModelPicker {
    /// A picker with the current model (`current`, its id) selected.
    pub(crate) fn new(models: &[ShownModel], current: Option<&AgentValue>) -> Self {
        let selected = current
            .and_then(|current| models.iter().position(|model| model.id == *current))
            .unwrap_or(0);
        Self {
            query: InertText::default(),
            selected,
        }
    }

    /// The models matching the query, in the agent's order.
    pub(crate) fn matches<'a>(&self, models: &'a [ShownModel]) -> Vec<&'a ShownModel> {
        let query = self.query.to_lowercase();
        models
            .iter()
            .filter(|model| {
                query.is_empty()
                    || [
                        model.name.as_str(),
                        model.id.shown().as_str(),
                        model.provider.as_deref().unwrap_or_default(),
                    ]
                    .iter()
                    .any(|field| field.to_lowercase().contains(&query))
            })
            .collect()
    }
}

impl OverlayPane for ModelPicker {
    type Input<'a> = &'a [ShownModel];
    type Request = ModelRequest;

    /// A key; `models` are the agent's.
    fn on_key(
        &mut self,
        key: KeyEvent,
        _now: Option<Instant>,
        models: Self::Input<'_>,
    ) -> Step<Self::Request> {
        let matches = self.matches(models);
        match key.code {
            KeyCode::Esc => return Step::Close,
            KeyCode::Enter => {
                return match matches.get(self.selected) {
                    // The agent's own id, as it wrote it.
                    Some(model) => Step::Done(ModelRequest::Choose(model.id.raw().to_owned())),
                    None => Step::Open,
                };
            }
            KeyCode::BackTab => return Step::Ask(ModelRequest::NextThinkingLevel),
            _ => filter_key(&mut self.query, &mut self.selected, key, matches.len()),
        }
        Step::Open
    }
}

/// The level after `current` among `levels` (the first when `current` is not one of them);
/// `None` when there are none.
pub(crate) fn next_level(levels: &[String], current: Option<&str>) -> Option<String> {
    let next = match current.and_then(|current| levels.iter().position(|level| level == current)) {
        Some(index) => (index + 1) % levels.len(),
        None => 0,
    };
    levels.get(next).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn model(id: &str, name: &str) -> ShownModel {
        ShownModel::from(crate::provider::ModelChoice {
            id: id.into(),
            name: name.into(),
            provider: Some("demo".into()),
            reasoning: false,
        })
    }

    fn press(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn typing_narrows_and_enter_chooses_by_id() {
        let models = [
            model("m-1", "Small"),
            model("m-2", "Large"),
            model("x-3", "Other"),
        ];
        let mut picker = ModelPicker::new(&models, Some(&models[1].id));
        assert_eq!(picker.selected, 1, "the current model is selected");
        for ch in "LAR".chars() {
            picker.on_key(press(KeyCode::Char(ch)), None, &models);
        }
        assert_eq!(picker.matches(&models), [&models[1]]);
        picker.on_key(press(KeyCode::Backspace), None, &models);
        picker.on_key(press(KeyCode::Backspace), None, &models);
        picker.on_key(press(KeyCode::Backspace), None, &models);
        // "m-" matches two by id; Down moves to the second.
        picker.on_key(press(KeyCode::Char('m')), None, &models);
        picker.on_key(press(KeyCode::Char('-')), None, &models);
        assert_eq!(picker.matches(&models).len(), 2);
        picker.on_key(press(KeyCode::Down), None, &models);
        assert_eq!(
            picker.on_key(press(KeyCode::Enter), None, &models),
            Step::Done(ModelRequest::Choose("m-2".into()))
        );
        picker.on_key(press(KeyCode::Char('z')), None, &models);
        assert_eq!(
            picker.on_key(press(KeyCode::Enter), None, &models),
            Step::Open,
            "nothing matches: nothing is chosen"
        );
        assert_eq!(
            picker.on_key(press(KeyCode::BackTab), None, &models),
            Step::Ask(ModelRequest::NextThinkingLevel)
        );
        assert_eq!(
            picker.on_key(press(KeyCode::Esc), None, &models),
            Step::Close
        );
    }

    #[test]
    fn thinking_levels_cycle() {
        let levels: Vec<String> = ["off", "low", "high"].map(String::from).to_vec();
        assert_eq!(next_level(&levels, Some("off")).as_deref(), Some("low"));
        assert_eq!(next_level(&levels, Some("high")).as_deref(), Some("off"));
        assert_eq!(next_level(&levels, Some("xhigh")).as_deref(), Some("off"));
        assert_eq!(next_level(&levels, None).as_deref(), Some("off"));
        assert_eq!(next_level(&[], Some("off")), None);
    }
}
