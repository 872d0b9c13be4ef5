//! What every transcript cell's rows share: the margin, the dim style, the fold marker and the
//! bar in front of a cell's details.

use ratatui::style::Style;
use ratatui::text::Span;

use super::theme::palette;

pub(crate) const MARGIN: &str = "  ";

pub(crate) fn dim() -> Style {
    palette().dim
}

pub(crate) fn toggle_marker(expanded: bool) -> &'static str {
    if expanded {
        "▾ "
    } else {
        "▸ "
    }
}

/// The bar in front of a cell's expanded details (a notice's sections, a permission's command,
/// a turn's changed files).
pub(crate) fn detail_bar() -> Vec<Span<'static>> {
    vec![Span::styled("  │ ", dim())]
}
