//! Codex's `app-server` (JSON-RPC over stdio) as a long-lived, two-way transport: one
//! app-server per conversation, one thread in it, one `turn/start` per attempt, its
//! notifications mapped by [`AppServerMapper`].
//!
//! Invariants:
//! - Every attempt's stream ends with exactly one terminal message, composed by the runner's
//!   [`AttemptMapping`] from `turn/completed` and the process's fate.
//! - A permission the user did not give is never assumed: Codex runs with the `on-request`
//!   approval policy, and its approval requests (commands, file changes) wait for the user
//!   under `ask`; `allow` and `deny` answer at once and say so. A stop answers every open
//!   request `cancel`.
//! - The stop runs stage 0 first: `turn/interrupt`, then up to [`INTERRUPT_GRACE`] for the turn
//!   to end (Codex: 8–16 ms); the process stays for the next turn. If the turn does not end,
//!   the process layer's three-stage stop ends the app-server and the next attempt resumes the
//!   thread in a new one. When the turn does end, whatever tool process it started and Codex
//!   left running is killed (Codex's interrupt leaves a running command running).
//! - Retry never duplicates, with Codex's own means: the orchestrator's rollback of a turn that
//!   did not complete (its checkpoint is [`SessionCheckpoint::held_by_agent`]) becomes
//!   `thread/revert` to before that turn, in memory and in Codex's stored thread, before the
//!   next `turn/start`; no file is restored and no process restarted. When Codex refuses the
//!   revert, the attempt starts a fresh thread and says so.
//! - A message sent while the turn runs goes to Codex as `turn/steer` (it reaches the model at
//!   its next request); its arrival in the thread is said as pi's steering is.
//! - A warning Codex repeats every turn ("Model metadata … not found") is shown once.

mod compact;
mod connection;
mod history;
mod mapper;
mod session;
mod status;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};

pub use mapper::AppServerMapper;

use self::connection::{settled, REQUEST_TIMEOUT};
use self::mapper::{decision_value, COMMAND_APPROVAL, FILE_CHANGE_APPROVAL};
use self::session::AppServerSession;
use self::status::Shared;
use crate::config::PermissionPolicy;
use crate::process::StopControl;
use crate::provider::common::session_message;
use crate::provider::live_process::{
    ClaimedSession, InBandStop, LiveItem, LiveSession, LiveSlot, TurnEnd,
};
use crate::provider::runner::{spawn_attempt, AttemptMapping, AttemptSink};
use crate::provider::{AgentQueue, AgentStatus};
use crate::provider::{
    AgentSetting, AgentStream, AttemptRequest, Backend, BranchPoint, Interjection, Provider,
    SessionCheckpoint, SessionRef, Transport,
};
use crate::stream::{
    AgentMessage, NoticeKind, PermissionOptionKind, PermissionRequest, PermissionResolver,
    PERMISSION_CANCELLED,
};

/// Stage 0 of the stop: how long a `turn/interrupt` may take to end the turn.
pub(crate) const INTERRUPT_GRACE: Duration = crate::process::timings::IN_BAND_CANCEL_GRACE;
/// JSON-RPC's "method not found".
const METHOD_NOT_FOUND: i64 = -32601;
use crate::process::timings::STRAY_KILL_DEADLINE;

/// A permission answer from the user: request id, option chosen (`None`: cancelled), note.
type Answer = (String, Option<String>, Option<String>);

/// The last attempt's turn, when it did not complete: what a rollback reverts.
#[derive(Debug, Clone, Default)]
struct Unfinished {
    thread_id: String,
    turn_id: String,
    /// The orchestrator rolled the session back: revert before the next turn.
    revert_due: bool,
}

/// The app-server transport of a backend (Codex, or the demo agent playing it).
pub(crate) struct AppServerProvider {
    backend: Arc<dyn Backend>,
    policy: PermissionPolicy,
    live: LiveSlot<AppServerSession>,
    answers: Arc<Mutex<Option<mpsc::UnboundedSender<Answer>>>>,
    unfinished: Arc<Mutex<Option<Unfinished>>>,
    /// Where the orchestrator rewound the conversation to: the next attempt branches there.
    branch: Arc<Mutex<Option<BranchPoint>>>,
    shared: Shared,
}

