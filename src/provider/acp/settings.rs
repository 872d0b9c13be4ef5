//! What an ACP agent says of its models and modes, and switching them between turns.
//!
//! `session/new` and `session/load` answer with `models {availableModels: [{modelId, name}],
//! currentModelId}` (the Claude adapter, the demo agent; Gemini CLI with its own list) and
//! `modes {availableModes: [{id, name}], currentModeId}` (the Claude adapter's permission modes,
//! Gemini's approval modes, Codex's presets): the status bar names the current model and mode,
//! `/model` offers the models and Shift+Tab goes to the next mode. A choice is sent as
//! `session/set_model {sessionId, modelId}` or `session/set_mode {sessionId, modeId}` on the
//! running agent (responses are routed to their waiter whether or not a turn runs), and shown
//! once the agent accepts it; a refusal is shown in the agent's words. The agent may change
//! its mode itself (`current_mode_update`, e.g. leaving plan mode): the status follows. How
//! full the context is, where the agent says (`usage_update {used, size}`, at any time), is the
//! status bar's context share.
//!
//! The newer form of the same (opencode, Qwen Code): `configOptions`, a list of select options
//! each with a `category` (`model`, `mode`, `thought_level`) and its values, in the answers of
//! `session/new`/`session/load`, of `session/set_config_option {sessionId, configId, value}`,
//! and in `config_option_update`s. A kind the agent offers as a config option is listed and set
//! that way (the thinking level only exists in this form); the others as above.
//!
//! A model the config names (`model =`, `--model`) is matched by id, else by name; when the
//! agent lists models and none matches, the user is told (a refusal), never silently ignored.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::sync::watch;

use crate::process::timings::SETTING_TIMEOUT;
use crate::provider::json_rpc::{settled, JsonRpc};
use crate::provider::{AgentSetting, AgentStatus, ContextUse, ModeChoice, ModelChoice};

/// Shared by the provider and its live session: the status the chat shows, and the way to
/// the session between turns.
#[derive(Clone)]
pub(crate) struct AcpShared {
    pub(super) status: watch::Sender<AgentStatus>,
    control: Arc<Mutex<Option<(JsonRpc, String)>>>,
    /// The agent's config options that set the model, mode and thinking level (their ids).
    config: Arc<Mutex<ConfigIds>>,
}

/// Which of the agent's config options (`configOptions`) sets each kind of setting.
#[derive(Debug, Clone, Default)]
struct ConfigIds {
    model: Option<String>,
    mode: Option<String>,
    thought_level: Option<String>,
}

impl ConfigIds {
    fn of(&self, setting: &AgentSetting) -> Option<&String> {
        match setting {
            AgentSetting::Model(_) => self.model.as_ref(),
            AgentSetting::Mode(_) => self.mode.as_ref(),
            AgentSetting::ThinkingLevel(_) => self.thought_level.as_ref(),
        }
    }
}

impl AcpShared {
    pub(crate) fn new() -> Self {
        Self {
            status: watch::Sender::new(AgentStatus::default()),
            control: Arc::new(Mutex::new(None)),
            config: Arc::new(Mutex::new(ConfigIds::default())),
        }
    }

    pub(crate) fn status(&self) -> watch::Receiver<AgentStatus> {
        self.status.subscribe()
    }

    /// The session `session_id` on `connection` is the one a setting now goes to.
    pub(super) fn publish(&self, connection: JsonRpc, session_id: String) {
        if let Ok(mut control) = self.control.lock() {
            *control = Some((connection, session_id));
        }
    }

    /// The process is going away: settings no longer reach it.
    pub(super) fn forget(&self, connection: &JsonRpc) {
        if let Ok(mut control) = self.control.lock() {
            if control
                .as_ref()
                .is_some_and(|(published, _)| published.same_connection(connection))
            {
                *control = None;
            }
        }
    }

    /// Follows the agent's `usage_update`s in `line` (any line it prints; the others are let
    /// go at a glance): the context's fill for the status bar. (`used` is the window's fill,
    /// not the turn's own tokens: those stay the turn's `terminal.completed` usage.)
    pub(super) fn follow_usage(&self, line: &str) {
        if memchr::memmem::find(line.as_bytes(), b"\"usage_update\"").is_none() {
            return;
        }
        let Some(context) = context_of(line) else {
            return;
        };
        self.status.send_if_modified(|status| {
            let changed = status.context != Some(context);
            status.context = Some(context);
            changed
        });
    }

