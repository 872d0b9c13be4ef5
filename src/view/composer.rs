//! The prompt input, drawn with soft wrapping: a long line continues on the next row instead of
//! scrolling sideways, so the start of a prompt is never hidden. The input grows with its
//! content up to a limit, then scrolls to keep the cursor in view.
//!
//! Rows break after the last space that fits, or mid-word when a word is wider than the row.
//! Widths are terminal columns (`unicode-width`). The cursor always gets a cell: at the end of
//! a full row it moves to an extra row, as in a terminal.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

use crate::app::composer::Composer;

use super::theme::palette;

/// The placeholder of an empty input.
const PLACEHOLDER: &str = "Ask the agent anything · / commands · @ files";

/// One screen row of the input: chars `start..end` of logical line `line`, which are its
/// bytes `bytes.0..bytes.1` (drawing slices the line instead of counting chars again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct VisualRow {
    line: usize,
    start: usize,
    end: usize,
    bytes: (usize, usize),
}

/// The input laid out for one width.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WrappedInput {
    rows: Vec<VisualRow>,
    /// The cursor's row (index into `rows`) and column (terminal cells).
    pub(crate) cursor: (usize, usize),
}

impl WrappedInput {
    pub(crate) fn row_count(&self) -> usize {
        self.rows.len()
    }
}

/// One grapheme cluster of a line: where it starts (in chars), how many chars it has and how
/// many columns it takes. Rows break only between graphemes, so a ZWJ emoji or a letter with a
/// combining accent is never split, and the cursor is never drawn inside one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Grapheme {
    start: usize,
    /// Where it starts in the line's bytes.
    byte: usize,
    chars: usize,
    width: usize,
    space: bool,
}

fn graphemes(line: &str) -> Vec<Grapheme> {
    // Most prompts are ASCII, where every byte is a grapheme of its own (a line holds no
    // `\r\n`): the segmentation, the costliest part of a frame with a long prompt, is skipped.
    if line.is_ascii() {
        ascii_graphemes(line)
    } else {
        segmented_graphemes(line)
    }
}

fn ascii_graphemes(line: &str) -> Vec<Grapheme> {
    (0..line.len())
        .map(|index| Grapheme {
            start: index,
            byte: index,
            chars: 1,
            width: line[index..=index].width(),
            space: line.as_bytes()[index] == b' ',
        })
        .collect()
}

fn segmented_graphemes(line: &str) -> Vec<Grapheme> {
    let mut start = 0;
    line.grapheme_indices(true)
        .map(|(byte, grapheme)| {
            let chars = grapheme.chars().count();
            let unit = Grapheme {
                start,
                byte,
                chars,
                width: grapheme.width(),
                space: grapheme == " ",
            };
            start += chars;
            unit
        })
        .collect()
}

/// Splits one logical line into row segments (grapheme index ranges) no wider than `width`.
fn wrap_line(units: &[Grapheme], width: usize) -> Vec<(usize, usize)> {
    let width = width.max(1);
    let mut segments = Vec::new();
    let mut start = 0;
    loop {
        let mut used = 0;
        let mut end = start;
        while end < units.len() && used + units[end].width <= width {
            used += units[end].width;
            end += 1;
        }
        if end == units.len() {
            segments.push((start, end));
            return segments;
        }
        if end == start {
            // A character wider than the row: it gets a row of its own.
            end = start + 1;
        } else if let Some(space) = (start + 1..end).rev().find(|&i| units[i - 1].space) {
            end = space;
        } else if units[end].space {
            // The space that did not fit ends this row (a blank at a row end is invisible).
            end += 1;
        }
        segments.push((start, end));
        start = end;
    }
}

