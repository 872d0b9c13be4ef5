//! What a failed attempt's notice says: the agent's own error first, then the facts that mean
//! something (a non-zero exit, a signal, an HTTP status), then what happens next: an automatic
//! retry (its countdown follows), or the keys that retry by hand and, when agentty will not
//! retry on its own, why not. What happens next is the orchestrator's verdict
//! (`orchestrator::verdict`), rendered here and never re-derived.
//!
//! An HTTP status is said once: in the agent's own words when its message names it
//! (`Request rejected (429)`), else as a fact (`HTTP 429`); the reason it is not retried says
//! the cause in words alone (`not authenticated`).

use super::keymap::MENU_KEY;
use crate::orchestrator::verdict::{FailureVerdict, NextStep};
use crate::provider::http_status::{http_statuses_in, StatusSource};
use crate::stream::Failure;

/// The keys that retry a failed turn by hand.
pub(crate) fn retry_keys() -> String {
    format!("{MENU_KEY} → Retry or /retry to try again")
}

/// "Failed: <the agent's error>", or the reason when the agent gave no message.
pub(crate) fn failure_headline(reason: &str, message: &str) -> String {
    if message.trim().is_empty() {
        format!("Failed ({reason})")
    } else {
        format!("Failed: {message}")
    }
}

/// The facts worth a glance: an exit code other than 0 (pi and Gemini exit 0 or encode other
/// things in it), a signal, an HTTP status the agent's message does not already name.
pub(crate) fn failure_facts(failure: &Failure) -> Vec<String> {
    let mut facts = Vec::new();
    let named = |status: &u16| {
        http_statuses_in(&failure.message, StatusSource::ErrorMessage).contains(status)
    };
    if let Some(status) = failure.http_status.filter(|status| !named(status)) {
        facts.push(format!("HTTP {status}"));
    }
    if let Some(code) = failure.exit_code.filter(|code| *code != 0) {
        facts.push(format!("exit code {code}"));
    }
    if let Some(signal) = failure.signal {
        facts.push(format!("signal {signal}"));
    }
    facts
}

/// What happens after a failure, as the orchestrator decided it, or `None` when it goes on on
/// its own (a retry, whose countdown says so, or a fresh session, whose notice says so).
pub(crate) fn next_step(verdict: &FailureVerdict) -> Option<String> {
    match verdict.next {
        NextStep::RetryIn { .. } | NextStep::FreshSession => None,
        NextStep::NotRetryable => Some(format!(
            "not retried automatically: {} · {}",
            cause_in_words(verdict.classification.cause),
            retry_keys()
        )),
        NextStep::RetryOff => Some(format!(
            "automatic retry is off ({MENU_KEY} → Settings) · {}",
            retry_keys()
        )),
        NextStep::AgentRetries => Some(format!(
            "not retried by agentty: this agent retries by itself, and agentty does not retry \
             on top of it · {}",
            retry_keys()
        )),
        NextStep::WaitTooLong { wait_ms } => Some(format!(
            "not retried automatically: the API asks to wait {}, longer than agentty waits by \
             itself · {}",
            wait_in_words(wait_ms),
            retry_keys()
        )),
        NextStep::GaveUp { attempts } => Some(format!(
            "gave up after {attempts} attempts · {}",
            retry_keys()
        )),
        NextStep::Stopped => Some(format!(
            "not retried: the turn was being stopped · {}",
            retry_keys()
        )),
    }
}

/// "45 s", "5 min".
fn wait_in_words(ms: u64) -> String {
    let seconds = ms.div_ceil(1000);
    if seconds < 120 {
        format!("{seconds} s")
    } else {
        format!("{} min", seconds.div_ceil(60))
    }
}

/// A classifier's cause without the status it names (`not authenticated (HTTP 401)`: `not
/// authenticated`), which the line says already.
fn cause_in_words(cause: &str) -> &str {
    cause.split(" (HTTP ").next().unwrap_or(cause)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::RetryPolicy;

    /// A failure of the agent's own (exit 0), with its HTTP status; also for the state's tests.
    pub(crate) fn failure(message: &str, http_status: Option<u16>) -> Failure {
        Failure {
            reason: crate::stream::FailureReason::AgentError,
            message: message.into(),
            exit_code: Some(0),
            http_status,
            ..Failure::default()
        }
    }

    /// The default retry policy, turned on.
    pub(crate) fn enabled() -> RetryPolicy {
        RetryPolicy {
            enabled: true,
            ..RetryPolicy::default()
        }
    }

    #[test]
    fn an_auth_error_says_it_is_not_retried_and_why() {
        let auth = failure("401 Incorrect API key provided", Some(401));
        let step = next_step(&FailureVerdict::judge(&enabled(), 1, &auth, false));
        assert_eq!(
            step.as_deref(),
            Some("not retried automatically: not authenticated · Ctrl+X → Retry or /retry to try again")
        );
    }

    #[test]
    fn a_retryable_error_names_the_keys_unless_a_retry_follows() {
        let server_error = failure("500 fake internal server error", Some(500));
        let step = |policy: &RetryPolicy, attempt| {
            next_step(&FailureVerdict::judge(
                policy,
                attempt,
                &server_error,
                false,
            ))
        };
        assert_eq!(step(&enabled(), 1), None);
        assert!(step(&enabled(), 3)
            .unwrap()
            .starts_with("gave up after 3 attempts · Ctrl+X"));
        let off = RetryPolicy {
            enabled: false,
            ..RetryPolicy::default()
        };
        assert!(step(&off, 1).unwrap().starts_with("automatic retry is off"));
        let verdict = FailureVerdict::judge(&enabled(), 1, &server_error, false);
        assert!(next_step(&verdict.for_agent_retrying_itself())
            .unwrap()
            .starts_with("not retried by agentty: this agent retries by itself"));
        assert!(next_step(&FailureVerdict::stopped(&server_error))
            .unwrap()
            .starts_with("not retried: the turn was being stopped · Ctrl+X"));
    }

    #[test]
    fn exit_code_zero_is_not_a_fact() {
        assert_eq!(
            failure_facts(&failure("x", Some(500))),
            ["HTTP 500".to_owned()]
        );
        // A status the agent's message names is not said again.
        for message in [
            "500 fake internal server error",
            "API Error: Request rejected (429) · Number of request tokens has exceeded your rate limit",
            "exceeded retry limit, last status: 429 Too Many Requests",
        ] {
            let status = if message.contains("500") { 500 } else { 429 };
            assert_eq!(failure_facts(&failure(message, Some(status))), Vec::<String>::new());
        }
        // Another status than the message names still is.
        assert_eq!(
            failure_facts(&failure("status 429", Some(500))),
            ["HTTP 500".to_owned()]
        );
        let crashed = Failure {
            exit_code: Some(1),
            ..Failure::default()
        };
        assert_eq!(failure_facts(&crashed), ["exit code 1".to_owned()]);
    }
}
