//! Retryable or not, from a failure's facts alone (pure: no IO, no provider name).
//!
//! The facts are judged from the most to the least precise: the failure reason the provider layer
//! set (`start_failed`, `killed_by_signal`), the HTTP status the agent reported (the provider
//! layer sets it, also where a CLI gives it only as its exit code), then the status or words in
//! the failure message, then in the stderr tail. Statuses in texts are read by the provider
//! layer's one reader ([`http_statuses_in`]). An exit code alone says nothing here: what it
//! means belongs to the backend whose CLI gave it. Anything not recognised is not retried:
//! re-running an agent that failed for an unknown reason may repeat its tool calls for nothing.
//!
//! Within one text, "do not retry" words win over "retry" words: a message that mentions both
//! an authentication problem and a retry is still an authentication problem.

use crate::provider::errors::is_dropped_connection;
use crate::provider::http_status::{http_statuses_in, StatusSource};
use crate::stream::{Failure, FailureReason};

/// Whether a failed attempt is worth another try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retryability {
    Retryable,
    NotRetryable,
    /// The agent lost the session it was asked to continue: go on in a fresh one, once.
    FreshSession,
}

/// The verdict, a short human cause (shown in the retry countdown), and how long the failure
/// says to wait before another try, where it says (an HTTP `Retry-After` the agent passed on,
/// "try again in 2s", Google's `retryDelay`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Classification {
    pub(crate) retryability: Retryability,
    pub(crate) cause: &'static str,
    pub(crate) retry_after_ms: Option<u64>,
}

#[cfg(test)]
pub(crate) fn classify(failure: &Failure) -> Retryability {
    classify_failure(failure).retryability
}

pub(crate) fn classify_failure(failure: &Failure) -> Classification {
    let retry_after_ms =
        retry_after_ms(&failure.message).or_else(|| retry_after_ms(stderr_tail(&failure.stderr)));
    Classification {
        retry_after_ms,
        ..classify_facts(failure)
    }
}

/// The classification of `failure`'s facts, most precise first (see the module's doc).
fn classify_facts(failure: &Failure) -> Classification {
    use Retryability::{NotRetryable, Retryable};
    let verdict = |retryability, cause| Classification {
        retryability,
        cause,
        retry_after_ms: None,
    };
    match failure.reason {
        FailureReason::StartFailed => {
            return verdict(NotRetryable, "the agent could not be started")
        }
        // The runner reports a stop we asked for as `terminal.cancelled`, so this signal came
        // from elsewhere (OOM killer, a crash).
        FailureReason::KilledBySignal => {
            return verdict(Retryable, "the agent was killed by a signal")
        }
        FailureReason::SessionLost => {
            return verdict(
                Retryability::FreshSession,
                "the agent could not find its session",
            )
        }
        _ => {}
    }
    if let Some(found) = failure.http_status.and_then(status_classification) {
        return found;
    }
    if let Some(found) = classify_text(&failure.message, StatusSource::ErrorMessage) {
        return found;
    }
    if let Some(found) = classify_text(stderr_tail(&failure.stderr), StatusSource::Diagnostics) {
        return found;
    }
    verdict(NotRetryable, "unrecognised failure")
}

const NOT_RETRYABLE_WORDS: [(&str, &str); 24] = [
    // An ACP stop reason that is not a finished answer (the ACP mapper's words): the same
    // prompt would end the same way.
    ("stop reason: refusal", "the model refused"),
    (
        "stop reason: max_tokens",
        "the output token limit was reached",
    ),
    (
        "stop reason: max_turn_requests",
        "the agent's request limit was reached",
    ),
    ("unauthorized", "not authorised"),
    ("unauthenticated", "not authenticated"),
    ("authentication", "authentication failed"),
    ("invalid api key", "invalid API key"),
    ("incorrect api key", "invalid API key"),
    ("api key not valid", "invalid API key"),
    ("invalid x-api-key", "invalid API key"),
    ("no api key", "no API key"),
    ("forbidden", "forbidden"),
    ("permission_denied", "forbidden"),
    ("invalid request", "invalid request"),
    ("invalid_request", "invalid request"),
    ("invalid_argument", "invalid request"),
    ("bad request", "invalid request"),
    ("model not found", "model not found"),
    ("not_found_error", "model not found"),
    ("unknown model", "model not found"),
    ("unknown provider", "unknown provider"),
    ("unknown option", "invalid command line"),
    ("no conversation found", "session not found"),
    ("credit balance", "out of credit"),
];

