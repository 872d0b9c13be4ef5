//! The settings overlay: the retry policy's fields, the notification mode and the theme, the
//! field being typed and what is wrong with it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use std::time::Instant;

use crate::app::keymap::SEND_KEY;
use crate::app::settings::{SettingsDraft, SettingsField};
use crate::app::state::AppState;
use crate::view::frame::{centered, draw_rows, footer, frame, selectable};
use crate::view::wrap::{wrap, RichLine};

use super::overlay::DrawOverlay;
use super::theme::palette;

impl DrawOverlay for SettingsDraft {
    fn draw(&self, state: &AppState, area: Rect, buf: &mut Buffer, _now: Instant) {
        render_settings(state, self, area, buf);
    }
}

fn render_settings(state: &AppState, draft: &SettingsDraft, area: Rect, buf: &mut Buffer) {
    let fields = draft.fields();
    let width = 64.min(area.width);
    let note_style = palette().dim;
    // What Enter will do, said before it is done.
    let unchanged = draft.policy == state.retry_policy
        && draft.notify == state.notify
        && draft.theme == state.theme;
    let save_note = if unchanged {
        "Unchanged.".to_owned()
    } else {
        match &state.config_path {
            Some(path) => format!("Not saved yet: {SEND_KEY} saves to {}", path.display()),
            None => format!("Not saved yet: {SEND_KEY} applies it to this run (no config file)"),
        }
    };
    let mut notes: Vec<Line<'static>> = Vec::new();
    let note_width = usize::from(width.saturating_sub(2));
    if let Some(problem) = &draft.problem {
        let line = RichLine::new(vec![Span::styled(
            problem.clone(),
            Style::default().fg(palette().warning),
        )])
        .with_uniform_prefix(vec![Span::raw(" ")]);
        notes.extend(wrap(&line, note_width));
    }
    let line = RichLine::new(vec![Span::styled(save_note, note_style)])
        .with_uniform_prefix(vec![Span::raw(" ")]);
    notes.extend(wrap(&line, note_width));
    let outer = centered(area, width, (fields.len() + 1 + notes.len()) as u16 + 2);
    let inner = frame("Settings", &footer(draft.keys(), outer), outer, buf);
    let mut rows: Vec<Line<'_>> = fields
        .iter()
        .map(|field| {
            let label = field.label();
            let value = match (&draft.typing, *field == draft.field) {
                (Some(typed), true) if *field == SettingsField::MaxAttempts => format!("{typed}▏"),
                (Some(typed), true) => format!("{typed}▏ s"),
                _ => draft.value_of(*field),
            };
            let gap = usize::from(inner.width)
                .saturating_sub(label.chars().count() + value.chars().count() + 3);
            selectable(
                format!(" {label}{}{value} ", " ".repeat(gap.max(1))),
                *field == draft.field,
                true,
                inner.width,
            )
        })
        .collect();
    rows.push(Line::raw(""));
    rows.extend(notes);
    draw_rows(&rows, inner, buf);
}
