//! An edit the agent asks permission for, as diff rows (in the prompt and in the transcript):
//! its counts, a one-line summary, and the rows themselves.

use ratatui::style::{Modifier, Style};
use ratatui::text::Span;

use super::cell_style::dim;
use super::theme::palette;
use super::wrap::{RichLine, WrapMode};
use crate::app::transcript::DiffLine;

/// Files, added and removed lines of a diff (of the lines kept).
pub(crate) fn diff_counts(diff: &[DiffLine]) -> (usize, usize, usize) {
    let count = |wanted: fn(&DiffLine) -> bool| diff.iter().filter(|line| wanted(line)).count();
    (
        count(|line| matches!(line, DiffLine::File(_))),
        count(|line| matches!(line, DiffLine::Added(_))),
        count(|line| matches!(line, DiffLine::Removed(_))),
    )
}

/// "diff: 2 files, +10 -3" (of the lines kept; `hidden` more).
pub(crate) fn diff_summary(diff: &[DiffLine], hidden: usize) -> String {
    let (files, added, removed) = diff_counts(diff);
    let files = if files == 1 {
        "1 file".to_owned()
    } else {
        format!("{files} files")
    };
    let more = if hidden > 0 {
        format!(", {hidden} more lines")
    } else {
        String::new()
    };
    format!("diff: {files}, +{added} -{removed}{more}")
}

/// Diff rows: file headers bold, removed lines red with `-`, added green with `+`, context dim.
pub(crate) fn diff_rich_lines(diff: &[DiffLine]) -> Vec<RichLine> {
    diff.iter()
        .map(|line| {
            let (mark, text, style) = match line {
                DiffLine::File(path) => {
                    return RichLine::text(
                        path.to_string(),
                        Style::default().add_modifier(Modifier::BOLD),
                    )
                    .mode(WrapMode::Truncate);
                }
                DiffLine::Gap(count) => {
                    return RichLine::text(
                        format!("  … {count} unchanged lines"),
                        dim().add_modifier(Modifier::ITALIC),
                    )
                    .mode(WrapMode::Truncate);
                }
                DiffLine::Context(text) => ("  ", text, dim()),
                DiffLine::Removed(text) => ("- ", text, Style::default().fg(palette().removed)),
                DiffLine::Added(text) => ("+ ", text, Style::default().fg(palette().added)),
            };
            RichLine::text(text.to_string(), style)
                .with_prefix(vec![Span::styled(mark, style)], vec![Span::raw("  ")])
                .mode(WrapMode::Truncate)
        })
        .collect()
}
