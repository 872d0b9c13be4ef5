//! One live `pi --mode rpc` process with its session: started and asked for its state, and
//! switched to a restored session file or to a new session without a new process.

use std::time::Duration;

use serde_json::{json, Value};

use super::commands::CommandWriter;
use super::settings::{ask, saw_state};
use super::RpcProtocol;
use crate::config::Transport;
use crate::process::timings::START_TIMEOUT;
use crate::provider::live::{Live, LiveProcess, NoReply, StartFailure, Unstarted};
use crate::provider::AttemptRequest;

/// How long pi may take to switch to (or open) a session in the running process; a pi that
/// does not know the command answers without the id, so the wait ends here and pi restarts.
const SWITCH_TIMEOUT: Duration = Duration::from_secs(5);

/// What the driver keeps of a live pi.
pub(crate) struct RpcSession {
    pub(super) writer: CommandWriter,
    pub(super) session_id: Option<String>,
    pub(super) session_file: Option<String>,
}

impl RpcSession {
    /// Sends `command` and waits up to `timeout` for its response, keeping the process read.
    async fn ask(
        &self,
        process: &mut LiveProcess,
        prefix: &str,
        command: Value,
        timeout: Duration,
    ) -> Result<Value, NoReply> {
        let response = self.writer.request(prefix, command);
        process.await_reply(response, timeout, prefix).await
    }

    /// Reads pi's `get_state` answer: the session it runs.
    fn saw_state(&mut self, state: &Value) {
        let data = &state["data"];
        self.session_id = data["sessionId"].as_str().map(str::to_owned);
        self.session_file = data["sessionFile"].as_str().map(str::to_owned);
    }
}

impl RpcProtocol {
    /// Starts pi for `request.session`, turns its own retries off and asks it for its state,
    /// its models and the conversation's settings.
    pub(super) async fn start_pi(
        &self,
        request: &AttemptRequest,
    ) -> Result<Live<RpcSession>, Unstarted> {
        let Some(spec) = self.backend.live_spawn_spec(Transport::Rpc, request) else {
            return Err(StartFailure::Spawn(format!(
                "the {} backend has no RPC mode",
                self.backend.name()
            ))
            .into());
        };
        let (router, connect) = CommandWriter::router();
        let process = LiveProcess::start(&spec, router, "pi (rpc)")
            .map_err(|error| Unstarted::from(StartFailure::Spawn(error)))?;
        let session = RpcSession {
            writer: connect(process.commands.clone()),
            session_id: None,
            session_file: None,
        };
        let mut live = Live::new(process, session, request.session.clone());
        let writer = live.session.writer.clone();
        writer.send("retry", json!({"type": "set_auto_retry", "enabled": false}));
        let state = writer.request("state", json!({"type": "get_state"}));
        let models = writer.request("models", json!({"type": "get_available_models"}));
        let state = match live
            .process
            .await_reply(state, START_TIMEOUT, "get_state")
            .await
        {
            Ok(state) => state,
            Err(no_reply) => {
                return Err(live.unstarted(StartFailure::NoAnswer(no_reply, "get_state".into())))
            }
        };
        live.session.saw_state(&state);
        let models = live
            .process
            .await_reply(models, START_TIMEOUT, "get_available_models")
            .await
            .ok();
        saw_state(&self.status, &state["data"], models.as_ref());
        // The conversation's settings (a `--model` from the config would otherwise win over
        // the model the user chose), in order: a model before its level.
        for setting in &request.settings {
            let needed = setting.needs_asking(&self.status.borrow());
            if needed {
                ask(&writer, setting.clone(), &self.status).await;
            }
        }
        if let Ok(mut control) = self.control.lock() {
            *control = Some(writer);
        }
        Ok(live)
    }
}

/// `switch_session` to the session file, which the orchestrator has just restored: pi replaces
/// what it holds (its queue too) with what the file holds, without a new process. False when
/// pi has no file yet (switching to it would start a new session) or did not switch.
pub(super) async fn reload(live: &mut Live<RpcSession>) -> bool {
    let Some(file) = live.session.session_file.clone() else {
        return false;
    };
    if !live.process.is_running() {
        return false;
    }
    let command = json!({"type": "switch_session", "sessionPath": file});
    match live
        .session
        .ask(&mut live.process, "switch", command, SWITCH_TIMEOUT)
        .await
    {
        Ok(response) if response["success"] == Value::Bool(true) => {
            tracing::info!(file, "pi re-read the restored session file");
            true
        }
        other => {
            tracing::warn!(?other, "pi did not switch to the restored session file");
            false
        }
    }
}

/// Has pi re-read its session file, which leaves behind its queue and whatever it held in
/// memory only; false when the file is not written yet or pi did not switch.
pub(super) async fn drop_held(live: &mut Live<RpcSession>) -> bool {
    let written = live
        .session
        .session_file
        .as_deref()
        .is_some_and(|file| std::path::Path::new(file).is_file());
    written && reload(live).await
}

/// `new_session` in the running pi: a retry in a fresh session costs no cold start.
pub(super) async fn open_new(live: &mut Live<RpcSession>, request: &AttemptRequest) -> bool {
    if !live.process.is_running() {
        return false;
    }
    let command = json!({"type": "new_session"});
    match live
        .session
        .ask(&mut live.process, "new", command, SWITCH_TIMEOUT)
        .await
    {
        Ok(response) if response["success"] == Value::Bool(true) => {}
        other => {
            tracing::warn!(?other, "pi did not open a new session");
            return false;
        }
    }
    let command = json!({"type": "get_state"});
    match live
        .session
        .ask(&mut live.process, "state", command, START_TIMEOUT)
        .await
    {
        Ok(state) => {
            live.session.saw_state(&state);
            live.reopened(request.session.clone());
            true
        }
        Err(_) => false,
    }
}
