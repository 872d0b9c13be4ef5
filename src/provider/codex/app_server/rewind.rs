//! What the orchestrator asked of Codex's thread before the next turn, carried out with Codex's
//! own means: a rollback of a turn that did not complete becomes `thread/revert` to before it
//! (retry never duplicates, and no file is restored), and a rewind of the conversation becomes
//! a `thread/fork` through the turn rewound to (the thread itself kept, so the rewind can be
//! undone). Where Codex refuses, the attempt runs on a fresh thread and a notice says so.

use super::session::{revert, AppServerSession};
use super::AppServerProtocol;
use crate::provider::live::Live;
use crate::provider::{AttemptRequest, SessionRef};
use crate::stream::{AgentMessage, NoticeKind};

/// The last attempt's turn, when it did not complete: what a rollback reverts.
#[derive(Debug, Clone, Default)]
pub(super) struct Unfinished {
    pub(super) thread_id: String,
    pub(super) turn_id: String,
    /// The orchestrator rolled the session back: revert before the next turn.
    pub(super) revert_due: bool,
}

impl AppServerProtocol {
    /// The orchestrator rewound the conversation: the thread is forked through the turn it
    /// rewound to (a thread with no turn before it: a new thread), and this attempt continues
    /// the fork.
    pub(super) async fn branch_if_due(
        &self,
        live: &mut Live<AppServerSession>,
        out: &mut Vec<AgentMessage>,
    ) {
        let Some(point) = self.branch.lock().ok().and_then(|mut branch| branch.take()) else {
            return;
        };
        let branched = match &point.after_turn {
            Some(turn) => self.fork(live, &point.thread, turn).await,
            None if self.open_fresh_thread(live).await => Ok(()),
            None => Err("Codex did not open a new thread".to_owned()),
        };
        match branched {
            Ok(()) => {
                tracing::info!(from = %point.thread, after = ?point.after_turn, thread = %live.session.thread_id, "Codex thread branched for a rewind");
            }
            Err(error) => {
                tracing::warn!(%error, "Codex did not branch the thread for the rewind");
                let what = format!("Codex could not go back to the turn you rewound to ({error})");
                self.fall_back_to_a_fresh_thread(
                    live,
                    out,
                    &what,
                    "this prompt",
                    "the rewound turns may still reach the model",
                )
                .await;
            }
        }
    }

    /// The orchestrator rolled back the turn that did not complete: Codex forgets it
    /// (`thread/revert`) before the next prompt.
    pub(super) async fn revert_if_due(
        &self,
        live: &mut Live<AppServerSession>,
        out: &mut Vec<AgentMessage>,
    ) {
        let due = self
            .unfinished
            .lock()
            .ok()
            .and_then(|mut unfinished| unfinished.take())
            .filter(|unfinished| unfinished.revert_due);
        let Some(due) = due else {
            return;
        };
        if due.thread_id != live.session.thread_id {
            return;
        }
        match revert(live, &due.turn_id).await {
            Ok(()) => {
                self.shared.history.reverted(&due.thread_id, &due.turn_id);
                tracing::info!(thread = %due.thread_id, turn = %due.turn_id, "Codex reverted the turn that did not complete");
            }
            Err(error) => {
                tracing::warn!(%error, "Codex did not revert the failed turn");
                let what = format!("Codex could not undo the failed attempt ({error})");
                self.fall_back_to_a_fresh_thread(
                    live,
                    out,
                    &what,
                    "this attempt",
                    "the prompt may reach it twice",
                )
                .await;
            }
        }
    }

    /// What Codex could not undo (`what`) is left behind on a fresh thread, said in a notice;
    /// where even that fails, the notice says what may reach the model (`otherwise`).
    async fn fall_back_to_a_fresh_thread(
        &self,
        live: &mut Live<AppServerSession>,
        out: &mut Vec<AgentMessage>,
        what: &str,
        starting: &str,
        otherwise: &str,
    ) {
        let message = if self.open_fresh_thread(live).await {
            format!(
                "{what}, so {starting} starts a fresh thread (Codex does not remember the \
                 earlier turns; the transcript stays here)."
            )
        } else {
            format!("{what}; {otherwise}.")
        };
        out.push(AgentMessage::notice(NoticeKind::FreshSession, message));
    }

    /// A new thread in the running app-server, in the session's own directory.
    async fn open_fresh_thread(&self, live: &mut Live<AppServerSession>) -> bool {
        let fresh = AttemptRequest {
            session: SessionRef::New,
            ..AttemptRequest::default()
        };
        self.open_new_thread(live, &fresh).await
    }
}
