//! One turn on a live pi: a `prompt` (or a `compact`), its events mapped by the backend's
//! mapper until `agent_end`, pi's steering queue followed, and `abort` as the in-band stop.
//!
//! Steering: what leaves pi's queue (`queue_update`) was delivered, except what leaves it after
//! the `abort` went out: pi (0.73.1) takes a steer off its queue at a stop and writes it into
//! the session unanswered. Such a message counts as delivered only if the model then answers;
//! otherwise it is taken back out of the session file and goes back to the user, with what is
//! still queued (an abort does not clear the queue, and RPC has no command that does).
//!
//! A compaction (`compact`) is answered by pi with its result; pi's `abort` does not reach it
//! (it stops the agent loop only), so a stop goes straight to the signal stages, and since pi
//! writes the compaction to its session file only at the end, a stopped compaction leaves the
//! session as it was.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{oneshot, watch};

use super::commands::{is_event, CommandWriter};
use super::session::RpcSession;
use crate::process::Line;
use crate::provider::compaction::compacted_notice;
use crate::provider::live::{Ending, Live, Reply, Step, Turn, TurnIo};
use crate::provider::{AgentQueue, Backend, Interjection};
use crate::stream::{AgentMessage, NoticeKind};

pub(crate) struct RpcTurn {
    pub(super) backend: Arc<dyn Backend>,
    pub(super) writer: CommandWriter,
    pub(super) queue: watch::Sender<AgentQueue>,
    /// The response to the prompt (or the `compact`), until it came.
    pub(super) response: Option<oneshot::Receiver<Value>>,
    /// The turn is a compaction.
    pub(super) compacting: bool,
    /// Messages pi took off its queue after the `abort` went out: delivered only if the model
    /// then answers, else taken back when the turn ends.
    pub(super) taken_at_stop: Vec<(NoticeKind, String)>,
}

impl Turn for RpcTurn {
    type Session = RpcSession;
    type Ticket = ();
    type Wake = Result<Value, oneshot::error::RecvError>;

    fn on_line(
        &mut self,
        _live: &mut Live<RpcSession>,
        line: &Line,
        io: &mut TurnIo<'_>,
    ) -> Step<()> {
        if self.side_line(line, io) || self.compacting {
            // A compaction's own events (`compaction_start`, `compaction_end`) say nothing its
            // answer does not.
            return Step::Continue;
        }
        if !self.taken_at_stop.is_empty() && is_event(&line.text, "message_update") {
            // The model answers after pi took steering at the stop: the model saw it, so it
            // was delivered after all.
            for (kind, text) in std::mem::take(&mut self.taken_at_stop) {
                io.out.push(AgentMessage::notice(kind.clone(), text));
            }
        }
        io.map(line);
        if is_event(&line.text, "agent_end") {
            return Step::End(Ending::Answered);
        }
        Step::Continue
    }

    async fn wake(&mut self) -> Self::Wake {
        match self.response.as_mut() {
            Some(response) => response.await,
            None => std::future::pending().await,
        }
    }

    fn on_wake(
        &mut self,
        _live: &mut Live<RpcSession>,
        wake: Self::Wake,
        io: &mut TurnIo<'_>,
    ) -> Step<()> {
        self.response = None;
        // Without an answer (pi is going away) its exit ends the turn.
        let Ok(answer) = wake else {
            return Step::Continue;
        };
        let succeeded = answer["success"] == Value::Bool(true);
        let error = answer["error"].as_str().unwrap_or("no reason given");
        match (self.compacting, succeeded) {
            (false, true) => Step::Continue,
            (false, false) => Step::End(Ending::Refused(format!("pi refused the prompt: {error}"))),
            // A compaction pi finished stands even when a stop raced it.
            (true, true) => {
                let before = answer["data"]["tokensBefore"].as_u64();
                io.out.push(compacted_notice(before, None));
                Step::End(Ending::Completed("compacted".to_owned()))
            }
            (true, false) if io.stopping => Step::End(Ending::Answered),
            (true, false) => Step::End(Ending::Refused(format!(
                "pi could not compact the conversation: {error}"
            ))),
        }
    }

