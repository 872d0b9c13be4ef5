//! The scrolling transcript: which cells are visible, and drawing them.
//!
//! The scroll position is an anchor (a cell and a row within it), not an absolute row, so
//! nothing ever needs the height of the whole transcript: following the stream lays out cells
//! from the last one upwards, a scrolled view from its anchor downwards, and both stop once the
//! screen is full. Per-cell rows are cached in [`CellCache`], so a frame's cost depends on what is
//! visible, not on how long the transcript is; a resize re-wraps only the cells it shows.

use std::collections::HashMap;
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::cells::CellCache;
use super::theme::palette;
use crate::app::scroll::{TopRow, TranscriptLayout, TranscriptScroll};
use crate::app::transcript::{CellId, Transcript};

/// Blank rows after each cell.
const CELL_GAP: usize = 1;

/// Cells above and below the view that keep their rendered rows (a page or two of scrolling
/// costs no re-rendering). The others give theirs up: each cell's cache holds its text twice
/// more (parsed and wrapped), about 10 KiB a turn of a long conversation (issue 37); a cell
/// scrolled back into view is rendered again.
const CACHED_AROUND_VIEW: usize = 16;

/// One drawn cell: its id and the screen rows it covers (relative to the transcript area).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PlacedCell {
    id: CellId,
    top: u16,
    bottom: u16,
}

/// The top of one frame's view: a cell's index, its rows skipped, and whether the view shows
/// the newest output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Top {
    index: usize,
    skip: usize,
    follows: bool,
}

/// What drawing the transcript remembers between frames: per-cell rows and what the last frame
/// showed. Where it looks is the app's ([`TranscriptScroll`]).
#[derive(Default)]
pub struct TranscriptView {
    caches: HashMap<CellId, CellCache>,
    placed: Vec<PlacedCell>,
    area: Rect,
    laid_out: Option<TranscriptLayout>,
}

impl TranscriptView {
    fn height_of(
        &mut self,
        transcript: &Transcript,
        index: usize,
        width: u16,
        now: Instant,
    ) -> usize {
        let cell = &transcript.cells()[index];
        let cache = self.caches.entry(cell.id).or_default();
        cache.lines(cell, width, now).len() + CELL_GAP
    }

    /// Where the last frame put the top of the transcript (`None` when it had no room), for
    /// `AppState::on_drawn`.
    pub(crate) fn laid_out(&self) -> Option<TranscriptLayout> {
        self.laid_out
    }

    /// The top cell index and rows skipped in it when following the bottom.
    fn bottom_top(
        &mut self,
        transcript: &Transcript,
        width: u16,
        height: usize,
        now: Instant,
    ) -> (usize, usize) {
        let mut needed = height;
        for index in (0..transcript.len()).rev() {
            let cell_height = self.height_of(transcript, index, width, now);
            if cell_height >= needed {
                return (index, cell_height - needed);
            }
            needed -= cell_height;
        }
        (0, 0)
    }

    /// Rows from (index, skip) to the end, counting no further than `limit`.
    fn rows_below(
        &mut self,
        transcript: &Transcript,
        index: usize,
        skip: usize,
        width: u16,
        limit: usize,
        now: Instant,
    ) -> usize {
        let mut rows = 0;
        for position in index..transcript.len() {
            rows += self.height_of(transcript, position, width, now);
            if position == index {
                rows = rows.saturating_sub(skip);
            }
            if rows > limit {
                break;
            }
        }
        rows
    }

    /// Moves (index, offset) by whole cells until the offset lies inside its cell (or the
    /// transcript ends either way).
    fn settle(
        &mut self,
        transcript: &Transcript,
        mut index: usize,
        mut offset: isize,
        width: u16,
        now: Instant,
    ) -> (usize, usize) {
        while offset < 0 {
            if index == 0 {
                offset = 0;
                break;
            }
            index -= 1;
            offset += self.height_of(transcript, index, width, now) as isize;
        }
        loop {
            let cell_height = self.height_of(transcript, index, width, now) as isize;
            if offset < cell_height || index + 1 >= transcript.len() {
                break;
            }
            offset -= cell_height;
            index += 1;
        }
        (index, offset.max(0) as usize)
    }

    /// Lays out the top of the view where the app's scroll puts it; it follows the newest
    /// output when its cell is gone or the content below it no longer fills the view.
    fn top(
        &mut self,
        transcript: &Transcript,
        scroll: &TranscriptScroll,
        width: u16,
        height: usize,
        now: Instant,
    ) -> Top {
        // Laid out only when needed: a view scrolled up does not measure the tail.
        let following = |view: &mut Self| {
            let (index, skip) = view.bottom_top(transcript, width, height, now);
            Top {
                index,
                skip,
                follows: true,
            }
        };
        let (index, skip) = match scroll.top() {
            TopRow::Follow => return following(self),
            TopRow::AboveFollow(rows) => {
                let bottom = following(self);
                self.settle(
                    transcript,
                    bottom.index,
                    bottom.skip as isize - rows as isize,
                    width,
                    now,
                )
            }
            TopRow::Cell {
                id,
                mut skip,
                width: counted_at,
            } => {
                let Some(index) = transcript.position(id) else {
                    return following(self);
                };
                if counted_at != width && counted_at > 0 && skip > 0 {
                    let before = self.height_of(transcript, index, counted_at, now) as isize;
                    if skip < before {
                        let after = self.height_of(transcript, index, width, now) as isize;
                        skip = skip * after / before.max(1);
                    }
                }
                self.settle(transcript, index, skip, width, now)
            }
        };
        let cell_height = self.height_of(transcript, index, width, now);
        let skip = skip.min(cell_height.saturating_sub(1));
        if self.rows_below(transcript, index, skip, width, height, now) > height {
            Top {
                index,
                skip,
                follows: false,
            }
        } else {
            following(self)
        }
    }

