//! pi's RPC mode (`pi --mode rpc`) as a long-lived, two-way transport: one pi process per
//! conversation, commands on its stdin, responses correlated by `id` (they can come out of
//! order), events mapped by the same [`PiMapper`](super::mapper::PiMapper) as JSON mode.
//!
//! Invariants (protocols/pi/README.md §8):
//! - One attempt = one `prompt` on the live process; its stream ends at `agent_end` (or when
//!   the process dies) with exactly one terminal message, composed by the runner's
//!   [`AttemptMapping`] as for one-shot attempts.
//! - pi's own auto-retry is off (`set_auto_retry`): only the orchestrator retries.
//! - Retry never duplicates: a failed attempt stays in pi's memory. When pi ended the turn
//!   itself (`agent_end`, its session written), the process stays; the orchestrator restores
//!   the session file and calls [`Provider::session_restored`], and the next attempt has pi
//!   re-read it (`switch_session`) — or, for a fresh session, open one (`new_session`) — with
//!   no cold start. A process that died, or that a stop had to signal, is ended (before the
//!   terminal message, so nothing it writes races the rollback) and pi starts again on the
//!   restored file.
//! - The stop runs stage 0 first: `abort`, then up to [`ABORT_GRACE`] for `agent_end`. If the
//!   turn does not end, the process layer's three-stage stop runs on the whole tree and the next
//!   attempt starts pi again on the same session file. Nothing pi or its tools started
//!   outlives a stop: the tree kill sweeps what pi leaves.
//! - The process ends when the provider is dropped (stdin closed, then the three-stage stop).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::provider::common::session_message;
use crate::provider::live_process::{
    ClaimedSession, InBandStop, LiveItem, LiveProcess, LiveSession, LiveSlot, ResponseRouter,
    TurnEnd,
};
use crate::provider::runner::{spawn_attempt, AttemptSink};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::process::{ExitReport, Line, StopControl};
use crate::provider::runner::{self, AttemptMapping, EndedBy};
use crate::provider::{
    AgentQueue, AgentSetting, AgentStatus, AgentStream, AttemptRequest, Backend, ContextUse,
    Interjection, ModelChoice, Provider, SessionCheckpoint, SessionRef,
};
use crate::stream::{AgentMessage, Failure, FailureReason, NoticeKind};

/// Stage 0 of the stop: how long an `abort` may take to end the turn.
pub(crate) const ABORT_GRACE: Duration = crate::process::timings::IN_BAND_CANCEL_GRACE;
/// How long a starting pi may take to answer `get_state` (a cold start is about 1.2 s).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long pi may take to switch to (or open) a session in the running process; a pi that
/// does not know the command answers without the id, so the wait ends here and pi restarts.
const SWITCH_TIMEOUT: Duration = Duration::from_secs(5);
// After a failed attempt, how long pi may take to exit once its stdin is closed.
use crate::process::timings::EXIT_AFTER_CLOSE;

/// The RPC transport of a pi-speaking backend (pi itself, or the demo agent).
pub struct RpcProvider {
    backend: Arc<dyn Backend>,
    /// The live process; locked by the attempt that uses it.
    live: LiveSlot<RpcSession>,
    /// The running attempt's command writer, for steer and follow-up.
    commands: Arc<Mutex<Option<CommandWriter>>>,
    /// The live process's stdin, between turns too (settings): set when a process starts.
    control: Arc<Mutex<Option<CommandWriter>>>,
    queue: watch::Sender<AgentQueue>,
    status: watch::Sender<AgentStatus>,
}

/// pi's thinking levels (`xhigh` is left out: only some models take it).
const THINKING_LEVELS: [&str; 5] = ["off", "minimal", "low", "medium", "high"];
/// How long pi may take to answer a settings command.
const SETTING_TIMEOUT: Duration = Duration::from_secs(10);

/// A pi `Model` object as a choice.
fn model_choice(model: &Value) -> Option<ModelChoice> {
    let id = model["id"].as_str()?.to_owned();
    Some(ModelChoice {
        name: model["name"].as_str().unwrap_or(&id).to_owned(),
        provider: model["provider"].as_str().map(str::to_owned),
        reasoning: model["reasoning"].as_bool().unwrap_or(false),
        id,
    })
}

