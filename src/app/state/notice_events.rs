//! The agent's notices as the chat says them: a retry of its own or a replaced answer (the
//! attempt's text marked), steering and follow-ups delivered, a message not delivered (back in
//! the editor), a rejection's note sent as a prompt, and the rest by their kind.

use super::AppState;
use crate::app::transcript::NoticeLevel;
use crate::sanitize::untrusted_owned;
use crate::stream::NoticeKind;

impl AppState {
    pub(super) fn on_agent_notice(&mut self, kind: NoticeKind, message: String) {
        match kind {
            NoticeKind::AgentRetry => {
                self.supersede_attempt_text();
                self.notice(
                    NoticeLevel::Info,
                    format!("The agent retried on its own: {message}"),
                );
            }
            NoticeKind::Superseded => {
                self.supersede_attempt_text();
                self.notice(
                    NoticeLevel::Info,
                    format!("The partial answer above was replaced: {message}"),
                );
            }
            delivered @ (NoticeKind::SteerDelivered | NoticeKind::FollowUpDelivered) => {
                // The agent's answer to it starts a new block below.
                self.close_assistant();
                let how = if delivered == NoticeKind::SteerDelivered {
                    "steered"
                } else {
                    "follow-up"
                };
                self.notice(NoticeLevel::Info, format!("↳ {how}: {message}"));
            }
            NoticeKind::NotDelivered => {
                // Nothing the user typed is lost: it comes back into the editor.
                let text = untrusted_owned(&message);
                self.composer.bring_back(vec![text.clone()]);
                self.notice(
                    NoticeLevel::Warning,
                    format!(
                        "Not delivered to the agent (the turn ended first), back in the \
                         editor: {text}"
                    ),
                );
            }
            NoticeKind::PermissionFeedback => {
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "↳ rejected with a note: this agent's protocol cannot send a note \
                         with a rejection, so yours goes to it as the next prompt: \
                         {message}"
                    ),
                );
            }
            NoticeKind::Compacted => {
                self.notice(NoticeLevel::Info, message);
            }
            NoticeKind::Warning | NoticeKind::FreshSession => {
                self.notice(NoticeLevel::Warning, message);
            }
            // Shown with its kind (an unknown one as it arrived; the notice makes it inert).
            other => {
                self.notice(NoticeLevel::Info, format!("{}: {message}", other.wire()));
            }
        }
    }
}
