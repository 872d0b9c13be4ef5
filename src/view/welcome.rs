//! The first-start screen, shown while the transcript is empty: which agent runs and why, the
//! keys that matter, and how to install the real agent CLIs. It wraps to any width; on a short
//! screen the most useful lines (the agent, then the keys) come first.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::app::keymap::{HELP_KEY, MENU_KEY, QUIT_KEY, SEND_KEY, STOP_KEY};
use crate::app::state::AppState;
use crate::view::wrap::{wrap, RichLine};

use crate::provider::INSTALL_COMMANDS as INSTALL;

use super::theme::palette;

fn welcome_lines(state: &AppState, roomy: bool) -> Vec<RichLine> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let dim = palette().dim;
    let key = Style::default().fg(palette().accent);
    let indent = || vec![Span::raw("  ")];
    let mut lines = Vec::new();
    // On a short screen the title and the blank lines give way to what the user needs.
    let gap = |lines: &mut Vec<RichLine>| {
        if roomy {
            lines.push(RichLine::blank());
        }
    };
    if roomy {
        lines.push(RichLine::new(vec![
            Span::styled("agentty", bold),
            Span::styled(" · a terminal chat for coding-agent CLIs", dim),
        ]));
        lines.push(RichLine::blank());
    }
    let agent = if state.provider == "demo" {
        "demo, the built-in scripted agent (answers are canned)".to_owned()
    } else {
        match &state.model {
            Some(model) => format!("{} · {model}", state.provider),
            None => state.provider.clone(),
        }
    };
    lines.push(RichLine::new(vec![
        Span::styled("Agent: ", bold),
        Span::raw(agent),
    ]));
    if let Some(reason) = &state.provider_reason {
        lines.push(
            RichLine::new(vec![Span::styled(format!("because {reason}"), dim)])
                .with_uniform_prefix(indent()),
        );
    }
    gap(&mut lines);
    let quit_twice = format!("{QUIT_KEY} {QUIT_KEY}");
    let keys = [
        (SEND_KEY, "send"),
        (STOP_KEY, "stop"),
        ("@", "file"),
        ("/", "command"),
        (MENU_KEY, "actions"),
        (HELP_KEY, "all keys"),
        (quit_twice.as_str(), "quit"),
    ];
    let mut spans = vec![Span::styled("Keys: ", bold)];
    for (index, (chord, what)) in keys.iter().enumerate() {
        if index > 0 {
            spans.push(Span::styled(" · ", dim));
        }
        spans.push(Span::styled((*chord).to_owned(), key));
        spans.push(Span::raw(format!(" {what}")));
    }
    lines.push(RichLine::new(spans).with_prefix(Vec::new(), indent()));
    // Only the agent CLIs that are not installed (all of them when that was not checked), and
    // never the one running (it runs: from PATH, or from `--agent-bin`).
    let to_install: Vec<_> = INSTALL
        .iter()
        .filter(|(name, _)| *name != state.provider && state.agent_installed(name) != Some(true))
        .collect();
    if to_install.is_empty() {
        return lines;
    }
    gap(&mut lines);
    let (heading, then) = if state.provider == "demo" {
        (
            "Real agents: ",
            "install one, then /provider NAME (or restart)",
        )
    } else {
        ("Other agents: ", "install one, then /provider NAME")
    };
    lines.push(RichLine::new(vec![
        Span::styled(heading, bold),
        Span::raw(then),
    ]));
    for &(name, command) in to_install {
        lines.push(
            RichLine::new(vec![
                Span::styled(format!("{name:<7}"), key),
                Span::raw(command),
            ])
            .with_prefix(indent(), vec![Span::raw("         ")]),
        );
    }
    lines
}

/// Draws the first-start screen into the (empty) transcript area.
pub(crate) fn render_welcome(state: &AppState, area: Rect, buf: &mut Buffer) {
    if area.height == 0 || area.width < 4 {
        return;
    }
    let inner = Rect::new(area.x + 1, area.y, area.width - 2, area.height);
    let layout = |roomy| -> Vec<Line<'static>> {
        welcome_lines(state, roomy)
            .iter()
            .flat_map(|line| wrap(line, usize::from(inner.width)))
            .collect()
    };
    let mut rows = layout(true);
    if rows.len() > usize::from(inner.height) {
        rows = layout(false);
    }
    // Vertically centred when it fits, from the top otherwise.
    let top = usize::from(inner.height).saturating_sub(rows.len()) / 2;
    for (index, row) in rows
        .iter()
        .take(usize::from(inner.height) - top)
        .enumerate()
    {
        buf.set_line(inner.x, inner.y + (top + index) as u16, row, inner.width);
    }
}
