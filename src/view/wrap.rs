//! Width-independent styled lines and their wrapping to a width.
//!
//! Renderers (markdown, cells) produce [`RichLine`]s once per content change; wrapping them to
//! the current width is a separate, cheap step, so a resize re-wraps without re-parsing. Widths
//! are terminal columns (`unicode-width`), never bytes or chars, and text is only ever split
//! between grapheme clusters (`unicode-segmentation`), so a combining mark stays on its letter and
//! a ZWJ emoji stays whole. Wrapped output never exceeds the width, except that a prefix wider
//! than the width, or a single grapheme wider than the row, is kept whole (ratatui clips it).

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// How a line that is too wide continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum WrapMode {
    /// At spaces; a word wider than the line is broken between characters.
    #[default]
    Words,
    /// Between any two characters (code, tool output).
    Chars,
    /// Cut with `…` (one-line summaries).
    Truncate,
    /// A horizontal rule that fills the width.
    Rule,
}

/// One logical line: a prefix for its first row, a prefix for wrapped rows, and its content.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RichLine {
    pub(crate) first_prefix: Vec<Span<'static>>,
    pub(crate) rest_prefix: Vec<Span<'static>>,
    pub(crate) content: Vec<Span<'static>>,
    pub(crate) mode: WrapMode,
    /// What to show instead when the line does not fit the width unwrapped (a table row turns
    /// into one line per cell, so that a narrow screen never breaks a row mid-cell).
    pub(crate) narrow: Option<Vec<RichLine>>,
}

impl RichLine {
    pub(crate) fn new(content: Vec<Span<'static>>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    pub(crate) fn blank() -> Self {
        Self::default()
    }

    pub(crate) fn with_prefix(
        mut self,
        first: Vec<Span<'static>>,
        rest: Vec<Span<'static>>,
    ) -> Self {
        self.first_prefix = first;
        self.rest_prefix = rest;
        self
    }

    /// The same prefix on every row.
    pub(crate) fn with_uniform_prefix(self, prefix: Vec<Span<'static>>) -> Self {
        let rest = prefix.clone();
        self.with_prefix(prefix, rest)
    }

    pub(crate) fn mode(mut self, mode: WrapMode) -> Self {
        self.mode = mode;
        self
    }

    /// Plain text, one span.
    pub(crate) fn text(text: impl Into<String>, style: Style) -> Self {
        Self::new(vec![Span::styled(text.into(), style)])
    }

    /// Applies `style` on top of every span's own style.
    pub(crate) fn patch_style(&mut self, style: Style) {
        for span in self
            .first_prefix
            .iter_mut()
            .chain(self.rest_prefix.iter_mut())
            .chain(self.content.iter_mut())
        {
            span.style = span.style.patch(style);
        }
    }
}

pub(crate) fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|span| span.content.width()).sum()
}

/// The columns of one grapheme cluster.
fn grapheme_width(grapheme: &str) -> usize {
    grapheme.width()
}

/// Wraps `line` to `width` columns, appending rows to `out`.
pub(crate) fn wrap_into(line: &RichLine, width: usize, out: &mut Vec<Line<'static>>) {
    let width = width.max(1);
    if let Some(narrow) = &line.narrow {
        if spans_width(&line.first_prefix) + spans_width(&line.content) > width {
            for alternative in narrow {
                wrap_into(alternative, width, out);
            }
            return;
        }
    }
    let first_avail = width.saturating_sub(spans_width(&line.first_prefix)).max(1);
    let rest_avail = width.saturating_sub(spans_width(&line.rest_prefix)).max(1);
    let mut rows = RowBuilder {
        rows: Vec::new(),
        current: Vec::new(),
        current_width: 0,
        first_avail,
        rest_avail,
    };
    match line.mode {
        WrapMode::Words => wrap_words(&line.content, &mut rows),
        WrapMode::Chars => wrap_chars(&line.content, &mut rows),
        WrapMode::Truncate => truncate(&line.content, first_avail, &mut rows),
        WrapMode::Rule => {
            let style = line
                .content
                .first()
                .map(|span| span.style)
                .unwrap_or_default();
            rows.current
                .push(Span::styled("─".repeat(first_avail), style));
        }
    }
    rows.finish();
    for (index, row) in rows.rows.into_iter().enumerate() {
        let prefix = if index == 0 {
            &line.first_prefix
        } else {
            &line.rest_prefix
        };
        let mut spans = Vec::with_capacity(prefix.len() + row.len());
        spans.extend(prefix.iter().cloned());
        spans.extend(row);
        out.push(Line::from(spans));
    }
}

/// Convenience: the wrapped rows of one line.
pub(crate) fn wrap(line: &RichLine, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    wrap_into(line, width, &mut out);
    out
}

