//! `/diff`, the `/undo` question and the `/rewind` picker, drawn over the chat. The diff takes the whole screen but a
//! one-cell margin, so it is usable from 40x12 up: long lines are cut at the edge, file headers
//! stand out, added and context lines are syntax-highlighted by the file's extension.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::frame::{age, centered, draw_rows, footer, footer_room, frame, mark_selected};
use super::highlight::CodeHighlighter;
use super::theme::palette;
use super::wrap::{wrap, RichLine, WrapMode};
use crate::app::keymap::{pane_hint_now, DIFF_KEYS, DIFF_SCOPE_KEY, UNDO_CONFIRM_KEYS};
use crate::app::review::{ConfirmFor, DiffRow, DiffScope, DiffView, UndoConfirm};
use crate::app::rewind::{LastRewind, RewindPicker};
use crate::snapshot::DiffLineKind;
use crate::stream::ChangeStatus;

/// Below this width the title is short.
const NARROW: u16 = 60;

/// The diff's box on a screen of `area`.
fn diff_box(area: Rect) -> Rect {
    if area.width > 44 && area.height > 14 {
        Rect::new(area.x + 1, area.y, area.width - 2, area.height)
    } else {
        area
    }
}

/// The rows of the diff a screen of `area` shows (inside its box's border): a page of it.
pub(crate) fn diff_page(area: Rect) -> usize {
    usize::from(diff_box(area).height.saturating_sub(2))
}

pub(crate) fn render_diff(view: &DiffView, area: Rect, buf: &mut Buffer) {
    let outer = diff_box(area);
    let rows = view.rows();
    let files = view.file_count();
    let files = format!("{files} file{}", if files == 1 { "" } else { "s" });
    let turns = if view.turns == 1 {
        "1 turn".to_owned()
    } else {
        format!("{} turns", view.turns)
    };
    let title = match (view.scope, outer.width >= NARROW) {
        (DiffScope::Conversation, true) => {
            format!("Changes · this conversation ({turns}) · {files}")
        }
        (DiffScope::Conversation, false) => format!("All {turns} · {files}"),
        (DiffScope::LastTurn, wide) => match (&view.earlier, wide) {
            (None, true) => format!("Changes · the last turn · {files}"),
            (None, false) => format!("Last turn · {files}"),
            (Some(earlier), true) => format!(
                "Changes · {} (the last that changed files) · {files}",
                earlier.named
            ),
            (Some(earlier), false) => format!("Prompt {} · {files}", earlier.number),
        },
    };
    let hint = pane_hint_now(DIFF_KEYS, footer_room(outer), |key| {
        Some(if key.keys == DIFF_SCOPE_KEY {
            view.other_scope()
        } else {
            key.what.to_owned()
        })
    });
    let inner = frame(&title, hint.trim(), outer, buf);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    if rows.is_empty() {
        draw_rows(
            &[Line::styled(
                " The turns' changes cancel out: the files are as before them.",
                palette().dim,
            )],
            inner,
            buf,
        );
        return;
    }
    let first = view.scroll.min(rows.len().saturating_sub(1));
    let width = usize::from(inner.width);
    let lines: Vec<Line<'static>> = rows
        .iter()
        .skip(first)
        .take(usize::from(inner.height))
        .map(|row| fit(row_line(row), width))
        .collect();
    draw_rows(&lines, inner, buf);
}

/// One row cut to `width`.
fn fit(line: RichLine, width: usize) -> Line<'static> {
    wrap(&line.mode(WrapMode::Truncate), width)
        .into_iter()
        .next()
        .unwrap_or_default()
}

