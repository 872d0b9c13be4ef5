//! pi's RPC mode (`pi --mode rpc`) as a long-lived, two-way transport: one pi process per
//! conversation, commands on its stdin, responses correlated by `id` (they can come out of
//! order), events mapped by the same [`PiMapper`](super::mapper::PiMapper) as JSON mode. The
//! turn driver (`provider::live`) plays each attempt; this is the protocol.
//!
//! Invariants (protocols/pi/README.md §8):
//! - One attempt = one `prompt` on the live process; it ends at `agent_end` (or when the
//!   process dies).
//! - pi's own auto-retry is off (`set_auto_retry`): only the orchestrator retries.
//! - Retry never duplicates: a failed attempt stays in pi's memory. When pi ended the turn
//!   itself (`agent_end`, its session written), the process stays; the orchestrator restores
//!   the session file and calls [`Provider::session_restored`], and the next attempt has pi
//!   re-read it (`switch_session`) — or, for a fresh session, open one (`new_session`) — with
//!   no cold start. A process that died, or that a stop had to signal, is ended and pi starts
//!   again on the restored file.
//! - The stop runs stage 0 first: `abort`. Steering pi took at the stop and never answered is
//!   taken back (see `turn`).
//!
//! [`Provider::session_restored`]: crate::provider::Provider::session_restored

mod commands;
mod session;
mod settings;
mod turn;

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::sync::watch;

use self::commands::CommandWriter;
use self::session::RpcSession;
use self::turn::RpcTurn;
use crate::config::Transport;
use crate::provider::capabilities::{Images, Interjections, NOT_ASKED};
use crate::provider::common::session_message;
use crate::provider::live::{Compaction, Live, Protocol, Renewal, Settled, Unstarted, Work};
use crate::provider::{
    AgentQueue, AgentSetting, AgentStatus, AttemptRequest, Backend, Capabilities, Mapper,
    SessionRef,
};
use crate::stream::AgentMessage;

/// pi RPC's capabilities: images, steering and follow-ups; pi never asks permission.
const CAPABILITIES: Capabilities = Capabilities {
    transport: Transport::Rpc,
    images: Images::Taken,
    interjections: Interjections::SteerAndFollowUp,
    asks_permission: false,
    permission_feedback: false,
    revoking_always: NOT_ASKED,
};

/// The RPC protocol of a pi-speaking backend (pi itself, or the demo agent).
pub(crate) struct RpcProtocol {
    backend: Arc<dyn Backend>,
    /// The live process's stdin, between turns too (settings): set when a process starts.
    control: Arc<Mutex<Option<CommandWriter>>>,
    /// pi's queued steering and follow-up messages, as its `queue_update` events tell.
    queue: watch::Sender<AgentQueue>,
    /// pi's model and thinking level, and the session's cost and tokens so far.
    status: watch::Sender<AgentStatus>,
}

impl RpcProtocol {
    pub(crate) fn new(backend: Arc<dyn Backend>) -> Self {
        Self {
            backend,
            control: Arc::new(Mutex::new(None)),
            queue: watch::channel(AgentQueue::default()).0,
            status: watch::channel(AgentStatus::default()).0,
        }
    }
}

impl Protocol for RpcProtocol {
    type Session = RpcSession;
    type Turn = RpcTurn;

    fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn agent(&self) -> &'static str {
        "pi in RPC mode"
    }

    fn start_hint(&self) -> &'static str {
        " (an agent that speaks only pi's JSON mode needs --transport json)"
    }

    async fn start(&self, request: &AttemptRequest) -> Result<Live<RpcSession>, Unstarted> {
        self.start_pi(request).await
    }

    fn holds(&self, session: &RpcSession, id: &str) -> bool {
        session.session_id.as_deref() == Some(id) || session.session_file.as_deref() == Some(id)
    }

    async fn renew(
        &self,
        live: &mut Live<RpcSession>,
        request: &AttemptRequest,
        renewal: Renewal,
    ) -> bool {
        match renewal {
            Renewal::Reload => session::reload(live).await,
            Renewal::NewSession => session::open_new(live, request).await,
        }
    }

    /// Every writer must go for stdin to close (pi exits at once then).
    fn closing(&self, session: &mut RpcSession) {
        session.writer.forget_pending();
        if let Ok(mut control) = self.control.lock() {
            if control
                .as_ref()
                .is_some_and(|control| control.same_process(&session.writer))
            {
                *control = None;
            }
        }
    }

    async fn begin(
        &self,
        live: &mut Live<RpcSession>,
        request: &AttemptRequest,
        work: &Work,
        reused: bool,
        out: &mut Vec<AgentMessage>,
    ) -> (RpcTurn, Box<dyn Mapper>) {
        let resumed = reused || request.session != SessionRef::New || *work != Work::Prompt;
        out.push(session_message(
            self.backend.name(),
            resumed,
            live.session.session_id.clone(),
            None,
        ));
        let writer = live.session.writer.clone();
        let response = match work {
            Work::Prompt => writer.request("prompt", prompt_command(request)),
            Work::Compact(instructions) => {
                let mut command = json!({"type": "compact"});
                if let Some(text) = instructions {
                    command["customInstructions"] = Value::String(text.clone());
                }
                writer.request("compact", command)
            }
        };
        let turn = RpcTurn {
            backend: self.backend.clone(),
            writer,
            queue: self.queue.clone(),
            response: Some(response),
            compacting: *work != Work::Prompt,
            taken_at_stop: Vec::new(),
        };
        (turn, self.backend.mapper(request))
    }

    /// A failed attempt stays in pi's memory: never continue on it as it is (retry never
    /// duplicates). A turn that pi ended itself (`agent_end`) leaves pi idle with its session
    /// written: the process stays, and the orchestrator's rollback makes it re-read the
    /// restored file (`switch_session`) or open a new session. pi still holds what did not
    /// arrive (its queue; a steer in memory): it re-reads the session file, which drops both,
    /// or the process goes with them.
    async fn settle(
        &self,
        turn: RpcTurn,
        live: &mut Live<RpcSession>,
        settled: Settled<'_>,
    ) -> bool {
        drop(turn);
        let keep = settled.answered_unstopped || !settled.failed();
        let keep = keep && (!settled.undelivered || session::drop_held(live).await);
        if keep {
            settings::ask_context(&live.session.writer, &self.status);
        } else {
            // A new pi starts with an empty queue; what this one held is lost with it.
            self.queue.send_replace(AgentQueue::default());
        }
        keep
    }

    fn change_setting(&self, setting: AgentSetting) -> bool {
        // pi has no modes.
        if matches!(setting, AgentSetting::Mode(_)) {
            return false;
        }
        let Some(writer) = self.control.lock().ok().and_then(|control| control.clone()) else {
            return false;
        };
        let status = self.status.clone();
        tokio::spawn(async move { settings::ask(&writer, setting, &status).await });
        true
    }

    fn status(&self) -> Option<watch::Receiver<AgentStatus>> {
        Some(self.status.subscribe())
    }

    fn queue(&self) -> Option<watch::Receiver<AgentQueue>> {
        Some(self.queue.subscribe())
    }

    fn compaction(&self) -> Compaction {
        Compaction::Native
    }
}

/// pi's `prompt` command for `request`: the message, and its images as pi's `ImageContent`
/// (`{type: "image", data, mimeType}`).
pub(crate) fn prompt_command(request: &AttemptRequest) -> Value {
    let mut command = json!({"type": "prompt", "message": request.prompt});
    if !request.images.is_empty() {
        command["images"] = request
            .images
            .iter()
            .map(|image| {
                json!({"type": "image", "data": image.base64(), "mimeType": image.mime.media_type()})
            })
            .collect();
    }
    command
}

#[cfg(test)]
mod image_prompt_tests {
    use super::*;

    #[test]
    fn a_prompt_with_an_image_carries_it_as_pi_image_content() {
        let request = AttemptRequest {
            prompt: "look".into(),
            images: vec![crate::attachment::sample_png()],
            ..AttemptRequest::default()
        };
        assert_eq!(
            prompt_command(&request),
            json!({"type": "prompt", "message": "look", "images": [
                {"type": "image", "data": "iVBORw0KGgppbWc=", "mimeType": "image/png"}
            ]})
        );
        let plain = AttemptRequest {
            prompt: "hi".into(),
            ..AttemptRequest::default()
        };
        assert_eq!(
            prompt_command(&plain),
            json!({"type": "prompt", "message": "hi"})
        );
    }
}
