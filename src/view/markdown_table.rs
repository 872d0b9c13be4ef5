//! A markdown table laid out in columns (widths, alignment, a rule under the header), each row
//! also kept as a record (`header: value` lines) for screens too narrow for the grid.

use pulldown_cmark::Alignment;
use ratatui::style::{Modifier, Style};
use ratatui::text::Span;

use super::theme::palette;
use super::wrap::{spans_width, RichLine};

/// A table as the parser gives it: its columns' alignment and its rows of cells.
#[derive(Default)]
pub(super) struct TableState {
    pub(super) alignments: Vec<Alignment>,
    pub(super) rows: Vec<Vec<Vec<Span<'static>>>>,
    pub(super) header_rows: usize,
}

/// The table's rows as lines for the grid, each with the record lines that replace it on a
/// narrow screen (none for the header and its rule). `container_prefix` is what the containers
/// around the table put in front of a record's lines.
pub(super) fn table_rows(
    table: TableState,
    container_prefix: &[Span<'static>],
) -> Vec<(Vec<Span<'static>>, Vec<RichLine>)> {
    let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; columns];
    for row in &table.rows {
        for (column, cell) in row.iter().enumerate() {
            widths[column] = widths[column].max(spans_width(cell));
        }
    }
    let separator = Style::default().fg(palette().muted);
    let mut rows = Vec::new();
    let headers: Vec<Vec<Span<'static>>> = if table.header_rows > 0 {
        table.rows[0].clone()
    } else {
        Vec::new()
    };
    for (index, row) in table.rows.into_iter().enumerate() {
        let header = index < table.header_rows;
        // Too narrow for the grid: each row becomes one line per cell, "header: value".
        let narrow = if header {
            Vec::new()
        } else {
            record_lines(&headers, &row, container_prefix)
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
        rows.push((content, narrow));
        if header && index + 1 == table.header_rows {
            let rule: Vec<String> = widths.iter().map(|width| "─".repeat(*width)).collect();
            rows.push((vec![Span::styled(rule.join("─┼─"), separator)], Vec::new()));
        }
    }
    rows
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
