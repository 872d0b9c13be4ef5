//! Overlays drawn over the chat: the action menu, help, the provider picker, settings.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use super::sanitize::untrusted_owned;
use crate::app::conversation_picker::ConversationPicker;
use crate::app::menu::{Action, Overlay, SettingsDraft, SettingsField};
use crate::app::state::AppState;
use crate::provider::PROVIDER_NAMES;

/// Every key, for the help overlay.
pub const KEY_HELP: [(&str, &str); 20] = [
    ("Enter", "send the prompt (queue it while a turn runs)"),
    ("Alt+Enter / Shift+Enter", "new line in the prompt"),
    ("Up / Down", "earlier prompts (on an empty prompt)"),
    ("Esc", "stop the running turn; again: kill the agent now"),
    ("Ctrl+C", "stop the running turn; twice when idle: quit"),
    ("Ctrl+K / F2", "actions menu"),
    ("F1", "this help"),
    ("Ctrl+T", "expand/collapse all thinking"),
    ("Ctrl+O", "expand/collapse all tool output and diagnostics"),
    (
        "Click",
        "expand/collapse one thinking block, tool or notice",
    ),
    ("PgUp / PgDn", "scroll the transcript a page"),
    ("Mouse wheel", "scroll the transcript"),
    ("Home / End", "top / bottom (when the prompt is empty)"),
    ("Ctrl+Home / Ctrl+End", "top / bottom (always)"),
    ("/retry /stop /new", "retry last turn · stop · new session"),
    (
        "/provider [NAME]",
        "switch provider (pi claude codex gemini demo)",
    ),
    (
        "/thinking /tools",
        "expand/collapse all thinking / tool output",
    ),
    (
        "/copy /settings /log",
        "copy last answer · retry policy · log path",
    ),
    ("/help /quit", "this help · quit"),
    (
        "Shift+drag",
        "select text with the mouse (terminal selection)",
    ),
];

pub fn render_overlay(state: &AppState, overlay: &Overlay, area: Rect, buf: &mut Buffer) {
    match overlay {
        Overlay::Menu { selected } => render_menu(state, *selected, area, buf),
        Overlay::Help => render_help(area, buf),
        Overlay::ProviderPicker { selected } => render_picker(state, *selected, area, buf),
        Overlay::Settings(draft) => render_settings(state, draft, area, buf),
        Overlay::Conversations(picker) => render_conversations(picker, area, buf),
    }
}

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    )
}

fn frame(title: &str, footer: &str, area: Rect, buf: &mut Buffer) -> Rect {
    Clear.render(area, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(Color::Cyan))
        .title(Span::styled(
            format!(" {title} "),
            Style::default().add_modifier(Modifier::BOLD),
        ))
        .title_bottom(Span::styled(
            format!(" {footer} "),
            Style::default().add_modifier(Modifier::DIM),
        ));
    let inner = block.inner(area);
    block.render(area, buf);
    inner
}

fn draw_rows(rows: &[Line<'_>], inner: Rect, buf: &mut Buffer) {
    for (index, row) in rows.iter().take(usize::from(inner.height)).enumerate() {
        buf.set_line(inner.x, inner.y + index as u16, row, inner.width);
    }
}

fn selectable(text: String, selected: bool, enabled: bool, width: u16) -> Line<'static> {
    let mut style = Style::default();
    if !enabled {
        style = style.add_modifier(Modifier::DIM);
    }
    if selected {
        style = style.add_modifier(Modifier::REVERSED);
    }
    let padded = format!("{text:<width$}", width = usize::from(width));
    Line::styled(padded, style)
}

fn render_menu(state: &AppState, selected: usize, area: Rect, buf: &mut Buffer) {
    let outer = centered(area, 60, Action::ALL.len() as u16 + 2);
    let inner = frame("Actions", "↑↓ choose · Enter run · Esc close", outer, buf);
    let rows: Vec<Line<'_>> = Action::ALL
        .iter()
        .enumerate()
        .map(|(index, action)| {
            let keys = match action.key_hint() {
                "" => action.slash().to_owned(),
                key => format!("{} {key}", action.slash()),
            };
            let label = action.label();
            let gap = usize::from(inner.width).saturating_sub(label.len() + keys.len() + 3);
            selectable(
                format!(" {label}{}{keys} ", " ".repeat(gap.max(1))),
                index == selected,
                state.is_action_enabled(*action),
                inner.width,
            )
        })
        .collect();
    draw_rows(&rows, inner, buf);
}

