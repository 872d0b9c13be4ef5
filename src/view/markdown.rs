//! A complete markdown text to [`RichLine`]s with pulldown-cmark: blocks (headings, paragraphs,
//! quotes, lists, rules) and inline styles, links and images; code blocks and tables are laid
//! out by `markdown_code` and `markdown_table`, growing text by `markdown_stream`. Input must
//! already be sanitised.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::Span;
use unicode_width::UnicodeWidthStr;

use super::markdown_code::code_block_lines;
use super::markdown_table::{table_rows, TableState};
use super::theme::palette;
use super::wrap::{RichLine, WrapMode};

fn inline_code_style() -> Style {
    Style::default().fg(palette().accent)
}

fn quote_bar() -> Span<'static> {
    Span::styled("│ ", Style::default().fg(palette().success))
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
        for line in code_block_lines(&code.language, &code.text, code.fenced) {
            self.push_prefixed(line);
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
        let (_, container_prefix) = self.prefixes(false);
        for (content, narrow) in table_rows(table, &container_prefix) {
            self.push_line(content, WrapMode::Chars);
            if let Some(line) = self.out.last_mut() {
                line.narrow = Some(narrow);
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

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::view::wrap::wrap;

    pub(in crate::view) fn plain(lines: &[RichLine], width: usize) -> Vec<String> {
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

    pub(in crate::view) const SAMPLE: &str = "# Title\n\nSome *emphasis* and **bold** and `code`.\n\n- one\n- two\n  - nested\n\n1. first\n2. second\n\n> quoted\n> text\n\n```rust\nfn main() {}\n```\n\n| a | bb |\n|---|---:|\n| 1 | 2 |\n\n---\n\nA [link](https://example.com).\n";

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
