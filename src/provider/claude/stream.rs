//! Claude Code's own long-lived, two-way mode as a transport (`--transport stream`): one
//! `claude -p --input-format stream-json --output-format stream-json --verbose
//! --include-partial-messages --replay-user-messages --permission-prompt-tool stdio` process
//! per conversation, one user line per attempt, the output mapped by the same
//! [`ClaudeMapper`] as the one-shot mode. Message shapes: tests/fixtures/claude_stream/ (recorded
//! from Claude Code 2.1.197).
//!
//! Invariants:
//! - The control protocol: agentty's requests (`initialize` at start, `interrupt`, `set_model`,
//!   `set_permission_mode`) are `control_request`s answered by `control_response`s with the same
//!   `request_id`, routed to their waiter whether or not a turn runs. The CLI's own requests
//!   (`can_use_tool`) are answered with a `control_response`; a subtype agentty does not serve
//!   gets an error answer, never silence.
//! - A permission the user did not give is never assumed: under `ask` a `can_use_tool` waits
//!   for the user (`permission.request` -> [`Provider::answer_permission`]); `allow` and `deny`
//!   answer at once and say so. A rejection carries the user's note as deny's `message` (the
//!   model reads it as the tool's result). "Always" adds the CLI's own suggested rules for this
//!   session only (`destination: session`), never to the user's settings files. A stop answers
//!   every open request with a denial.
//! - One attempt ends at the `result` that follows the last user line agentty sent: a message
//!   sent mid-turn (steering) is a user line; `--replay-user-messages` echoes each user line
//!   when the CLI takes it (at the next tool boundary, or as a turn of its own after the
//!   `result`), which is when the chat says it was delivered.
//! - The stop runs stage 0 first: the `interrupt` control request, then up to
//!   [`INTERRUPT_GRACE`] for the `result`; the process stays for the next turn. If the turn
//!   does not end, the process layer's three-stage stop ends the whole tree and the next
//!   attempt starts the CLI again with `--resume`.
//! - Retry never duplicates: a failed attempt's process is ended (the CLI holds the failed
//!   prompt in memory), and the next attempt starts the CLI with `--resume` on the session file
//!   the orchestrator restored.
//! - Claude Code writes a turn's end to its session file 50–350 ms after the `result` line: a
//!   checkpoint taken right after a turn waits for that write (bounded), or a rollback would
//!   lose the turn's answer.
//! - A model or mode the user chose holds for the conversation: every process started later
//!   is told it after `initialize`.
//! - The process ends when the provider is dropped (stdin closed, then the three-stage stop).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use super::mapper::ClaudeMapper;
use super::permission::{request_of, ClaudePermission, ALLOW_ALWAYS, ALLOW_ONCE};
use crate::config::PermissionPolicy;
use crate::process::{ExitReport, Line, StopControl};
use crate::provider::checkpoint::UnwrittenTurn;
use crate::provider::compaction;
use crate::provider::live_process::{
    InBandStop, LiveItem, LiveProcess, LiveSession, LiveSlot, ResponseRouter, TurnEnd,
};
use crate::provider::runner::{self, spawn_attempt, AttemptMapping, AttemptSink, EndedBy};
use crate::provider::{AgentQueue, AgentStatus, ModeChoice, ModelChoice};
use crate::provider::{
    AgentSetting, AgentStream, AttemptRequest, Backend, Interjection, Provider, SessionCheckpoint,
    SessionRef, Transport,
};
use crate::stream::{
    AgentMessage, FailureReason, NoticeKind, PermissionOptionKind, PermissionResolver,
    PERMISSION_CANCELLED,
};

/// Stage 0 of the stop: how long an `interrupt` may take to end the turn (measured: ~5 ms).
pub(crate) const INTERRUPT_GRACE: Duration = crate::process::timings::IN_BAND_CANCEL_GRACE;
/// How long a starting CLI may take to answer `initialize` (a cold start is about 1.1 s).
const START_TIMEOUT: Duration = Duration::from_secs(60);
// After a failed attempt, how long the CLI may take to exit once its stdin is closed.
use crate::process::timings::EXIT_AFTER_CLOSE;
/// After a turn's result, how long the CLI may take to begin the turn of steering it did not
/// take during that turn.
const QUEUED_TURN_START: Duration = Duration::from_secs(2);
/// How long the CLI may take to answer a settings request.
const SETTING_TIMEOUT: Duration = Duration::from_secs(10);

/// Claude Code's permission modes that Shift+Tab cycles through, in its own order.
/// `bypassPermissions` is left out: it would grant every permission without asking.
pub(crate) const PERMISSION_MODES: [(&str, &str); 3] = [
    ("default", "default"),
    ("acceptEdits", "accept edits"),
    ("plan", "plan"),
];

/// What the user hands the running turn, in the order given (a message typed before an answer
/// reaches the CLI before it).
enum UserInput {
    /// A message typed during the turn.
    Steer(String),
    /// A permission answer: the request id, the option chosen (`None`: cancelled) and the
    /// user's note with a rejection.
    Answer(String, Option<String>, Option<String>),
}

