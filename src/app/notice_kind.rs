//! The kinds of `notice` the chat tells apart, as a type.
//!
//! On the wire (the shared stream's JSON, `crate::stream::notice_kind`) a notice's `kind` stays
//! an open string; the chat converts it once, here, and matches on the enum.

use crate::stream::notice_kind;

/// What a `notice` message is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoticeKind {
    /// The agent CLI retried on its own: its partial text of this attempt is superseded.
    AgentRetry,
    /// The agent's partial text was replaced by an authoritative final answer.
    Superseded,
    Warning,
    /// The orchestrator continues in a fresh agent session.
    FreshSession,
    /// A steering message reached the running turn.
    SteerDelivered,
    /// A follow-up message reached the agent after its turn.
    FollowUpDelivered,
    /// The user's note with a rejection goes to the agent as the next prompt.
    PermissionFeedback,
    /// A kind the chat has no special treatment for, as it arrived (unsanitised).
    Other(String),
}

impl NoticeKind {
    /// The kind named by the wire string `kind`.
    pub(crate) fn from_wire(kind: &str) -> Self {
        match kind {
            notice_kind::AGENT_RETRY => Self::AgentRetry,
            notice_kind::SUPERSEDED => Self::Superseded,
            notice_kind::WARNING => Self::Warning,
            notice_kind::FRESH_SESSION => Self::FreshSession,
            notice_kind::STEER_DELIVERED => Self::SteerDelivered,
            notice_kind::FOLLOW_UP_DELIVERED => Self::FollowUpDelivered,
            notice_kind::PERMISSION_FEEDBACK => Self::PermissionFeedback,
            other => Self::Other(other.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_wire_kind_has_its_variant_and_others_are_kept() {
        assert_eq!(NoticeKind::from_wire("agent_retry"), NoticeKind::AgentRetry);
        assert_eq!(NoticeKind::from_wire("superseded"), NoticeKind::Superseded);
        assert_eq!(NoticeKind::from_wire("warning"), NoticeKind::Warning);
        assert_eq!(
            NoticeKind::from_wire("fresh_session"),
            NoticeKind::FreshSession
        );
        assert_eq!(
            NoticeKind::from_wire("permission_feedback"),
            NoticeKind::PermissionFeedback
        );
        assert_eq!(
            NoticeKind::from_wire("permission_denied"),
            NoticeKind::Other("permission_denied".to_owned())
        );
    }
}