/// The thinking levels a model takes.
fn levels_for(model: &Value) -> Vec<String> {
    if model["reasoning"].as_bool().unwrap_or(false) {
        THINKING_LEVELS.map(str::to_owned).to_vec()
    } else {
        Vec::new()
    }
}

impl RpcProvider {
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        Self {
            backend,
            live: LiveSlot::new(),
            commands: Arc::new(Mutex::new(None)),
            control: Arc::new(Mutex::new(None)),
            queue: watch::channel(AgentQueue::default()).0,
            status: watch::channel(AgentStatus::default()).0,
        }
    }

    /// pi's queued steering and follow-up messages, as its `queue_update` events tell.
    pub(crate) fn queue(&self) -> watch::Receiver<AgentQueue> {
        self.queue.subscribe()
    }

    /// pi's model and thinking level, and the session's cost and tokens so far.
    pub(crate) fn status(&self) -> watch::Receiver<AgentStatus> {
        self.status.subscribe()
    }

    /// An attempt on the live process, once it has its sink (a compaction's).
    fn attempt(&self, stop: StopControl) -> impl FnOnce(AttemptSink) -> RpcAttempt {
        let (backend, live, commands) = (
            self.backend.clone(),
            self.live.clone(),
            self.commands.clone(),
        );
        let (control, queue, status) = (
            self.control.clone(),
            self.queue.clone(),
            self.status.clone(),
        );
        move |sink| RpcAttempt {
            backend,
            live,
            commands,
            control,
            queue,
            status,
            sink,
            stop,
            taken_at_stop: Vec::new(),
        }
    }
}

impl Provider for RpcProvider {
    fn name(&self) -> &str {
        self.backend.name()
    }

    fn execute(&self, request: AttemptRequest, stop: StopControl) -> AgentStream {
        let attempt = |sink| RpcAttempt {
            backend: self.backend.clone(),
            live: self.live.clone(),
            commands: self.commands.clone(),
            control: self.control.clone(),
            queue: self.queue.clone(),
            status: self.status.clone(),
            sink,
            stop: stop.clone(),
            taken_at_stop: Vec::new(),
        };
        spawn_attempt(stop.clone(), move |sink| attempt(sink).run(request))
    }

    fn checkpoint(&self, request: &AttemptRequest) -> Option<SessionCheckpoint> {
        SessionCheckpoint::of_session(self.backend.as_ref(), request)
    }

    fn transport(&self) -> crate::provider::Transport {
        crate::provider::Transport::Rpc
    }

    fn accepts_images(&self) -> bool {
        true
    }

    fn can_interject(&self) -> bool {
        true
    }

    fn interject(&self, kind: Interjection, text: &str) -> bool {
        let Ok(commands) = self.commands.lock() else {
            return false;
        };
        let Some(writer) = commands.as_ref() else {
            return false;
        };
        let (command, id_prefix) = match kind {
            Interjection::Steer => ("steer", "steer"),
            Interjection::FollowUp => ("follow_up", "follow"),
        };
        writer.send(id_prefix, json!({"type": command, "message": text}))
    }

    fn session_restored(&self) {
        self.live.mark_stale();
    }

    fn warm_up(&self, request: AttemptRequest) {
        let backend = self.backend.clone();
        let status = self.status.clone();
        let control = self.control.clone();
        self.live.warm_up(
            async move { RpcSession::start(backend.as_ref(), &request, &status, &control).await },
            "pi",
        );
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
        tokio::spawn(async move { ask(&writer, setting, &status).await });
        true
    }

    fn agent_queue(&self) -> Option<watch::Receiver<AgentQueue>> {
        Some(self.queue())
    }

    fn agent_status(&self) -> Option<watch::Receiver<AgentStatus>> {
        Some(self.status())
    }

    fn can_compact(&self) -> bool {
        true
    }

    fn compact(
        &self,
        request: AttemptRequest,
        instructions: Option<String>,
        stop: StopControl,
    ) -> AgentStream {
        let attempt = self.attempt(stop.clone());
        spawn_attempt(stop, move |sink| {
            attempt(sink).compact(request, instructions)
        })
    }
}

impl Drop for RpcProvider {
    fn drop(&mut self) {
        // With no attempt running, end the process now; a running attempt holds `live`, and
        // the process ends when that attempt lets go of it (see `RpcSession`'s drop).
        self.live.release_if_idle();
    }
}