    /// Whether the agent takes images (`agentCapabilities.promptCapabilities.image` of its
    /// `initialize` answer; absent: it does not).
    pub(super) fn saw_prompt_capabilities(&self, initialized: &Value) {
        let capabilities = initialized["agentCapabilities"]["promptCapabilities"].clone();
        let image = serde_json::from_value::<agent_client_protocol_schema::v1::PromptCapabilities>(
            capabilities,
        )
        .is_ok_and(|capabilities| capabilities.image);
        self.status
            .send_modify(|status| status.accepts_images = Some(image));
    }

    /// The `models`, `modes` and `configOptions` of a `session/new` or `session/load` answer,
    /// when it has them (a kind in both: the config option's).
    pub(super) fn saw_choices(&self, answer: &Value) {
        self.saw_models(answer);
        self.saw_modes(answer);
        if let Some(options) = answer.get("configOptions") {
            saw_config_options(&self.status, &self.config, options);
        }
    }

    /// Follows the agent's `config_option_update`s in `line`: its options as they are now.
    pub(super) fn follow_config(&self, line: &str) {
        if memchr::memmem::find(line.as_bytes(), b"\"config_option_update\"").is_none() {
            return;
        }
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let update = &message["params"]["update"];
        if update["sessionUpdate"] == "config_option_update" {
            saw_config_options(&self.status, &self.config, &update["configOptions"]);
        }
    }

    fn saw_modes(&self, answer: &Value) {
        let Some(modes) = answer.get("modes").filter(|modes| modes.is_object()) else {
            return;
        };
        let choices: Vec<ModeChoice> = modes["availableModes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|mode| {
                let id = mode["id"].as_str()?.to_owned();
                Some(ModeChoice {
                    name: mode["name"].as_str().unwrap_or(&id).to_owned(),
                    most_permissive: most_permissive(&id, mode["description"].as_str()),
                    id,
                })
            })
            .collect();
        let current = modes["currentModeId"].as_str().map(str::to_owned);
        self.status.send_modify(|status| {
            status.modes = choices;
            if current.is_some() {
                status.mode = current;
            }
        });
    }

    /// The agent says it is in mode `mode` now (`current_mode_update`).
    pub(super) fn saw_mode(&self, mode: String) {
        self.status.send_if_modified(|status| {
            let changed = status.mode.as_deref() != Some(mode.as_str());
            status.mode = Some(mode);
            changed
        });
    }

    fn saw_models(&self, answer: &Value) {
        let Some(models) = answer.get("models").filter(|models| models.is_object()) else {
            return;
        };
        let choices: Vec<ModelChoice> = models["availableModels"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|model| {
                let id = model["modelId"].as_str()?.to_owned();
                Some(ModelChoice {
                    name: model["name"].as_str().unwrap_or(&id).to_owned(),
                    id,
                    ..ModelChoice::default()
                })
            })
            .collect();
        let current = models["currentModelId"].as_str().map(str::to_owned);
        self.status.send_modify(|status| {
            status.models = choices;
            if current.is_some() {
                status.model = current;
            }
        });
    }

    /// Sends `setting` to the session; false when no session runs or ACP has no such setting
    /// (thinking levels are a pi setting).
    pub(crate) fn change(&self, setting: AgentSetting) -> bool {
        let config = self.config_ids();
        if matches!(setting, AgentSetting::ThinkingLevel(_)) && config.thought_level.is_none() {
            return false;
        }
        let Some((connection, session_id)) = self.control.lock().ok().and_then(|c| c.clone())
        else {
            return false;
        };
        let shared = self.clone();
        tokio::spawn(async move { shared.ask(&connection, &session_id, setting).await });
        true
    }

    fn config_ids(&self) -> ConfigIds {
        self.config
            .lock()
            .map(|ids| ids.clone())
            .unwrap_or_default()
    }

    /// Asks the agent for `setting` (by its config option where it has one) and puts its answer
    /// in the status: the new value, or the refusal.
    async fn ask(&self, connection: &JsonRpc, session_id: &str, setting: AgentSetting) {
        let config = self.config_ids();
        let Some(config_id) = config.of(&setting) else {
            return ask(connection, session_id, setting, &self.status).await;
        };
        let (what, value) = match &setting {
            AgentSetting::Model(value) => ("model", value.clone()),
            AgentSetting::Mode(value) => ("mode", value.clone()),
            AgentSetting::ThinkingLevel(value) => ("thinking level", value.clone()),
        };
        let answer = connection.request(
            "session/set_config_option",
            json!({"sessionId": session_id, "configId": config_id, "value": value}),
        );
        match settled(answer, SETTING_TIMEOUT, "the agent").await {
            Ok(answer) => {
                if let Some(options) = answer.get("configOptions") {
                    saw_config_options(&self.status, &self.config, options);
                }
                // The value asked for is the one it runs, whether or not the answer says so.
                self.status.send_modify(|status| match setting {
                    AgentSetting::Model(value) => status.model = Some(value),
                    AgentSetting::Mode(value) => status.mode = Some(value),
                    AgentSetting::ThinkingLevel(value) => status.thinking_level = Some(value),
                });
            }
            Err(why) => self
                .status
                .send_modify(|status| status.refused(format!("{what} {value}: {why}"))),
        }
    }

    /// `setting` as the agent knows it: a model named by its name (`think`) is asked for by the
    /// agent's id for it (`think(openai)`). `Err` says why none of the agent's models matches.
    fn resolved(&self, setting: &AgentSetting) -> Result<AgentSetting, String> {
        let AgentSetting::Model(wanted) = setting else {
            return Ok(setting.clone());
        };
        let status = self.status.borrow();
        if status.models.is_empty() || status.models.iter().any(|model| model.id == *wanted) {
            return Ok(setting.clone());
        }
        let by_name = status
            .models
            .iter()
            .find(|model| model.name.eq_ignore_ascii_case(wanted))
            .or_else(|| {
                // `provider/model`: the part after the agent's own prefix.
                status.models.iter().find(|model| {
                    model.id.rsplit('/').next() == Some(wanted.as_str())
                        || model.id.split('(').next() == Some(wanted.as_str())
                })
            });
        match by_name {
            Some(model) => Ok(AgentSetting::Model(model.id.clone())),
            None => {
                let offered: Vec<&str> = status
                    .models
                    .iter()
                    .take(12)
                    .map(|model| model.name.as_str())
                    .collect();
                Err(format!(
                    "model {wanted}: the agent offers no model of that id or name (it offers: {}{}); \
                     it runs {}",
                    offered.join(", "),
                    if status.models.len() > offered.len() { ", ..." } else { "" },
                    status.model.as_deref().unwrap_or("its default")
                ))
            }
        }
    }

    /// Sets the session just opened to the conversation's `settings` where the agent lists
    /// them and runs another value, one after the other, each answer awaited (so the first
    /// prompt runs with them).
    pub(super) async fn apply(
        &self,
        connection: &JsonRpc,
        session_id: &str,
        settings: &[AgentSetting],
    ) {
        for setting in settings {
            let setting = match self.resolved(setting) {
                Ok(setting) => setting,
                Err(why) => {
                    tracing::warn!(%why, "a configured setting the agent does not offer");
                    self.status.send_modify(|status| status.refused(why));
                    continue;
                }
            };
            // Read before each: a model's answer changes what the next setting finds.
            let needed = setting.needs_asking(&self.status.borrow());
            if needed {
                self.ask(connection, session_id, setting).await;
            }
        }
    }
}

