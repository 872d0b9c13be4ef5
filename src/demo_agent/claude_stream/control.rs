//! The control protocol's requests that need no turn, as Claude Code 2.1.197 answers them:
//! `initialize` (the models and slash commands), `interrupt` with nothing to interrupt, and the
//! settings (`set_model`, `apply_flag_settings {effortLevel}`, `set_permission_mode`), each
//! logged to `settings.jsonl`.

use std::io;

use serde_json::{json, Value};

use super::super::state;
use super::{Engine, MODELS};

impl Engine {
    /// Answers a control request that needs no running turn (and interrupts with no turn).
    pub(super) fn control(&mut self, line: &Value) -> io::Result<()> {
        if line["type"] != "control_request" {
            // `control_response`s to requests the demo did not make, and anything else.
            return Ok(());
        }
        let id = line["request_id"].clone();
        let request = &line["request"];
        let subtype = request["subtype"].as_str().unwrap_or_default();
        let success = |response: Option<Value>| {
            let mut body = json!({"subtype": "success", "request_id": id});
            if let Some(response) = response {
                body["response"] = response;
            }
            json!({"type": "control_response", "response": body})
        };
        match subtype {
            "initialize" => {
                let models: Vec<Value> = MODELS
                    .iter()
                    .map(|(value, name, efforts)| {
                        let mut model = json!({"value": value, "displayName": name, "description": "a demo model"});
                        if !efforts.is_empty() {
                            model["supportsEffort"] = json!(true);
                            model["supportedEffortLevels"] = json!(efforts);
                        }
                        model
                    })
                    .collect();
                let answer = success(Some(json!({
                    "commands": [
                        {"name": "simplify", "description": "Review the changed code and simplify it", "argumentHint": "[<target>]"},
                        {"name": "init", "description": "Initialize a CLAUDE.md file", "argumentHint": ""}
                    ], "agents": [], "output_style": "default",
                    "available_output_styles": ["default"], "models": models,
                    "account": {"apiKeySource": "none"}, "pid": std::process::id()
                })));
                self.line(&answer)
            }
            "interrupt" => self.line(&success(None)),
            "set_model" => {
                let model = request["model"].as_str().unwrap_or_default().to_owned();
                state::record_setting(&self.session.header.id, "set_model", &model);
                self.session.model = Some(model.clone());
                self.model = model.clone();
                let echo = self.stamp(json!({
                    "type": "user",
                    "message": {"role": "user", "content": format!("<local-command-stdout>Set model to {model}</local-command-stdout>")},
                    "parent_tool_use_id": null, "isReplay": true
                }));
                self.line(&echo)?;
                self.line(&success(None))
            }
            "apply_flag_settings" => {
                // As Claude Code: the effort goes with every later model request
                // (`output_config.effort`; here each later prompt's line in `requests.jsonl`).
                if let Some(effort) = request["settings"]["effortLevel"].as_str() {
                    state::record_setting(&self.session.header.id, "effortLevel", effort);
                    self.session.effort = Some(effort.to_owned());
                }
                self.line(&success(None))
            }
            "set_permission_mode" => {
                let mode = request["mode"].as_str().unwrap_or_default().to_owned();
                state::record_setting(&self.session.header.id, "set_permission_mode", &mode);
                self.mode = mode.clone();
                self.line(&success(Some(json!({"mode": mode}))))?;
                let status = self.stamp(json!({
                    "type": "system", "subtype": "status", "status": null, "permissionMode": mode
                }));
                self.line(&status)
            }
            other => {
                let error = json!({"type": "control_response", "response": {
                    "subtype": "error", "request_id": id,
                    "error": format!("Unsupported control request subtype: {other}")
                }});
                self.line(&error)
            }
        }
    }
}
