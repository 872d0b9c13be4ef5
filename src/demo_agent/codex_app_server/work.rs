//! The scenarios' work inside a turn: a command run (asked first when the policy says so), the
//! `plan` scenario's plan, command and patch, the `slow` answer that takes steering and stops,
//! and the real `sleep` that an interrupt leaves running.

use std::path::Path;
use std::sync::mpsc::RecvTimeoutError;

use serde_json::{json, Value};

use super::super::state::now_ms;
use super::thread::{log_request, Thread};
use super::{notify, respond, respond_error, send, Ending, Server, WRITTEN_FILE};

impl Server {
    /// Runs `command` as a `commandExecution` item; `ask`: asks first. `Some(ran)`, or `None`
    /// when the turn was interrupted (or the answer was `cancel`).
    pub(super) fn command(
        &mut self,
        at: &Value,
        thread: &Thread,
        command: &str,
        ask: bool,
    ) -> Option<bool> {
        let item_id = format!("call_{}", now_ms());
        let shell = format!("/bin/bash -lc '{command}'");
        let item = |status: &str, output: &str, exit: Value| {
            json!({"type": "commandExecution", "id": item_id, "command": shell, "cwd": thread.cwd,
                   "status": status, "aggregatedOutput": output, "exitCode": exit, "commandActions": []})
        };
        self.item(at, "item/started", item("inProgress", "", Value::Null));
        if ask {
            let request_id = self.next_request;
            self.next_request += 1;
            let mut params = at.clone();
            params["itemId"] = Value::from(item_id.clone());
            params["command"] = Value::from(shell.clone());
            params["cwd"] = Value::from(thread.cwd.clone());
            params["reason"] = Value::from("needs to write a file");
            params["availableDecisions"] =
                json!(["accept", "acceptForSession", "decline", "cancel"]);
            send(
                &json!({"method": "item/commandExecution/requestApproval", "id": request_id, "params": params}),
            );
            let decision = loop {
                let Ok(message) = self.rx.recv() else {
                    return None;
                };
                if message.get("method").is_none() && message["id"] == request_id {
                    break message["result"]["decision"].clone();
                }
                if message["method"] == "turn/interrupt" {
                    respond(&message["id"], json!({}));
                    self.item(at, "item/completed", item("declined", "", Value::Null));
                    return None;
                }
                self.handle_during_turn(&message);
            };
            match decision.as_str() {
                Some("accept" | "acceptForSession") => {}
                Some("cancel") => {
                    self.item(at, "item/completed", item("declined", "", Value::Null));
                    return None;
                }
                _ => {
                    self.item(at, "item/completed", item("declined", "", Value::Null));
                    return Some(false);
                }
            }
        }
        let output = if command.starts_with("touch ") {
            let path = Path::new(&thread.cwd).join(WRITTEN_FILE);
            match std::fs::write(&path, "written by the demo app-server\n") {
                Ok(()) => format!("created {WRITTEN_FILE}\n"),
                Err(error) => format!("touch: {error}\n"),
            }
        } else {
            "hi\n".to_owned()
        };
        notify(
            "item/commandExecution/outputDelta",
            Self::with(at, "itemId", Value::from(item_id.clone()), &output),
        );
        self.item(
            at,
            "item/completed",
            item("completed", &output, Value::from(0)),
        );
        Some(true)
    }

