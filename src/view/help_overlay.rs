//! F1, the help overlay: the help's rows laid out for the width (descriptions beside their keys,
//! or under them on a narrow screen), scrolled within a centred box.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use std::time::Instant;

use crate::app::help::{help_sections, KeyHelp};
use crate::app::keymap::HELP_KEYS;
use crate::app::state::AppState;
use crate::view::frame::{centered, footer, frame};
use crate::view::list::draw_scrolled;
use crate::view::wrap::{wrap, RichLine};

use super::overlay::DrawOverlay;
use super::theme::palette;

/// The help's width at most.
const HELP_WIDTH: u16 = 110;
/// The widest keys column of the help.
const HELP_KEYS_MAX_WIDTH: usize = 26;
/// The help puts descriptions beside their keys from this width on.
const HELP_SIDE_BY_SIDE_WIDTH: usize = 50;

impl DrawOverlay for KeyHelp {
    fn draw(&self, state: &AppState, area: Rect, buf: &mut Buffer, _now: Instant) {
        render_help(state, self.scroll, area, buf);
    }
}

/// The help rows for a width, section by section: keys and description side by side, the keys
/// column as wide as its widest keys (a third of the width at most; keys wider than that stand
/// on a row of their own, the description under them), or (narrow) every description under its
/// keys. No text runs into its neighbour at any width.
pub(crate) fn help_rows(width: u16) -> Vec<Line<'static>> {
    let key_style = Style::default()
        .fg(palette().accent)
        .add_modifier(Modifier::BOLD);
    let title_style = Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED);
    let width = usize::from(width);
    let mut rows = Vec::new();
    for (index, section) in help_sections().into_iter().enumerate() {
        if index > 0 {
            rows.push(Line::raw(""));
        }
        let title = RichLine::new(vec![Span::styled(section.title, title_style)])
            .with_uniform_prefix(vec![Span::raw(" ")]);
        rows.extend(wrap(&title, width));
        let widest = section
            .rows
            .iter()
            .map(|row| row.keys.chars().count())
            .max()
            .unwrap_or(0);
        let column = widest.min(width / 3).min(HELP_KEYS_MAX_WIDTH);
        let side_by_side = width >= HELP_SIDE_BY_SIDE_WIDTH;
        for row in section.rows {
            let keys_width = row.keys.chars().count();
            if side_by_side && keys_width <= column {
                let keys = format!(" {:<column$}  ", row.keys);
                let line = RichLine::new(vec![Span::raw(row.what)]).with_prefix(
                    vec![Span::styled(keys, key_style)],
                    vec![Span::raw(" ".repeat(column + 3))],
                );
                rows.extend(wrap(&line, width));
                continue;
            }
            let keys = RichLine::new(vec![Span::styled(row.keys, key_style)])
                .with_uniform_prefix(vec![Span::raw(" ")]);
            rows.extend(wrap(&keys, width));
            let indent = if side_by_side { column + 3 } else { 3 };
            let line = RichLine::new(vec![Span::raw(row.what)])
                .with_uniform_prefix(vec![Span::raw(" ".repeat(indent))]);
            rows.extend(wrap(&line, width));
        }
    }
    rows
}

/// How far the help can scroll on a screen of `area`: its rows past those its box shows.
pub(crate) fn help_scroll_limit(state: &AppState, area: Rect) -> usize {
    let (rows, outer) = help_box(state, area);
    // The box's border takes a row above and below.
    rows.len()
        .saturating_sub(usize::from(outer.height.saturating_sub(2)))
}

fn render_help(state: &AppState, scroll: usize, area: Rect, buf: &mut Buffer) {
    let (rows, outer) = help_box(state, area);
    let inner = frame("Help", &footer(HELP_KEYS, outer), outer, buf);
    draw_scrolled(&rows, scroll, inner, buf);
}

/// The help's rows and its box on a screen of `area`.
fn help_box(state: &AppState, area: Rect) -> (Vec<Line<'static>>, Rect) {
    let width = HELP_WIDTH.min(area.width);
    // The text leaves the box's borders and the scroll mark's column (↑ ↓ on the first and
    // last rows shown) free: no word is ever drawn over.
    let text_width = width.saturating_sub(3);
    // What the status bar may shorten: the agent and its whole session id (wrapped, never
    // cut, on a narrow screen).
    let whole = |spans: Vec<Span<'static>>| {
        let line = RichLine::new(spans).with_prefix(vec![Span::raw(" ")], vec![Span::raw("   ")]);
        wrap(&line, usize::from(text_width))
    };
    let mut agent = vec![
        Span::styled("Agent ", palette().dim),
        Span::raw(state.provider.clone()),
    ];
    if let Some(transport) = state.agent_transport {
        agent.push(Span::styled(
            format!(" · {} · {}", transport.name(), transport.describe()),
            palette().dim,
        ));
    }
    let mut rows = whole(agent);
    if let Some(id) = &state.session_id {
        rows.extend(whole(vec![
            Span::styled("Session ", palette().dim),
            Span::raw(id.to_string()),
        ]));
    }
    rows.push(Line::raw(""));
    rows.extend(help_rows(text_width));
    let outer = centered(area, width, rows.len() as u16 + 2);
    (rows, outer)
}