/// Asks pi for `setting` and puts its answer in `status`: the new value, or the refusal.
async fn ask(writer: &CommandWriter, setting: AgentSetting, status: &watch::Sender<AgentStatus>) {
    match setting {
        AgentSetting::Mode(_) => {}
        AgentSetting::Model(id) => {
            let provider = status
                .borrow()
                .models
                .iter()
                .find(|model| model.id == id)
                .and_then(|model| model.provider.clone());
            let response = writer.request(
                "model",
                json!({"type": "set_model", "provider": provider, "modelId": id}),
            );
            let answer = settled(response).await;
            status.send_modify(|status| match answer {
                Ok(data) => {
                    status.model = data["id"].as_str().map(str::to_owned).or(Some(id));
                    status.thinking_levels = levels_for(&data);
                }
                Err(refusal) => status.refused(format!("model {id}: {refusal}")),
            });
        }
        AgentSetting::ThinkingLevel(level) => {
            let response = writer.request(
                "thinking",
                json!({"type": "set_thinking_level", "level": level}),
            );
            let answer = settled(response).await;
            status.send_modify(|status| match answer {
                Ok(_) => status.thinking_level = Some(level),
                Err(refusal) => status.refused(format!("thinking level {level}: {refusal}")),
            });
        }
    }
}

/// Asks pi how full the model's context window is (`get_session_stats`'s `contextUsage`), in
/// the background, for the status bar. pi does not know it right after a compaction (`tokens`
/// is null): then nothing is shown rather than an old figure.
fn ask_context(writer: &CommandWriter, status: &watch::Sender<AgentStatus>) {
    let response = writer.request("stats", json!({"type": "get_session_stats"}));
    let status = status.clone();
    tokio::spawn(async move {
        let Ok(data) = settled(response).await else {
            return;
        };
        let usage = &data["contextUsage"];
        let context = match (usage["tokens"].as_u64(), usage["contextWindow"].as_u64()) {
            (Some(tokens), Some(window)) => ContextUse::new(tokens, window),
            _ => None,
        };
        status.send_modify(|status| status.context = context);
    });
}

/// A settings command's answer: its `data`, or why it did not succeed.
async fn settled(response: oneshot::Receiver<Value>) -> Result<Value, String> {
    match tokio::time::timeout(SETTING_TIMEOUT, response).await {
        Ok(Ok(answer)) if answer["success"] == true => Ok(answer["data"].clone()),
        Ok(Ok(answer)) => Err(answer["error"]
            .as_str()
            .unwrap_or("refused, without saying why")
            .to_owned()),
        Ok(Err(_)) => Err("pi ended before answering".to_owned()),
        Err(_) => Err(format!(
            "pi did not answer within {} s",
            SETTING_TIMEOUT.as_secs()
        )),
    }
}

/// Writes commands on pi's stdin (through a task that owns it) and correlates responses.
#[derive(Clone)]
struct CommandWriter {
    lines: mpsc::UnboundedSender<String>,
    pending: Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>,
    next_id: Arc<AtomicU64>,
}

impl CommandWriter {
    fn next_id(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends a command whose response nobody waits for (a failure becomes a notice).
    fn send(&self, prefix: &str, mut command: Value) -> bool {
        command["id"] = Value::String(self.next_id(prefix));
        self.lines.send(command.to_string()).is_ok()
    }

    /// Sends a command; the receiver gets its response.
    fn request(&self, prefix: &str, mut command: Value) -> oneshot::Receiver<Value> {
        let id = self.next_id(prefix);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id.clone(), tx);
        }
        command["id"] = Value::String(id);
        let _ = self.lines.send(command.to_string());
        rx
    }
}

/// pi's responses to commands somebody waits for (`get_state`, the
/// prompt) go to their waiters.
struct PiResponseRouter(Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>);

impl ResponseRouter for PiResponseRouter {
    fn deliver(&self, line: &Line) -> bool {
        let Some(waiter) = waiting_for(&self.0, line) else {
            return false;
        };
        if let Ok(value) = serde_json::from_str(&line.text) {
            let _ = waiter.send(value);
        }
        true
    }
}