impl AppServerProvider {
    pub(crate) fn new(backend: Arc<dyn Backend>, policy: PermissionPolicy) -> Self {
        Self {
            backend,
            policy,
            live: LiveSlot::new(),
            answers: Arc::new(Mutex::new(None)),
            unfinished: Arc::new(Mutex::new(None)),
            branch: Arc::new(Mutex::new(None)),
            shared: Shared::new(),
        }
    }
}

impl Provider for AppServerProvider {
    fn name(&self) -> &str {
        self.backend.name()
    }

    fn execute(&self, request: AttemptRequest, stop: StopControl) -> AgentStream {
        self.shared.adopt(&request.settings);
        let attempt = |sink| AppServerAttempt {
            backend: self.backend.clone(),
            policy: self.policy,
            live: self.live.clone(),
            answers: self.answers.clone(),
            unfinished: self.unfinished.clone(),
            branch: self.branch.clone(),
            shared: self.shared.clone(),
            sink,
            stop: stop.clone(),
        };
        spawn_attempt(stop.clone(), move |sink| attempt(sink).run(request))
    }

    /// Codex undoes a turn itself (`thread/revert`) and branches its thread back to where it
    /// stands now (`thread/fork`): the checkpoint holds no files, only that point.
    /// A rewind not yet carried out is where the next turn starts from.
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

    fn session_restored(&self) {
        if let Ok(mut unfinished) = self.unfinished.lock() {
            if let Some(unfinished) = unfinished.as_mut() {
                unfinished.revert_due = true;
            }
        }
    }

    fn transport(&self) -> Transport {
        Transport::AppServer
    }

    fn accepts_images(&self) -> bool {
        true
    }

    fn can_interject(&self) -> bool {
        true
    }

    fn can_compact(&self) -> bool {
        true
    }

    /// `thread/compact/start` (see `compact`).
    fn compact(
        &self,
        request: AttemptRequest,
        instructions: Option<String>,
        stop: StopControl,
    ) -> AgentStream {
        let attempt = |sink| AppServerAttempt {
            backend: self.backend.clone(),
            policy: self.policy,
            live: self.live.clone(),
            answers: self.answers.clone(),
            unfinished: self.unfinished.clone(),
            branch: self.branch.clone(),
            shared: self.shared.clone(),
            sink,
            stop: stop.clone(),
        };
        spawn_attempt(stop.clone(), move |sink| {
            attempt(sink).compact(request, instructions)
        })
    }

    /// Steering goes to the running turn; a follow-up waits in agentty's queue (Codex has no
    /// queue of its own for after the turn).
    fn interject(&self, kind: Interjection, text: &str) -> bool {
        kind == Interjection::Steer && self.shared.steer(text)
    }

    fn answer_permission(&self, id: &str, option: Option<String>, message: Option<String>) -> bool {
        let Ok(answers) = self.answers.lock() else {
            return false;
        };
        answers
            .as_ref()
            .is_some_and(|answers| answers.send((id.to_owned(), option, message)).is_ok())
    }

    fn change_setting(&self, setting: AgentSetting) -> bool {
        self.shared.change(setting)
    }

    fn agent_status(&self) -> Option<watch::Receiver<AgentStatus>> {
        Some(self.shared.status())
    }

    fn agent_queue(&self) -> Option<watch::Receiver<AgentQueue>> {
        Some(self.shared.queue())
    }

    fn warm_up(&self, request: AttemptRequest) {
        self.shared.adopt(&request.settings);
        let backend = self.backend.clone();
        let shared = self.shared.clone();
        self.live.warm_up(
            async move { AppServerSession::start(backend, &request, shared).await },
            "codex app-server",
        );
    }
}

impl Drop for AppServerProvider {
    fn drop(&mut self) {
        self.live.release_if_idle();
    }
}

/// One attempt on the live app-server.
struct AppServerAttempt {
    backend: Arc<dyn Backend>,
    policy: PermissionPolicy,
    live: LiveSlot<AppServerSession>,
    answers: Arc<Mutex<Option<mpsc::UnboundedSender<Answer>>>>,
    unfinished: Arc<Mutex<Option<Unfinished>>>,
    branch: Arc<Mutex<Option<BranchPoint>>>,
    shared: Shared,
    sink: AttemptSink,
    stop: StopControl,
}