struct RowBuilder {
    rows: Vec<Vec<Span<'static>>>,
    current: Vec<Span<'static>>,
    current_width: usize,
    first_avail: usize,
    rest_avail: usize,
}

impl RowBuilder {
    fn avail(&self) -> usize {
        if self.rows.is_empty() {
            self.first_avail
        } else {
            self.rest_avail
        }
    }

    fn push(&mut self, text: &str, style: Style, width: usize) {
        if text.is_empty() {
            return;
        }
        if let Some(last) = self.current.last_mut() {
            if last.style == style {
                last.content.to_mut().push_str(text);
                self.current_width += width;
                return;
            }
        }
        self.current.push(Span::styled(text.to_owned(), style));
        self.current_width += width;
    }

    fn new_row(&mut self) {
        self.rows.push(std::mem::take(&mut self.current));
        self.current_width = 0;
    }

    /// Places text grapheme by grapheme, starting new rows as needed.
    fn push_breaking(&mut self, text: &str, style: Style) {
        let mut start = 0;
        let mut run_width = 0;
        for (index, grapheme) in text.grapheme_indices(true) {
            let width = grapheme_width(grapheme);
            if self.current_width + run_width + width > self.avail()
                && self.current_width + run_width > 0
            {
                self.push(&text[start..index], style, run_width);
                self.new_row();
                start = index;
                run_width = 0;
            }
            run_width += width;
        }
        self.push(&text[start..], style, run_width);
    }

    fn finish(&mut self) {
        if !self.current.is_empty() || self.rows.is_empty() {
            self.new_row();
        }
    }
}

/// A run of text within one span: either all spaces or no spaces.
struct Piece<'a> {
    text: &'a str,
    style: Style,
    width: usize,
}

/// What word wrapping holds back: a word may span several spans (`**bold**ing`), so its
/// pieces, and the spaces before it, are collected and placed together.
struct PendingWord<'a> {
    word: Vec<Piece<'a>>,
    word_width: usize,
    spaces: Vec<Piece<'a>>,
    spaces_width: usize,
    /// No word of the logical line has been placed yet.
    at_line_start: bool,
}

impl<'a> PendingWord<'a> {
    fn new() -> Self {
        Self {
            word: Vec::new(),
            word_width: 0,
            spaces: Vec::new(),
            spaces_width: 0,
            at_line_start: true,
        }
    }

    fn push(&mut self, piece: Piece<'a>, rows: &mut RowBuilder) {
        if piece.text.starts_with(' ') {
            self.flush(rows);
            self.spaces_width += piece.width;
            self.spaces.push(piece);
        } else {
            self.word_width += piece.width;
            self.word.push(piece);
        }
    }

    /// Places the collected word, with the spaces before it unless it starts a new row.
    fn flush(&mut self, rows: &mut RowBuilder) {
        if self.word.is_empty() {
            return;
        }
        let fits = rows.current_width + self.spaces_width + self.word_width <= rows.avail();
        if fits || (self.at_line_start && rows.current_width == 0) {
            // Leading spaces of the logical line are indentation: keep them.
            for piece in self.spaces.drain(..) {
                rows.push(piece.text, piece.style, piece.width);
            }
        } else {
            self.spaces.clear();
            if rows.current_width > 0 {
                rows.new_row();
            }
        }
        self.spaces_width = 0;
        if rows.current_width + self.word_width <= rows.avail() {
            for piece in self.word.drain(..) {
                rows.push(piece.text, piece.style, piece.width);
            }
        } else {
            for piece in self.word.drain(..) {
                rows.push_breaking(piece.text, piece.style);
            }
        }
        self.word_width = 0;
        self.at_line_start = false;
    }

    /// Places the last word; trailing spaces are dropped unless the line is nothing but spaces.
    fn finish(mut self, rows: &mut RowBuilder) {
        self.flush(rows);
        if self.at_line_start {
            for piece in self.spaces.drain(..) {
                rows.push_breaking(piece.text, piece.style);
            }
        }
    }
}

