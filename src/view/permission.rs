//! The permission prompt, between the transcript and the composer: what the agent wants to do,
//! the edit as a bounded diff, and the agent's options with their keys. Its title says whether
//! it has the keys: until the user gives it the focus (Tab), typing goes on into the composer
//! below it, and the prompt is drawn dimmed.
//!
//! It fits any screen: the options and the first row of the question always come first, then
//! the command and paths, then as much of the diff as there is room for, the rest summarised.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Widget};

use super::edit_diff::{diff_counts, diff_rich_lines};
use super::permission_cell::permission_details;
use super::theme::palette;
use super::wrap::{wrap, wrap_into, RichLine, WrapMode};
use crate::app::keymap::{
    pane_hint, PERMISSION_DIFF_DOWN_KEY, PERMISSION_DIFF_SCROLL_KEY, PERMISSION_FOCUS_KEY,
    PERMISSION_NOTE_KEY, PERMISSION_NOTE_KEYS, PERMISSION_NOTE_KEYS_SHORT, PERMISSION_SELECT_KEY,
    PERMISSION_UNFOCUS_KEY, SEND_KEY, STOP_KEY,
};
use crate::app::permission::{
    esc_action, key_summary, option_keys, reject_choice, PermissionPrompt, FEEDBACK_KEY,
};
use crate::app::state::AppState;
use crate::app::transcript::{CellBody, PermissionCell};
use crate::stream::PermissionOptionKind;

/// Rows of the question shown at most.
const MAX_TITLE_ROWS: usize = 3;
/// Rows of diff shown at most (the rest are counted).
const MAX_DIFF_ROWS: usize = 30;

/// The prompt's rows at an inner width, by part.
struct PromptRows {
    title: Vec<Line<'static>>,
    details: Vec<Line<'static>>,
    diff: Vec<Line<'static>>,
    /// Diff rows the cell holds beyond `diff` (and beyond what it kept).
    diff_more: usize,
    options: Vec<Line<'static>>,
}

fn open_prompt(state: &AppState) -> Option<(&PermissionPrompt, &PermissionCell)> {
    let prompt = state.permission_prompt()?;
    match &state.transcript.get(prompt.cell)?.body {
        CellBody::Permission(cell) => Some((prompt, cell)),
        _ => None,
    }
}

fn prompt_rows(
    prompt: &PermissionPrompt,
    cell: &PermissionCell,
    width: usize,
    focused: bool,
) -> PromptRows {
    let mut title = wrap(
        &RichLine::text(
            format!("{}?", cell.question()),
            Style::default().add_modifier(Modifier::BOLD),
        )
        .with_prefix(vec![Span::raw(" ")], vec![Span::raw(" ")]),
        width,
    );
    title.truncate(MAX_TITLE_ROWS);
    let mut details = Vec::new();
    for line in permission_details(cell) {
        wrap_into(
            &line.with_uniform_prefix(vec![Span::raw(" ")]),
            width,
            &mut details,
        );
    }
    let mut diff = Vec::new();
    for line in diff_rich_lines(&cell.diff) {
        let mut line = line;
        line.first_prefix.insert(0, Span::raw(" "));
        line.rest_prefix.insert(0, Span::raw(" "));
        wrap_into(&line, width, &mut diff);
    }
    // Every row the cell kept: the prompt asks for at most `MAX_DIFF_ROWS` of them
    // (`desired_height`), and PgDn scrolls to the rest.
    let diff_more = cell.diff_hidden;
    let options = match &prompt.feedback {
        Some(note) => feedback_rows(note, width),
        None => option_rows(prompt, cell, width, focused),
    };
    PromptRows {
        title,
        details,
        diff,
        diff_more,
        options,
    }
}