fn row_line(row: &DiffRow) -> RichLine {
    match row {
        DiffRow::File {
            path,
            status,
            added,
            removed,
        } => {
            let what = match status {
                ChangeStatus::Created => format!("created +{added}"),
                ChangeStatus::Deleted => format!("deleted −{removed}"),
                ChangeStatus::Modified => format!("+{added} −{removed}"),
                ChangeStatus::Binary => "binary".to_owned(),
            };
            RichLine::new(vec![
                Span::styled(
                    format!("━ {path} "),
                    Style::default()
                        .fg(palette().accent)
                        .add_modifier(Modifier::BOLD),
                ),
                Span::styled(what, palette().dim),
            ])
        }
        DiffRow::Line { kind, text, path } => match kind {
            DiffLineKind::Hunk => RichLine::text(
                text.clone(),
                Style::default()
                    .fg(palette().accent)
                    .add_modifier(Modifier::DIM),
            ),
            DiffLineKind::Note => RichLine::text(
                format!("  ({text})"),
                palette().dim.add_modifier(Modifier::ITALIC),
            ),
            DiffLineKind::Removed => RichLine::new(vec![
                Span::styled(
                    "-",
                    Style::default()
                        .fg(palette().removed)
                        .add_modifier(Modifier::BOLD),
                ),
                Span::styled(text.clone(), Style::default().fg(palette().removed)),
            ]),
            DiffLineKind::Added | DiffLineKind::Context => {
                let sign = if *kind == DiffLineKind::Added {
                    Span::styled(
                        "+",
                        Style::default()
                            .fg(palette().added)
                            .add_modifier(Modifier::BOLD),
                    )
                } else {
                    Span::raw(" ")
                };
                let mut spans = vec![sign];
                spans.extend(highlight(path, text));
                RichLine::new(spans)
            }
        },
    }
}

/// `text` highlighted as a line of `path`'s language (plain when it has none). Each line is
/// highlighted on its own: only the rows on screen are, and a diff's lines are not a whole file.
fn highlight(path: &str, text: &str) -> Vec<Span<'static>> {
    let extension = std::path::Path::new(path)
        .extension()
        .and_then(|extension| extension.to_str())
        .unwrap_or("");
    CodeHighlighter::new(extension).highlight_line(text)
}

pub(crate) fn render_confirm_undo(confirm: &UndoConfirm, area: Rect, buf: &mut Buffer) {
    let width = 64.min(area.width);
    let text_width = usize::from(width.saturating_sub(2)).max(1);
    let lines = |text: String, style: Style| -> Vec<Line<'static>> {
        wrap(
            &RichLine::text(text, style).with_uniform_prefix(vec![Span::raw(" ")]),
            text_width,
        )
    };
    let shared = !confirm.shared_with.is_empty();
    let head = lines(
        match confirm.asked_by {
            _ if shared => "Another agentty ran a turn in this folder at the same time; these may be its changes:",
            ConfirmFor::Undo => "Changed since the turn (by you or another program):",
            ConfirmFor::Rewind { .. } => "Changed since the last turn (by you or another program):",
            ConfirmFor::UndoRewind { .. } => {
                "Changed since the rewind (by you or another program):"
            }
        }
        .to_owned(),
        Style::default(),
    );
    let mut tail = lines(
        match confirm.asked_by {
            _ if shared => "Undo anyway, these files included?",
            ConfirmFor::UndoRewind { .. } => {
                "Undo the rewind anyway and overwrite them with their state before it?"
            }
            _ => "Undo anyway and overwrite them with their state before the turn?",
        }
        .to_owned(),
        Style::default(),
    );
    let answers: Vec<String> = UNDO_CONFIRM_KEYS.iter().map(|key| key.hint()).collect();
    tail.extend(lines(answers.join(" · "), palette().dim));
    // The question and its answers always show; the list takes the room left, folded with a
    // count when it does not fit.
    let room = usize::from(area.height.saturating_sub(2));
    let list_room = room.saturating_sub(head.len() + tail.len()).max(1);
    let paths: Vec<String> = confirm
        .conflicts
        .iter()
        .map(|path| format!("• {path}"))
        .collect();
    let mut rows = head;
    rows.extend(folded(&paths, list_room, text_width, palette().warning));
    rows.extend(tail);
    let rows = keep_last(rows, room);
    let outer = centered(area, width, rows.len() as u16 + 2);
    let title = match confirm.asked_by {
        ConfirmFor::Undo => "Undo the last turn",
        ConfirmFor::Rewind { .. } => "Rewind the files",
        ConfirmFor::UndoRewind { .. } => "Undo the rewind",
    };
    let keys: Vec<&str> = UNDO_CONFIRM_KEYS.iter().map(|key| key.keys).collect();
    let inner = frame(title, &keys.join(" / "), outer, buf);
    draw_rows(&rows, inner, buf);
}

