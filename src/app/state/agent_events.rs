//! Orchestrator events into the chat: each event and each of the agent's shared-stream messages
//! routed to the room that shows it (`answer_events` for text and thinking, `tool_events`,
//! `permission_events`, `plan_events`, `notice_events`, `attempt_events` for attempts and
//! retries, `turn_end`, `queue_take_back`, `review` for the turn's changes); the turn's start
//! and the stop's progress are kept here.

use std::time::Instant;

use super::{AppEffect, AppState, ShownAgentQueue, StopState, TurnState};
use crate::app::activity::PhaseTracker;
use crate::app::transcript::{CellBody, InertText, NoticeLevel, UserCell};
use crate::orchestrator::{OrchestratorEvent, TurnOutcome};
use crate::provider::StopProgress;
use crate::stream::AgentMessage;

impl AppState {
    pub fn on_orchestrator_event(
        &mut self,
        event: OrchestratorEvent,
        now: Instant,
    ) -> Vec<AppEffect> {
        if matches!(
            event,
            OrchestratorEvent::TurnEnded { .. }
                | OrchestratorEvent::QueueChanged { .. }
                | OrchestratorEvent::Notice { .. }
                | OrchestratorEvent::CompactionStarted { .. }
                | OrchestratorEvent::CompactionRefused { .. }
        ) {
            // The prompt sent will not start a turn of its own (queued, refused), or another
            // turn did: the window for a stop before the start is over.
            self.prompt_in_flight = None;
        }
        match event {
            OrchestratorEvent::TurnStarted { turn, prompt } => {
                let cell = self.transcript.push(CellBody::User(UserCell::new(
                    InertText::new(&prompt),
                    std::mem::take(&mut self.retry_asked),
                )));
                self.record_prompt(turn, &prompt, cell, now);
                self.phase = Some(PhaseTracker::new(now));
                self.turn = Some(TurnState {
                    stop_requested: self.prompt_in_flight.take() == Some(true),
                    ..TurnState::starting(turn, now)
                });
            }
            // A turn with no prompt: the status bar says it compacts, its notice the result.
            OrchestratorEvent::CompactionStarted { turn, .. } => {
                self.phase = Some(PhaseTracker::new(now));
                self.turn = Some(TurnState {
                    compaction: true,
                    ..TurnState::starting(turn, now)
                });
            }
            // The prompt's text shows its images (`[image: shot.png 120 KB]`); the log keeps them.
            OrchestratorEvent::ImagesAttached { .. } => {}
            OrchestratorEvent::CompactionRefused { message } => {
                self.notice(NoticeLevel::Info, message);
            }
            OrchestratorEvent::AttemptStarted {
                turn,
                attempt,
                max_attempts,
            } => {
                if self.turn.as_ref().is_some_and(|running| running.id == turn) {
                    self.phase = Some(PhaseTracker::new(now));
                }
                self.on_attempt_started(turn, attempt, max_attempts);
            }
            // A resumed log's record of a turn's changes, which follows the turn's end.
            OrchestratorEvent::Message {
                turn,
                message: AgentMessage::TurnChanges { files },
                ..
            } => self.on_turn_changes(turn, files),
            OrchestratorEvent::Message {
                turn,
                attempt: _,
                message,
            } => {
                if self.turn.as_ref().is_some_and(|running| running.id == turn) {
                    self.on_agent_message(message, now);
                }
            }
            OrchestratorEvent::StopProgress { turn, progress } => {
                if let Some(running) = self.turn.as_mut().filter(|running| running.id == turn) {
                    running.stop = match progress {
                        StopProgress::Running => None,
                        _ if running.stop.map(|stop| stop.progress) == Some(progress) => {
                            running.stop
                        }
                        _ => Some(StopState {
                            progress,
                            since: now,
                        }),
                    };
                }
            }
            OrchestratorEvent::FailureJudged { turn, verdict, .. } => {
                self.on_failure_judged(turn, &verdict);
            }
            OrchestratorEvent::RetryScheduled {
                turn,
                attempt,
                max_attempts,
                delay_ms,
                reason,
            } => {
                if self.turn.as_ref().is_some_and(|running| running.id == turn) {
                    self.on_retry_scheduled(attempt, max_attempts, delay_ms, &reason, now);
                }
            }
            OrchestratorEvent::RetryCancelled { turn } => self.on_retry_cancelled(turn),
            OrchestratorEvent::TurnEnded { turn, outcome } => {
                if self.turn.as_ref().is_some_and(|running| running.id == turn) {
                    let cancelled = outcome == TurnOutcome::Cancelled;
                    self.on_turn_ended(outcome, now);
                    if cancelled {
                        return self.take_back_queue();
                    }
                }
            }
            OrchestratorEvent::QueueChanged { queued } => {
                self.queued = queued.iter().map(|prompt| InertText::new(prompt)).collect();
            }
            OrchestratorEvent::SessionChanged { session_id } => {
                self.session_id = session_id.as_deref().map(InertText::new);
            }
            OrchestratorEvent::AgentQueueChanged(queue) => {
                self.agent_queue = ShownAgentQueue::from(&queue);
            }
            OrchestratorEvent::AgentStatusChanged(status) => self.on_agent_status(status),
            // Said when the status showed it (`on_agent_status`); the log keeps it.
            OrchestratorEvent::SettingChosen(_) => {}
            OrchestratorEvent::Notice {
                turn,
                kind,
                message,
            } => {
                if self.turn.as_ref().is_some_and(|running| running.id == turn) {
                    self.on_agent_message(AgentMessage::Notice { kind, message }, now);
                } else {
                    // After its turn (a snapshot's limits, the launch's): shown all the same,
                    // under that turn.
                    self.on_late_notice(turn, &message);
                }
            }
            OrchestratorEvent::SnapshotBusy(busy) => return self.on_snapshot_busy(busy),
            OrchestratorEvent::RestoresInterrupted(found) => self.on_restores_interrupted(found),
            OrchestratorEvent::RestoreResolved {
                finish, outcome, ..
            } => self.on_restore_resolved(finish, outcome),
            OrchestratorEvent::TurnChanges { turn, files } => self.on_turn_changes(turn, files),
            OrchestratorEvent::Undone { turn, outcome } => self.on_undone(turn, outcome),
            OrchestratorEvent::Rewound(rewind) => self.on_rewound(rewind),
            OrchestratorEvent::TurnCheckpointed {
                turn,
                conversation_rewind,
            } => self.on_turn_checkpointed(turn, conversation_rewind),
            OrchestratorEvent::ShutDown => return self.on_orchestrator_gone(),
        }
        Vec::new()
    }

