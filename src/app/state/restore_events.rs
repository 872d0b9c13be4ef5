//! Restores a crash interrupted: asked about one after another as the chat opens, the answer
//! (finish, roll back, later) sent to the orchestrator, and what it did said.

use super::{AppEffect, AppState};
use crate::app::menu::Overlay;
use crate::app::review::{RestoreAnswer, RestorePrompt};
use crate::app::transcript::NoticeLevel;
use crate::orchestrator::Command;
use crate::snapshot::{InterruptedRestore, UndoOutcome};

impl AppState {
    /// Restores a crash interrupted: the first is asked about now, the others after it.
    pub(crate) fn on_restores_interrupted(&mut self, mut found: Vec<InterruptedRestore>) {
        if found.is_empty() {
            return;
        }
        let restore = found.remove(0);
        self.overlay = Some(Overlay::InterruptedRestore(RestorePrompt {
            restore,
            more: found,
        }));
    }

    pub(super) fn on_restore_answer(
        &mut self,
        prompt: RestorePrompt,
        answer: RestoreAnswer,
    ) -> Vec<AppEffect> {
        let effects = match answer {
            RestoreAnswer::Finish | RestoreAnswer::RollBack => {
                vec![AppEffect::Command(Command::ResolveRestore {
                    id: prompt.restore.id.clone(),
                    finish: answer == RestoreAnswer::Finish,
                })]
            }
            RestoreAnswer::Later => {
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "{} Left as it is: asked again when agentty next opens here.",
                        prompt.restore.describe()
                    ),
                );
                Vec::new()
            }
        };
        self.on_restores_interrupted(prompt.more);
        effects
    }

    pub(crate) fn on_restore_resolved(
        &mut self,
        finish: bool,
        outcome: Result<UndoOutcome, String>,
    ) {
        let level = match &outcome {
            Ok(done) if done.failed.is_empty() => NoticeLevel::Info,
            _ => NoticeLevel::Warning,
        };
        self.notice(
            level,
            crate::orchestrator::describe_resolved(finish, &outcome),
        );
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use crate::app::menu::Overlay;
    use crate::app::state::{AppEffect, AppState, StartupInfo};
    use crate::app::transcript::CellBody;
    use crate::orchestrator::{Command, OrchestratorEvent};
    use crate::snapshot::UndoOutcome;

    /// A restore a crash interrupted is asked about as the chat opens; the answer goes to the
    /// orchestrator and what it did is said.
    #[test]
    fn an_interrupted_restore_is_offered_and_its_outcome_said() {
        let now = Instant::now();
        let mut state = AppState::new(StartupInfo::default());
        let restore = crate::snapshot::InterruptedRestore {
            id: "9-1".into(),
            kind: crate::snapshot::RestoreKind::Undo,
            turn: 1,
            done: 281,
            pending: 2719,
            changed_since: 0,
        };
        state.on_orchestrator_event(OrchestratorEvent::RestoresInterrupted(vec![restore]), now);
        assert!(matches!(
            state.overlay,
            Some(Overlay::InterruptedRestore(_))
        ));
        let effects = state.on_key(KeyEvent::new(KeyCode::Char('f'), KeyModifiers::NONE));
        assert_eq!(
            effects,
            [AppEffect::Command(Command::ResolveRestore {
                id: "9-1".into(),
                finish: true
            })]
        );
        state.on_orchestrator_event(
            OrchestratorEvent::RestoreResolved {
                id: "9-1".into(),
                finish: true,
                outcome: Ok(UndoOutcome {
                    restored: vec!["f1.txt".into()],
                    ..UndoOutcome::default()
                }),
            },
            now,
        );
        let said = state.transcript.cells().iter().any(|cell| {
            matches!(&cell.body, CellBody::Notice(notice) if notice.message.contains("Interrupted restore finished"))
        });
        assert!(said, "{:#?}", state.transcript.cells());
    }
}