/// `items`, one row each (cut at the edge), in at most `room` rows: past that, as many as fit
/// and a last row saying how many more there are.
fn folded(
    items: &[String],
    room: usize,
    width: usize,
    colour: ratatui::style::Color,
) -> Vec<Line<'static>> {
    let style = Style::default().fg(colour);
    let row =
        |text: String, style: Style| fit(RichLine::text(format!(" {text}"), style), width + 1);
    if items.len() <= room {
        return items.iter().map(|item| row(item.clone(), style)).collect();
    }
    let shown = room.saturating_sub(1);
    let mut rows: Vec<Line<'static>> = items[..shown]
        .iter()
        .map(|item| row(item.clone(), style))
        .collect();
    rows.push(row(
        format!("… and {} more", items.len() - shown),
        palette().dim,
    ));
    rows
}

/// The last `room` rows of `rows` when they do not all fit (the choices are at the end).
fn keep_last(mut rows: Vec<Line<'static>>, room: usize) -> Vec<Line<'static>> {
    if rows.len() > room.max(1) {
        rows.drain(..rows.len() - room.max(1));
    }
    rows
}

/// A restore a crash interrupted: how far it got, and what to do with it.
pub(crate) fn render_restore_prompt(
    prompt: &crate::app::review::RestorePrompt,
    area: Rect,
    buf: &mut Buffer,
) {
    let width = 64.min(area.width);
    let text_width = usize::from(width.saturating_sub(2)).max(1);
    let mut rows: Vec<Line<'static>> = Vec::new();
    let mut add = |text: String, style: Style| {
        rows.extend(wrap(
            &RichLine::text(text, style).with_uniform_prefix(vec![Span::raw(" ")]),
            text_width,
        ));
    };
    add(prompt.restore.describe(), Style::default());
    add(
        "f finish it (put back the rest) · r roll it back (as the turn left them) · Esc decide later"
            .to_owned(),
        palette().dim,
    );
    let rows = keep_last(rows, usize::from(area.height.saturating_sub(2)));
    let outer = centered(area, width, rows.len() as u16 + 2);
    let inner = frame("Interrupted restore", "f / r / Esc", outer, buf);
    draw_rows(&rows, inner, buf);
}

/// `/rewind`: the prompts, newest first; once one is chosen, what a rewind to before it takes
/// back, and the choices (Cancel selected first).
pub(crate) fn render_rewind(
    picker: &RewindPicker,
    area: Rect,
    buf: &mut Buffer,
    now: std::time::Instant,
) {
    let width = area.width.saturating_sub(4).clamp(20, 100).min(area.width);
    let text_width = usize::from(width.saturating_sub(2)).max(1);
    let line = |text: String, style: Style| -> Vec<Line<'static>> {
        wrap(
            &RichLine::text(text, style).with_uniform_prefix(vec![Span::raw(" ")]),
            text_width,
        )
    };
    let dim = palette().dim;
    let selected_style = Style::default().add_modifier(Modifier::REVERSED);
    let Some(choice) = picker.choosing else {
        let mut rows: Vec<Line<'static>> = Vec::new();
        let room = usize::from(area.height.saturating_sub(2)).max(1);
        let first = picker.selected.saturating_sub(room.saturating_sub(1));
        let undo_row = picker.undo.as_ref().map(|last| {
            format!(
                " ↷ Undo the last rewind (to before prompt {})",
                last.prompt_number
            )
        });
        let prompt_rows = picker.entries.iter().map(|entry| {
            let when = age(now.saturating_duration_since(entry.sent).as_millis() as u64);
            let files = match entry.files.len() {
                0 => String::new(),
                1 => " · 1 file".to_owned(),
                count => format!(" · {count} files"),
            };
            let prompt = entry.prompt.lines().next().unwrap_or("");
            // Said before anything is chosen: only the files can go back to here.
            let files_only = if entry.conversation_rewind.is_err() {
                " · files only"
            } else {
                ""
            };
            format!(" {when}{files}{files_only} · {prompt}")
        });
        for (index, text) in undo_row
            .into_iter()
            .chain(prompt_rows)
            .enumerate()
            .skip(first)
            .take(room)
        {
            let selected = index == picker.selected;
            let style = if selected {
                selected_style
            } else {
                Style::default()
            };
            let text = mark_selected(text, selected);
            rows.push(fit(RichLine::text(text, style), text_width + 1));
        }
        if rows.is_empty() {
            rows.push(Line::styled(" No prompt to rewind to", dim));
        }
        let outer = centered(area, width, rows.len() as u16 + 2);
        let inner = frame(
            "Rewind to before",
            &footer(picker.keys(), outer),
            outer,
            buf,
        );
        draw_rows(&rows, inner, buf);
        return;
    };
    let mut rows: Vec<Line<'static>> = Vec::new();
    let title = match (&picker.undo, picker.selected_entry()) {
        (Some(last), _) if picker.on_undo_row() => {
            undo_rewind_preview(last, &line, dim, &mut rows);
            "Undo the last rewind?"
        }
        (_, Some(entry)) => {
            rewind_preview(entry, &line, dim, &mut rows);
            "Rewind: take back what?"
        }
        _ => return,
    };
    // The choices always show: the preview above them gives up its last rows first.
    let room = usize::from(area.height.saturating_sub(2));
    let choices = picker.choices().len();
    let preview_room = room.saturating_sub(choices).max(1);
    if rows.len() > preview_room {
        rows.truncate(preview_room.saturating_sub(1));
        rows.push(Line::styled(" …", dim));
    }
    for (index, option) in picker.choices().iter().enumerate() {
        let style = if index == choice {
            selected_style
        } else {
            Style::default()
        };
        let label = mark_selected(format!(" {}", option.label()), index == choice);
        rows.push(fit(RichLine::text(label, style), text_width + 1));
    }
    let rows = keep_last(rows, room);
    let outer = centered(area, width, rows.len() as u16 + 2);
    let inner = frame(title, &footer(picker.keys(), outer), outer, buf);
    draw_rows(&rows, inner, buf);
}

