//! Claude Code's settings over stream-json: the models `initialize` lists (each with the effort
//! levels it takes), the permission modes Shift+Tab cycles, and the user's choices (`/model`,
//! its Shift+Tab for the effort, Shift+Tab for the mode), sent as `set_model` /
//! `apply_flag_settings {effortLevel}` / `set_permission_mode` control requests and held for the
//! conversation: every process started later is told them after `initialize`.
//!
//! The effort: Claude Code 2.1.197 takes `apply_flag_settings {settings: {effortLevel}}` at any
//! time between turns (or `--effort` at start), and its next model request carries it as
//! `output_config.effort`; it holds across `set_model`, and is never written to the user's
//! settings files. The CLI does not report the effort it runs, so none is shown until the user
//! chooses one.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::sync::watch;

use super::control::{settled, Control};
use crate::process::timings::SETTING_TIMEOUT;
use crate::provider::{
    AgentCommand, AgentQueue, AgentSetting, AgentStatus, ModeChoice, ModelChoice,
};

/// Claude Code's permission modes that Shift+Tab cycles through, in its own order.
/// `bypassPermissions` is left out: it would grant every permission without asking.
pub(crate) const PERMISSION_MODES: [(&str, &str); 3] = [
    ("default", "default"),
    ("acceptEdits", "accept edits"),
    ("plan", "plan"),
];

/// Settings the user changed (`/model`, Shift+Tab), for processes started later.
#[derive(Debug, Clone, Default)]
pub(super) struct Chosen {
    pub(super) model: Option<String>,
    pub(super) mode: Option<String>,
    /// The effort level (`effortLevel`).
    pub(super) effort: Option<String>,
}

/// A model's id and the effort levels it takes.
pub(super) type ModelEfforts = (String, Vec<String>);

/// What the protocol shares with its live process and turns.
#[derive(Clone)]
pub(crate) struct Shared {
    pub(super) status: watch::Sender<AgentStatus>,
    /// The live process's control channel, between turns too (settings).
    pub(super) control: Arc<Mutex<Option<Control>>>,
    /// Messages typed during the turn that the CLI has not taken yet (shown as waiting).
    pub(super) queue: watch::Sender<AgentQueue>,
    /// The model and mode the user chose in this conversation.
    pub(super) chosen: Arc<Mutex<Chosen>>,
    /// The effort levels each model of `initialize` takes, by the model's id.
    pub(super) efforts: Arc<Mutex<Vec<ModelEfforts>>>,
    /// The order of the setting requests, so that answers taken out of order never undo a
    /// later change (the CLI applies them in the order they were sent).
    order: Arc<Mutex<RequestOrder>>,
}

/// Numbers setting requests as they are sent, and remembers, for each kind of setting, the
/// latest whose answer was taken.
#[derive(Default)]
struct RequestOrder {
    sent: u64,
    /// The latest answer taken for the model, the mode and the effort.
    taken: [u64; 3],
}

impl RequestOrder {
    fn kind(setting: &AgentSetting) -> usize {
        match setting {
            AgentSetting::Model(_) => 0,
            AgentSetting::Mode(_) => 1,
            AgentSetting::ThinkingLevel(_) => 2,
        }
    }

    /// Whether the answer to request `number` is newer than what was taken for its kind (then
    /// it is taken).
    fn take(&mut self, setting: &AgentSetting, number: u64) -> bool {
        let taken = &mut self.taken[Self::kind(setting)];
        let newer = number > *taken;
        if newer {
            *taken = number;
        }
        newer
    }
}

impl Shared {
    pub(super) fn new() -> Self {
        Self {
            status: watch::channel(AgentStatus::default()).0,
            control: Arc::new(Mutex::new(None)),
            queue: watch::channel(AgentQueue::default()).0,
            chosen: Arc::new(Mutex::new(Chosen::default())),
            efforts: Arc::new(Mutex::new(Vec::new())),
            order: Arc::new(Mutex::new(RequestOrder::default())),
        }
    }

    pub(super) fn chosen(&self) -> Chosen {
        self.chosen
            .lock()
            .map(|chosen| chosen.clone())
            .unwrap_or_default()
    }

    /// The conversation's settings an attempt carries (the choices of a resumed conversation,
    /// the config's start) for each kind the user has not chosen in this run.
    pub(super) fn adopt(&self, settings: &[AgentSetting]) {
        let Ok(mut chosen) = self.chosen.lock() else {
            return;
        };
        for setting in settings {
            match setting {
                AgentSetting::Model(model) if chosen.model.is_none() => {
                    chosen.model = Some(model.clone())
                }
                AgentSetting::Mode(mode) if chosen.mode.is_none() => {
                    chosen.mode = Some(mode.clone())
                }
                AgentSetting::ThinkingLevel(level) if chosen.effort.is_none() => {
                    chosen.effort = Some(level.clone())
                }
                _ => {}
            }
        }
    }