/// An approval request waiting for the user.
struct OpenApproval {
    rpc_id: Value,
    params: Value,
    request: PermissionRequest,
}

impl AppServerAttempt {
    async fn run(mut self, request: AttemptRequest) {
        let Some(mut slot) = self.claim_thread(&request).await else {
            return;
        };
        let Some(session) = slot.as_mut() else {
            return;
        };
        let resumed = session.prompted || session.resumed;
        if session.prompted {
            session.process.forget_stderr();
        }
        self.announce(session, resumed).await;
        let (answers_tx, answers_rx) = mpsc::unbounded_channel();
        if let Ok(mut answers) = self.answers.lock() {
            *answers = Some(answers_tx);
        }
        let (terminal, keep, turn_id) = self.play_turn(session, &request, answers_rx).await;
        if let Ok(mut answers) = self.answers.lock() {
            *answers = None;
        }
        self.shared.set_turn(None);
        for text in self.shared.undelivered() {
            self.sink
                .send(AgentMessage::notice(
                    NoticeKind::Warning.wire(),
                    format!("This message did not reach Codex before the turn ended: {text}"),
                ))
                .await;
        }
        let completed = matches!(terminal, AgentMessage::Completed { .. });
        if let Ok(mut unfinished) = self.unfinished.lock() {
            *unfinished = match turn_id {
                Some(turn_id) if !completed => Some(Unfinished {
                    thread_id: session.thread_id.clone(),
                    turn_id,
                    revert_due: false,
                }),
                _ => None,
            };
        }
        self.close_unless_kept(&mut slot, keep).await;
        self.sink.send(terminal).await;
    }

    /// The live app-server for `request`, locked for this attempt (kept, reloaded or started
    /// as [`LiveSlot::claim`] decides) and on the thread the attempt continues: forked or
    /// reverted first where the orchestrator asked. `None` when the attempt is over already.
    async fn claim_thread(
        &mut self,
        request: &AttemptRequest,
    ) -> Option<ClaimedSession<AppServerSession>> {
        let backend = self.backend.clone();
        let shared = self.shared.clone();
        let mut slot = self
            .live
            .claim(request, &self.stop, &mut self.sink, || {
                AppServerSession::start(backend.clone(), request, shared.clone())
            })
            .await?;
        if let Some(session) = slot.as_mut() {
            self.branch_if_due(session).await;
            self.revert_if_due(session).await;
        }
        Some(slot)
    }

    /// The attempt's `session.started` / `session.resumed`, with the thread and the model.
    async fn announce(&mut self, session: &mut AppServerSession, resumed: bool) {
        session.prompted = true;
        let model = self.shared.status().borrow().model.clone();
        self.sink
            .send(session_message(
                self.backend.name(),
                resumed,
                Some(session.thread_id.clone()),
                model,
            ))
            .await;
    }

    /// After an attempt, an app-server that cannot serve the next one is closed.
    async fn close_unless_kept(&self, slot: &mut ClaimedSession<AppServerSession>, keep: bool) {
        if !keep {
            self.shared.forget_connection();
            if let Some(session) = slot.take() {
                session.close().await;
            }
        }
    }

    /// The orchestrator rewound the conversation: the thread is forked through the turn it
    /// rewound to (a thread with no turn before it: a new thread), and this attempt continues
    /// the fork; where Codex refuses, a fresh thread, said in a notice.
    async fn branch_if_due(&mut self, session: &mut AppServerSession) {
        let Some(point) = self.branch.lock().ok().and_then(|mut branch| branch.take()) else {
            return;
        };
        let branched = match &point.after_turn {
            Some(turn) => session.fork(&point.thread, turn).await,
            None if open_fresh_thread(session).await => Ok(()),
            None => Err("Codex did not open a new thread".to_owned()),
        };
        match branched {
            Ok(()) => {
                tracing::info!(from = %point.thread, after = ?point.after_turn, thread = %session.thread_id, "Codex thread branched for a rewind");
            }
            Err(error) => {
                tracing::warn!(%error, "Codex did not branch the thread for the rewind");
                let what = format!("Codex could not go back to the turn you rewound to ({error})");
                self.fall_back_to_a_fresh_thread(
                    session,
                    &what,
                    "this prompt",
                    "the rewound turns may still reach the model",
                )
                .await;
            }
        }
    }

