//! The Agent Client Protocol as a long-lived, two-way transport: one agent process per
//! conversation (`gemini --acp`, the Claude Code and Codex ACP adapters, any ACP agent), one
//! `session/prompt` per attempt, `session/update`s mapped by [`AcpMapper`].
//!
//! Invariants:
//! - Every attempt's stream ends with exactly one terminal message, composed by the runner's
//!   [`AttemptMapping`] from the prompt's answer and the process's fate, as for one-shot
//!   attempts.
//! - A permission the user did not give is never assumed: under the `ask` policy a request
//!   waits for the user's answer (`permission.request` -> [`Provider::answer_permission`]);
//!   `allow` and `deny` answer it at once and say so (`permission.resolved` by policy, and for
//!   a refusal a notice naming what was refused and how to allow it). A stop answers every
//!   open request `cancelled`, as the protocol requires.
//! - The stop runs stage 0 first: `session/cancel`, then up to [`CANCEL_GRACE`] for the
//!   prompt to end. If it does not, the process layer's three-stage stop ends the agent's
//!   whole tree and the next attempt starts the agent again and loads the session. When the
//!   agent does end the turn, whatever tool process it started during the turn and left
//!   running is killed: nothing a stopped turn started outlives the stop.
//! - Retry never duplicates: a failed attempt's process is ended (the agent holds the failed
//!   prompt in memory), and the next attempt loads the session from the file the orchestrator
//!   restored.
//! - An agent that answers the turn after a cancel one turn late (the Claude adapter) is
//!   started afresh after every stopped turn ([`AcpQuirks::restart_after_cancel`]).

mod connection;
mod mapper;
mod session;
mod settings;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc;

pub(crate) use mapper::AcpMapper;

use self::mapper::{id_key, REQUEST_PERMISSION};
use self::session::AcpSession;
use crate::config::PermissionPolicy;
use crate::process::StopControl;
use crate::provider::checkpoint::UnwrittenTurn;
use crate::provider::common::session_message;
use crate::provider::live_process::{InBandStop, LiveItem, LiveSession, LiveSlot, TurnEnd};
use crate::provider::runner::{spawn_attempt, AttemptMapping, AttemptSink};
use crate::provider::{AgentStream, AttemptRequest, Backend, Provider, SessionCheckpoint};
use crate::stream::{
    AgentMessage, NoticeKind, PermissionOptionKind, PermissionRequest, PermissionResolver,
    PERMISSION_CANCELLED,
};

/// Stage 0 of the stop: how long a `session/cancel` may take to end the turn.
pub(crate) const CANCEL_GRACE: Duration = crate::process::timings::IN_BAND_CANCEL_GRACE;
use crate::process::timings::STRAY_KILL_DEADLINE;
/// JSON-RPC's "method not found".
const METHOD_NOT_FOUND: i64 = -32601;

/// How a particular ACP agent departs from the protocol.
#[derive(Debug, Clone, Copy, Default)]
pub struct AcpQuirks {
    /// After a `session/cancel` the agent answers the next prompt one turn late: start it
    /// again (loading the session) after every stopped turn.
    pub(crate) restart_after_cancel: bool,
    /// How the agent's error messages name an HTTP status it does not state as a number
    /// (the Codex adapter passes on Codex's wording of a 5xx).
    pub(crate) http_status_of: Option<fn(&str) -> Option<u16>>,
    /// A prompt the agent answers with an error (its model request failed) is dropped from
    /// its session, in memory and on disk (Gemini CLI, measured): the process can serve the
    /// retry, and no restart is needed.
    pub(crate) forgets_failed_prompt: bool,
    /// `session/load` of the session the process holds re-reads it from its stored file: a
    /// rollback needs no new process (Gemini CLI, measured).
    pub(crate) reloads_in_process: bool,
}

/// A permission answer from the user: the request id, the option chosen (`None`: cancelled)
/// and the user's note with a rejection (recorded in `permission.resolved`; ACP cannot carry it).
type Answer = (String, Option<String>, Option<String>);