const SERVER_WORDS: [(&str, &str); 14] = [
    ("rate limit", "rate limited"),
    ("rate_limit", "rate limited"),
    ("ratelimit", "rate limited"),
    ("too many requests", "rate limited"),
    ("resource exhausted", "rate limited"),
    ("resource_exhausted", "rate limited"),
    ("overloaded", "server overloaded"),
    ("high demand", "server overloaded"),
    ("internal server error", "server error"),
    ("server error", "server error"),
    ("server_error", "server error"),
    ("bad gateway", "server error"),
    ("service unavailable", "server unavailable"),
    ("gateway timeout", "server timeout"),
];

/// Network troubles besides a dropped connection (`errors::is_dropped_connection` knows those).
const NETWORK_WORDS: [(&str, &str); 7] = [
    ("fetch failed", "network error"),
    ("network error", "network error"),
    ("econnrefused", "connection refused"),
    ("connectionrefused", "connection refused"),
    ("connection refused", "connection refused"),
    ("unable to connect", "connection refused"),
    ("etimedout", "timed out"),
];

const RETRYABLE_LATE_WORDS: [(&str, &str); 3] = [
    ("timed out", "timed out"),
    ("timeout", "timed out"),
    ("try again", "temporary error"),
];

fn classify_text(text: &str, source: StatusSource) -> Option<Classification> {
    if text.trim().is_empty() {
        return None;
    }
    let lower = text.to_lowercase();
    // A stated status is the most precise fact in a text; "do not retry" wins if there are both.
    let mut stated: Vec<Classification> = http_statuses_in(text, source)
        .into_iter()
        .filter_map(status_classification)
        .collect();
    stated.sort_by_key(|found| found.retryability == Retryability::Retryable);
    if let Some(found) = stated.first() {
        return Some(*found);
    }
    let find = |table: &[(&str, &'static str)], retryability| {
        table
            .iter()
            .find(|(word, _)| lower.contains(word))
            .map(|(_, cause)| Classification {
                retryability,
                cause,
                retry_after_ms: None,
            })
    };
    let dropped_connection = || {
        is_dropped_connection(&lower).then_some(Classification {
            retryability: Retryability::Retryable,
            cause: "connection dropped",
            retry_after_ms: None,
        })
    };
    find(&NOT_RETRYABLE_WORDS, Retryability::NotRetryable)
        .or_else(|| find(&SERVER_WORDS, Retryability::Retryable))
        .or_else(dropped_connection)
        .or_else(|| find(&NETWORK_WORDS, Retryability::Retryable))
        .or_else(|| find(&RETRYABLE_LATE_WORDS, Retryability::Retryable))
}

fn status_classification(status: u16) -> Option<Classification> {
    use Retryability::{NotRetryable, Retryable};
    let (retryability, cause) = match status {
        429 => (Retryable, "rate limited (HTTP 429)"),
        408 => (Retryable, "request timed out (HTTP 408)"),
        529 => (Retryable, "server overloaded (HTTP 529)"),
        500 => (Retryable, "server error (HTTP 500)"),
        502 => (Retryable, "bad gateway (HTTP 502)"),
        503 => (Retryable, "service unavailable (HTTP 503)"),
        504 => (Retryable, "gateway timeout (HTTP 504)"),
        501..=599 => (Retryable, "server error (HTTP 5xx)"),
        401 => (NotRetryable, "not authenticated (HTTP 401)"),
        403 => (NotRetryable, "forbidden (HTTP 403)"),
        404 => (NotRetryable, "not found (HTTP 404)"),
        400 => (NotRetryable, "invalid request (HTTP 400)"),
        402..=499 => (NotRetryable, "request refused (HTTP 4xx)"),
        _ => return None,
    };
    Some(Classification {
        retryability,
        cause,
        retry_after_ms: None,
    })
}

/// Where a text says how long to wait before trying again, and how it says it.
const RETRY_AFTER_MARKERS: [&str; 7] = [
    "retry-after:",
    "retry-after\":",
    "retry_after\":",
    "retrydelay\":",
    "retry after",
    "try again in",
    "retry in",
];

/// How long `text` says to wait before trying again, in milliseconds: the first duration
/// after one of [`RETRY_AFTER_MARKERS`] (`Retry-After: 2`, `please try again in 1.5s`,
/// `"retryDelay": "23s"`, `retry after 500ms`). A bare number is seconds, as in the header.
pub(crate) fn retry_after_ms(text: &str) -> Option<u64> {
    let lower = text.to_lowercase();
    RETRY_AFTER_MARKERS.iter().find_map(|marker| {
        lower
            .match_indices(marker)
            .find_map(|(at, _)| duration_ms(&lower[at + marker.len()..]))
    })
}

/// The duration `text` starts with (after blanks and quotes): a number and a unit (`ms`, `s`,
/// `sec`, `seconds`, `m`, `min`, `minutes`, `h`), seconds when it has none.
fn duration_ms(text: &str) -> Option<u64> {
    let text = text.trim_start_matches([' ', '"', '\'', ':', '=']);
    let number_end = text
        .find(|ch: char| !(ch.is_ascii_digit() || ch == '.'))
        .unwrap_or(text.len());
    let number: f64 = text[..number_end].parse().ok()?;
    let unit: String = text[number_end..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_alphabetic)
        .collect();
    let scale = match unit.as_str() {
        "ms" | "millisecond" | "milliseconds" => 1.0,
        "" | "s" | "sec" | "secs" | "second" | "seconds" => 1_000.0,
        "m" | "min" | "mins" | "minute" | "minutes" => 60_000.0,
        "h" | "hour" | "hours" => 3_600_000.0,
        _ => return None,
    };
    let ms = (number * scale).ceil();
    (ms.is_finite() && ms >= 0.0 && ms < u64::MAX as f64).then_some(ms as u64)
}

/// One plain line for a failure: its `cause`, then what the first line of `message` adds. A
/// message that opens by restating the cause (`429 rate limit exceeded: ...` after "rate
/// limited (HTTP 429)") loses that opening, so nothing is said twice.
pub(crate) fn headline(cause: &str, message: &str) -> String {
    const MAX_DETAIL_CHARS: usize = 200;
    let first_line = message
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("");
    // Only a status is said twice ("HTTP 429: rate limited: 429 ..."); words that name the
    // cause ("network error: fetch failed") still say what happened. The same cause, or its
    // words without the status ("server overloaded" for "server overloaded (HTTP 529)").
    let restates = |text: &str| {
        cause.contains("(HTTP ")
            && classify_text(text, StatusSource::ErrorMessage)
                .is_some_and(|found| cause.starts_with(found.cause))
    };
    let detail = match first_line.split_once(": ") {
        Some((head, rest)) if restates(head) => rest.trim(),
        _ if restates(first_line) && first_line.chars().count() <= 40 => "",
        _ => first_line,
    };
    if detail.is_empty() {
        return cause.to_owned();
    }
    let mut shown: String = detail.chars().take(MAX_DETAIL_CHARS).collect();
    let more_lines = message.trim().len() > first_line.len();
    if more_lines || detail.chars().count() > MAX_DETAIL_CHARS {
        shown.push('…');
    }
    // A detail that names the cause's status (`Request rejected (429)`) says it: the cause
    // keeps its words alone.
    let cause = match cause.split_once(" (HTTP ") {
        Some((words, status))
            if status
                .trim_end_matches(')')
                .parse::<u16>()
                .is_ok_and(|status| {
                    http_statuses_in(detail, StatusSource::ErrorMessage).contains(&status)
                }) =>
        {
            words
        }
        _ => cause,
    };
    format!("{cause}: {shown}")
}

/// The last few KiB of stderr: the error is at the end, and old noise should not decide.
fn stderr_tail(stderr: &str) -> &str {
    const TAIL: usize = 8 * 1024;
    if stderr.len() <= TAIL {
        return stderr;
    }
    let mut start = stderr.len() - TAIL;
    while !stderr.is_char_boundary(start) {
        start += 1;
    }
    &stderr[start..]
}

#[cfg(test)]
mod tests {
    use super::Retryability::{NotRetryable, Retryable};
    use super::*;

    #[test]
    fn an_unfinished_acp_stop_is_not_retried_and_says_why() {
        for (reason, cause) in [
            ("refusal", "the model refused"),
            ("max_tokens", "the output token limit was reached"),
            ("max_turn_requests", "the agent's request limit was reached"),
        ] {
            let failure = agent_error(&format!("It stopped (stop reason: {reason}). Try again."));
            let found = classify_failure(&failure);
            assert_eq!((found.retryability, found.cause), (NotRetryable, cause));
        }
    }

    #[test]
    fn the_wait_a_failure_asks_for_is_read_in_its_usual_forms() {
        for (text, ms) in [
            ("HTTP 429 Too Many Requests; Retry-After: 7", Some(7_000)),
            ("retry-after:2", Some(2_000)),
            (r#"{"error":{"retry_after": 1.5}}"#, Some(1_500)),
            ("Rate limit reached. Please try again in 20s.", Some(20_000)),
            ("please try again in 850ms", Some(850)),
            ("Please retry in 23.5 seconds", Some(23_500)),
            (r#""retryDelay": "41s""#, Some(41_000)),
            ("Retry after 2 minutes", Some(120_000)),
            ("Please wait and try again later", None),
            ("429 Too Many Requests", None),
        ] {
            assert_eq!(retry_after_ms(text), ms, "{text}");
        }
        let failure = Failure {
            message: "rate limited".into(),
            stderr: "... retry-after: 3\n".into(),
            ..Failure::default()
        };
        assert_eq!(classify_failure(&failure).retry_after_ms, Some(3_000));
    }
    use serde_json::Value;
    use std::path::PathBuf;

    fn agent_error(message: &str) -> Failure {
        Failure {
            reason: FailureReason::AgentError,
            message: message.into(),
            ..Failure::default()
        }
    }

    #[test]
    fn provider_layer_reasons_decide_first() {
        let start = Failure {
            reason: FailureReason::StartFailed,
            message: "cannot start `pi`: connection refused".into(),
            ..Failure::default()
        };
        assert_eq!(classify(&start), NotRetryable);
        let killed = Failure {
            reason: FailureReason::KilledBySignal,
            message: "the agent was killed by signal 9 (SIGKILL): Invalid API key".into(),
            signal: Some(9),
            ..Failure::default()
        };
        assert_eq!(classify(&killed), Retryable);
    }

    #[test]
    fn reported_http_status_table() {
        let table = [
            (429, Retryable),
            (408, Retryable),
            (500, Retryable),
            (502, Retryable),
            (503, Retryable),
            (504, Retryable),
            (529, Retryable),
            (400, NotRetryable),
            (401, NotRetryable),
            (403, NotRetryable),
            (404, NotRetryable),
            (422, NotRetryable),
        ];
        for (status, expected) in table {
            let failure = Failure {
                http_status: Some(status),
                ..agent_error("")
            };
            assert_eq!(classify(&failure), expected, "HTTP {status}");
        }
    }

    /// Error texts named in the protocol notes the captures came with (not all have a capture).
    #[test]
    fn message_text_table() {
        let table = [
            ("terminated", Retryable),
            ("fetch failed", Retryable),
            ("read ECONNRESET", Retryable),
            ("connect ETIMEDOUT 10.0.0.1:443", Retryable),
            (
                "API Error: Connection to the API was lost (ECONNRESET)",
                Retryable,
            ),
            ("Model stream ended without a finish reason.", Retryable),
            ("Overloaded", Retryable),
            ("503 Service Unavailable", Retryable),
            ("upstream request timeout", Retryable),
            ("401 Incorrect API key provided: fake-key", NotRetryable),
            ("400 Invalid request: model `gpt-9` not found", NotRetryable),
            ("model not found: nosuchmodel", NotRetryable),
            (
                "Your credit balance is too low to access the API",
                NotRetryable,
            ),
            ("Request was aborted.", NotRetryable),
            ("something odd happened", NotRetryable),
            ("", NotRetryable),
            // Numbers that are not statuses.
            (
                "the agent exited with status 1: bundle.js:500:12",
                NotRetryable,
            ),
            ("took 429ms", NotRetryable),
            ("version 1.500.2", NotRetryable),
            ("connect ECONNREFUSED 127.0.0.1:503", Retryable),
            ("proxy at localhost:503", NotRetryable),
            ("status:503", Retryable),
        ];
        for (message, expected) in table {
            assert_eq!(classify(&agent_error(message)), expected, "{message:?}");
        }
    }

    #[test]
    fn stderr_counts_only_words_and_labelled_statuses() {
        let with_stderr = |stderr: &str| Failure {
            reason: FailureReason::ExitNonzero,
            message: "the agent exited with status 1".into(),
            exit_code: Some(1),
            stderr: stderr.into(),
            ..Failure::default()
        };
        assert_eq!(
            classify(&with_stderr("    at foo (bundle.js:429:1)\n")),
            NotRetryable
        );
        assert_eq!(
            classify(&with_stderr("GaxiosError: boom {\n  status: 503\n}\n")),
            Retryable
        );
        assert_eq!(classify(&with_stderr("Error: socket hang up\n")), Retryable);
        assert_eq!(
            classify(&with_stderr("Error: Unknown option: --bogus-flag\n")),
            NotRetryable
        );
    }

    // ---- The real error texts, read from the recorded captures ----

    /// The real CLIs' captures, kept in the repository (`tests/fixtures/captures/<cli>`).
    fn captures(cli: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/captures")
            .join(cli)
    }

    fn read(cli: &str, file: &str) -> String {
        let path = captures(cli).join(file);
        std::fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()))
    }

    fn json_lines(cli: &str, capture: &str) -> Vec<Value> {
        read(cli, &format!("{capture}.stdout.jsonl"))
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    fn exit_code(cli: &str, capture: &str) -> i32 {
        read(cli, &format!("{capture}.meta.txt"))
            .lines()
            .find_map(|line| {
                let line = line.trim();
                line.strip_prefix("exit code:")
                    .or_else(|| line.strip_prefix("exit_code:"))
                    .and_then(|code| code.trim().parse().ok())
            })
            .unwrap_or_else(|| panic!("{cli}/{capture}: no exit code in meta"))
    }

    fn last_string_named(value: &Value, key: &str, found: &mut Option<String>) {
        match value {
            Value::Object(map) => {
                for (name, inner) in map {
                    if name == key {
                        if let Some(text) = inner.as_str() {
                            *found = Some(text.to_owned());
                        }
                    }
                    last_string_named(inner, key, found);
                }
            }
            Value::Array(items) => items
                .iter()
                .for_each(|item| last_string_named(item, key, found)),
            _ => {}
        }
    }

    /// pi: the last `errorMessage` (json mode exits 0; the error is only in the stream).
    fn pi_failure(capture: &str) -> Failure {
        let mut message = None;
        for line in json_lines("pi", capture) {
            last_string_named(&line, "errorMessage", &mut message);
        }
        Failure {
            exit_code: Some(exit_code("pi", capture)),
            ..agent_error(&message.unwrap_or_else(|| panic!("pi/{capture}: no errorMessage")))
        }
    }

    /// pi with no stream error: exit 1 and a message on stderr, as the runner reports it.
    fn pi_exit_failure(capture: &str) -> Failure {
        let stderr = read("pi", &format!("{capture}.stderr.txt"));
        let code = exit_code("pi", capture);
        let last_line = stderr.lines().rev().find(|line| !line.trim().is_empty());
        Failure {
            reason: FailureReason::ExitNonzero,
            message: format!(
                "the agent exited with status {code}: {}",
                last_line.unwrap_or("").trim()
            ),
            exit_code: Some(code),
            stderr,
            ..Failure::default()
        }
    }

    /// claude: the `result` line's text (or `errors`), with and without `api_error_status`.
    fn claude_failures(capture: &str) -> [Failure; 2] {
        let result = json_lines("claude", capture)
            .into_iter()
            .rfind(|line| line["type"] == "result")
            .unwrap_or_else(|| panic!("claude/{capture}: no result line"));
        assert_eq!(result["is_error"], true, "claude/{capture}");
        let message = match result["result"].as_str() {
            Some(text) => text.to_owned(),
            None => result["errors"][0].as_str().unwrap_or_default().to_owned(),
        };
        let text_only = Failure {
            exit_code: Some(exit_code("claude", capture)),
            ..agent_error(&message)
        };
        let with_status = Failure {
            http_status: result["api_error_status"]
                .as_u64()
                .and_then(|status| u16::try_from(status).ok()),
            ..text_only.clone()
        };
        [text_only, with_status]
    }

    /// codex: the `turn.failed` error message.
    fn codex_failure(capture: &str) -> Failure {
        let failed = json_lines("codex", capture)
            .into_iter()
            .find(|line| line["type"] == "turn.failed")
            .unwrap_or_else(|| panic!("codex/{capture}: no turn.failed"));
        Failure {
            exit_code: Some(exit_code("codex", capture)),
            ..agent_error(failed["error"]["message"].as_str().unwrap_or_default())
        }
    }

    /// gemini: the result's error message (or the last `error` event's), and the exit code.
    fn gemini_failure(capture: &str) -> Failure {
        let lines = json_lines("gemini", capture);
        let result_error = lines
            .iter()
            .rfind(|line| line["type"] == "result")
            .and_then(|result| result["error"]["message"].as_str());
        let event_error = lines
            .iter()
            .rfind(|line| line["type"] == "error")
            .and_then(|event| event["message"].as_str());
        let message = result_error
            .or(event_error)
            .unwrap_or_else(|| panic!("gemini/{capture}: no error message"));
        Failure {
            exit_code: Some(exit_code("gemini", capture)),
            ..agent_error(message)
        }
    }

    #[test]
    fn real_pi_errors() {
        let table = [
            ("e_http401", NotRetryable),
            ("e_http500", Retryable),
            ("e_drop", Retryable),
        ];
        for (capture, expected) in table {
            let failure = pi_failure(capture);
            assert_eq!(classify(&failure), expected, "pi/{capture}: {failure:?}");
        }
        let table = [
            ("e_http401_textmode", NotRetryable),
            ("i_missing_provider", NotRetryable),
            ("i_no_model_at_all", NotRetryable),
            ("i_bad_long_flag", NotRetryable),
        ];
        for (capture, expected) in table {
            let failure = pi_exit_failure(capture);
            assert_eq!(classify(&failure), expected, "pi/{capture}: {failure:?}");
        }
    }

    #[test]
    fn real_claude_errors() {
        let table = [
            ("err401", NotRetryable),
            ("err429", Retryable),
            ("err500_r2", Retryable),
            ("err500_default", Retryable),
            ("err529", Retryable),
            ("conn_refused", Retryable),
            ("resume_6_bad_id", NotRetryable),
        ];
        for (capture, expected) in table {
            for failure in claude_failures(capture) {
                assert_eq!(
                    classify(&failure),
                    expected,
                    "claude/{capture}: {failure:?}"
                );
            }
        }
    }

    #[test]
    fn real_codex_errors() {
        let table = [
            ("d_http401", NotRetryable),
            ("d_http429", Retryable),
            ("d_http500", Retryable),
            ("d_http500_retries_off", Retryable),
            ("d_drop_midstream", Retryable),
        ];
        for (capture, expected) in table {
            let failure = codex_failure(capture);
            assert_eq!(classify(&failure), expected, "codex/{capture}: {failure:?}");
        }
    }

    #[test]
    fn real_gemini_errors() {
        let table = [
            ("d_http401", NotRetryable, 145),
            ("d_http429", Retryable, 173),
            ("d_http500", Retryable, 244),
            ("d_drop_midstream", Retryable, 0),
        ];
        for (capture, expected, code) in table {
            let failure = gemini_failure(capture);
            assert_eq!(failure.exit_code, Some(code), "gemini/{capture}");
            assert_eq!(
                classify(&failure),
                expected,
                "gemini/{capture}: {failure:?}"
            );
            // The exit code alone says the same where it carries a status: the Gemini backend
            // turns it into the failure's HTTP status.
            if code != 0 {
                let exit_only = gemini_exit_only(code);
                assert_eq!(classify(&exit_only), expected, "gemini/{capture} exit code");
            }
        }
    }

    /// The failure a Gemini attempt that printed nothing and exited with `code` ends with.
    fn gemini_exit_only(code: i32) -> Failure {
        let mapper = crate::provider::gemini::mapper::GeminiMapper::new(false);
        let report = crate::process::ExitReport {
            exit_code: Some(code),
            ..Default::default()
        };
        let terminal = crate::provider::runner::AttemptMapping::new(Box::new(mapper)).finish(
            &report,
            crate::provider::runner::EndedBy::Exit,
            String::new(),
            &mut Vec::new(),
        );
        match terminal {
            crate::stream::AgentMessage::Failed(failure) => failure,
            other => panic!("exit {code}: {other:?}"),
        }
    }

    #[test]
    fn an_exit_code_alone_is_no_http_status() {
        // pi (or any agent but Gemini CLI) exiting 244 has not reported an HTTP 500.
        let exited = Failure {
            reason: FailureReason::ExitNonzero,
            message: "the agent exited with status 244".into(),
            exit_code: Some(244),
            ..Failure::default()
        };
        assert_eq!(classify(&exited), NotRetryable);
        assert_eq!(gemini_exit_only(244).http_status, Some(500));
        assert_eq!(classify(&gemini_exit_only(244)), Retryable);
        assert_eq!(classify(&gemini_exit_only(145)), NotRetryable);
    }

    #[test]
    fn a_headline_says_the_cause_once() {
        let cause = "rate limited (HTTP 429)";
        assert_eq!(headline(cause, "429 Too Many Requests"), cause);
        assert_eq!(headline(cause, "429 rate limit exceeded"), cause);
        assert_eq!(
            headline(
                cause,
                "429 rate limit exceeded: the demo model allows 3 requests per minute"
            ),
            "rate limited (HTTP 429): the demo model allows 3 requests per minute"
        );
        // What the message adds is kept whole; more lines are marked.
        assert_eq!(
            headline(
                "server overloaded (HTTP 529)",
                "Overloaded: try again later\nat x"
            ),
            "server overloaded (HTTP 529): try again later…"
        );
        assert_eq!(
            headline(
                "not authenticated (HTTP 401)",
                "Invalid API key · Fix external API key"
            ),
            "not authenticated (HTTP 401): Invalid API key · Fix external API key"
        );
        assert_eq!(headline("unrecognised failure", ""), "unrecognised failure");
        // A detail that names the status says it; the cause does not say it again.
        assert_eq!(
            headline(
                cause,
                "API Error: Request rejected (429) · Number of request tokens has exceeded your rate limit (fake)"
            ),
            "rate limited: API Error: Request rejected (429) · Number of request tokens has exceeded your rate limit (fake)"
        );
        assert_eq!(
            headline(
                "server error (HTTP 500)",
                "API Error: 500 Internal server error (fake). This is a server-side issue"
            ),
            "server error: API Error: 500 Internal server error (fake). This is a server-side issue"
        );
        // Without a status nothing is said twice: the message's words stay.
        assert_eq!(
            headline("network error", "fetch failed"),
            "network error: fetch failed"
        );
        let long = "x".repeat(300);
        assert_eq!(
            headline("server error (HTTP 500)", &long),
            format!("server error (HTTP 500): {}…", "x".repeat(200))
        );
    }

    #[test]
    fn causes_are_specific() {
        assert_eq!(
            classify_failure(&agent_error(
                "exceeded retry limit, last status: 429 Too Many Requests"
            ))
            .cause,
            "rate limited (HTTP 429)"
        );
        assert_eq!(
            classify_failure(&agent_error("terminated")).cause,
            "connection dropped"
        );
    }
}
