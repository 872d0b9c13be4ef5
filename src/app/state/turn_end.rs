//! How an attempt and its turn end in the transcript: completed (a rejection the agent ended
//! at, an answer cut off), failed (the failure notice with its details), stopped (how, and how
//! fast), and the turn's end (its plan committed, open prompts closed, what was not said yet).

use std::time::Instant;

use super::{plural, AppState};
use crate::app::failure_text::{failure_facts, failure_headline};
use crate::app::transcript::{
    CellBody, DetailSection, InertText, NoticeCell, NoticeLevel, PermissionOutcome,
};
use crate::orchestrator::TurnOutcome;
use crate::stream::{Failure, PermissionResolver, StopStage};

impl AppState {
    /// The attempt completed: what it left open is closed, and what the user should know about
    /// how it ended is said.
    pub(super) fn on_attempt_completed(&mut self, stop_reason: &str, now: Instant) {
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
        if matches!(stop_reason, "length" | "max_tokens") {
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

    pub(super) fn on_attempt_failed(&mut self, failure: &Failure, now: Instant) {
        self.finish_running_tools(now);
        self.close_permission_prompts(PermissionOutcome::Unanswered);
        self.push_failure(failure);
    }

    /// The stop ended the attempt: how, at which stage and how long after the stop began.
    pub(super) fn on_attempt_cancelled(
        &mut self,
        stop_stage: StopStage,
        elapsed_ms: u64,
        now: Instant,
    ) {
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

    pub(super) fn on_turn_ended(&mut self, outcome: TurnOutcome, now: Instant) {
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
        self.abandon_retry();
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
        let notices = chat.transcript.pick_all(|body| match body {
            CellBody::Notice(notice) => Some(notice.clone()),
            _ => None,
        });
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
