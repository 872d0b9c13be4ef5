//! Transcript cells as lines: user prompts, assistant markdown, thinking, tool calls, notices,
//! permission requests and plans.
//!
//! Every cell is rendered to [`RichLine`]s from its (already sanitised) model and wrapped to the
//! width; [`CellCache`] keeps the result per revision and width, so an unchanged cell costs
//! nothing per frame. An assistant cell keeps a [`MarkdownStream`]: a delta re-renders only the
//! unfinished tail, and the committed part is wrapped once per width. Live cells (a running
//! tool, a retry countdown) depend on "now" and are rendered every frame; they are small.

use std::time::Instant;

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::markdown::MarkdownStream;
use super::theme::palette;
use super::tool_cell::tool_lines;
use super::wrap::{wrap_into, RichLine, WrapMode};
use crate::app::keymap::{STOP_KEY, TOOLS_KEY};
use crate::app::transcript::{
    AssistantCell, Cell, CellBody, DiffLine, NoticeCell, NoticeLevel, PermissionCell,
    PermissionOutcome, PlanCell, PlanItem, PlanStatus, ThoughtCell,
};
use crate::app::transcript::{ChangesCell, COLLAPSED_CHANGED_FILES};
use crate::app::transcript::{UserCell, FOLDED_PROMPT_LINES};
use crate::stream::{ChangeStatus, PermissionOptionKind, PermissionResolver};

pub(crate) const MARGIN: &str = "  ";

pub(crate) fn dim() -> Style {
    palette().dim
}

/// The rendered rows of one cell, in up to three parts (no copying of big cached parts).
pub(crate) struct CellLines<'a> {
    parts: [&'a [Line<'static>]; 3],
}

impl<'a> CellLines<'a> {
    pub(crate) fn len(&self) -> usize {
        self.parts.iter().map(|part| part.len()).sum()
    }

    pub(crate) fn get(&self, mut index: usize) -> Option<&'a Line<'static>> {
        for part in self.parts {
            if index < part.len() {
                return Some(&part[index]);
            }
            index -= part.len();
        }
        None
    }
}

/// What one cell rendered to, kept between frames.
#[derive(Default)]
pub(crate) struct CellCache {
    rendered: Option<(u64, u16)>,
    head: Vec<Line<'static>>,
    body: Vec<Line<'static>>,
    stream: Option<MarkdownStream>,
    /// Committed markdown wrapped for `(width, superseded)`, and how many lines of it.
    stable: Vec<Line<'static>>,
    stable_key: Option<(u16, bool)>,
    stable_count: usize,
}

impl CellCache {
    /// The cell's rows at `width`, rendering only what changed since the last call.
    pub(crate) fn lines(&mut self, cell: &Cell, width: u16, now: Instant) -> CellLines<'_> {
        let fresh = self.rendered == Some((cell.revision, width)) && !cell.body.is_live();
        if !fresh {
            self.render(cell, width, now);
            self.rendered = Some((cell.revision, width));
        }
        CellLines {
            parts: [&self.head, &self.stable, &self.body],
        }
    }

    fn render(&mut self, cell: &Cell, width: u16, now: Instant) {
        let width = usize::from(width.max(1));
        self.head.clear();
        self.body.clear();
        let rich = match &cell.body {
            CellBody::Assistant(answer) => {
                self.render_assistant(answer, width);
                return;
            }
            CellBody::User(user) => user_lines(user),
            CellBody::Thought(thought) => thought_lines(thought, width),
            CellBody::Tool(tool) => tool_lines(tool, now),
            CellBody::Notice(notice) => notice_lines(notice, now),
            CellBody::Permission(permission) => permission_lines(permission),
            CellBody::Plan(plan) => plan_lines(plan),
            CellBody::Changes(changes) => changes_lines(changes),
        };
        for line in &rich {
            wrap_into(line, width, &mut self.body);
        }
    }

    fn render_assistant(&mut self, answer: &AssistantCell, width: usize) {
        let stream = self.stream.get_or_insert_with(MarkdownStream::new);
        stream.update(&answer.text);
        let patch = answer
            .superseded
            .then(|| dim().add_modifier(Modifier::CROSSED_OUT));
        if answer.superseded {
            // Who replaced it: agentty, retrying a failed attempt, or the agent itself.
            let why = if answer.retried {
                "(this attempt failed; agentty tried again, the new answer follows)"
            } else {
                "(superseded: the agent replaced this text)"
            };
            wrap_into(
                &RichLine::text(why, dim().add_modifier(Modifier::ITALIC))
                    .with_uniform_prefix(vec![Span::raw(MARGIN)]),
                width,
                &mut self.head,
            );
        }
        let key = (width as u16, answer.superseded);
        if self.stable_key != Some(key) || stream.committed().len() < self.stable_count {
            self.stable.clear();
            self.stable_count = 0;
            self.stable_key = Some(key);
        }
        for line in &stream.committed()[self.stable_count..] {
            wrap_with_margin(line, width, patch, &mut self.stable);
        }
        self.stable_count = stream.committed().len();
        for line in stream.render_tail(&answer.text) {
            wrap_with_margin(&line, width, patch, &mut self.body);
        }
        if answer.folded > 0 {
            wrap_into(
                &RichLine::text(
                    format!(
                        "… {} more of this answer not shown: too long to keep on screen (the \
                         conversation's log has all of it)",
                        byte_size(answer.folded)
                    ),
                    dim().add_modifier(Modifier::ITALIC),
                )
                .with_uniform_prefix(vec![Span::raw(MARGIN)]),
                width,
                &mut self.body,
            );
        }
    }
}