/// One live `pi --mode rpc` process.
struct RpcSession {
    writer: CommandWriter,
    process: LiveProcess,
    session_id: Option<String>,
    session_file: Option<String>,
    /// The session it was started for, and whether it has had a prompt yet (a process
    /// started ahead of the first prompt serves that prompt's session).
    started_for: SessionRef,
    prompted: bool,
}

impl RpcSession {
    /// Starts pi for `request.session` and asks it for its state; `Err` is the terminal message.
    async fn start(
        backend: &dyn Backend,
        request: &AttemptRequest,
        status: &watch::Sender<AgentStatus>,
        control: &Mutex<Option<CommandWriter>>,
    ) -> Result<Self, AgentMessage> {
        let Some(spec) = backend.rpc_spawn_spec(request) else {
            return Err(runner::start_failed(format!(
                "the {} backend has no RPC mode",
                backend.name()
            )));
        };
        let pending = Arc::new(Mutex::new(HashMap::new()));
        let process = LiveProcess::start(&spec, PiResponseRouter(pending.clone()), "rpc agent")
            .map_err(runner::start_failed)?;
        let writer = CommandWriter {
            lines: process.commands.clone(),
            pending,
            next_id: Arc::new(AtomicU64::new(1)),
        };
        let mut session = Self {
            writer,
            process,
            session_id: None,
            session_file: None,
            started_for: request.session.clone(),
            prompted: false,
        };
        session
            .writer
            .send("retry", json!({"type": "set_auto_retry", "enabled": false}));
        let state = session
            .writer
            .request("state", json!({"type": "get_state"}));
        let models = session
            .writer
            .request("models", json!({"type": "get_available_models"}));
        match session.await_response(state, START_TIMEOUT).await {
            Ok(state) => {
                let data = &state["data"];
                session.session_id = data["sessionId"].as_str().map(str::to_owned);
                session.session_file = data["sessionFile"].as_str().map(str::to_owned);
                // A pi that lists no models (or fails to) still runs: `/model` then says so.
                let models = session
                    .await_response(models, START_TIMEOUT)
                    .await
                    .ok()
                    .filter(|answer| answer["success"] == true);
                let models: Vec<ModelChoice> = models
                    .as_ref()
                    .and_then(|answer| answer["data"]["models"].as_array())
                    .map(|models| models.iter().filter_map(model_choice).collect())
                    .unwrap_or_default();
                status.send_modify(|status| {
                    status.model = data["model"]["id"].as_str().map(str::to_owned);
                    status.thinking_level = data["thinkingLevel"].as_str().map(str::to_owned);
                    status.thinking_levels = levels_for(&data["model"]);
                    status.models = models;
                });
                // The conversation's settings (a `--model` from the config would otherwise
                // win over the model the user chose), in order: a model before its level.
                for setting in &request.settings {
                    let needed = setting.needs_asking(&status.borrow());
                    if needed {
                        ask(&session.writer, setting.clone(), status).await;
                    }
                }
                if let Ok(mut control) = control.lock() {
                    *control = Some(session.writer.clone());
                }
                Ok(session)
            }
            Err(report) => {
                let report = match report {
                    Some(report) => report,
                    None => {
                        session.process.process_stop.kill_now();
                        session.process.wait_exit().await
                    }
                };
                let mapping = AttemptMapping::new(backend.mapper(request));
                let mut out = Vec::new();
                let mut terminal = mapping.finish(
                    &report,
                    EndedBy::Exit,
                    session.process.stderr_text(),
                    &mut out,
                );
                if let AgentMessage::Failed(failure) = &mut terminal {
                    if failure.reason == FailureReason::NoCompletion {
                        failure.reason = FailureReason::StartFailed;
                        let said = failure.stderr.lines().find(|line| !line.trim().is_empty());
                        failure.message = match said {
                            Some(said) => format!("pi in RPC mode did not start: {}", said.trim()),
                            None => "pi in RPC mode ended without answering get_state (an agent \
                                     that speaks only pi's JSON mode needs --transport json)"
                                .to_owned(),
                        };
                    }
                }
                if request.session != SessionRef::New {
                    runner::mark_lost_session(&mut terminal, backend.lost_session_phrases());
                }
                Err(terminal)
            }
        }
    }

