//! What a long-lived agent says of itself between turns, for the chat: its queues, its model,
//! mode and thinking level and the choices it offers; and the settings the user changes
//! mid-conversation. Shared by every transport that has them (pi RPC, ACP), the orchestrator
//! that passes them on, and the app that shows them.

/// What the agent's steering queues hold (pi's `queue_update` event), for the UI.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentQueue {
    pub steering: Vec<String>,
    pub follow_up: Vec<String>,
}

/// The agent's model, mode and thinking level, the choices it offers, and its answer to the
/// last change it refused. Tokens and cost come from each turn's own figures (the shared
/// stream), the same live and after a resume.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentStatus {
    /// The model's id.
    pub model: Option<String>,
    pub thinking_level: Option<String>,
    /// The models the agent offers, in its order (empty: it lists none).
    pub models: Vec<ModelChoice>,
    /// The thinking levels the current model takes (empty: it has none).
    pub thinking_levels: Vec<String>,
    /// The mode's id (an ACP session mode such as `default` or `plan`).
    pub mode: Option<String>,
    /// The modes the agent offers, in its order (empty: it has none).
    pub modes: Vec<ModeChoice>,
    /// How many changes the agent refused (or did not answer), and what it said the last time.
    pub refusals: u64,
    pub refusal: Option<String>,
    /// How full the model's context window is, as the agent last reported it.
    pub context: Option<ContextUse>,
    /// Whether the agent takes images in a prompt, where it says (ACP's
    /// `promptCapabilities.image`); `None`: the transport decides.
    pub accepts_images: Option<bool>,
    /// The agent's own slash commands, as it announced them (Claude's `initialize`, ACP's
    /// `available_commands_update`), in its order; empty: it announced none.
    pub commands: Vec<AgentCommand>,
}

/// One of the agent's own slash commands: sent as a prompt that starts with `/name`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentCommand {
    /// The name without its slash; only names that are one word of letters, digits and
    /// `-_:.` are kept (a name is typed and sent back as it is).
    pub name: String,
    pub description: String,
    /// What the command takes after its name (`<description>`), where the agent says; `None`:
    /// it takes nothing.
    pub hint: Option<String>,
}

impl AgentCommand {
    /// A command of the agent, if its name can be typed and sent back as it is.
    pub fn new(name: &str, description: &str, hint: Option<&str>) -> Option<AgentCommand> {
        let name = name.strip_prefix('/').unwrap_or(name);
        let typeable = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'));
        typeable.then(|| AgentCommand {
            name: name.to_owned(),
            description: description.trim().to_owned(),
            hint: hint
                .map(str::trim)
                .filter(|hint| !hint.is_empty())
                .map(str::to_owned),
        })
    }
}

/// The tokens in the model's context window and its size, as the agent reports them (pi's
/// `get_session_stats`, Codex's `thread/tokenUsage/updated`, Claude's `result`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextUse {
    pub tokens: u64,
    pub(crate) window: u64,
}

impl ContextUse {
    /// `None` for a window of no size (nothing to divide by).
    pub fn new(tokens: u64, window: u64) -> Option<ContextUse> {
        (window > 0).then_some(ContextUse { tokens, window })
    }

    /// The share used, in whole percent (rounded to nearest, at most 100).
    pub fn percent(self) -> u64 {
        let percent =
            (u128::from(self.tokens) * 100 + u128::from(self.window) / 2) / u128::from(self.window);
        percent.min(100) as u64
    }
}

impl AgentStatus {
    /// The agent refused a change (or did not answer it).
    pub(crate) fn refused(&mut self, why: String) {
        self.refusals += 1;
        self.refusal = Some(why);
    }

    /// The mode the agent runs, among those it lists.
    pub fn current_mode(&self) -> Option<&ModeChoice> {
        let current = self.mode.as_deref()?;
        self.modes.iter().find(|mode| mode.id == current)
    }
}

/// One model the agent offers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelChoice {
    /// The agent's id for it (sent back unchanged to choose it).
    pub id: String,
    /// What to call it (the id when the agent gives no name).
    pub name: String,
    /// The agent's provider for it (pi's `set_model` names both).
    pub provider: Option<String>,
    /// Whether it takes a thinking level.
    pub reasoning: bool,
}

/// One mode the agent offers (how much it may do unasked, or whether it only plans).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModeChoice {
    /// The agent's id for it (sent back unchanged to choose it).
    pub id: String,
    /// What to call it (the id when the agent gives no name).
    pub name: String,
    /// `Some(what it lets the agent do unasked)` for the most permissive modes (YOLO, full
    /// access, bypass permissions): the chat keeps them off the Shift+Tab cycle and asks,
    /// naming this, before it switches to one. `None` for every other mode.
    pub most_permissive: Option<String>,
}

