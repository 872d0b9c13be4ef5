//! One live ACP agent with its session open: started, initialised, and a session created
//! (`session/new`) or loaded (`session/load`, its replayed history skipped); loaded again or
//! replaced by a new one in the same process where the agent can.

use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::settings::AcpShared;
use super::AcpProtocol;
use crate::config::Transport;
use crate::process::Line;
use crate::provider::json_rpc::{await_result, JsonRpc};
use crate::provider::live::{Live, LiveItem, LiveProcess, StartFailure, Unstarted};
use crate::provider::{AgentSetting, AttemptRequest, SessionRef};

/// After `session/load`, how long the agent must be quiet before its history replay counts
/// as over (Gemini CLI replays a long session in a few milliseconds).
const HISTORY_QUIET: Duration = Duration::from_millis(100);
/// The longest a history replay may hold up the first prompt.
const HISTORY_LIMIT: Duration = Duration::from_secs(5);
/// The ACP version agentty speaks.
const PROTOCOL_VERSION: u64 = 1;

/// What the driver keeps of a live ACP agent.
pub(crate) struct AcpSession {
    pub(super) connection: JsonRpc,
    pub(super) session_id: String,
    /// The session was loaded (not created): its first turn continues a conversation.
    pub(super) loaded: bool,
    /// The request it was started for (to load the session again).
    request: AttemptRequest,
}

impl AcpProtocol {
    /// Starts the agent, initialises it and opens (or loads) `request.session`, set to the
    /// conversation's settings.
    pub(super) async fn start_agent(
        &self,
        request: &AttemptRequest,
    ) -> Result<Live<AcpSession>, Unstarted> {
        let Some(mut spec) = self.backend.live_spawn_spec(Transport::Acp, request) else {
            return Err(StartFailure::Spawn(format!(
                "the {} provider has no ACP transport",
                self.backend.name()
            ))
            .into());
        };
        if spec.cwd.is_none() {
            spec.cwd = request.cwd.clone();
        }
        if let SessionRef::Resume(id) = &request.session {
            self.backend.prepare_session_load(id, request);
        }
        let (router, connect) = JsonRpc::router(true);
        let shared = self.shared.clone();
        // The agent may change its mode at any time (`current_mode_update`, between turns too),
        // and say how full its context is (`usage_update`).
        let router = router.watching(move |line| {
            follow_mode(&shared, line);
            shared.follow_usage(&line.text);
            super::commands::follow(&shared, &line.text);
            shared.follow_config(&line.text);
        });
        let process = LiveProcess::start(&spec, router, "ACP agent")
            .map_err(|error| Unstarted::from(StartFailure::Spawn(error)))?;
        let session = AcpSession {
            connection: connect(process.commands.clone()),
            session_id: String::new(),
            loaded: false,
            request: request.clone(),
        };
        let mut live = Live::new(process, session, request.session.clone());
        match self.open(&mut live, request).await {
            Ok(()) => {
                self.opened(&live, &request.settings).await;
                Ok(live)
            }
            Err(why) => Err(live.unstarted(why)),
        }
    }

