//! What a failed attempt's notice says: the agent's own error first, then the facts that mean
//! something (a non-zero exit, a signal, an HTTP status), then what happens next: an automatic
//! retry (its countdown follows), or the keys that retry by hand and, when agentty will not
//! retry on its own, why not. What happens next is the orchestrator's verdict
//! (`orchestrator::verdict`), rendered here and never re-derived.

use super::keymap::MENU_KEY;
use crate::orchestrator::verdict::{FailureVerdict, NextStep};
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
/// things in it), a signal, an HTTP status.
pub(crate) fn failure_facts(failure: &Failure) -> Vec<String> {
    let mut facts = Vec::new();
    if let Some(status) = failure.http_status {
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
            verdict.classification.cause,
            retry_keys()
        )),
        NextStep::RetryOff => Some(format!(
            "automatic retry is off ({MENU_KEY} → Settings) · {}",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RetryPolicy;

    fn failure(message: &str, http_status: Option<u16>) -> Failure {
        Failure {
            reason: crate::stream::FailureReason::AgentError,
            message: message.into(),
            exit_code: Some(0),
            http_status,
            ..Failure::default()
        }
    }

    fn enabled() -> RetryPolicy {
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
            Some("not retried automatically: not authenticated (HTTP 401) · Ctrl+X → Retry or /retry to try again")
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
        assert!(step(&RetryPolicy::default(), 1)
            .unwrap()
            .starts_with("automatic retry is off"));
        assert!(next_step(&FailureVerdict::stopped(&server_error))
            .unwrap()
            .starts_with("not retried: the turn was being stopped · Ctrl+X"));
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
            notice_after_failure(enabled(), enabled(), Some(RetryPolicy::default()));
        assert!(!countdown);
        assert!(
            message.ends_with("automatic retry is off (Ctrl+X → Settings) · Ctrl+X → Retry or /retry to try again"),
            "{message}"
        );
        // Turned on during the turn: the machine retries, and the notice promises nothing else.
        let (message, countdown) = notice_after_failure(
            RetryPolicy::default(),
            RetryPolicy::default(),
            Some(enabled()),
        );
        assert!(countdown);
        assert_eq!(message, "Failed: 500 fake internal server error · HTTP 500");
        // The chat's own copy of the policy plays no part: the machine's verdict is rendered.
        let (message, countdown) = notice_after_failure(enabled(), RetryPolicy::default(), None);
        assert!(countdown);
        assert_eq!(message, "Failed: 500 fake internal server error · HTTP 500");
    }

    #[test]
    fn exit_code_zero_is_not_a_fact() {
        assert_eq!(
            failure_facts(&failure("x", Some(500))),
            ["HTTP 500".to_owned()]
        );
        let crashed = Failure {
            exit_code: Some(1),
            ..Failure::default()
        };
        assert_eq!(failure_facts(&crashed), ["exit code 1".to_owned()]);
    }
}