    /// The CLI changed its mode itself (plan mode's exit): that is the choice from now on.
    pub(super) fn saw_mode(&self, mode: String) {
        if let Ok(mut chosen) = self.chosen.lock() {
            if chosen.mode.is_some() {
                chosen.mode = Some(mode.clone());
            }
        }
        self.status.send_if_modified(|status| {
            let changed = status.mode.as_deref() != Some(mode.as_str());
            status.mode = Some(mode);
            changed
        });
    }

    /// A process started: its models (and the efforts each takes), and the model, mode and
    /// effort it now runs.
    pub(super) fn saw_start(
        &self,
        models: Vec<(ModelChoice, Vec<String>)>,
        model: Option<String>,
        mode: Option<String>,
        effort: Option<String>,
        commands: Vec<AgentCommand>,
    ) {
        if let Ok(mut efforts) = self.efforts.lock() {
            *efforts = models
                .iter()
                .map(|(model, levels)| (model.id.clone(), levels.clone()))
                .collect();
        }
        if let (Some(effort), Ok(mut chosen)) = (effort, self.chosen.lock()) {
            // What the process runs (the command line's `--effort`, or the choice it took).
            chosen.effort = Some(effort);
        }
        let models: Vec<ModelChoice> = models.into_iter().map(|(model, _)| model).collect();
        self.status.send_modify(|status| {
            status.model = model.or_else(|| models.first().map(|model| model.id.clone()));
            status.models = models;
            status.commands = commands;
            status.modes = PERMISSION_MODES
                .iter()
                .map(|(id, name)| ModeChoice {
                    id: (*id).to_owned(),
                    name: (*name).to_owned(),
                    // bypassPermissions is not offered at all.
                    most_permissive: None,
                })
                .collect();
            status.mode = mode.or_else(|| Some(PERMISSION_MODES[0].0.to_owned()));
        });
        self.refresh_levels();
    }

    /// The current model's effort levels; the chosen effort is shown only where it takes one.
    fn refresh_levels(&self) {
        let Ok(efforts) = self.efforts.lock() else {
            return;
        };
        let effort = self.chosen().effort;
        self.status.send_modify(|status| {
            status.thinking_levels = efforts
                .iter()
                .find(|(id, _)| status.model.as_deref() == Some(id.as_str()))
                .map(|(_, levels)| levels.clone())
                .unwrap_or_default();
            status.thinking_level = effort.filter(|_| !status.thinking_levels.is_empty());
        });
    }

    /// Asks the running CLI for `setting`; false when it has no such setting or no process
    /// runs. The answer (the new value, or the refusal) arrives in the status.
    pub(super) fn change(&self, setting: AgentSetting) -> bool {
        let Some(control) = self.control.lock().ok().and_then(|c| c.clone()) else {
            return false;
        };
        let (request, describe) = match &setting {
            AgentSetting::Model(model) => (
                json!({"subtype": "set_model", "model": model}),
                format!("model {model}"),
            ),
            AgentSetting::Mode(mode) => (
                json!({"subtype": "set_permission_mode", "mode": mode}),
                format!("mode {mode}"),
            ),
            AgentSetting::ThinkingLevel(level) => {
                (effort_request(level), format!("effort {level}"))
            }
        };
        let answer = control.request(request);
        let number = self
            .order
            .lock()
            .map(|mut order| {
                order.sent += 1;
                order.sent
            })
            .unwrap_or(0);
        let shared = self.clone();
        tokio::spawn(async move {
            let answer = settled(answer, SETTING_TIMEOUT).await;
            let newest = shared
                .order
                .lock()
                .map(|mut order| order.take(&setting, number))
                .unwrap_or(true);
            shared.status.send_modify(|status| match answer {
                // An earlier request's answer taken after a later one's: the later one stands.
                Ok(_) if !newest => {}
                Ok(response) => {
                    let mut chosen = shared
                        .chosen
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    match setting {
                        AgentSetting::Model(model) => {
                            chosen.model = Some(model.clone());
                            status.model = Some(model);
                        }
                        AgentSetting::Mode(mode) => {
                            let mode = response["mode"].as_str().map(str::to_owned).unwrap_or(mode);
                            chosen.mode = Some(mode.clone());
                            status.mode = Some(mode);
                        }
                        AgentSetting::ThinkingLevel(level) => {
                            chosen.effort = Some(level.clone());
                            status.thinking_level = Some(level);
                        }
                    }
                }
                Err(refusal) => status.refused(format!("{describe}: {refusal}")),
            });
            // Another model takes other efforts (or none).
            shared.refresh_levels();
        });
        true
    }
}

