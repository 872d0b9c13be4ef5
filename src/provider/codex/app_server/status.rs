//! What the app-server protocol keeps between turns and shares with the UI: the model,
//! reasoning effort and approval preset (Codex's `model/list`, the thread's settings, the
//! user's choice, sent with the next `turn/start`), the messages given mid-turn waiting to
//! reach the model, and the warnings already shown.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::sync::watch;

use super::history::ThreadHistory;
use super::REQUEST_TIMEOUT;
use crate::provider::json_rpc::{settled, JsonRpc};
use crate::provider::AgentSetting;
use crate::provider::{AgentQueue, AgentStatus, ContextUse, ModeChoice, ModelChoice};

/// The user's choices, sent with every `turn/start` (Codex keeps them for later turns too).
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Overrides {
    pub(super) model: Option<String>,
    pub(super) effort: Option<String>,
    /// One of [`PRESETS`], by id.
    pub(super) mode: Option<String>,
}

/// Codex's approval presets (its TUI's `/approvals`), the modes Shift+Tab cycles: id, name,
/// approval policy, sandbox policy.
const PRESETS: [(&str, &str, &str, &str); 3] = [
    ("read-only", "read only", "on-request", "readOnly"),
    ("auto", "auto", "on-request", "workspaceWrite"),
    ("full-access", "full access", "never", "dangerFullAccess"),
];

/// What full access lets Codex do (its own TUI's warning says as much).
const FULL_ACCESS_ALLOWS: &str = "Codex runs every command and edits any file without asking, \
     outside the sandbox, with network access";

/// The `approvalPolicy` and `sandboxPolicy` of preset `id` for `turn/start`.
pub(super) fn preset_policies(id: &str) -> Option<(Value, Value)> {
    PRESETS
        .iter()
        .find(|preset| preset.0 == id)
        .map(|(_, _, approval, sandbox)| (json!(approval), json!({"type": sandbox})))
}

/// The preset a thread's approval policy and sandbox are (`None`: a mix of the user's own).
fn preset_of(approval: &Value, sandbox: &Value) -> Option<String> {
    PRESETS
        .iter()
        .find(|preset| approval == preset.2 && sandbox["type"] == preset.3)
        .map(|preset| preset.0.to_owned())
}

#[derive(Clone)]
pub(super) struct Shared {
    status: watch::Sender<AgentStatus>,
    queue: watch::Sender<AgentQueue>,
    overrides: Arc<Mutex<Overrides>>,
    /// Codex's `model/list` entries (for each model's reasoning efforts).
    models: Arc<Mutex<Vec<Value>>>,
    /// Warnings shown once already (Codex repeats "Model metadata … not found" every turn).
    warned: Arc<Mutex<HashSet<String>>>,
    /// The thread's turns, for the point each checkpoint branches back to.
    pub(super) history: ThreadHistory,
}

impl Shared {
    pub(super) fn new() -> Self {
        Self {
            status: watch::Sender::new(AgentStatus::default()),
            queue: watch::Sender::new(AgentQueue::default()),
            overrides: Arc::new(Mutex::new(Overrides::default())),
            models: Arc::new(Mutex::new(Vec::new())),
            warned: Arc::new(Mutex::new(HashSet::new())),
            history: ThreadHistory::default(),
        }
    }

    pub(super) fn status(&self) -> watch::Receiver<AgentStatus> {
        self.status.subscribe()
    }

    pub(super) fn queue(&self) -> watch::Receiver<AgentQueue> {
        self.queue.subscribe()
    }

    pub(super) fn overrides(&self) -> Overrides {
        self.overrides
            .lock()
            .map(|overrides| overrides.clone())
            .unwrap_or_default()
    }

    /// `thread/tokenUsage/updated`: the last model request's tokens are what fills the model's
    /// context window (`modelContextWindow`), as Codex's own TUI counts it.
    pub(super) fn observe_context(&self, line: &str) {
        if !line.contains("thread/tokenUsage/updated") {
            return;
        }
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let usage = &value["params"]["tokenUsage"];
        let tokens = usage["last"]["totalTokens"].as_u64();
        let window = usage["modelContextWindow"].as_u64();
        if let Some(context) = tokens
            .zip(window)
            .and_then(|(tokens, window)| ContextUse::new(tokens, window))
        {
            self.status
                .send_modify(|status| status.context = Some(context));
        }
    }

    /// True the first time `warning` is seen by this provider.
    pub(super) fn first_warning(&self, warning: &str) -> bool {
        self.warned
            .lock()
            .map(|mut warned| warned.insert(warning.to_owned()))
            .unwrap_or(true)
    }

    /// Asks Codex for its models (in the background: the first prompt does not wait).
    pub(super) fn list_models(&self, connection: &JsonRpc) {
        let shared = self.clone();
        let listed = connection.request("model/list", json!({}));
        tokio::spawn(async move {
            match settled(listed, REQUEST_TIMEOUT, "Codex").await {
                Ok(answer) => {
                    let models = answer["data"].as_array().cloned().unwrap_or_default();
                    if let Ok(mut kept) = shared.models.lock() {
                        kept.clone_from(&models);
                    }
                    shared.status.send_modify(|status| {
                        status.models = models.iter().filter_map(choice_of).collect();
                    });
                    shared.refresh_levels();
                }
                Err(error) => tracing::warn!(%error, "Codex did not list its models"),
            }
        });
    }