/// Reads the agent's `configOptions` into `status`: the select options of category `model`,
/// `mode` and `thought_level` (else known by those ids) become its models, modes and thinking
/// levels with their current values, and `config` remembers which option sets each.
fn saw_config_options(
    status: &watch::Sender<AgentStatus>,
    config: &Mutex<ConfigIds>,
    options: &Value,
) {
    let Some(options) = options.as_array() else {
        return;
    };
    let mut ids = ConfigIds::default();
    let mut models: Option<(Vec<ModelChoice>, Option<String>)> = None;
    let mut modes: Option<(Vec<ModeChoice>, Option<String>)> = None;
    let mut levels: Option<(Vec<String>, Option<String>)> = None;
    for option in options {
        let (Some(id), Some(values)) = (option["id"].as_str(), select_values(option)) else {
            continue;
        };
        let current = option["currentValue"].as_str().map(str::to_owned);
        let category = option["category"].as_str().unwrap_or(id);
        match category {
            "model" => {
                ids.model = Some(id.to_owned());
                let choices = values
                    .into_iter()
                    .map(|(value, name, _)| ModelChoice {
                        id: value,
                        name,
                        ..ModelChoice::default()
                    })
                    .collect();
                models = Some((choices, current));
            }
            "mode" => {
                ids.mode = Some(id.to_owned());
                let choices = values
                    .into_iter()
                    .map(|(value, name, description)| ModeChoice {
                        most_permissive: most_permissive(&value, description.as_deref()),
                        id: value,
                        name,
                    })
                    .collect();
                modes = Some((choices, current));
            }
            "thought_level" | "reasoning_effort" | "effort" => {
                ids.thought_level = Some(id.to_owned());
                let choices = values.into_iter().map(|(value, _, _)| value).collect();
                levels = Some((choices, current));
            }
            _ => {}
        }
    }
    if let Ok(mut config) = config.lock() {
        *config = ids;
    }
    status.send_modify(|status| {
        if let Some((choices, current)) = models {
            status.models = choices;
            status.model = current.or(status.model.take());
        }
        if let Some((choices, current)) = modes {
            status.modes = choices;
            status.mode = current.or(status.mode.take());
        }
        if let Some((choices, current)) = levels {
            status.thinking_levels = choices;
            status.thinking_level = current.or(status.thinking_level.take());
        }
    });
}