    /// What Codex could not undo (`what`) is left behind on a fresh thread, said in a notice;
    /// where even that fails, the notice says what may reach the model (`otherwise`).
    async fn fall_back_to_a_fresh_thread(
        &mut self,
        session: &mut AppServerSession,
        what: &str,
        starting: &str,
        otherwise: &str,
    ) {
        let message = if open_fresh_thread(session).await {
            format!(
                "{what}, so {starting} starts a fresh thread (Codex does not remember the \
                 earlier turns; the transcript stays here)."
            )
        } else {
            format!("{what}; {otherwise}.")
        };
        self.sink
            .send(AgentMessage::notice(
                NoticeKind::FreshSession.wire(),
                message,
            ))
            .await;
    }

    /// The orchestrator rolled back the turn that did not complete: Codex forgets it
    /// (`thread/revert`) before the next prompt; where Codex refuses, a fresh thread.
    async fn revert_if_due(&mut self, session: &mut AppServerSession) {
        let due = self
            .unfinished
            .lock()
            .ok()
            .and_then(|mut unfinished| unfinished.take())
            .filter(|unfinished| unfinished.revert_due);
        let Some(due) = due else {
            return;
        };
        if due.thread_id != session.thread_id {
            return;
        }
        match session.revert(&due.turn_id).await {
            Ok(()) => {
                self.shared.history.reverted(&due.thread_id, &due.turn_id);
                tracing::info!(thread = %due.thread_id, turn = %due.turn_id, "Codex reverted the turn that did not complete");
            }
            Err(error) => {
                tracing::warn!(%error, "Codex did not revert the failed turn");
                let what = format!("Codex could not undo the failed attempt ({error})");
                self.fall_back_to_a_fresh_thread(
                    session,
                    &what,
                    "this attempt",
                    "the prompt may reach it twice",
                )
                .await;
            }
        }
    }

