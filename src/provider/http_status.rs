//! The one reader of HTTP error statuses (400–599) in an agent's error text.
//!
//! Every mapper sets a failure's `http_status` through [`http_status_in`], and the
//! orchestrator's classifier reads the statuses of failure messages and stderr through
//! [`http_statuses_in`]: what counts as a status is decided here only.
//!
//! A status is a three-digit number standing on its own (not part of a word, a longer number
//! or a decimal: `v1.500`, `429ms`, `5000` are not statuses), that is not a position
//! (`bundle.js:500:12`, `host:503`). Labelled by a preceding `status`, `code` or `http`
//! (`status 401`, `last status: 429`, `"code":500`, `HTTP 503`) any 4xx/5xx counts; a bare
//! number counts only in an error message (never in stderr, whose stack traces are full of
//! line numbers), and only if it is a status common enough to be meant (pi's
//! `500 fake internal server error`, Gemini's `failed with 429 error`).

/// Where the text comes from, which decides whether a bare number can be a status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatusSource {
    /// The agent's own error message: bare common statuses count.
    ErrorMessage,
    /// Diagnostics such as stderr: only labelled statuses count.
    Diagnostics,
}

/// Statuses common enough to be meant when they appear unlabelled in an error message.
const COMMON_STATUSES: [u16; 14] = [
    400, 401, 403, 404, 408, 413, 422, 429, 500, 502, 503, 504, 520, 529,
];

/// Words that label the number after them as a status.
const STATUS_LABELS: [&str; 3] = ["status", "code", "http"];

/// The first HTTP error status an agent's error message names, if it names one.
pub(crate) fn http_status_in(message: &str) -> Option<u16> {
    http_statuses_in(message, StatusSource::ErrorMessage)
        .into_iter()
        .next()
}

/// Every HTTP error status `text` names, in order.
pub(crate) fn http_statuses_in(text: &str, source: StatusSource) -> Vec<u16> {
    let lower = text.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut found = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        if !bytes[index].is_ascii_digit() {
            index += 1;
            continue;
        }
        let start = index;
        while index < bytes.len() && bytes[index].is_ascii_digit() {
            index += 1;
        }
        if index - start != 3 || !standalone_number(bytes, start, index) {
            continue;
        }
        let labelled = preceded_by_label(&lower[..start]);
        if !labelled && looks_like_a_position(bytes, start, index) {
            continue;
        }
        let Ok(status) = lower[start..index].parse::<u16>() else {
            continue;
        };
        let counts = if labelled {
            (400..=599).contains(&status)
        } else {
            source == StatusSource::ErrorMessage && COMMON_STATUSES.contains(&status)
        };
        if counts {
            found.push(status);
        }
    }
    found
}

/// Not part of a word, a longer number or a decimal.
fn standalone_number(bytes: &[u8], start: usize, end: usize) -> bool {
    let before_ok = match start.checked_sub(1).map(|at| bytes[at]) {
        None => true,
        Some(b'.') => !start
            .checked_sub(2)
            .is_some_and(|at| bytes[at].is_ascii_digit()),
        Some(byte) => !byte.is_ascii_alphanumeric() && byte != b'_',
    };
    let after_ok = match bytes.get(end) {
        None => true,
        Some(b'.') => !bytes.get(end + 1).is_some_and(u8::is_ascii_digit),
        Some(byte) => !byte.is_ascii_alphanumeric() && *byte != b'_',
    };
    before_ok && after_ok
}

/// `bundle.js:500:12`, `host:503`: a line, column or port.
fn looks_like_a_position(bytes: &[u8], start: usize, end: usize) -> bool {
    let followed_by_column =
        bytes.get(end) == Some(&b':') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit);
    let after_name_and_colon =
        start >= 2 && bytes[start - 1] == b':' && bytes[start - 2].is_ascii_alphanumeric();
    followed_by_column || after_name_and_colon
}

fn preceded_by_label(before: &str) -> bool {
    let trimmed = before.trim_end_matches([' ', ':', '=', '"', '\'']);
    STATUS_LABELS.iter().any(|word| trimmed.ends_with(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_read_from_every_captured_error_form() {
        let table = [
            // Codex
            (
                "unexpected status 401 Unauthorized: Incorrect API key provided",
                401,
            ),
            (
                "exceeded retry limit, last status: 429 Too Many Requests",
                429,
            ),
            // Gemini
            (
                r#"[API Error: {"error":{"code":500,"message":"x","status":"INTERNAL"}}]"#,
                500,
            ),
            (
                "Attempt 3 failed with status 503. Retrying with backoff...",
                503,
            ),
            (
                "Attempt 1 failed with 429 error (no Retry-After header)",
                429,
            ),
            // pi: `<status> <provider message>`
            ("500 fake internal server error", 500),
            ("429 ", 429),
            ("status:503", 503),
            ("HTTP 418 I'm a teapot", 418),
        ];
        for (text, status) in table {
            assert_eq!(http_status_in(text), Some(status), "{text:?}");
        }
    }

    #[test]
    fn numbers_that_are_not_error_statuses_are_ignored() {
        for text in [
            "status 200 OK",
            "status 5000",
            "5000 tokens",
            "999 nope",
            "42",
            "€00 x",
            "exit status: 1",
            "Model stream ended without a finish reason.",
            "",
            "the agent exited with status 1: bundle.js:500:12",
            "took 429ms",
            "version 1.500.2",
            "connect ECONNREFUSED 127.0.0.1:503",
            "proxy at localhost:503",
            // Uncommon and unlabelled: a count, not a status.
            "read 418 files",
        ] {
            assert_eq!(http_status_in(text), None, "{text:?}");
        }
    }

    #[test]
    fn diagnostics_count_only_labelled_statuses() {
        let stack = "    at foo (bundle.js:429:1)\nError 500 lines\n";
        assert!(http_statuses_in(stack, StatusSource::Diagnostics).is_empty());
        assert_eq!(
            http_statuses_in(
                "GaxiosError: boom {\n  status: 503\n}\n",
                StatusSource::Diagnostics
            ),
            [503]
        );
    }

    proptest::proptest! {
        /// Any text, with any non-ASCII in it: no panic, and every status found is an error
        /// status written in the text.
        #[test]
        fn any_text_yields_only_error_statuses_it_contains(
            text in "(\\PC|status |code\":|[0-9]{1,4}|[:. ]){0,40}"
        ) {
            for source in [StatusSource::ErrorMessage, StatusSource::Diagnostics] {
                for status in http_statuses_in(&text, source) {
                    proptest::prop_assert!((400..=599).contains(&status));
                    proptest::prop_assert!(text.contains(&status.to_string()));
                }
            }
        }
    }

    #[test]
    fn every_status_of_a_text_is_found_in_order() {
        assert_eq!(
            http_statuses_in("429 then status 401", StatusSource::ErrorMessage),
            [429, 401]
        );
    }
}
