//! The status bar: provider and model, session, what is happening, tokens and cost.

use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::cells::format_elapsed;
use crate::app::state::{Activity, AppState};
use crate::stream::Usage;

const SHORT_SESSION: usize = 8;

/// A part of the status bar; when space is short, the highest `drop_order` goes first.
struct Segment {
    drop_order: u8,
    right: bool,
    spans: Vec<Span<'static>>,
}

impl Segment {
    fn width(&self) -> usize {
        self.spans.iter().map(Span::width).sum()
    }
}

pub fn render_status(state: &AppState, area: Rect, buf: &mut Buffer, now: Instant) {
    if area.height == 0 {
        return;
    }
    let base = Style::default().bg(Color::DarkGray).fg(Color::White);
    buf.set_style(area, base);

    let mut segments = vec![Segment {
        drop_order: 1,
        right: false,
        spans: vec![Span::styled(
            format!(" {}", state.provider),
            base.add_modifier(Modifier::BOLD),
        )],
    }];
    if let Some(model) = &state.model {
        segments.push(Segment {
            drop_order: 3,
            right: false,
            spans: vec![Span::styled(format!(" · {model}"), base)],
        });
    }
    if let Some(session) = &state.session_id {
        let short: String = session.chars().take(SHORT_SESSION).collect();
        segments.push(Segment {
            drop_order: 4,
            right: false,
            spans: vec![Span::styled(format!(" · session {short}"), base)],
        });
    }
    let mut activity = vec![Span::styled(" │ ", base)];
    activity.extend(activity_spans(state, now, base));
    segments.push(Segment {
        drop_order: 0,
        right: false,
        spans: activity,
    });
    if let Some(usage) = &state.usage {
        let text = usage_text(usage);
        if !text.is_empty() {
            segments.push(Segment {
                drop_order: 2,
                right: true,
                spans: vec![Span::styled(format!("│ {text} "), base)],
            });
        }
    }
    segments.push(if state.quit_armed {
        Segment {
            drop_order: 0,
            right: true,
            spans: vec![Span::styled(
                "Ctrl+C again to quit ",
                base.fg(Color::Yellow).add_modifier(Modifier::BOLD),
            )],
        }
    } else {
        Segment {
            drop_order: 5,
            right: true,
            spans: vec![Span::styled(
                format!("│ {} ", crate::app::keymap::FOOTER_HINT),
                base,
            )],
        }
    });

    // Drop the least important parts until everything fits with a space between the sides.
    let width = usize::from(area.width);
    while segments.iter().map(Segment::width).sum::<usize>() + 1 > width {
        let Some((index, _)) = segments
            .iter()
            .enumerate()
            .filter(|(_, segment)| segment.drop_order > 0)
            .max_by_key(|(_, segment)| segment.drop_order)
        else {
            break;
        };
        segments.remove(index);
    }
    let (right, left): (Vec<Segment>, Vec<Segment>) =
        segments.into_iter().partition(|segment| segment.right);
    let left = Line::from(
        left.into_iter()
            .flat_map(|segment| segment.spans)
            .collect::<Vec<_>>(),
    );
    let right = Line::from(
        right
            .into_iter()
            .flat_map(|segment| segment.spans)
            .collect::<Vec<_>>(),
    );
    let right_width = right.width() as u16;
    buf.set_line(area.x, area.y, &left, area.width);
    if right_width > 0 && right_width + (left.width() as u16) < area.width {
        buf.set_line(area.right() - right_width, area.y, &right, right_width);
    }
}

fn activity_spans(state: &AppState, now: Instant, base: Style) -> Vec<Span<'static>> {
    match state.activity(now) {
        Activity::Idle => vec![Span::styled("idle", base)],
        Activity::Streaming { elapsed } => {
            let mut text = format!("● streaming {}", format_elapsed(elapsed));
            if let Some(turn) = &state.turn {
                if turn.max_attempts > 1 {
                    text.push_str(&format!(
                        " (attempt {} of {})",
                        turn.attempt, turn.max_attempts
                    ));
                }
            }
            vec![Span::styled(text, base.fg(Color::LightGreen))]
        }
        Activity::Stopping { stage } => vec![Span::styled(
            format!("■ stopping: {stage}"),
            base.fg(Color::Yellow).add_modifier(Modifier::BOLD),
        )],
        Activity::Retrying { remaining } => {
            let seconds = remaining.as_millis().div_ceil(1000);
            vec![Span::styled(
                format!("↻ retrying in {seconds} s"),
                base.fg(Color::LightMagenta),
            )]
        }
        Activity::Quitting { stage } => {
            let stage = stage.map(|stage| format!(" ({stage})")).unwrap_or_default();
            vec![Span::styled(
                format!("quitting: stopping the agent{stage}…"),
                base.fg(Color::Yellow),
            )]
        }
    }
}

/// "1.2k in · 345 out · $0.0123", as far as the agent reported it.
pub fn usage_text(usage: &Usage) -> String {
    let mut parts = Vec::new();
    if let Some(input) = usage.input_tokens {
        parts.push(format!("{} in", compact(input)));
    }
    if let Some(output) = usage.output_tokens {
        parts.push(format!("{} out", compact(output)));
    }
    if parts.is_empty() {
        if let Some(total) = usage.total_tokens {
            parts.push(format!("{} tokens", compact(total)));
        }
    }
    if let Some(cost) = usage.cost_usd {
        parts.push(format!("${cost:.4}"));
    }
    parts.join(" · ")
}

fn compact(count: u64) -> String {
    if count >= 1_000_000 {
        format!("{:.1}M", count as f64 / 1_000_000.0)
    } else if count >= 1_000 {
        format!("{:.1}k", count as f64 / 1_000.0)
    } else {
        count.to_string()
    }
}
