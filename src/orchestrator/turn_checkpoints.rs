//! The agent's stored session kept before each turn: what a failed attempt is rolled back to
//! (so a retry leaves the session as if the failed attempts never happened), and what
//! `/rewind` takes the conversation back to (in memory for the last turns, on disk beside the
//! snapshots for the rest).

use super::rewind::{conversation_rewind, CHECKPOINTS_IN_MEMORY, REWINDABLE_TURNS};
use super::{Driver, FAILED_ATTEMPT_KEPT};
use crate::orchestrator::{OrchestratorEvent, TurnId};
use crate::provider::checkpoint::CheckpointStore;
use crate::provider::{AttemptRequest, SessionRef};
use crate::stream::NoticeKind;

impl Driver {
    /// The first attempt of a turn: remember the agent's session as it is before it.
    pub(super) fn checkpoint_turn(&mut self, turn: TurnId, request: &AttemptRequest) {
        let checkpoint = self.options.provider.checkpoint(request);
        if request.session != SessionRef::New && checkpoint.is_none() {
            tracing::info!(turn, "the agent's session file was not found: no rollback");
        }
        self.emit(OrchestratorEvent::TurnCheckpointed {
            turn,
            conversation_rewind: conversation_rewind(&request.session, checkpoint.as_ref()),
        });
        self.turn_checkpoints
            .insert(turn, (request.session.clone(), checkpoint.clone()));
        // Each checkpoint holds a copy of the agent's session file, which grows with the
        // conversation: with a store on disk, only the last few stay in memory too (a
        // rewind further back reads its turn's from the disk).
        let in_memory = if self.checkpoint_store.is_some() {
            CHECKPOINTS_IN_MEMORY
        } else {
            REWINDABLE_TURNS
        };
        while self.turn_checkpoints.len() > in_memory {
            self.turn_checkpoints.pop_first();
        }
        if let Some(store) = self.checkpoint_store.clone() {
            // Written on a thread of its own while the request goes out: a session file
            // grows with the conversation, and Enter must not wait for its copy, nor the
            // agent for a core.
            let session = request.session.clone();
            let checkpoint = checkpoint.clone();
            let saver = crate::background::spawn("agentty-checkpoint", move || {
                let name = CheckpointStore::turn_name(turn);
                if let Err(error) = store.save(&name, &session, checkpoint.as_ref()) {
                    tracing::warn!(turn, %error, "cannot keep the session checkpoint on disk");
                }
                // Turns are numbered one after another, also across `--resume`.
                if let Some(old) = turn.checked_sub(REWINDABLE_TURNS as TurnId) {
                    store.remove(&CheckpointStore::turn_name(old));
                }
            });
            if let Err(error) = saver {
                tracing::warn!(turn, %error, "cannot start the checkpoint's writer");
            }
        }
        self.checkpoint = Some((turn, checkpoint));
    }

    /// Restores the agent's stored session from the turn's checkpoint. When that is impossible
    /// the conversation goes on in the agent's session as it is, and the user is told in one
    /// line: a prompt the model sees twice is far less harm than a conversation wiped.
    pub(super) fn roll_back(&mut self, turn: TurnId) {
        let restored = match &self.checkpoint {
            Some((checkpoint_turn, Some(checkpoint))) if *checkpoint_turn == turn => {
                match checkpoint.restore() {
                    Ok(()) => {
                        tracing::info!(turn, file = %checkpoint.path().display(), "agent session rolled back");
                        self.options.provider.session_restored();
                        true
                    }
                    Err(error) => {
                        tracing::warn!(turn, %error, file = %checkpoint.path().display(), "cannot roll the agent session back");
                        false
                    }
                }
            }
            _ => {
                tracing::info!(turn, "no checkpoint of the agent session to roll back to");
                false
            }
        };
        if !restored {
            self.emit(OrchestratorEvent::Notice {
                turn,
                kind: NoticeKind::Warning,
                message: FAILED_ATTEMPT_KEPT.to_owned(),
            });
        }
    }
}
