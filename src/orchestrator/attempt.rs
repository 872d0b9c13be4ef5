//! The driver's live attempt: starting one (a prompt's or a compaction's), reading its messages
//! and stop progress, the retry timer, and what the driver hands to the running agent (a stop,
//! an interjection, a permission answer).

use std::time::Duration;

use futures::StreamExt;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{Driver, Input};
use crate::orchestrator::{Command, OrchestratorEvent, TurnId};
use crate::provider::{
    AgentStream, AttemptRequest, Interjection, SessionRef, StopControl, StopProgress,
};
use crate::stream::{AgentMessage, Failure, FailureReason, NoticeKind};

pub(super) struct LiveAttempt {
    turn: TurnId,
    attempt: u32,
    stream: AgentStream,
    pub(super) stop: StopControl,
    progress: watch::Receiver<StopProgress>,
    progress_open: bool,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct PendingRetry {
    turn: TurnId,
    attempt: u32,
    due: Instant,
}

impl Driver {
    /// Starts one attempt: the prompt's, or with `compaction` (its instructions) a compaction.
    pub(super) fn start_agent(
        &mut self,
        turn: TurnId,
        attempt: u32,
        prompt: String,
        images: Vec<crate::attachment::ImageAttachment>,
        session: SessionRef,
        compaction: Option<Option<String>>,
    ) {
        if let Some(previous) = self.live.take() {
            // The machine never starts an attempt while one is live; if it did, the old one
            // must not run on unobserved.
            tracing::error!(
                turn = previous.turn,
                attempt = previous.attempt,
                "an attempt was still live when the next started; killing it"
            );
            previous.stop.kill_now();
        }
        tracing::info!(turn, attempt, ?session, "starting attempt");
        let stop = StopControl::new();
        let request = AttemptRequest {
            prompt,
            images,
            session,
            cwd: self.options.cwd.clone(),
            attempt,
            scenario: self.options.scenario.clone(),
            settings: self.settings.clone(),
            raw_line_tap: self
                .options
                .session_log
                .as_ref()
                .and_then(|log| log.raw_line_tap(turn, attempt)),
        };
        if attempt == 1 {
            self.checkpoint_turn(turn, &request);
        }
        let stream = match compaction {
            Some(instructions) => {
                self.options
                    .provider
                    .compact(request, instructions, stop.clone())
            }
            None => self.options.provider.execute(request, stop.clone()),
        };
        let progress = stop.subscribe();
        self.live = Some(LiveAttempt {
            turn,
            attempt,
            stream,
            stop,
            progress,
            progress_open: true,
        });
    }

    /// Whether this attempt is the one running.
    fn is_live(&self, turn: TurnId, attempt: u32) -> bool {
        self.live
            .as_ref()
            .is_some_and(|live| live.turn == turn && live.attempt == attempt)
    }

    pub(super) fn stop_attempt(&mut self, turn: TurnId, attempt: u32) {
        if let Some(live) = self.live.as_ref().filter(|_| self.is_live(turn, attempt)) {
            tracing::info!(turn, attempt, "stopping the agent");
            live.stop.stop();
        }
    }

    pub(super) fn schedule_retry(&mut self, turn: TurnId, attempt: u32, delay_ms: u64) {
        tracing::info!(turn, attempt, delay_ms, "retry scheduled");
        self.retry = Some(PendingRetry {
            turn,
            attempt,
            due: Instant::now() + Duration::from_millis(delay_ms),
        });
    }

    pub(super) fn interject(
        &mut self,
        turn: TurnId,
        attempt: u32,
        kind: Interjection,
        text: String,
    ) {
        if !(self.is_live(turn, attempt) && self.options.provider.interject(kind, &text)) {
            // Not delivered: it waits in the queue like any prompt.
            tracing::info!(turn, ?kind, "interjection not delivered; queued");
            self.feedback
                .push_back(Input::Command(Command::Submit(text)));
        }
    }

    pub(super) fn answer_permission(
        &mut self,
        turn: TurnId,
        attempt: u32,
        id: String,
        option: Option<String>,
        message: Option<String>,
    ) {
        let live = self.is_live(turn, attempt);
        let provider = &self.options.provider;
        if !(live && provider.answer_permission(&id, option, message.clone())) {
            tracing::warn!(turn, id, "permission answer not delivered");
        } else if let Some(message) = message
            .filter(|message| !message.trim().is_empty())
            .filter(|_| !provider.takes_permission_feedback())
        {
            // The answer could not carry it: it goes as the next prompt, and the user is told
            // so.
            self.emit(OrchestratorEvent::Notice {
                turn,
                kind: NoticeKind::PermissionFeedback,
                message: message.clone(),
            });
            self.feedback
                .push_back(Input::Command(Command::Submit(message)));
        }
    }
}

/// The next message or stop progress of the live attempt; pending forever without one.
pub(super) async fn next_attempt_input(live: &mut Option<LiveAttempt>) -> Input {
    let Some(live) = live.as_mut() else {
        return std::future::pending().await;
    };
    let LiveAttempt {
        turn,
        attempt,
        stream,
        progress,
        progress_open,
        ..
    } = live;
    loop {
        tokio::select! {
            // Progress first, so "stopped" is shown before the turn ends.
            biased;
            changed = progress.changed(), if *progress_open => match changed {
                Ok(()) => {
                    return Input::StopProgress {
                        turn: *turn,
                        attempt: *attempt,
                        progress: *progress.borrow_and_update(),
                    }
                }
                Err(_) => *progress_open = false,
            },
            message = stream.next() => {
                return Input::Agent {
                    turn: *turn,
                    attempt: *attempt,
                    message: message.unwrap_or_else(missing_terminal),
                }
            }
        }
    }
}

pub(super) async fn retry_due(retry: Option<PendingRetry>) -> Input {
    match retry {
        Some(retry) => {
            tokio::time::sleep_until(retry.due).await;
            Input::RetryDue {
                turn: retry.turn,
                attempt: retry.attempt,
            }
        }
        None => std::future::pending().await,
    }
}

fn missing_terminal() -> AgentMessage {
    AgentMessage::Failed(Failure {
        reason: FailureReason::NoCompletion,
        message: "the provider ended the attempt without a terminal message".into(),
        ..Failure::default()
    })
}

/// The model's own output (or the attempt's end): the request has reached it.
pub(super) fn the_model_answered(message: &AgentMessage) -> bool {
    matches!(
        message,
        AgentMessage::Assistant { .. }
            | AgentMessage::Thinking { .. }
            | AgentMessage::Thought { .. }
            | AgentMessage::ToolCall { .. }
    ) || message.is_terminal()
}
