//! One turn on a live app-server: `turn/start` (or `thread/compact/start`, after which Codex
//! runs the compaction as a turn of its own), its notifications mapped by the
//! [`AppServerMapper`](super::AppServerMapper) until `turn/completed`, Codex's approval
//! requests as questions, `turn/steer` for a message given mid-turn, and `turn/interrupt` as the
//! in-band stop (Codex: 8–16 ms; its interrupt leaves a running command running, which the
//! driver kills).

use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::approvals::{decision_value, COMMAND_APPROVAL, FILE_CHANGE_APPROVAL};
use super::session::AppServerSession;
use super::status::Shared;
use super::REQUEST_TIMEOUT;
use crate::process::Line;
use crate::provider::compaction::compacted_notice;
use crate::provider::json_rpc::{
    agent_request, settled, JsonRpc, Reply as RpcReply, INVALID_PARAMS, METHOD_NOT_FOUND,
};
use crate::provider::live::{Ending, Live, Question, Reply, Step, Turn, TurnIo};
use crate::provider::Interjection;
use crate::stream::{AgentMessage, NoticeKind};

/// What answering an approval takes: its JSON-RPC id, and its params (the decisions offered).
pub(crate) struct Approval {
    rpc_id: Value,
    params: Value,
}

pub(crate) struct AppServerTurn {
    pub(super) connection: JsonRpc,
    pub(super) thread_id: String,
    pub(super) shared: Shared,
    /// The answer to `turn/start` (or `thread/compact/start`), until it came.
    pub(super) started: Option<oneshot::Receiver<RpcReply>>,
    pub(super) compacting: bool,
    /// The turn's id, once Codex named it.
    pub(super) turn_id: Option<String>,
    /// The stop came before Codex named the turn: it is interrupted once Codex does.
    pub(super) interrupt_pending: bool,
    /// Steering given before Codex named the turn: sent once it does.
    pub(super) steer_pending: Vec<String>,
}

impl Turn for AppServerTurn {
    type Session = AppServerSession;
    type Ticket = Approval;
    type Wake = Result<RpcReply, oneshot::error::RecvError>;

    fn on_line(
        &mut self,
        _live: &mut Live<AppServerSession>,
        line: &Line,
        io: &mut TurnIo<'_>,
    ) -> Step<Approval> {
        if self.compacting {
            return self.compaction_line(line, io);
        }
        let asks = agent_request(&line.text);
        io.map(line);
        self.shared.observe_context(&line.text);
        self.keep_new_warnings(io.out);
        if let Some((rpc_id, method)) = asks {
            if method != COMMAND_APPROVAL && method != FILE_CHANGE_APPROVAL {
                self.connection.method_not_found(&rpc_id, &method, "Codex");
            } else if let Some(request) = io.asked() {
                let params = serde_json::from_str::<Value>(&line.text)
                    .map(|mut message| message["params"].take())
                    .unwrap_or_default();
                return Step::Ask(Question {
                    request,
                    ticket: Approval { rpc_id, params },
                });
            } else {
                self.connection.respond_error(
                    &rpc_id,
                    INVALID_PARAMS,
                    "agentty could not read this approval request",
                );
            }
        }
        if io.mapping.outcome_reported() {
            return Step::End(Ending::Answered);
        }
        Step::Continue
    }

    async fn wake(&mut self) -> Self::Wake {
        match self.started.as_mut() {
            Some(started) => started.await,
            None => std::future::pending().await,
        }
    }

    fn on_wake(
        &mut self,
        _live: &mut Live<AppServerSession>,
        wake: Self::Wake,
        _io: &mut TurnIo<'_>,
    ) -> Step<Approval> {
        self.started = None;
        match wake {
            // A compaction's turn is named by its `turn/started`.
            Ok(Ok(_)) if self.compacting => Step::Continue,
            Ok(Ok(result)) => {
                self.turn_id = result["turn"]["id"].as_str().map(str::to_owned);
                if let Some(turn) = &self.turn_id {
                    self.shared.history.turn_started(&self.thread_id, turn);
                }
                self.turn_named();
                Step::Continue
            }
            Ok(Err(error)) if self.compacting => Step::End(Ending::Refused(format!(
                "Codex could not compact the thread: {}",
                error.describe()
            ))),
            Ok(Err(error)) => Step::End(Ending::Refused(format!(
                "Codex refused the turn: {}",
                error.describe()
            ))),
            // The process ended: its exit report comes through the lines.
            Err(_) => Step::Continue,
        }
    }

    fn cancel(&mut self, _live: &mut Live<AppServerSession>) -> bool {
        match &self.turn_id {
            Some(turn) => self.interrupt(turn),
            None => self.interrupt_pending = true,
        }
        true
    }

