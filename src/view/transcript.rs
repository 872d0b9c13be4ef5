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
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;

use super::cells::CellCache;
use crate::app::state::ScrollAction;
use crate::app::transcript::{CellId, Transcript};

/// Blank rows after each cell.
const CELL_GAP: usize = 1;

/// Where the transcript view looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Viewport {
    /// Stick to the newest output.
    pub follow: bool,
    /// The cell at the top of the view and how many of its rows are scrolled past.
    anchor: Option<(CellId, usize)>,
    /// The width the anchor's row count was measured at: after a resize it is rescaled, so the
    /// same text stays at the top instead of whatever row now has that number.
    anchor_width: u16,
    /// The transcript's output version when the user scrolled away from the bottom.
    seen_output: u64,
}

impl Default for Viewport {
    fn default() -> Self {
        Self {
            follow: true,
            anchor: None,
            anchor_width: 0,
            seen_output: 0,
        }
    }
}

/// One drawn cell: its id and the screen rows it covers (relative to the transcript area).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PlacedCell {
    id: CellId,
    top: u16,
    bottom: u16,
}

#[derive(Default)]
pub struct TranscriptView {
    caches: HashMap<CellId, CellCache>,
    pub viewport: Viewport,
    placed: Vec<PlacedCell>,
    area: Rect,
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

    /// Whether new output arrived while the user was scrolled up.
    pub(crate) fn has_unseen_output(&self, transcript: &Transcript) -> bool {
        !self.viewport.follow && transcript.output_version() > self.viewport.seen_output
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

    /// The top of the view as (cell index, rows skipped), switching to follow when the anchor
    /// is gone or the content below it no longer fills the view.
    fn top(
        &mut self,
        transcript: &Transcript,
        width: u16,
        height: usize,
        now: Instant,
    ) -> (usize, usize) {
        if !self.viewport.follow {
            if let Some((id, mut skip)) = self.viewport.anchor {
                if let Some(index) = transcript.position(id) {
                    if self.viewport.anchor_width != width && skip > 0 {
                        let before =
                            self.height_of(transcript, index, self.viewport.anchor_width, now);
                        let after = self.height_of(transcript, index, width, now);
                        skip = skip * after / before.max(1);
                        self.viewport.anchor = Some((id, skip));
                    }
                    self.viewport.anchor_width = width;
                    let cell_height = self.height_of(transcript, index, width, now);
                    let skip = skip.min(cell_height.saturating_sub(1));
                    if self.rows_below(transcript, index, skip, width, height, now) > height {
                        return (index, skip);
                    }
                }
            }
            self.viewport.follow = true;
            self.viewport.anchor = None;
        }
        self.bottom_top(transcript, width, height, now)
    }

    pub fn scroll(&mut self, transcript: &Transcript, action: ScrollAction, now: Instant) {
        let width = self.area.width.max(1);
        let height = usize::from(self.area.height.max(1));
        if transcript.is_empty() {
            return;
        }
        let delta: isize = match action {
            ScrollAction::Bottom => {
                self.viewport.follow = true;
                self.viewport.anchor = None;
                return;
            }
            ScrollAction::Top => {
                self.leave_follow(transcript);
                self.viewport.anchor = Some((transcript.cells()[0].id, 0));
                self.viewport.anchor_width = width;
                // A short transcript that fits is already at the top: follow instead.
                self.top(transcript, width, height, now);
                return;
            }
            ScrollAction::Lines(lines) => lines,
            ScrollAction::PageUp => -(height.saturating_sub(2).max(1) as isize),
            ScrollAction::PageDown => height.saturating_sub(2).max(1) as isize,
        };
        let (mut index, skip) = self.top(transcript, width, height, now);
        if self.viewport.follow {
            if delta >= 0 {
                return;
            }
            self.leave_follow(transcript);
        }
        let mut offset = skip as isize + delta;
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
        self.viewport.anchor = Some((transcript.cells()[index].id, offset.max(0) as usize));
        self.viewport.anchor_width = width;
        // Scrolled down to the end: follow the stream again.
        self.top(transcript, width, height, now);
    }

    fn leave_follow(&mut self, transcript: &Transcript) {
        if self.viewport.follow {
            self.viewport.follow = false;
            self.viewport.seen_output = transcript.output_version();
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

    /// Draws the visible part of the transcript into `area`.
    pub fn render(&mut self, transcript: &Transcript, area: Rect, buf: &mut Buffer, now: Instant) {
        self.area = area;
        self.placed.clear();
        if area.width == 0 || area.height == 0 {
            return;
        }
        let height = usize::from(area.height);
        let (top_index, mut skip) = self.top(transcript, area.width, height, now);
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
        if self.has_unseen_output(transcript) {
            let indicator = Line::styled(
                " ↓ new output below · End to follow ",
                Style::default()
                    .fg(Color::Black)
                    .bg(Color::Yellow)
                    .add_modifier(Modifier::BOLD),
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
