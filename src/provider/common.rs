//! Helpers shared by the backends whose CLIs print one JSON object per line (Codex, Gemini).

use std::borrow::Cow;

use serde::Deserialize;

use crate::stream::AgentMessage;

/// A JSON string borrowed from the line when it has no escapes, owned otherwise.
///
/// `Option<Cow<str>>` never borrows under serde; this newtype does, so the big fields (assistant
/// text, tool output) are copied once, into the shared message, and not twice.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub(crate) struct Text<'a>(#[serde(borrow)] pub Cow<'a, str>);

impl Text<'_> {
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// The text of an optional borrowed string, or `""`.
pub(crate) fn text_or_empty<'t>(text: &'t Option<Text<'_>>) -> &'t str {
    text.as_ref().map_or("", Text::as_str)
}

/// The `session.*` message for a session id the agent announced.
pub(crate) fn session_message(provider: &str, resumed: bool, session_id: &str) -> AgentMessage {
    if resumed {
        AgentMessage::SessionResumed {
            provider: provider.to_owned(),
            session_id: session_id.to_owned(),
        }
    } else {
        AgentMessage::SessionStarted {
            provider: provider.to_owned(),
            session_id: Some(session_id.to_owned()),
        }
    }
}

/// The HTTP error status (400–599) an agent's error text reports, if it names one.
///
/// Recognised forms, all seen in the captures: `status 401 Unauthorized` and
/// `last status: 429 Too Many Requests` (Codex), `failed with status 500` and an embedded API
/// error body `{"error":{"code":500,…}}` (Gemini).
pub(crate) fn http_status_in(text: &str) -> Option<u16> {
    ["status", "\"code\""].iter().find_map(|needle| {
        text.match_indices(needle).find_map(|(at, _)| {
            let rest = text[at + needle.len()..].trim_start_matches([':', ' ']);
            three_digit_status(rest)
        })
    })
}

/// `rest` starts with exactly three digits forming an HTTP error status.
fn three_digit_status(rest: &str) -> Option<u16> {
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits != 3 {
        return None;
    }
    rest[..3]
        .parse::<u16>()
        .ok()
        .filter(|status| (400..=599).contains(status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_read_from_every_captured_error_form() {
        assert_eq!(
            http_status_in("unexpected status 401 Unauthorized: Incorrect API key provided"),
            Some(401)
        );
        assert_eq!(
            http_status_in("exceeded retry limit, last status: 429 Too Many Requests"),
            Some(429)
        );
        assert_eq!(
            http_status_in(
                r#"[API Error: {"error":{"code":500,"message":"x","status":"INTERNAL"}}]"#
            ),
            Some(500)
        );
        assert_eq!(
            http_status_in("Attempt 3 failed with status 503. Retrying with backoff..."),
            Some(503)
        );
    }

    #[test]
    fn numbers_that_are_not_error_statuses_are_ignored() {
        assert_eq!(http_status_in("status 200 OK"), None);
        assert_eq!(http_status_in("status 5000"), None);
        assert_eq!(http_status_in("exit status: 1"), None);
        assert_eq!(
            http_status_in("Model stream ended without a finish reason."),
            None
        );
        assert_eq!(http_status_in(""), None);
    }

    #[test]
    fn text_borrows_from_the_line_unless_it_has_escapes() {
        let plain: Text = serde_json::from_str(r#""hello""#).unwrap();
        assert!(matches!(plain.0, Cow::Borrowed("hello")));
        let escaped: Text = serde_json::from_str(r#""a\nb""#).unwrap();
        assert_eq!(escaped.as_str(), "a\nb");
    }
}