/// The ACP transport of a backend.
pub(crate) struct AcpProvider {
    backend: Arc<dyn Backend>,
    policy: PermissionPolicy,
    /// The live process; locked by the attempt that uses it.
    live: LiveSlot<AcpSession>,
    /// Where the running attempt takes the user's permission answers.
    answers: Arc<Mutex<Option<mpsc::UnboundedSender<Answer>>>>,
    /// The last attempt failed and left nothing in the agent's session: a rollback of the
    /// stored session changes nothing the live process holds.
    failed_clean: Arc<AtomicBool>,
    /// The last turn the live process kept, while the agent may still be writing it to disk.
    unwritten: Arc<Mutex<Option<UnwrittenTurn>>>,
    /// The agent's models for the status bar and `/model`.
    shared: settings::AcpShared,
}

impl AcpProvider {
    pub(crate) fn new(backend: Arc<dyn Backend>, policy: PermissionPolicy) -> Self {
        Self {
            backend,
            policy,
            live: LiveSlot::new(),
            answers: Arc::new(Mutex::new(None)),
            failed_clean: Arc::new(AtomicBool::new(false)),
            unwritten: Arc::new(Mutex::new(None)),
            shared: settings::AcpShared::new(),
        }
    }
}

impl Provider for AcpProvider {
    fn name(&self) -> &str {
        self.backend.name()
    }

    fn execute(&self, request: AttemptRequest, stop: StopControl) -> AgentStream {
        let attempt = |sink| AcpAttempt {
            backend: self.backend.clone(),
            policy: self.policy,
            live: self.live.clone(),
            answers: self.answers.clone(),
            failed_clean: self.failed_clean.clone(),
            unwritten: self.unwritten.clone(),
            shared: self.shared.clone(),
            sink,
            stop: stop.clone(),
        };
        spawn_attempt(stop.clone(), move |sink| attempt(sink).run(request))
    }

    /// The stored session, once the agent has written the last turn's end (Claude Code writes
    /// it after answering the prompt).
    fn checkpoint(&self, request: &AttemptRequest) -> Option<SessionCheckpoint> {
        let unwritten = self.unwritten.lock().ok().and_then(|mut u| u.take());
        if let Some(unwritten) = unwritten {
            unwritten.wait();
        }
        SessionCheckpoint::of_session(self.backend.as_ref(), request)
    }

    fn transport(&self) -> crate::provider::Transport {
        crate::provider::Transport::Acp
    }

    fn answer_permission(&self, id: &str, option: Option<String>, message: Option<String>) -> bool {
        let Ok(answers) = self.answers.lock() else {
            return false;
        };
        answers
            .as_ref()
            .is_some_and(|answers| answers.send((id.to_owned(), option, message)).is_ok())
    }

    fn change_setting(&self, setting: crate::provider::AgentSetting) -> bool {
        self.shared.change(setting)
    }

    fn agent_status(&self) -> Option<tokio::sync::watch::Receiver<crate::provider::AgentStatus>> {
        Some(self.shared.status())
    }

    fn session_restored(&self) {
        if !self.failed_clean.swap(false, Ordering::SeqCst) {
            self.live.mark_stale();
        }
    }

    fn warm_up(&self, request: AttemptRequest) {
        let backend = self.backend.clone();
        let shared = self.shared.clone();
        self.live.warm_up(
            async move { AcpSession::start(backend, &request, shared).await },
            "the ACP agent",
        );
    }
}

impl Drop for AcpProvider {
    fn drop(&mut self) {
        // With no attempt running, end the process now; a running attempt holds `live`, and
        // the process ends when that attempt lets go of it (`AcpSession`'s drop).
        self.live.release_if_idle();
    }
}

/// One attempt on the live process.
struct AcpAttempt {
    backend: Arc<dyn Backend>,
    policy: PermissionPolicy,
    live: LiveSlot<AcpSession>,
    answers: Arc<Mutex<Option<mpsc::UnboundedSender<Answer>>>>,
    failed_clean: Arc<AtomicBool>,
    unwritten: Arc<Mutex<Option<UnwrittenTurn>>>,
    shared: settings::AcpShared,
    sink: AttemptSink,
    stop: StopControl,
}