    /// `initialize`, then `session/new` or `session/load`.
    async fn open(
        &self,
        live: &mut Live<AcpSession>,
        request: &AttemptRequest,
    ) -> Result<(), StartFailure> {
        let initialize = live.session.connection.request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                // Only what agentty implements fully: no file system, no terminals.
                "clientCapabilities": {
                    "fs": {"readTextFile": false, "writeTextFile": false},
                    "terminal": false
                },
                "clientInfo": {"name": "agentty", "version": env!("CARGO_PKG_VERSION")}
            }),
        );
        let initialized =
            await_result(&mut live.process, "initialize", initialize, "the agent").await?;
        let can_load = initialized["agentCapabilities"]["loadSession"] == Value::Bool(true);
        self.shared.saw_prompt_capabilities(&initialized);
        match &request.session {
            SessionRef::Resume(id) if can_load => self.load_session(live, id, request).await,
            SessionRef::Resume(_) => Err(StartFailure::Lost(
                "the agent cannot load a session (no loadSession capability)".to_owned(),
            )),
            SessionRef::New | SessionRef::ContinueLatest => {
                live.session.session_id = self.new_session(live, request).await?;
                live.session.loaded = false;
                Ok(())
            }
        }
    }

    /// `session/new` for `request`; the session id, or why not.
    async fn new_session(
        &self,
        live: &mut Live<AcpSession>,
        request: &AttemptRequest,
    ) -> Result<String, StartFailure> {
        let new = live.session.connection.request(
            "session/new",
            json!({"cwd": request.working_dir(), "mcpServers": []}),
        );
        let created = await_result(&mut live.process, "session/new", new, "the agent").await?;
        self.shared.saw_choices(&created);
        match created["sessionId"].as_str() {
            Some(id) => Ok(id.to_owned()),
            None => Err(StartFailure::Refused(format!(
                "session/new answered without a sessionId: {created}"
            ))),
        }
    }

    /// `session/load` of `id`, its replayed history skipped.
    async fn load_session(
        &self,
        live: &mut Live<AcpSession>,
        id: &str,
        request: &AttemptRequest,
    ) -> Result<(), StartFailure> {
        let load = live.session.connection.request(
            "session/load",
            json!({"sessionId": id, "cwd": request.working_dir(), "mcpServers": []}),
        );
        match await_result(&mut live.process, "session/load", load, "the agent").await {
            Ok(loaded) => {
                self.shared.saw_choices(&loaded);
                live.session.session_id = id.to_owned();
                live.session.loaded = true;
                skip_replayed_history(&mut live.process).await;
                self.backend.session_loaded(id, request);
                Ok(())
            }
            Err(StartFailure::Refused(error)) => Err(StartFailure::Lost(error)),
            Err(other) => Err(other),
        }
    }

    /// A session was opened: the conversation's settings on it (an adapter starts each session
    /// on its default model and mode, a restarted one too), and settings reach it from now on.
    async fn opened(&self, live: &Live<AcpSession>, settings: &[AgentSetting]) {
        let session = &live.session;
        self.shared
            .apply(&session.connection, &session.session_id, settings)
            .await;
        self.shared
            .publish(session.connection.clone(), session.session_id.clone());
    }

    /// The restored session file read again by the running agent (`session/load` of the
    /// session it holds), where the agent is known to re-read it.
    pub(super) async fn reload_session(
        &self,
        live: &mut Live<AcpSession>,
        attempt: &AttemptRequest,
    ) -> bool {
        let id = live.session.session_id.clone();
        let request = AttemptRequest {
            session: SessionRef::Resume(id.clone()),
            ..live.session.request.clone()
        };
        let reloads = self
            .backend
            .quirks(Transport::Acp, &request)
            .reloads_in_process;
        if !reloads || !live.process.is_running() {
            return false;
        }
        self.backend.prepare_session_load(&id, &request);
        match self.load_session(live, &id, &request).await {
            Ok(()) => {
                tracing::info!(session = %id, "the ACP agent re-read the restored session");
                self.opened(live, &attempt.settings).await;
                live.reopened(request.session);
                true
            }
            Err(_) => false,
        }
    }

    /// `session/new` in the running agent: a retry in a fresh session, or a new conversation,
    /// costs no cold start.
    pub(super) async fn open_new_session(
        &self,
        live: &mut Live<AcpSession>,
        request: &AttemptRequest,
    ) -> bool {
        if !live.process.is_running() {
            return false;
        }
        match self.new_session(live, request).await {
            Ok(id) => {
                tracing::info!(session = %id, "a new ACP session in the running agent");
                live.session.session_id = id;
                live.session.loaded = false;
                self.opened(live, &request.settings).await;
                live.reopened(request.session.clone());
                true
            }
            Err(_) => false,
        }
    }
}

/// A loaded session's history, replayed as `session/update`s, is what the transcript already
/// holds: it is dropped, never taken for the next turn's answer. The protocol replays before
/// answering `session/load`, and waiting for the answer drops that; Gemini CLI answers first
/// and replays after (its `streamHistory` is not awaited), so whatever comes until the agent
/// has been quiet for [`HISTORY_QUIET`] is history too.
async fn skip_replayed_history(process: &mut LiveProcess) {
    let deadline = Instant::now() + HISTORY_LIMIT;
    let mut skipped = 0usize;
    loop {
        let quiet = tokio::time::sleep(HISTORY_QUIET);
        tokio::select! {
            item = process.items.recv() => match item {
                Some(LiveItem::Line(line)) => {
                    skipped += 1;
                    tracing::debug!(line = %line.text, "ACP history replayed after session/load; skipped");
                }
                Some(LiveItem::Exited(report)) => {
                    process.exited = Some(report);
                    break;
                }
                None => break,
            },
            _ = quiet => break,
            _ = tokio::time::sleep_until(deadline) => break,
        }
    }
    if skipped > 0 {
        tracing::info!(
            skipped,
            "skipped the history the agent replayed after session/load"
        );
    }
}

/// The agent's mode as it announces it (`current_mode_update`), before the line goes on.
fn follow_mode(shared: &AcpShared, line: &Line) {
    if memchr::memmem::find(line.text.as_bytes(), b"\"current_mode_update\"").is_none() {
        return;
    }
    let Ok(message) = serde_json::from_str::<Value>(&line.text) else {
        return;
    };
    if let Ok(notification) =
        serde_json::from_value::<acp::SessionNotification>(message["params"].clone())
    {
        if let acp::SessionUpdate::CurrentModeUpdate(update) = notification.update {
            shared.saw_mode(update.current_mode_id.to_string());
        }
    }
}