/// A byte count for people: `812 bytes`, `48.0 KB`, `57.3 MB`.
fn byte_size(bytes: usize) -> String {
    const KB: f64 = 1000.0;
    let bytes_f = bytes as f64;
    if bytes_f < KB {
        format!("{bytes} bytes")
    } else if bytes_f < KB * KB {
        format!("{:.1} KB", bytes_f / KB)
    } else if bytes_f < KB * KB * KB {
        format!("{:.1} MB", bytes_f / (KB * KB))
    } else {
        format!("{:.1} GB", bytes_f / (KB * KB * KB))
    }
}

fn wrap_with_margin(
    line: &RichLine,
    width: usize,
    patch: Option<Style>,
    out: &mut Vec<Line<'static>>,
) {
    let mut line = line.clone();
    line.first_prefix.insert(0, Span::raw(MARGIN));
    line.rest_prefix.insert(0, Span::raw(MARGIN));
    if let Some(style) = patch {
        line.patch_style(style);
    }
    wrap_into(&line, width, out);
}

/// The characters a folded prompt shows at most (a long single line).
const FOLDED_PROMPT_CHARS: usize = 240;

/// What a folded prompt shows: its first [`FOLDED_PROMPT_LINES`] lines, at most
/// [`FOLDED_PROMPT_CHARS`] characters of them, and what it leaves out ("12 more lines", or
/// "860 more characters" when the lines are all shown but cut).
fn folded_prompt(text: &str) -> (String, String) {
    let total_lines = text.split('\n').count();
    let head: String = text
        .split('\n')
        .take(FOLDED_PROMPT_LINES)
        .collect::<Vec<_>>()
        .join("\n");
    let shown: String = head.chars().take(FOLDED_PROMPT_CHARS).collect();
    let hidden = if total_lines > FOLDED_PROMPT_LINES {
        format!("{} more lines", total_lines - FOLDED_PROMPT_LINES)
    } else {
        let more = text.chars().count() - shown.chars().count();
        format!("{more} more characters")
    };
    let shown = if shown.chars().count() < head.chars().count() {
        format!("{shown}…")
    } else {
        shown
    };
    (shown, hidden)
}

/// A prompt; a retried one is marked `↻` (sent again, once: the failed attempt was undone).
/// A prompt; one that `/rewind` took back is dimmed and says so (its turn stays on screen,
/// but the agent no longer has it).
fn user_lines(user: &UserCell) -> Vec<RichLine> {
    let (text, retry, rewound) = (&user.text, user.retry, user.rewound);
    let (marker, style) = if rewound {
        (dim(), dim().add_modifier(Modifier::CROSSED_OUT))
    } else {
        (
            Style::default()
                .fg(palette().accent)
                .add_modifier(Modifier::BOLD),
            Style::default().add_modifier(Modifier::BOLD),
        )
    };
    // A long prompt (a large paste) folds to its first lines, like a tool's output; one long
    // line folds to its first characters.
    let folded = user.folds() && !user.expanded;
    let (shown_text, hidden) = if folded {
        folded_prompt(text)
    } else {
        (text.to_string(), String::new())
    };
    let mut lines: Vec<RichLine> = shown_text
        .split('\n')
        .enumerate()
        .map(|(index, line)| {
            let first = if index == 0 {
                Span::styled(if retry { "↻ " } else { "› " }, marker)
            } else {
                Span::raw(MARGIN)
            };
            RichLine::text(line, style).with_prefix(vec![first], vec![Span::raw(MARGIN)])
        })
        .collect();
    if user.folds() {
        let note = if folded {
            format!("{}{hidden} · click to expand", toggle_marker(false))
        } else {
            format!("{}click to fold", toggle_marker(true))
        };
        lines.push(RichLine::text(note, dim()).with_uniform_prefix(vec![Span::raw(MARGIN)]));
    }
    if rewound {
        lines.push(
            RichLine::text(
                "↶ rewound: the agent no longer has this turn",
                dim().add_modifier(Modifier::ITALIC),
            )
            .with_uniform_prefix(vec![Span::raw(MARGIN)]),
        );
    }
    lines
}