    /// Waits for a response, while keeping stray lines; `Err(Some)` when the process exited,
    /// `Err(None)` on timeout.
    async fn await_response(
        &mut self,
        mut response: oneshot::Receiver<Value>,
        timeout: Duration,
    ) -> Result<Value, Option<ExitReport>> {
        let deadline = Instant::now() + timeout;
        loop {
            tokio::select! {
                value = &mut response => return value.map_err(|_| None),
                item = self.process.items.recv() => match item {
                    Some(LiveItem::Line(line)) => {
                        tracing::debug!(line = %line.text, "rpc line before the prompt");
                    }
                    Some(LiveItem::Exited(report)) => {
                        self.process.exited = Some(report);
                        return Err(Some(report));
                    }
                    None => return Err(Some(ExitReport::default())),
                },
                _ = tokio::time::sleep_until(deadline) => return Err(None),
            }
        }
    }
}

impl RpcSession {
    /// Has pi re-read its session file (`switch_session`), which leaves behind its queue and
    /// whatever it held in memory only; false when pi has no file yet (switching to it would
    /// start a new session) or did not switch.
    async fn drop_held(&mut self, request: &AttemptRequest) -> bool {
        let written = self
            .session_file
            .as_deref()
            .is_some_and(|file| std::path::Path::new(file).is_file());
        written && self.reload(request).await
    }
}

impl LiveSession for RpcSession {
    /// Does this live process hold the session `session` names (and is it still running)?
    fn serves(&mut self, session: &SessionRef) -> bool {
        // Between turns nobody reads: what came meanwhile is pi's idle chatter, or its exit.
        if !self.process.is_running() {
            return false;
        }
        if !self.prompted && *session == self.started_for {
            return true;
        }
        match session {
            SessionRef::Resume(id) => {
                self.session_id.as_deref() == Some(id.as_str())
                    || self.session_file.as_deref() == Some(id.as_str())
            }
            SessionRef::New | SessionRef::ContinueLatest => false,
        }
    }