/// The agent's options with their keys, the selected one marked (`›`) and highlighted (all
/// dim until the prompt has the focus), and the row of the key that rejects with a note.
fn option_rows(
    prompt: &PermissionPrompt,
    cell: &PermissionCell,
    width: usize,
    focused: bool,
) -> Vec<Line<'static>> {
    let kinds = prompt.kinds();
    let style = |selected: bool| match (selected, focused) {
        (true, true) => Style::default().add_modifier(Modifier::REVERSED),
        (true, false) => palette().dim.add_modifier(Modifier::REVERSED),
        (false, true) => Style::default(),
        (false, false) => palette().dim,
    };
    let row = |marker: &'static str, keys: String, name: String, base: Style, name_style: Style| {
        let line = RichLine::new(vec![
            Span::styled(marker, base),
            Span::styled(keys, base.fg(palette().accent).add_modifier(Modifier::BOLD)),
            Span::styled("  ", base),
            Span::styled(name, name_style),
        ])
        .mode(WrapMode::Truncate);
        wrap(&line, width).into_iter().next().unwrap_or_default()
    };
    let mut rows: Vec<Line<'static>> = cell
        .options
        .iter()
        .enumerate()
        .map(|(index, option)| {
            let selected = prompt.selected == Some(index);
            let (number, letter) = option_keys(&kinds, index);
            let keys = format!(
                "{} {}",
                number.unwrap_or(' '),
                letter.map(String::from).unwrap_or_else(|| " ".to_owned())
            );
            let base = style(selected);
            let name_style = match option.kind {
                PermissionOptionKind::AllowOnce | PermissionOptionKind::AllowAlways => base,
                PermissionOptionKind::RejectOnce | PermissionOptionKind::RejectAlways => {
                    base.fg(palette().error)
                }
            };
            let marker = if selected { " › " } else { "   " };
            let mut line = row(marker, keys, option.name.to_string(), base, name_style);
            if selected {
                // The highlight spans the row.
                let used = line.width();
                line.spans
                    .push(Span::styled(" ".repeat(width.saturating_sub(used)), base));
            }
            line
        })
        .collect();
    if reject_choice(&kinds).is_some() {
        let base = style(false);
        rows.push(row(
            "   ",
            format!("  {FEEDBACK_KEY}"),
            "Reject, say what to do instead".to_owned(),
            base,
            base.fg(palette().error),
        ));
    }
    rows
}

/// The line after `r`: what it is for, and the note so far with a cursor at its end (the end
/// of a long note in sight).
fn feedback_rows(note: &str, width: usize) -> Vec<Line<'static>> {
    let label = Line::styled(
        " What should the agent do instead?".to_owned(),
        Style::default().add_modifier(Modifier::BOLD),
    );
    let room = width.saturating_sub(4);
    let shown: String = {
        let chars: Vec<char> = note.chars().collect();
        let skip = chars.len().saturating_sub(room);
        chars[skip..].iter().collect()
    };
    let input = Line::from(vec![
        Span::styled(" › ", Style::default().fg(palette().accent)),
        Span::raw(shown),
        Span::styled(" ", Style::default().add_modifier(Modifier::REVERSED)),
    ]);
    vec![label, input]
}

/// The rows the prompt needs at least: its options, the first row of its question and its
/// borders (0 when no prompt is open).
pub(crate) fn minimum_height(state: &AppState) -> u16 {
    state.permission_prompt().map_or(0, |prompt| {
        let rows = match prompt.feedback {
            Some(_) => 2,
            None => prompt.options.len() + usize::from(reject_choice(&prompt.kinds()).is_some()),
        };
        u16::try_from(rows.max(1) + 3).unwrap_or(u16::MAX)
    })
}

/// The rows the prompt would like at `width` (borders included); 0 when no prompt is open.
pub(crate) fn desired_height(state: &AppState, width: u16) -> u16 {
    let Some((prompt, cell)) = open_prompt(state) else {
        return 0;
    };
    let rows = prompt_rows(prompt, cell, usize::from(width.saturating_sub(2)), true);
    let diff = rows.diff.len().min(MAX_DIFF_ROWS)
        + usize::from(rows.diff_more > 0 || rows.diff.len() > MAX_DIFF_ROWS);
    let total = rows.title.len() + rows.details.len() + diff + 1 + rows.options.len().max(1) + 2;
    u16::try_from(total).unwrap_or(u16::MAX)
}

