//! `/compact` over pi's RPC mode: one `compact{customInstructions?}` on the live process, an
//! attempt like a prompt's (the same claim of the process, the same terminal messages).
//!
//! pi brackets the work with `compaction_start` / `compaction_end` events and answers the
//! command with its `CompactionResult` (`tokensBefore`, the summary) or an error ("Nothing to
//! compact (session too small)"). pi's `abort` does not reach a compaction (it stops the agent
//! loop only), so a stop goes straight to the signal stages; pi writes the compaction to its
//! session file only at the end, so a stopped compaction leaves the session as it was, and the
//! next attempt starts pi again on it.

use std::time::Duration;

use serde_json::{json, Value};

use super::{RpcAttempt, RpcSession};
use crate::process::ExitReport;
use crate::provider::common::session_message;
use crate::provider::compaction::compacted_notice;
use crate::provider::live_process::{InBandStop, LiveItem, TurnEnd};
use crate::provider::runner::{AttemptMapping, EndedBy};
use crate::provider::AttemptRequest;
use crate::stream::{AgentMessage, Failure, FailureReason};

/// How a compaction ended before its terminal message is composed.
enum Ended {
    /// pi answered the command: its response.
    Answered(Value),
    /// pi died (by itself, or by the stop's signals) before answering.
    Exited(ExitReport),
}

impl RpcAttempt {
    /// The compaction's attempt: claims the live process (starting or reloading pi as a
    /// prompt would), compacts, and ends with one terminal message.
    pub(super) async fn compact(mut self, request: AttemptRequest, instructions: Option<String>) {
        let Some(mut slot) = self.claim_session(&request).await else {
            return;
        };
        let Some(session) = slot.as_mut() else {
            return;
        };
        session.prompted = true;
        self.sink
            .send(session_message(
                self.backend.name(),
                true,
                session.session_id.clone(),
                None,
            ))
            .await;
        let (terminal, keep) = self
            .play_compaction(session, &request, instructions.as_deref())
            .await;
        self.keep_or_close(&mut slot, keep).await;
        self.sink.send(terminal).await;
    }

    /// Sends `compact` and waits for pi's answer; returns the terminal message and whether the
    /// process may serve the next attempt.
    async fn play_compaction(
        &mut self,
        session: &mut RpcSession,
        request: &AttemptRequest,
        instructions: Option<&str>,
    ) -> (AgentMessage, bool) {
        let mut command = json!({"type": "compact"});
        if let Some(text) = instructions {
            command["customInstructions"] = Value::String(text.to_owned());
        }
        let mut response = session.writer.request("compact", command);
        // pi's `abort` cannot reach a compaction: a stop goes to the signals at once.
        let mut stop = InBandStop::new(
            self.stop.clone(),
            session.process.process_stop.clone(),
            Duration::ZERO,
        );
        let mut answered = false;
        let ended = loop {
            tokio::select! {
                item = session.process.items.recv() => match item {
                    Some(LiveItem::Line(line)) => {
                        if let Some(tap) = &request.raw_line_tap {
                            tap.record(&line.text).await;
                        }
                        // pi's queue and answers nobody waits for; the rest (`compaction_start`,
                        // `compaction_end`) says nothing the response does not.
                        self.side_line(&line, session, false).await;
                    }
                    Some(LiveItem::Exited(report)) => {
                        session.process.exited = Some(report);
                        break Ended::Exited(report);
                    }
                    None => break Ended::Exited(ExitReport::default()),
                },
                Some(_) = session.process.stderr_lines.recv() => {}
                answer = &mut response, if !answered => {
                    answered = true;
                    // Without an answer (pi is going away) its exit ends the attempt.
                    if let Ok(answer) = answer {
                        break Ended::Answered(answer);
                    }
                }
                _ = stop.requested(), if !stop.is_sent() => {
                    tracing::info!("stopping the compaction (signals: pi's abort cannot reach it)");
                    stop.sent();
                }
            }
        };
        let stderr = session.process.stderr_text();
        match ended {
            Ended::Answered(answer) => {
                let (_, ended_by, _) = stop.outcome(TurnEnd::Answered);
                let (notice, terminal) = compaction_messages(&answer, ended_by, stderr);
                if let Some(notice) = notice {
                    self.sink.send(notice).await;
                }
                (terminal, true)
            }
            Ended::Exited(report) => {
                let (report, ended_by, keep) = stop.outcome(TurnEnd::Exited(report));
                let mut out = Vec::new();
                let mapping = AttemptMapping::new(self.backend.mapper(request));
                let terminal = match mapping.finish(&report, ended_by, stderr, &mut out) {
                    AgentMessage::Failed(mut failure) => {
                        failure.message = format!("pi ended while compacting: {}", failure.message);
                        AgentMessage::Failed(failure)
                    }
                    other => other,
                };
                self.sink.flush(&mut out).await;
                (terminal, keep)
            }
        }
    }
}

/// What pi's answer to `compact` means: the `compacted` notice (on success) and the terminal
/// message. A compaction pi finished stands even when a stop raced it.
pub(crate) fn compaction_messages(
    answer: &Value,
    ended_by: EndedBy,
    stderr: String,
) -> (Option<AgentMessage>, AgentMessage) {
    if answer["success"] == Value::Bool(true) {
        let before = answer["data"]["tokensBefore"].as_u64();
        return (
            Some(compacted_notice(before, None)),
            AgentMessage::Completed {
                stop_reason: "compacted".to_owned(),
                usage: None,
            },
        );
    }
    let error = answer["error"].as_str().unwrap_or("no reason given");
    if let EndedBy::UserStop { stage, elapsed_ms } = ended_by {
        return (
            None,
            AgentMessage::Cancelled {
                stop_stage: stage,
                elapsed_ms,
            },
        );
    }
    (
        None,
        AgentMessage::Failed(Failure {
            reason: FailureReason::AgentError,
            message: format!("pi could not compact the conversation: {error}"),
            stderr,
            ..Failure::default()
        }),
    )
}
