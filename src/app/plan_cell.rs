//! The agent's plan as the transcript keeps it: its steps made inert, how far each has got,
//! and whether a later plan replaced it.

use super::inert::InertText;

/// The agent's plan: its steps and how far each has got.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanCell {
    pub(crate) entries: Vec<PlanItem>,
    /// A later plan replaced this one (shown collapsed, dimmed).
    pub superseded: bool,
    pub expanded: bool,
}

impl PlanCell {
    /// The plan made of the agent's `entries`, current and shown whole.
    pub(crate) fn of(entries: &[crate::stream::PlanEntry]) -> Self {
        Self {
            entries: entries.iter().map(PlanItem::of).collect(),
            superseded: false,
            expanded: true,
        }
    }

    /// The step in progress, if one is.
    pub(crate) fn current(&self) -> Option<&PlanItem> {
        self.entries
            .iter()
            .find(|entry| entry.status == PlanStatus::InProgress)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlanItem {
    pub(crate) content: InertText,
    pub(crate) status: PlanStatus,
    /// `high`, `medium`, `low` (as the agent wrote it).
    pub(crate) priority: InertText,
}

impl PlanItem {
    fn of(entry: &crate::stream::PlanEntry) -> Self {
        Self {
            content: InertText::new(&entry.content),
            status: match entry.status.as_str() {
                "pending" => PlanStatus::Pending,
                "in_progress" => PlanStatus::InProgress,
                "completed" => PlanStatus::Completed,
                other => PlanStatus::Other(InertText::new(other)),
            },
            priority: InertText::new(&entry.priority),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PlanStatus {
    Pending,
    InProgress,
    Completed,
    /// A status this version does not know, as the agent wrote it.
    Other(InertText),
}

impl PlanCell {
    /// Steps completed, of all.
    pub fn done(&self) -> (usize, usize) {
        let done = self
            .entries
            .iter()
            .filter(|entry| entry.status == PlanStatus::Completed)
            .count();
        (done, self.entries.len())
    }
}