/// A permission request waiting for the user.
struct OpenPermission {
    /// The JSON-RPC id to answer, as the agent sent it.
    rpc_id: Value,
    request: PermissionRequest,
}

impl AcpAttempt {
    async fn run(mut self, request: AttemptRequest) {
        self.failed_clean.store(false, Ordering::SeqCst);
        let backend = self.backend.clone();
        let shared = self.shared.clone();
        let Some(mut slot) = self
            .live
            .claim(&request, &self.stop, &mut self.sink, || {
                AcpSession::start(backend.clone(), &request, shared.clone())
            })
            .await
        else {
            return;
        };
        let Some(session) = slot.as_mut() else {
            return;
        };
        let resumed = session.prompted || session.loaded;
        if session.prompted {
            session.process.forget_stderr();
        }
        session.prompted = true;
        self.sink
            .send(session_message(
                self.backend.name(),
                resumed,
                Some(session.session_id.clone()),
                None,
            ))
            .await;
        let (answers_tx, answers_rx) = mpsc::unbounded_channel();
        if let Ok(mut answers) = self.answers.lock() {
            *answers = Some(answers_tx);
        }
        let (mut terminal, keep) = self.play_turn(session, &request, answers_rx).await;
        if keep && self.backend.writes_session_after_turn() {
            if let Ok(mut unwritten) = self.unwritten.lock() {
                *unwritten = Some(UnwrittenTurn::of_session(
                    self.backend.clone(),
                    session.session_id.clone(),
                    request.clone(),
                ));
            }
        }
        let failed = matches!(terminal, AgentMessage::Failed(_));
        self.failed_clean.store(failed && keep, Ordering::SeqCst);
        if let Ok(mut answers) = self.answers.lock() {
            *answers = None;
        }
        if !keep {
            if let Some(session) = slot.take() {
                let closing = std::time::Instant::now();
                session.close().await;
                // The turn ends for the user when the process is gone: a stop's time says so.
                if let AgentMessage::Cancelled { elapsed_ms, .. } = &mut terminal {
                    *elapsed_ms += closing.elapsed().as_millis() as u64;
                }
            }
        }
        self.sink.send(terminal).await;
    }

