//! The `/` command and `@` file popup, drawn over the bottom of the transcript, just above the
//! input it completes.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use crate::app::completion::{Popup, PopupKind};
use crate::app::keymap::{pane_hint, POPUP_KEYS};
use crate::view::frame::mark_selected;
use crate::view::list::draw_selectable;

use super::theme::palette;

/// Rows of the transcript the popup leaves in sight above it on a screen that has them.
const TRANSCRIPT_KEPT: u16 = 2;

/// Draws the popup over the bottom of `above`: every suggestion where there is room (on a tall
/// screen the transcript keeps a couple of rows), else as many as fit, the selection kept in
/// view.
pub(crate) fn render_popup(popup: &Popup, above: Rect, buf: &mut Buffer) {
    let kept = if above.height >= 16 {
        TRANSCRIPT_KEPT
    } else {
        0
    };
    let room = above.height.saturating_sub(2 + kept).max(1);
    let rows = (popup.items.len() as u16).clamp(1, room);
    let height = (rows + 2).min(above.height);
    if height < 3 || above.width < 10 {
        return;
    }
    let area = Rect::new(above.x, above.bottom() - height, above.width, height);
    Clear.render(area, buf);
    let title = match popup.kind {
        PopupKind::Slash => " commands ",
        PopupKind::Mention => " files ",
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(palette().accent))
        .title(Span::styled(
            title,
            Style::default().add_modifier(Modifier::BOLD),
        ))
        .title_bottom(Span::styled(
            pane_hint(POPUP_KEYS, usize::from(above.width.saturating_sub(2))),
            palette().dim,
        ));
    let inner = block.inner(area);
    block.render(area, buf);
    let dim = palette().dim;
    if popup.items.is_empty() {
        buf.set_line(
            inner.x,
            inner.y,
            &Line::styled(format!(" {}", popup.empty_note), dim),
            inner.width,
        );
        return;
    }
    let label_width = popup
        .items
        .iter()
        .map(|item| item.label.chars().count())
        .max()
        .unwrap_or(0);
    let key_width = popup
        .items
        .iter()
        .map(|item| item.key.chars().count())
        .max()
        .unwrap_or(0);
    // Narrow: the descriptions matter more than the key column.
    let detail_width = popup
        .items
        .iter()
        .map(|item| item.detail.chars().count())
        .max()
        .unwrap_or(0);
    let key_width = if label_width + key_width + detail_width + 6 > usize::from(inner.width) {
        0
    } else {
        key_width
    };
    let lines: Vec<Line<'_>> = popup
        .items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let selected = index == popup.selection.selected;
            let base = if selected {
                Style::default().add_modifier(Modifier::REVERSED)
            } else {
                Style::default()
            };
            let mut spans = vec![Span::styled(
                mark_selected(format!(" {:<label_width$} ", item.label), selected),
                base.add_modifier(Modifier::BOLD),
            )];
            if key_width > 0 {
                spans.push(Span::styled(
                    format!(" {:<key_width$} ", item.key),
                    base.fg(palette().accent),
                ));
            }
            if !item.detail.is_empty() {
                spans.push(Span::styled(format!(" {}", item.detail), base));
            }
            let used: usize = spans.iter().map(|span| span.width()).sum();
            let pad = usize::from(inner.width).saturating_sub(used);
            spans.push(Span::styled(" ".repeat(pad), base));
            Line::from(spans)
        })
        .collect();
    draw_selectable(&lines, popup.selection.selected, inner, buf);
}