    /// `turn/steer` (it reaches the model at its next request); its arrival in the thread is
    /// said as pi's steering is. A follow-up waits in agentty's queue (Codex has none).
    fn interject(
        &mut self,
        _live: &mut Live<AppServerSession>,
        kind: Interjection,
        text: &str,
    ) -> bool {
        if kind != Interjection::Steer || self.compacting {
            return false;
        }
        self.shared.steering(text);
        match self.turn_id.clone() {
            Some(turn) => self.steer(&turn, text),
            None => self.steer_pending.push(text.to_owned()),
        }
        true
    }

    fn answer(
        &mut self,
        _live: &mut Live<AppServerSession>,
        approval: Approval,
        reply: Reply<'_>,
    ) -> String {
        let decision = reply
            .option
            .and_then(|option| decision_value(&approval.params, option))
            .unwrap_or_else(|| Value::from("cancel"));
        self.connection
            .respond(&approval.rpc_id, json!({ "decision": decision }))
    }

    /// The messages given mid-turn that did not reach the model.
    fn undelivered(
        &mut self,
        _live: &mut Live<AppServerSession>,
        _out: &mut Vec<AgentMessage>,
    ) -> Vec<String> {
        self.shared.undelivered()
    }
}

impl AppServerTurn {
    /// Codex named the turn: what waited for it goes now.
    fn turn_named(&mut self) {
        let Some(turn) = self.turn_id.clone() else {
            return;
        };
        if self.interrupt_pending {
            self.interrupt(&turn);
        }
        for text in std::mem::take(&mut self.steer_pending) {
            self.steer(&turn, &text);
        }
    }

    fn interrupt(&self, turn_id: &str) {
        let interrupted = self.connection.request(
            "turn/interrupt",
            json!({"threadId": self.thread_id, "turnId": turn_id}),
        );
        tokio::spawn(async move {
            if let Err(error) = settled(interrupted, REQUEST_TIMEOUT, "Codex").await {
                tracing::warn!(%error, "Codex refused turn/interrupt");
            }
        });
    }

    fn steer(&self, turn_id: &str, text: &str) {
        let steered = self.connection.request(
            "turn/steer",
            json!({
                "threadId": self.thread_id,
                "expectedTurnId": turn_id,
                "input": [{"type": "text", "text": text}],
            }),
        );
        tokio::spawn(async move {
            // The turn ended meanwhile: the driver says what did not reach the model.
            if let Err(error) = settled(steered, REQUEST_TIMEOUT, "Codex").await {
                tracing::warn!(%error, "Codex did not take the message mid-turn");
            }
        });
    }

    /// Drops the warnings this provider showed already (Codex repeats some every turn), and
    /// takes delivered steering off the queue.
    fn keep_new_warnings(&self, out: &mut Vec<AgentMessage>) {
        out.retain(|message| match message {
            AgentMessage::Notice { kind, message } if *kind == NoticeKind::Warning => {
                self.shared.first_warning(message)
            }
            AgentMessage::Notice { kind, message } if *kind == NoticeKind::SteerDelivered => {
                self.shared.delivered(message);
                true
            }
            _ => true,
        });
    }

    /// A line of a compaction: Codex runs it as a turn of its own (`turn/started`, a
    /// `contextCompaction` item started and completed, token usage, `turn/completed`), and asks
    /// nothing of the user meanwhile.
    fn compaction_line(&mut self, line: &Line, io: &mut TurnIo<'_>) -> Step<Approval> {
        let value: Value = serde_json::from_str(&line.text).unwrap_or_default();
        if self.turn_id.is_none() && value["method"] == "turn/started" {
            self.turn_id = value["params"]["turn"]["id"].as_str().map(str::to_owned);
            if let Some(turn) = &self.turn_id {
                // A rewind to after the compaction branches through it.
                self.shared.history.turn_started(&self.thread_id, turn);
            }
            self.turn_named();
        }
        if value["method"] == "item/completed"
            && value["params"]["item"]["type"] == "contextCompaction"
        {
            io.out.push(compacted_notice(None, None));
        }
        io.map(line);
        self.shared.observe_context(&line.text);
        self.keep_new_warnings(io.out);
        if let (Some(id), Some(method)) = (value.get("id"), value["method"].as_str()) {
            self.connection.respond_error(
                id,
                METHOD_NOT_FOUND,
                &format!("agentty does not offer {method} while compacting"),
            );
        }
        if io.mapping.outcome_reported() {
            return Step::End(Ending::Answered);
        }
        Step::Continue
    }
}