/// What the provider shares with its live process and attempts.
#[derive(Clone)]
struct Shared {
    status: watch::Sender<AgentStatus>,
    /// The live process's control channel, between turns too (settings).
    control: Arc<Mutex<Option<Control>>>,
    /// Where the running attempt takes the user's messages and permission answers.
    inputs: Arc<Mutex<Option<mpsc::UnboundedSender<UserInput>>>>,
    /// The last turn the live process kept, while it may still be writing it to disk.
    unwritten: Arc<Mutex<Option<UnwrittenTurn>>>,
    /// Messages typed during the turn that the CLI has not taken yet (shown as waiting).
    queue: watch::Sender<AgentQueue>,
    /// The model and mode the user chose in this conversation.
    chosen: Arc<Mutex<Chosen>>,
}

/// Settings the user changed (`/model`, Shift+Tab), for processes started later.
#[derive(Debug, Clone, Default)]
struct Chosen {
    model: Option<String>,
    mode: Option<String>,
}

impl Shared {
    /// The conversation's settings an attempt carries (the choices of a resumed conversation,
    /// the config's start) for each kind the user has not chosen in this run.
    fn adopt(&self, settings: &[AgentSetting]) {
        let Ok(mut chosen) = self.chosen.lock() else {
            return;
        };
        for setting in settings {
            match setting {
                AgentSetting::Model(model) if chosen.model.is_none() => {
                    chosen.model = Some(model.clone())
                }
                AgentSetting::Mode(mode) if chosen.mode.is_none() => {
                    chosen.mode = Some(mode.clone())
                }
                _ => {}
            }
        }
    }
}

impl Shared {
    /// Hands `input` to the running turn; false when none runs.
    fn hand_over(&self, input: UserInput) -> bool {
        let Ok(inputs) = self.inputs.lock() else {
            return false;
        };
        inputs
            .as_ref()
            .is_some_and(|inputs| inputs.send(input).is_ok())
    }
}

/// Claude Code's stream-json transport of a backend (Claude Code, or the demo agent playing it).
pub(crate) struct StreamProvider {
    backend: Arc<dyn Backend>,
    policy: PermissionPolicy,
    live: LiveSlot<StreamSession>,
    shared: Shared,
}

impl StreamProvider {
    pub(crate) fn new(backend: Arc<dyn Backend>, policy: PermissionPolicy) -> Self {
        Self {
            backend,
            policy,
            live: LiveSlot::new(),
            shared: Shared {
                status: watch::channel(AgentStatus::default()).0,
                control: Arc::new(Mutex::new(None)),
                inputs: Arc::new(Mutex::new(None)),
                unwritten: Arc::new(Mutex::new(None)),
                queue: watch::channel(AgentQueue::default()).0,
                chosen: Arc::new(Mutex::new(Chosen::default())),
            },
        }
    }
}

impl Provider for StreamProvider {
    fn name(&self) -> &str {
        self.backend.name()
    }

    fn execute(&self, request: AttemptRequest, stop: StopControl) -> AgentStream {
        self.shared.adopt(&request.settings);
        let attempt = |sink| StreamAttempt {
            backend: self.backend.clone(),
            policy: self.policy,
            live: self.live.clone(),
            shared: self.shared.clone(),
            sink,
            stop: stop.clone(),
        };
        spawn_attempt(stop.clone(), move |sink| attempt(sink).run(request))
    }

    /// The stored session, once the live process has written the last turn's end: Claude Code
    /// writes it after the `result` line, and a checkpoint without it would lose that answer
    /// on a rollback.
    fn checkpoint(&self, request: &AttemptRequest) -> Option<SessionCheckpoint> {
        let unwritten = self.shared.unwritten.lock().ok().and_then(|mut u| u.take());
        if let Some(unwritten) = unwritten {
            unwritten.wait();
        }
        SessionCheckpoint::of_session(self.backend.as_ref(), request)
    }

