//! A turn's changed files in the transcript: a header with the totals and what to do with
//! them, then a row per file (the first few while folded).

use ratatui::style::{Modifier, Style};
use ratatui::text::Span;

use super::cell_style::{detail_bar, dim};
use super::theme::palette;
use super::wrap::{RichLine, WrapMode};
use crate::app::keymap::TOOLS_KEY;
use crate::app::transcript::{ChangesCell, COLLAPSED_CHANGED_FILES};
use crate::stream::ChangeStatus;

/// A turn's changed files: a header with the totals, then one row per file (the first few
/// while collapsed), each saying created, deleted or binary as such.
pub(crate) fn changes_lines(changes: &ChangesCell) -> Vec<RichLine> {
    let accent = Style::default().fg(palette().accent);
    let mut header = vec![
        Span::styled("± ", accent),
        Span::styled(
            crate::app::review::changes_summary(&changes.files),
            Style::default().add_modifier(Modifier::BOLD),
        ),
    ];
    header.push(Span::styled(
        if changes.undone {
            " · undone"
        } else {
            " · /diff review · /undo revert"
        },
        dim(),
    ));
    let mut lines = vec![RichLine::new(header).mode(WrapMode::Truncate)];
    let shown = if changes.expanded {
        changes.files.len()
    } else {
        changes.files.len().min(COLLAPSED_CHANGED_FILES)
    };
    let bar = detail_bar();
    for file in &changes.files[..shown] {
        let (mark, style, what) = match file.status {
            ChangeStatus::Created => (
                "A ",
                Style::default().fg(palette().success),
                format!("created · +{}", file.added),
            ),
            ChangeStatus::Modified => (
                "M ",
                Style::default().fg(palette().warning),
                format!("+{} −{}", file.added, file.removed),
            ),
            ChangeStatus::Deleted => (
                "D ",
                Style::default().fg(palette().error),
                format!("deleted · −{}", file.removed),
            ),
            ChangeStatus::Binary => (
                "B ",
                Style::default().fg(palette().retry),
                "binary".to_owned(),
            ),
        };
        let what = match (&file.detail, file.too_big, &file.not_kept) {
            (_, true, Some(why)) => format!("{} · not kept: {why}", file.status.as_str()),
            (_, true, None) => format!("{} · too big to keep", file.status.as_str()),
            (Some(detail), false, _) => format!("{what} · {detail}"),
            (None, false, _) => what,
        };
        let mut spans = bar.clone();
        spans.push(Span::styled(mark, style));
        spans.push(Span::raw(file.path.to_string()));
        spans.push(Span::styled(format!("  {what}"), dim()));
        lines.push(RichLine::new(spans).mode(WrapMode::Truncate));
    }
    if shown < changes.files.len() {
        lines.push(
            RichLine::text(
                format!(
                    "… {} more files ({TOOLS_KEY} or click to expand)",
                    changes.files.len() - shown
                ),
                dim().add_modifier(Modifier::ITALIC),
            )
            .with_uniform_prefix(bar),
        );
    }
    lines
}
