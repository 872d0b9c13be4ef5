//! The overlays that pick one thing from a list: the action menu, the provider picker, prompt
//! search, the `/resume` conversations, `/model` and the agent's modes. Each keeps its selection
//! in view and names its keys in its footer.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use std::time::Instant;

use crate::app::action::Action;
use crate::app::conversation_picker::ConversationPicker;
use crate::app::history_search::HistorySearch;
use crate::app::keymap::{
    key_hint, pane_hint_now, CONVERSATION_PICKER_KEYS, HISTORY_SEARCH_KEYS, MENU_KEYS,
    MODEL_PICKER_EMPTY_KEYS, MODEL_PICKER_KEYS, MODE_CONFIRM_KEYS, MODE_PICKER_KEYS,
    PROVIDER_PICKER_KEYS, THINKING_LEVEL_KEY,
};
use crate::app::menu::ActionMenu;
use crate::app::mode_picker::ModePicker;
use crate::app::model_picker::ModelPicker;
use crate::app::provider_picker::ProviderPicker;
use crate::app::state::AppState;
use crate::provider::PROVIDER_NAMES;
use crate::view::frame::{age, centered, draw_rows, footer, footer_room, frame, selectable};
use crate::view::list::{draw_scrolled, draw_selectable};
use crate::view::wrap::{wrap, RichLine, WrapMode};

use super::overlay::DrawOverlay;
use super::theme::palette;

impl DrawOverlay for ActionMenu {
    fn draw(&self, state: &AppState, area: Rect, buf: &mut Buffer, _now: Instant) {
        render_menu(state, self.selected, area, buf);
    }
}

fn render_menu(state: &AppState, selected: usize, area: Rect, buf: &mut Buffer) {
    let outer = centered(area, 60, Action::ALL.len() as u16 + 2);
    let inner = frame("Actions", &footer(MENU_KEYS, outer), outer, buf);
    let rows: Vec<Line<'_>> = Action::ALL
        .iter()
        .enumerate()
        .map(|(index, action)| {
            let width = usize::from(inner.width);
            let label = action.label();
            // Narrow: the key hint goes first, then the label is shortened.
            let keys = match key_hint(*action) {
                "" => action.slash().to_owned(),
                key if label.chars().count() + action.slash().len() + key.chars().count() + 4
                    <= width =>
                {
                    format!("{} {key}", action.slash())
                }
                _ => action.slash().to_owned(),
            };
            let room = width.saturating_sub(keys.chars().count() + 4);
            let label: String = if label.chars().count() > room {
                let kept: String = label.chars().take(room.saturating_sub(1)).collect();
                format!("{kept}…")
            } else {
                label.to_owned()
            };
            let gap = width.saturating_sub(label.chars().count() + keys.chars().count() + 3);
            selectable(
                format!(" {label}{}{keys} ", " ".repeat(gap.max(1))),
                index == selected,
                state.is_action_enabled(*action),
                inner.width,
            )
        })
        .collect();
    draw_selectable(&rows, selected, inner, buf);
}

impl DrawOverlay for ProviderPicker {
    fn draw(&self, state: &AppState, area: Rect, buf: &mut Buffer, _now: Instant) {
        render_picker(state, self.selected, area, buf);
    }
}

