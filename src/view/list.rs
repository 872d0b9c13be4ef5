//! Drawing a list that may be taller than its area: the selected row (or the scroll offset) is
//! kept in view, and a dim marker says when rows are hidden above or below. Shared by the menu,
//! the pickers, the popups and the help (see `app::list` for the keys).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::theme::palette;

/// The first row to show so that `selected` is visible in `height` rows (kept near the middle
/// once the list scrolls).
pub(crate) fn offset_for(selected: usize, count: usize, height: usize) -> usize {
    if height == 0 || count <= height {
        return 0;
    }
    selected.saturating_sub(height / 2).min(count - height)
}

/// Draws `rows` from `offset` (clamped so the last page is full), with "more" markers on the
/// right edge of the first/last row when rows are hidden. Returns the offset used.
pub(crate) fn draw_scrolled(
    rows: &[Line<'_>],
    offset: usize,
    area: Rect,
    buf: &mut Buffer,
) -> usize {
    let height = usize::from(area.height);
    if height == 0 || area.width == 0 {
        return 0;
    }
    let offset = offset.min(rows.len().saturating_sub(height));
    for (index, row) in rows.iter().skip(offset).take(height).enumerate() {
        buf.set_line(area.x, area.y + index as u16, row, area.width);
    }
    let marker = palette().dim;
    let right = area.x + area.width - 1;
    if offset > 0 {
        buf.set_string(right, area.y, "↑", marker);
    }
    if offset + height < rows.len() {
        buf.set_string(right, area.y + area.height - 1, "↓", marker);
    }
    offset
}

/// Draws `rows` with `selected` kept in view.
pub(crate) fn draw_selectable(rows: &[Line<'_>], selected: usize, area: Rect, buf: &mut Buffer) {
    let offset = offset_for(selected, rows.len(), usize::from(area.height));
    draw_scrolled(rows, offset, area, buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selected_row_stays_in_view() {
        assert_eq!(offset_for(0, 20, 5), 0);
        assert_eq!(offset_for(10, 20, 5), 8);
        assert_eq!(offset_for(19, 20, 5), 15);
        assert_eq!(offset_for(3, 4, 5), 0);
    }

    #[test]
    fn hidden_rows_are_marked() {
        let rows: Vec<Line<'_>> = (0..10).map(|n| Line::raw(format!("row {n}"))).collect();
        let area = Rect::new(0, 0, 8, 3);
        let mut buf = Buffer::empty(area);
        assert_eq!(draw_scrolled(&rows, 50, area, &mut buf), 7);
        assert_eq!(buf[(7, 0)].symbol(), "↑");
        assert_eq!(buf[(0, 2)].symbol(), "r");
        assert_ne!(buf[(7, 2)].symbol(), "↓");
    }
}
