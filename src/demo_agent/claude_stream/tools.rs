//! The turn's tools: a `Write` asked with `can_use_tool` (unless the session allows it) and
//! the answer's permission updates applied, and a real `sleep` that an interrupt kills.

use std::io;

use serde_json::{json, Value};

use super::super::bash;
use super::super::live::Serving;
use super::{Cut, Engine, Input};

impl Engine {
    /// A `Write` of `file`: asked with `can_use_tool` unless allowed for the session; returns
    /// what the closing text says.
    pub(super) fn write_tool(
        &mut self,
        message_id: &str,
        file: &str,
    ) -> io::Result<Result<String, Cut>> {
        let tool_id = format!("toolu_demo_{}", self.next_id);
        self.next_id += 1;
        let path = format!("{}/{file}", self.cwd);
        let content = "written by the demo agent\n";
        let input = json!({"file_path": path, "content": content});
        self.tool_use(message_id, &tool_id, "Write", &input)?;
        // As Claude Code: `acceptEdits` allows file edits without asking.
        let accepted =
            self.mode == "acceptEdits" || self.allowed_always.iter().any(|rule| rule == "Write");
        let verdict = if accepted {
            Ok(None)
        } else {
            self.ask(&tool_id, &input, &path)?
        };
        let (content_text, is_error, said) = match verdict {
            Err(Cut::Interrupted) => {
                let rejected = self.stamp(json!({"type": "user", "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": tool_id, "is_error": true,
                     "content": "The user doesn't want to proceed with this tool use. The tool use was rejected."}]},
                    "parent_tool_use_id": null, "tool_use_result": "User rejected tool use"}));
                self.line(&rejected)?;
                return Ok(Err(Cut::Interrupted));
            }
            Err(Cut::Exit) => return Ok(Err(Cut::Exit)),
            Ok(None) => {
                let written = std::fs::write(&path, content);
                match written {
                    Ok(()) => (
                        format!("File created successfully at: {path}"),
                        false,
                        format!("Wrote {file}."),
                    ),
                    Err(error) => (
                        format!("Error writing {path}: {error}"),
                        true,
                        format!("Could not write {file}."),
                    ),
                }
            }
            Ok(Some(message)) => (message.clone(), true, format!("Not written: {message}")),
        };
        let result = self.stamp(json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_id, "content": content_text, "is_error": is_error}]},
            "parent_tool_use_id": null}));
        self.line(&result)?;
        Ok(Ok(said))
    }

    /// A Bash `sleep 100` run as a real process in a process group of its own, as Claude Code
    /// runs its shell, until it ends or the turn is interrupted: then it is killed, unless the
    /// `leave tools` knob says otherwise. Returns what the closing text says.
    pub(super) fn sleep_tool(&mut self, message_id: &str) -> io::Result<Result<String, Cut>> {
        use std::os::unix::process::CommandExt;
        let tool_id = format!("toolu_demo_{}", self.next_id);
        self.next_id += 1;
        let input = json!({"command": "sleep 100", "description": "Sleep for a while"});
        self.tool_use(message_id, &tool_id, "Bash", &input)?;
        let mut child = std::process::Command::new("sleep")
            .arg("100")
            .current_dir(&self.cwd)
            .process_group(0)
            .spawn()?;
        let (content, is_error, said) = loop {
            if let Some(status) = child.try_wait()? {
                break (
                    format!("sleep ended: {status}"),
                    false,
                    "Done sleeping.".to_owned(),
                );
            }
            match self.wait(50)? {
                None => {}
                Some(cut) => {
                    bash::stop_cut_short(&mut child);
                    let result = self.stamp(
                        json!({"type": "user", "message": {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": tool_id, "is_error": true,
                         "content": "Interrupted by user"}]}, "parent_tool_use_id": null}),
                    );
                    self.line(&result)?;
                    return Ok(Err(cut));
                }
            }
        };
        let result = self.stamp(json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": is_error}]},
            "parent_tool_use_id": null}));
        self.line(&result)?;
        Ok(Ok(said))
    }

    /// `can_use_tool` and its answer: `Ok(None)` allowed, `Ok(Some(message))` denied.
    pub(super) fn ask(
        &mut self,
        tool_id: &str,
        input: &Value,
        path: &str,
    ) -> io::Result<Result<Option<String>, Cut>> {
        let request_id = self.uuid();
        let request = json!({"type": "control_request", "request_id": request_id, "request": {
            "subtype": "can_use_tool", "tool_name": "Write", "display_name": "Write",
            "input": input, "description": format!("Write {path}"),
            "permission_suggestions": [
                {"type": "addRules", "rules": [{"toolName": "Write"}], "behavior": "allow", "destination": "localSettings"},
                {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
            ],
            "blocked_path": path, "tool_use_id": tool_id}});
        self.line(&request)?;
        let answered = self.await_answer(|input| match input {
            Input::Line(line)
                if line["type"] == "control_response"
                    && line["response"]["request_id"] == request_id.as_str() =>
            {
                Ok(line)
            }
            other => Err(other),
        })?;
        let line = match answered {
            Ok(line) => line,
            Err(cut) => return Ok(Err(cut)),
        };
        let answer = &line["response"]["response"];
        if answer["behavior"] != "allow" {
            let message = answer["message"].as_str().unwrap_or("denied").to_owned();
            return Ok(Ok(Some(message)));
        }
        for update in answer["updatedPermissions"]
            .as_array()
            .into_iter()
            .flatten()
        {
            match update["type"].as_str() {
                Some("addRules") => self.allowed_always.push("Write".to_owned()),
                // As Claude Code: the session's mode changes, and it says so.
                Some("setMode") => {
                    let mode = update["mode"].as_str().unwrap_or_default();
                    self.mode = mode.to_owned();
                    let status = self.stamp(json!({
                        "type": "system", "subtype": "status", "status": null,
                        "permissionMode": mode
                    }));
                    self.line(&status)?;
                }
                _ => {}
            }
        }
        Ok(Ok(None))
    }
}
