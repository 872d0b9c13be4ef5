//! `/compact` over Codex's app-server: `thread/compact/start {threadId}` on the live process,
//! an attempt like a prompt's (the same claim of the process, the same stop, the same terminal
//! messages). Checked against the real app-server (`real_codex::codex_app_server_compact_*`):
//! the request is answered `{}`, then Codex runs the compaction as a turn of its own
//! (`turn/started`, a `contextCompaction` item started and completed, token usage,
//! `turn/completed`); the next turn's request keeps the user's own messages and carries the
//! summary instead of the rest (answers, tools). Codex takes no instructions for the summary.

use serde_json::{json, Value};

use super::session::AppServerSession;
use super::{AppServerAttempt, AppServerMapper, INTERRUPT_GRACE, METHOD_NOT_FOUND};
use crate::provider::compaction::compacted_notice;
use crate::provider::live_process::{InBandStop, LiveItem, TurnEnd};
use crate::provider::runner::AttemptMapping;
use crate::provider::AttemptRequest;
use crate::stream::{AgentMessage, Failure, FailureReason, NoticeKind};

impl AppServerAttempt {
    /// The compaction's attempt: claims the live app-server (starting or resuming the thread
    /// as a prompt would), compacts, and ends with one terminal message.
    pub(super) async fn compact(mut self, request: AttemptRequest, instructions: Option<String>) {
        let Some(mut slot) = self.claim_thread(&request).await else {
            return;
        };
        let Some(session) = slot.as_mut() else {
            return;
        };
        self.announce(session, true).await;
        if instructions.is_some() {
            self.sink
                .send(AgentMessage::notice(
                    NoticeKind::Warning.wire(),
                    "Codex takes no instructions for its summary: compacting without them.",
                ))
                .await;
        }
        let (terminal, keep) = self.play_compaction(session, &request).await;
        self.shared.set_turn(None);
        self.close_unless_kept(&mut slot, keep).await;
        self.sink.send(terminal).await;
    }

    /// Asks Codex to compact and reads the turn it runs for it; returns the terminal message
    /// and whether the process may serve the next attempt.
    async fn play_compaction(
        &mut self,
        session: &mut AppServerSession,
        request: &AttemptRequest,
    ) -> (AgentMessage, bool) {
        let mut mapping = AttemptMapping::new(Box::new(AppServerMapper::new("")));
        let mut out = Vec::new();
        let mut started = session.connection.request(
            "thread/compact/start",
            json!({"threadId": session.thread_id}),
        );
        let mut started_open = true;
        let mut turn_id: Option<String> = None;
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
                    if let Ok(Err(error)) = answer {
                        refused = Some(error);
                        break TurnEnd::Answered;
                    }
                }
                item = session.process.items.recv() => match item {
                    Some(LiveItem::Line(line)) => {
                        if let Some(tap) = &request.raw_line_tap {
                            tap.record(&line.text).await;
                        }
                        let value: Value = serde_json::from_str(&line.text).unwrap_or_default();
                        if turn_id.is_none() && value["method"] == "turn/started" {
                            turn_id = value["params"]["turn"]["id"].as_str().map(str::to_owned);
                            if let Some(turn) = &turn_id {
                                // A rewind to after the compaction branches through it.
                                self.shared.history.turn_started(&session.thread_id, turn);
                            }
                            self.shared.set_turn(turn_id.clone());
                            if stop.is_sent() {
                                self.interrupt(session, turn_id.as_deref());
                            }
                        }
                        if is_compaction_done(&value) {
                            out.push(compacted_notice(None, None));
                        }
                        mapping.map_line(&line, &mut out);
                        self.shared.observe_context(&line.text);
                        self.keep_new_warnings(&mut out);
                        // A compaction asks nothing of the user.
                        if let (Some(id), Some(method)) = (value.get("id"), value["method"].as_str()) {
                            session.connection.respond_error(id, METHOD_NOT_FOUND, &format!("agentty does not offer {method} while compacting"));
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
                _ = stop.requested(), if !stop.is_sent() => {
                    tracing::info!("stopping the compaction in-band (turn/interrupt)");
                    stop.sent();
                    self.interrupt(session, turn_id.as_deref());
                }
            }
        };
        let stderr = session.process.stderr_text();
        if let Some(error) = refused {
            self.sink.flush(&mut out).await;
            let failure = Failure {
                reason: FailureReason::AgentError,
                message: format!("Codex could not compact the thread: {error}"),
                stderr,
                ..Failure::default()
            };
            return (AgentMessage::Failed(failure), true);
        }
        let (report, ended_by, keep) = stop.outcome(end);
        let terminal = mapping.finish(&report, ended_by, stderr, &mut out);
        self.sink.flush(&mut out).await;
        (terminal, keep)
    }
}

/// Codex's `item/completed` of its `contextCompaction` item: the thread is compacted.
fn is_compaction_done(value: &Value) -> bool {
    value["method"] == "item/completed" && value["params"]["item"]["type"] == "contextCompaction"
}