fn render_picker(state: &AppState, selected: usize, area: Rect, buf: &mut Buffer) {
    let outer = centered(area, 40, PROVIDER_NAMES.len() as u16 + 2);
    let inner = frame(
        "Switch provider",
        &footer(PROVIDER_PICKER_KEYS, outer),
        outer,
        buf,
    );
    let rows: Vec<Line<'_>> = PROVIDER_NAMES
        .iter()
        .enumerate()
        .map(|(index, name)| {
            let current = if *name == state.provider {
                " (current)"
            } else if state.agent_installed(name) == Some(false) {
                " (not installed)"
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
    draw_selectable(&rows, selected, inner, buf);
}

impl DrawOverlay for HistorySearch {
    fn draw(&self, state: &AppState, area: Rect, buf: &mut Buffer, _now: Instant) {
        render_history_search(state, &self.query, self.selected, area, buf);
    }
}

fn render_history_search(
    state: &AppState,
    query: &str,
    selected: usize,
    area: Rect,
    buf: &mut Buffer,
) {
    let outer = centered(area, 80, 14);
    let inner = frame(
        "Search earlier prompts",
        &footer(HISTORY_SEARCH_KEYS, outer),
        outer,
        buf,
    );
    if inner.height == 0 {
        return;
    }
    let prompt_line = Line::from(vec![
        Span::styled(" search: ", palette().dim),
        Span::raw(query.to_owned()),
        Span::styled(" ", Style::default().add_modifier(Modifier::REVERSED)),
    ]);
    buf.set_line(inner.x, inner.y, &prompt_line, inner.width);
    let list_area = Rect::new(inner.x, inner.y + 1, inner.width, inner.height - 1);
    let matches = state.history_matches(query);
    if matches.is_empty() {
        let note = if state.composer.history().is_empty() {
            " no earlier prompts in this directory"
        } else {
            " no earlier prompt matches"
        };
        draw_scrolled(&[Line::styled(note, palette().dim)], 0, list_area, buf);
        return;
    }
    let rows: Vec<Line<'_>> = matches
        .iter()
        .enumerate()
        .map(|(index, prompt)| {
            let first = prompt.lines().next().unwrap_or("");
            let more = if prompt.contains('\n') { " …" } else { "" };
            selectable(
                format!(" {first}{more}"),
                index == selected,
                true,
                list_area.width,
            )
        })
        .collect();
    draw_selectable(&rows, selected, list_area, buf);
}

impl DrawOverlay for ConversationPicker {
    fn draw(&self, _state: &AppState, area: Rect, buf: &mut Buffer, now: Instant) {
        render_conversations(self, area, buf, now);
    }
}

fn render_conversations(picker: &ConversationPicker, area: Rect, buf: &mut Buffer, now: Instant) {
    let visible = picker.visible();
    let height = (visible.len().max(1) as u16 + 4).min(area.height);
    let outer = centered(area, area.width.saturating_sub(4).clamp(20, 110), height);
    let inner = frame(
        "Resume a conversation",
        &footer(CONVERSATION_PICKER_KEYS, outer),
        outer,
        buf,
    );
    let now_ms = picker.listed.ms_at(now);
    let mut rows = vec![Line::from(vec![
        Span::styled(" Filter: ", palette().dim),
        Span::raw(picker.filter.to_string()),
        Span::styled("▏", Style::default().fg(palette().accent)),
    ])];
    if visible.is_empty() {
        rows.push(Line::styled(
            if picker.conversations.is_empty() {
                " No earlier conversation in this directory"
            } else {
                " Nothing matches"
            },
            palette().dim,
        ));
    }
    // Keep the selection on screen: scroll by whole rows.
    let room = usize::from(inner.height.saturating_sub(1)).max(1);
    let first = picker.selected.saturating_sub(room - 1);
    for (index, listed) in visible.iter().enumerate().skip(first).take(room) {
        let summary = &listed.summary;
        let current = if picker.current.as_deref() == Some(summary.id.as_str()) {
            " (this one)"
        } else {
            ""
        };
        let prompt = &listed.first_line;
        let when = age(now_ms.saturating_sub(summary.last_active_ms));
        // Narrow screens keep what tells conversations apart: when, and the first prompt.
        let text = if inner.width >= 60 {
            format!(
                " {when:>9} · {:<7} · {:>3} {} · {prompt}{current}",
                listed.provider.as_str(),
                summary.turns,
                if summary.turns == 1 { "turn " } else { "turns" },
            )
        } else {
            format!(" {when} · {prompt}{current}")
        };
        let fitted = wrap(
            &RichLine::text(text, Style::default()).mode(WrapMode::Truncate),
            usize::from(inner.width),
        );
        let text: String = fitted
            .first()
            .map(|line| {
                line.spans
                    .iter()
                    .map(|span| span.content.as_ref())
                    .collect()
            })
            .unwrap_or_default();
        rows.push(selectable(
            text,
            index == picker.selected,
            true,
            inner.width,
        ));
    }
    draw_rows(&rows, inner, buf);
}

impl DrawOverlay for ModelPicker {
    fn draw(&self, state: &AppState, area: Rect, buf: &mut Buffer, _now: Instant) {
        render_model_picker(state, self, area, buf);
    }
}

/// `/model`: the filter, then the agent's models (the current one marked); where the agent
/// lists none, why and what to do instead.
fn render_model_picker(state: &AppState, picker: &ModelPicker, area: Rect, buf: &mut Buffer) {
    let status = &state.agent_status;
    let width = 70.min(area.width);
    if status.models.is_empty() {
        let transport = state.agent_transport.map_or(String::new(), |transport| {
            format!(" over {}", transport.name())
        });
        let text = format!(
            "The {provider} agent reports no models it can switch to{transport}, so agentty \
             cannot offer any here. Start it with --model, or set `model` under \
             [providers.{provider}] in the config.",
            provider = state.provider
        );
        let rows = wrap(
            &RichLine::text(text, Style::default()).with_uniform_prefix(vec![Span::raw(" ")]),
            usize::from(width.saturating_sub(2)),
        );
        let outer = centered(area, width, rows.len() as u16 + 2);
        let inner = frame("Model", &footer(MODEL_PICKER_EMPTY_KEYS, outer), outer, buf);
        draw_rows(&rows, inner, buf);
        return;
    }
    let matches = picker.matches(&status.models);
    let current = state.current_model_choice().map(|model| &model.id);
    let thinking = status
        .thinking_level
        .as_ref()
        .filter(|_| !status.thinking_levels.is_empty());
    let outer = centered(area, width, matches.len().max(1) as u16 + 3);
    let hint = pane_hint_now(MODEL_PICKER_KEYS, footer_room(outer), |key| {
        if key.keys == THINKING_LEVEL_KEY {
            thinking.map(|level| format!("{}: {level}", key.what))
        } else {
            Some(key.what.to_owned())
        }
    });
    let inner = frame("Model", hint.trim(), outer, buf);
    if inner.height == 0 {
        return;
    }
    let filter = Line::from(vec![
        Span::styled(" Filter: ", palette().dim),
        Span::raw(picker.query.to_string()),
        Span::styled(" ", Style::default().add_modifier(Modifier::REVERSED)),
    ]);
    buf.set_line(inner.x, inner.y, &filter, inner.width);
    let list = Rect::new(inner.x, inner.y + 1, inner.width, inner.height - 1);
    if matches.is_empty() {
        let none = Line::styled(" no model matches", palette().dim);
        buf.set_line(list.x, list.y, &none, list.width);
        return;
    }
    let rows: Vec<Line<'_>> = matches
        .iter()
        .enumerate()
        .map(|(index, model)| {
            let mark = if Some(&model.id) == current {
                "●"
            } else {
                " "
            };
            let provider = model
                .provider
                .as_ref()
                .map(|provider| format!("  · {provider}"))
                .unwrap_or_default();
            let thinks = if model.reasoning { "  · thinks" } else { "" };
            selectable(
                format!(" {mark} {}{provider}{thinks}", model.name),
                index == picker.selected,
                true,
                list.width,
            )
        })
        .collect();
    draw_selectable(&rows, picker.selected, list, buf);
}

impl DrawOverlay for ModePicker {
    fn draw(&self, state: &AppState, area: Rect, buf: &mut Buffer, _now: Instant) {
        render_mode_picker(state, self, area, buf);
    }
}

/// `/permissions`' modes, the current one marked, the most permissive ones said to be; or the
/// question before switching to one of those, naming what it allows.
fn render_mode_picker(state: &AppState, picker: &ModePicker, area: Rect, buf: &mut Buffer) {
    let status = &state.agent_status;
    let width = 70.min(area.width);
    let selected = status.modes.get(picker.selected);
    if let (true, Some(mode)) = (picker.confirming, selected) {
        let allows = mode
            .most_permissive
            .as_ref()
            .map_or_else(String::new, ToString::to_string);
        let text = format!(
            "{}: {allows}. The status bar marks it while it is on; Shift+Tab (or /permissions) \
             goes back to a mode that asks.",
            mode.name
        );
        let rows = wrap(
            &RichLine::text(text, Style::default()).with_uniform_prefix(vec![Span::raw(" ")]),
            usize::from(width.saturating_sub(2)),
        );
        let outer = centered(area, width, rows.len() as u16 + 2);
        let title = format!("Switch to {}?", mode.name);
        let inner = frame(&title, &footer(MODE_CONFIRM_KEYS, outer), outer, buf);
        draw_rows(&rows, inner, buf);
        return;
    }
    let current = status.mode.as_ref();
    let outer = centered(area, width, status.modes.len().max(1) as u16 + 2);
    let inner = frame(
        "Permission mode",
        &footer(MODE_PICKER_KEYS, outer),
        outer,
        buf,
    );
    let rows: Vec<Line<'_>> = status
        .modes
        .iter()
        .enumerate()
        .map(|(index, mode)| {
            let mark = if Some(&mode.id) == current {
                "●"
            } else {
                " "
            };
            let permissive = if mode.most_permissive.is_some() {
                "  ⚠ most permissive: asks first"
            } else {
                ""
            };
            selectable(
                format!(" {mark} {}{permissive}", mode.name),
                index == picker.selected,
                true,
                inner.width,
            )
        })
        .collect();
    draw_selectable(&rows, picker.selected, inner, buf);
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;

    use super::render_conversations;
    use crate::app::conversation_picker::{ConversationPicker, WallClock};
    use crate::session_log::ConversationSummary;

    #[test]
    fn the_conversation_picker_tells_ages_from_the_now_it_is_given() {
        let listed_at = Instant::now();
        let summary = ConversationSummary {
            path: "/s/aaa.jsonl".into(),
            id: "aaa".into(),
            last_active_ms: 1_000_000,
            first_prompt: "Fix the parser".into(),
            turns: 2,
            last_turn: 2,
            ..crate::session_log::tests_summary("pi")
        };
        // Listed 3 minutes after the conversation's last write.
        let picker = ConversationPicker::new(
            vec![summary],
            None,
            WallClock {
                ms: 1_000_000 + 180_000,
                at: listed_at,
            },
        );
        let area = Rect::new(0, 0, 100, 10);
        let screen = |now: Instant| {
            let mut buf = Buffer::empty(area);
            render_conversations(&picker, area, &mut buf, now);
            crate::view::buffer_text(&buf)
        };
        assert!(screen(listed_at).contains("3 min ago"));
        // The same picker drawn two hours on: the frame's now, not the clock, ages it.
        let later = screen(listed_at + Duration::from_secs(2 * 3600));
        assert!(later.contains("2 h ago"), "{later}");
    }
}