    /// Starts the turn and reads it; returns its terminal message, whether the process may
    /// serve the next attempt, and the turn's id.
    async fn play_turn(
        &mut self,
        session: &mut AppServerSession,
        request: &AttemptRequest,
        mut answers: mpsc::UnboundedReceiver<Answer>,
    ) -> (AgentMessage, bool, Option<String>) {
        let mut mapping = AttemptMapping::new(Box::new(AppServerMapper::new(&request.prompt)));
        let mut out = Vec::new();
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
        // The helpers Codex runs between turns are its own; what the turn adds (its tools) does
        // not outlive a stop (Codex's interrupt leaves a running command running). Read before
        // the turn starts (a fast agent starts its tool at once), off the async threads: /proc
        // is a scan, of a few milliseconds.
        let tree = session.process.tree.clone();
        let helpers_before =
            tokio::task::spawn_blocking(move || crate::process::tree::descendants(&tree))
                .await
                .unwrap_or_default();
        let mut started = session.connection.request("turn/start", params);
        let mut started_open = true;
        let mut turn_id: Option<String> = None;
        let mut interrupt_pending = false;
        let mut open: HashMap<String, OpenApproval> = HashMap::new();
        let mut stop = InBandStop::new(
            self.stop.clone(),
            session.process.process_stop.clone(),
            INTERRUPT_GRACE,
        );
        let mut refused: Option<String> = None;
        let end = loop {
            tokio::select! {
                answer = &mut started, if started_open => {
                    started_open = false;
                    match answer {
                        Ok(Ok(result)) => {
                            turn_id = result["turn"]["id"].as_str().map(str::to_owned);
                            if let Some(turn) = &turn_id {
                                self.shared.history.turn_started(&session.thread_id, turn);
                            }
                            self.shared.set_turn(turn_id.clone());
                            if interrupt_pending {
                                self.interrupt(session, turn_id.as_deref());
                            }
                        }
                        Ok(Err(error)) => {
                            refused = Some(error);
                            break TurnEnd::Answered;
                        }
                        // The process ended: its exit report comes through the items.
                        Err(_) => {}
                    }
                }
                item = session.process.items.recv() => match item {
                    Some(LiveItem::Line(line)) => {
                        if let Some(tap) = &request.raw_line_tap {
                            tap.record(&line.text).await;
                        }
                        mapping.map_line(&line, &mut out);
                        self.shared.observe_context(&line.text);
                        self.keep_new_warnings(&mut out);
                        if let Some((rpc_id, method, params)) = agent_request_of(&line.text) {
                            if method == COMMAND_APPROVAL || method == FILE_CHANGE_APPROVAL {
                                let asked = out.iter().rev().find_map(|message| match message {
                                    AgentMessage::PermissionRequest(asked) => Some((**asked).clone()),
                                    _ => None,
                                });
                                self.sink.flush(&mut out).await;
                                match asked {
                                    Some(asked) => {
                                        let approval = OpenApproval { rpc_id, params, request: asked };
                                        self.approval_asked(session, &mut mapping, &mut open, approval, stop.is_sent()).await;
                                    }
                                    None => session.connection.respond_error(&rpc_id, -32602, "agentty could not read this approval request"),
                                }
                            } else {
                                tracing::warn!(method, "Codex asked for something agentty does not offer");
                                session.connection.respond_error(&rpc_id, METHOD_NOT_FOUND, &format!("agentty does not offer {method}"));
                            }
                        }
                        self.sink.flush(&mut out).await;
                        if mapping.outcome_reported() {
                            break TurnEnd::Answered;
                        }
                    }
                    Some(LiveItem::Exited(report)) => {
                        session.process.exited = Some(report);
                        break TurnEnd::Exited(report);
                    }
                    None => break TurnEnd::Exited(Default::default()),
                },
                Some(line) = session.process.stderr_lines.recv() => {
                    mapping.map_stderr_line(&line, &mut out);
                    self.sink.flush(&mut out).await;
                }
                Some((id, option, message)) = answers.recv() => {
                    if let Some(approval) = open.remove(&id) {
                        let valid = option.as_ref().is_none_or(|chosen| approval.request.options.iter().any(|offered| offered.id == *chosen));
                        if valid {
                            self.resolve(session, &mut mapping, &approval, option, PermissionResolver::User, message).await;
                        } else {
                            tracing::warn!(id, ?option, "an answer Codex did not offer; ignored");
                            open.insert(id, approval);
                        }
                    }
                }
                _ = stop.requested(), if !stop.is_sent() => {
                    tracing::info!("stopping the turn in-band (turn/interrupt)");
                    stop.sent();
                    for (_, approval) in open.drain() {
                        self.resolve(session, &mut mapping, &approval, None, PermissionResolver::User, None).await;
                    }
                    match &turn_id {
                        Some(turn) => self.interrupt(session, Some(turn)),
                        None => interrupt_pending = true,
                    }
                }
            }
        };
        while let Ok(line) = session.process.stderr_lines.try_recv() {
            mapping.map_stderr_line(&line, &mut out);
        }
        let stderr = session.process.stderr_text();
        if let Some(error) = refused {
            self.sink.flush(&mut out).await;
            let failure = crate::stream::Failure {
                reason: crate::stream::FailureReason::AgentError,
                message: format!("Codex refused the turn: {error}"),
                stderr,
                ..crate::stream::Failure::default()
            };
            return (AgentMessage::Failed(failure), true, None);
        }
        let answered_after_stop = stop.is_sent() && matches!(end, TurnEnd::Answered);
        let (report, ended_by, keep) = stop.outcome(end);
        if answered_after_stop {
            kill_strays(session, helpers_before).await;
        }
        let terminal = mapping.finish(&report, ended_by, stderr, &mut out);
        self.sink.flush(&mut out).await;
        (terminal, keep, turn_id)
    }

    fn interrupt(&self, session: &AppServerSession, turn_id: Option<&str>) {
        let Some(turn_id) = turn_id else {
            return;
        };
        let interrupted = session.connection.request(
            "turn/interrupt",
            json!({"threadId": session.thread_id, "turnId": turn_id}),
        );
        tokio::spawn(async move {
            if let Err(error) = settled(interrupted, REQUEST_TIMEOUT).await {
                tracing::warn!(%error, "Codex refused turn/interrupt");
            }
        });
    }

