//! The plan in the transcript: a checklist (done steps ticked and dimmed, the step in progress
//! highlighted), an earlier plan folded to its header; one step's row is shared with the pane
//! pinned above the input (`plan`).

use ratatui::style::{Modifier, Style};
use ratatui::text::Span;

use super::cell_style::{dim, toggle_marker, MARGIN};
use super::theme::palette;
use super::wrap::{RichLine, WrapMode};
use crate::app::transcript::{PlanCell, PlanItem, PlanStatus};

/// The plan as a checklist: done steps ticked and dimmed, the step in progress highlighted.
/// An earlier plan collapses to its header.
pub(crate) fn plan_lines(plan: &PlanCell) -> Vec<RichLine> {
    let (done, total) = plan.done();
    let header_style = if plan.superseded {
        dim()
    } else {
        Style::default().add_modifier(Modifier::BOLD)
    };
    let header = if plan.superseded {
        let hint = if plan.expanded {
            ""
        } else {
            " (click to expand)"
        };
        format!(
            "{}Earlier plan · {done} of {total} done · replaced below{hint}",
            toggle_marker(plan.expanded)
        )
    } else if total == 0 {
        "≡ Plan · no steps".to_owned()
    } else {
        format!("≡ Plan · {done} of {total} done")
    };
    let mut lines = vec![RichLine::text(header, header_style).mode(WrapMode::Truncate)];
    if plan.superseded && !plan.expanded {
        return lines;
    }
    for entry in &plan.entries {
        let mut line = plan_entry_line(entry);
        if plan.superseded {
            line.patch_style(dim());
        }
        lines.push(line);
    }
    lines
}

/// One step of a plan: done ticked and dimmed, in progress highlighted, a high priority said.
pub(crate) fn plan_entry_line(entry: &PlanItem) -> RichLine {
    let (mark, mark_style, text_style) = match &entry.status {
        PlanStatus::Completed => (
            "✔ ".to_owned(),
            Style::default().fg(palette().success),
            dim().add_modifier(Modifier::CROSSED_OUT),
        ),
        PlanStatus::InProgress => (
            "◐ ".to_owned(),
            Style::default().fg(palette().accent),
            Style::default()
                .fg(palette().accent)
                .add_modifier(Modifier::BOLD),
        ),
        PlanStatus::Pending => ("□ ".to_owned(), dim(), Style::default()),
        PlanStatus::Other(status) => (format!("{status}: "), dim(), Style::default()),
    };
    let mut content = vec![Span::styled(entry.content.clone(), text_style)];
    if entry.priority == "high" && entry.status != PlanStatus::Completed {
        content.push(Span::styled(" (high)", dim()));
    }
    RichLine::new(content).with_prefix(
        vec![Span::raw(MARGIN), Span::styled(mark, mark_style)],
        vec![Span::raw("    ")],
    )
}
