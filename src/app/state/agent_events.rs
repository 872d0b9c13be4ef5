//! Orchestrator events into the transcript: turns, attempts, the agent's shared-stream messages
//! (text, thinking, notices, the plan, how the attempt ended) and the turn's end. Permission
//! requests and tool calls have files of their own (`permission_events`, `tool_events`).

use std::time::{Duration, Instant};

use super::tool_events::running_for;
use super::{plural, AppEffect, AppState, ShownAgentQueue, StopState, TurnState};
use crate::app::activity::PhaseTracker;
use crate::app::failure_text::{failure_facts, failure_headline, next_step};
use crate::app::keymap::{QUIT_KEY, SEND_KEY};
use crate::app::transcript::{
    AssistantCell, CellBody, DetailSection, InertText, NoticeCell, NoticeLevel, PermissionOutcome,
    PlanCell, RetryCountdown, ThoughtCell, ToolStatus, UserCell,
};
use crate::orchestrator::{Command, OrchestratorEvent, TurnId, TurnOutcome};
use crate::provider::StopProgress;
use crate::sanitize::untrusted_owned;
use crate::stream::NoticeKind;
use crate::stream::{AgentMessage, Failure, PermissionResolver, PlanEntry, StopStage};

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
                let notice = self
                    .turn
                    .as_mut()
                    .filter(|running| running.id == turn)
                    .and_then(|running| running.failure_notice.take());
                if let (Some(id), Some(step)) = (notice, next_step(&verdict)) {
                    self.transcript.update(id, |body| {
                        if let CellBody::Notice(notice) = body {
                            notice.message.push_str(&format!(" · {step}"));
                        }
                    });
                }
            }
            OrchestratorEvent::RetryScheduled {
                turn,
                attempt,
                max_attempts,
                delay_ms,
                reason,
            } => {
                if self.turn.as_ref().is_some_and(|running| running.id == turn) {
                    let deadline = now + Duration::from_millis(delay_ms);
                    let mut notice = NoticeCell::new(NoticeLevel::Retry, String::new());
                    notice.countdown = Some(RetryCountdown {
                        deadline,
                        attempt,
                        max_attempts,
                        reason: InertText::new(&reason),
                    });
                    self.close_assistant();
                    let id = self.transcript.push(CellBody::Notice(notice.into()));
                    if let Some(running) = self.turn.as_mut() {
                        running.retry = Some((id, deadline));
                    }
                }
            }
            OrchestratorEvent::RetryCancelled { turn } => {
                if let Some(running) = self.turn.as_mut().filter(|running| running.id == turn) {
                    if let Some((id, _)) = running.retry.take() {
                        running.end_shown = true;
                        self.transcript.update(id, |body| {
                            if let CellBody::Notice(notice) = body {
                                if let Some(countdown) = notice.countdown.take() {
                                    notice.level = NoticeLevel::Stopped;
                                    notice.message = format!(
                                        "Retry cancelled: attempt {} of {} was not started",
                                        countdown.attempt, countdown.max_attempts
                                    )
                                    .into();
                                }
                            }
                        });
                    }
                }
            }
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

    fn on_attempt_started(&mut self, turn: TurnId, attempt: u32, max_attempts: u32) {
        let Some(running) = self.turn.as_mut().filter(|running| running.id == turn) else {
            return;
        };
        running.attempt = attempt;
        running.max_attempts = max_attempts;
        running.stop = None;
        running.stop_requested = false;
        running.open_assistant = None;
        running.tools.clear();
        self.live_thinking.settle(&mut self.transcript);
        let earlier_text = std::mem::take(&mut running.attempt_assistant_cells);
        let retry = running.retry.take();
        if attempt > 1 {
            // The failed attempt's partial answer is replaced by this attempt's.
            for id in earlier_text {
                self.transcript.update(id, |body| {
                    if let CellBody::Assistant(answer) = body {
                        answer.superseded = true;
                        answer.retried = true;
                    }
                });
            }
        }
        if let Some((id, _)) = retry {
            self.transcript.update(id, |body| {
                if let CellBody::Notice(notice) = body {
                    if let Some(countdown) = notice.countdown.take() {
                        notice.message = format!(
                            "Retried: attempt {} of {} · {}",
                            countdown.attempt, countdown.max_attempts, countdown.reason
                        )
                        .into();
                    }
                }
            });
        }
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
            AgentMessage::Thinking { delta } => {
                if !self.live_thinking.is_open() {
                    self.close_assistant();
                }
                self.live_thinking.push_delta(
                    &mut self.transcript,
                    &InertText::new(&delta),
                    self.expand_thinking,
                );
            }
            AgentMessage::Thought { text } if self.live_thinking.is_waiting() => {
                self.live_thinking
                    .complete(&mut self.transcript, InertText::new(&text));
            }
            AgentMessage::Thought { text } => {
                let cell = CellBody::Thought(ThoughtCell::new(
                    InertText::new(&text),
                    self.expand_thinking,
                ));
                // Thinking is released after the message it belongs to: show it before that
                // message's text, where it was thought.
                match self.turn.as_ref().and_then(|turn| turn.open_assistant) {
                    Some(answer) => {
                        self.transcript.insert_before(answer, cell);
                    }
                    None => {
                        self.transcript.push(cell);
                    }
                }
            }
            AgentMessage::ToolCall {
                id,
                name,
                input,
                parent_id,
            } => self.on_tool_call(id, &name, &input, parent_id.as_deref(), now),
            AgentMessage::ToolUpdate { id, output } => {
                self.update_tool(&id, |tool| tool.output = InertText::new(&output));
            }
            AgentMessage::ToolCompleted { id, output } => {
                self.update_tool(&id, |tool| {
                    // The final output is authoritative, unless it is empty and some streamed.
                    if !output.is_empty() || tool.output.is_empty() {
                        tool.output = InertText::new(&output);
                    }
                    tool.status = ToolStatus::Done {
                        elapsed: running_for(tool.status, now),
                    };
                });
            }
            AgentMessage::ToolFailed { id, error } => {
                self.update_tool(&id, |tool| {
                    // What the tool had shown stays; the failure is added to it.
                    let error = InertText::new(&error);
                    if tool.output.is_empty() || tool.output.ends_with(error.as_str()) {
                        tool.output = error;
                    } else if !error.is_empty() {
                        tool.output.push_str("\n");
                        tool.output.push(&error);
                    }
                    tool.status = ToolStatus::Failed {
                        elapsed: running_for(tool.status, now),
                    };
                });
            }
            AgentMessage::Completed { stop_reason, .. } => {
                self.finish_running_tools(now);
                self.close_permission_prompts(PermissionOutcome::Unanswered);
                if let Some(rejected) = self
                    .turn
                    .as_mut()
                    .and_then(|turn| turn.last_rejection.take())
                {
                    self.notice(
                        NoticeLevel::Info,
                        format!("The agent ended the turn at the rejection ({rejected})."),
                    );
                }
                if matches!(stop_reason.as_str(), "length" | "max_tokens") {
                    self.notice(
                        NoticeLevel::Warning,
                        format!(
                            "The answer was cut off: the agent reached its output limit ({})",
                            stop_reason
                        ),
                    );
                }
                self.close_assistant();
            }
            AgentMessage::Failed(failure) => {
                self.finish_running_tools(now);
                self.close_permission_prompts(PermissionOutcome::Unanswered);
                self.push_failure(&failure);
            }
            AgentMessage::Cancelled {
                stop_stage,
                elapsed_ms,
            } => {
                self.finish_running_tools(now);
                self.close_permission_prompts(PermissionOutcome::Cancelled {
                    by: PermissionResolver::User,
                });
                self.close_assistant();
                self.notice(NoticeLevel::Stopped, stopped_text(stop_stage, elapsed_ms));
                if let Some(turn) = self.turn.as_mut() {
                    turn.end_shown = true;
                }
            }
            AgentMessage::Notice { kind, message } => {
                match kind {
                    NoticeKind::AgentRetry => {
                        self.supersede_attempt_text();
                        self.notice(
                            NoticeLevel::Info,
                            format!("The agent retried on its own: {message}"),
                        );
                    }
                    NoticeKind::Superseded => {
                        self.supersede_attempt_text();
                        self.notice(
                            NoticeLevel::Info,
                            format!("The partial answer above was replaced: {message}"),
                        );
                    }
                    delivered @ (NoticeKind::SteerDelivered | NoticeKind::FollowUpDelivered) => {
                        // The agent's answer to it starts a new block below.
                        self.close_assistant();
                        let how = if delivered == NoticeKind::SteerDelivered {
                            "steered"
                        } else {
                            "follow-up"
                        };
                        self.notice(NoticeLevel::Info, format!("↳ {how}: {message}"));
                    }
                    NoticeKind::NotDelivered => {
                        // Nothing the user typed is lost: it comes back into the editor.
                        let text = untrusted_owned(&message);
                        self.composer.bring_back(vec![text.clone()]);
                        self.notice(
                            NoticeLevel::Warning,
                            format!(
                                "Not delivered to the agent (the turn ended first), back in the \
                                 editor: {text}"
                            ),
                        );
                    }
                    NoticeKind::PermissionFeedback => {
                        self.notice(
                            NoticeLevel::Info,
                            format!(
                                "↳ rejected with a note: this agent's protocol cannot send a note \
                                 with a rejection, so yours goes to it as the next prompt: \
                                 {message}"
                            ),
                        );
                    }
                    NoticeKind::Compacted => {
                        self.notice(NoticeLevel::Info, message);
                    }
                    NoticeKind::Warning | NoticeKind::FreshSession => {
                        self.notice(NoticeLevel::Warning, message);
                    }
                    // Shown with its kind (an unknown one as it arrived; the notice makes it inert).
                    other => {
                        self.notice(NoticeLevel::Info, format!("{}: {message}", other.wire()));
                    }
                }
            }
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

    /// The latest plan replaces the turn's plan, pinned above the input while the turn runs.
    fn on_plan(&mut self, entries: &[PlanEntry]) {
        if let Some(turn) = self.turn.as_mut() {
            turn.plan = Some(PlanCell::of(entries));
        }
    }

    /// The turn ends: its plan goes into the transcript, below the turn's work, and an
    /// earlier plan is marked as replaced (and collapses).
    fn commit_plan(&mut self) {
        let Some(plan) = self.turn.as_mut().and_then(|turn| turn.plan.take()) else {
            return;
        };
        self.close_assistant();
        let earlier = self
            .transcript
            .cells()
            .iter()
            .rev()
            .find(|cell| matches!(&cell.body, CellBody::Plan(plan) if !plan.superseded))
            .map(|cell| cell.id);
        if let Some(id) = earlier {
            self.transcript.update(id, |body| {
                if let CellBody::Plan(plan) = body {
                    plan.superseded = true;
                    plan.expanded = false;
                }
            });
        }
        self.transcript.push(CellBody::Plan(plan));
    }

    fn append_assistant(&mut self, delta: &str) {
        let shown = InertText::new(delta);
        if shown.is_empty() {
            return;
        }
        let open = self.turn.as_ref().and_then(|turn| turn.open_assistant);
        match open {
            Some(id) => {
                self.transcript.update(id, |body| {
                    if let CellBody::Assistant(answer) = body {
                        answer.append(delta, &shown);
                    }
                });
            }
            None => {
                let mut answer = AssistantCell::default();
                answer.append(delta, &shown);
                let id = self.transcript.push(CellBody::Assistant(answer));
                if let Some(turn) = self.turn.as_mut() {
                    turn.open_assistant = Some(id);
                    turn.attempt_assistant_cells.push(id);
                }
            }
        }
    }

    fn supersede_attempt_text(&mut self) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        turn.open_assistant = None;
        for id in std::mem::take(&mut turn.attempt_assistant_cells) {
            self.transcript.update(id, |body| {
                if let CellBody::Assistant(answer) = body {
                    answer.superseded = true;
                }
            });
        }
    }

    fn push_failure(&mut self, failure: &Failure) {
        let mut facts = failure_facts(failure);
        let mut sections = Vec::new();
        let stderr: Vec<InertText> = InertText::new(&failure.stderr)
            .lines()
            .map(InertText::from)
            .collect();
        if !stderr.is_empty() {
            facts.push(plural(stderr.len(), "stderr line"));
            sections.push(DetailSection {
                title: "stderr (last lines)".into(),
                lines: stderr,
            });
        }
        if !failure.invalid_output_lines.is_empty() {
            facts.push(plural(
                failure.invalid_output_lines.len(),
                "invalid output line",
            ));
            sections.push(DetailSection {
                title: "output lines that did not parse".into(),
                lines: failure
                    .invalid_output_lines
                    .iter()
                    .flat_map(|line| {
                        InertText::new(line)
                            .lines()
                            .map(InertText::from)
                            .collect::<Vec<_>>()
                    })
                    .collect(),
            });
        }
        let mut notice = NoticeCell::new(
            NoticeLevel::Error,
            failure_headline(failure.reason.as_str(), &failure.message),
        );
        if sections.is_empty() {
            if !facts.is_empty() {
                notice
                    .message
                    .push_str(&format!(" · {}", facts.join(" · ")));
            }
        } else {
            notice.details_summary = facts.join(" · ").into();
            notice.details = sections;
        }
        self.close_assistant();
        let id = self.transcript.push(CellBody::Notice(notice.into()));
        if let Some(turn) = self.turn.as_mut() {
            turn.end_shown = true;
            turn.failure_notice = Some(id);
        }
    }

    fn on_turn_ended(&mut self, outcome: TurnOutcome, now: Instant) {
        self.finish_running_tools(now);
        self.commit_plan();
        self.close_permission_prompts(if outcome == TurnOutcome::Cancelled {
            PermissionOutcome::Cancelled {
                by: PermissionResolver::User,
            }
        } else {
            PermissionOutcome::Unanswered
        });
        self.live_thinking.settle(&mut self.transcript);
        let end_shown = self.turn.as_ref().is_some_and(|turn| turn.end_shown);
        if let Some((id, _)) = self.turn.as_ref().and_then(|turn| turn.retry) {
            self.transcript.update(id, |body| {
                if let CellBody::Notice(notice) = body {
                    notice.countdown = None;
                    notice.message = "Retry abandoned".into();
                }
            });
        }
        if !end_shown {
            match &outcome {
                TurnOutcome::Completed => {}
                TurnOutcome::Failed { reason, message } => {
                    self.push_failure(&Failure {
                        reason: *reason,
                        message: message.clone(),
                        ..Failure::default()
                    });
                }
                TurnOutcome::Cancelled
                    if self.turn.as_ref().is_some_and(|turn| turn.compaction) =>
                {
                    self.notice(
                        NoticeLevel::Stopped,
                        "Compaction stopped · the conversation stays as it was",
                    );
                }
                TurnOutcome::Cancelled => {
                    self.notice(NoticeLevel::Stopped, "Stopped · what was shown stays");
                }
            }
        }
        // A compaction is not retried: `/retry` still means the last prompt's turn.
        if !self.turn.take().is_some_and(|turn| turn.compaction) {
            self.last_outcome = Some(outcome);
        }
    }

    /// After a stopped turn the orchestrator keeps the queue waiting: its prompts come back into
    /// the editor (before any draft), for the user to edit, send or drop.
    fn take_back_queue(&mut self) -> Vec<AppEffect> {
        if self.quitting || self.queued.is_empty() {
            return Vec::new();
        }
        let queued = std::mem::take(&mut self.queued);
        // One prompt at a time, each still its own prompt (a draft comes after them).
        self.composer
            .bring_back(queued.iter().map(ToString::to_string).collect());
        let how = if queued.len() > 1 {
            format!("one at a time: {SEND_KEY} sends, {QUIT_KEY} clears, and the next comes in")
        } else {
            format!("{SEND_KEY} sends, {QUIT_KEY} clears")
        };
        self.notice(
            NoticeLevel::Info,
            format!(
                "{} back in the editor, {how}",
                plural(queued.len(), "queued prompt")
            ),
        );
        queued
            .iter()
            .map(|_| AppEffect::Command(Command::RemoveQueued(0)))
            .collect()
    }
}

