//! `/model`: the models the agent reports, the current one marked, narrowed as the user types
//! (by name, id or provider, ignoring case); Enter chooses, Shift+Tab steps the thinking level of
//! the current model. The picker keeps only the query and the selection: the list is the
//! agent's, read from the state each time.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::list::ListSelection;
use crate::provider::ModelChoice;

/// The picker as typed so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelPicker {
    pub query: String,
    /// Index into the matches of `query`.
    pub selected: usize,
}

/// What a key did to the picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ModelPickerOutcome {
    Open,
    Close,
    /// The model with this id was chosen.
    Chosen(String),
    /// The next thinking level, please.
    NextThinkingLevel,
}

impl ModelPicker {
    /// A picker with the current model (`current`, an id) selected.
    pub(crate) fn new(models: &[ModelChoice], current: Option<&str>) -> Self {
        let selected = current
            .and_then(|current| models.iter().position(|model| model.id == current))
            .unwrap_or(0);
        Self {
            query: String::new(),
            selected,
        }
    }

    /// The models matching the query, in the agent's order.
    pub(crate) fn matches<'a>(&self, models: &'a [ModelChoice]) -> Vec<&'a ModelChoice> {
        let query = self.query.to_lowercase();
        models
            .iter()
            .filter(|model| {
                query.is_empty()
                    || [
                        model.name.as_str(),
                        model.id.as_str(),
                        model.provider.as_deref().unwrap_or_default(),
                    ]
                    .iter()
                    .any(|field| field.to_lowercase().contains(&query))
            })
            .collect()
    }

    /// A key; `models` are the agent's.
    pub(crate) fn on_key(&mut self, key: KeyEvent, models: &[ModelChoice]) -> ModelPickerOutcome {
        let matches = self.matches(models);
        match key.code {
            KeyCode::Esc => return ModelPickerOutcome::Close,
            KeyCode::Enter => {
                return match matches.get(self.selected) {
                    Some(model) => ModelPickerOutcome::Chosen(model.id.clone()),
                    None => ModelPickerOutcome::Open,
                }
            }
            KeyCode::BackTab => return ModelPickerOutcome::NextThinkingLevel,
            KeyCode::Backspace => {
                self.query.pop();
                self.selected = 0;
            }
            KeyCode::Char(ch)
                if !key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
            {
                self.query.push(ch);
                self.selected = 0;
            }
            _ => {
                let mut list = ListSelection::at(self.selected);
                list.on_key(key, matches.len());
                self.selected = list.selected;
            }
        }
        ModelPickerOutcome::Open
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

    fn model(id: &str, name: &str) -> ModelChoice {
        ModelChoice {
            id: id.into(),
            name: name.into(),
            provider: Some("demo".into()),
            reasoning: false,
        }
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
        let mut picker = ModelPicker::new(&models, Some("m-2"));
        assert_eq!(picker.selected, 1, "the current model is selected");
        for ch in "LAR".chars() {
            picker.on_key(press(KeyCode::Char(ch)), &models);
        }
        assert_eq!(picker.matches(&models), [&models[1]]);
        picker.on_key(press(KeyCode::Backspace), &models);
        picker.on_key(press(KeyCode::Backspace), &models);
        picker.on_key(press(KeyCode::Backspace), &models);
        // "m-" matches two by id; Down moves to the second.
        picker.on_key(press(KeyCode::Char('m')), &models);
        picker.on_key(press(KeyCode::Char('-')), &models);
        assert_eq!(picker.matches(&models).len(), 2);
        picker.on_key(press(KeyCode::Down), &models);
        assert_eq!(
            picker.on_key(press(KeyCode::Enter), &models),
            ModelPickerOutcome::Chosen("m-2".into())
        );
        picker.on_key(press(KeyCode::Char('z')), &models);
        assert_eq!(
            picker.on_key(press(KeyCode::Enter), &models),
            ModelPickerOutcome::Open,
            "nothing matches: nothing is chosen"
        );
        assert_eq!(
            picker.on_key(press(KeyCode::BackTab), &models),
            ModelPickerOutcome::NextThinkingLevel
        );
        assert_eq!(
            picker.on_key(press(KeyCode::Esc), &models),
            ModelPickerOutcome::Close
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
