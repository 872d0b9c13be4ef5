//! The agent's plan: the latest one pinned above the input while the turn runs, then put into
//! the transcript at the turn's end, an earlier plan marked as replaced.

use super::AppState;
use crate::app::transcript::{CellBody, PlanCell};
use crate::stream::PlanEntry;

impl AppState {
    /// The latest plan replaces the turn's plan, pinned above the input while the turn runs.
    pub(super) fn on_plan(&mut self, entries: &[PlanEntry]) {
        if let Some(turn) = self.turn.as_mut() {
            turn.plan = Some(PlanCell::of(entries));
        }
    }

    /// The turn ends: its plan goes into the transcript, below the turn's work, and an
    /// earlier plan is marked as replaced (and collapses).
    pub(super) fn commit_plan(&mut self) {
        let Some(plan) = self.turn.as_mut().and_then(|turn| turn.plan.take()) else {
            return;
        };
        self.close_assistant();
        let earlier = self
            .transcript
            .cells()
            .iter()
            .rev()
            .find(|cell| matches!(&cell.body, CellBody::Plan(plan) if !plan.superseded))
            .map(|cell| cell.id);
        if let Some(id) = earlier {
            self.transcript.update(id, |body| {
                if let CellBody::Plan(plan) = body {
                    plan.superseded = true;
                    plan.expanded = false;
                }
            });
        }
        self.transcript.push(CellBody::Plan(plan));
    }
}