    fn transport(&self) -> Transport {
        Transport::Stream
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

    /// Claude Code takes `/compact` as a user message in stream-json input (checked against
    /// 2.1.197: `compact_boundary`, then a `result` with no text).
    fn compact(
        &self,
        request: AttemptRequest,
        instructions: Option<String>,
        stop: StopControl,
    ) -> AgentStream {
        let prompt = compaction::slash_command(instructions.as_deref());
        let stream = self.execute(AttemptRequest { prompt, ..request }, stop);
        compaction::by_slash_command(stream, "Claude")
    }

    /// A user line mid-turn: the CLI takes it at the next tool boundary, or after the turn.
    fn interject(&self, _kind: Interjection, text: &str) -> bool {
        self.shared.hand_over(UserInput::Steer(text.to_owned()))
    }

    fn answer_permission(&self, id: &str, option: Option<String>, message: Option<String>) -> bool {
        self.shared
            .hand_over(UserInput::Answer(id.to_owned(), option, message))
    }

    fn takes_permission_feedback(&self) -> bool {
        true
    }

    fn change_setting(&self, setting: AgentSetting) -> bool {
        let Some(control) = self.shared.control.lock().ok().and_then(|c| c.clone()) else {
            return false;
        };
        let status = self.shared.status.clone();
        let (request, describe) = match &setting {
            AgentSetting::Model(model) => (
                json!({"subtype": "set_model", "model": model}),
                format!("model {model}"),
            ),
            AgentSetting::Mode(mode) => (
                json!({"subtype": "set_permission_mode", "mode": mode}),
                format!("mode {mode}"),
            ),
            AgentSetting::ThinkingLevel(_) => return false,
        };
        let answer = control.request(request);
        let chosen = self.shared.chosen.clone();
        tokio::spawn(async move {
            let answer = settled(answer).await;
            status.send_modify(|status| match answer {
                Ok(response) => {
                    let mut chosen = chosen
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    match setting {
                        AgentSetting::Model(model) => {
                            chosen.model = Some(model.clone());
                            status.model = Some(model);
                        }
                        AgentSetting::Mode(mode) => {
                            let mode = response["mode"].as_str().map(str::to_owned).unwrap_or(mode);
                            chosen.mode = Some(mode.clone());
                            status.mode = Some(mode);
                        }
                        AgentSetting::ThinkingLevel(_) => {}
                    }
                }
                Err(refusal) => {
                    status.refusals += 1;
                    status.refusal = Some(format!("{describe}: {refusal}"));
                }
            });
        });
        true
    }

    fn agent_status(&self) -> Option<watch::Receiver<AgentStatus>> {
        Some(self.shared.status.subscribe())
    }

    fn agent_queue(&self) -> Option<watch::Receiver<AgentQueue>> {
        Some(self.shared.queue.subscribe())
    }

    fn session_restored(&self) {
        self.live.mark_stale();
    }

    fn warm_up(&self, request: AttemptRequest) {
        self.shared.adopt(&request.settings);
        let backend = self.backend.clone();
        let shared = self.shared.clone();
        self.live.warm_up(
            async move { StreamSession::start(backend.as_ref(), &request, &shared).await },
            "Claude Code (stream-json)",
        );
    }
}

impl Drop for StreamProvider {
    fn drop(&mut self) {
        // With no attempt running, end the process now; a running attempt holds `live`, and
        // the process ends when that attempt lets go of it.
        self.live.release_if_idle();
    }
}

/// A control request's answer: its `response`, or why it did not succeed.
async fn settled(answer: oneshot::Receiver<Value>) -> Result<Value, String> {
    match tokio::time::timeout(SETTING_TIMEOUT, answer).await {
        Ok(Ok(response)) if response["subtype"] == "success" => {
            Ok(response.get("response").cloned().unwrap_or(Value::Null))
        }
        Ok(Ok(response)) => Err(response["error"]
            .as_str()
            .unwrap_or("refused, without saying why")
            .to_owned()),
        Ok(Err(_)) => Err("Claude Code ended before answering".to_owned()),
        Err(_) => Err(format!(
            "Claude Code did not answer within {} s",
            SETTING_TIMEOUT.as_secs()
        )),
    }
}

/// Writes lines on the CLI's stdin and correlates the answers to agentty's control requests.
#[derive(Clone)]
struct Control {
    lines: mpsc::UnboundedSender<String>,
    pending: Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>,
    next_id: Arc<AtomicU64>,
}

impl Control {
    fn next_id(&self) -> String {
        format!("agentty-{}", self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends a control request; the receiver gets its `response` object.
    fn request(&self, request: Value) -> oneshot::Receiver<Value> {
        let id = self.next_id();
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id.clone(), tx);
        }
        let line = json!({"type": "control_request", "request_id": id, "request": request});
        let _ = self.lines.send(line.to_string());
        rx
    }

    /// Answers the CLI's control request `request_id`; returns the line written.
    fn respond(&self, request_id: &str, response: Value) -> String {
        let line = json!({
            "type": "control_response",
            "response": {"subtype": "success", "request_id": request_id, "response": response}
        })
        .to_string();
        let _ = self.lines.send(line.clone());
        line
    }

    /// Refuses a control request agentty does not serve.
    fn refuse(&self, request_id: &str, error: &str) {
        let line = json!({
            "type": "control_response",
            "response": {"subtype": "error", "request_id": request_id, "error": error}
        });
        let _ = self.lines.send(line.to_string());
    }

    /// A line of its own making (a user message with images).
    fn send_line(&self, line: String) -> bool {
        self.lines.send(line).is_ok()
    }

    /// A user message: starts a turn, or joins the running one.
    fn user(&self, text: &str) -> bool {
        self.lines.send(user_line(text)).is_ok()
    }
}

/// The stdin line of a user message, as the Agent SDK writes it.
pub(crate) fn user_line(text: &str) -> String {
    json!({
        "type": "user",
        "message": {"role": "user", "content": text},
        "parent_tool_use_id": null,
        "session_id": ""
    })
    .to_string()
}

/// The stdin line of a user message with images: the Messages API's content blocks, the images
/// (`{type: "image", source: {type: "base64", media_type, data}}`) before the text, as
/// Anthropic advises. Without images, the plain [`user_line`].
pub(crate) fn user_line_with_images(
    text: &str,
    images: &[crate::attachment::ImageAttachment],
) -> String {
    if images.is_empty() {
        return user_line(text);
    }
    let mut content: Vec<Value> = images
        .iter()
        .map(|image| {
            json!({
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": image.mime.media_type(),
                    "data": image.base64()
                }
            })
        })
        .collect();
    content.push(json!({"type": "text", "text": text}));
    json!({
        "type": "user",
        "message": {"role": "user", "content": content},
        "parent_tool_use_id": null,
        "session_id": ""
    })
    .to_string()
}