    /// The orchestrator is gone (it shut down, or its channel closed).
    pub fn on_orchestrator_gone(&mut self) -> Vec<AppEffect> {
        self.prompt_in_flight = None;
        let was_alive = self.orchestrator_alive;
        self.orchestrator_alive = false;
        if self.quitting {
            return vec![AppEffect::Exit];
        }
        if was_alive {
            self.notice(
                NoticeLevel::Error,
                "The agent runner stopped; prompts cannot be sent. Quit with Ctrl+C twice.",
            );
        }
        Vec::new()
    }

    fn on_agent_message(&mut self, message: AgentMessage, now: Instant) {
        if let Some(turn) = self.turn.as_mut() {
            // The agent went on after a rejection: it did not end the turn there.
            let went_on = match &message {
                AgentMessage::Assistant { delta } | AgentMessage::Thinking { delta } => {
                    !delta.is_empty()
                }
                AgentMessage::ToolCall { .. }
                | AgentMessage::PermissionRequest(_)
                | AgentMessage::Plan { .. } => true,
                _ => false,
            };
            if went_on {
                turn.last_rejection = None;
            }
        }
        self.live_thinking.observe(&mut self.transcript, &message);
        self.usage_book.observe(&message);
        if let Some(phase) = self.phase.as_mut() {
            phase.observe(&message, now);
        }
        match message {
            AgentMessage::SessionStarted { session_id, .. } => {
                if let Some(id) = session_id {
                    self.session_id = Some(InertText::new(&id));
                }
            }
            AgentMessage::SessionResumed { session_id, .. } => {
                self.session_id = Some(InertText::new(&session_id));
            }
            AgentMessage::Assistant { delta } => self.append_assistant(&delta),
            AgentMessage::Thinking { delta } => self.on_thinking(&delta),
            AgentMessage::Thought { text } => self.on_thought(&text),
            AgentMessage::ToolCall {
                id,
                name,
                input,
                parent_id,
            } => self.on_tool_call(id, &name, &input, parent_id.as_deref(), now),
            AgentMessage::ToolUpdate { id, output } => self.on_tool_update(&id, &output),
            AgentMessage::ToolCompleted { id, output } => self.on_tool_completed(&id, &output, now),
            AgentMessage::ToolFailed { id, error } => self.on_tool_failed(&id, &error, now),
            AgentMessage::Completed { stop_reason, .. } => {
                self.on_attempt_completed(&stop_reason, now);
            }
            AgentMessage::Failed(failure) => self.on_attempt_failed(&failure, now),
            AgentMessage::Cancelled {
                stop_stage,
                elapsed_ms,
            } => self.on_attempt_cancelled(stop_stage, elapsed_ms, now),
            AgentMessage::Notice { kind, message } => self.on_agent_notice(kind, message),
            // The orchestrator's own RetryScheduled event carries this; ignore the echo.
            AgentMessage::RetryScheduled { .. } => {}
            AgentMessage::PermissionRequest(request) => self.on_permission_request(*request, now),
            AgentMessage::PermissionResolved {
                id,
                outcome,
                by,
                message,
            } => {
                self.on_permission_resolved(&id, &outcome, by, message.as_deref(), now);
            }
            AgentMessage::Plan { entries } => self.on_plan(&entries),
            // Handled with its turn (`on_orchestrator_event`); kept here for the match.
            AgentMessage::TurnChanges { files } => {
                if let Some(turn) = self.turn.as_ref().map(|turn| turn.id) {
                    self.on_turn_changes(turn, files);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_session_id_is_made_inert_where_it_arrives() {
        use crate::app::state::{AppState, StartupInfo};
        use crate::orchestrator::OrchestratorEvent;
        let mut state = AppState::new(StartupInfo::default());
        state.on_orchestrator_event(
            OrchestratorEvent::SessionChanged {
                session_id: Some("s-1\u{1b}]0;owned\u{7}\u{202e}".into()),
            },
            std::time::Instant::now(),
        );
        // Its controls are shown as their pictures and the bidi override is gone: the id is
        // kept, inert, not dropped (an `InertText` holds no control by construction, so only
        // its exact text says that this one was made from the agent's).
        let id = state.session_id.as_deref().expect("the session id");
        assert_eq!(id, "s-1\u{241b}]0;owned\u{2407}");
    }
}

#[cfg(test)]
mod stop_before_start_tests {
    use std::time::{Duration, Instant};

    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use crate::app::state::{Activity, AppEffect, AppState, StartupInfo, StopStatus};
    use crate::orchestrator::{Command, OrchestratorEvent};

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    /// A loop that is slow to read the orchestrator's events must not lose the user's stop: Esc
    /// after Enter and before the turn is said to have started still stops it (the
    /// orchestrator takes the stop after the prompt), and is not the first Esc of Esc Esc.
    #[test]
    fn esc_between_the_prompt_sent_and_its_turn_started_stops_that_turn() {
        let now = Instant::now();
        let mut state = AppState::new(StartupInfo::default());
        state.composer.set_text("spawn helpers");
        let sent = state.on_key_at(key(KeyCode::Enter), now);
        assert!(sent.contains(&AppEffect::Command(Command::Submit("spawn helpers".into()))));
        assert_eq!(
            state.activity(now),
            Activity::Starting,
            "the status bar does not say idle while the prompt is on its way"
        );
        assert_eq!(
            state.on_key_at(key(KeyCode::Esc), now + Duration::from_millis(10)),
            [AppEffect::Command(Command::Stop)]
        );
        assert_eq!(
            state.activity(now),
            Activity::Stopping {
                stage: StopStatus::Requested
            }
        );
        let again = state.on_key_at(key(KeyCode::Esc), now + Duration::from_millis(20));
        assert!(
            state.overlay.is_none(),
            "Esc Esc does not open /rewind: {again:?}"
        );
        state.on_orchestrator_event(
            OrchestratorEvent::TurnStarted {
                turn: 1,
                prompt: "spawn helpers".into(),
            },
            now + Duration::from_millis(30),
        );
        assert!(
            state.turn.as_ref().unwrap().stop_requested,
            "the stop shows"
        );

        // A prompt the orchestrator queued instead starts no turn: idle Esc is idle again.
        let mut state = AppState::new(StartupInfo::default());
        state.composer.set_text("later");
        state.on_key_at(key(KeyCode::Enter), now);
        state.on_orchestrator_event(
            OrchestratorEvent::QueueChanged {
                queued: vec!["later".into()],
            },
            now,
        );
        assert!(state.on_key_at(key(KeyCode::Esc), now).is_empty());
    }
}