fn render_help(area: Rect, buf: &mut Buffer) {
    let outer = centered(area, 78, KEY_HELP.len() as u16 + 2);
    let inner = frame("Keys", "Esc close", outer, buf);
    let key_style = Style::default()
        .fg(Color::Cyan)
        .add_modifier(Modifier::BOLD);
    let rows: Vec<Line<'_>> = KEY_HELP
        .iter()
        .map(|(keys, what)| {
            Line::from(vec![
                Span::styled(format!(" {keys:<24}"), key_style),
                Span::raw(*what),
            ])
        })
        .collect();
    draw_rows(&rows, inner, buf);
}

fn render_picker(state: &AppState, selected: usize, area: Rect, buf: &mut Buffer) {
    let outer = centered(area, 40, PROVIDER_NAMES.len() as u16 + 2);
    let inner = frame("Switch provider", "Enter switch · Esc close", outer, buf);
    let rows: Vec<Line<'_>> = PROVIDER_NAMES
        .iter()
        .enumerate()
        .map(|(index, name)| {
            let current = if *name == state.provider {
                " (current)"
            } else {
                ""
            };
            selectable(
                format!(" {name}{current}"),
                index == selected,
                true,
                inner.width,
            )
        })
        .collect();
    draw_rows(&rows, inner, buf);
}

fn render_settings(state: &AppState, draft: &SettingsDraft, area: Rect, buf: &mut Buffer) {
    let outer = centered(area, 64, SettingsField::ALL.len() as u16 + 5);
    let inner = frame(
        "Settings: retry policy",
        "↑↓ field · ←→ change · Enter save · Esc cancel",
        outer,
        buf,
    );
    let mut rows: Vec<Line<'_>> = SettingsField::ALL
        .iter()
        .map(|field| {
            let label = field.label();
            let value = field.value(&draft.policy);
            let gap = usize::from(inner.width).saturating_sub(label.len() + value.len() + 3);
            selectable(
                format!(" {label}{}{value} ", " ".repeat(gap.max(1))),
                *field == draft.field,
                true,
                inner.width,
            )
        })
        .collect();
    rows.push(Line::raw(""));
    let saved_to = match &state.config_path {
        Some(path) => format!(" Saved to {}", path.display()),
        None => " No config file: applies to this run only".to_owned(),
    };
    rows.push(Line::styled(
        saved_to,
        Style::default().add_modifier(Modifier::DIM),
    ));
    draw_rows(&rows, inner, buf);
}

fn render_conversations(picker: &ConversationPicker, area: Rect, buf: &mut Buffer) {
    let visible = picker.visible();
    let height = (visible.len().max(1) as u16 + 4).min(area.height);
    let outer = centered(area, area.width.saturating_sub(4).clamp(20, 110), height);
    let inner = frame(
        "Resume a conversation",
        "type to filter · ↑↓ choose · Enter open · Esc close",
        outer,
        buf,
    );
    let now_ms = crate::session_log::now_ms();
    let mut rows = vec![Line::from(vec![
        Span::styled(" Filter: ", Style::default().add_modifier(Modifier::DIM)),
        Span::raw(untrusted_owned(&picker.filter)),
        Span::styled("▏", Style::default().fg(Color::Cyan)),
    ])];
    if visible.is_empty() {
        rows.push(Line::styled(
            if picker.conversations.is_empty() {
                " No earlier conversation in this directory"
            } else {
                " Nothing matches"
            },
            Style::default().add_modifier(Modifier::DIM),
        ));
    }
    // Keep the selection on screen: scroll by whole rows.
    let room = usize::from(inner.height.saturating_sub(1)).max(1);
    let first = picker.selected.saturating_sub(room - 1);
    for (index, summary) in visible.iter().enumerate().skip(first).take(room) {
        let current = if picker.current.as_deref() == Some(summary.id.as_str()) {
            " (this one)"
        } else {
            ""
        };
        let prompt = untrusted_owned(summary.first_prompt.lines().next().unwrap_or(""));
        let text = format!(
            " {:>9} · {:<7} · {:>3} {} · {}{current}",
            age(now_ms.saturating_sub(summary.last_active_ms)),
            untrusted_owned(&summary.provider),
            summary.turns,
            if summary.turns == 1 { "turn " } else { "turns" },
            prompt,
        );
        let text: String = text.chars().take(usize::from(inner.width)).collect();
        rows.push(selectable(
            text,
            index == picker.selected,
            true,
            inner.width,
        ));
    }
    draw_rows(&rows, inner, buf);
}

/// "12 s ago", "5 min ago", "3 h ago", "2 days ago".
fn age(elapsed_ms: u64) -> String {
    let seconds = elapsed_ms / 1000;
    match seconds {
        0..=59 => format!("{seconds} s ago"),
        60..=3599 => format!("{} min ago", seconds / 60),
        3600..=86_399 => format!("{} h ago", seconds / 3600),
        _ => format!("{} days ago", seconds / 86_400),
    }
}
