//! One live `codex app-server` process with a thread open in it: JSON-RPC over its stdio, one
//! object per line (Codex writes no `"jsonrpc"` field and does not need one).
//!
//! The router task reads stdout: a response somebody waits for (every request agentty makes:
//! `initialize`, `thread/start`, `turn/start`, `turn/interrupt`, ...) goes to its waiter; every
//! other line (notifications, the agent's own requests) goes in order to whoever reads the
//! process: the attempt that plays a turn, or nobody between turns.

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::connection::{Connection, Response, Router, Waiters};
use super::mapper::AppServerMapper;
use super::status::Shared;
use crate::provider::live_process::{LiveItem, LiveProcess, LiveSession};
use crate::provider::runner::{self, AttemptMapping, EndedBy};
use crate::provider::{AttemptRequest, Backend, SessionRef};
use crate::stream::{AgentMessage, FailureReason};

/// How long a starting app-server may take to answer `initialize` and open the thread.
const START_TIMEOUT: Duration = Duration::from_secs(60);
use crate::process::timings::EXIT_AFTER_CLOSE;
/// The approval policy every thread runs with: Codex asks before anything its sandbox does
/// not allow, and agentty's permission prompt (or policy) answers.
const APPROVAL_POLICY: &str = "on-request";

/// One live app-server with a thread open.
pub(super) struct AppServerSession {
    pub(super) connection: Connection,
    pub(super) process: LiveProcess,
    pub(super) thread_id: String,
    /// The session it was started for, and whether it has had a prompt yet.
    started_for: SessionRef,
    pub(super) prompted: bool,
    /// The thread was resumed (not created): its first turn continues a conversation.
    pub(super) resumed: bool,
    /// The request it was started for (a new thread opens in the same directory).
    request: AttemptRequest,
    shared: Shared,
}

impl AppServerSession {
    /// Starts the app-server, initialises it and opens (or resumes) `request.session`.
    pub(super) async fn start(
        backend: Arc<dyn Backend>,
        request: &AttemptRequest,
        shared: Shared,
    ) -> Result<Self, AgentMessage> {
        let Some(mut spec) = backend.app_server_spawn_spec(request) else {
            return Err(runner::start_failed(format!(
                "the {} provider has no app-server transport",
                backend.name()
            )));
        };
        if spec.cwd.is_none() {
            spec.cwd = request.cwd.clone();
        }
        let waiters = Waiters::default();
        let process = LiveProcess::start(&spec, Router(waiters.clone()), "codex app-server")
            .map_err(runner::start_failed)?;
        let connection = Connection {
            lines: process.commands.clone(),
            waiters,
            next_id: Arc::new(AtomicU64::new(0)),
        };
        let mut session = Self {
            connection,
            process,
            thread_id: String::new(),
            started_for: request.session.clone(),
            prompted: false,
            resumed: false,
            request: request.clone(),
            shared,
        };
        match session.open(request).await {
            Ok(()) => Ok(session),
            Err(failure) => Err(session.start_failure(failure).await),
        }
    }

    /// `initialize`, then `thread/start` or `thread/resume`.
    async fn open(&mut self, request: &AttemptRequest) -> Result<(), OpenFailure> {
        let initialize = self.connection.request(
            "initialize",
            json!({
                "clientInfo": {"name": "agentty", "title": "agentty", "version": env!("CARGO_PKG_VERSION")},
                // Chatter no turn needs.
                "capabilities": {"optOutNotificationMethods": [
                    "account/rateLimits/updated", "remoteControl/status/changed"
                ]}
            }),
        );
        self.await_result("initialize", initialize).await?;
        self.connection.notify("initialized", json!({}));
        self.shared.list_models(self.connection.clone());
        match &request.session {
            SessionRef::Resume(id) => self.resume_thread(id).await,
            SessionRef::ContinueLatest => match self.latest_thread(request).await? {
                Some(id) => self.resume_thread(&id).await,
                None => self.new_thread(request).await,
            },
            SessionRef::New => self.new_thread(request).await,
        }
    }

