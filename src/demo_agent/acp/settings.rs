//! Each session's settings: its model and mode (`session/set_model`, `session/set_mode`, kept
//! across `session/load` through `settings.jsonl`), and in the config-options flavour the same
//! plus a thinking level as `configOptions` (`session/set_config_option`).

use std::io;

use serde_json::{json, Value};

use super::super::state;
use super::{wire, Agent, Flavour};

const SET_MODEL: &str = "session/set_model";
const SET_MODE: &str = "session/set_mode";

/// The ids `method` (`session/set_model` or `session/set_mode`) chooses from, in order.
fn choosable(method: &str) -> Vec<&'static str> {
    if method == SET_MODEL {
        wire::MODELS.iter().map(|(id, _)| *id).collect()
    } else {
        wire::MODES.iter().map(|(id, _, _)| *id).collect()
    }
}

impl Agent {
    /// The session's model and mode (indexes into `wire::MODELS` and `wire::MODES`): as last
    /// set, in this process or, for a session loaded from its file, in an earlier one.
    pub(super) fn choice(&mut self, session_id: &str) -> (usize, usize) {
        *self
            .choices
            .entry(session_id.to_owned())
            .or_insert_with(|| {
                let (model, mode) = state::recorded_settings(session_id);
                let index = |wanted: Option<String>, known: Vec<&str>| {
                    wanted
                        .and_then(|wanted| known.iter().position(|id| *id == wanted))
                        .unwrap_or(0)
                };
                (
                    index(model, choosable(SET_MODEL)),
                    index(mode, choosable(SET_MODE)),
                )
            })
    }

    /// Whether session `session_id` runs every tool without asking.
    pub(crate) fn asks_nothing(&mut self, session_id: &str) -> bool {
        self.flavour != Flavour::Gemini && wire::MODES[self.choice(session_id).1].0 == wire::YOLO
    }

    /// The session's `models` and `modes` as `session/new` returns them (the config-options
    /// flavour: its `configOptions`).
    pub(super) fn choices_of(&mut self, session_id: &str) -> Value {
        let (model, mode) = self.choice(session_id);
        if self.flavour == Flavour::ConfigOptions {
            let level = self.thought_level(session_id);
            return json!({"configOptions": wire::config_options(
                wire::MODELS[model].0,
                wire::MODES[mode].0,
                &level,
            )});
        }
        json!({
            "models": wire::models_state(wire::MODELS[model].0),
            "modes": wire::modes_state(wire::MODES[mode].0),
        })
    }

    /// `session/set_model` / `session/set_mode`: switches the session, says so, logs it.
    pub(super) fn set_choice(
        &mut self,
        id: &Value,
        method: &str,
        params: &Value,
    ) -> io::Result<()> {
        let session_id = params["sessionId"].as_str().unwrap_or_default().to_owned();
        if !self.sessions.contains_key(&session_id) {
            return self.send(&wire::session_not_found(id, &session_id));
        }
        let field = if method == SET_MODEL {
            "modelId"
        } else {
            "modeId"
        };
        let wanted = params[field].as_str().unwrap_or_default();
        let Some(index) = choosable(method).iter().position(|known| *known == wanted) else {
            return self.send(&invalid_params(id, format!("unknown {field} {wanted:?}")));
        };
        self.switch(&session_id, method, index, wanted, "")?;
        self.send(&wire::result(id, json!({})))
    }

    /// Sets the session's model or mode (`method` says which) to the `index`th, `wanted`: logs
    /// it (with `how` it was set) and announces a mode change with a `current_mode_update`.
    fn switch(
        &mut self,
        session_id: &str,
        method: &str,
        index: usize,
        wanted: &str,
        how: &str,
    ) -> io::Result<()> {
        self.choice(session_id);
        let choice = self.choices.entry(session_id.to_owned()).or_default();
        if method == SET_MODEL {
            choice.0 = index;
        } else {
            choice.1 = index;
        }
        eprintln!("demo agent (acp): {method} {wanted} (session {session_id}{how})");
        state::record_setting(session_id, method, wanted);
        if method == SET_MODE {
            let update = json!({"sessionUpdate": "current_mode_update", "currentModeId": wanted});
            self.send(&wire::update(session_id, update))?;
        }
        Ok(())
    }

    /// The session's thinking level (the config-options flavour), as last set.
    fn thought_level(&self, session_id: &str) -> String {
        state::recorded_setting(session_id, wire::SET_THOUGHT_LEVEL)
            .unwrap_or_else(|| wire::THOUGHT_LEVELS[0].to_owned())
    }

    /// `session/set_config_option {sessionId, configId, value}` (the config-options flavour):
    /// the model, mode or thinking level set as `session/set_model`/`set_mode` set them, logged
    /// the same way; the answer is the options as they are now.
    pub(super) fn set_config_option(&mut self, id: &Value, params: &Value) -> io::Result<()> {
        let session_id = params["sessionId"].as_str().unwrap_or_default().to_owned();
        if !self.sessions.contains_key(&session_id) {
            return self.send(&wire::session_not_found(id, &session_id));
        }
        let value = params["value"].as_str().unwrap_or_default().to_owned();
        match params["configId"].as_str().unwrap_or_default() {
            config @ ("model" | "mode") => {
                let method = if config == "model" {
                    SET_MODEL
                } else {
                    SET_MODE
                };
                let Some(index) = choosable(method).iter().position(|known| *known == value) else {
                    return self.send(&invalid_params(id, format!("unknown value {value:?}")));
                };
                self.switch(&session_id, method, index, &value, ", by config option")?;
            }
            "thought_level" if wire::THOUGHT_LEVELS.contains(&value.as_str()) => {
                eprintln!("demo agent (acp): thought level {value} (session {session_id})");
                state::record_setting(&session_id, wire::SET_THOUGHT_LEVEL, &value);
            }
            other => {
                return self.send(&invalid_params(
                    id,
                    format!("unknown config option {other:?} = {value:?}"),
                ))
            }
        }
        let options = self.choices_of(&session_id);
        self.send(&wire::result(id, options))
    }
}

/// `-32602 Invalid params`, saying `why`.
fn invalid_params(id: &Value, why: String) -> Value {
    wire::error(id, -32602, "Invalid params", Some(json!({"message": why})))
}
