//! The box every overlay draws in: centred over the chat, a cyan border with a title and a
//! footer of keys, rows clipped to it, and the selectable row style the lists share.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use super::theme::palette;
use crate::app::keymap::{pane_hint, PaneKey};

pub(crate) fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    )
}

pub(crate) fn frame(title: &str, footer: &str, area: Rect, buf: &mut Buffer) -> Rect {
    Clear.render(area, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(palette().accent))
        .title(Span::styled(
            format!(" {title} "),
            Style::default().add_modifier(Modifier::BOLD),
        ))
        .title_bottom(Span::styled(format!(" {footer} "), palette().dim));
    let inner = block.inner(area);
    block.render(area, buf);
    inner
}

/// The footer of a box drawn at `outer`: its keys, as many as its bottom border holds.
pub(crate) fn footer(keys: &[PaneKey], outer: Rect) -> String {
    pane_hint(keys, footer_room(outer)).trim().to_owned()
}

/// The columns a footer has on the bottom border of a box drawn at `outer` (between its
/// corners).
pub(crate) fn footer_room(outer: Rect) -> usize {
    usize::from(outer.width.saturating_sub(2))
}

pub(crate) fn draw_rows(rows: &[Line<'_>], inner: Rect, buf: &mut Buffer) {
    for (index, row) in rows.iter().take(usize::from(inner.height)).enumerate() {
        buf.set_line(inner.x, inner.y + index as u16, row, inner.width);
    }
}

/// A row of a list: the selected one is reversed and marked `›` in its first column, so the
/// selection shows without colours or attributes too (`NO_COLOR`, a text capture).
pub(crate) fn selectable(text: String, selected: bool, enabled: bool, width: u16) -> Line<'static> {
    let mut style = Style::default();
    if !enabled {
        style = style.patch(palette().dim);
    }
    if selected {
        style = style.add_modifier(Modifier::REVERSED);
    }
    let text = mark_selected(text, selected);
    let padded = format!("{text:<width$}", width = usize::from(width));
    Line::styled(padded, style)
}

/// `text` with its leading blank turned into the selection mark `›` when `selected`.
pub(crate) fn mark_selected(text: String, selected: bool) -> String {
    match text.strip_prefix(' ') {
        Some(rest) if selected => format!("›{rest}"),
        _ => text,
    }
}

/// "12 s ago", "5 min ago", "3 h ago", "2 days ago".
pub(crate) fn age(elapsed_ms: u64) -> String {
    let seconds = elapsed_ms / 1000;
    match seconds {
        0..=59 => format!("{seconds} s ago"),
        60..=3599 => format!("{} min ago", seconds / 60),
        3600..=86_399 => format!("{} h ago", seconds / 3600),
        _ => format!("{} days ago", seconds / 86_400),
    }
}
