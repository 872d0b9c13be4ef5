//! The agent's status as the chat keeps it: a `provider::AgentStatus` made inert once, as it
//! arrives, field by field in one place ([`ShownAgentStatus::from`] names every field, so a new
//! one cannot be forgotten). Every name the agent gave is [`InertText`], so the view cannot be
//! handed a raw agent string; an id or level the user chooses goes back to the agent as the
//! agent wrote it, kept beside its inert form ([`AgentValue`]).

use std::fmt;

use super::inert::InertText;
use crate::provider::{AgentCommand, AgentStatus, ContextUse, ModeChoice, ModelChoice};

/// A value the agent names and takes back (a model's or mode's id, a thinking level): the
/// agent's own text, sent back unchanged when the user chooses it, and that text made inert for
/// the screen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AgentValue {
    raw: String,
    shown: InertText,
}

impl AgentValue {
    pub(crate) fn new(raw: String) -> Self {
        Self {
            shown: InertText::new(&raw),
            raw,
        }
    }

    /// The agent's own text, to send back to it; never drawn (the view is outside `app` and
    /// sees only [`AgentValue::shown`]).
    pub(in crate::app) fn raw(&self) -> &str {
        &self.raw
    }

    /// The value as the screen shows it.
    pub(crate) fn shown(&self) -> &InertText {
        &self.shown
    }
}

/// Shown as the screen shows it.
impl fmt::Display for AgentValue {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.shown.fmt(formatter)
    }
}

/// One model the agent offers, as the chat shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ShownModel {
    pub(crate) id: AgentValue,
    pub(crate) name: InertText,
    pub(crate) provider: Option<InertText>,
    /// Whether it takes a thinking level.
    pub(crate) reasoning: bool,
}

impl From<ModelChoice> for ShownModel {
    fn from(model: ModelChoice) -> Self {
        let ModelChoice {
            id,
            name,
            provider,
            reasoning,
        } = model;
        Self {
            id: AgentValue::new(id),
            name: InertText::from(name),
            provider: provider.map(InertText::from),
            reasoning,
        }
    }
}

/// One mode the agent offers, as the chat shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ShownMode {
    pub(crate) id: AgentValue,
    pub(crate) name: InertText,
    /// What it lets the agent do unasked, for the most permissive modes (off the Shift+Tab
    /// cycle; `/permissions` asks before switching to one).
    pub(crate) most_permissive: Option<InertText>,
}

impl From<ModeChoice> for ShownMode {
    fn from(mode: ModeChoice) -> Self {
        let ModeChoice {
            id,
            name,
            most_permissive,
        } = mode;
        Self {
            id: AgentValue::new(id),
            name: InertText::from(name),
            most_permissive: most_permissive.map(InertText::from),
        }
    }
}

/// One of the agent's own slash commands, as the chat offers it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ShownCommand {
    /// Its name without the slash: typed and sent back as the agent wrote it (only letters,
    /// digits and `-_:.`, so it is inert as it is).
    pub(crate) name: String,
    pub(crate) description: InertText,
    /// What it takes after its name; `None`: nothing.
    pub(crate) hint: Option<InertText>,
}

impl From<AgentCommand> for ShownCommand {
    fn from(command: AgentCommand) -> Self {
        let AgentCommand {
            name,
            description,
            hint,
        } = command;
        Self {
            name: InertText::new(&name).as_str().to_owned(),
            description: InertText::from(description),
            hint: hint.map(InertText::from),
        }
    }
}

/// The agent's model, mode and thinking level, the choices it offers and its last refusal, as
/// the chat shows them (see `provider::AgentStatus` for each field).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShownAgentStatus {
    pub(crate) model: Option<AgentValue>,
    pub(crate) thinking_level: Option<AgentValue>,
    pub(crate) models: Vec<ShownModel>,
    pub(crate) thinking_levels: Vec<AgentValue>,
    pub(crate) mode: Option<AgentValue>,
    pub(crate) modes: Vec<ShownMode>,
    pub(crate) refusals: u64,
    pub(crate) refusal: Option<InertText>,
    pub(crate) context: Option<ContextUse>,
    pub accepts_images: Option<bool>,
    pub(crate) commands: Vec<ShownCommand>,
}

impl From<AgentStatus> for ShownAgentStatus {
    fn from(status: AgentStatus) -> Self {
        let AgentStatus {
            model,
            thinking_level,
            models,
            thinking_levels,
            mode,
            modes,
            refusals,
            refusal,
            context,
            accepts_images,
            commands,
        } = status;
        Self {
            model: model.map(AgentValue::new),
            thinking_level: thinking_level.map(AgentValue::new),
            models: models.into_iter().map(ShownModel::from).collect(),
            thinking_levels: thinking_levels.into_iter().map(AgentValue::new).collect(),
            mode: mode.map(AgentValue::new),
            modes: modes.into_iter().map(ShownMode::from).collect(),
            refusals,
            refusal: refusal.map(InertText::from),
            context,
            accepts_images,
            commands: commands.into_iter().map(ShownCommand::from).collect(),
        }
    }
}

impl ShownAgentStatus {
    /// The model the agent runs, among those it lists.
    pub(crate) fn current_model(&self) -> Option<&ShownModel> {
        let current = self.model.as_ref()?;
        self.models.iter().find(|model| model.id == *current)
    }

    /// The mode the agent runs, among those it lists.
    pub(crate) fn current_mode(&self) -> Option<&ShownMode> {
        let current = self.mode.as_ref()?;
        self.modes.iter().find(|mode| mode.id == *current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_shown_is_inert_and_what_goes_back_is_the_agents() {
        let hostile = "plan\u{1b}[2J\u{202e}";
        let status = ShownAgentStatus::from(AgentStatus {
            mode: Some(hostile.into()),
            modes: vec![ModeChoice {
                id: hostile.into(),
                name: "Plan\u{7}".into(),
                most_permissive: Some("all\u{1b}[2J".into()),
            }],
            refusal: Some("no\u{1b}]0;x".into()),
            ..AgentStatus::default()
        });
        let mode = status.current_mode().expect("found by the agent's own id");
        assert_eq!(mode.id.raw(), hostile);
        assert!(crate::sanitize::is_inert(mode.id.shown()));
        assert_eq!(mode.id.to_string(), mode.id.shown().as_str());
        assert_eq!(mode.name, "Plan␇");
        assert!(crate::sanitize::is_inert(
            mode.most_permissive.as_ref().unwrap()
        ));
        assert!(crate::sanitize::is_inert(status.refusal.as_ref().unwrap()));
    }
}
