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

/// The attempt's `session.*` header: `session.resumed` when it continues a session whose id is
/// known, else `session.started` (with the id when the agent gave one).
pub(crate) fn session_message(
    provider: &str,
    resumed: bool,
    session_id: Option<String>,
    model: Option<String>,
) -> AgentMessage {
    let provider = provider.to_owned();
    match session_id {
        Some(session_id) if resumed => AgentMessage::SessionResumed {
            provider,
            session_id,
            model,
        },
        session_id => AgentMessage::SessionStarted {
            provider,
            session_id,
            model,
        },
    }
}

/// A failed turn's message: the one its failure line carries, else the last `error` line before
/// it (the CLI printed the cause there first), else `without_message`.
pub(crate) fn failure_message(
    carried: Option<&Text<'_>>,
    last_error: Option<&str>,
    without_message: &str,
) -> String {
    carried
        .map(Text::as_str)
        .or(last_error)
        .unwrap_or(without_message)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_borrows_from_the_line_unless_it_has_escapes() {
        let plain: Text = serde_json::from_str(r#""hello""#).unwrap();
        assert!(matches!(plain.0, Cow::Borrowed("hello")));
        let escaped: Text = serde_json::from_str(r#""a\nb""#).unwrap();
        assert_eq!(escaped.as_str(), "a\nb");
    }
}
