//! A notice in the transcript: its icon and message (a retry's live countdown), and its
//! details folded under a summary line.

use std::time::Instant;

use ratatui::style::{Modifier, Style};
use ratatui::text::Span;

use super::cell_style::{detail_bar, dim, toggle_marker, MARGIN};
use super::theme::palette;
use super::wrap::{RichLine, WrapMode};
use crate::app::keymap::{STOP_KEY, TOOLS_KEY};
use crate::app::transcript::{NoticeCell, NoticeLevel};

pub(crate) fn notice_lines(notice: &NoticeCell, now: Instant) -> Vec<RichLine> {
    let (icon, style) = match notice.level {
        NoticeLevel::Info => ("• ", dim()),
        NoticeLevel::Warning => ("⚠ ", Style::default().fg(palette().warning)),
        NoticeLevel::Error => ("✗ ", Style::default().fg(palette().error)),
        NoticeLevel::Stopped => ("■ ", Style::default().fg(palette().warning)),
        NoticeLevel::Retry => ("↻ ", Style::default().fg(palette().retry)),
    };
    let message = match &notice.countdown {
        Some(countdown) => {
            let remaining = countdown.deadline.saturating_duration_since(now);
            // Round up: "in 0 s" would read as if it had already started.
            let seconds = remaining.as_millis().div_ceil(1000);
            format!(
                "Retrying in {seconds} s (attempt {} of {}): {} · {STOP_KEY} cancels",
                countdown.attempt, countdown.max_attempts, countdown.reason
            )
        }
        None => notice.message.to_string(),
    };
    let mut lines = Vec::new();
    for (index, line) in message.split('\n').enumerate() {
        let first = if index == 0 {
            Span::styled(icon, style)
        } else {
            Span::raw(MARGIN)
        };
        lines.push(RichLine::text(line, style).with_prefix(vec![first], vec![Span::raw(MARGIN)]));
    }
    if notice.details.is_empty() {
        return lines;
    }
    let summary = if notice.details_summary.is_empty() {
        notice.details_label.to_owned()
    } else {
        format!("{}: {}", notice.details_label, notice.details_summary)
    };
    let hint = if notice.expanded {
        String::new()
    } else {
        format!(" ({TOOLS_KEY} or click to expand)")
    };
    lines.push(
        RichLine::text(
            format!("{}{summary}{hint}", toggle_marker(notice.expanded)),
            dim(),
        )
        .with_uniform_prefix(vec![Span::raw(MARGIN)])
        .mode(WrapMode::Truncate),
    );
    if notice.expanded {
        let bar = detail_bar();
        for section in &notice.details {
            lines.push(
                RichLine::text(
                    section.title.clone(),
                    Style::default().add_modifier(Modifier::BOLD),
                )
                .with_uniform_prefix(bar.clone()),
            );
            for line in &section.lines {
                lines.push(
                    RichLine::text(line.clone(), Style::default().fg(palette().output))
                        .with_uniform_prefix(bar.clone())
                        .mode(WrapMode::Chars),
                );
            }
        }
    }
    lines
}