/// How a stop ended the turn, in the user's words: what the agent did at which stage, and how
/// long after the stop began (an in-band cancel or an interrupt often ends a turn in
/// milliseconds: said as such, not "0.0 s").
fn stopped_text(stage: StopStage, elapsed_ms: u64) -> String {
    let after = if elapsed_ms < 1000 {
        format!("{elapsed_ms} ms")
    } else {
        format!("{:.1} s", elapsed_ms as f64 / 1000.0)
    };
    let how = match stage {
        StopStage::Cancel => format!("the agent cancelled the turn when asked ({after})"),
        StopStage::Interrupt => format!("the agent ended on the interrupt (Ctrl+C) in {after}"),
        StopStage::Grace => format!("the agent exited {after} after the interrupt"),
        StopStage::Kill => format!("the agent was killed after {after} (it ignored the interrupt)"),
    };
    format!("Stopped: {how} · what was shown stays")
}

#[cfg(test)]
mod tests {
    use crate::app::failure_text::tests::{enabled, failure};
    use crate::config::RetryPolicy;

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

    /// The chat's failure notice and whether a countdown follows, when the orchestrator's
    /// machine (holding `machine_policy`) and the chat (holding `chat_policy`) see a retryable
    /// failure of attempt 1, after `switch_to` was set mid-turn (if any).
    fn notice_after_failure(
        machine_policy: RetryPolicy,
        chat_policy: RetryPolicy,
        switch_to: Option<RetryPolicy>,
    ) -> (String, bool) {
        use crate::app::state::{AppState, StartupInfo};
        use crate::app::transcript::CellBody;
        use crate::orchestrator::fsm::{Effect, Input, Machine};
        use crate::orchestrator::{Command, OrchestratorEvent};
        use crate::provider::SessionRef;
        use crate::stream::AgentMessage;

        let now = std::time::Instant::now();
        let mut machine = Machine::new(machine_policy, SessionRef::New);
        let mut chat = AppState::new(StartupInfo {
            retry_policy: chat_policy,
            ..StartupInfo::default()
        });
        let feed = |effects: Vec<Effect>, chat: &mut AppState| {
            for effect in effects {
                if let Effect::Emit(event) = effect {
                    chat.on_orchestrator_event(event, now);
                }
            }
        };
        let effects = machine.handle(Input::Command(Command::Submit("hi".into())));
        feed(effects, &mut chat);
        if let Some(policy) = switch_to {
            let effects = machine.handle(Input::Command(Command::SetRetryPolicy(policy)));
            feed(effects, &mut chat);
        }
        let effects = machine.handle(Input::Agent {
            turn: 1,
            attempt: 1,
            message: AgentMessage::Failed(failure("500 fake internal server error", Some(500))),
        });
        let retry_scheduled = effects.iter().any(|effect| {
            matches!(
                effect,
                Effect::Emit(OrchestratorEvent::RetryScheduled { .. })
            )
        });
        feed(effects, &mut chat);
        let notices: Vec<_> = chat
            .transcript
            .cells()
            .iter()
            .filter_map(|cell| match &cell.body {
                CellBody::Notice(notice) => Some(notice.clone()),
                _ => None,
            })
            .collect();
        let countdown = notices.iter().any(|notice| notice.countdown.is_some());
        assert_eq!(
            countdown, retry_scheduled,
            "the countdown follows the machine"
        );
        (notices[0].message.as_str().to_owned(), countdown)
    }

