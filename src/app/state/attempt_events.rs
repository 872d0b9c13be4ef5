//! A turn's attempts and the orchestrator's retries between them: a new attempt replaces the
//! failed one's partial answer, a retry shows its countdown (then "Retried", "cancelled" or
//! "abandoned"), and the failure notice learns the next step the orchestrator judged.

use std::time::{Duration, Instant};

use super::AppState;
use crate::app::failure_text::next_step;
use crate::app::transcript::{CellBody, InertText, NoticeCell, NoticeLevel, RetryCountdown};
use crate::orchestrator::verdict::FailureVerdict;
use crate::orchestrator::TurnId;

impl AppState {
    pub(super) fn on_attempt_started(&mut self, turn: TurnId, attempt: u32, max_attempts: u32) {
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

    /// The orchestrator judged the failure of `turn`: its notice says what comes next.
    pub(super) fn on_failure_judged(&mut self, turn: TurnId, verdict: &FailureVerdict) {
        let notice = self
            .turn
            .as_mut()
            .filter(|running| running.id == turn)
            .and_then(|running| running.failure_notice.take());
        if let (Some(id), Some(step)) = (notice, next_step(verdict)) {
            self.transcript.update(id, |body| {
                if let CellBody::Notice(notice) = body {
                    notice.message.push_str(&format!(" · {step}"));
                }
            });
        }
    }

    /// A retry of the running turn waits: a countdown until `attempt` starts, `delay_ms` after
    /// `now`.
    pub(super) fn on_retry_scheduled(
        &mut self,
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        reason: &str,
        now: Instant,
    ) {
        let deadline = now + Duration::from_millis(delay_ms);
        let mut notice = NoticeCell::new(NoticeLevel::Retry, String::new());
        notice.countdown = Some(RetryCountdown {
            deadline,
            attempt,
            max_attempts,
            reason: InertText::new(reason),
        });
        self.close_assistant();
        let id = self.transcript.push(CellBody::Notice(notice.into()));
        if let Some(running) = self.turn.as_mut() {
            running.retry = Some((id, deadline));
        }
    }

    /// The user stopped the turn while its retry waited: the countdown says it was not started.
    pub(super) fn on_retry_cancelled(&mut self, turn: TurnId) {
        let Some(running) = self.turn.as_mut().filter(|running| running.id == turn) else {
            return;
        };
        let Some((id, _)) = running.retry.take() else {
            return;
        };
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

    /// The turn ended while a retry waited: its countdown stops.
    pub(super) fn abandon_retry(&mut self) {
        if let Some((id, _)) = self.turn.as_ref().and_then(|turn| turn.retry) {
            self.transcript.update(id, |body| {
                if let CellBody::Notice(notice) = body {
                    notice.countdown = None;
                    notice.message = "Retry abandoned".into();
                }
            });
        }
    }
}
