//! The one judgement of a failed attempt: what happens next, and why.
//!
//! The state machine (`fsm`) judges each failure once, with the retry policy it holds at that
//! moment, acts on the verdict and reports it (`OrchestratorEvent::FailureJudged`); the chat only
//! renders it (`app::failure_text`). Nothing else re-derives it, so what the user reads cannot
//! drift from what the orchestrator does, even when the policy changes during a turn.

use super::classify::{classify_failure, Classification, Retryability};
use crate::config::RetryPolicy;
use crate::stream::Failure;

/// What the orchestrator decided about a failed attempt, with the classification it used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureVerdict {
    pub(crate) classification: Classification,
    pub(crate) next: NextStep,
}

/// What follows a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NextStep {
    /// Attempt `attempt` of `max_attempts` starts after `delay_ms`, unless the user stops it.
    RetryIn {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
    },
    /// The agent lost the session the turn continued: the turn goes on at once in a fresh one.
    FreshSession,
    /// Not retried: the classification says another try would not help.
    NotRetryable,
    /// Retryable, but automatic retry is off.
    RetryOff,
    /// Retryable, but it was the last attempt the policy allows (`attempts` were made).
    GaveUp { attempts: u32 },
    /// The user had asked to stop the turn: a failure that raced the stop is not retried.
    Stopped,
}

impl FailureVerdict {
    /// The verdict on attempt `attempt` of a turn that failed with `failure` under `policy`.
    /// `continues_session`: the turn continued an earlier agent session (only then can a lost
    /// session be replaced by a fresh one).
    pub fn judge(
        policy: &RetryPolicy,
        attempt: u32,
        failure: &Failure,
        continues_session: bool,
    ) -> Self {
        let classification = classify_failure(failure);
        let next_attempt = attempt + 1;
        let next = match classification.retryability {
            Retryability::FreshSession if continues_session => NextStep::FreshSession,
            Retryability::FreshSession | Retryability::NotRetryable => NextStep::NotRetryable,
            Retryability::Retryable if !policy.enabled => NextStep::RetryOff,
            Retryability::Retryable if next_attempt > policy.max_attempts => {
                NextStep::GaveUp { attempts: attempt }
            }
            Retryability::Retryable => NextStep::RetryIn {
                attempt: next_attempt,
                max_attempts: policy.max_attempts,
                delay_ms: policy.delay_after_attempt_ms(attempt),
            },
        };
        Self {
            classification,
            next,
        }
    }

    /// The verdict on a failure that ended an attempt the user was stopping.
    pub(crate) fn stopped(failure: &Failure) -> Self {
        Self {
            classification: classify_failure(failure),
            next: NextStep::Stopped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_error() -> Failure {
        Failure {
            message: "500 internal server error".into(),
            http_status: Some(500),
            ..Failure::default()
        }
    }

    fn enabled(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            enabled: true,
            max_attempts,
            ..RetryPolicy::default()
        }
    }

    #[test]
    fn a_retryable_failure_is_retried_while_attempts_remain() {
        let policy = enabled(3);
        let verdict = FailureVerdict::judge(&policy, 1, &server_error(), false);
        assert_eq!(
            verdict.next,
            NextStep::RetryIn {
                attempt: 2,
                max_attempts: 3,
                delay_ms: policy.delay_after_attempt_ms(1),
            }
        );
        assert_eq!(verdict.classification.retryability, Retryability::Retryable);
        assert_eq!(
            FailureVerdict::judge(&policy, 3, &server_error(), false).next,
            NextStep::GaveUp { attempts: 3 }
        );
        assert_eq!(
            FailureVerdict::judge(&RetryPolicy::default(), 1, &server_error(), false).next,
            NextStep::RetryOff
        );
    }

    #[test]
    fn a_lost_session_goes_on_fresh_only_when_one_was_continued() {
        let lost = Failure {
            reason: crate::stream::FailureReason::SessionLost,
            message: "no conversation found".into(),
            ..Failure::default()
        };
        let policy = RetryPolicy::default();
        assert_eq!(
            FailureVerdict::judge(&policy, 1, &lost, true).next,
            NextStep::FreshSession
        );
        assert_eq!(
            FailureVerdict::judge(&policy, 1, &lost, false).next,
            NextStep::NotRetryable
        );
    }
}