/// What undoing the last rewind brings back.
fn undo_rewind_preview(
    last: &LastRewind,
    line: &dyn Fn(String, Style) -> Vec<Line<'static>>,
    dim: Style,
    rows: &mut Vec<Line<'static>>,
) {
    let prompts = match last.prompts.len() {
        _ if !last.conversation => "Conversation: unchanged (the rewind left it).".to_owned(),
        1 => "Conversation: the agent has the prompt taken back again.".to_owned(),
        count => format!("Conversation: the agent has the {count} prompts taken back again."),
    };
    rows.extend(line(prompts, dim));
    let list = |files: &[crate::app::transcript::InertText]| {
        crate::snapshot::fold_list(files.iter().map(AsRef::as_ref))
    };
    let mut files = Vec::new();
    if last.files && !last.files_back.is_empty() {
        files.push(format!(
            "brought back as the rewind found them: {}",
            list(&last.files_back)
        ));
    }
    if last.files && !last.files_deleted_again.is_empty() {
        files.push(format!(
            "deleted again (the turns deleted them): {}",
            list(&last.files_deleted_again)
        ));
    }
    rows.extend(line(
        if files.is_empty() {
            "Files: nothing to bring back.".to_owned()
        } else {
            format!("Files {}.", files.join("; "))
        },
        dim,
    ));
}

