//! The driver's side of `/rewind` and its undo: the agent's conversation goes back through the
//! session checkpoint kept before each turn (the machinery retry uses), the files through the
//! snapshot thread; a rewind asked for both rewinds the conversation only once the files could
//! be put back (files changed since stop it until the user decides).

use super::{Driver, Input};
use crate::orchestrator::RewindAsked;
use crate::orchestrator::{Command, OrchestratorEvent, Rewind, TurnId};
use crate::provider::checkpoint::CheckpointStore;
use crate::provider::{AttemptRequest, SessionCheckpoint, SessionRef};
use crate::snapshot::UndoOutcome;

/// Whether the agent's conversation can go back to before a turn, from what was kept of its
/// session when the turn began: nothing to keep (a new session), its files, or the point where
/// the agent that holds its session can branch it.
pub(super) fn conversation_rewind(
    session: &SessionRef,
    checkpoint: Option<&SessionCheckpoint>,
) -> Result<(), String> {
    match checkpoint {
        _ if *session == SessionRef::New => Ok(()),
        None => Err("the agent's session file was not found when that turn began".to_owned()),
        Some(checkpoint)
            if checkpoint.is_held_by_agent() && checkpoint.branch_point().is_none() =>
        {
            Err(format!(
                "where {} stood when that turn began is not known",
                checkpoint.path().display()
            ))
        }
        Some(_) => Ok(()),
    }
}

/// Turns whose session checkpoints are kept for `/rewind` (each holds a copy of the agent's
/// session file, which grows with the conversation).
pub(super) const REWINDABLE_TURNS: usize = 50;

/// Turns whose session checkpoints stay in memory as well when they are kept on disk (the
/// chat's memory must not grow with the session file times fifty).
pub(super) const CHECKPOINTS_IN_MEMORY: usize = 2;

/// The folder of the conversation's snapshot store that keeps its turns' session checkpoints.
pub(super) const CHECKPOINTS_DIR: &str = "checkpoints";

impl Driver {
    /// `/rewind`'s effect (`undone`: the undo of the last rewind): the files through the
    /// snapshot thread (the conversation follows once they are back), or the conversation alone.
    pub(super) fn rewind(&mut self, asked: RewindAsked) {
        let RewindAsked {
            turn,
            conversation,
            files,
            overwrite,
            undone,
        } = asked;
        match (&self.snapshots, files) {
            (Some(snapshots), true) => {
                if undone {
                    snapshots.worker.undo_rewind(turn, overwrite);
                    self.pending_undo_rewind = Some((turn, conversation));
                } else {
                    snapshots.worker.rewind(turn, overwrite);
                    self.pending_rewind = Some((turn, conversation));
                }
            }
            (snapshots, _) => {
                let no_snapshots = files && snapshots.is_none();
                let conversation = conversation.then(|| {
                    if undone {
                        self.undo_rewind_conversation(turn)
                    } else {
                        self.rewind_conversation(turn)
                    }
                });
                self.emit(OrchestratorEvent::Rewound(Rewind {
                    turn,
                    conversation,
                    files: no_snapshots
                        .then(|| Err("no snapshots of the files are kept".to_owned())),
                    undone,
                }));
            }
        }
    }

    /// The files of a rewind (`undone`: of its undo) are back, or why not: the conversation
    /// follows if it was asked, unless files changed since stopped the whole of it until the
    /// user decides.
    pub(super) fn files_rewound(
        &mut self,
        turn: TurnId,
        outcome: Result<UndoOutcome, String>,
        undone: bool,
    ) {
        let pending = if undone {
            self.pending_undo_rewind.take()
        } else {
            self.pending_rewind.take()
        };
        let conversation =
            pending.is_some_and(|(pending, conversation)| pending == turn && conversation);
        let mut rewind = Rewind {
            turn,
            conversation: None,
            files: Some(outcome),
            undone,
        };
        if conversation && rewind.stopped_by_conflicts().is_none() {
            rewind.conversation = Some(if undone {
                self.undo_rewind_conversation(turn)
            } else {
                self.rewind_conversation(turn)
            });
        }
        self.emit(OrchestratorEvent::Rewound(rewind));
    }