    /// The cell drawn at `row` (a terminal row) in the last frame.
    pub fn cell_at(&self, column: u16, row: u16) -> Option<CellId> {
        if !self.area.contains((column, row).into()) {
            return None;
        }
        let row = row - self.area.y;
        self.placed
            .iter()
            .find(|placed| placed.top <= row && row < placed.bottom)
            .map(|placed| placed.id)
    }

    /// Drops the rendered rows of the cells more than [`CACHED_AROUND_VIEW`] away from the
    /// `shown` cells from `top_index` on.
    fn forget_far_caches(&mut self, transcript: &Transcript, top_index: usize, shown: usize) {
        let cells = transcript.cells();
        let from = top_index
            .saturating_sub(CACHED_AROUND_VIEW)
            .min(cells.len());
        let to = (top_index + shown + CACHED_AROUND_VIEW).min(cells.len());
        if self.caches.len() <= to - from {
            return;
        }
        let near: std::collections::HashSet<CellId> =
            cells[from..to].iter().map(|cell| cell.id).collect();
        self.caches.retain(|id, _| near.contains(id));
    }

    /// Draws the visible part of the transcript into `area`, scrolled as `scroll` says.
    pub(crate) fn render(
        &mut self,
        transcript: &Transcript,
        scroll: &TranscriptScroll,
        area: Rect,
        buf: &mut Buffer,
        now: Instant,
    ) {
        self.area = area;
        self.placed.clear();
        self.laid_out = None;
        if area.width == 0 || area.height == 0 {
            return;
        }
        let height = usize::from(area.height);
        let top = self.top(transcript, scroll, area.width, height, now);
        self.laid_out = Some(TranscriptLayout {
            anchor: (!top.follows && top.index < transcript.len())
                .then(|| (transcript.cells()[top.index].id, top.skip)),
            width: area.width,
            height: area.height,
        });
        let (top_index, mut skip) = (top.index, top.skip);
        let mut row = 0usize;
        for cell in &transcript.cells()[top_index.min(transcript.len())..] {
            if row >= height {
                break;
            }
            let cache = self.caches.entry(cell.id).or_default();
            let lines = cache.lines(cell, area.width, now);
            let total = lines.len() + CELL_GAP;
            let top = row;
            for line_index in skip..total {
                if row >= height {
                    break;
                }
                if let Some(line) = lines.get(line_index) {
                    draw_line(buf, area, row, line);
                }
                row += 1;
            }
            self.placed.push(PlacedCell {
                id: cell.id,
                top: top as u16,
                bottom: row as u16,
            });
            skip = 0;
        }
        self.forget_far_caches(transcript, top_index, self.placed.len());
        if !top.follows && scroll.has_unseen_output(transcript) {
            let indicator = Line::styled(
                " ↓ new output below · End to follow ",
                palette().search_match,
            );
            let width = indicator.width() as u16;
            let x = area.x + area.width.saturating_sub(width) / 2;
            buf.set_line(
                x,
                area.y + area.height - 1,
                &indicator,
                area.width.min(width),
            );
        }
    }
}

fn draw_line(buf: &mut Buffer, area: Rect, row: usize, line: &Line<'_>) {
    buf.set_line(area.x, area.y + row as u16, line, area.width);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::transcript::{CellBody, InertText};
    use crate::view::buffer_text as buf_text;

    /// A long conversation keeps rendered rows only for the cells near the view (issue 37: every
    /// cell kept its parsed and wrapped text, about 10 KiB a turn), and a cell scrolled back
    /// into view is drawn again as it was.
    #[test]
    fn only_the_cells_near_the_view_keep_their_rendered_rows() {
        let mut transcript = Transcript::default();
        for turn in 0..300 {
            transcript.push(CellBody::User(crate::app::transcript::UserCell::new(
                InertText::new(&format!("question {turn}")),
                false,
            )));
        }
        let area = Rect::new(0, 0, 60, 20);
        let mut view = TranscriptView::default();
        let mut buf = Buffer::empty(area);
        let now = Instant::now();
        view.render(
            &transcript,
            &TranscriptScroll::default(),
            area,
            &mut buf,
            now,
        );
        let bound = view.placed.len() + 2 * CACHED_AROUND_VIEW;
        assert!(view.caches.len() <= bound, "{} cached", view.caches.len());
        let first = buf_text(&buf);
        assert!(first.contains("question 299"), "{first}");
        // Drawn again from a fresh cache: the same rows.
        view.caches.clear();
        let mut again = Buffer::empty(area);
        view.render(
            &transcript,
            &TranscriptScroll::default(),
            area,
            &mut again,
            now,
        );
        assert_eq!(buf_text(&again), first);
    }
}