/// The value of `flag` in the spawn arguments (the user's `--model`, `--permission-mode`).
pub(super) fn configured_flag(spec: &crate::process::SpawnSpec, flag: &str) -> Option<String> {
    let args: Vec<String> = spec
        .args
        .iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    let at = args.iter().rposition(|arg| arg == flag)?;
    args.get(at + 1).cloned()
}

/// The slash commands of `initialize`'s answer (`commands: [{name, description,
/// argumentHint}]`: Claude Code's skills and its own commands; sent as a user message
/// `/name args`, which Claude Code 2.1.197 expands as its TUI does).
pub(super) fn commands_of(initialized: &Value) -> Vec<AgentCommand> {
    initialized["commands"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|command| {
            AgentCommand::new(
                command["name"].as_str()?,
                command["description"].as_str().unwrap_or_default(),
                command["argumentHint"].as_str(),
            )
        })
        .collect()
}

/// The control request that sets the effort (`output_config.effort` of the next model request).
pub(super) fn effort_request(level: &str) -> Value {
    json!({"subtype": "apply_flag_settings", "settings": {"effortLevel": level}})
}

/// One model of `initialize`'s answer (`{value, displayName, description, supportsEffort,
/// supportedEffortLevels, ...}`), and the effort levels it takes.
pub(super) fn model_choice(model: &Value) -> Option<(ModelChoice, Vec<String>)> {
    let id = model["value"].as_str()?.to_owned();
    let levels: Vec<String> = model["supportedEffortLevels"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|level| level.as_str().map(str::to_owned))
        .collect();
    let choice = ModelChoice {
        name: model["displayName"].as_str().unwrap_or(&id).to_owned(),
        provider: None,
        reasoning: !levels.is_empty(),
        id,
    };
    Some((choice, levels))
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_earlier_requests_late_answer_never_undoes_a_later_change() {
        let mut order = RequestOrder::default();
        let low = AgentSetting::ThinkingLevel("low".to_owned());
        let medium = AgentSetting::ThinkingLevel("medium".to_owned());
        let mode = AgentSetting::Mode("plan".to_owned());
        // Sent: low (1), medium (2), a mode (3); answers taken: medium, then low, then the mode.
        assert!(order.take(&medium, 2));
        assert!(
            !order.take(&low, 1),
            "the earlier effort's answer comes too late"
        );
        assert!(
            order.take(&mode, 3),
            "another kind of setting is its own order"
        );
        assert!(order.take(&low, 4), "a later request is taken");
    }

    use super::*;

    #[test]
    fn initialize_models_and_the_users_flags_are_read() {
        // As Claude Code 2.1.197 lists them.
        let model = json!({"value": "sonnet", "resolvedModel": "claude-sonnet-5",
            "displayName": "Sonnet", "description": "...", "supportsEffort": true,
            "supportedEffortLevels": ["low", "medium", "high", "xhigh", "max"]});
        let (choice, levels) = model_choice(&model).unwrap();
        assert_eq!(
            (choice.id.as_str(), choice.name.as_str(), choice.reasoning),
            ("sonnet", "Sonnet", true)
        );
        assert_eq!(levels, ["low", "medium", "high", "xhigh", "max"]);
        let haiku = json!({"value": "haiku", "displayName": "Haiku"});
        let (choice, levels) = model_choice(&haiku).unwrap();
        assert!(!choice.reasoning && levels.is_empty());
        assert!(model_choice(&json!({"displayName": "no value"})).is_none());
        let spec = crate::process::SpawnSpec::new("claude").args([
            "--model",
            "opus",
            "--session-id",
            "abc",
            "--permission-mode",
            "plan",
        ]);
        assert_eq!(configured_flag(&spec, "--model").as_deref(), Some("opus"));
        assert_eq!(
            configured_flag(&spec, "--session-id").as_deref(),
            Some("abc")
        );
        assert_eq!(
            configured_flag(&spec, "--permission-mode").as_deref(),
            Some("plan")
        );
        assert_eq!(configured_flag(&spec, "--effort"), None);
    }

    #[test]
    fn initializes_commands_are_the_agents_commands() {
        // As Claude Code 2.1.197 lists them.
        let answer = json!({"commands": [
            {"name": "simplify", "description": "Review the changed code", "argumentHint": "[<target>]"},
            {"name": "init", "description": "Initialize a CLAUDE.md", "argumentHint": ""},
            {"name": "bad name", "description": "not typeable"}
        ]});
        let commands = commands_of(&answer);
        let names: Vec<(&str, Option<&str>)> = commands
            .iter()
            .map(|command| (command.name.as_str(), command.hint.as_deref()))
            .collect();
        assert_eq!(names, [("simplify", Some("[<target>]")), ("init", None)]);
        assert!(commands_of(&json!({})).is_empty());
    }
}