    /// A thread is open: Codex's model, effort, approval policy and sandbox for it are in
    /// `answer` (of `thread/start` or `thread/resume`).
    pub(super) fn saw_thread(&self, answer: &Value) {
        let overrides = self.overrides();
        let text = |key: &str| answer[key].as_str().map(str::to_owned);
        self.status.send_modify(|status| {
            status.model = overrides.model.or(text("model"));
            status.thinking_level = overrides.effort.or(text("reasoningEffort"));
            status.mode = overrides
                .mode
                .or_else(|| preset_of(&answer["approvalPolicy"], &answer["sandbox"]));
            status.modes = PRESETS
                .iter()
                .map(|(id, name, approval, sandbox)| ModeChoice {
                    id: (*id).to_owned(),
                    name: (*name).to_owned(),
                    most_permissive: (*approval == "never" && *sandbox == "dangerFullAccess")
                        .then(|| FULL_ACCESS_ALLOWS.to_owned()),
                })
                .collect();
        });
        self.refresh_levels();
    }

    /// The current model's reasoning efforts, and its default effort when none is chosen.
    fn refresh_levels(&self) {
        let Ok(models) = self.models.lock() else {
            return;
        };
        self.status.send_modify(|status| {
            let current = models.iter().find(|model| {
                status.model.as_deref().is_some_and(|id| {
                    model["id"].as_str() == Some(id) || model["model"].as_str() == Some(id)
                })
            });
            status.thinking_levels = current
                .and_then(|model| model["supportedReasoningEfforts"].as_array())
                .map(|efforts| {
                    efforts
                        .iter()
                        .filter_map(|effort| effort["reasoningEffort"].as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            if status.thinking_level.is_none() {
                status.thinking_level = current
                    .and_then(|model| model["defaultReasoningEffort"].as_str())
                    .map(str::to_owned);
            }
        });
    }

    /// The user chose a model or an effort: it goes with the next `turn/start`, and holds for
    /// the rest of the conversation.
    pub(super) fn change(&self, setting: AgentSetting) -> bool {
        let Ok(mut overrides) = self.overrides.lock() else {
            return false;
        };
        match setting {
            AgentSetting::Model(id) => {
                overrides.model = Some(id.clone());
                // A model's efforts differ: its own default until the user picks one again.
                overrides.effort = None;
                drop(overrides);
                self.status.send_modify(|status| {
                    status.model = Some(id);
                    status.thinking_level = None;
                });
                self.refresh_levels();
            }
            AgentSetting::ThinkingLevel(level) => {
                overrides.effort = Some(level.clone());
                drop(overrides);
                self.status
                    .send_modify(|status| status.thinking_level = Some(level));
            }
            AgentSetting::Mode(id) => {
                if preset_policies(&id).is_none() {
                    return false;
                }
                overrides.mode = Some(id.clone());
                drop(overrides);
                self.status.send_modify(|status| status.mode = Some(id));
            }
        }
        true
    }

    /// The conversation's settings (the config's start, the choices of a resumed conversation)
    /// for each kind the user has not chosen in this run; they go with every `turn/start`.
    pub(super) fn adopt(&self, settings: &[AgentSetting]) {
        for setting in settings {
            let unset = self.overrides.lock().is_ok_and(|overrides| match setting {
                AgentSetting::Model(_) => overrides.model.is_none(),
                AgentSetting::ThinkingLevel(_) => overrides.effort.is_none(),
                AgentSetting::Mode(_) => overrides.mode.is_none(),
            });
            if unset {
                self.change(setting.clone());
            }
        }
    }

    /// A message given mid-turn is on its way to the model.
    pub(super) fn steering(&self, text: &str) {
        self.queue
            .send_modify(|queue| queue.steering.push(text.to_owned()));
    }

    /// A message given mid-turn reached the model.
    pub(super) fn delivered(&self, text: &str) {
        self.queue.send_modify(|queue| {
            if let Some(at) = queue.steering.iter().position(|queued| queued == text) {
                queue.steering.remove(at);
            }
        });
    }

    /// The turn is over: the messages that did not reach the model.
    pub(super) fn undelivered(&self) -> Vec<String> {
        std::mem::take(&mut self.queue.send_replace(AgentQueue::default()).steering)
    }
}

/// A `model/list` entry as a choice in `/model`.
fn choice_of(model: &Value) -> Option<ModelChoice> {
    let id = model["id"].as_str()?.to_owned();
    if model["hidden"] == true {
        return None;
    }
    Some(ModelChoice {
        name: model["displayName"].as_str().unwrap_or(&id).to_owned(),
        provider: None,
        reasoning: model["supportedReasoningEfforts"]
            .as_array()
            .is_some_and(|efforts| !efforts.is_empty()),
        id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_is_the_last_requests_tokens_of_codexs_window() {
        let shared = Shared::new();
        // As Codex 0.1xx sends it (protocols/codex/captures/appserver_text.appserver.jsonl).
        let line = r#"{"method": "thread/tokenUsage/updated", "params": {"threadId": "t", "turnId": "u", "tokenUsage": {"total": {"totalTokens": 51680, "inputTokens": 50000, "outputTokens": 1680}, "last": {"totalTokens": 25840, "inputTokens": 25000, "cachedInputTokens": 0, "cacheWriteInputTokens": 0, "outputTokens": 840, "reasoningOutputTokens": 3}, "modelContextWindow": 258400}}}"#;
        shared.observe_context(line);
        let context = shared.status().borrow().context.expect("a context");
        assert_eq!(context, ContextUse::new(25840, 258400).unwrap());
        assert_eq!(context.percent(), 10);
        // No window (the demo agent, an old Codex): nothing is made up.
        let shared = Shared::new();
        shared.observe_context(&line.replace("258400", "null"));
        assert_eq!(shared.status().borrow().context, None);
    }
}
