//! A permission request in the transcript: the question on one line with its outcome, and,
//! expanded, the command, the paths and the edit's diff below.

use ratatui::style::{Modifier, Style};
use ratatui::text::Span;

use super::cell_style::{detail_bar, dim, toggle_marker, MARGIN};
use super::edit_diff::{diff_rich_lines, diff_summary};
use super::theme::palette;
use super::wrap::{RichLine, WrapMode};
use crate::app::keymap::TOOLS_KEY;
use crate::app::transcript::{PermissionCell, PermissionOutcome};
use crate::stream::{PermissionOptionKind, PermissionResolver};

/// The icon and colour of a permission request's state.
fn permission_icon(outcome: &PermissionOutcome) -> (&'static str, Style) {
    match outcome {
        PermissionOutcome::Waiting => (
            "? ",
            Style::default()
                .fg(palette().warning)
                .add_modifier(Modifier::BOLD),
        ),
        PermissionOutcome::Chosen {
            kind: Some(kind), ..
        } if kind.allows() => ("✓ ", Style::default().fg(palette().success)),
        PermissionOutcome::Chosen { kind: Some(_), .. } => {
            ("✗ ", Style::default().fg(palette().error))
        }
        PermissionOutcome::Chosen { kind: None, .. } => ("• ", dim()),
        PermissionOutcome::Cancelled { .. } | PermissionOutcome::Unanswered => {
            ("■ ", Style::default().fg(palette().warning))
        }
    }
}

/// "allowed once (you)", "rejected (policy)", "cancelled", ...
pub(crate) fn permission_outcome_text(outcome: &PermissionOutcome) -> String {
    let who = |by: &PermissionResolver| match by {
        PermissionResolver::User => "you",
        PermissionResolver::Policy => "policy",
    };
    match outcome {
        PermissionOutcome::Waiting => "waiting for your answer".to_owned(),
        PermissionOutcome::Chosen {
            kind: Some(kind),
            by,
            ..
        } => {
            let what = match kind {
                PermissionOptionKind::AllowOnce => "allowed once",
                PermissionOptionKind::AllowAlways => "allowed always",
                PermissionOptionKind::RejectOnce => "rejected",
                PermissionOptionKind::RejectAlways => "rejected always",
            };
            format!("{what} ({})", who(by))
        }
        PermissionOutcome::Chosen {
            kind: None,
            name,
            by,
        } => format!("answered {name} ({})", who(by)),
        PermissionOutcome::Cancelled {
            by: PermissionResolver::User,
        } => "cancelled".to_owned(),
        PermissionOutcome::Cancelled { by } => format!("cancelled ({})", who(by)),
        PermissionOutcome::Unanswered => "not answered (the attempt ended)".to_owned(),
    }
}

/// The request on one line with its outcome; expanded, the command, paths and diff below.
pub(crate) fn permission_lines(permission: &PermissionCell) -> Vec<RichLine> {
    let (icon, style) = permission_icon(&permission.outcome);
    let header = vec![
        Span::styled(icon, style),
        Span::styled(
            permission.question(),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::styled(
            format!(" — {}", permission_outcome_text(&permission.outcome)),
            style,
        ),
    ];
    let mut header = header;
    if let Some(note) = &permission.feedback {
        header.push(Span::styled(format!(" · instead: {note}"), dim()));
    }
    let mut lines = vec![if permission.expanded {
        RichLine::new(header)
            .with_prefix(Vec::new(), vec![Span::raw(MARGIN)])
            .mode(WrapMode::Words)
    } else {
        RichLine::new(header).mode(WrapMode::Truncate)
    }];
    if !permission.has_details() {
        return lines;
    }
    if !permission.expanded {
        if !permission.diff.is_empty() {
            lines.push(
                RichLine::text(
                    format!(
                        "{}{} ({TOOLS_KEY} or click to expand)",
                        toggle_marker(false),
                        diff_summary(&permission.diff, permission.diff_hidden)
                    ),
                    dim(),
                )
                .with_uniform_prefix(vec![Span::raw(MARGIN)])
                .mode(WrapMode::Truncate),
            );
        }
        return lines;
    }
    let bar = detail_bar();
    lines.extend(
        permission_details(permission)
            .into_iter()
            .map(|line| line.with_uniform_prefix(bar.clone())),
    );
    lines.extend(diff_rich_lines(&permission.diff).into_iter().map(|line| {
        let mut prefixed = line;
        prefixed.first_prefix.splice(0..0, bar.clone());
        prefixed.rest_prefix.splice(0..0, bar.clone());
        prefixed
    }));
    if permission.diff_hidden > 0 {
        lines.push(
            RichLine::text(
                format!("… {} more diff lines", permission.diff_hidden),
                dim().add_modifier(Modifier::ITALIC),
            )
            .with_uniform_prefix(bar),
        );
    }
    lines
}

/// The command (when it says more than the title) and the paths a request touches.
pub(crate) fn permission_details(permission: &PermissionCell) -> Vec<RichLine> {
    let mut lines = Vec::new();
    if let Some(command) = permission
        .command
        .as_ref()
        .filter(|command| command.trim() != permission.title.trim())
    {
        for (index, line) in command.split('\n').enumerate() {
            let first = if index == 0 { "$ " } else { "  " };
            lines.push(
                RichLine::text(line, Style::default().fg(palette().accent))
                    .with_prefix(vec![Span::styled(first, dim())], vec![Span::raw("  ")])
                    .mode(WrapMode::Chars),
            );
        }
    }
    // The diff names its files; the paths are listed when there is no diff to show them.
    if permission.diff.is_empty() {
        for path in &permission.paths {
            lines.push(
                RichLine::text(path.clone(), Style::default())
                    .with_prefix(vec![Span::styled("path ", dim())], vec![Span::raw("     ")])
                    .mode(WrapMode::Chars),
            );
        }
    }
    lines
}
