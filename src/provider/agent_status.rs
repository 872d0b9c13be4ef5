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
}

/// A setting of the agent that the user changes mid-conversation (`/model`, Shift+Tab).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSetting {
    /// The model, by the agent's own id for it (one of the models it listed).
    Model(String),
    /// The thinking level (reasoning effort), one of the levels the model takes.
    ThinkingLevel(String),
    /// The mode, by the agent's own id for it (one of the modes it listed).
    Mode(String),
}