/// The rows that fit `height`: the options before all else, then the question and the
/// details, then as much of the diff as fits (what is cut is summarised, with the key that
/// shows it), then a blank row above the options when there is room. With `scroll` > 0 and a
/// diff that does not fit, the diff itself, from row `scroll - 1` on ([`diff_view`]).
fn fit(
    rows: PromptRows,
    height: usize,
    diff_note: &str,
    scroll: usize,
) -> (Vec<Line<'static>>, DiffShown) {
    let options = rows.options.len().min(height);
    let mut room = height - options;
    let head_rows = (rows.title.len() + rows.details.len()).min(room);
    let diff_room = room - head_rows;
    let diff_fits = rows.diff_more == 0 && rows.diff.len() <= diff_room;
    if scroll > 0 && !rows.diff.is_empty() && !diff_fits {
        return (diff_view(rows, height, scroll - 1), DiffShown::Scrolled);
    }
    let shown = if rows.diff.is_empty() || diff_fits {
        DiffShown::Whole
    } else {
        DiffShown::Cut
    };
    let mut head: Vec<Line<'static>> = rows
        .title
        .into_iter()
        .chain(rows.details)
        .take(room)
        .collect();
    room -= head.len();
    if !rows.diff.is_empty() && room > 0 {
        // Keep the blank row when some of the diff fits besides it.
        let diff_room = room - usize::from(room >= 3);
        let whole = rows.diff.len() + usize::from(rows.diff_more > 0);
        let shown = if whole <= diff_room {
            rows.diff.len()
        } else {
            diff_room - 1
        };
        let more = rows.diff.len() - shown + rows.diff_more;
        head.extend(rows.diff.into_iter().take(shown));
        if more > 0 {
            let note = if shown == 0 {
                format!(" diff: {diff_note} · PgDn shows it")
            } else {
                format!(" … {more} more lines · PgDn · {diff_note}")
            };
            head.push(Line::styled(
                note,
                palette().dim.add_modifier(Modifier::ITALIC),
            ));
        }
        room -= shown + usize::from(more > 0);
    }
    if room > 0 {
        head.push(Line::raw(""));
    }
    head.extend(rows.options.into_iter().take(options));
    (head, shown)
}

/// How much of the change being approved the prompt shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DiffShown {
    /// All of it (or there is none).
    Whole,
    /// Some or none of it, the options shown: PgDn shows it.
    Cut,
    /// The change in place of the options: PgUp/PgDn move it.
    Scrolled,
}

/// The change being approved, in place of the options (their keys still answer, and the
/// footer names them): the question's first row, the diff from row `skip` on, and a row that
/// says where the view is and how to move it. PgUp at the top brings the options back.
fn diff_view(rows: PromptRows, height: usize, skip: usize) -> Vec<Line<'static>> {
    let note_style = palette().dim.add_modifier(Modifier::ITALIC);
    let total = rows.diff.len();
    let mut view: Vec<Line<'static>> = rows.title.into_iter().take(1).collect();
    let room = height.saturating_sub(view.len() + 1).max(1);
    let skip = skip.min(total.saturating_sub(room));
    let shown = room.min(total - skip);
    view.extend(rows.diff.into_iter().skip(skip).take(shown));
    let below = total - skip - shown + rows.diff_more;
    let note = match (skip, below) {
        (0, 0) => " the whole change · PgUp: the options".to_owned(),
        (0, below) => format!(" … {below} more · PgDn · PgUp: the options"),
        (skip, 0) => format!(" ↑ {skip} above · PgUp"),
        (skip, below) => format!(" ↑ {skip} · … {below} more · PgUp/PgDn"),
    };
    view.push(Line::styled(note, note_style));
    view.truncate(height);
    view
}

/// The prompt's title at a width: what it asks, and whether it has the keys.
fn title(waiting: usize, focused: bool, writing: bool, room: usize) -> String {
    let count = if waiting > 1 {
        format!(" (1 of {waiting})")
    } else {
        String::new()
    };
    let states: [&str; 3] = if writing {
        ["reject with a note", "reject with a note", "note"]
    } else if focused {
        ["answer with a key below", "answer with a key", "answer"]
    } else {
        [
            "Tab to answer — typing stays in the composer",
            "Tab to answer",
            "Tab",
        ]
    };
    states
        .iter()
        .flat_map(|state| {
            [
                format!(" Permission needed{count} · {state} "),
                format!(" Permission{count} · {state} "),
            ]
        })
        .chain([
            format!(" Permission needed{count} "),
            " Permission ".to_owned(),
        ])
        .find(|title| title.chars().count() <= room)
        .unwrap_or_default()
}

