//! The agent's plan pinned above the input while its turn runs: a rule with the plan's
//! progress, then its steps (as many as fit, around the step in progress), or the header alone
//! with the current step when the user folded it (`Ctrl+P`, or a click). At the turn's end the
//! plan goes into the transcript (`AppState::commit_plan`) and the pane closes.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::cells::{dim, plan_entry_line};
use super::theme::palette;
use super::wrap::{wrap_into, WrapMode};
use crate::app::keymap::PLAN_KEY;
use crate::app::state::AppState;
use crate::app::transcript::PlanCell;

/// The most rows the pane takes on a tall screen.
const MAX_ROWS: u16 = 10;

/// Rows the pinned plan wants within a screen `height` rows tall (0: no plan to pin).
pub(crate) fn desired_height(state: &AppState, height: u16) -> u16 {
    let Some(plan) = state.live_plan() else {
        return 0;
    };
    if state.plan_folded || plan.entries.is_empty() {
        return 1;
    }
    // A small screen keeps most of its rows for the conversation.
    let cap = if height < 20 {
        (height / 4).max(1)
    } else {
        MAX_ROWS.min(height / 3)
    };
    (1 + plan.entries.len() as u16).min(cap)
}

pub(crate) fn render_pinned_plan(state: &AppState, area: Rect, buf: &mut Buffer) {
    let Some(plan) = state.live_plan() else {
        return;
    };
    if area.height == 0 {
        return;
    }
    buf.set_line(
        area.x,
        area.y,
        &header(plan, state.plan_folded, area.width),
        area.width,
    );
    if state.plan_folded {
        return;
    }
    let rows = usize::from(area.height - 1);
    let total = plan.entries.len();
    // The step in progress stays in sight, with the step before it when there is room.
    let current = plan
        .entries
        .iter()
        .position(|entry| entry.status == crate::app::transcript::PlanStatus::InProgress)
        .or_else(|| {
            plan.entries
                .iter()
                .position(|entry| entry.status != crate::app::transcript::PlanStatus::Completed)
        })
        .unwrap_or(0);
    let mut start = current.saturating_sub(1).min(total.saturating_sub(rows));
    if total <= rows {
        start = 0;
    }
    let more_after = total.saturating_sub(start + rows);
    let mut y = area.y + 1;
    for entry in plan.entries.iter().skip(start).take(rows) {
        if y >= area.bottom() {
            break;
        }
        let last_row = y + 1 == area.bottom();
        let mut lines = Vec::new();
        if last_row && more_after > 0 {
            let note = format!("  … {more_after} more steps");
            buf.set_line(area.x, y, &Line::styled(note, dim()), area.width);
            break;
        }
        wrap_into(
            &plan_entry_line(entry).mode(WrapMode::Truncate),
            usize::from(area.width.max(1)),
            &mut lines,
        );
        if let Some(line) = lines.first() {
            buf.set_line(area.x, y, line, area.width);
        }
        y += 1;
    }
}

/// `── Plan · 1 of 3 done ── Ctrl+P folds ───`; folded, the step in progress follows.
fn header(plan: &PlanCell, folded: bool, width: u16) -> Line<'static> {
    let (done, total) = plan.done();
    let rule = dim();
    let title = Style::default()
        .fg(palette().accent)
        .add_modifier(Modifier::BOLD);
    let mut spans = vec![
        Span::styled("── ", rule),
        Span::styled(format!("≡ Plan · {done} of {total} done"), title),
    ];
    if folded {
        if let Some(current) = plan.current() {
            spans.push(Span::styled(format!(" · ◐ {}", current.content), title));
        }
    }
    let hint = if folded {
        format!(" {PLAN_KEY} shows the steps ")
    } else {
        format!(" {PLAN_KEY} folds ")
    };
    spans.push(Span::styled(format!(" ─{hint}"), rule));
    let used: usize = spans.iter().map(Span::width).sum();
    let fill = usize::from(width).saturating_sub(used);
    spans.push(Span::styled("─".repeat(fill), rule));
    Line::from(spans)
}
