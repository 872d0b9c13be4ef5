//! One live `codex app-server` process with a thread open in it: JSON-RPC over its stdio, one
//! object per line (Codex writes no `"jsonrpc"` field and does not need one). Threads are
//! started, resumed, listed, forked and reverted here.

use serde_json::{json, Value};

use super::AppServerProtocol;
use crate::config::Transport;
use crate::provider::json_rpc::{await_result, JsonRpc};
use crate::provider::live::{Live, LiveProcess, StartFailure, Unstarted};
use crate::provider::{AttemptRequest, SessionRef};

/// The approval policy every thread runs with: Codex asks before anything its sandbox does
/// not allow, and agentty's permission prompt (or policy) answers.
const APPROVAL_POLICY: &str = "on-request";

/// What the driver keeps of a live app-server.
pub(crate) struct AppServerSession {
    pub(super) connection: JsonRpc,
    pub(super) thread_id: String,
    /// The thread was resumed (not created): its first turn continues a conversation.
    pub(super) resumed: bool,
    /// The request it was started for (a new thread opens in the same directory).
    request: AttemptRequest,
}

impl AppServerProtocol {
    /// Starts the app-server, initialises it and opens (or resumes) `request.session`.
    pub(super) async fn start_server(
        &self,
        request: &AttemptRequest,
    ) -> Result<Live<AppServerSession>, Unstarted> {
        let Some(mut spec) = self.backend.live_spawn_spec(Transport::AppServer, request) else {
            return Err(StartFailure::Spawn(format!(
                "the {} provider has no app-server transport",
                self.backend.name()
            ))
            .into());
        };
        if spec.cwd.is_none() {
            spec.cwd = request.cwd.clone();
        }
        let (router, connect) = JsonRpc::router(false);
        let process = LiveProcess::start(&spec, router, "codex app-server")
            .map_err(|error| Unstarted::from(StartFailure::Spawn(error)))?;
        let session = AppServerSession {
            connection: connect(process.commands.clone()),
            thread_id: String::new(),
            resumed: false,
            request: request.clone(),
        };
        let mut live = Live::new(process, session, request.session.clone());
        match self.open(&mut live, request).await {
            Ok(()) => Ok(live),
            Err(why) => Err(live.unstarted(why)),
        }
    }

    /// `initialize`, then `thread/start` or `thread/resume`.
    async fn open(
        &self,
        live: &mut Live<AppServerSession>,
        request: &AttemptRequest,
    ) -> Result<(), StartFailure> {
        let initialize = live.session.connection.request(
            "initialize",
            json!({
                "clientInfo": {"name": "agentty", "title": "agentty", "version": env!("CARGO_PKG_VERSION")},
                // Chatter no turn needs.
                "capabilities": {"optOutNotificationMethods": [
                    "account/rateLimits/updated", "remoteControl/status/changed"
                ]}
            }),
        );
        await_result(&mut live.process, "initialize", initialize, "Codex").await?;
        live.session.connection.notify("initialized", json!({}));
        self.shared.list_models(&live.session.connection);
        match &request.session {
            SessionRef::Resume(id) => self.resume_thread(live, id).await,
            SessionRef::ContinueLatest => match latest_thread(live, request).await? {
                Some(id) => self.resume_thread(live, &id).await,
                None => self.new_thread(live, request).await,
            },
            SessionRef::New => self.new_thread(live, request).await,
        }
    }

    pub(super) async fn new_thread(
        &self,
        live: &mut Live<AppServerSession>,
        request: &AttemptRequest,
    ) -> Result<(), StartFailure> {
        let started = live.session.connection.request(
            "thread/start",
            json!({"cwd": request.working_dir(), "approvalPolicy": APPROVAL_POLICY}),
        );
        let started = await_result(&mut live.process, "thread/start", started, "Codex").await?;
        self.adopt_thread(live, &started)?;
        self.shared
            .history
            .opened(&live.session.thread_id, Ok(None));
        live.session.resumed = false;
        Ok(())
    }

    async fn resume_thread(
        &self,
        live: &mut Live<AppServerSession>,
        id: &str,
    ) -> Result<(), StartFailure> {
        let resumed = live.session.connection.request(
            "thread/resume",
            json!({"threadId": id, "approvalPolicy": APPROVAL_POLICY, "excludeTurns": true}),
        );
        match await_result(&mut live.process, "thread/resume", resumed, "Codex").await {
            Ok(resumed) => {
                self.adopt_thread(live, &resumed)?;
                live.session.resumed = true;
                let newest = newest_turn(live).await;
                self.shared.history.opened(&live.session.thread_id, newest);
                Ok(())
            }
            Err(StartFailure::Refused(error)) => Err(StartFailure::Lost(error)),
            Err(other) => Err(other),
        }
    }

