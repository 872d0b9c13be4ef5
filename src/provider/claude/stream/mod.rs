//! Claude Code's own long-lived, two-way mode as a transport (`--transport stream`): one
//! `claude -p --input-format stream-json --output-format stream-json --verbose
//! --include-partial-messages --replay-user-messages --permission-prompt-tool stdio` process
//! per conversation, one user line per attempt, the output mapped by the same
//! [`ClaudeMapper`] as the one-shot mode. Message shapes: tests/fixtures/claude_stream/ (recorded
//! from Claude Code 2.1.197). The turn driver (`provider::live`) plays each attempt; this is
//! the protocol: `control` (the control protocol and user lines), `session` (start and
//! `initialize`), `settings` (models, modes, the user's choices), `turn` (one turn).
//!
//! Invariants:
//! - A permission the user did not give is never assumed: `can_use_tool` is a question the
//!   driver puts to the policy or the user. "Always" adds the CLI's own suggested rules for
//!   this session only (`destination: session`), never to the user's settings files.
//! - The stop runs stage 0 first: the `interrupt` control request; the process stays for the
//!   next turn. If the turn does not end, the process is ended and the next attempt starts the
//!   CLI again with `--resume`.
//! - Retry never duplicates: a failed attempt's process is ended (the CLI holds the failed
//!   prompt in memory), and the next attempt starts the CLI with `--resume` on the session file
//!   the orchestrator restored.
//! - Claude Code writes a turn's end to its session file 50–350 ms after the `result` line
//!   (the backend says so): a checkpoint taken right after a turn waits for that write.
//! - A model or mode the user chose holds for the conversation.

mod control;
mod session;
mod settings;
mod turn;

use std::sync::Arc;

use tokio::sync::watch;

use self::control::user_line_with_images;
use self::session::StreamSession;
use self::settings::Shared;
use self::turn::{ContextCount, StreamTurn};
use super::mapper::ClaudeMapper;
use crate::config::Transport;
use crate::provider::capabilities::{Images, Interjections};
use crate::provider::live::{Compaction, Live, Protocol, Settled, Unstarted, Work};
use crate::provider::{
    AgentQueue, AgentSetting, AgentStatus, AttemptRequest, Backend, Capabilities, Mapper,
};
use crate::stream::AgentMessage;

/// Claude Code's stream-json capabilities: images, steering (a follow-up goes as a user line
/// too), permission prompts with a note carried by the rejection.
const CAPABILITIES: Capabilities = Capabilities {
    transport: Transport::Stream,
    images: Images::Taken,
    interjections: Interjections::SteerAndFollowUp,
    asks_permission: true,
    permission_feedback: true,
    revoking_always: "To take an \"always\" answer back: Claude Code holds it for this session \
                      only (agentty never writes it to your settings files). Start a new \
                      conversation (/new): the new session asks again.",
};

/// Claude Code's stream-json protocol of a backend (Claude Code, or the demo agent playing it).
pub(crate) struct StreamProtocol {
    backend: Arc<dyn Backend>,
    shared: Shared,
}

impl StreamProtocol {
    pub(crate) fn new(backend: Arc<dyn Backend>) -> Self {
        Self {
            backend,
            shared: Shared::new(),
        }
    }
}

impl Protocol for StreamProtocol {
    type Session = StreamSession;
    type Turn = StreamTurn;

    fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn agent(&self) -> &'static str {
        "Claude Code in stream-json mode"
    }

    fn start_hint(&self) -> &'static str {
        " (an older CLI may need --transport json)"
    }

    fn prepare(&self, request: &AttemptRequest) {
        self.shared.adopt(&request.settings);
    }

    async fn start(&self, request: &AttemptRequest) -> Result<Live<StreamSession>, Unstarted> {
        self.start_cli(request).await
    }

    fn holds(&self, session: &StreamSession, id: &str) -> bool {
        session.session_id.as_deref() == Some(id)
    }

    /// Every writer must go for stdin to close (the CLI exits once idle, writing the end of
    /// its session file first).
    fn closing(&self, session: &mut StreamSession) {
        session.control.forget_pending();
        if let Ok(mut published) = self.shared.control.lock() {
            if published
                .as_ref()
                .is_some_and(|control| control.same_process(&session.control))
            {
                *published = None;
            }
        }
    }

    async fn begin(
        &self,
        live: &mut Live<StreamSession>,
        request: &AttemptRequest,
        _work: &Work,
        reused: bool,
        _out: &mut Vec<AgentMessage>,
    ) -> (StreamTurn, Box<dyn Mapper>) {
        // The mapper says `session.*` at the turn's `system/init`.
        let resumed = reused || request.session != crate::provider::SessionRef::New;
        let mapper = ClaudeMapper::for_stream(self.backend.name(), resumed);
        let control = live.session.control.clone();
        control.send_line(user_line_with_images(&request.prompt, &request.images));
        let turn = StreamTurn {
            control,
            shared: self.shared.clone(),
            untaken: Vec::new(),
            queued_turn_by: None,
            context: ContextCount::default(),
        };
        (turn, Box::new(mapper))
    }

    /// A failed attempt stays in the CLI's memory: never continue on it (retry never
    /// duplicates); the next attempt loads the session file the orchestrator restored.
    /// Untaken steering would run as a turn nobody reads: the process goes too.
    async fn settle(
        &self,
        _turn: StreamTurn,
        _live: &mut Live<StreamSession>,
        settled: Settled<'_>,
    ) -> bool {
        !settled.failed() && !settled.undelivered
    }

    fn change_setting(&self, setting: AgentSetting) -> bool {
        self.shared.change(setting)
    }

    fn status(&self) -> Option<watch::Receiver<AgentStatus>> {
        Some(self.shared.status.subscribe())
    }

    fn queue(&self) -> Option<watch::Receiver<AgentQueue>> {
        Some(self.shared.queue.subscribe())
    }

    /// Claude Code takes `/compact` as a user message in stream-json input (checked against
    /// 2.1.197: `compact_boundary`, then a `result` with no text).
    fn compaction(&self) -> Compaction {
        Compaction::SlashCommand("Claude")
    }
}
