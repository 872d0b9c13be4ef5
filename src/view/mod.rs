//! Pure rendering of the chat from `&AppState`.
//!
//! Nothing here changes the state or reads the clock: "now" is passed in, so a frame is a
//! function of (state, now, size) and snapshots are deterministic. [`ChatView`] holds only what
//! rendering remembers between frames: per-cell caches and what the last frame showed; where
//! the transcript is scrolled is the state's, laid out by each frame and handed back through
//! [`drawn`]. Every string that reaches a span came from the state, which stores agent text
//! sanitised (see [`crate::sanitize`]).

pub(crate) mod cell_style;
pub(crate) mod cells;
pub(crate) mod changes_cell;
pub(crate) mod composer;
pub(crate) mod diff;
pub(crate) mod edit_diff;
pub(crate) mod frame;
pub(crate) mod help_overlay;
pub(crate) mod highlight;
pub(crate) mod list;
pub(crate) mod markdown;
pub(crate) mod markdown_code;
pub(crate) mod markdown_stream;
pub(crate) mod markdown_table;
pub(crate) mod notice_cell;
pub(crate) mod overlay;
pub(crate) mod permission;
pub(crate) mod permission_cell;
pub(crate) mod picker_overlays;
pub(crate) mod plan;
pub(crate) mod plan_cell;
pub(crate) mod popup;
pub(crate) mod settings_overlay;
pub(crate) mod status;
pub(crate) mod theme;
pub(crate) mod tool_cell;
pub(crate) mod transcript;
pub(crate) mod welcome;
pub(crate) mod wrap;

use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Widget};
use ratatui::Frame;

use crate::app::keymap::{
    NEWLINE_KEY, PERMISSION_FOCUS_KEY, PERMISSION_UNFOCUS_KEY, QUIT_KEY, SEND_KEY, STOP_KEY,
    UNQUEUE_KEY,
};
use crate::app::menu::Overlay;
use crate::app::state::{AppState, Drawn};
use theme::palette;
pub use transcript::TranscriptView;

/// Rows the input grows to before it scrolls.
const MAX_COMPOSER_ROWS: u16 = 8;
/// Rows the input shows under an open permission prompt.
const MAX_COMPOSER_ROWS_UNDER_PROMPT: u16 = 3;
/// Queued prompts listed above the input.
const MAX_QUEUED_ROWS: usize = 3;

/// What rendering keeps between frames.
#[derive(Default)]
pub struct ChatView {
    pub transcript: TranscriptView,
    /// The first input row shown when the prompt is taller than its area.
    pub(crate) composer_scroll: usize,
    /// Where the last frame drew the composer's cursor (the terminal's cursor goes there).
    pub(crate) composer_cursor: Option<(u16, u16)>,
    /// The background the cached cells were drawn for: another one draws them again.
    background: crate::config::Background,
    /// Where the last frame pinned the plan (empty when it did not): a click there folds it.
    pub plan_area: Rect,
}

/// The screen areas of one frame, and the input laid out once for its width (the layout needs
/// its row count, the composer draws its rows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChatLayout {
    pub(crate) transcript: Rect,
    /// The open permission prompt (empty when none is open; then the composer is).
    pub(crate) permission: Rect,
    /// The agent's plan, pinned while its turn runs (empty when there is none, or a
    /// permission prompt is open).
    pub(crate) plan: Rect,
    pub(crate) queued: Rect,
    pub(crate) composer: Rect,
    pub(crate) status: Rect,
    pub(crate) input: composer::WrappedInput,
}

