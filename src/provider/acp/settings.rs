//! What an ACP agent says of its models, and switching them between turns.
//!
//! `session/new` and `session/load` answer with `models {availableModels: [{modelId, name}],
//! currentModelId}` (the Claude adapter, the demo agent; Gemini CLI with its own list): the
//! status bar names the current model and `/model` offers the list. A choice is sent as
//! `session/set_model {sessionId, modelId}` on the running agent (responses are routed to
//! their waiter whether or not a turn runs), and shown once the agent accepts it; a refusal is
//! shown in the agent's words.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::watch;

use super::session::Connection;
use crate::provider::pi::rpc::{AgentStatus, ModelChoice};
use crate::provider::AgentSetting;

/// How long an agent may take to answer a settings request.
const SETTING_TIMEOUT: Duration = Duration::from_secs(10);

/// Shared by the provider and its live session: the status the chat shows, and the way to
/// the session between turns.
#[derive(Clone)]
pub(crate) struct AcpShared {
    status: watch::Sender<AgentStatus>,
    control: Arc<Mutex<Option<(Connection, String)>>>,
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
    pub(super) fn publish(&self, connection: Connection, session_id: String) {
        if let Ok(mut control) = self.control.lock() {
            *control = Some((connection, session_id));
        }
    }

    /// The `models` of a `session/new` or `session/load` answer, when it has them.
    pub(super) fn saw_choices(&self, answer: &Value) {
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
        let AgentSetting::Model(model) = setting else {
            return false;
        };
        let Some((connection, session_id)) = self.control.lock().ok().and_then(|c| c.clone())
        else {
            return false;
        };
        let answer = connection.request(
            "session/set_model",
            json!({"sessionId": session_id, "modelId": model}),
        );
        let status = self.status.clone();
        tokio::spawn(async move {
            let outcome = match tokio::time::timeout(SETTING_TIMEOUT, answer).await {
                Ok(Ok(head)) => match head.error {
                    None => Ok(()),
                    Some(error) => Err(error.describe()),
                },
                Ok(Err(_)) => Err("the agent ended before answering".to_owned()),
                Err(_) => Err(format!(
                    "the agent did not answer within {} s",
                    SETTING_TIMEOUT.as_secs()
                )),
            };
            status.send_modify(|status| match outcome {
                Ok(()) => status.model = Some(model),
                Err(why) => {
                    status.refusals += 1;
                    status.refusal = Some(format!("model {model}: {why}"));
                }
            });
        });
        true
    }
}
