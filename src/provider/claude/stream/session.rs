//! One live Claude Code process in stream-json mode: started, its control protocol initialized,
//! and told the model and mode the user chose in this conversation.

use serde_json::json;

use super::control::Control;
use super::settings::{commands_of, configured_flag, effort_request, model_choice};
use super::StreamProtocol;
use crate::config::Transport;
use crate::process::timings::{SETTING_TIMEOUT, START_TIMEOUT};
use crate::provider::live::{Live, LiveProcess, StartFailure, Unstarted};
use crate::provider::{AttemptRequest, ModelChoice, SessionRef};

/// What the driver keeps of a live Claude Code.
pub(crate) struct StreamSession {
    pub(super) control: Control,
    /// The session's id, once known (`system/init`, or the id agentty chose).
    pub(super) session_id: Option<String>,
}

impl StreamProtocol {
    /// Starts the CLI for `request.session` and initializes the control protocol.
    pub(super) async fn start_cli(
        &self,
        request: &AttemptRequest,
    ) -> Result<Live<StreamSession>, Unstarted> {
        let Some(spec) = self.backend.live_spawn_spec(Transport::Stream, request) else {
            return Err(StartFailure::Spawn(format!(
                "the {} backend has no stream-json mode (use --transport json)",
                self.backend.name()
            ))
            .into());
        };
        let session_id = match &request.session {
            SessionRef::Resume(id) => Some(id.clone()),
            _ => configured_flag(&spec, "--session-id"),
        };
        let (router, connect) = Control::router();
        let process = LiveProcess::start(&spec, router, "Claude Code (stream-json)")
            .map_err(|error| Unstarted::from(StartFailure::Spawn(error)))?;
        let session = StreamSession {
            control: connect(process.commands.clone()),
            session_id,
        };
        let mut live = Live::new(process, session, request.session.clone());
        let control = live.session.control.clone();
        let initialized = control.request(json!({"subtype": "initialize", "hooks": null}));
        let response = match live
            .process
            .await_reply(initialized, START_TIMEOUT, "initialize")
            .await
        {
            Ok(response) => response,
            Err(no_reply) => {
                return Err(live.unstarted(StartFailure::NoAnswer(no_reply, "`initialize`".into())))
            }
        };
        let models: Vec<(ModelChoice, Vec<String>)> = response["response"]["models"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(model_choice)
            .collect();
        // A model or mode the user chose holds for the conversation: a process started again
        // (after a failure, a stop or a new session) is told it too. What the command line set
        // already needs no request.
        let chosen = self.shared.chosen();
        let mut settled = Vec::new();
        for (chosen, flag, request) in [
            (chosen.model, "--model", "set_model"),
            (chosen.mode, "--permission-mode", "set_permission_mode"),
        ] {
            let configured = configured_flag(&spec, flag);
            let wanted = chosen.filter(|wanted| Some(wanted) != configured.as_ref());
            let now = match wanted {
                None => configured,
                Some(wanted) => {
                    let key = if request == "set_model" {
                        "model"
                    } else {
                        "mode"
                    };
                    let answer = control.request(json!({"subtype": request, key: wanted}));
                    live.process
                        .await_reply(answer, SETTING_TIMEOUT, request)
                        .await
                        .ok()
                        .map(|_| wanted)
                }
            };
            settled.push(now);
        }
        let mode = settled.pop().flatten();
        let model = settled.pop().flatten();
        // The effort after the model: it holds across `set_model`.
        let configured = configured_flag(&spec, "--effort");
        let effort = match chosen
            .effort
            .filter(|wanted| Some(wanted) != configured.as_ref())
        {
            None => configured,
            Some(wanted) => live
                .process
                .await_reply(
                    control.request(effort_request(&wanted)),
                    SETTING_TIMEOUT,
                    "apply_flag_settings",
                )
                .await
                .ok()
                .map(|_| wanted),
        };
        let commands = commands_of(&response["response"]);
        self.shared.saw_start(models, model, mode, effort, commands);
        if let Ok(mut published) = self.shared.control.lock() {
            *published = Some(control);
        }
        Ok(live)
    }
}