    /// The `plan` scenario's work: the plan, a command, a patch, the plan done.
    pub(super) fn plan_work(&mut self, at: &Value, thread: &Thread) {
        let plan = |first: &str, second: &str| {
            let mut params = at.clone();
            params["explanation"] = Value::Null;
            params["plan"] = json!([
                {"step": "Write the notes", "status": first},
                {"step": "Update the notes", "status": second},
            ]);
            notify("turn/plan/updated", params);
        };
        plan("inProgress", "pending");
        std::thread::sleep(self.pace.scaled(700));
        let notes = Path::new(&thread.cwd).join("notes.txt");
        let command_id = format!("call_{}", now_ms());
        let command = |status: &str, output: &str, exit: Value| {
            json!({"type": "commandExecution", "id": command_id,
                   "command": "/bin/bash -lc \"printf 'v1\\\\n' > notes.txt\"", "cwd": thread.cwd,
                   "status": status, "aggregatedOutput": output, "exitCode": exit,
                   "commandActions": [{"type": "unknown", "command": "printf 'v1\\n' > notes.txt"}]})
        };
        self.item(at, "item/started", command("inProgress", "", Value::Null));
        let _ = std::fs::write(&notes, "v1\n");
        std::thread::sleep(self.pace.scaled(700));
        self.item(
            at,
            "item/completed",
            command("completed", "", Value::from(0)),
        );
        let patch_id = format!("call_{}", now_ms());
        let patch = |status: &str| {
            json!({"type": "fileChange", "id": patch_id, "status": status, "changes": [{
                "path": notes.display().to_string(), "kind": {"type": "update", "move_path": null},
                "diff": "@@ -1 +1,2 @@\n-v1\n+v2\n+v3\n"}]})
        };
        self.item(at, "item/started", patch("inProgress"));
        let _ = std::fs::write(&notes, "v2\nv3\n");
        std::thread::sleep(self.pace.scaled(700));
        self.item(at, "item/completed", patch("completed"));
        plan("completed", "completed");
    }

    /// A word every 100 ms; stops on `turn/interrupt`, takes `turn/steer` into the turn.
    pub(super) fn slow(&mut self, at: &Value, thread: &mut Thread) -> Ending {
        let item_id = format!("msg_{}", now_ms());
        self.item(
            at,
            "item/started",
            json!({"type": "agentMessage", "id": item_id, "text": ""}),
        );
        let mut text = String::new();
        let mut steered = Vec::new();
        for index in 0..60 {
            let word = format!("word{index} ");
            notify(
                "item/agentMessage/delta",
                Self::with(at, "itemId", Value::from(item_id.clone()), &word),
            );
            text.push_str(&word);
            match self.rx.recv_timeout(self.pace.scaled(100)) {
                Ok(message)
                    if message["method"] == "turn/interrupt"
                        && !super::super::knobs::ignores_cancel() =>
                {
                    respond(&message["id"], json!({}));
                    return Ending::Interrupted;
                }
                Ok(message) if message["method"] == "turn/steer" => {
                    let steer = message["params"]["input"][0]["text"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    if message["params"]["expectedTurnId"] != at["turnId"] {
                        respond_error(
                            &message["id"],
                            -32600,
                            "expectedTurnId is not the active turn",
                        );
                        continue;
                    }
                    respond(&message["id"], json!({"turnId": at["turnId"]}));
                    if let Some(turn) = thread.turns.last_mut() {
                        turn.users.push(steer.clone());
                    }
                    self.user_item(at, &steer);
                    log_request(thread, &self.settings);
                    steered.push(steer);
                }
                Ok(message) => self.handle_during_turn(&message),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ending::Interrupted,
            }
        }
        for steer in steered {
            let word = format!("(steered: {steer}) ");
            notify(
                "item/agentMessage/delta",
                Self::with(at, "itemId", Value::from(item_id.clone()), &word),
            );
            text.push_str(&word);
        }
        self.item(
            at,
            "item/completed",
            json!({"type": "agentMessage", "id": item_id, "text": text}),
        );
        Ending::Completed
    }

    /// Runs a real `sleep 30` as a command item until the turn is interrupted, and leaves it
    /// running then (as Codex leaves a running command on `turn/interrupt`).
    pub(super) fn sleep(&mut self, at: &Value, thread: &Thread) -> Ending {
        let item_id = format!("call_{}", now_ms());
        let item = |status: &str| {
            json!({"type": "commandExecution", "id": item_id, "command": "/bin/bash -lc 'sleep 30'",
                   "cwd": thread.cwd, "status": status, "aggregatedOutput": "", "exitCode": null})
        };
        let child = std::process::Command::new("sleep")
            .arg("30")
            .current_dir(&thread.cwd)
            .spawn();
        self.item(at, "item/started", item("inProgress"));
        let mut child = match child {
            Ok(child) => child,
            Err(error) => return self.say(at, &format!("sleep did not start: {error}")),
        };
        loop {
            match self.rx.recv() {
                Ok(message) if message["method"] == "turn/interrupt" => {
                    respond(&message["id"], json!({}));
                    return Ending::Interrupted;
                }
                Ok(message) => self.handle_during_turn(&message),
                Err(_) => {
                    let _ = child.kill();
                    return Ending::Interrupted;
                }
            }
        }
    }
}