/// A select option's values as (value, name, description), grouped ones flattened; `None` for
/// an option of another type.
fn select_values(option: &Value) -> Option<Vec<(String, String, Option<String>)>> {
    if option
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("select")
        != "select"
    {
        return None;
    }
    let mut values = Vec::new();
    for entry in option["options"].as_array()? {
        let nested = entry["options"].as_array();
        for value in nested
            .map(|group| group.iter().collect())
            .unwrap_or(vec![entry])
        {
            let Some(id) = value["value"].as_str() else {
                continue;
            };
            values.push((
                id.to_owned(),
                value["name"].as_str().unwrap_or(id).to_owned(),
                value["description"].as_str().map(str::to_owned),
            ));
        }
    }
    Some(values)
}

/// The context use a `usage_update` line says (`None`: not one, or a window of no size).
fn context_of(line: &str) -> Option<ContextUse> {
    use agent_client_protocol_schema::v1 as acp;
    let message: Value = serde_json::from_str(line).ok()?;
    let notification: acp::SessionNotification =
        serde_json::from_value(message.get("params")?.clone()).ok()?;
    match notification.update {
        acp::SessionUpdate::UsageUpdate(usage) => ContextUse::new(usage.used, usage.size),
        _ => None,
    }
}

/// Asks the agent for `setting` and puts its answer in `status`: the new value, or the refusal.
async fn ask(
    connection: &JsonRpc,
    session_id: &str,
    setting: AgentSetting,
    status: &watch::Sender<AgentStatus>,
) {
    let (method, key, what, value) = match setting {
        AgentSetting::Model(model) => ("session/set_model", "modelId", "model", model),
        AgentSetting::Mode(mode) => ("session/set_mode", "modeId", "mode", mode),
        AgentSetting::ThinkingLevel(_) => return,
    };
    let answer = connection.request(method, json!({"sessionId": session_id, key: value}));
    let outcome = settled(answer, SETTING_TIMEOUT, "the agent").await;
    status.send_modify(|status| match outcome {
        Ok(_) if what == "mode" => status.mode = Some(value),
        Ok(_) => status.model = Some(value),
        Err(why) => status.refused(format!("{what} {value}: {why}")),
    });
}

/// What an ACP mode lets the agent do unasked when it is one of the most permissive modes. ACP
/// has no field for that, so the modes are known by the ids the agents give them: Gemini CLI's
/// `yolo`, the Claude adapter's `bypassPermissions`, the Codex adapter's `full-access`. What
/// it allows is the agent's own description where it gives one.
fn most_permissive(id: &str, description: Option<&str>) -> Option<String> {
    const IDS: [&str; 3] = ["yolo", "bypassPermissions", "full-access"];
    IDS.iter()
        .any(|known| known.eq_ignore_ascii_case(id))
        .then(|| {
            let allows = "the agent runs every tool, command and edit without asking";
            match description.map(str::trim).filter(|said| !said.is_empty()) {
                Some(said) => format!("{allows} (the agent says: {said})"),
                None => allows.to_owned(),
            }
        })
}

#[cfg(test)]
mod usage_tests {
    use super::*;

    #[test]
    fn a_usage_update_is_the_contexts_fill() {
        let shared = AcpShared::new();
        let status = shared.status();
        shared.follow_usage(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"usage_update"}}}}"#);
        assert_eq!(
            status.borrow().context,
            None,
            "words that name it are not it"
        );
        shared.follow_usage(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":53000,"size":200000,"cost":{"amount":0.04,"currency":"USD"}}}}"#);
        assert_eq!(status.borrow().context.map(ContextUse::percent), Some(27));
        // A window of no size says nothing; the last fill stays.
        shared.follow_usage(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":1,"size":0}}}"#);
        assert_eq!(status.borrow().context.map(ContextUse::percent), Some(27));
    }
}