/// Lays the input out for `width` columns.
pub(crate) fn wrap_input(composer: &Composer, width: u16) -> WrappedInput {
    let width = usize::from(width).max(1);
    let (cursor_line, cursor_col) = composer.cursor();
    let mut rows = Vec::new();
    let mut cursor = (0, 0);
    for (index, line) in composer.lines().iter().enumerate() {
        let units = graphemes(line);
        let line_chars = units.last().map_or(0, |unit| unit.start + unit.chars);
        let char_at = |unit: usize| units.get(unit).map_or(line_chars, |unit| unit.start);
        let byte_at = |unit: usize| units.get(unit).map_or(line.len(), |unit| unit.byte);
        let segments = wrap_line(&units, width);
        let last = segments.len() - 1;
        for (number, &(first, after)) in segments.iter().enumerate() {
            let (start, end) = (char_at(first), char_at(after));
            let bytes = (byte_at(first), byte_at(after));
            let on_cursor_line = index == cursor_line;
            let holds_cursor = on_cursor_line
                && cursor_col >= start
                && (cursor_col < end || (number == last && cursor_col == end));
            if holds_cursor {
                // A cursor inside a grapheme (left there by Up/Down) is drawn at its start.
                let column: usize = units[first..after]
                    .iter()
                    .take_while(|unit| unit.start + unit.chars <= cursor_col)
                    .map(|unit| unit.width)
                    .sum();
                if column >= width {
                    // The cursor after a full last row: it goes to a row of its own.
                    rows.push(VisualRow {
                        line: index,
                        start,
                        end,
                        bytes,
                    });
                    cursor = (rows.len(), 0);
                    rows.push(VisualRow {
                        line: index,
                        start: end,
                        end,
                        bytes: (bytes.1, bytes.1),
                    });
                    continue;
                }
                cursor = (rows.len(), column);
            }
            rows.push(VisualRow {
                line: index,
                start,
                end,
                bytes,
            });
        }
    }
    WrappedInput { rows, cursor }
}

