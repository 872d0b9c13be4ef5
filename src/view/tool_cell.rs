//! A tool call's rows: a header (state, name, what it does), the calls of the sub-agent it
//! runs nested under it (each with its own state), then its output — collapsed to a few lines
//! until expanded, a patch's diff coloured as one.

use std::time::{Duration, Instant};

use ratatui::style::{Modifier, Style};
use ratatui::text::Span;

use super::theme::palette;
use super::wrap::{RichLine, WrapMode};
use crate::app::keymap::TOOLS_KEY;
use crate::app::transcript::{ToolCell, ToolStatus};

/// Tool output lines shown while collapsed (head and tail around an elision).
const COLLAPSED_TOOL_LINES: usize = 5;
/// A sub-agent's calls listed while its call is collapsed (the latest ones).
const COLLAPSED_CHILDREN: usize = 4;

fn dim() -> Style {
    palette().dim
}

/// `4.2 s`, `1m 05s`.
pub(crate) fn format_elapsed(elapsed: Duration) -> String {
    let seconds = elapsed.as_secs_f64();
    if seconds < 60.0 {
        format!("{seconds:.1} s")
    } else {
        let whole = elapsed.as_secs();
        format!("{}m {:02}s", whole / 60, whole % 60)
    }
}

pub(crate) fn tool_lines(tool: &ToolCell, now: Instant) -> Vec<RichLine> {
    let header = header_spans(tool, now);
    // Expanded, the whole command is shown, wrapped under the header.
    let header = if tool.expanded {
        RichLine::new(header)
            .with_prefix(Vec::new(), vec![Span::raw("  ")])
            .mode(WrapMode::Words)
    } else {
        RichLine::new(header).mode(WrapMode::Truncate)
    };
    let mut lines = vec![header];
    children_lines(tool, now, &mut lines);
    output_lines(tool, &mut lines);
    lines
}

/// `✓ Bash · done 0.4 s · echo one`.
fn header_spans(tool: &ToolCell, now: Instant) -> Vec<Span<'static>> {
    let (icon, icon_style, status) = match tool.status {
        ToolStatus::Running { since } => (
            "⋯ ",
            Style::default().fg(palette().warning),
            format!(
                "running {}",
                format_elapsed(now.saturating_duration_since(since))
            ),
        ),
        ToolStatus::WaitingForYou { .. } => (
            "? ",
            Style::default()
                .fg(palette().warning)
                .add_modifier(Modifier::BOLD),
            "waiting for you".to_owned(),
        ),
        ToolStatus::Done { elapsed } => (
            "✓ ",
            Style::default().fg(palette().success),
            format!("done {}", format_elapsed(elapsed)),
        ),
        ToolStatus::Failed { elapsed } => (
            "✗ ",
            Style::default().fg(palette().error),
            format!("failed {}", format_elapsed(elapsed)),
        ),
        ToolStatus::Interrupted { elapsed } => (
            "■ ",
            Style::default().fg(palette().warning),
            format!("no result {}", format_elapsed(elapsed)),
        ),
    };
    let mut header = vec![
        Span::styled(icon, icon_style),
        Span::styled(
            tool.name.clone(),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::styled(format!(" · {status}"), icon_style),
    ];
    if !tool.summary.is_empty() {
        header.push(Span::styled(format!(" · {}", tool.summary), dim()));
    }
    header
}

/// The sub-agent's calls under the call that runs it: every one when expanded (with their
/// output), the latest few when not.
fn children_lines(tool: &ToolCell, now: Instant, lines: &mut Vec<RichLine>) {
    let count = tool.children.len();
    if count == 0 {
        return;
    }
    let shown = if tool.expanded {
        count
    } else {
        count.min(COLLAPSED_CHILDREN)
    };
    if shown < count {
        lines.push(
            RichLine::text(
                format!("  │ … {} earlier calls of the sub-agent", count - shown),
                dim().add_modifier(Modifier::ITALIC),
            )
            .mode(WrapMode::Truncate),
        );
    }
    // The tree closes on the last call unless the call's own output follows it.
    let output_follows = !tool.output.trim_end_matches('\n').is_empty();
    for (index, child) in tool.children[count - shown..].iter().enumerate() {
        let last = index + 1 == shown && !output_follows;
        let (branch, rest) = if last {
            ("  └ ", "    ")
        } else {
            ("  ├ ", "  │ ")
        };
        let nested = if tool.expanded {
            tool_lines(child, now)
        } else {
            // Collapsed: each call's header alone.
            vec![RichLine::new(header_spans(child, now)).mode(WrapMode::Truncate)]
        };
        for (row, mut line) in nested.into_iter().enumerate() {
            let first = if row == 0 { branch } else { rest };
            line.first_prefix.insert(0, Span::styled(first, dim()));
            line.rest_prefix.insert(0, Span::styled(rest, dim()));
            lines.push(line);
        }
    }
}

fn output_lines(tool: &ToolCell, lines: &mut Vec<RichLine>) {
    let output = tool.output.trim_end_matches('\n');
    if output.is_empty() {
        return;
    }
    let bar = vec![Span::styled("  │ ", dim())];
    let failed = matches!(tool.status, ToolStatus::Failed { .. });
    let style_of = |line: &str| output_style(line, tool.patch, failed);
    let all: Vec<&str> = output.split('\n').collect();
    if tool.expanded || all.len() <= COLLAPSED_TOOL_LINES {
        let mode = if tool.expanded {
            WrapMode::Chars
        } else {
            WrapMode::Truncate
        };
        for line in all {
            lines.push(
                RichLine::text(line, style_of(line))
                    .with_uniform_prefix(bar.clone())
                    .mode(mode),
            );
        }
        return;
    }
    let head = 2;
    let tail = 2;
    for line in &all[..head] {
        lines.push(
            RichLine::text(*line, style_of(line))
                .with_uniform_prefix(bar.clone())
                .mode(WrapMode::Truncate),
        );
    }
    lines.push(
        RichLine::text(
            format!(
                "… {} more lines ({TOOLS_KEY} or click to expand)",
                all.len() - head - tail
            ),
            dim().add_modifier(Modifier::ITALIC),
        )
        .with_uniform_prefix(bar.clone())
        .mode(WrapMode::Truncate),
    );
    for line in &all[all.len() - tail..] {
        lines.push(
            RichLine::text(*line, style_of(line))
                .with_uniform_prefix(bar.clone())
                .mode(WrapMode::Truncate),
        );
    }
}

/// A patch's added lines green, removed red, hunk headers dim; a failure red; else output.
fn output_style(line: &str, patch: bool, failed: bool) -> Style {
    if failed {
        return Style::default().fg(palette().error);
    }
    if patch {
        if line.starts_with('+') {
            return Style::default().fg(palette().added);
        }
        if line.starts_with('-') {
            return Style::default().fg(palette().removed);
        }
        if line.starts_with("@@") {
            return dim();
        }
    }
    Style::default().fg(palette().output)
}
