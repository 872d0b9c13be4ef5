//! The session header rule every mapper keeps: an attempt's `session.started` /
//! `session.resumed` comes at most once, and only as its first message.
//!
//! CLIs repeat their header (Claude Code's `system/init` on every turn of a stream-json
//! conversation) and a damaged stream can hold one late, after text or tool calls; the shared
//! stream's consumers read the first message as the session's identity, so a later one is
//! dropped with a debug line.

use crate::stream::AgentMessage;

#[derive(Debug, Default)]
pub(crate) struct SessionHeader {
    /// A header was given, or something else was emitted first: no header may follow.
    closed: bool,
}

impl SessionHeader {
    /// Emits `header` if it is the attempt's first message; drops it otherwise.
    pub(crate) fn announce(&mut self, header: AgentMessage, out: &mut Vec<AgentMessage>) {
        if self.closed || !out.is_empty() {
            tracing::debug!(
                ?header,
                "session header that is not the first message; dropped"
            );
        } else {
            out.push(header);
        }
        self.closed = true;
    }

    /// Call after each line is mapped: once anything was emitted, a header would come late.
    /// (`out` may be drained by the caller between lines, so emptiness alone cannot tell.)
    pub(crate) fn close_if_emitted(&mut self, out: &[AgentMessage]) {
        self.closed |= !out.is_empty();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(id: &str) -> AgentMessage {
        AgentMessage::SessionStarted {
            provider: "pi".into(),
            session_id: Some(id.into()),
            model: None,
        }
    }

    #[test]
    fn the_header_comes_once_and_first() {
        let mut session = SessionHeader::default();
        let mut out = Vec::new();
        session.announce(header("a"), &mut out);
        session.close_if_emitted(&out);
        out.clear();
        session.announce(header("b"), &mut out);
        assert_eq!(out, []);
    }

    #[test]
    fn a_header_after_other_messages_is_dropped() {
        let mut session = SessionHeader::default();
        let mut out = vec![AgentMessage::Assistant { delta: "hi".into() }];
        session.close_if_emitted(&out);
        out.clear();
        session.announce(header("late"), &mut out);
        assert_eq!(out, []);
        let mut out = vec![AgentMessage::Assistant { delta: "hi".into() }];
        SessionHeader::default().announce(header("same line"), &mut out);
        assert_eq!(out.len(), 1);
    }
}