/// A setting of the agent that the user changes mid-conversation (`/model`, Shift+Tab). The
/// ones chosen are logged, and set again when the conversation is resumed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "setting", content = "value", rename_all = "snake_case")]
pub enum AgentSetting {
    /// The model, by the agent's own id for it (one of the models it listed).
    Model(String),
    /// The thinking level (reasoning effort), one of the levels the model takes.
    ThinkingLevel(String),
    /// The mode, by the agent's own id for it (one of the modes it listed).
    Mode(String),
}

impl AgentSetting {
    /// Whether `other` sets the same thing (another value of it).
    pub(crate) fn same_kind(&self, other: &AgentSetting) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }

    /// The agent runs with this value now.
    pub(crate) fn is_held_by(&self, status: &AgentStatus) -> bool {
        let current = match self {
            AgentSetting::Model(_) => &status.model,
            AgentSetting::ThinkingLevel(_) => &status.thinking_level,
            AgentSetting::Mode(_) => &status.mode,
        };
        current.as_deref() == Some(self.value())
    }

    /// The agent lists this value among its choices (so asking for it can succeed).
    pub(crate) fn is_offered_by(&self, status: &AgentStatus) -> bool {
        match self {
            AgentSetting::Model(id) => status.models.iter().any(|model| model.id == *id),
            AgentSetting::ThinkingLevel(level) => status.thinking_levels.contains(level),
            AgentSetting::Mode(id) => status.modes.iter().any(|mode| mode.id == *id),
        }
    }

    /// Setting it means asking the agent: it lists the value and runs another.
    pub(crate) fn needs_asking(&self, status: &AgentStatus) -> bool {
        self.is_offered_by(status) && !self.is_held_by(status)
    }

    fn value(&self) -> &str {
        match self {
            AgentSetting::Model(value)
            | AgentSetting::ThinkingLevel(value)
            | AgentSetting::Mode(value) => value,
        }
    }
}

/// The settings a conversation starts with from the provider's config: `model` (on an agent that
/// lists its models; a CLI that takes `--model` runs it from the start anyway) and `mode`.
pub fn configured_settings(settings: &crate::config::ProviderSettings) -> Vec<AgentSetting> {
    let model = settings.model.clone().map(AgentSetting::Model);
    let mode = settings.mode.clone().map(AgentSetting::Mode);
    model.into_iter().chain(mode).collect()
}

/// `settings` with each of `later` replacing the one of its kind (or added).
pub fn settings_overridden(
    mut settings: Vec<AgentSetting>,
    later: impl IntoIterator<Item = AgentSetting>,
) -> Vec<AgentSetting> {
    for setting in later {
        settings.retain(|kept| !kept.same_kind(&setting));
        settings.push(setting);
    }
    settings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_setting_replaces_the_one_of_its_kind() {
        let start = vec![
            AgentSetting::Model("a".into()),
            AgentSetting::Mode("plan".into()),
        ];
        let chosen = settings_overridden(
            start,
            [
                AgentSetting::Mode("default".into()),
                AgentSetting::ThinkingLevel("high".into()),
            ],
        );
        assert_eq!(
            chosen,
            [
                AgentSetting::Model("a".into()),
                AgentSetting::Mode("default".into()),
                AgentSetting::ThinkingLevel("high".into()),
            ]
        );
    }

    #[test]
    fn a_command_is_kept_only_when_its_name_can_be_typed_back() {
        let command = AgentCommand::new("/code-review", " Review the diff ", Some(" [low|high] "));
        assert_eq!(
            command,
            Some(AgentCommand {
                name: "code-review".into(),
                description: "Review the diff".into(),
                hint: Some("[low|high]".into()),
            })
        );
        assert_eq!(
            AgentCommand::new("compress", "", Some("")).unwrap().hint,
            None
        );
        for bad in ["", "/", "two words", "esc\u{1b}[31m", "a/b", "名前"] {
            assert_eq!(AgentCommand::new(bad, "x", None), None, "{bad:?}");
        }
    }

    #[test]
    fn held_and_offered_read_the_status() {
        let status = AgentStatus {
            model: Some("m1".into()),
            models: vec![ModelChoice {
                id: "m2".into(),
                ..ModelChoice::default()
            }],
            modes: vec![ModeChoice {
                id: "plan".into(),
                name: "Plan".into(),
                ..ModeChoice::default()
            }],
            ..AgentStatus::default()
        };
        assert!(AgentSetting::Model("m1".into()).is_held_by(&status));
        assert!(!AgentSetting::Model("m2".into()).is_held_by(&status));
        assert!(AgentSetting::Model("m2".into()).is_offered_by(&status));
        assert!(AgentSetting::Mode("plan".into()).is_offered_by(&status));
        assert!(!AgentSetting::ThinkingLevel("high".into()).is_offered_by(&status));
        let logged = serde_json::to_string(&AgentSetting::Mode("plan".into())).unwrap();
        assert_eq!(logged, r#"{"setting":"mode","value":"plan"}"#);
    }
}