pub(crate) fn render_permission_prompt(state: &AppState, area: Rect, buf: &mut Buffer) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let Some((prompt, cell)) = open_prompt(state) else {
        return;
    };
    Clear.render(area, buf);
    let focused = prompt.focused;
    let kinds = prompt.kinds();
    let room = usize::from(area.width.saturating_sub(4));
    let writing = prompt.feedback.is_some();
    let title = title(state.permission_prompts.len(), focused, writing, room);
    let keys = key_summary(&kinds);
    let esc = format!("{STOP_KEY} {}", esc_action(&kinds));
    let with_note = if reject_choice(&kinds).is_some() {
        format!(" · {}", PERMISSION_NOTE_KEY.hint())
    } else {
        String::new()
    };
    let always = prompt
        .selected
        .and_then(|index| cell.options.get(index))
        .filter(|_| prompt.always_selected());
    let footers = if writing {
        [
            pane_hint(PERMISSION_NOTE_KEYS, usize::MAX),
            pane_hint(PERMISSION_NOTE_KEYS_SHORT, usize::MAX),
            String::new(),
            String::new(),
        ]
    } else if !focused {
        let focus = PERMISSION_FOCUS_KEY.keys;
        [
            format!(" {focus}, then {keys} or {} ", PERMISSION_SELECT_KEY.hint()),
            format!(" {focus}, then {keys} "),
            format!(" {} ", PERMISSION_FOCUS_KEY.hint()),
            format!(" {focus} "),
        ]
    } else if let Some(option) = always {
        // An "always" answer is highlighted: Enter confirms it, and nothing else does.
        [
            format!(
                " {SEND_KEY} confirms: {} (always) · {esc} · {} ",
                option.name,
                PERMISSION_UNFOCUS_KEY.hint()
            ),
            format!(" {SEND_KEY} confirms: {} · {esc} ", option.name),
            format!(" {SEND_KEY} confirms · {esc} "),
            format!(" {SEND_KEY} confirms "),
        ]
    } else {
        [
            format!(
                " {keys} · {}{with_note} · {esc} · {} ",
                PERMISSION_SELECT_KEY.hint(),
                PERMISSION_UNFOCUS_KEY.hint()
            ),
            format!(" {keys}{with_note} · {esc} "),
            format!(" {keys} · {esc} "),
            format!(" {esc} "),
        ]
    };
    // The rows first: whether the change is cut decides whether the footer names PgDn.
    let inner = Block::default().borders(Borders::ALL).inner(area);
    let rows = prompt_rows(prompt, cell, usize::from(inner.width), focused);
    let (_, added, removed) = diff_counts(&cell.diff);
    let note = format!("+{added} -{removed} in all");
    let (lines, shown) = fit(rows, usize::from(inner.height), &note, prompt.diff_scroll);
    let scroll_keys = match shown {
        DiffShown::Whole => None,
        DiffShown::Cut => Some(PERMISSION_DIFF_DOWN_KEY.hint()),
        DiffShown::Scrolled => Some(PERMISSION_DIFF_SCROLL_KEY.hint()),
    };
    // With a cut change the footer names the key that shows it, dropping the answer keys
    // before Esc when room is short (the options name their own keys).
    let fits = |footer: &String| footer.chars().count() <= room;
    let footer = match scroll_keys.filter(|_| !writing) {
        Some(keys) => footers
            .iter()
            .map(|full| format!("{} · {keys} ", full.trim_end()))
            .chain([format!(" {esc} · {keys} "), format!(" {keys} ")])
            .find(fits),
        None => footers.into_iter().find(fits),
    }
    .unwrap_or_default();
    // The prompt that has the keys is drawn with a heavy frame (not by colour alone).
    let has_keys = focused || writing;
    let border = Style::default().fg(palette().warning);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_type(if has_keys {
            BorderType::Thick
        } else {
            BorderType::Plain
        })
        .border_style(border)
        .title(Span::styled(title, border.add_modifier(Modifier::BOLD)))
        .title_bottom(Span::styled(footer, palette().dim));
    block.render(area, buf);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    for (index, line) in lines.iter().enumerate() {
        buf.set_line(inner.x, inner.y + index as u16, line, inner.width);
    }
}
