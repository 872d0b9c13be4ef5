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
}

impl AcpShared {
    pub(crate) fn new() -> Self {
        Self {
            status: watch::Sender::new(AgentStatus::default()),
            control: Arc::new(Mutex::new(None)),
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

    /// The `models` and `modes` of a `session/new` or `session/load` answer, when it has them.
    pub(super) fn saw_choices(&self, answer: &Value) {
        self.saw_models(answer);
        self.saw_modes(answer);
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
        if matches!(setting, AgentSetting::ThinkingLevel(_)) {
            return false;
        }
        let Some((connection, session_id)) = self.control.lock().ok().and_then(|c| c.clone())
        else {
            return false;
        };
        let status = self.status.clone();
        tokio::spawn(async move { ask(&connection, &session_id, setting, &status).await });
        true
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
            // Read before each: a model's answer changes what the next setting finds.
            let needed = setting.needs_asking(&self.status.borrow());
            if needed {
                ask(connection, session_id, setting.clone(), &self.status).await;
            }
        }
    }
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