    /// `switch_session` to the session file, which the orchestrator has just restored: pi
    /// replaces what it holds with what the file holds, without a new process.
    async fn reload(&mut self, _request: &AttemptRequest) -> bool {
        let Some(file) = self.session_file.clone() else {
            return false;
        };
        if !self.process.is_running() {
            return false;
        }
        let switched = self.writer.request(
            "switch",
            json!({"type": "switch_session", "sessionPath": file}),
        );
        match self.await_response(switched, SWITCH_TIMEOUT).await {
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

    /// `new_session` in the running pi: a retry in a fresh session costs no cold start.
    async fn open_new(&mut self, request: &AttemptRequest) -> bool {
        if !self.process.is_running() {
            return false;
        }
        let created = self.writer.request("new", json!({"type": "new_session"}));
        match self.await_response(created, SWITCH_TIMEOUT).await {
            Ok(response) if response["success"] == Value::Bool(true) => {}
            other => {
                tracing::warn!(?other, "pi did not open a new session");
                return false;
            }
        }
        let state = self.writer.request("state", json!({"type": "get_state"}));
        match self.await_response(state, START_TIMEOUT).await {
            Ok(state) => {
                let data = &state["data"];
                self.session_id = data["sessionId"].as_str().map(str::to_owned);
                self.session_file = data["sessionFile"].as_str().map(str::to_owned);
                self.started_for = request.session.clone();
                self.prompted = false;
                self.process.forget_stderr();
                true
            }
            Err(_) => false,
        }
    }

    /// Ends the process and waits for it: stdin closed (pi exits at once), else the
    /// three-stage stop after [`EXIT_AFTER_CLOSE`].
    async fn close(self) {
        let Self {
            writer, process, ..
        } = self;
        if let Ok(mut pending) = writer.pending.lock() {
            pending.clear();
        }
        drop(writer);
        process.close(EXIT_AFTER_CLOSE).await;
    }
}

/// The waiter of a response line, if it is one somebody waits for.
fn waiting_for(
    pending: &Mutex<HashMap<String, oneshot::Sender<Value>>>,
    line: &Line,
) -> Option<oneshot::Sender<Value>> {
    if !line.text.contains("\"response\"") {
        return None;
    }
    let head: ResponseHead = serde_json::from_str(&line.text).ok()?;
    if head.kind != "response" {
        return None;
    }
    pending.lock().ok()?.remove(head.id.as_deref()?)
}

#[derive(serde::Deserialize)]
struct ResponseHead {
    #[serde(rename = "type")]
    kind: String,
    id: Option<String>,
}

/// One attempt on the live process.
struct RpcAttempt {
    backend: Arc<dyn Backend>,
    live: LiveSlot<RpcSession>,
    commands: Arc<Mutex<Option<CommandWriter>>>,
    control: Arc<Mutex<Option<CommandWriter>>>,
    queue: watch::Sender<AgentQueue>,
    status: watch::Sender<AgentStatus>,
    sink: AttemptSink,
    stop: StopControl,
    /// Messages pi took off its queue after the `abort` went out: delivered only if the model
    /// then answers (see [`RpcAttempt::confirm_taken`]), else taken back when the turn ends.
    taken_at_stop: Vec<(NoticeKind, String)>,
}

impl RpcAttempt {
    async fn run(mut self, request: AttemptRequest) {
        let Some(mut slot) = self.claim_session(&request).await else {
            return;
        };
        let Some(session) = slot.as_mut() else {
            return;
        };
        let resumed = session.prompted || request.session != SessionRef::New;
        if session.prompted {
            session.process.forget_stderr();
        }
        session.prompted = true;
        self.sink
            .send(session_message(
                self.backend.name(),
                resumed,
                session.session_id.clone(),
                None,
            ))
            .await;
        let (terminal, keep) = self.play_turn(session, &request).await;
        if let Ok(mut commands) = self.commands.lock() {
            *commands = None;
        }
        self.keep_or_close(&mut slot, keep).await;
        self.sink.send(terminal).await;
    }

    /// The live pi for `request`, locked for this attempt: kept, reloaded or started as
    /// [`LiveSlot::claim`] decides. `None` when the attempt is over already.
    async fn claim_session(
        &mut self,
        request: &AttemptRequest,
    ) -> Option<ClaimedSession<RpcSession>> {
        let backend = self.backend.clone();
        let status = self.status.clone();
        let control = self.control.clone();
        self.live
            .claim(request, &self.stop, &mut self.sink, || {
                RpcSession::start(backend.as_ref(), request, &status, &control)
            })
            .await
    }

    /// After an attempt: a pi that serves the next one is asked for its context; one that
    /// cannot is closed.
    async fn keep_or_close(&self, slot: &mut ClaimedSession<RpcSession>, keep: bool) {
        if keep {
            if let Some(session) = slot.as_ref() {
                ask_context(&session.writer, &self.status);
            }
        } else {
            // A new pi starts with an empty queue; what this one held is lost with it.
            self.queue.send_replace(AgentQueue::default());
            if let Some(session) = slot.take() {
                session.close().await;
            }
        }
    }

    /// Sends the prompt and reads the turn; returns its terminal message and whether the
    /// process may serve the next attempt.
    async fn play_turn(
        &mut self,
        session: &mut RpcSession,
        request: &AttemptRequest,
    ) -> (AgentMessage, bool) {
        let mut mapping = AttemptMapping::new(self.backend.mapper(request));
        let mut out = Vec::new();
        let mut prompt_response = session.writer.request("prompt", prompt_command(request));
        if let Ok(mut commands) = self.commands.lock() {
            *commands = Some(session.writer.clone());
        }
        let mut prompt_answered = false;
        let mut stop = InBandStop::new(
            self.stop.clone(),
            session.process.process_stop.clone(),
            ABORT_GRACE,
        );
        let mut prompt_refused: Option<String> = None;
        let end = loop {
            tokio::select! {
                item = session.process.items.recv() => match item {
                    Some(LiveItem::Line(line)) => {
                        if let Some(tap) = &request.raw_line_tap {
                            tap.record(&line.text).await;
                        }
                        if self.side_line(&line, session, stop.is_sent()).await {
                            continue;
                        }
                        let taken = !self.taken_at_stop.is_empty();
                        if taken && is_event(&line.text, "message_update") {
                            self.confirm_taken().await;
                        }
                        mapping.map_line(&line, &mut out);
                        self.sink.flush(&mut out).await;
                        if is_agent_end(&line.text) {
                            break TurnEnd::Answered;
                        }
                    }
                    Some(LiveItem::Exited(report)) => {
                        session.process.exited = Some(report);
                        break TurnEnd::Exited(report);
                    }
                    None => break TurnEnd::Exited(ExitReport::default()),
                },
                Some(line) = session.process.stderr_lines.recv() => {
                    mapping.map_stderr_line(&line, &mut out);
                    self.sink.flush(&mut out).await;
                }
                response = &mut prompt_response, if !prompt_answered => {
                    prompt_answered = true;
                    if let Ok(response) = response {
                        if response["success"] != Value::Bool(true) {
                            prompt_refused = Some(
                                response["error"].as_str().unwrap_or("pi refused the prompt").to_owned(),
                            );
                            break TurnEnd::Answered;
                        }
                    }
                }
                _ = stop.requested(), if !stop.is_sent() => {
                    tracing::info!("stopping the turn in-band (abort)");
                    session.writer.send("abort", json!({"type": "abort"}));
                    stop.sent();
                }
            }
        };
        while let Ok(line) = session.process.stderr_lines.try_recv() {
            mapping.map_stderr_line(&line, &mut out);
        }
        let stderr = session.process.stderr_text();
        if let Some(error) = prompt_refused {
            self.sink.flush(&mut out).await;
            return (
                AgentMessage::Failed(Failure {
                    reason: FailureReason::AgentError,
                    message: format!("pi refused the prompt: {error}"),
                    stderr,
                    ..Failure::default()
                }),
                true,
            );
        }
        let answered_unstopped = !stop.is_sent() && matches!(end, TurnEnd::Answered);
        let undelivered = self.take_back_undelivered(session, &mut out);
        let (report, ended_by, keep) = stop.outcome(end);
        let terminal = mapping.finish(&report, ended_by, stderr, &mut out);
        self.sink.flush(&mut out).await;
        // A failed attempt stays in pi's memory: never continue on it as it is (retry never
        // duplicates). A turn that pi ended itself (`agent_end`) leaves pi idle with its
        // session written: the process stays, and the orchestrator's rollback makes it re-read
        // the restored file (`switch_session`, see `reload`) or open a new session.
        let keep = keep && (answered_unstopped || !matches!(terminal, AgentMessage::Failed(_)));
        // pi still holds what did not arrive (its queue; a steer in memory): it re-reads the
        // session file, which drops both, or the process goes with them.
        let keep = keep && (!undelivered || session.drop_held(request).await);
        (terminal, keep)
    }

    /// What the user typed during the turn and the agent never answered: steering pi took off
    /// its queue after the `abort` (it wrote it into the session, which the next request would
    /// carry: taken out of the file here), and what is still in its queue (an abort does not
    /// clear it, and RPC has no command that does). Each goes back to the user
    /// (`not_delivered`). True when there was any: pi must then drop what it holds.
    fn take_back_undelivered(&mut self, session: &RpcSession, out: &mut Vec<AgentMessage>) -> bool {
        let queued = self.queue.send_replace(AgentQueue::default());
        let taken: Vec<String> = std::mem::take(&mut self.taken_at_stop)
            .into_iter()
            .map(|(_, text)| text)
            .collect();
        if let (false, Some(file)) = (taken.is_empty(), session.session_file.as_deref()) {
            match self
                .backend
                .take_back_unanswered(std::path::Path::new(file), &taken)
            {
                Ok(count) => tracing::info!(count, "took unanswered steering out of pi's session"),
                Err(error) => out.push(AgentMessage::notice(
                    NoticeKind::Warning.wire(),
                    format!(
                        "Could not take your unanswered message out of pi's session ({error}): \
                         the agent may still see it"
                    ),
                )),
            }
        }
        let undelivered: Vec<String> = taken
            .into_iter()
            .chain(queued.steering)
            .chain(queued.follow_up)
            .collect();
        for text in &undelivered {
            out.push(AgentMessage::notice(
                NoticeKind::NotDelivered.wire(),
                text.clone(),
            ));
        }
        !undelivered.is_empty()
    }

    /// The model answers after pi took steering at the stop: the model saw it, so it was
    /// delivered after all.
    async fn confirm_taken(&mut self) {
        for (kind, text) in std::mem::take(&mut self.taken_at_stop) {
            self.sink
                .send(AgentMessage::notice(kind.wire(), text))
                .await;
        }
    }

    /// Lines that are not the turn's events: pi's queue, and responses nobody waited for.
    /// Returns true when the line was handled here. `stopping`: the `abort` has gone out.
    async fn side_line(&mut self, line: &Line, session: &RpcSession, stopping: bool) -> bool {
        if !line.text.contains("\"queue_update\"") && !line.text.contains("\"response\"") {
            return false;
        }
        let Ok(value) = serde_json::from_str::<Value>(&line.text) else {
            return false;
        };
        match value["type"].as_str() {
            Some("queue_update") => {
                let strings = |key: &str| -> Vec<String> {
                    value[key]
                        .as_array()
                        .map(|items| {
                            items
                                .iter()
                                .filter_map(|item| item.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default()
                };
                let now = AgentQueue {
                    steering: strings("steering"),
                    follow_up: strings("followUp"),
                };
                let before = self.queue.send_replace(now.clone());
                // What left pi's queue was delivered (abort does not clear it); what left it
                // after the abort went out is delivered only if the model answers it.
                for (kind, was, is) in [
                    (NoticeKind::SteerDelivered, &before.steering, &now.steering),
                    (
                        NoticeKind::FollowUpDelivered,
                        &before.follow_up,
                        &now.follow_up,
                    ),
                ] {
                    for text in delivered(was, is) {
                        if stopping {
                            self.taken_at_stop.push((kind.clone(), text));
                        } else {
                            self.sink
                                .send(AgentMessage::notice(kind.wire(), text))
                                .await;
                        }
                    }
                }
                true
            }
            Some("response") => {
                if value["success"] == Value::Bool(false) {
                    let command = value["command"].as_str().unwrap_or("command");
                    let error = value["error"].as_str().unwrap_or("no reason given");
                    self.sink
                        .send(AgentMessage::notice(
                            NoticeKind::Warning.wire(),
                            format!("pi refused `{command}`: {error}"),
                        ))
                        .await;
                }
                let _ = session;
                true
            }
            _ => false,
        }
    }
}

/// The messages of `was` no longer in `is` (each counted once: the same text may be queued
/// twice).
fn delivered(was: &[String], is: &[String]) -> Vec<String> {
    let mut left = is.to_vec();
    let mut gone = Vec::new();
    for text in was {
        match left.iter().position(|still| still == text) {
            Some(index) => {
                left.remove(index);
            }
            None => gone.push(text.clone()),
        }
    }
    gone
}

fn is_agent_end(line: &str) -> bool {
    is_event(line, "agent_end")
}

/// Whether `line` is pi's event `kind`.
fn is_event(line: &str, kind: &str) -> bool {
    // A cheap look for `"kind"` first: most lines are other events.
    let quoted = |(at, _): (usize, &str)| {
        line[..at].ends_with('"') && line[at + kind.len()..].starts_with('"')
    };
    line.match_indices(kind).any(quoted)
        && serde_json::from_str::<ResponseHead>(line).is_ok_and(|head| head.kind == kind)
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

#[path = "rpc_compact.rs"]
mod compact;

#[cfg(test)]
mod tests {
    use super::{delivered, is_event};

    fn texts(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| (*item).to_owned()).collect()
    }

    #[test]
    fn what_left_the_queue_was_delivered_once_per_copy() {
        assert_eq!(delivered(&texts(&["a", "b"]), &texts(&["b"])), ["a"]);
        assert_eq!(delivered(&texts(&["a", "a"]), &texts(&["a"])), ["a"]);
        assert!(delivered(&texts(&["a"]), &texts(&["a", "c"])).is_empty());
        assert!(delivered(&[], &[]).is_empty());
    }

    #[test]
    fn an_event_is_known_by_its_type_not_by_text_that_names_it() {
        assert!(is_event(
            r#"{"type":"agent_end","messages":[]}"#,
            "agent_end"
        ));
        assert!(!is_event(
            r#"{"type":"message_update","delta":"\"agent_end\""}"#,
            "agent_end"
        ));
        assert!(!is_event(r#"{"type":"agent_ending"}"#, "agent_end"));
        assert!(!is_event("not json agent_end", "agent_end"));
    }
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