fn wrap_words(content: &[Span<'static>], rows: &mut RowBuilder) {
    let mut pending = PendingWord::new();
    for span in content {
        let style = span.style;
        let mut rest: &str = &span.content;
        while !rest.is_empty() {
            let is_space = rest.starts_with(' ');
            let end = rest
                .find(|ch: char| (ch == ' ') != is_space)
                .unwrap_or(rest.len());
            let (run, tail) = rest.split_at(end);
            rest = tail;
            let piece = Piece {
                text: run,
                style,
                width: run.width(),
            };
            pending.push(piece, rows);
        }
    }
    pending.finish(rows);
}

fn wrap_chars(content: &[Span<'static>], rows: &mut RowBuilder) {
    for span in content {
        rows.push_breaking(&span.content, span.style);
    }
}

fn truncate(content: &[Span<'static>], avail: usize, rows: &mut RowBuilder) {
    let total = spans_width(content);
    if total <= avail {
        for span in content {
            rows.push(&span.content, span.style, span.content.width());
        }
        return;
    }
    let budget = avail.saturating_sub(1);
    let mut used = 0;
    let mut last_style = Style::default();
    'spans: for span in content {
        last_style = span.style;
        let mut span_width = 0;
        for (index, grapheme) in span.content.grapheme_indices(true) {
            let width = grapheme_width(grapheme);
            if used + width > budget {
                rows.push(&span.content[..index], span.style, span_width);
                break 'spans;
            }
            used += width;
            span_width += width;
        }
        rows.push(&span.content, span.style, span_width);
    }
    rows.push("…", last_style, 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(line: &RichLine, width: usize) -> Vec<String> {
        wrap(line, width)
            .iter()
            .map(|row| row.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn words_wrap_at_spaces_with_prefixes() {
        let line = RichLine::text("the quick brown fox jumps", Style::default())
            .with_prefix(vec![Span::raw("• ")], vec![Span::raw("  ")]);
        assert_eq!(
            rows(&line, 12),
            vec!["• the quick", "  brown fox", "  jumps"]
        );
    }

    #[test]
    fn long_words_break_between_characters() {
        let line = RichLine::text("abcdefghij xy", Style::default());
        assert_eq!(rows(&line, 4), vec!["abcd", "efgh", "ij", "xy"]);
    }

    #[test]
    fn wide_characters_count_two_columns() {
        let line = RichLine::text("漢字漢字", Style::default()).mode(WrapMode::Chars);
        assert_eq!(rows(&line, 5), vec!["漢字", "漢字"]);
    }

    #[test]
    fn styled_word_across_spans_stays_together() {
        let bold = Style::default().add_modifier(ratatui::style::Modifier::BOLD);
        let line = RichLine::new(vec![
            Span::raw("aaaa "),
            Span::styled("bo", bold),
            Span::raw("ld"),
        ]);
        assert_eq!(rows(&line, 6), vec!["aaaa", "bold"]);
    }

    /// Every row's width, as the terminal counts it.
    fn widths(line: &RichLine, width: usize) -> Vec<usize> {
        rows(line, width).iter().map(|row| row.width()).collect()
    }

    #[test]
    fn combining_marks_stay_on_their_letter() {
        // "e" + COMBINING ACUTE ACCENT, five times: each is one column, one grapheme.
        let text = "e\u{301}".repeat(5);
        let line = RichLine::text(text, Style::default()).mode(WrapMode::Chars);
        let wrapped = rows(&line, 2);
        assert_eq!(
            wrapped,
            ["e\u{301}e\u{301}", "e\u{301}e\u{301}", "e\u{301}"]
        );
        assert!(wrapped.iter().all(|row| !row.starts_with('\u{301}')));
    }

    #[test]
    fn a_zwj_emoji_is_never_split() {
        // A family: four emoji joined by ZERO WIDTH JOINERs, one grapheme two columns wide.
        let family = "👨\u{200d}👩\u{200d}👧\u{200d}👦";
        let line =
            RichLine::text(format!("ab{family}{family}"), Style::default()).mode(WrapMode::Chars);
        assert_eq!(rows(&line, 3), ["ab", family, family]);
        let line = RichLine::text(format!("x {family} y"), Style::default());
        assert_eq!(rows(&line, 3), ["x", family, "y"]);
    }

    #[test]
    fn cjk_at_odd_widths_never_overflows() {
        let line = RichLine::text("漢字かな交じり文", Style::default());
        for width in [3, 5, 7] {
            assert!(
                widths(&line, width).iter().all(|used| *used <= width),
                "{width}"
            );
        }
        assert_eq!(rows(&line, 5), ["漢字", "かな", "交じ", "り文"]);
    }

    #[test]
    fn truncation_counts_columns_across_spans() {
        let line = RichLine::new(vec![
            Span::raw("ab"),
            Span::raw("漢字漢字"),
            Span::raw("tail"),
        ])
        .mode(WrapMode::Truncate);
        assert_eq!(rows(&line, 7), ["ab漢字…"]);
        assert_eq!(widths(&line, 7), [7]);
        let line = RichLine::text("e\u{301}e\u{301}e\u{301}xyz", Style::default())
            .mode(WrapMode::Truncate);
        assert_eq!(rows(&line, 4), ["e\u{301}e\u{301}e\u{301}…"]);
    }

    #[test]
    fn indentation_is_kept_and_truncation_marks_the_cut() {
        let line = RichLine::text("    indented", Style::default());
        assert_eq!(rows(&line, 20), vec!["    indented"]);
        let line = RichLine::text("a long summary", Style::default()).mode(WrapMode::Truncate);
        assert_eq!(rows(&line, 8), vec!["a long …"]);
        assert_eq!(rows(&RichLine::blank(), 8), vec![""]);
    }
}