/// What a rewind to before `entry` takes back.
fn rewind_preview(
    entry: &crate::app::rewind::RewindEntry,
    line: &dyn Fn(String, Style) -> Vec<Line<'static>>,
    dim: Style,
    rows: &mut Vec<Line<'static>>,
) {
    rows.extend(line(
        format!("“{}”", entry.prompt.lines().next().unwrap_or("")),
        Style::default().add_modifier(Modifier::BOLD),
    ));
    let prompts = if entry.prompts_taken_back == 1 {
        "this prompt".to_owned()
    } else {
        format!(
            "this prompt and the {} after it",
            entry.prompts_taken_back - 1
        )
    };
    rows.extend(line(
        match &entry.conversation_rewind {
            Ok(()) => format!(
                "Conversation: the agent forgets {prompts}; the prompt returns to the input."
            ),
            Err(why) => format!("Conversation: cannot go back ({why}); only files can."),
        },
        dim,
    ));
    rows.extend(line(
        if entry.files_put_back.is_empty() {
            "Files: no change of these turns to put back.".to_owned()
        } else {
            format!(
                "Files put back: {}.",
                crate::snapshot::fold_list(entry.files_put_back.iter().map(|file| file.as_ref()))
            )
        },
        dim,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::rewind::RewindEntry;
    use crate::app::transcript::InertText;
    use crate::view::buffer_text as text;

    fn many(count: usize) -> Vec<InertText> {
        (0..count)
            .map(|index| InertText::new(&format!("pkg/f{index:04}.txt")))
            .collect()
    }

    /// Issue 37: a rewind of a turn that changed 3,000 files listed them all above its choices,
    /// which went off screen. The list folds; the choices show at any size.
    #[test]
    fn the_rewind_and_undo_dialogs_keep_their_choices_on_screen_at_any_size() {
        for (width, height) in [(160, 50), (80, 24), (40, 12)] {
            let area = Rect::new(0, 0, width, height);
            let mut picker = RewindPicker::new(
                vec![RewindEntry {
                    turn: 1,
                    prompt: InertText::new("edit every file"),
                    sent: std::time::Instant::now(),
                    files: many(3000),
                    prompts_taken_back: 1,
                    files_put_back: many(3000),
                    conversation_rewind: Ok(()),
                }],
                None,
            );
            picker.choosing = Some(3);
            let mut buf = Buffer::empty(area);
            render_rewind(&picker, area, &mut buf, std::time::Instant::now());
            let screen = text(&buf);
            assert!(screen.contains("Cancel"), "{width}x{height}:\n{screen}");
            assert!(
                screen.contains("Conversation and files"),
                "{width}x{height}:\n{screen}"
            );
            if height >= 24 {
                assert!(screen.contains("more"), "the list says it folds:\n{screen}");
            }

            let confirm = UndoConfirm {
                turn: 1,
                conflicts: many(3000),
                asked_by: ConfirmFor::Undo,
                shared_with: Vec::new(),
            };
            let mut buf = Buffer::empty(area);
            render_confirm_undo(&confirm, area, &mut buf);
            let screen = text(&buf);
            let answers: Vec<String> = UNDO_CONFIRM_KEYS.iter().map(|key| key.hint()).collect();
            let last = answers.last().unwrap();
            assert!(
                screen
                    .replace('\n', "")
                    .contains(&last[..last.len().min(10)]),
                "{width}x{height}: the answers show:\n{screen}"
            );
            if height >= 24 {
                assert!(
                    screen.contains("… and 29"),
                    "the list folds with a count:\n{screen}"
                );
            }
        }
    }
}
