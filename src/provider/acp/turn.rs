//! One turn on a live ACP agent: `session/prompt`, its `session/update`s mapped by the
//! [`AcpMapper`](super::AcpMapper) until the prompt's answer, the agent's
//! `session/request_permission` as questions, and `session/cancel` as the in-band stop.

use serde_json::{json, Value};

use super::mapper::REQUEST_PERMISSION;
use super::session::AcpSession;
use crate::process::Line;
use crate::provider::json_rpc::{agent_request, JsonRpc, INVALID_PARAMS};
use crate::provider::live::{Ending, Live, Question, Reply, Step, Turn, TurnIo};
use crate::stream::PERMISSION_CANCELLED;

pub(crate) struct AcpTurn {
    pub(super) connection: JsonRpc,
    pub(super) session_id: String,
}

impl Turn for AcpTurn {
    type Session = AcpSession;
    /// The JSON-RPC id to answer, as the agent sent it.
    type Ticket = Value;
    type Wake = std::convert::Infallible;

    fn on_line(
        &mut self,
        _live: &mut Live<AcpSession>,
        line: &Line,
        io: &mut TurnIo<'_>,
    ) -> Step<Value> {
        let asks = agent_request(&line.text);
        io.map(line);
        if let Some((rpc_id, method)) = asks {
            if method != REQUEST_PERMISSION {
                self.connection
                    .method_not_found(&rpc_id, &method, "the ACP agent");
            } else if let Some(request) = io.asked() {
                return Step::Ask(Question {
                    request,
                    ticket: rpc_id,
                });
            } else {
                self.connection.respond_error(
                    &rpc_id,
                    INVALID_PARAMS,
                    "agentty could not read this permission request",
                );
            }
        }
        if io.mapping.outcome_reported() {
            return Step::End(Ending::Answered);
        }
        Step::Continue
    }

    fn cancel(&mut self, _live: &mut Live<AcpSession>) -> bool {
        self.connection
            .notify("session/cancel", json!({"sessionId": self.session_id}));
        true
    }

    /// The user's note has no place in the protocol: only `permission.resolved` records it.
    fn answer(&mut self, _live: &mut Live<AcpSession>, rpc_id: Value, reply: Reply<'_>) -> String {
        let outcome = match reply.option {
            Some(option) => json!({"outcome": "selected", "optionId": option}),
            None => json!({"outcome": PERMISSION_CANCELLED}),
        };
        self.connection
            .respond(&rpc_id, json!({ "outcome": outcome }))
    }
}
