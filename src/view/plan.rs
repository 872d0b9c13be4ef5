//! The agent's plan pinned above the input while its turn runs: a rule with the plan's
//! progress, then its steps (as many as fit, around the step in progress), or the header alone
//! with the current step when the user folded it (`Ctrl+P`, or a click). At the turn's end the
//! plan goes into the transcript (`AppState::commit_plan`) and the pane closes.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::cell_style::dim;
use super::plan_cell::plan_entry_line;
use super::theme::palette;
use super::wrap::{wrap_into, WrapMode};
use crate::app::keymap::PLAN_KEY;
use crate::app::state::AppState;
use crate::app::transcript::{PlanCell, PlanStatus};

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
        .position(|entry| entry.status == PlanStatus::InProgress)
        .or_else(|| {
            plan.entries
                .iter()
                .position(|entry| entry.status != PlanStatus::Completed)
        })
        .unwrap_or(0);
    let start = current.saturating_sub(1).min(total.saturating_sub(rows));
    let hidden_after = total.saturating_sub(start + rows);
    // The last row says how many steps follow, when some do not fit.
    let shown = if hidden_after > 0 { rows - 1 } else { rows };
    let width = usize::from(area.width.max(1));
    let steps = plan.entries.iter().skip(start).take(shown);
    for (y, entry) in (area.y + 1..).zip(steps) {
        let mut lines = Vec::new();
        wrap_into(
            &plan_entry_line(entry).mode(WrapMode::Truncate),
            width,
            &mut lines,
        );
        if let Some(line) = lines.first() {
            buf.set_line(area.x, y, line, area.width);
        }
    }
    if hidden_after > 0 {
        let note = format!("  … {} more steps", total - start - shown);
        buf.set_line(
            area.x,
            area.bottom() - 1,
            &Line::styled(note, dim()),
            area.width,
        );
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

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::app::state::StartupInfo;
    use crate::orchestrator::OrchestratorEvent;
    use crate::stream::{AgentMessage, PlanEntry};

    fn running_plan(statuses: &[&str]) -> AppState {
        let now = Instant::now();
        let mut state = AppState::new(StartupInfo::default());
        state.on_orchestrator_event(
            OrchestratorEvent::TurnStarted {
                turn: 1,
                prompt: "plan".into(),
            },
            now,
        );
        let entries = statuses
            .iter()
            .enumerate()
            .map(|(index, status)| PlanEntry {
                content: format!("step {index}"),
                status: (*status).to_owned(),
                priority: "medium".into(),
            })
            .collect();
        state.on_orchestrator_event(
            OrchestratorEvent::Message {
                turn: 1,
                attempt: 1,
                message: AgentMessage::Plan { entries },
            },
            now,
        );
        state
    }

    fn rows(state: &AppState, width: u16, height: u16) -> Vec<String> {
        let area = Rect::new(0, 0, width, height);
        let mut buf = Buffer::empty(area);
        render_pinned_plan(state, area, &mut buf);
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buf[(x, y)].symbol().to_owned())
                    .collect::<String>()
                    .trim_end()
                    .to_owned()
            })
            .collect()
    }

    #[test]
    fn a_long_plan_keeps_the_step_in_progress_in_sight() {
        let state = running_plan(&[
            "completed",
            "completed",
            "completed",
            "in_progress",
            "pending",
            "pending",
        ]);
        // A small screen gives the pane a quarter of its rows.
        assert_eq!(desired_height(&state, 12), 3);
        assert_eq!(desired_height(&state, 50), 7);
        let shown = rows(&state, 40, 4);
        assert!(
            shown[0].starts_with("── ≡ Plan · 3 of 6 done ─ Ctrl+P folds ─"),
            "{shown:?}"
        );
        assert_eq!(shown[1], "  ✔ step 2");
        assert_eq!(shown[2], "  ◐ step 3");
        assert_eq!(shown[3], "  … 2 more steps");
    }

    #[test]
    fn folded_the_plan_is_one_row_naming_the_step_in_progress() {
        let mut state = running_plan(&["completed", "in_progress"]);
        state.toggle_plan();
        assert_eq!(desired_height(&state, 50), 1);
        let shown = rows(&state, 70, 1);
        assert!(
            shown[0].starts_with("── ≡ Plan · 1 of 2 done · ◐ step 1 ─ Ctrl+P shows the steps ─"),
            "{shown:?}"
        );
        // No turn, no pinned plan.
        assert_eq!(
            desired_height(&AppState::new(StartupInfo::default()), 50),
            0
        );
    }
}
