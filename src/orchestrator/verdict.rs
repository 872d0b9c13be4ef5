//! The one judgement of a failed attempt: what happens next, and why.
//!
//! The state machine (`fsm`) judges each failure once, with the retry policy it holds at that
//! moment, acts on the verdict and reports it (`OrchestratorEvent::FailureJudged`); the chat only
//! renders it (`app::failure_text`). Nothing else re-derives it, so what the user reads cannot
//! drift from what the orchestrator does, even when the policy changes during a turn.

use super::classify::{classify_failure, Classification, Retryability};
use crate::config::{RetryPolicy, Transport};
use crate::stream::Failure;

/// The longest wait agentty takes on a failure's own word (`Retry-After`, "try again in ..."),
/// unless the policy allows longer waits: past it the turn fails and says how long the API asked
/// for (Claude Code likewise gives up past 60 s).
pub(crate) const LONGEST_RETRY_AFTER_MS: u64 = 60_000;

/// Whether the agent retries failed model requests by itself, beyond agentty's reach: then
/// agentty does not retry on top of it (a retry of a retry multiplies the requests). Every
/// built-in backend runs its CLI with the CLI's own retries off, on every transport (pi,
/// Claude Code and its ACP adapter, Codex and its ACP adapter, Gemini CLI), and the demo agent
/// has none; an ACP agent defined in the config is one agentty cannot tell to stop retrying.
pub fn agent_retries_itself(provider: &str, transport: Transport) -> bool {
    transport == Transport::Acp
        && crate::provider::PROVIDER_NAMES
            .iter()
            .all(|known| *known != provider)
}

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
    /// Retryable, but the agent retries by itself ([`agent_retries_itself`]): agentty does not
    /// retry on top of it.
    AgentRetries,
    /// Retryable, but the failure asks to wait `wait_ms`, longer than agentty waits by itself.
    WaitTooLong { wait_ms: u64 },
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
            Retryability::Retryable => match classification.retry_after_ms {
                Some(wait_ms) if wait_ms > LONGEST_RETRY_AFTER_MS.max(policy.max_delay_ms) => {
                    NextStep::WaitTooLong { wait_ms }
                }
                // The policy's wait, or longer where the failure asks for it.
                asked => NextStep::RetryIn {
                    attempt: next_attempt,
                    max_attempts: policy.max_attempts,
                    delay_ms: policy
                        .delay_after_attempt_ms(attempt)
                        .max(asked.unwrap_or(0)),
                },
            },
        };
        Self {
            classification,
            next,
        }
    }

    /// The verdict for an agent that retries by itself: what agentty would retry, it leaves to
    /// the agent.
    pub(crate) fn for_agent_retrying_itself(self) -> Self {
        let next = match self.next {
            NextStep::RetryIn { .. } | NextStep::RetryOff | NextStep::GaveUp { .. } => {
                NextStep::AgentRetries
            }
            other => other,
        };
        Self { next, ..self }
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
        let off = RetryPolicy {
            enabled: false,
            ..RetryPolicy::default()
        };
        assert_eq!(
            FailureVerdict::judge(&off, 1, &server_error(), false).next,
            NextStep::RetryOff
        );
    }

    #[test]
    fn retry_is_on_by_default_for_what_is_transient() {
        let policy = RetryPolicy::default();
        assert!(policy.enabled);
        for failure in [
            server_error(),
            Failure {
                message: "429 Too Many Requests".into(),
                http_status: Some(429),
                ..Failure::default()
            },
            Failure {
                message: "socket hang up (ECONNRESET)".into(),
                ..Failure::default()
            },
        ] {
            assert!(
                matches!(
                    FailureVerdict::judge(&policy, 1, &failure, false).next,
                    NextStep::RetryIn { attempt: 2, .. }
                ),
                "{failure:?}"
            );
        }
        let auth = Failure {
            message: "401 invalid api key".into(),
            http_status: Some(401),
            ..Failure::default()
        };
        assert_eq!(
            FailureVerdict::judge(&policy, 1, &auth, false).next,
            NextStep::NotRetryable
        );
        // Bounded: the last attempt the policy allows gives up.
        assert_eq!(
            FailureVerdict::judge(&policy, policy.max_attempts, &server_error(), false).next,
            NextStep::GaveUp {
                attempts: policy.max_attempts
            }
        );
    }

    #[test]
    fn a_retry_after_lengthens_the_wait_and_one_too_long_is_not_waited_for() {
        let policy = enabled(3);
        let asked = |message: &str| Failure {
            message: message.into(),
            http_status: Some(429),
            ..Failure::default()
        };
        assert_eq!(
            FailureVerdict::judge(&policy, 1, &asked("429: retry-after: 7"), false).next,
            NextStep::RetryIn {
                attempt: 2,
                max_attempts: 3,
                delay_ms: 7_000
            }
        );
        // A shorter ask than the policy's wait keeps the policy's.
        assert_eq!(
            FailureVerdict::judge(&policy, 1, &asked("please try again in 0.5s"), false).next,
            NextStep::RetryIn {
                attempt: 2,
                max_attempts: 3,
                delay_ms: policy.delay_after_attempt_ms(1)
            }
        );
        assert_eq!(
            FailureVerdict::judge(&policy, 1, &asked("Please retry in 5m"), false).next,
            NextStep::WaitTooLong { wait_ms: 300_000 }
        );
    }

    #[test]
    fn agentty_does_not_retry_on_top_of_an_agent_that_retries_itself() {
        assert!(agent_retries_itself("my-acp-agent", Transport::Acp));
        for provider in crate::provider::PROVIDER_NAMES {
            for transport in [Transport::Acp, Transport::Json, Transport::Rpc] {
                assert!(!agent_retries_itself(provider, transport), "{provider}");
            }
        }
        let verdict = FailureVerdict::judge(&enabled(3), 1, &server_error(), false)
            .for_agent_retrying_itself();
        assert_eq!(verdict.next, NextStep::AgentRetries);
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
