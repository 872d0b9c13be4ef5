//! Markdown to [`RichLine`]s, whole and streaming.
//!
//! [`render_markdown`] renders a complete text with pulldown-cmark. [`MarkdownStream`] renders a
//! text that grows: it commits the stable prefix (blocks that later text cannot change) once, and
//! re-renders only the unfinished tail. A block is stable once a blank line is followed by a line
//! that starts in column 0 (nothing after can join the block before it), or once a top-level code
//! fence opens; inside a fence every complete line is highlighted once, with syntect's state kept
//! between lines. Commit points depend only on the text, never on how it was split into deltas,
//! so the same text always renders the same. Input must already be sanitised.

use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::Span;
use unicode_width::UnicodeWidthStr;

use super::highlight::{plain_code_style, CodeHighlighter};
use super::theme::palette;
use super::wrap::{spans_width, RichLine, WrapMode};

fn fence_style() -> Style {
    Style::default().fg(palette().muted)
}

fn inline_code_style() -> Style {
    Style::default().fg(palette().accent)
}

fn quote_bar() -> Span<'static> {
    Span::styled("│ ", Style::default().fg(palette().success))
}

fn fence_line(text: String) -> RichLine {
    RichLine::text(text, fence_style()).mode(WrapMode::Chars)
}

/// Renders a complete markdown text.
pub(crate) fn render_markdown(text: &str) -> Vec<RichLine> {
    let mut renderer = Renderer::default();
    let options =
        Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(text, options) {
        renderer.event(event);
    }
    renderer.finish()
}

#[derive(Debug)]
enum Container {
    Quote,
    List { next_number: Option<u64> },
    Item { marker: String, marker_shown: bool },
}

#[derive(Default)]
struct TableState {
    alignments: Vec<Alignment>,
    rows: Vec<Vec<Vec<Span<'static>>>>,
    header_rows: usize,
}

struct CodeState {
    language: String,
    fenced: bool,
    text: String,
}

struct LinkState {
    text: String,
    destination: String,
    image: bool,
}

