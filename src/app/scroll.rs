//! Where the transcript view looks: the newest output, or a row the user scrolled to.
//!
//! Only the view knows how tall a cell is at a width, so a scroll moves the position by rows
//! from where it was (it may run past its cell, either way), the next frame lays it out, and
//! the chat hands the laid-out position back ([`TranscriptLayout`], through
//! `AppState::on_drawn`) — as the help's scroll limit comes back. The position is a cell and a
//! row within it, not an absolute row, so nothing needs the height of the whole transcript.

use super::transcript::{CellId, Transcript};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScrollAction {
    Lines(isize),
    PageUp,
    PageDown,
    Top,
    Bottom,
}

/// The top row of the transcript view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TopRow {
    /// Stick to the newest output.
    Follow,
    /// This many rows above the top of the following view (scrolled up since the last frame,
    /// which lays it out at the transcript as it is then).
    AboveFollow(usize),
    /// Row `skip` of the cell `id` (outside the cell until the next frame lays it out),
    /// counted at `width`: after a resize it is rescaled, so the same text stays at the top.
    Cell { id: CellId, skip: isize, width: u16 },
}

/// What a frame laid out of the transcript (the view computes it, the state keeps it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TranscriptLayout {
    /// The cell at the top of the view and its rows scrolled past; `None` when the view shows
    /// the newest output (followed, or scrolled back down to it).
    pub(crate) anchor: Option<(CellId, usize)>,
    pub(crate) width: u16,
    /// Rows the transcript area showed (a page is this less two).
    pub(crate) height: u16,
}

/// The transcript's scroll position, owned by the app state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptScroll {
    top: TopRow,
    /// The transcript's output version when the user scrolled away from the newest output.
    seen_output: u64,
    /// The last frame's transcript area, for paging and for the width a row is counted at.
    width: u16,
    height: u16,
}

impl Default for TranscriptScroll {
    fn default() -> Self {
        Self {
            top: TopRow::Follow,
            seen_output: 0,
            width: 0,
            height: 0,
        }
    }
}

impl TranscriptScroll {
    pub(crate) fn top(&self) -> TopRow {
        self.top
    }

    /// Whether the view sticks to the newest output.
    pub fn follows(&self) -> bool {
        self.top == TopRow::Follow
    }

    /// Whether new output arrived since the user scrolled up.
    pub(crate) fn has_unseen_output(&self, transcript: &Transcript) -> bool {
        !self.follows() && transcript.output_version() > self.seen_output
    }

    /// Moves the view; a move back down to the newest output follows it again.
    pub(crate) fn scroll(&mut self, transcript: &Transcript, action: ScrollAction) {
        let Some(first) = transcript.cells().first() else {
            return;
        };
        let page = usize::from(self.height).saturating_sub(2).max(1) as isize;
        let delta = match action {
            ScrollAction::Bottom => {
                self.top = TopRow::Follow;
                return;
            }
            ScrollAction::Top => {
                self.leave_follow(transcript);
                // A short transcript that fits is already at the top: the frame follows then.
                self.top = TopRow::Cell {
                    id: first.id,
                    skip: 0,
                    width: self.width,
                };
                return;
            }
            ScrollAction::Lines(lines) => lines,
            ScrollAction::PageUp => -page,
            ScrollAction::PageDown => page,
        };
        self.top = match self.top {
            TopRow::Follow if delta >= 0 => return,
            TopRow::Follow => {
                self.leave_follow(transcript);
                TopRow::AboveFollow(delta.unsigned_abs())
            }
            TopRow::AboveFollow(rows) => {
                let rows = rows as isize - delta;
                if rows <= 0 {
                    TopRow::Follow
                } else {
                    TopRow::AboveFollow(rows as usize)
                }
            }
            TopRow::Cell { id, skip, width } => TopRow::Cell {
                id,
                skip: skip.saturating_add(delta),
                width,
            },
        };
    }

    /// A frame laid the transcript out: keep where it put the top (a position past the end
    /// follows again), and its size for the next page.
    pub(crate) fn laid_out(&mut self, layout: TranscriptLayout) {
        self.width = layout.width;
        self.height = layout.height;
        self.top = match layout.anchor {
            None => TopRow::Follow,
            Some((id, skip)) => TopRow::Cell {
                id,
                skip: skip as isize,
                width: layout.width,
            },
        };
    }