    /// Sends the prompt and reads the turn; returns its terminal message and whether the
    /// process may serve the next attempt.
    async fn play_turn(
        &mut self,
        session: &mut AcpSession,
        request: &AttemptRequest,
        mut answers: mpsc::UnboundedReceiver<Answer>,
    ) -> (AgentMessage, bool) {
        let prompt_id = session.connection.next_id();
        let mut mapping =
            AttemptMapping::new(Box::new(AcpMapper::new(Some(prompt_id.to_string()))));
        let mut out = Vec::new();
        session.connection.request_unrouted(
            prompt_id,
            "session/prompt",
            json!({
                "sessionId": session.session_id,
                "prompt": prompt_blocks(request)
            }),
        );
        // The helpers the agent runs between turns are its own; what the turn adds is the
        // turn's (its tools), and does not outlive a stop. Read after the prompt is on its way
        // (a tool needs the model's answer first), off the async threads: /proc is a scan.
        let tree = session.process.tree.clone();
        let helpers_before =
            tokio::task::spawn_blocking(move || crate::process::tree::descendants(&tree))
                .await
                .unwrap_or_default();
        let mut open: HashMap<String, OpenPermission> = HashMap::new();
        let mut stop = InBandStop::new(
            self.stop.clone(),
            session.process.process_stop.clone(),
            CANCEL_GRACE,
        );
        let end = loop {
            tokio::select! {
                item = session.process.items.recv() => match item {
                    Some(LiveItem::Line(line)) => {
                        if let Some(tap) = &request.raw_line_tap {
                            tap.record(&line.text).await;
                        }
                        let agent_request = agent_request_of(&line.text);
                        mapping.map_line(&line, &mut out);
                        if let Some((rpc_id, method)) = agent_request {
                            if method == REQUEST_PERMISSION {
                                let asked = out.iter().rev().find_map(|message| match message {
                                    AgentMessage::PermissionRequest(asked) => Some((**asked).clone()),
                                    _ => None,
                                });
                                self.sink.flush(&mut out).await;
                                match asked {
                                    Some(asked) => {
                                        self.permission_asked(session, &mut mapping, &mut open, rpc_id, asked, stop.is_sent()).await
                                    }
                                    None => session.connection.respond_error(&rpc_id, -32602, "agentty could not read this permission request"),
                                }
                            } else {
                                tracing::warn!(method, "the agent called a method agentty does not offer");
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
                    if let Some(permission) = open.remove(&id) {
                        let valid = option.as_ref().is_none_or(|chosen| permission.request.options.iter().any(|offered| offered.id == *chosen));
                        if valid {
                            self.resolve_with(session, &mut mapping, &permission, option, PermissionResolver::User, message).await;
                        } else {
                            tracing::warn!(id, ?option, "an answer the agent did not offer; ignored");
                            open.insert(id, permission);
                        }
                    }
                }
                _ = stop.requested(), if !stop.is_sent() => {
                    tracing::info!("stopping the turn in-band (session/cancel)");
                    session.connection.notify("session/cancel", json!({"sessionId": session.session_id}));
                    stop.sent();
                    for (_, permission) in open.drain() {
                        self.resolve(session, &mut mapping, &permission, None, PermissionResolver::User).await;
                    }
                }
            }
        };
        while let Ok(line) = session.process.stderr_lines.try_recv() {
            mapping.map_stderr_line(&line, &mut out);
        }
        let stderr = session.process.stderr_text();
        let quirks = self.backend.acp_quirks(request);
        let answered_after_stop = stop.is_sent() && matches!(end, TurnEnd::Answered);
        let answered_unstopped = !stop.is_sent() && matches!(end, TurnEnd::Answered);
        let (report, ended_by, keep) = stop.outcome(end);
        let keep = if answered_after_stop {
            self.kill_strays(session, &helpers_before).await;
            keep && !quirks.restart_after_cancel
        } else {
            keep
        };
        let mut terminal = mapping.finish(&report, ended_by, stderr, &mut out);
        if let (AgentMessage::Failed(failure), Some(status_of)) =
            (&mut terminal, quirks.http_status_of)
        {
            failure.http_status = failure.http_status.or_else(|| status_of(&failure.message));
        }
        self.sink.flush(&mut out).await;
        // A failed attempt stays in the agent's memory (never continue on it), unless the
        // agent answered the prompt with its error and is known to forget such a prompt.
        let answered_with_error = matches!(&terminal, AgentMessage::Failed(failure) if failure.reason == crate::stream::FailureReason::AgentError);
        let forgotten = answered_unstopped && answered_with_error && quirks.forgets_failed_prompt;
        let keep = keep && (forgotten || !matches!(terminal, AgentMessage::Failed(_)));
        (terminal, keep)
    }

    /// The agent asks before acting: by policy, or the user.
    async fn permission_asked(
        &mut self,
        session: &AcpSession,
        mapping: &mut AttemptMapping,
        open: &mut HashMap<String, OpenPermission>,
        rpc_id: Value,
        request: PermissionRequest,
        stopping: bool,
    ) {
        let permission = OpenPermission { rpc_id, request };
        if stopping {
            self.resolve(
                session,
                mapping,
                &permission,
                None,
                PermissionResolver::User,
            )
            .await;
            return;
        }
        let by_policy = match self.policy {
            PermissionPolicy::Ask => None,
            PermissionPolicy::Allow => Some(
                [
                    PermissionOptionKind::AllowOnce,
                    PermissionOptionKind::AllowAlways,
                ]
                .into_iter()
                .find_map(|kind| permission.request.option_of(kind)),
            ),
            PermissionPolicy::Deny => Some(
                [
                    PermissionOptionKind::RejectOnce,
                    PermissionOptionKind::RejectAlways,
                ]
                .into_iter()
                .find_map(|kind| permission.request.option_of(kind)),
            ),
        };
        match by_policy {
            None => {
                open.insert(permission.request.id.clone(), permission);
            }
            Some(option) => {
                let option = option.map(|option| option.id.clone());
                if self.policy == PermissionPolicy::Deny {
                    self.sink
                        .send(AgentMessage::notice(
                            NoticeKind::PermissionRefused.wire(),
                            format!(
                                "Refused without asking: {} ({}). The {} provider's permission \
                                 policy is deny; allow it with `--permissions allow`, or \
                                 `permissions = \"ask\"` or `\"allow\"` under [providers.{}] in \
                                 the config.",
                                permission.request.title,
                                permission.request.kind,
                                self.backend.name(),
                                self.backend.name()
                            ),
                        ))
                        .await;
                }
                self.resolve(
                    session,
                    mapping,
                    &permission,
                    option,
                    PermissionResolver::Policy,
                )
                .await;
            }
        }
    }

    /// Answers a permission request and says how.
    async fn resolve(
        &mut self,
        session: &AcpSession,
        mapping: &mut AttemptMapping,
        permission: &OpenPermission,
        option: Option<String>,
        by: PermissionResolver,
    ) {
        self.resolve_with(session, mapping, permission, option, by, None)
            .await;
    }

    /// Answers a permission request and says how, with the user's note (which the protocol
    /// has no place for: only `permission.resolved` records it).
    async fn resolve_with(
        &mut self,
        session: &AcpSession,
        mapping: &mut AttemptMapping,
        permission: &OpenPermission,
        option: Option<String>,
        by: PermissionResolver,
        message: Option<String>,
    ) {
        let outcome = match &option {
            Some(option) => json!({"outcome": "selected", "optionId": option}),
            None => json!({"outcome": PERMISSION_CANCELLED}),
        };
        let answer = session
            .connection
            .respond(&permission.rpc_id, json!({ "outcome": outcome }));
        let mut out = vec![AgentMessage::PermissionResolved {
            id: permission.request.id.clone(),
            outcome: option.unwrap_or_else(|| PERMISSION_CANCELLED.to_owned()),
            by,
            message,
        }];
        mapping.map_client_line(&answer, &mut out);
        self.sink.flush(&mut out).await;
    }

    /// Kills what the stopped turn started and left running (a tool the agent did not end).
    async fn kill_strays(&self, session: &AcpSession, helpers_before: &HashSet<i32>) {
        let tree = session.process.tree.clone();
        let keep = helpers_before.clone();
        let killed = tokio::task::spawn_blocking(move || {
            crate::process::tree::kill_descendants_except(
                &tree,
                &keep,
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
}

/// The id and method of a request the agent makes of the client. Only those two fields are
/// read (the rest of the line is skipped, not parsed): the mapper reads the line in full.
fn agent_request_of(line: &str) -> Option<(Value, String)> {
    #[derive(serde::Deserialize)]
    struct RequestHead {
        id: Option<Value>,
        method: Option<String>,
    }
    if !line.contains("\"method\"") || !line.contains("\"id\"") {
        return None;
    }
    let head: RequestHead = serde_json::from_str(line).ok()?;
    Some((head.id?, head.method?)).filter(|(id, _)| !id.is_null() && !id_key(id).is_empty())
}

/// Why an ACP adapter cannot run: `adapter` is not on PATH and not configured.
pub(crate) fn adapter_missing(agent: &str, provider: &str, adapter: &str, package: &str) -> String {
    format!(
        "the {agent} ACP adapter is not installed: `{adapter}` is not on PATH (npm install -g \
         {package}, or set acp_command under [providers.{provider}]); --transport json runs \
         {agent} itself"
    )
}

/// The ACP adapter to run for a backend: `acp_command` from its config, else `default` on
/// PATH; `None` when neither is there (the backend then keeps its JSON mode).
pub(crate) fn acp_adapter(
    settings: &crate::config::ProviderSettings,
    default: &str,
) -> Option<std::path::PathBuf> {
    match &settings.acp_command {
        Some(command) => Some(command.clone()),
        None => crate::process::find_on_path(default),
    }
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