    /// Takes the thread a `thread/start`, `thread/resume` or `thread/fork` answer opened.
    fn adopt_thread(
        &self,
        live: &mut Live<AppServerSession>,
        answer: &Value,
    ) -> Result<(), StartFailure> {
        let Some(id) = answer["thread"]["id"].as_str() else {
            return Err(StartFailure::Refused(format!(
                "Codex opened a thread without an id: {answer}"
            )));
        };
        live.session.thread_id = id.to_owned();
        self.shared.saw_thread(answer);
        Ok(())
    }

    /// `thread/fork` of `thread` through `last_turn`: a new thread with that history, open in
    /// this process; `thread` itself stays as it is.
    pub(super) async fn fork(
        &self,
        live: &mut Live<AppServerSession>,
        thread: &str,
        last_turn: &str,
    ) -> Result<(), String> {
        let forked = live.session.connection.request(
            "thread/fork",
            json!({"threadId": thread, "lastTurnId": last_turn,
                   "approvalPolicy": APPROVAL_POLICY, "excludeTurns": true}),
        );
        let forked = await_result(&mut live.process, "thread/fork", forked, "Codex")
            .await
            .map_err(said)?;
        self.adopt_thread(live, &forked).map_err(said)?;
        self.shared
            .history
            .opened(&live.session.thread_id, Ok(Some(last_turn.to_owned())));
        live.session.resumed = true;
        Ok(())
    }

    /// A new thread in the running app-server, in the session's own directory: a new
    /// conversation, or a retry of a first turn, costs no cold start.
    pub(super) async fn open_new_thread(
        &self,
        live: &mut Live<AppServerSession>,
        request: &AttemptRequest,
    ) -> bool {
        if !live.process.is_running() {
            return false;
        }
        let request = AttemptRequest {
            cwd: request
                .cwd
                .clone()
                .or_else(|| live.session.request.cwd.clone()),
            ..request.clone()
        };
        match self.new_thread(live, &request).await {
            Ok(()) => {
                tracing::info!(thread = %live.session.thread_id, "a new Codex thread in the running app-server");
                live.reopened(request.session.clone());
                true
            }
            Err(_) => false,
        }
    }
}

/// `thread/revert` to before `turn_id`: Codex forgets that turn and every later one, in memory
/// and in its stored thread.
pub(super) async fn revert(live: &mut Live<AppServerSession>, turn_id: &str) -> Result<(), String> {
    let reverted = live.session.connection.request(
        "thread/revert",
        json!({"threadId": live.session.thread_id, "beforeTurnId": turn_id}),
    );
    await_result(&mut live.process, "thread/revert", reverted, "Codex")
        .await
        .map(|_| ())
        .map_err(said)
}

/// The most recent thread of the working directory (`--continue`).
async fn latest_thread(
    live: &mut Live<AppServerSession>,
    request: &AttemptRequest,
) -> Result<Option<String>, StartFailure> {
    let listed = live.session.connection.request(
        "thread/list",
        json!({"limit": 1, "cwd": request.working_dir()}),
    );
    let listed = await_result(&mut live.process, "thread/list", listed, "Codex").await?;
    Ok(listed["data"][0]["id"].as_str().map(str::to_owned))
}

/// The newest turn of the open thread (`thread/turns/list`, newest first), where a rewind to
/// before the next turn branches.
async fn newest_turn(live: &mut Live<AppServerSession>) -> Result<Option<String>, String> {
    let listed = live.session.connection.request(
        "thread/turns/list",
        json!({"threadId": live.session.thread_id, "limit": 1, "sortDirection": "desc"}),
    );
    let listed = await_result(&mut live.process, "thread/turns/list", listed, "Codex")
        .await
        .map_err(said)?;
    Ok(listed["data"][0]["id"].as_str().map(str::to_owned))
}

/// A failure in words (for what happens after the start).
fn said(failure: StartFailure) -> String {
    match failure {
        StartFailure::NoAnswer(..) => "Codex ended".to_owned(),
        StartFailure::Spawn(error) | StartFailure::Refused(error) | StartFailure::Lost(error) => {
            error
        }
    }
}
