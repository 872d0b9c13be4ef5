//! pi's settings over RPC: its models (`get_available_models`), the model and thinking level
//! (`set_model`, `set_thinking_level`) the user chooses, and how full the context window is
//! (`get_session_stats`), kept in the status the chat shows. pi has no modes.

use serde_json::{json, Value};
use tokio::sync::watch;

use super::commands::{settled, CommandWriter};
use crate::process::timings::SETTING_TIMEOUT;
use crate::provider::{AgentSetting, AgentStatus, ContextUse, ModelChoice};

/// pi's thinking levels (`xhigh` is left out: only some models take it).
const THINKING_LEVELS: [&str; 5] = ["off", "minimal", "low", "medium", "high"];

/// A pi `Model` object as a choice.
pub(super) fn model_choice(model: &Value) -> Option<ModelChoice> {
    let id = model["id"].as_str()?.to_owned();
    Some(ModelChoice {
        name: model["name"].as_str().unwrap_or(&id).to_owned(),
        provider: model["provider"].as_str().map(str::to_owned),
        reasoning: model["reasoning"].as_bool().unwrap_or(false),
        id,
    })
}

/// The thinking levels a model takes.
pub(super) fn levels_for(model: &Value) -> Vec<String> {
    if model["reasoning"].as_bool().unwrap_or(false) {
        THINKING_LEVELS.map(str::to_owned).to_vec()
    } else {
        Vec::new()
    }
}

/// What `get_state` and `get_available_models` said of pi's settings.
pub(super) fn saw_state(
    status: &watch::Sender<AgentStatus>,
    state: &Value,
    models: Option<&Value>,
) {
    // A pi that lists no models (or fails to) still runs: `/model` then says so.
    let models: Vec<ModelChoice> = models
        .filter(|answer| answer["success"] == true)
        .and_then(|answer| answer["data"]["models"].as_array())
        .map(|models| models.iter().filter_map(model_choice).collect())
        .unwrap_or_default();
    status.send_modify(|status| {
        status.model = state["model"]["id"].as_str().map(str::to_owned);
        status.thinking_level = state["thinkingLevel"].as_str().map(str::to_owned);
        status.thinking_levels = levels_for(&state["model"]);
        status.models = models;
    });
}

/// Asks pi for `setting` and puts its answer in `status`: the new value, or the refusal.
pub(super) async fn ask(
    writer: &CommandWriter,
    setting: AgentSetting,
    status: &watch::Sender<AgentStatus>,
) {
    match setting {
        AgentSetting::Mode(_) => {}
        AgentSetting::Model(id) => {
            let provider = status
                .borrow()
                .models
                .iter()
                .find(|model| model.id == id)
                .and_then(|model| model.provider.clone());
            let response = writer.request(
                "model",
                json!({"type": "set_model", "provider": provider, "modelId": id}),
            );
            let answer = settled(response, SETTING_TIMEOUT).await;
            status.send_modify(|status| match answer {
                Ok(data) => {
                    status.model = data["id"].as_str().map(str::to_owned).or(Some(id));
                    status.thinking_levels = levels_for(&data);
                }
                Err(refusal) => status.refused(format!("model {id}: {refusal}")),
            });
        }
        AgentSetting::ThinkingLevel(level) => {
            let response = writer.request(
                "thinking",
                json!({"type": "set_thinking_level", "level": level}),
            );
            let answer = settled(response, SETTING_TIMEOUT).await;
            status.send_modify(|status| match answer {
                Ok(_) => status.thinking_level = Some(level),
                Err(refusal) => status.refused(format!("thinking level {level}: {refusal}")),
            });
        }
    }
}

/// Asks pi how full the model's context window is (`get_session_stats`'s `contextUsage`), in
/// the background, for the status bar. pi does not know it right after a compaction (`tokens`
/// is null): then nothing is shown rather than an old figure.
pub(super) fn ask_context(writer: &CommandWriter, status: &watch::Sender<AgentStatus>) {
    let response = writer.request("stats", json!({"type": "get_session_stats"}));
    let status = status.clone();
    tokio::spawn(async move {
        let Ok(data) = settled(response, SETTING_TIMEOUT).await else {
            return;
        };
        let usage = &data["contextUsage"];
        let context = match (usage["tokens"].as_u64(), usage["contextWindow"].as_u64()) {
            (Some(tokens), Some(window)) => ContextUse::new(tokens, window),
            _ => None,
        };
        status.send_modify(|status| status.context = context);
    });
}
