//! Codex's `app-server` (JSON-RPC over stdio) as a long-lived, two-way transport: one
//! app-server per conversation, one thread in it, one `turn/start` per attempt, its
//! notifications mapped by [`AppServerMapper`]. The turn driver (`provider::live`) plays each
//! attempt; this is the protocol: `session` (start, threads), `rewind` (revert and fork before
//! a turn), `turn` (one turn, or a compaction), `status` (models, effort, presets, steering
//! queue), `history` (the turns each checkpoint branches back to).
//!
//! Invariants:
//! - A permission the user did not give is never assumed: Codex runs with the `on-request`
//!   approval policy, and its approval requests (commands, file changes) are questions the
//!   driver puts to the policy or the user.
//! - The stop runs stage 0 first: `turn/interrupt`; the process stays for the next turn. If
//!   the turn does not end, the process is ended and the next attempt resumes the thread in a
//!   new one.
//! - Retry never duplicates, with Codex's own means: the orchestrator's rollback of a turn that
//!   did not complete (its checkpoint is [`SessionCheckpoint::held_by_agent`]) becomes
//!   `thread/revert` before the next `turn/start`; no file is restored and no process
//!   restarted.
//! - A warning Codex repeats every turn ("Model metadata … not found") is shown once.
//! - `/compact` is `thread/compact/start {threadId}` (checked against the real app-server: the
//!   request is answered `{}`, then Codex runs the compaction as a turn of its own; the next
//!   turn's request keeps the user's own messages and carries the summary instead of the
//!   rest). Codex takes no instructions for the summary.

mod approvals;
mod history;
mod mapper;
mod rewind;
mod session;
mod status;
mod turn;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::watch;

pub use mapper::AppServerMapper;

use self::rewind::Unfinished;
use self::session::AppServerSession;
use self::status::Shared;
use self::turn::AppServerTurn;
use crate::config::Transport;
use crate::provider::capabilities::{Images, Interjections};
use crate::provider::common::session_message;
use crate::provider::live::{Compaction, Live, Protocol, Renewal, Settled, Unstarted, Work};
use crate::provider::{
    AgentQueue, AgentSetting, AgentStatus, AttemptRequest, Backend, BranchPoint, Capabilities,
    Mapper, SessionCheckpoint, SessionRef,
};
use crate::stream::{AgentMessage, NoticeKind};

/// How long Codex may take to answer a request during a session (`turn/interrupt`, a
/// steer, `model/list`).
pub(super) const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// What Codex's app-server lets agentty do: images, steering (a follow-up waits in agentty's
/// queue: Codex has none for after the turn), approval prompts.
const CAPABILITIES: Capabilities = Capabilities {
    transport: Transport::AppServer,
    images: Images::Taken,
    interjections: Interjections::Steer,
    asks_permission: true,
    permission_feedback: false,
    revoking_always: "To take an \"always\" answer back: Codex holds it for its session, and its \
                      app-server has no request to revoke it, so agentty cannot. Start a new \
                      conversation (/new): the new thread asks again.",
};

/// The app-server protocol of a backend (Codex, or the demo agent playing it).
pub(crate) struct AppServerProtocol {
    backend: Arc<dyn Backend>,
    unfinished: Arc<Mutex<Option<Unfinished>>>,
    /// Where the orchestrator rewound the conversation to: the next attempt branches there.
    branch: Arc<Mutex<Option<BranchPoint>>>,
    shared: Shared,
}

impl AppServerProtocol {
    pub(crate) fn new(backend: Arc<dyn Backend>) -> Self {
        Self {
            backend,
            unfinished: Arc::new(Mutex::new(None)),
            branch: Arc::new(Mutex::new(None)),
            shared: Shared::new(),
        }
    }
}

impl Protocol for AppServerProtocol {
    type Session = AppServerSession;
    type Turn = AppServerTurn;

    fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn agent(&self) -> &'static str {
        "codex app-server"
    }

    fn prepare(&self, request: &AttemptRequest) {
        self.shared.adopt(&request.settings);
    }

    async fn start(&self, request: &AttemptRequest) -> Result<Live<AppServerSession>, Unstarted> {
        self.start_server(request).await
    }

    fn holds(&self, session: &AppServerSession, id: &str) -> bool {
        session.thread_id == id
    }

    /// `--continue` names the thread this process resumed for as long as it runs.
    fn serves(&self, live: &mut Live<AppServerSession>, session: &SessionRef) -> bool {
        if !live.process.is_running() {
            return false;
        }
        if *session == live.opened_for && (!live.prompted || *session == SessionRef::ContinueLatest)
        {
            return true;
        }
        matches!(session, SessionRef::Resume(id) if *id == live.session.thread_id)
    }

    /// A new thread in the running app-server (a rollback is Codex's own revert, see
    /// `restored`).
    async fn renew(
        &self,
        live: &mut Live<AppServerSession>,
        request: &AttemptRequest,
        renewal: Renewal,
    ) -> bool {
        renewal == Renewal::NewSession && self.open_new_thread(live, request).await
    }

    fn closing(&self, session: &mut AppServerSession) {
        session.connection.forget_waiters();
    }

    async fn begin(
        &self,
        live: &mut Live<AppServerSession>,
        request: &AttemptRequest,
        work: &Work,
        _reused: bool,
        out: &mut Vec<AgentMessage>,
    ) -> (AppServerTurn, Box<dyn Mapper>) {
        self.branch_if_due(live, out).await;
        self.revert_if_due(live, out).await;
        // After a fork or a fresh thread the process serves a session it has not prompted yet.
        let resumed = live.prompted || live.session.resumed || *work != Work::Prompt;
        let model = self.shared.status().borrow().model.clone();
        let session = &live.session;
        out.push(session_message(
            self.backend.name(),
            resumed,
            Some(session.thread_id.clone()),
            model,
        ));
        let (started, mapper) = match work {
            Work::Prompt => (
                session
                    .connection
                    .request("turn/start", self.turn_params(session, request)),
                AppServerMapper::new(&request.prompt),
            ),
            Work::Compact(instructions) => {
                if instructions.is_some() {
                    out.push(AgentMessage::notice(
                        NoticeKind::Warning,
                        "Codex takes no instructions for its summary: compacting without them.",
                    ));
                }
                let started = session.connection.request(
                    "thread/compact/start",
                    json!({"threadId": session.thread_id}),
                );
                (started, AppServerMapper::new(""))
            }
        };
        let turn = AppServerTurn {
            connection: session.connection.clone(),
            thread_id: session.thread_id.clone(),
            shared: self.shared.clone(),
            started: Some(started),
            compacting: *work != Work::Prompt,
            turn_id: None,
            interrupt_pending: false,
            steer_pending: Vec::new(),
        };
        (turn, Box::new(mapper))
    }

    /// Codex keeps a failed turn in its thread, and the orchestrator's rollback reverts it
    /// (`thread/revert`, see `rewind`): the process always serves the next attempt.
    async fn settle(
        &self,
        turn: AppServerTurn,
        _live: &mut Live<AppServerSession>,
        settled: Settled<'_>,
    ) -> bool {
        if turn.compacting {
            return true;
        }
        let completed = matches!(settled.terminal, AgentMessage::Completed { .. });
        if let Ok(mut unfinished) = self.unfinished.lock() {
            *unfinished = match turn.turn_id {
                Some(turn_id) if !completed => Some(Unfinished {
                    thread_id: turn.thread_id,
                    turn_id,
                    revert_due: false,
                }),
                _ => None,
            };
        }
        true
    }

    /// Codex undoes a turn itself (`thread/revert`) and branches its thread back to where it
    /// stands now (`thread/fork`): the checkpoint holds no files, only that point. A rewind
    /// not yet carried out is where the next turn starts from.
    fn checkpoint(&self, request: &AttemptRequest) -> Option<SessionCheckpoint> {
        let pending = self.branch.lock().ok().and_then(|branch| branch.clone());
        match &request.session {
            SessionRef::Resume(thread_id) => Some(SessionCheckpoint::held_by_agent(
                format!("codex thread {thread_id}"),
                pending.or_else(|| self.shared.history.branch_point(Some(thread_id))),
            )),
            SessionRef::ContinueLatest => Some(SessionCheckpoint::held_by_agent(
                "the latest codex thread",
                pending.or_else(|| self.shared.history.branch_point(None)),
            )),
            SessionRef::New => None,
        }
    }

    /// The rollback is Codex's own revert before the next turn: the process stays as it is.
    fn restored(&self) -> bool {
        if let Ok(mut unfinished) = self.unfinished.lock() {
            if let Some(unfinished) = unfinished.as_mut() {
                unfinished.revert_due = true;
            }
        }
        false
    }

    /// The next attempt forks the thread through the point's turn (the thread itself is kept,
    /// so the rewind can be undone by resuming it).
    fn branch_session(&self, point: Option<&BranchPoint>) -> bool {
        match self.branch.lock() {
            Ok(mut branch) => {
                *branch = point.cloned();
                true
            }
            Err(_) => false,
        }
    }

    fn change_setting(&self, setting: AgentSetting) -> bool {
        self.shared.change(setting)
    }

    fn status(&self) -> Option<watch::Receiver<AgentStatus>> {
        Some(self.shared.status())
    }

    fn queue(&self) -> Option<watch::Receiver<AgentQueue>> {
        Some(self.shared.queue())
    }

    fn compaction(&self) -> Compaction {
        Compaction::Native
    }
}

impl AppServerProtocol {
    /// `turn/start`'s params: the thread, the input, and the user's choices (Codex keeps them
    /// for later turns too).
    fn turn_params(&self, session: &AppServerSession, request: &AttemptRequest) -> Value {
        let overrides = self.shared.overrides();
        let mut params = json!({
            "threadId": session.thread_id,
            "input": turn_input(request),
        });
        if let Some(model) = overrides.model {
            params["model"] = Value::String(model);
        }
        if let Some(effort) = overrides.effort {
            params["effort"] = Value::String(effort);
        }
        if let Some((approval, sandbox)) =
            overrides.mode.as_deref().and_then(status::preset_policies)
        {
            params["approvalPolicy"] = approval;
            params["sandboxPolicy"] = sandbox;
        }
        params
    }
}

/// `turn/start`'s `input` for `request`: the text, then each image as a `data:` URL (the bytes
/// agentty read and showed, not the file as it may be by now).
pub(crate) fn turn_input(request: &AttemptRequest) -> Value {
    let mut input = vec![json!({"type": "text", "text": request.prompt})];
    input.extend(
        request
            .images
            .iter()
            .map(|image| json!({"type": "image", "url": image.data_url()})),
    );
    Value::Array(input)
}

#[cfg(test)]
mod image_prompt_tests {
    use super::*;

    #[test]
    fn turn_start_input_carries_the_image_as_a_data_url_after_the_text() {
        let request = AttemptRequest {
            prompt: "look".into(),
            images: vec![crate::attachment::sample_png()],
            ..AttemptRequest::default()
        };
        assert_eq!(
            turn_input(&request),
            json!([
                {"type": "text", "text": "look"},
                {"type": "image", "url": "data:image/png;base64,iVBORw0KGgppbWc="}
            ])
        );
    }
}