pub(crate) fn layout(state: &AppState, area: Rect) -> ChatLayout {
    // The composer's box has a top border only: its input is as wide as the screen.
    let input = composer::wrap_input(&state.composer, area.width);
    let status_height = area.height.min(1);
    if state.permission_prompt().is_some() {
        // The prompt goes above the composer, which stays in sight (typing goes on into it
        // until the prompt is given the keys) with a few rows, and takes what it needs of the transcript,
        // which keeps a quarter of the screen for the context of the request (on a small
        // screen, the prompt comes first; on a tiny one, the composer goes).
        let room = area.height - status_height;
        let composer_rows = (input.row_count() as u16).clamp(1, MAX_COMPOSER_ROWS_UNDER_PROMPT);
        // The prompt's options come first; the composer keeps what is left, down to its last
        // input row (without the hint above it).
        let spare = room.saturating_sub(permission::minimum_height(state));
        let composer_height = (composer_rows + 1).min(spare);
        // What waits to be sent stays in sight under the prompt (a prompt typed while the
        // request is open is queued, and says so).
        let queued_height = queued_rows(state).min(spare - composer_height);
        let room = room - composer_height - queued_height;
        let share = if area.height < 20 { 8 } else { 4 };
        let keep = (area.height / share).min(room);
        let wanted = permission::desired_height(state, area.width);
        let height = wanted.min(room - keep).max(room.min(3));
        let transcript = Rect::new(area.x, area.y, area.width, room - height);
        let permission = Rect::new(area.x, transcript.bottom(), area.width, height);
        let queued = Rect::new(area.x, permission.bottom(), area.width, queued_height);
        let composer = Rect::new(area.x, queued.bottom(), area.width, composer_height);
        return ChatLayout {
            transcript,
            permission,
            plan: Rect::new(area.x, transcript.bottom(), area.width, 0),
            queued,
            composer,
            status: Rect::new(area.x, composer.bottom(), area.width, status_height),
            input,
        };
    }
    // The input grows with its wrapped text, up to a third of the screen (at most 8 rows).
    let max_rows = MAX_COMPOSER_ROWS.min((area.height / 3).max(1));
    let composer_rows = (input.row_count() as u16).clamp(1, max_rows);
    let composer_height = (composer_rows + 1).min(area.height.saturating_sub(status_height));
    let queued_height = queued_rows(state).min(
        area.height
            .saturating_sub(status_height + composer_height + 1),
    );
    // The plan takes what it needs, leaving the conversation a few rows.
    let plan_height = plan::desired_height(state, area.height).min(
        area.height
            .saturating_sub(status_height + composer_height + queued_height + 2),
    );
    let transcript_height = area
        .height
        .saturating_sub(status_height + composer_height + queued_height + plan_height);
    let transcript = Rect::new(area.x, area.y, area.width, transcript_height);
    let plan = Rect::new(area.x, transcript.bottom(), area.width, plan_height);
    let queued = Rect::new(area.x, plan.bottom(), area.width, queued_height);
    let composer = Rect::new(area.x, queued.bottom(), area.width, composer_height);
    let status = Rect::new(area.x, composer.bottom(), area.width, status_height);
    ChatLayout {
        transcript,
        permission: Rect::new(area.x, transcript.bottom(), area.width, 0),
        plan,
        queued,
        composer,
        status,
        input,
    }
}

/// `long` when it fits `width` columns, else `short`.
fn fitting(long: String, short: String, width: u16) -> String {
    if long.chars().count() <= usize::from(width) {
        long
    } else {
        short
    }
}

/// The rows the prompts waiting to be sent want: one each (at most [`MAX_QUEUED_ROWS`]) and one
/// that counts the rest.
fn queued_rows(state: &AppState) -> u16 {
    let waiting = waiting_prompts(state).len();
    let rows = if waiting == 0 {
        0
    } else {
        waiting.min(MAX_QUEUED_ROWS) + usize::from(waiting > MAX_QUEUED_ROWS)
    };
    rows as u16
}

/// Draws one frame.
pub fn render(frame: &mut Frame<'_>, state: &AppState, view: &mut ChatView, now: Instant) {
    let area = frame.area();
    render_to_buffer(state, view, area, frame.buffer_mut(), now);
    // The terminal's own cursor sits on the composer's, so an input method's window opens
    // there; hidden while an overlay or a permission note has the keys.
    let prompt_has_keys = state.permission_focused();
    if let (Some(position), None, false) = (view.composer_cursor, &state.overlay, prompt_has_keys) {
        frame.set_cursor_position(position);
    }
}

pub(crate) fn render_to_buffer(
    state: &AppState,
    view: &mut ChatView,
    area: Rect,
    buf: &mut Buffer,
    now: Instant,
) {
    let background = state.background();
    theme::use_for_frame(background);
    if view.background != background {
        // The cached rows carry the old colours.
        view.transcript = TranscriptView::default();
        view.background = background;
    }
    let areas = layout(state, area);
    view.transcript.render(
        &state.transcript,
        &state.transcript_scroll,
        areas.transcript,
        buf,
        now,
    );
    if state.transcript.cells().is_empty() {
        welcome::render_welcome(state, areas.transcript, buf);
    }
    plan::render_pinned_plan(state, areas.plan, buf);
    view.plan_area = areas.plan;
    render_queued(state, areas.queued, buf);
    view.composer_cursor = render_composer(state, &areas, buf, &mut view.composer_scroll);
    permission::render_permission_prompt(state, areas.permission, buf);
    status::render_status(state, areas.status, buf, now);
    let prompt_open = state.permission_prompt().is_some();
    if let (Some(popup), None, false) = (&state.popup, &state.overlay, prompt_open) {
        popup::render_popup(popup, areas.transcript, buf);
    }
    if let Some(overlay) = &state.overlay {
        overlay::render_overlay(state, overlay, area, buf, now);
    }
}

/// What the frame drawn on `area` laid out that the state's keys depend on (handed to
/// `AppState::on_drawn`).
pub fn drawn(state: &AppState, view: &ChatView, area: Rect) -> Drawn {
    Drawn {
        help_scroll_limit: match &state.overlay {
            Some(Overlay::Help(_)) => Some(help_overlay::help_scroll_limit(state, area)),
            _ => None,
        },
        transcript: view.transcript.laid_out(),
        diff_page: match &state.overlay {
            Some(Overlay::Diff(_)) => Some(diff::diff_page(area)),
            _ => None,
        },
    }
}