    /// Puts the agent's stored session back as it was before turn `turn`, so the model no
    /// longer receives that turn or any later one.
    pub(super) fn rewind_conversation(&mut self, turn: TurnId) -> Result<(), String> {
        if !self.turn_checkpoints.contains_key(&turn) {
            // A turn of an earlier run (`--resume`): its checkpoint was kept on disk.
            let name = CheckpointStore::turn_name(turn);
            match self
                .checkpoint_store
                .as_ref()
                .map(|store| store.load(&name))
            {
                Some(Ok(kept)) => {
                    self.turn_checkpoints.insert(turn, kept);
                }
                Some(Err(error)) => {
                    tracing::info!(turn, %error, "no stored checkpoint of that turn")
                }
                None => {}
            }
        }
        let before_rewind = self.current_session_checkpoint();
        let restored = match self.turn_checkpoints.get(&turn) {
            None => Err(format!(
                "agentty keeps the agent's session for the last {REWINDABLE_TURNS} turns only"
            )),
            Some((session, checkpoint)) => {
                conversation_rewind(session, checkpoint.as_ref()).and_then(|()| match checkpoint {
                    // The turn began the agent's session: before it there was none.
                    _ if *session == SessionRef::New => {
                        self.feedback.push_back(Input::Command(Command::NewSession));
                        Ok(())
                    }
                    // The agent branches its own history there; its history as it is now stays
                    // whole.
                    Some(checkpoint) if checkpoint.is_held_by_agent() => {
                        let point = checkpoint.branch_point();
                        if self.options.provider.branch_session(point) {
                            tracing::info!(turn, ?point, "agent session branched back");
                            Ok(())
                        } else {
                            Err(format!(
                                "{} is kept by the agent, which cannot branch it",
                                checkpoint.path().display()
                            ))
                        }
                    }
                    Some(checkpoint) => match checkpoint.restore() {
                        Ok(()) => {
                            tracing::info!(turn, file = %checkpoint.path().display(), "agent session rewound");
                            self.options.provider.session_restored();
                            Ok(())
                        }
                        Err(error) => Err(format!("its session file cannot be written: {error}")),
                    },
                    None => Ok(()),
                })
            }
        };
        if restored.is_ok() {
            self.turn_checkpoints.retain(|kept, _| *kept <= turn);
            // A retry of an earlier turn's failure must not bring a later session back.
            self.checkpoint = None;
            if let Some(store) = &self.checkpoint_store {
                let (session, checkpoint) = &before_rewind;
                let name = CheckpointStore::rewind_name(turn);
                if let Err(error) = store.save(&name, session, checkpoint.as_ref()) {
                    tracing::warn!(turn, %error, "cannot keep the session from before the rewind");
                }
            }
            self.rewound_sessions.insert(turn, before_rewind);
        }
        restored
    }

    /// The agent's stored session as it is now (what a rewind takes away).
    fn current_session_checkpoint(&self) -> (SessionRef, Option<SessionCheckpoint>) {
        let request = AttemptRequest {
            prompt: String::new(),
            session: self.agent_session.clone(),
            cwd: self.options.cwd.clone(),
            attempt: 1,
            scenario: self.options.scenario.clone(),
            settings: self.settings.clone(),
            raw_line_tap: None,
            ..AttemptRequest::default()
        };
        let checkpoint = self.options.provider.checkpoint(&request);
        (self.agent_session.clone(), checkpoint)
    }

    /// Puts the agent's stored session back as it was before the rewind to before `turn`, and
    /// the next turn continues it.
    pub(super) fn undo_rewind_conversation(&mut self, turn: TurnId) -> Result<(), String> {
        let name = CheckpointStore::rewind_name(turn);
        let kept = match self.rewound_sessions.remove(&turn) {
            Some(kept) => Some(kept),
            None => self
                .checkpoint_store
                .as_ref()
                .and_then(|store| store.load(&name).ok()),
        };
        let Some((session, checkpoint)) = kept else {
            return Err("the agent's session from before that rewind is not kept".to_owned());
        };
        match (&session, &checkpoint) {
            // The agent keeps that session itself, untouched by the rewind (which started a
            // new one or branched it): going back to it is enough, and a branch not yet made
            // is not made.
            (_, Some(checkpoint)) if checkpoint.is_held_by_agent() => {
                self.options.provider.branch_session(None);
            }
            (_, Some(checkpoint)) => {
                checkpoint
                    .restore()
                    .map_err(|error| format!("its session file cannot be written: {error}"))?;
                tracing::info!(turn, file = %checkpoint.path().display(), "rewind undone in the agent session");
                self.options.provider.session_restored();
            }
            (SessionRef::New, None) => {}
            (_, None) => {
                return Err(
                    "the agent's session file was not found when the rewind was made".to_owned(),
                )
            }
        }
        self.feedback.push_back(Input::SessionRestored(session));
        self.checkpoint = None;
        if let Some(store) = &self.checkpoint_store {
            store.remove(&name);
        }
        Ok(())
    }
}