#[derive(Default)]
struct Renderer {
    out: Vec<RichLine>,
    containers: Vec<Container>,
    styles: Vec<Style>,
    current: Vec<Span<'static>>,
    needs_blank: bool,
    code: Option<CodeState>,
    table: Option<TableState>,
    links: Vec<LinkState>,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles
            .iter()
            .fold(Style::default(), |acc, style| acc.patch(*style))
    }

    fn prefixes(&mut self, consume_markers: bool) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut first = Vec::new();
        let mut rest = Vec::new();
        for container in &mut self.containers {
            match container {
                Container::Quote => {
                    first.push(quote_bar());
                    rest.push(quote_bar());
                }
                Container::List { .. } => {}
                Container::Item {
                    marker,
                    marker_shown,
                } => {
                    let indent = " ".repeat(marker.width());
                    if *marker_shown {
                        first.push(Span::raw(indent.clone()));
                    } else {
                        first.push(Span::styled(
                            marker.clone(),
                            Style::default().fg(palette().warning),
                        ));
                        if consume_markers {
                            *marker_shown = true;
                        }
                    }
                    rest.push(Span::raw(indent));
                }
            }
        }
        (first, rest)
    }

    fn push_line(&mut self, content: Vec<Span<'static>>, mode: WrapMode) {
        let (first, rest) = self.prefixes(true);
        self.out.push(RichLine {
            first_prefix: first,
            rest_prefix: rest,
            content,
            mode,
            narrow: None,
        });
    }

    fn flush_line(&mut self) {
        if self.current.is_empty() {
            return;
        }
        let content = std::mem::take(&mut self.current);
        self.push_line(content, WrapMode::Words);
    }

    fn start_block(&mut self) {
        self.flush_line();
        if self.needs_blank && !self.out.is_empty() {
            let (_, rest) = self.prefixes(false);
            // Inside a quote the blank line keeps its bar; list indentation is not needed.
            let bars: Vec<Span<'static>> = rest
                .into_iter()
                .filter(|span| !span.content.trim().is_empty())
                .collect();
            self.out
                .push(RichLine::new(Vec::new()).with_uniform_prefix(bars));
        }
        self.needs_blank = false;
    }

    fn end_block(&mut self) {
        self.flush_line();
        self.needs_blank = true;
    }

    fn push_text(&mut self, text: &str, style: Style) {
        if let Some(link) = self.links.last_mut() {
            link.text.push_str(text);
        }
        if let Some(table) = self.table.as_mut() {
            if let Some(cell) = table.rows.last_mut().and_then(|row| row.last_mut()) {
                cell.push(Span::styled(text.replace('\n', " "), style));
            }
            return;
        }
        let mut lines = text.split('\n');
        if let Some(first) = lines.next() {
            if !first.is_empty() {
                self.current.push(Span::styled(first.to_owned(), style));
            }
        }
        for line in lines {
            self.flush_line();
            if !line.is_empty() {
                self.current.push(Span::styled(line.to_owned(), style));
            }
        }
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some(code) = self.code.as_mut() {
            match event {
                Event::Text(text) => code.text.push_str(&text),
                Event::End(TagEnd::CodeBlock) => self.end_code_block(),
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => {
                let style = self.style();
                self.push_text(&text, style);
            }
            Event::Code(text) | Event::InlineMath(text) => {
                let style = self.style().patch(inline_code_style());
                self.push_text(&text, style);
            }
            Event::DisplayMath(text) => {
                let style = self.style().patch(inline_code_style());
                self.push_text(&text, style);
            }
            Event::Html(text) | Event::InlineHtml(text) => {
                let style = self.style();
                self.push_text(text.trim_end_matches('\n'), style);
            }
            Event::FootnoteReference(name) => {
                let style = self.style();
                self.push_text(&format!("[^{name}]"), style);
            }
            // Agents break lines on purpose: a soft break is shown as a line break.
            Event::SoftBreak | Event::HardBreak => {
                if self.table.is_none() {
                    self.flush_line();
                }
            }
            Event::Rule => {
                self.start_block();
                self.push_line(
                    vec![Span::styled("─", Style::default().fg(palette().muted))],
                    WrapMode::Rule,
                );
                self.needs_blank = true;
            }
            Event::TaskListMarker(checked) => {
                let marker = if checked { "[x] " } else { "[ ] " };
                self.push_text(marker, Style::default().fg(palette().warning));
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock => self.start_block(),
            Tag::Heading { level, .. } => {
                self.start_block();
                let (hashes, style) = heading_look(level);
                self.current.push(Span::styled(hashes, style));
                self.styles.push(style);
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let (language, fenced) = match kind {
                    CodeBlockKind::Fenced(info) => (info.to_string(), true),
                    CodeBlockKind::Indented => (String::new(), false),
                };
                self.code = Some(CodeState {
                    language,
                    fenced,
                    text: String::new(),
                });
            }
            Tag::List(start) => {
                let nested = self
                    .containers
                    .iter()
                    .any(|container| matches!(container, Container::Item { .. }));
                if nested {
                    self.flush_line();
                } else {
                    self.start_block();
                }
                self.containers.push(Container::List { next_number: start });
            }
            Tag::Item => {
                self.flush_line();
                self.needs_blank = false;
                let depth = self
                    .containers
                    .iter()
                    .filter(|container| matches!(container, Container::List { .. }))
                    .count();
                let marker = match self.containers.last_mut() {
                    Some(Container::List {
                        next_number: Some(number),
                    }) => {
                        let marker = format!("{number}. ");
                        *number += 1;
                        marker
                    }
                    _ if depth > 1 => "◦ ".to_owned(),
                    _ => "• ".to_owned(),
                };
                self.containers.push(Container::Item {
                    marker,
                    marker_shown: false,
                });
            }
            Tag::FootnoteDefinition(name) => {
                self.start_block();
                let style = self.style();
                self.push_text(&format!("[^{name}]: "), style);
            }
            Tag::Table(alignments) => {
                self.start_block();
                self.table = Some(TableState {
                    alignments,
                    ..TableState::default()
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(table) = self.table.as_mut() {
                    table.rows.push(Vec::new());
                }
            }
            Tag::TableCell => {
                if let Some(row) = self.table.as_mut().and_then(|table| table.rows.last_mut()) {
                    row.push(Vec::new());
                }
            }
            Tag::Emphasis => self
                .styles
                .push(Style::default().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self
                .styles
                .push(Style::default().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self
                .styles
                .push(Style::default().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.links.push(LinkState {
                    text: String::new(),
                    destination: dest_url.to_string(),
                    image: false,
                });
                self.styles.push(
                    Style::default()
                        .fg(palette().link)
                        .add_modifier(Modifier::UNDERLINED),
                );
            }
            Tag::Image { dest_url, .. } => {
                let style = self.style();
                self.push_text("[image: ", style);
                self.links.push(LinkState {
                    text: String::new(),
                    destination: dest_url.to_string(),
                    image: true,
                });
                self.styles
                    .push(Style::default().add_modifier(Modifier::ITALIC));
            }
            Tag::MetadataBlock(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition => self.start_block(),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph
            | TagEnd::HtmlBlock
            | TagEnd::FootnoteDefinition
            | TagEnd::MetadataBlock(_)
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition => self.end_block(),
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.end_block();
            }
            TagEnd::BlockQuote(_) => {
                self.flush_line();
                self.containers.pop();
                self.needs_blank = true;
            }
            TagEnd::CodeBlock => self.end_code_block(),
            TagEnd::List(_) => {
                self.flush_line();
                self.containers.pop();
                self.needs_blank = true;
            }
            TagEnd::Item => {
                self.flush_line();
                self.containers.pop();
                self.needs_blank = false;
            }
            TagEnd::Table => self.end_table(),
            TagEnd::TableHead => {
                if let Some(table) = self.table.as_mut() {
                    table.header_rows = table.rows.len();
                }
            }
            TagEnd::TableRow | TagEnd::TableCell => {}
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link | TagEnd::Image => {
                self.styles.pop();
                if let Some(link) = self.links.pop() {
                    let style = self.style();
                    if link.image {
                        self.push_text("]", style);
                    }
                    let shows_destination = link.destination.is_empty()
                        || link.text == link.destination
                        || link.destination.strip_prefix("mailto:") == Some(link.text.as_str());
                    if !shows_destination {
                        self.push_text(
                            &format!(" ({})", link.destination),
                            style.patch(Style::default().fg(palette().muted)),
                        );
                    }
                }
            }
        }
    }

    fn end_code_block(&mut self) {
        let Some(code) = self.code.take() else {
            return;
        };
        if code.fenced {
            let opening = fence_line(format!("```{}", code.language));
            self.push_prefixed(opening);
        }
        let mut highlighter = CodeHighlighter::new(&code.language);
        let body = code.text.strip_suffix('\n').unwrap_or(&code.text);
        if !code.text.is_empty() {
            for line in body.split('\n') {
                let spans = if code.fenced {
                    highlighter.highlight_line(line)
                } else {
                    vec![Span::styled(line.to_owned(), plain_code_style())]
                };
                self.push_line(spans, WrapMode::Chars);
            }
        }
        if code.fenced {
            self.push_prefixed(fence_line("```".to_owned()));
        }
        self.needs_blank = true;
    }

    fn push_prefixed(&mut self, line: RichLine) {
        self.push_line(line.content, line.mode);
    }

    fn end_table(&mut self) {
        let Some(table) = self.table.take() else {
            return;
        };
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0usize; columns];
        for row in &table.rows {
            for (column, cell) in row.iter().enumerate() {
                widths[column] = widths[column].max(spans_width(cell));
            }
        }
        let separator = Style::default().fg(palette().muted);
        let headers: Vec<Vec<Span<'static>>> = if table.header_rows > 0 {
            table.rows[0].clone()
        } else {
            Vec::new()
        };
        let (_, container_prefix) = self.prefixes(false);
        for (index, row) in table.rows.into_iter().enumerate() {
            let header = index < table.header_rows;
            // Too narrow for the grid: each row becomes one line per cell, "header: value".
            let narrow = if header {
                Vec::new()
            } else {
                record_lines(&headers, &row, &container_prefix)
            };
            let mut content = Vec::new();
            for (column, width) in widths.iter().enumerate() {
                if column > 0 {
                    content.push(Span::styled(" │ ", separator));
                }
                let cell = row.get(column).cloned().unwrap_or_default();
                let padding = width.saturating_sub(spans_width(&cell));
                let (left, right) = match table.alignments.get(column) {
                    Some(Alignment::Right) => (padding, 0),
                    Some(Alignment::Center) => (padding / 2, padding - padding / 2),
                    _ => (0, padding),
                };
                content.push(Span::raw(" ".repeat(left)));
                for mut span in cell {
                    if header {
                        span.style = span.style.add_modifier(Modifier::BOLD);
                    }
                    content.push(span);
                }
                content.push(Span::raw(" ".repeat(right)));
            }
            self.push_line(content, WrapMode::Chars);
            if let Some(line) = self.out.last_mut() {
                line.narrow = Some(narrow);
            }
            if header && index + 1 == table.header_rows {
                let rule: Vec<String> = widths.iter().map(|width| "─".repeat(*width)).collect();
                self.push_line(
                    vec![Span::styled(rule.join("─┼─"), separator)],
                    WrapMode::Chars,
                );
                if let Some(line) = self.out.last_mut() {
                    line.narrow = Some(Vec::new());
                }
            }
        }
        self.needs_blank = true;
    }

    fn finish(mut self) -> Vec<RichLine> {
        if self.code.is_some() {
            self.end_code_block();
        }
        if self.table.is_some() {
            self.end_table();
        }
        self.flush_line();
        self.out
    }
}

/// A table row as a record, for screens too narrow for the grid: the first cell marked `▪`, every
/// cell on its own wrapped line after its column's header.
fn record_lines(
    headers: &[Vec<Span<'static>>],
    row: &[Vec<Span<'static>>],
    container_prefix: &[Span<'static>],
) -> Vec<RichLine> {
    let marker = Style::default().fg(palette().muted);
    row.iter()
        .enumerate()
        .map(|(column, cell)| {
            let mut content = Vec::new();
            if let Some(header) = headers.get(column).filter(|header| !header.is_empty()) {
                for span in header {
                    content.push(Span::styled(
                        span.content.clone(),
                        span.style.add_modifier(Modifier::BOLD),
                    ));
                }
                content.push(Span::raw(": "));
            }
            content.extend(cell.iter().cloned());
            let mut first = container_prefix.to_vec();
            first.push(Span::styled(if column == 0 { "▪ " } else { "  " }, marker));
            let mut rest = container_prefix.to_vec();
            rest.push(Span::raw("    "));
            RichLine::new(content).with_prefix(first, rest)
        })
        .collect()
}

fn heading_look(level: HeadingLevel) -> (&'static str, Style) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    match level {
        HeadingLevel::H1 => ("# ", bold.add_modifier(Modifier::UNDERLINED)),
        HeadingLevel::H2 => ("## ", bold),
        HeadingLevel::H3 => ("### ", bold.add_modifier(Modifier::ITALIC)),
        HeadingLevel::H4 => ("#### ", bold.add_modifier(Modifier::ITALIC)),
        HeadingLevel::H5 => ("##### ", bold.add_modifier(Modifier::ITALIC)),
        HeadingLevel::H6 => ("###### ", bold.add_modifier(Modifier::ITALIC)),
    }
}

/// An open top-level code fence.
struct OpenFence {
    marker: char,
    length: usize,
    highlighter: CodeHighlighter,
}

/// Incremental rendering of a growing markdown text (see the module docs).
#[derive(Default)]
pub(crate) struct MarkdownStream {
    /// Bytes of the text already split into complete lines.
    scanned: usize,
    /// Start of the markdown not yet committed.
    pending_start: usize,
    /// Where the last blank line of the pending markdown starts, while it may end a block.
    blank_at: Option<usize>,
    fence: Option<OpenFence>,
    committed: Vec<RichLine>,
}

impl MarkdownStream {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Lines that later text can no longer change.
    pub(crate) fn committed(&self) -> &[RichLine] {
        &self.committed
    }

    /// Takes in the text so far (which must extend the text given before).
    pub(crate) fn update(&mut self, text: &str) {
        if text.len() < self.scanned || !text.is_char_boundary(self.scanned) {
            *self = Self::default();
        }
        let complete_end = match text[self.scanned..].rfind('\n') {
            Some(offset) => self.scanned + offset + 1,
            None => return,
        };
        let mut position = self.scanned;
        while position < complete_end {
            let line_end = position
                + text[position..complete_end]
                    .find('\n')
                    .unwrap_or(complete_end - position);
            self.scan_line(text, position, line_end);
            position = line_end + 1;
        }
        self.scanned = complete_end;
    }

    fn scan_line(&mut self, text: &str, start: usize, end: usize) {
        let line = &text[start..end];
        if let Some(fence) = self.fence.as_mut() {
            if closes_fence(line, fence.marker, fence.length) {
                self.committed.push(fence_line("```".to_owned()));
                self.fence = None;
                self.pending_start = end + 1;
                self.blank_at = None;
            } else {
                let spans = fence.highlighter.highlight_line(line);
                self.committed
                    .push(RichLine::new(spans).mode(WrapMode::Chars));
            }
            return;
        }
        if let Some((marker, length, info)) = opens_fence(line) {
            self.commit_pending(text, start);
            self.separate();
            self.committed.push(fence_line(format!("```{info}")));
            self.fence = Some(OpenFence {
                marker,
                length,
                highlighter: CodeHighlighter::new(info),
            });
            self.pending_start = end + 1;
            self.blank_at = None;
            return;
        }
        if line.trim().is_empty() {
            self.blank_at.get_or_insert(start);
            return;
        }
        if let Some(blank) = self.blank_at.take() {
            if !line.starts_with([' ', '\t']) {
                self.commit_pending(text, blank);
                self.pending_start = start;
            }
        }
    }

    /// A blank line between the committed output and what comes next.
    fn separate(&mut self) {
        if !self.committed.is_empty() {
            self.committed.push(RichLine::blank());
        }
    }

    fn commit_pending(&mut self, text: &str, end: usize) {
        let chunk = &text[self.pending_start.min(end)..end];
        if chunk.trim().is_empty() {
            return;
        }
        self.separate();
        self.committed.extend(render_markdown(chunk));
    }

    /// The lines of the text after the committed part (`text` as last given to `update`).
    pub(crate) fn render_tail(&self, text: &str) -> Vec<RichLine> {
        if self.fence.is_some() {
            // An unfinished code line is shown plain until its newline arrives.
            let partial = text.get(self.scanned..).unwrap_or("");
            if partial.is_empty() {
                return Vec::new();
            }
            return vec![RichLine::text(partial, plain_code_style()).mode(WrapMode::Chars)];
        }
        let pending = text.get(self.pending_start..).unwrap_or("");
        if pending.trim().is_empty() {
            return Vec::new();
        }
        let mut lines = Vec::new();
        if !self.committed.is_empty() {
            lines.push(RichLine::blank());
        }
        lines.extend(render_markdown(pending));
        lines
    }
}

/// `(marker, length, info)` when `line` opens a code fence in column 0.
fn opens_fence(line: &str) -> Option<(char, usize, &str)> {
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

fn closes_fence(line: &str, marker: char, length: usize) -> bool {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return false;
    }
    let run = trimmed.chars().take_while(|ch| *ch == marker).count();
    run >= length && trimmed[run..].trim().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::wrap::wrap;

    fn plain(lines: &[RichLine], width: usize) -> Vec<String> {
        lines
            .iter()
            .flat_map(|line| wrap(line, width))
            .map(|row| {
                row.spans
                    .iter()
                    .map(|span| span.content.as_ref())
                    .collect::<String>()
                    .trim_end()
                    .to_owned()
            })
            .collect()
    }

    const SAMPLE: &str = "# Title\n\nSome *emphasis* and **bold** and `code`.\n\n- one\n- two\n  - nested\n\n1. first\n2. second\n\n> quoted\n> text\n\n```rust\nfn main() {}\n```\n\n| a | bb |\n|---|---:|\n| 1 | 2 |\n\n---\n\nA [link](https://example.com).\n";

    #[test]
    fn renders_the_common_blocks() {
        assert_eq!(
            plain(&render_markdown(SAMPLE), 40),
            vec![
                "# Title",
                "",
                "Some emphasis and bold and code.",
                "",
                "• one",
                "• two",
                "  ◦ nested",
                "",
                "1. first",
                "2. second",
                "",
                "│ quoted",
                "│ text",
                "",
                "```rust",
                "fn main() {}",
                "```",
                "",
                "a │ bb",
                "──┼───",
                "1 │  2",
                "",
                "────────────────────────────────────────",
                "",
                "A link (https://example.com).",
            ]
        );
    }

    #[test]
    fn list_items_wrap_under_their_text() {
        let lines = render_markdown("- a long item that wraps around\n");
        assert_eq!(
            plain(&lines, 16),
            vec!["• a long item", "  that wraps", "  around"]
        );
    }

    #[test]
    fn streaming_in_any_split_renders_like_the_whole() {
        let whole = {
            let mut stream = MarkdownStream::new();
            stream.update(SAMPLE);
            let mut lines = stream.committed().to_vec();
            lines.extend(stream.render_tail(SAMPLE));
            plain(&lines, 40)
        };
        for step in [1, 3, 7, 13] {
            let mut stream = MarkdownStream::new();
            let mut end = 0;
            while end < SAMPLE.len() {
                end = (end + step).min(SAMPLE.len());
                while !SAMPLE.is_char_boundary(end) {
                    end += 1;
                }
                stream.update(&SAMPLE[..end]);
                // The tail is rendered at every step, as the UI does.
                let _ = stream.render_tail(&SAMPLE[..end]);
            }
            let mut lines = stream.committed().to_vec();
            lines.extend(stream.render_tail(SAMPLE));
            assert_eq!(plain(&lines, 40), whole, "step {step}");
        }
        // And the whole streamed document reads like the one-shot render.
        assert_eq!(whole, plain(&render_markdown(SAMPLE), 40));
    }

    #[test]
    fn stream_commits_stable_blocks_and_code_lines() {
        let mut stream = MarkdownStream::new();
        let text = "para one\n\npara two\n\n```py\nx = 1\n";
        stream.update(text);
        assert_eq!(
            plain(stream.committed(), 40),
            vec!["para one", "", "para two", "", "```py", "x = 1"]
        );
        assert!(stream.render_tail(text).is_empty());
        // A continuation line indented under the blank does not end the block.
        let mut stream = MarkdownStream::new();
        stream.update("- item\n\n  more of item\n");
        assert!(stream.committed().is_empty());
    }

    #[test]
    fn unfinished_code_line_is_shown_plain() {
        let mut stream = MarkdownStream::new();
        let text = "```rust\nlet x";
        stream.update(text);
        assert_eq!(plain(&stream.render_tail(text), 40), vec!["let x"]);
    }

    #[test]
    fn a_table_too_wide_for_the_screen_becomes_records() {
        let lines = render_markdown(
            "| Provider | Transport | Notes |\n|---|---|---|\n| pi | json, rpc | the default when on PATH |\n| claude | json | stream-json over stdout |\n",
        );
        let wide = plain(&lines, 80);
        assert_eq!(wide[0].trim_end(), "Provider │ Transport │ Notes");
        assert!(wide[2].starts_with("pi       │ json, rpc │ the default"));
        let narrow = plain(&lines, 30);
        assert_eq!(
            narrow,
            vec![
                "▪ Provider: pi",
                "  Transport: json, rpc",
                "  Notes: the default when on",
                "    PATH",
                "▪ Provider: claude",
                "  Transport: json",
                "  Notes: stream-json over",
                "    stdout",
            ]
        );
        assert!(narrow
            .iter()
            .all(|row| unicode_width::UnicodeWidthStr::width(row.as_str()) <= 30));
    }
}