/// What waits to reach the agent, in delivery order: the steering messages the agent holds
/// (after the current tool call), its follow-ups (after the turn), then agentty's own queue.
fn waiting_prompts(state: &AppState) -> Vec<(String, &str)> {
    let agent = &state.agent_queue;
    let steering = agent
        .steering
        .iter()
        .map(|text| ("steer".to_owned(), text.as_str()));
    let follow_up = agent
        .follow_up
        .iter()
        .map(|text| ("follow-up".to_owned(), text.as_str()));
    let queued = state
        .queued
        .iter()
        .enumerate()
        .map(|(index, text)| (format!("queued {}", index + 1), text.as_str()));
    steering.chain(follow_up).chain(queued).collect()
}

fn render_queued(state: &AppState, area: Rect, buf: &mut Buffer) {
    if area.height == 0 {
        return;
    }
    let style = palette().dim;
    let waiting = waiting_prompts(state);
    let mut rows: Vec<Line<'_>> = waiting
        .iter()
        .take(MAX_QUEUED_ROWS)
        .map(|(label, prompt)| {
            let first = prompt.lines().next().unwrap_or("");
            Line::from(vec![
                Span::styled(format!("  ↳ {label}: "), style),
                Span::raw(first.to_owned()),
            ])
        })
        .collect();
    if waiting.len() > MAX_QUEUED_ROWS {
        rows.push(Line::styled(
            format!("  … {} more queued", waiting.len() - MAX_QUEUED_ROWS),
            style,
        ));
    }
    for (row, line) in rows.iter().take(usize::from(area.height)).enumerate() {
        buf.set_line(area.x, area.y + row as u16, line, area.width);
    }
}

fn render_composer(
    state: &AppState,
    areas: &ChatLayout,
    buf: &mut Buffer,
    scroll: &mut usize,
) -> Option<(u16, u16)> {
    let area = areas.composer;
    if area.height == 0 {
        return None;
    }
    let prompt_open = state.permission_prompt().is_some();
    let writing_note = state
        .permission_prompt()
        .is_some_and(|prompt| prompt.feedback.is_some());
    let hint = if writing_note {
        " keys go to the note above ".to_owned()
    } else if state.permission_focused() {
        let long = format!(
            " the prompt above has the keys · {} ",
            PERMISSION_UNFOCUS_KEY.hint()
        );
        fitting(
            long,
            format!(" {} ", PERMISSION_UNFOCUS_KEY.hint()),
            area.width,
        )
    } else if prompt_open {
        let send = if state.can_steer() {
            "steers"
        } else {
            "queues"
        };
        let long = format!(
            " typing goes here · {SEND_KEY} {send} · {} the prompt ",
            PERMISSION_FOCUS_KEY.keys
        );
        fitting(long, " typing goes here ".to_owned(), area.width)
    } else if state.composer.held_count() > 0 {
        // Prompts brought back one at a time: say that more follow.
        format!(
            " {SEND_KEY} sends · {} more after this one · {QUIT_KEY} drops it ",
            state.composer.held_count()
        )
    } else if !state.orchestrator_alive {
        format!(" the agent runner stopped · {QUIT_KEY} twice quits ")
    } else if state.can_steer() {
        format!(" {SEND_KEY} steers · {NEWLINE_KEY} follows up · {STOP_KEY} stops the turn ")
    } else if state.is_turn_running() && !state.queued.is_empty() {
        format!(" {SEND_KEY} queues · {STOP_KEY} stops, queue to editor · {UNQUEUE_KEY} edit ")
    } else if state.is_turn_running() {
        format!(" {SEND_KEY} queues · {STOP_KEY} stops the turn ")
    } else if state.composer.line_count() > 1 || state.composer.text().chars().count() > 40 {
        format!(" {SEND_KEY} sends · {NEWLINE_KEY} new line · {QUIT_KEY} clears ")
    } else {
        format!(" {SEND_KEY} sends · {NEWLINE_KEY} new line ")
    };
    if area.height == 1 {
        // No room for the hint: the input row alone.
        return composer::render_input(&state.composer, &areas.input, area, buf, scroll);
    }
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(palette().dim)
        .title(Span::styled(hint, palette().dim));
    let inner = block.inner(area);
    block.render(area, buf);
    composer::render_input(&state.composer, &areas.input, inner, buf, scroll)
}

/// A buffer's cells as text, a line per row (the view's unit tests compare screens with it).
#[cfg(test)]
pub(crate) fn buffer_text(buf: &Buffer) -> String {
    let area = buf.area;
    (area.top()..area.bottom())
        .map(|y| {
            (area.left()..area.right())
                .map(|x| buf[(x, y)].symbol().to_owned())
                .collect::<String>()
                + "\n"
        })
        .collect()
}
