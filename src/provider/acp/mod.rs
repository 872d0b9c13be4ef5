//! The Agent Client Protocol as a long-lived, two-way transport: one agent process per
//! conversation (`gemini --acp`, the Claude Code and Codex ACP adapters, any ACP agent), one
//! `session/prompt` per attempt, `session/update`s mapped by [`AcpMapper`]. The turn driver
//! (`provider::live`) plays each attempt; this is the protocol: `session` (start, open, load),
//! `settings` (models and modes), `turn` (one turn).
//!
//! Invariants:
//! - A permission the user did not give is never assumed: `session/request_permission` is a
//!   question the driver puts to the policy or the user; a stop answers it `cancelled`, as the
//!   protocol requires.
//! - The stop runs stage 0 first: `session/cancel`. If the prompt does not end, the process is
//!   ended and the next attempt starts the agent again and loads the session.
//! - Retry never duplicates: a failed attempt's process is ended (the agent holds the failed
//!   prompt in memory), and the next attempt loads the session from the file the orchestrator
//!   restored; unless the agent is known to forget a failed prompt
//!   ([`Quirks::forgets_failed_prompt`]), or to re-read a restored file in the same process
//!   ([`Quirks::reloads_in_process`]).
//! - A failure never costs the conversation: where agentty cannot restore the agent's stored
//!   session (an agent from the config), the process and its session are kept after a failure,
//!   and an agent that died is started again with `session/load`, never `session/new`.
//! - An agent that answers the turn after a cancel one turn late (the Claude adapter) is
//!   started afresh after every stopped turn ([`Quirks::restart_after_cancel`]).
//!
//! [`Quirks::forgets_failed_prompt`]: crate::provider::Quirks
//! [`Quirks::reloads_in_process`]: crate::provider::Quirks
//! [`Quirks::restart_after_cancel`]: crate::provider::Quirks

mod commands;
mod content;
mod mapper;
mod session;
mod settings;
mod turn;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::sync::watch;

pub(crate) use mapper::AcpMapper;

use self::session::AcpSession;
use self::settings::AcpShared;
use self::turn::AcpTurn;
use crate::config::{ProviderSettings, Transport};
use crate::provider::capabilities::{Images, Interjections, LiveTransport};
use crate::provider::common::session_message;
use crate::provider::live::{Live, Protocol, Renewal, Settled, Unstarted, Work};
use crate::provider::{
    AgentSetting, AgentStatus, AttemptRequest, Backend, Capabilities, Mapper, ProviderKind,
};
use crate::stream::{AgentMessage, FailureReason};

/// What ACP lets agentty do: permission prompts; images where the agent announces them; no
/// steering (a message waits for the turn's end).
const CAPABILITIES: Capabilities = Capabilities {
    transport: Transport::Acp,
    images: Images::AgentSays("its ACP agent does not announce promptCapabilities.image"),
    interjections: Interjections::None,
    asks_permission: true,
    permission_feedback: false,
    revoking_always: "To take an \"always\" answer back: the agent holds it in its own session, \
                      and the Agent Client Protocol has no request to revoke it, so agentty \
                      cannot. Start a new conversation (/new): the new agent session asks \
                      again. An answer the agent saved beyond the session is in the agent's \
                      own settings; change it there.",
};

/// The ACP protocol of a backend.
pub(crate) struct AcpProtocol {
    backend: Arc<dyn Backend>,
    /// The last attempt failed and left nothing in the agent's session: a rollback of the
    /// stored session changes nothing the live process holds.
    failed_clean: Arc<AtomicBool>,
    /// The agent's models and modes for the status bar, `/model` and Shift+Tab.
    shared: AcpShared,
}

impl AcpProtocol {
    pub(crate) fn new(backend: Arc<dyn Backend>) -> Self {
        Self {
            backend,
            failed_clean: Arc::new(AtomicBool::new(false)),
            shared: AcpShared::new(),
        }
    }
}

impl Protocol for AcpProtocol {
    type Session = AcpSession;
    type Turn = AcpTurn;

    fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn agent(&self) -> &'static str {
        "the ACP agent"
    }

    /// The Claude and Codex adapters never exit on end of input: a short wait.
    fn exit_after_close(&self) -> std::time::Duration {
        crate::process::timings::EXIT_AFTER_CLOSE_ACP
    }

    fn prepare(&self, _request: &AttemptRequest) {
        self.failed_clean.store(false, Ordering::SeqCst);
    }

    async fn start(&self, request: &AttemptRequest) -> Result<Live<AcpSession>, Unstarted> {
        self.start_agent(request).await
    }

    fn holds(&self, session: &AcpSession, id: &str) -> bool {
        session.session_id == id
    }

    async fn renew(
        &self,
        live: &mut Live<AcpSession>,
        request: &AttemptRequest,
        renewal: Renewal,
    ) -> bool {
        match renewal {
            Renewal::Reload => self.reload_session(live, request).await,
            Renewal::NewSession => self.open_new_session(live, request).await,
        }
    }

    fn closing(&self, session: &mut AcpSession) {
        self.shared.forget(&session.connection);
        session.connection.forget_waiters();
    }

    async fn begin(
        &self,
        live: &mut Live<AcpSession>,
        request: &AttemptRequest,
        _work: &Work,
        reused: bool,
        out: &mut Vec<AgentMessage>,
    ) -> (AcpTurn, Box<dyn Mapper>) {
        let session = &live.session;
        out.push(session_message(
            self.backend.name(),
            reused || session.loaded,
            Some(session.session_id.clone()),
            None,
        ));
        let prompt_id = session.connection.request_unrouted(
            "session/prompt",
            json!({"sessionId": session.session_id, "prompt": prompt_blocks(request)}),
        );
        let quirks = self.backend.quirks(Transport::Acp, request);
        let mapper =
            AcpMapper::new(Some(prompt_id.to_string())).with_http_status_of(quirks.http_status_of);
        let turn = AcpTurn {
            connection: session.connection.clone(),
            session_id: session.session_id.clone(),
        };
        (turn, Box::new(mapper))
    }

    /// A failed attempt stays in the agent's memory: where agentty can put the agent's stored
    /// session back (a checkpoint of its file), the process is ended and the next attempt loads
    /// the restored file; unless the agent answered the prompt with its error and is known to
    /// forget such a prompt. Where nothing can be put back (an agent agentty does not know the
    /// session files of), the process and its session are kept: loading the session again
    /// would give the same conversation at the cost of a cold start. An agent that answers
    /// late after a cancel is started afresh after a stop.
    async fn settle(
        &self,
        _turn: AcpTurn,
        live: &mut Live<AcpSession>,
        settled: Settled<'_>,
    ) -> bool {
        let quirks = self.backend.quirks(Transport::Acp, settled.request);
        let answered_with_error = matches!(settled.terminal,
            AgentMessage::Failed(failure) if failure.reason == FailureReason::AgentError);
        let forgotten =
            settled.answered_unstopped && answered_with_error && quirks.forgets_failed_prompt;
        let unrestorable = self
            .backend
            .session_file(&live.session.session_id, settled.request)
            .is_none();
        let keep = (forgotten || unrestorable || !settled.failed())
            && !(settled.stopped && quirks.restart_after_cancel);
        self.failed_clean
            .store(settled.failed() && keep, Ordering::SeqCst);
        keep
    }

    fn restored(&self) -> bool {
        !self.failed_clean.swap(false, Ordering::SeqCst)
    }

    /// The agent's own compaction command, where it announced one (Qwen Code's `compress`).
    fn compaction(&self) -> crate::provider::live::Compaction {
        commands::compaction(&self.shared)
    }

    fn change_setting(&self, setting: AgentSetting) -> bool {
        self.shared.change(setting)
    }

    fn status(&self) -> Option<watch::Receiver<AgentStatus>> {
        Some(self.shared.status())
    }
}

/// How a backend that runs its CLI through an ACP adapter (Zed's `claude-agent-acp`,
/// `codex-acp`) declares that transport: ready when `acp_command` is configured or `adapter`
/// is on PATH (`program`), else why not and how to install it.
pub(crate) fn adapter_transport(
    settings: &ProviderSettings,
    kind: ProviderKind,
    adapter: &str,
    package: &str,
) -> (LiveTransport, Option<PathBuf>) {
    let program = match &settings.acp_command {
        Some(command) => Some(command.clone()),
        None => crate::process::find_on_path(adapter),
    };
    let agent = kind.display_name();
    let ready = match program {
        Some(_) => Ok(()),
        None => Err(format!(
            "the {agent} ACP adapter is not installed: `{adapter}` is not on PATH (npm install -g \
             {package}, or set acp_command under [providers.{}]); --transport json runs \
             {agent} itself",
            kind.name()
        )),
    };
    let transport = LiveTransport {
        transport: Transport::Acp,
        ready,
    };
    (transport, program)
}

/// `session/prompt`'s `prompt` for `request`: the text, then each image as an ACP image block
/// (only sent to an agent that announced `promptCapabilities.image`: the chat refuses first).
pub(crate) fn prompt_blocks(request: &AttemptRequest) -> Value {
    use agent_client_protocol_schema::v1 as acp;
    let mut blocks = vec![acp::ContentBlock::Text(acp::TextContent::new(
        request.prompt.clone(),
    ))];
    blocks.extend(request.images.iter().map(|image| {
        acp::ContentBlock::Image(acp::ImageContent::new(
            image.base64(),
            image.mime.media_type(),
        ))
    }));
    serde_json::to_value(blocks)
        .unwrap_or_else(|_| json!([{"type": "text", "text": request.prompt}]))
}

#[cfg(test)]
mod image_prompt_tests {
    use super::*;

    #[test]
    fn session_prompt_carries_the_image_as_an_acp_image_block() {
        let request = AttemptRequest {
            prompt: "look".into(),
            images: vec![crate::attachment::sample_png()],
            ..AttemptRequest::default()
        };
        assert_eq!(
            prompt_blocks(&request),
            json!([
                {"type": "text", "text": "look"},
                {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgppbWc="}
            ])
        );
    }
}