    fn leave_follow(&mut self, transcript: &Transcript) {
        if self.follows() {
            self.seen_output = transcript.output_version();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::transcript::{CellBody, NoticeCell, NoticeLevel};

    fn transcript(cells: usize) -> Transcript {
        let mut transcript = Transcript::default();
        for n in 0..cells {
            transcript.push(CellBody::Notice(
                NoticeCell::new(NoticeLevel::Info, format!("notice {n}")).into(),
            ));
        }
        transcript
    }

    fn drawn(anchor: Option<(CellId, usize)>, height: u16) -> TranscriptLayout {
        TranscriptLayout {
            anchor,
            width: 40,
            height,
        }
    }

    #[test]
    fn a_scroll_up_leaves_the_tail_and_remembers_what_was_seen() {
        let mut transcript = transcript(3);
        let mut scroll = TranscriptScroll::default();
        scroll.scroll(&transcript, ScrollAction::Lines(1));
        assert_eq!(scroll.top(), TopRow::Follow, "down at the tail stays there");
        scroll.scroll(&transcript, ScrollAction::Lines(-3));
        assert_eq!(scroll.top(), TopRow::AboveFollow(3));
        assert!(!scroll.has_unseen_output(&transcript));
        transcript.push(CellBody::Notice(
            NoticeCell::new(NoticeLevel::Info, "more").into(),
        ));
        assert!(scroll.has_unseen_output(&transcript));
        scroll.scroll(&transcript, ScrollAction::Bottom);
        assert!(scroll.follows() && !scroll.has_unseen_output(&transcript));
    }

    #[test]
    fn scrolling_back_down_before_a_frame_follows_again() {
        let transcript = transcript(3);
        let mut scroll = TranscriptScroll::default();
        scroll.scroll(&transcript, ScrollAction::Lines(-6));
        scroll.scroll(&transcript, ScrollAction::Lines(4));
        assert_eq!(scroll.top(), TopRow::AboveFollow(2));
        scroll.scroll(&transcript, ScrollAction::Lines(5));
        assert!(scroll.follows());
    }

    #[test]
    fn a_page_is_the_last_frame_s_rows_less_two() {
        let transcript = transcript(3);
        let id = transcript.cells()[1].id;
        let mut scroll = TranscriptScroll::default();
        scroll.scroll(&transcript, ScrollAction::Lines(-1));
        scroll.laid_out(drawn(Some((id, 4)), 12));
        assert_eq!(
            scroll.top(),
            TopRow::Cell {
                id,
                skip: 4,
                width: 40
            }
        );
        scroll.scroll(&transcript, ScrollAction::PageUp);
        // Past the cell's top: the next frame lays it out in the cells above.
        assert_eq!(
            scroll.top(),
            TopRow::Cell {
                id,
                skip: -6,
                width: 40
            }
        );
        scroll.scroll(&transcript, ScrollAction::PageDown);
        scroll.scroll(&transcript, ScrollAction::PageDown);
        assert_eq!(
            scroll.top(),
            TopRow::Cell {
                id,
                skip: 14,
                width: 40
            }
        );
    }

    #[test]
    fn a_frame_that_reached_the_end_follows_again() {
        let transcript = transcript(3);
        let mut scroll = TranscriptScroll::default();
        scroll.scroll(&transcript, ScrollAction::Top);
        assert_eq!(
            scroll.top(),
            TopRow::Cell {
                id: transcript.cells()[0].id,
                skip: 0,
                width: 0
            }
        );
        // The transcript fits the screen: the frame shows its tail, which is following.
        scroll.laid_out(drawn(None, 20));
        assert!(scroll.follows());
    }

    #[test]
    fn an_empty_transcript_does_not_scroll() {
        let transcript = transcript(0);
        let mut scroll = TranscriptScroll::default();
        scroll.scroll(&transcript, ScrollAction::PageUp);
        scroll.scroll(&transcript, ScrollAction::Top);
        assert!(scroll.follows());
    }
}