pub(crate) fn toggle_marker(expanded: bool) -> &'static str {
    if expanded {
        "▾ "
    } else {
        "▸ "
    }
}

fn thought_lines(thought: &ThoughtCell, width: usize) -> Vec<RichLine> {
    let style = dim().add_modifier(Modifier::ITALIC);
    let words = if thought.words == 1 { "word" } else { "words" };
    let ellipsis = if thought.live { "…" } else { "" };
    let mut lines = vec![RichLine::text(
        format!(
            "{}Thinking{ellipsis} · {} {words}",
            toggle_marker(thought.expanded),
            thought.words
        ),
        style,
    )
    .mode(WrapMode::Truncate)];
    if thought.live && !thought.expanded {
        // While it streams, the latest line shows what the agent is thinking about now.
        let latest = thought
            .text
            .trim_end()
            .rsplit('\n')
            .next()
            .unwrap_or_default()
            .trim();
        if !latest.is_empty() {
            let room = width.saturating_sub(LIVE_THOUGHT_PREFIX_WIDTH);
            lines.push(
                RichLine::text(latest_words(latest, room), style)
                    .with_uniform_prefix(vec![Span::styled("  │ ", dim())])
                    .mode(WrapMode::Truncate),
            );
        }
    }
    if thought.expanded {
        let bar = vec![Span::styled("  │ ", dim())];
        for line in thought.text.trim_end().split('\n') {
            lines.push(RichLine::text(line, style).with_uniform_prefix(bar.clone()));
        }
    }
    lines
}

/// The margin and bar in front of a live thought's latest line.
const LIVE_THOUGHT_PREFIX_WIDTH: usize = 4;

/// The end of `line` that fits in `room` columns: the newest words of a long paragraph, after
/// an ellipsis, rather than its first words.
fn latest_words(line: &str, room: usize) -> String {
    if UnicodeWidthStr::width(line) <= room {
        return line.to_owned();
    }
    let mut kept = 0;
    let mut start = line.len();
    for (index, ch) in line.char_indices().rev() {
        let ch_width = UnicodeWidthChar::width(ch).unwrap_or(0);
        if kept + ch_width + 1 > room {
            break;
        }
        kept += ch_width;
        start = index;
    }
    let tail = &line[start..];
    // Start at a word when the cut fell inside one (unless that leaves nothing).
    let tail = match tail.find(' ') {
        Some(space) if space + 1 < tail.len() && !line[..start].ends_with(' ') => {
            &tail[space + 1..]
        }
        _ => tail,
    };
    format!("…{tail}")
}

/// A turn's changed files: a header with the totals, then one row per file (the first few
/// while collapsed), each saying created, deleted or binary as such.
fn changes_lines(changes: &ChangesCell) -> Vec<RichLine> {
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
    let bar = vec![Span::styled("  │ ", dim())];
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

fn notice_lines(notice: &NoticeCell, now: Instant) -> Vec<RichLine> {
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
        let bar = vec![Span::styled("  │ ", dim())];
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
fn permission_lines(permission: &PermissionCell) -> Vec<RichLine> {
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
    let bar = vec![Span::styled("  │ ", dim())];
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

/// The plan as a checklist: done steps ticked and dimmed, the step in progress highlighted.
/// An earlier plan collapses to its header.
fn plan_lines(plan: &PlanCell) -> Vec<RichLine> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_live_line_shows_its_newest_words() {
        let line = "first I will list the files then I will sort them by size";
        assert_eq!(latest_words(line, 80), line);
        let tail = latest_words(line, 20);
        assert_eq!(tail, "…sort them by size");
        assert!(UnicodeWidthStr::width(tail.as_str()) <= 20);
        // One long word: cut inside it, since nothing else fits.
        assert_eq!(latest_words("abcdefghijklmnop", 6), "…lmnop");
    }

    #[test]
    fn a_folded_prompt_says_what_it_leaves_out_lines_or_characters() {
        let long_line = "word ".repeat(220);
        let (shown, hidden) = folded_prompt(&long_line);
        assert_eq!(shown.chars().count(), FOLDED_PROMPT_CHARS + 1);
        assert!(shown.ends_with('…'));
        assert_eq!(
            hidden,
            format!("{} more characters", 1100 - FOLDED_PROMPT_CHARS)
        );
        let pasted: String = (1..=200).map(|n| format!("line {n}\n")).collect();
        let (shown, hidden) = folded_prompt(pasted.trim_end());
        assert_eq!(shown, "line 1\nline 2\nline 3");
        assert_eq!(hidden, "197 more lines");
    }
}