    fn cancel(&mut self, _live: &mut Live<RpcSession>) -> bool {
        if self.compacting {
            tracing::info!("stopping the compaction (signals: pi's abort cannot reach it)");
            return false;
        }
        self.writer
            .send("abort", serde_json::json!({"type": "abort"}));
        true
    }

    fn interject(&mut self, _live: &mut Live<RpcSession>, kind: Interjection, text: &str) -> bool {
        let (command, prefix) = match kind {
            Interjection::Steer => ("steer", "steer"),
            Interjection::FollowUp => ("follow_up", "follow"),
        };
        self.writer.send(
            prefix,
            serde_json::json!({"type": command, "message": text}),
        )
    }

    /// pi asks nothing of the user.
    fn answer(&mut self, _live: &mut Live<RpcSession>, _ticket: (), _reply: Reply<'_>) -> String {
        String::new()
    }

    /// Steering pi took off its queue after the `abort` (it wrote it into the session, which
    /// the next request would carry: taken out of the file here), and what is still in its
    /// queue.
    fn undelivered(
        &mut self,
        live: &mut Live<RpcSession>,
        out: &mut Vec<AgentMessage>,
    ) -> Vec<String> {
        let queued = self.queue.send_replace(AgentQueue::default());
        let taken: Vec<String> = std::mem::take(&mut self.taken_at_stop)
            .into_iter()
            .map(|(_, text)| text)
            .collect();
        if let (false, Some(file)) = (taken.is_empty(), live.session.session_file.as_deref()) {
            match self
                .backend
                .take_back_unanswered(std::path::Path::new(file), &taken)
            {
                Ok(count) => tracing::info!(count, "took unanswered steering out of pi's session"),
                Err(error) => out.push(AgentMessage::notice(
                    NoticeKind::Warning,
                    format!(
                        "Could not take your unanswered message out of pi's session ({error}): \
                         the agent may still see it"
                    ),
                )),
            }
        }
        taken
            .into_iter()
            .chain(queued.steering)
            .chain(queued.follow_up)
            .collect()
    }
}

impl RpcTurn {
    /// Lines that are not the turn's events: pi's queue, and responses nobody waited for.
    /// Returns true when the line was handled here.
    fn side_line(&mut self, line: &Line, io: &mut TurnIo<'_>) -> bool {
        if !line.text.contains("\"queue_update\"") && !line.text.contains("\"response\"") {
            return false;
        }
        let Ok(value) = serde_json::from_str::<Value>(&line.text) else {
            return false;
        };
        match value["type"].as_str() {
            Some("queue_update") => {
                self.queue_update(&value, io);
                true
            }
            Some("response") => {
                if value["success"] == Value::Bool(false) {
                    let command = value["command"].as_str().unwrap_or("command");
                    let error = value["error"].as_str().unwrap_or("no reason given");
                    io.out.push(AgentMessage::notice(
                        NoticeKind::Warning,
                        format!("pi refused `{command}`: {error}"),
                    ));
                }
                true
            }
            _ => false,
        }
    }

    /// pi's queue now: what left it was delivered (abort does not clear it); what left it after
    /// the abort went out is delivered only if the model answers it.
    fn queue_update(&mut self, value: &Value, io: &mut TurnIo<'_>) {
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
        for (kind, was, is) in [
            (NoticeKind::SteerDelivered, &before.steering, &now.steering),
            (
                NoticeKind::FollowUpDelivered,
                &before.follow_up,
                &now.follow_up,
            ),
        ] {
            for text in delivered(was, is) {
                if io.stopping {
                    self.taken_at_stop.push((kind.clone(), text));
                } else {
                    io.out.push(AgentMessage::notice(kind.clone(), text));
                }
            }
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

#[cfg(test)]
mod tests {
    use super::delivered;

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
}