/// Draws the input, laid out as `wrapped` for `area`'s width, into `area`; `scroll` (the first row shown) is kept between frames so the
/// view moves only as far as the cursor needs. Returns where the cursor is drawn, for the
/// terminal's own cursor (an input method places its window there).
pub(crate) fn render_input(
    composer: &Composer,
    wrapped: &WrappedInput,
    area: Rect,
    buf: &mut Buffer,
    scroll: &mut usize,
) -> Option<(u16, u16)> {
    if area.height == 0 || area.width == 0 {
        return None;
    }
    let cursor_style = Style::default().add_modifier(Modifier::REVERSED);
    if composer.is_empty() {
        // The cursor cell first, then the hint, as the terminal would show it.
        buf.set_stringn(
            area.x + 1,
            area.y,
            PLACEHOLDER,
            usize::from(area.width - 1),
            palette().dim,
        );
        buf[(area.x, area.y)].set_style(cursor_style);
        *scroll = 0;
        return Some((area.x, area.y));
    }
    let height = usize::from(area.height);
    let (cursor_row, cursor_col) = wrapped.cursor;
    if cursor_row < *scroll {
        *scroll = cursor_row;
    } else if cursor_row >= *scroll + height {
        *scroll = cursor_row + 1 - height;
    }
    *scroll = (*scroll).min(wrapped.rows.len().saturating_sub(height));
    let lines = composer.lines();
    let mut placed = None;
    for (offset, row) in wrapped.rows.iter().skip(*scroll).take(height).enumerate() {
        let text = &lines[row.line][row.bytes.0..row.bytes.1];
        let y = area.y + offset as u16;
        buf.set_stringn(area.x, y, text, usize::from(area.width), Style::default());
        if *scroll + offset == cursor_row {
            let x = area.x + (cursor_col as u16).min(area.width - 1);
            buf[(x, y)].set_style(cursor_style);
            placed = Some((x, y));
        }
    }
    placed
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The ASCII shortcut lays a line out exactly as the segmentation does.
        #[test]
        fn ascii_lines_are_cut_into_the_same_graphemes(line in "[\\x00-\\x7f]{0,120}") {
            let line = line.replace(['\r', '\n'], " ");
            proptest::prop_assert_eq!(ascii_graphemes(&line), segmented_graphemes(&line));
        }
    }

    fn composer(text: &str) -> Composer {
        let mut composer = Composer::new();
        composer.set_text(text);
        composer
    }

    fn rows(composer: &Composer, width: u16) -> Vec<String> {
        let wrapped = wrap_input(composer, width);
        wrapped
            .rows
            .iter()
            .map(|row| {
                composer.lines()[row.line]
                    .chars()
                    .skip(row.start)
                    .take(row.end - row.start)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn long_lines_wrap_at_spaces_and_keep_every_character() {
        let input = composer("the quick brown fox jumps over the lazy dog");
        let rows = rows(&input, 13);
        assert_eq!(
            rows,
            ["the quick ", "brown fox ", "jumps over ", "the lazy dog"]
        );
        assert_eq!(rows.concat(), input.text());
    }

    #[test]
    fn a_word_longer_than_the_row_is_broken() {
        let input = composer("abcdefghijkl");
        assert_eq!(rows(&input, 5), ["abcde", "fghij", "kl"]);
    }

    #[test]
    fn wide_characters_count_two_columns() {
        let input = composer("日本語のテキスト");
        let rows = rows(&input, 6);
        assert_eq!(rows, ["日本語", "のテキ", "スト"]);
    }

    #[test]
    fn the_cursor_follows_the_wrapped_text() {
        // set_text leaves the cursor at the end.
        let input = composer("aaaa bbbb cccc");
        let wrapped = wrap_input(&input, 5);
        assert_eq!(wrapped.row_count(), 3);
        assert_eq!(wrapped.cursor, (2, 4));
        // At the end of a full row the cursor takes a row of its own.
        let input = composer("abcde");
        let wrapped = wrap_input(&input, 5);
        assert_eq!(wrapped.row_count(), 2);
        assert_eq!(wrapped.cursor, (1, 0));
    }

    #[test]
    fn scrolling_keeps_the_cursor_visible() {
        let input = composer("one\ntwo\nthree\nfour\nfive");
        let mut buf = Buffer::empty(Rect::new(0, 0, 10, 2));
        let mut scroll = 0;
        render_input(
            &input,
            &wrap_input(&input, 10),
            Rect::new(0, 0, 10, 2),
            &mut buf,
            &mut scroll,
        );
        assert_eq!(scroll, 3);
        let shown: String = (0..10).map(|x| buf[(x, 1)].symbol().to_owned()).collect();
        assert!(shown.starts_with("five"), "{shown:?}");
    }

    #[test]
    fn graphemes_are_drawn_whole_and_the_cursor_counts_their_columns() {
        let input = composer("a\u{1F44D}\u{1F3FD}b");
        assert_eq!(
            wrap_input(&input, 20).cursor,
            (0, 4),
            "a, a two-column thumb, b"
        );
        let mut buf = Buffer::empty(Rect::new(0, 0, 20, 1));
        let mut scroll = 0;
        let placed = render_input(
            &input,
            &wrap_input(&input, 20),
            Rect::new(0, 0, 20, 1),
            &mut buf,
            &mut scroll,
        );
        assert_eq!(
            placed,
            Some((4, 0)),
            "the terminal's cursor goes where it is drawn"
        );
        assert_eq!(
            buf[(1, 0)].symbol(),
            "\u{1F44D}\u{1F3FD}",
            "the tone is kept"
        );
        assert_eq!(buf[(3, 0)].symbol(), "b");
        // A ZWJ sequence and a combining accent are one cell group each, never split by a
        // row break.
        let input = composer("ab\u{1F469}\u{200D}\u{1F467}e\u{301}");
        assert_eq!(
            rows(&input, 4),
            ["ab\u{1F469}\u{200D}\u{1F467}", "e\u{301}"]
        );
        assert_eq!(wrap_input(&input, 4).cursor, (1, 1));
        assert_eq!(
            rows(&input, 3),
            ["ab", "\u{1F469}\u{200D}\u{1F467}e\u{301}", ""]
        );
    }
}