    #[test]
    fn the_notice_says_what_the_machine_decided_even_when_the_policy_changed_mid_turn() {
        // Retry was on when the turn started and turned off during it: the machine does not
        // retry, and the notice says retry is off (the attempt count of the turn said 3).
        let (message, countdown) =
            notice_after_failure(enabled(), enabled(), Some(RetryPolicy::off()));
        assert!(!countdown);
        assert!(
            message.ends_with("automatic retry is off (Ctrl+X → Settings) · Ctrl+X → Retry or /retry to try again"),
            "{message}"
        );
        // Turned on during the turn: the machine retries, and the notice promises nothing else.
        let (message, countdown) =
            notice_after_failure(RetryPolicy::off(), RetryPolicy::off(), Some(enabled()));
        assert!(countdown);
        assert_eq!(message, "Failed: 500 fake internal server error");
        // The chat's own copy of the policy plays no part: the machine's verdict is rendered.
        let (message, countdown) = notice_after_failure(enabled(), RetryPolicy::off(), None);
        assert!(countdown);
        assert_eq!(message, "Failed: 500 fake internal server error");
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

#[cfg(test)]
mod sub_agent_tests {
    use std::time::Instant;

    use serde_json::json;

    use crate::app::state::{AppState, StartupInfo};
    use crate::app::transcript::{CellBody, ToolCell, ToolStatus};
    use crate::orchestrator::{OrchestratorEvent, TurnOutcome};
    use crate::stream::AgentMessage;

    fn send(state: &mut AppState, message: AgentMessage) {
        state.on_orchestrator_event(
            OrchestratorEvent::Message {
                turn: 1,
                attempt: 1,
                message,
            },
            Instant::now(),
        );
    }

    fn call(id: &str, name: &str, parent: Option<&str>) -> AgentMessage {
        AgentMessage::ToolCall {
            id: id.into(),
            name: name.into(),
            input: json!({"command": format!("run {id}")}),
            parent_id: parent.map(str::to_owned),
        }
    }

    fn tools(state: &AppState) -> Vec<ToolCell> {
        state
            .transcript
            .cells()
            .iter()
            .filter_map(|cell| match &cell.body {
                CellBody::Tool(tool) => Some((**tool).clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_sub_agents_calls_nest_under_its_call_and_end_with_the_attempt() {
        let mut state = AppState::new(StartupInfo::default());
        state.on_orchestrator_event(
            OrchestratorEvent::TurnStarted {
                turn: 1,
                prompt: "go".into(),
            },
            Instant::now(),
        );
        send(&mut state, call("agent", "Agent", None));
        send(&mut state, call("one", "Bash", Some("agent")));
        send(&mut state, call("deeper", "Bash", Some("one")));
        send(
            &mut state,
            AgentMessage::ToolCompleted {
                id: "deeper".into(),
                output: "done deep".into(),
            },
        );
        send(&mut state, call("two", "Bash", Some("agent")));
        // A parent never shown: the call is a row of its own.
        send(&mut state, call("stray", "Bash", Some("unknown")));
        let shown = tools(&state);
        assert_eq!(shown.len(), 2, "the agent's call and the stray one");
        let agent = &shown[0];
        assert_eq!(agent.children.len(), 2);
        assert_eq!(agent.children[0].summary, "run one");
        assert_eq!(agent.children[0].children[0].output, "done deep");
        assert!(matches!(
            agent.children[0].children[0].status,
            ToolStatus::Done { .. }
        ));
        assert_eq!(shown[1].summary, "run stray");

        state.on_orchestrator_event(
            OrchestratorEvent::TurnEnded {
                turn: 1,
                outcome: TurnOutcome::Completed,
            },
            Instant::now(),
        );
        let agent = &tools(&state)[0];
        assert!(matches!(agent.status, ToolStatus::Interrupted { .. }));
        assert!(matches!(
            agent.children[1].status,
            ToolStatus::Interrupted { .. }
        ));
        assert!(
            matches!(
                agent.children[0].children[0].status,
                ToolStatus::Done { .. }
            ),
            "what ended stays ended"
        );
    }
}