    /// Drops the warnings this provider showed already (Codex repeats some every turn).
    fn keep_new_warnings(&self, out: &mut Vec<AgentMessage>) {
        out.retain(|message| match message {
            AgentMessage::Notice { kind, message } if kind == NoticeKind::Warning.wire() => {
                self.shared.first_warning(message)
            }
            AgentMessage::Notice { kind, message } if kind == NoticeKind::SteerDelivered.wire() => {
                self.shared.delivered(message);
                true
            }
            _ => true,
        });
    }

    /// Codex asks before acting: by policy, or the user.
    async fn approval_asked(
        &mut self,
        session: &AppServerSession,
        mapping: &mut AttemptMapping,
        open: &mut HashMap<String, OpenApproval>,
        approval: OpenApproval,
        stopping: bool,
    ) {
        if stopping {
            self.resolve(
                session,
                mapping,
                &approval,
                None,
                PermissionResolver::User,
                None,
            )
            .await;
            return;
        }
        let kinds = match self.policy {
            PermissionPolicy::Ask => {
                open.insert(approval.request.id.clone(), approval);
                return;
            }
            PermissionPolicy::Allow => [
                PermissionOptionKind::AllowOnce,
                PermissionOptionKind::AllowAlways,
            ],
            PermissionPolicy::Deny => [
                PermissionOptionKind::RejectOnce,
                PermissionOptionKind::RejectAlways,
            ],
        };
        let option = kinds
            .into_iter()
            .find_map(|kind| approval.request.option_of(kind))
            .map(|option| option.id.clone());
        if self.policy == PermissionPolicy::Deny {
            let name = self.backend.name();
            self.sink
                .send(AgentMessage::notice(
                    NoticeKind::PermissionRefused.wire(),
                    format!(
                        "Refused without asking: {} ({}). The {name} provider's permission policy \
                         is deny; allow it with `--permissions allow`, or `permissions = \"ask\"` \
                         or `\"allow\"` under [providers.{name}] in the config.",
                        approval.request.title, approval.request.kind
                    ),
                ))
                .await;
        }
        self.resolve(
            session,
            mapping,
            &approval,
            option,
            PermissionResolver::Policy,
            None,
        )
        .await;
    }

    /// Answers an approval request with the decision of `option` (`None`: cancel) and says how.
    async fn resolve(
        &mut self,
        session: &AppServerSession,
        mapping: &mut AttemptMapping,
        approval: &OpenApproval,
        option: Option<String>,
        by: PermissionResolver,
        message: Option<String>,
    ) {
        let decision = option
            .as_deref()
            .and_then(|option| decision_value(&approval.params, option))
            .unwrap_or_else(|| Value::from("cancel"));
        let answer = session
            .connection
            .respond(&approval.rpc_id, json!({ "decision": decision }));
        let mut out = vec![AgentMessage::PermissionResolved {
            id: approval.request.id.clone(),
            outcome: option.unwrap_or_else(|| PERMISSION_CANCELLED.to_owned()),
            by,
            message,
        }];
        mapping.map_client_line(&answer, &mut out);
        self.sink.flush(&mut out).await;
    }
}

/// Kills what the stopped turn started and left running (a command Codex did not end).
async fn kill_strays(session: &AppServerSession, helpers_before: HashSet<i32>) {
    let tree = session.process.tree.clone();
    let killed = tokio::task::spawn_blocking(move || {
        crate::process::tree::kill_descendants_except(
            &tree,
            &helpers_before,
            std::time::Instant::now() + STRAY_KILL_DEADLINE,
        )
    })
    .await
    .unwrap_or_default();
    if killed > 0 {
        tracing::info!(
            killed,
            "killed the tool processes the stopped turn left running"
        );
    }
}

/// The id, method and params of a request the agent makes of agentty.
fn agent_request_of(line: &str) -> Option<(Value, String, Value)> {
    if !line.contains("\"method\"") || !line.contains("\"id\"") {
        return None;
    }
    let mut message: Value = serde_json::from_str(line).ok()?;
    let id = message.get("id").filter(|id| !id.is_null())?.clone();
    let method = message["method"].as_str()?.to_owned();
    Some((id, method, message["params"].take()))
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

/// A new thread in the running app-server, in the session's own directory.
async fn open_fresh_thread(session: &mut AppServerSession) -> bool {
    let fresh = AttemptRequest {
        session: SessionRef::New,
        ..AttemptRequest::default()
    };
    session.open_new(&fresh).await
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