    async fn new_thread(&mut self, request: &AttemptRequest) -> Result<(), OpenFailure> {
        let started = self.connection.request(
            "thread/start",
            json!({"cwd": session_cwd(request), "approvalPolicy": APPROVAL_POLICY}),
        );
        let started = self.await_result("thread/start", started).await?;
        self.adopt_thread(&started)?;
        self.shared.history.opened(&self.thread_id, Ok(None));
        self.resumed = false;
        Ok(())
    }

    async fn resume_thread(&mut self, id: &str) -> Result<(), OpenFailure> {
        let resumed = self.connection.request(
            "thread/resume",
            json!({"threadId": id, "approvalPolicy": APPROVAL_POLICY, "excludeTurns": true}),
        );
        match self.await_result("thread/resume", resumed).await {
            Ok(resumed) => {
                self.adopt_thread(&resumed)?;
                self.resumed = true;
                let newest = self.newest_turn().await;
                self.shared.history.opened(&self.thread_id, newest);
                Ok(())
            }
            Err(OpenFailure::Refused(error)) => Err(OpenFailure::Lost(error)),
            Err(other) => Err(other),
        }
    }

    /// The most recent thread of the working directory (`--continue`).
    async fn latest_thread(
        &mut self,
        request: &AttemptRequest,
    ) -> Result<Option<String>, OpenFailure> {
        let listed = self.connection.request(
            "thread/list",
            json!({"limit": 1, "cwd": session_cwd(request)}),
        );
        let listed = self.await_result("thread/list", listed).await?;
        Ok(listed["data"][0]["id"].as_str().map(str::to_owned))
    }

    /// Takes the thread a `thread/start` or `thread/resume` answer opened.
    fn adopt_thread(&mut self, answer: &Value) -> Result<(), OpenFailure> {
        let Some(id) = answer["thread"]["id"].as_str() else {
            return Err(OpenFailure::Refused(format!(
                "Codex opened a thread without an id: {answer}"
            )));
        };
        self.thread_id = id.to_owned();
        self.shared.saw_thread(&self.connection, id, answer);
        Ok(())
    }

    /// The newest turn of the open thread (`thread/turns/list`, newest first), where a rewind
    /// to before the next turn branches.
    async fn newest_turn(&mut self) -> Result<Option<String>, String> {
        let listed = self.connection.request(
            "thread/turns/list",
            json!({"threadId": self.thread_id, "limit": 1, "sortDirection": "desc"}),
        );
        match self.await_result("thread/turns/list", listed).await {
            Ok(listed) => Ok(listed["data"][0]["id"].as_str().map(str::to_owned)),
            Err(OpenFailure::Exited) => Err("Codex ended".to_owned()),
            Err(OpenFailure::Refused(error) | OpenFailure::Lost(error)) => Err(error),
        }
    }

    /// `thread/fork` of `thread` through `last_turn`: a new thread with that history, open in
    /// this process; `thread` itself stays as it is.
    pub(super) async fn fork(&mut self, thread: &str, last_turn: &str) -> Result<(), String> {
        let forked = self.connection.request(
            "thread/fork",
            json!({"threadId": thread, "lastTurnId": last_turn,
                   "approvalPolicy": APPROVAL_POLICY, "excludeTurns": true}),
        );
        let failed = |failure| match failure {
            OpenFailure::Exited => "Codex ended".to_owned(),
            OpenFailure::Refused(error) | OpenFailure::Lost(error) => error,
        };
        let forked = self
            .await_result("thread/fork", forked)
            .await
            .map_err(failed)?;
        self.adopt_thread(&forked).map_err(failed)?;
        self.shared
            .history
            .opened(&self.thread_id, Ok(Some(last_turn.to_owned())));
        self.resumed = true;
        Ok(())
    }

    /// `thread/revert` to before `turn_id`: Codex forgets that turn and every later one, in
    /// memory and in its stored thread.
    pub(super) async fn revert(&mut self, turn_id: &str) -> Result<(), String> {
        let reverted = self.connection.request(
            "thread/revert",
            json!({"threadId": self.thread_id, "beforeTurnId": turn_id}),
        );
        self.await_result("thread/revert", reverted)
            .await
            .map(|_| ())
            .map_err(|failure| match failure {
                OpenFailure::Exited => "Codex ended".to_owned(),
                OpenFailure::Refused(error) | OpenFailure::Lost(error) => error,
            })
    }

