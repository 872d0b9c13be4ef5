//! Code in markdown: fences (the opening and closing lines, recognised as CommonMark does) and
//! a code block's lines, highlighted when fenced; shared by the whole and the streaming renderer.

use ratatui::style::Style;
use ratatui::text::Span;

use super::highlight::{plain_code_style, CodeHighlighter};
use super::theme::palette;
use super::wrap::{RichLine, WrapMode};

fn fence_style() -> Style {
    Style::default().fg(palette().muted)
}

/// A fence's own line, as written.
pub(super) fn fence_line(text: String) -> RichLine {
    RichLine::text(text, fence_style()).mode(WrapMode::Chars)
}

/// A code block's lines: fenced, its fences around its lines highlighted for `language`;
/// indented, its lines plain.
pub(super) fn code_block_lines(language: &str, text: &str, fenced: bool) -> Vec<RichLine> {
    let mut lines = Vec::new();
    if fenced {
        lines.push(fence_line(format!("```{language}")));
    }
    let mut highlighter = CodeHighlighter::new(language);
    let body = text.strip_suffix('\n').unwrap_or(text);
    if !text.is_empty() {
        for line in body.split('\n') {
            let spans = if fenced {
                highlighter.highlight_line(line)
            } else {
                vec![Span::styled(line.to_owned(), plain_code_style())]
            };
            lines.push(RichLine::new(spans).mode(WrapMode::Chars));
        }
    }
    if fenced {
        lines.push(fence_line("```".to_owned()));
    }
    lines
}

/// `(marker, length, info)` when `line` opens a code fence in column 0.
pub(super) fn opens_fence(line: &str) -> Option<(char, usize, &str)> {
    let marker = line.chars().next().filter(|ch| *ch == '`' || *ch == '~')?;
    let length = line.chars().take_while(|ch| *ch == marker).count();
    if length < 3 {
        return None;
    }
    let info = line[length..].trim();
    // A backtick fence's info string may not contain backticks (CommonMark).
    if marker == '`' && info.contains('`') {
        return None;
    }
    Some((marker, length, info))
}

/// Whether `line` closes a fence opened with `length` `marker`s.
pub(super) fn closes_fence(line: &str, marker: char, length: usize) -> bool {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return false;
    }
    let run = trimmed.chars().take_while(|ch| *ch == marker).count();
    run >= length && trimmed[run..].trim().is_empty()
}