/// Hands `control_response` lines to the request that waits for them.
struct ControlRouter(Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>);

impl ResponseRouter for ControlRouter {
    fn deliver(&self, line: &Line) -> bool {
        if !line.text.contains("\"control_response\"") {
            return false;
        }
        let Ok(value) = serde_json::from_str::<Value>(&line.text) else {
            return false;
        };
        if value["type"] != "control_response" {
            return false;
        }
        let Some(id) = value["response"]["request_id"].as_str() else {
            return false;
        };
        let waiter = self
            .0
            .lock()
            .ok()
            .and_then(|mut pending| pending.remove(id));
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(value["response"].clone());
                true
            }
            // The echo of agentty's own answer to a `can_use_tool` (with replayed user
            // messages): the attempt keeps it with the turn's raw lines.
            None => false,
        }
    }
}

/// One live Claude Code process in stream-json mode.
struct StreamSession {
    control: Control,
    /// The provider's handle on this process's control channel (for settings between turns).
    published: Arc<Mutex<Option<Control>>>,
    process: LiveProcess,
    /// The session's id, once known (`system/init`, or the id agentty chose).
    session_id: Option<String>,
    started_for: SessionRef,
    prompted: bool,
}

impl StreamSession {
    /// Starts the CLI for `request.session` and initializes the control protocol; `Err` is the
    /// terminal message.
    async fn start(
        backend: &dyn Backend,
        request: &AttemptRequest,
        shared: &Shared,
    ) -> Result<Self, AgentMessage> {
        let Some(spec) = backend.stream_spawn_spec(request) else {
            return Err(runner::start_failed(format!(
                "the {} backend has no stream-json mode (use --transport json)",
                backend.name()
            )));
        };
        let session_id = match &request.session {
            SessionRef::Resume(id) => Some(id.clone()),
            _ => chosen_session_id(&spec),
        };
        let pending = Arc::new(Mutex::new(HashMap::new()));
        let process = LiveProcess::start(
            &spec,
            ControlRouter(pending.clone()),
            "Claude Code (stream-json)",
        )
        .map_err(runner::start_failed)?;
        let control = Control {
            lines: process.commands.clone(),
            pending,
            next_id: Arc::new(AtomicU64::new(1)),
        };
        let mut session = Self {
            control,
            published: shared.control.clone(),
            process,
            session_id,
            started_for: request.session.clone(),
            prompted: false,
        };
        let initialized = session
            .control
            .request(json!({"subtype": "initialize", "hooks": null}));
        match session.await_response(initialized, START_TIMEOUT).await {
            Ok(response) => {
                let models: Vec<ModelChoice> = response["response"]["models"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(model_choice)
                    .collect();
                let configured = configured_flag(&spec, "--model");
                let mode = configured_flag(&spec, "--permission-mode");
                // A model or mode the user chose holds for the conversation: a process started
                // again (after a failure, a stop or a new session) is told it too.
                let chosen = shared
                    .chosen
                    .lock()
                    .map(|chosen| chosen.clone())
                    .unwrap_or_default();
                let mut model = chosen.model.clone().or(configured.clone());
                // What the command line set already needs no request.
                if let Some(wanted) = chosen
                    .model
                    .as_ref()
                    .filter(|wanted| Some(*wanted) != configured.as_ref())
                {
                    let answer = session
                        .control
                        .request(json!({"subtype": "set_model", "model": wanted}));
                    if session
                        .await_response(answer, SETTING_TIMEOUT)
                        .await
                        .is_err()
                    {
                        model = None;
                    }
                }
                let configured_mode = mode.clone();
                let mut mode = chosen.mode.clone().or(mode);
                if let Some(wanted) = chosen
                    .mode
                    .as_ref()
                    .filter(|wanted| Some(*wanted) != configured_mode.as_ref())
                {
                    let answer = session
                        .control
                        .request(json!({"subtype": "set_permission_mode", "mode": wanted}));
                    if session
                        .await_response(answer, SETTING_TIMEOUT)
                        .await
                        .is_err()
                    {
                        mode = None;
                    }
                }
                shared.status.send_modify(|status| {
                    status.model = model.or_else(|| models.first().map(|model| model.id.clone()));
                    status.models = models;
                    status.thinking_levels = Vec::new();
                    status.modes = PERMISSION_MODES
                        .iter()
                        .map(|(id, name)| ModeChoice {
                            id: (*id).to_owned(),
                            name: (*name).to_owned(),
                            // bypassPermissions is not offered at all.
                            most_permissive: None,
                        })
                        .collect();
                    status.mode = mode.or_else(|| Some(PERMISSION_MODES[0].0.to_owned()));
                });
                if let Ok(mut control) = shared.control.lock() {
                    *control = Some(session.control.clone());
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
                let mapping = AttemptMapping::new(Box::new(ClaudeMapper::new(false)));
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
                            Some(said) => format!(
                                "Claude Code in stream-json mode did not start: {}",
                                said.trim()
                            ),
                            None => "Claude Code in stream-json mode ended without answering \
                                     `initialize` (an older CLI may need --transport json)"
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

    /// Waits for a control response, while dropping stray lines; `Err(Some)` when the process
    /// exited, `Err(None)` on timeout.
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
                        tracing::debug!(line = %line.text, "stream-json line before the prompt");
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

impl LiveSession for StreamSession {
    fn serves(&mut self, session: &SessionRef) -> bool {
        if !self.process.is_running() {
            return false;
        }
        if !self.prompted && *session == self.started_for {
            return true;
        }
        match session {
            SessionRef::Resume(id) => self.session_id.as_deref() == Some(id.as_str()),
            SessionRef::New | SessionRef::ContinueLatest => false,
        }
    }

    /// Ends the process and waits for it: stdin closed (the CLI exits once idle, writing the
    /// end of its session file first), else the three-stage stop after [`EXIT_AFTER_CLOSE`].
    async fn close(self) {
        let Self {
            control,
            published,
            process,
            ..
        } = self;
        if let Ok(mut pending) = control.pending.lock() {
            pending.clear();
        }
        // Every writer must go for stdin to close.
        if let Ok(mut published) = published.lock() {
            *published = None;
        }
        drop(control);
        process.close(EXIT_AFTER_CLOSE).await;
    }
}

/// The value of `flag` in the spawn arguments (the user's `--model`, `--permission-mode`).
fn configured_flag(spec: &crate::process::SpawnSpec, flag: &str) -> Option<String> {
    let args: Vec<String> = spec
        .args
        .iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    let at = args.iter().rposition(|arg| arg == flag)?;
    args.get(at + 1).cloned()
}

/// The id of a new session agentty chose (`--session-id`).
fn chosen_session_id(spec: &crate::process::SpawnSpec) -> Option<String> {
    configured_flag(spec, "--session-id")
}

/// One model of `initialize`'s answer: `{value, displayName, description, ...}`.
fn model_choice(model: &Value) -> Option<ModelChoice> {
    let id = model["value"].as_str()?.to_owned();
    Some(ModelChoice {
        name: model["displayName"].as_str().unwrap_or(&id).to_owned(),
        provider: None,
        reasoning: false,
        id,
    })
}

/// One attempt on the live process.
struct StreamAttempt {
    backend: Arc<dyn Backend>,
    policy: PermissionPolicy,
    live: LiveSlot<StreamSession>,
    shared: Shared,
    sink: AttemptSink,
    stop: StopControl,
}

impl StreamAttempt {
    async fn run(mut self, request: AttemptRequest) {
        let backend = self.backend.clone();
        let shared = self.shared.clone();
        let Some(mut slot) = self
            .live
            .claim(&request, &self.stop, &mut self.sink, || async {
                StreamSession::start(backend.as_ref(), &request, &shared).await
            })
            .await
        else {
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
        let (inputs_tx, inputs_rx) = mpsc::unbounded_channel();
        if let Ok(mut inputs) = self.shared.inputs.lock() {
            *inputs = Some(inputs_tx);
        }
        let (mut terminal, keep) = self.play_turn(session, &request, resumed, inputs_rx).await;
        if let Ok(mut inputs) = self.shared.inputs.lock() {
            *inputs = None;
        }
        if request.session != SessionRef::New {
            runner::mark_lost_session(&mut terminal, self.backend.lost_session_phrases());
        }
        if keep {
            if let (Some(id), Ok(mut unwritten)) =
                (session.session_id.clone(), self.shared.unwritten.lock())
            {
                *unwritten = Some(UnwrittenTurn::of_session(
                    self.backend.clone(),
                    id,
                    request.clone(),
                ));
            }
        }
        if !keep {
            if let Some(session) = slot.take() {
                let closing = std::time::Instant::now();
                session.close().await;
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
        session: &mut StreamSession,
        request: &AttemptRequest,
        resumed: bool,
        mut inputs: mpsc::UnboundedReceiver<UserInput>,
    ) -> (AgentMessage, bool) {
        let mapper = ClaudeMapper::for_stream(self.backend.name(), resumed);
        let mut mapping = AttemptMapping::new(Box::new(mapper));
        let mut out = Vec::new();
        session
            .control
            .send_line(user_line_with_images(&request.prompt, &request.images));
        // Steering sent and not yet taken by the CLI.
        let mut untaken: Vec<String> = Vec::new();
        // After a result with steering untaken: when its own turn must have begun.
        let mut queued_turn_by: Option<Instant> = None;
        let mut context = ContextCount::default();
        let mut open: HashMap<String, ClaudePermission> = HashMap::new();
        let mut stop = InBandStop::new(
            self.stop.clone(),
            session.process.process_stop.clone(),
            INTERRUPT_GRACE,
        );
        let end = loop {
            tokio::select! {
                item = session.process.items.recv() => match item {
                    Some(LiveItem::Line(line)) => {
                        if let Some(tap) = &request.raw_line_tap {
                            tap.record(&line.text).await;
                        }
                        match side_line(&line.text) {
                            Side::ControlRequest(value) => {
                                self.control_request(session, &mut mapping, &mut open, value, stop.is_sent()).await;
                                continue;
                            }
                            Side::Taken(text) => {
                                if let Some(at) = untaken.iter().position(|sent| *sent == text) {
                                    untaken.remove(at);
                                    self.shared.queue.send_replace(AgentQueue { steering: untaken.clone(), ..AgentQueue::default() });
                                    self.sink.send(AgentMessage::notice(NoticeKind::SteerDelivered.wire(), text)).await;
                                }
                            }
                            Side::Init { session_id, mode } => {
                                if session_id.is_some() {
                                    session.session_id = session_id;
                                }
                                if let Some(mode) = mode {
                                    // The CLI changed its mode itself (plan mode's exit): that
                                    // is the choice from now on.
                                    if let Ok(mut chosen) = self.shared.chosen.lock() {
                                        if chosen.mode.is_some() {
                                            chosen.mode = Some(mode.clone());
                                        }
                                    }
                                    self.shared.status.send_if_modified(|status| {
                                        let changed = status.mode.as_deref() != Some(mode.as_str());
                                        status.mode = Some(mode);
                                        changed
                                    });
                                }
                            }
                            Side::Turn => {}
                        }
                        let is_result = line.text.contains("\"result\"") && is_result_line(&line.text);
                        if let Some(context) = context.observe(&line.text) {
                            self.shared.status.send_modify(|status| status.context = Some(context));
                        }
                        mapping.map_line(&line, &mut out);
                        self.sink.flush(&mut out).await;
                        // Steering the CLI has not taken yet runs as a turn of its own after
                        // this result: the attempt goes on until that turn's result too (if
                        // that turn begins at all).
                        queued_turn_by = None;
                        if is_result {
                            if untaken.is_empty() || stop.is_sent() {
                                break TurnEnd::Answered;
                            }
                            queued_turn_by = Some(Instant::now() + QUEUED_TURN_START);
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
                _ = sleep_until_some(queued_turn_by) => {
                    tracing::warn!(?untaken, "Claude Code did not take the steering after its result");
                    break TurnEnd::Answered;
                }
                Some(input) = inputs.recv() => match input {
                UserInput::Steer(text) => {
                    if stop.is_sent() {
                        self.sink.send(AgentMessage::notice(NoticeKind::Warning.wire(), format!("Not delivered to the agent (the turn is stopping): {text}"))).await;
                    } else if session.control.user(&text) {
                        untaken.push(text);
                        self.shared.queue.send_replace(AgentQueue { steering: untaken.clone(), ..AgentQueue::default() });
                    }
                }
                UserInput::Answer(id, option, message) => {
                    if let Some(permission) = open.remove(&id) {
                        let valid = option.as_ref().is_none_or(|chosen| permission.request.options.iter().any(|offered| offered.id == *chosen));
                        if valid {
                            self.resolve(session, &mut mapping, &permission, option, PermissionResolver::User, message).await;
                        } else {
                            tracing::warn!(id, ?option, "an answer the agent did not offer; ignored");
                            open.insert(id, permission);
                        }
                    }
                }
                },
                _ = stop.requested(), if !stop.is_sent() => {
                    tracing::info!("stopping the turn in-band (interrupt)");
                    for (_, permission) in open.drain() {
                        self.resolve(session, &mut mapping, &permission, None, PermissionResolver::User, None).await;
                    }
                    // Its answer (`control_response` success) tells nothing the result will not.
                    drop(session.control.request(json!({"subtype": "interrupt"})));
                    stop.sent();
                }
            }
        };
        while let Ok(line) = session.process.stderr_lines.try_recv() {
            mapping.map_stderr_line(&line, &mut out);
        }
        let stderr = session.process.stderr_text();
        // Untaken steering would run as a turn nobody reads: the process goes, and the user
        // is told what did not arrive.
        let stopped_with_steering = !untaken.is_empty();
        self.shared.queue.send_replace(AgentQueue::default());
        for text in untaken {
            out.push(AgentMessage::notice(
                NoticeKind::Warning.wire(),
                format!("Not delivered to the agent (the turn ended first): {text}"),
            ));
        }
        let (report, ended_by, keep) = stop.outcome(end);
        let terminal = mapping.finish(&report, ended_by, stderr, &mut out);
        self.sink.flush(&mut out).await;
        // A failed attempt stays in the CLI's memory: never continue on it (retry never
        // duplicates); the next attempt loads the session file the orchestrator restored.
        let keep = keep && !stopped_with_steering && !matches!(terminal, AgentMessage::Failed(_));
        (terminal, keep)
    }

    /// A request of the CLI: a permission (by policy, or asked of the user), or one agentty
    /// does not serve (refused).
    async fn control_request(
        &mut self,
        session: &StreamSession,
        mapping: &mut AttemptMapping,
        open: &mut HashMap<String, ClaudePermission>,
        value: Value,
        stopping: bool,
    ) {
        let request_id = value["request_id"].as_str().unwrap_or_default().to_owned();
        let subtype = value["request"]["subtype"].as_str().unwrap_or_default();
        if subtype != "can_use_tool" {
            tracing::warn!(
                subtype,
                "Claude Code asked for something agentty does not serve"
            );
            session
                .control
                .refuse(&request_id, &format!("agentty does not serve {subtype}"));
            return;
        }
        let Some(permission) = request_of(&request_id, &value["request"]) else {
            session.control.refuse(
                &request_id,
                "agentty could not read this permission request",
            );
            return;
        };
        if stopping {
            self.resolve(
                session,
                mapping,
                &permission,
                None,
                PermissionResolver::User,
                None,
            )
            .await;
            return;
        }
        // Asked of the user or answered by policy, the request is on record first.
        self.sink
            .send(AgentMessage::PermissionRequest(Box::new(
                permission.request.clone(),
            )))
            .await;
        match self.policy {
            PermissionPolicy::Ask => {
                open.insert(request_id, permission);
            }
            PermissionPolicy::Allow => {
                self.resolve(
                    session,
                    mapping,
                    &permission,
                    Some(ALLOW_ONCE.to_owned()),
                    PermissionResolver::Policy,
                    None,
                )
                .await;
            }
            PermissionPolicy::Deny => {
                let name = self.backend.name().to_owned();
                self.sink
                    .send(AgentMessage::notice(
                        NoticeKind::PermissionRefused.wire(),
                        format!(
                            "Refused without asking: {} ({}). The {name} provider's permission \
                             policy is deny; allow it with `--permissions allow`, or \
                             `permissions = \"ask\"` or `\"allow\"` under [providers.{name}] in \
                             the config.",
                            permission.request.title, permission.request.kind
                        ),
                    ))
                    .await;
                let reject = permission
                    .request
                    .option_of(PermissionOptionKind::RejectOnce)
                    .map(|option| option.id.clone());
                self.resolve(
                    session,
                    mapping,
                    &permission,
                    reject,
                    PermissionResolver::Policy,
                    None,
                )
                .await;
            }
        }
    }

    /// Answers a permission request and says how.
    async fn resolve(
        &mut self,
        session: &StreamSession,
        mapping: &mut AttemptMapping,
        permission: &ClaudePermission,
        option: Option<String>,
        by: PermissionResolver,
        message: Option<String>,
    ) {
        let answer = match option.as_deref() {
            Some(ALLOW_ONCE) => permission.allow(false),
            Some(ALLOW_ALWAYS) => permission.allow(true),
            Some(_) => permission.deny(message.as_deref(), by),
            None => permission.deny(Some("The user stopped the turn."), by),
        };
        let line = session.control.respond(&permission.request.id, answer);
        let mut out = vec![AgentMessage::PermissionResolved {
            id: permission.request.id.clone(),
            outcome: option.unwrap_or_else(|| PERMISSION_CANCELLED.to_owned()),
            by,
            message,
        }];
        mapping.map_client_line(&line, &mut out);
        self.sink.flush(&mut out).await;
    }
}

/// What a line means to the transport (besides what the mapper makes of it).
enum Side {
    /// A request of the CLI (`control_request`): answered, not mapped.
    ControlRequest(Value),
    /// A user line the CLI took (its replay): the text.
    Taken(String),
    /// `system/init` (each turn) or a `system/status` with the permission mode.
    Init {
        session_id: Option<String>,
        mode: Option<String>,
    },
    Turn,
}

fn side_line(line: &str) -> Side {
    let maybe = line.contains("\"control_request\"")
        || line.contains("\"isReplay\"")
        || line.contains("\"permissionMode\"");
    if !maybe {
        return Side::Turn;
    }
    let Ok(value) = serde_json::from_str::<Value>(line) else {
        return Side::Turn;
    };
    match value["type"].as_str() {
        Some("control_request") => Side::ControlRequest(value),
        Some("user") if value["isReplay"] == true => match &value["message"]["content"] {
            Value::String(text) => Side::Taken(text.clone()),
            _ => Side::Turn,
        },
        Some("system") => Side::Init {
            session_id: (value["subtype"] == "init")
                .then(|| value["session_id"].as_str().map(str::to_owned))
                .flatten(),
            mode: value["permissionMode"].as_str().map(str::to_owned),
        },
        _ => Side::Turn,
    }
}

async fn sleep_until_some(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// How full the model's context window is: the tokens of the last model request (an
/// `assistant` line's `usage`: input, cache and output), of the window the `result` line's
/// `modelUsage` names.
#[derive(Debug, Default)]
struct ContextCount {
    last_request: Option<u64>,
}

impl ContextCount {
    /// Reads one line; returns the context once a `result` line tells the window.
    fn observe(&mut self, line: &str) -> Option<crate::provider::ContextUse> {
        if !line.contains("\"usage\"") {
            return None;
        }
        let value: Value = serde_json::from_str(line).ok()?;
        match value["type"].as_str()? {
            "assistant" => {
                let usage = &value["message"]["usage"];
                let tokens = [
                    "input_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                    "output_tokens",
                ]
                .iter()
                .filter_map(|key| usage[key].as_u64())
                .sum::<u64>();
                if tokens > 0 {
                    self.last_request = Some(tokens);
                }
                None
            }
            "result" => {
                let window = value["modelUsage"]
                    .as_object()?
                    .values()
                    .filter_map(|model| model["contextWindow"].as_u64())
                    .max()?;
                crate::provider::ContextUse::new(self.last_request?, window)
            }
            _ => None,
        }
    }
}

fn is_result_line(line: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(rename = "type", borrow)]
        kind: std::borrow::Cow<'a, str>,
    }
    serde_json::from_str::<Head>(line).is_ok_and(|head| head.kind == "result")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_line_is_the_agent_sdks() {
        let line: Value = serde_json::from_str(&user_line("hi \"there\"")).unwrap();
        assert_eq!(
            line,
            json!({"type": "user", "message": {"role": "user", "content": "hi \"there\""},
                   "parent_tool_use_id": null, "session_id": ""})
        );
    }

    #[test]
    fn the_context_is_the_last_requests_tokens_of_the_results_window() {
        let mut context = super::ContextCount::default();
        let assistant = |input: u64, output: u64| {
            format!(
                r#"{{"type":"assistant","message":{{"usage":{{"input_tokens":{input},"cache_creation_input_tokens":0,"cache_read_input_tokens":1000,"output_tokens":{output}}}}}}}"#
            )
        };
        assert_eq!(context.observe(&assistant(1234, 1)), None);
        assert_eq!(context.observe(&assistant(99_000, 1)), None);
        let result = r#"{"type":"result","subtype":"success","usage":{"input_tokens":100234},"modelUsage":{"claude-opus-4-8[1m]":{"inputTokens":100234,"contextWindow":1000000}}}"#;
        let found = context.observe(result).expect("a context");
        assert_eq!(
            found,
            crate::provider::ContextUse::new(100_001, 1_000_000).unwrap()
        );
        assert_eq!(found.percent(), 10);
        // A result that names no window (a stopped turn's `modelUsage: {}`) tells nothing.
        let stopped =
            r#"{"type":"result","subtype":"error_during_execution","usage":{},"modelUsage":{}}"#;
        assert_eq!(context.observe(stopped), None);
    }

    #[test]
    fn side_lines_are_told_apart_from_the_turn() {
        let request =
            r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool"}}"#;
        assert!(
            matches!(side_line(request), Side::ControlRequest(value) if value["request_id"] == "r1")
        );
        let replay =
            r#"{"type":"user","message":{"role":"user","content":"go left"},"isReplay":true}"#;
        assert!(matches!(side_line(replay), Side::Taken(text) if text == "go left"));
        // A tool result is the turn's, not a replay.
        let result =
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result"}]}}"#;
        assert!(matches!(side_line(result), Side::Turn));
        let init =
            r#"{"type":"system","subtype":"init","session_id":"s1","permissionMode":"plan"}"#;
        assert!(matches!(
            side_line(init),
            Side::Init { session_id: Some(id), mode: Some(mode) } if id == "s1" && mode == "plan"
        ));
        let status =
            r#"{"type":"system","subtype":"status","status":null,"permissionMode":"acceptEdits"}"#;
        assert!(matches!(
            side_line(status),
            Side::Init { session_id: None, mode: Some(mode) } if mode == "acceptEdits"
        ));
        assert!(matches!(side_line("not json \"isReplay\""), Side::Turn));
        assert!(is_result_line(r#"{"type":"result","subtype":"success"}"#));
        assert!(!is_result_line(r#"{"type":"assistant","result":"x"}"#));
    }

    #[test]
    fn initialize_models_and_the_users_flags_are_read() {
        let model = json!({"value": "sonnet", "displayName": "Sonnet", "description": "..."});
        let choice = model_choice(&model).unwrap();
        assert_eq!(
            (choice.id.as_str(), choice.name.as_str()),
            ("sonnet", "Sonnet")
        );
        assert!(model_choice(&json!({"displayName": "no value"})).is_none());
        let spec = crate::process::SpawnSpec::new("claude").args([
            "--model",
            "opus",
            "--session-id",
            "abc",
            "--permission-mode",
            "plan",
        ]);
        assert_eq!(configured_flag(&spec, "--model").as_deref(), Some("opus"));
        assert_eq!(chosen_session_id(&spec).as_deref(), Some("abc"));
        assert_eq!(
            configured_flag(&spec, "--permission-mode").as_deref(),
            Some("plan")
        );
        assert_eq!(configured_flag(&spec, "--effort"), None);
    }
}

#[cfg(test)]
mod image_prompt_tests {
    use super::*;

    #[test]
    fn a_user_message_with_an_image_carries_a_base64_image_block_before_the_text() {
        let line = user_line_with_images("look", &[crate::attachment::sample_png()]);
        assert_eq!(
            serde_json::from_str::<Value>(&line).unwrap(),
            json!({
                "type": "user",
                "message": {"role": "user", "content": [
                    {"type": "image", "source": {
                        "type": "base64", "media_type": "image/png", "data": "iVBORw0KGgppbWc="
                    }},
                    {"type": "text", "text": "look"}
                ]},
                "parent_tool_use_id": null,
                "session_id": ""
            })
        );
        assert_eq!(user_line_with_images("hi", &[]), user_line("hi"));
    }
}