    /// Waits for the response to `method`, while dropping what else comes (the thread's
    /// announcements).
    async fn await_result(
        &mut self,
        method: &str,
        mut response: oneshot::Receiver<Response>,
    ) -> Result<Value, OpenFailure> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            tokio::select! {
                answer = &mut response => {
                    return match answer {
                        Ok(Ok(result)) => Ok(result),
                        Ok(Err(error)) => Err(OpenFailure::Refused(format!("Codex refused {method}: {error}"))),
                        Err(_) => Err(OpenFailure::Exited),
                    };
                }
                item = self.process.items.recv() => match item {
                    Some(LiveItem::Line(line)) => {
                        tracing::debug!(line = %line.text, method, "app-server line while waiting");
                    }
                    Some(LiveItem::Exited(report)) => {
                        self.process.exited = Some(report);
                        return Err(OpenFailure::Exited);
                    }
                    None => return Err(OpenFailure::Exited),
                },
                _ = tokio::time::sleep_until(deadline) => {
                    return Err(OpenFailure::Refused(format!(
                        "Codex did not answer {method} within {} s",
                        START_TIMEOUT.as_secs()
                    )));
                }
            }
        }
    }

    /// The terminal message of a start that failed; the process is ended.
    async fn start_failure(mut self, failure: OpenFailure) -> AgentMessage {
        if self.process.exited.is_none() {
            self.process.process_stop.kill_now();
        }
        let report = self.process.wait_exit().await;
        let stderr = self.process.stderr_text();
        let mapping = AttemptMapping::new(Box::new(AppServerMapper::new("")));
        let mut out = Vec::new();
        let mut terminal = mapping.finish(&report, EndedBy::Exit, stderr, &mut out);
        if let AgentMessage::Failed(failed) = &mut terminal {
            match failure {
                OpenFailure::Exited => {
                    failed.reason = FailureReason::StartFailed;
                    let said = failed
                        .stderr
                        .lines()
                        .rev()
                        .find(|line| !line.trim().is_empty())
                        .map(str::trim)
                        .unwrap_or("it exited before answering initialize");
                    failed.message = format!("codex app-server did not start: {said}");
                }
                OpenFailure::Refused(message) => {
                    failed.reason = FailureReason::StartFailed;
                    failed.message = message;
                }
                OpenFailure::Lost(message) => {
                    failed.reason = FailureReason::SessionLost;
                    failed.message = message;
                }
            }
        }
        terminal
    }
}

impl LiveSession for AppServerSession {
    fn serves(&mut self, session: &SessionRef) -> bool {
        if !self.process.is_running() {
            return false;
        }
        // `--continue` names the thread this process resumed for as long as it runs.
        if *session == self.started_for
            && (!self.prompted || *session == SessionRef::ContinueLatest)
        {
            return true;
        }
        matches!(session, SessionRef::Resume(id) if *id == self.thread_id)
    }

    /// `thread/start` in the running app-server: a new conversation, or a retry of a first
    /// turn, costs no cold start.
    async fn open_new(&mut self, request: &AttemptRequest) -> bool {
        if !self.process.is_running() {
            return false;
        }
        let request = AttemptRequest {
            cwd: request.cwd.clone().or_else(|| self.request.cwd.clone()),
            ..request.clone()
        };
        match self.new_thread(&request).await {
            Ok(()) => {
                tracing::info!(thread = %self.thread_id, "a new Codex thread in the running app-server");
                self.started_for = request.session.clone();
                self.prompted = false;
                self.process.forget_stderr();
                true
            }
            Err(_) => false,
        }
    }

    async fn close(self) {
        let Self {
            connection,
            process,
            shared,
            ..
        } = self;
        shared.forget_connection();
        if let Ok(mut waiters) = connection.waiters.lock() {
            waiters.clear();
        }
        drop(connection);
        process.close(EXIT_AFTER_CLOSE).await;
    }
}

/// Why opening the thread failed.
enum OpenFailure {
    /// The process ended first.
    Exited,
    /// Codex answered with an error (or not at all).
    Refused(String),
    /// Codex cannot continue the thread asked for.
    Lost(String),
}

/// The working directory a thread is opened in: the request's, else agentty's own.
fn session_cwd(request: &AttemptRequest) -> String {
    request
        .cwd
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| Path::new("/").to_path_buf())
        .display()
        .to_string()
}
