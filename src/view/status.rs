//! The status bar: provider and model, session, what is happening, tokens and cost.
//!
//! It says what is true: the phase the agent is in (thinking, writing, running a tool, waiting
//! for its own retry), the model the CLI reported (its settings' alias, or the configured one,
//! until it does), the last
//! turn's own tokens (none after a failed turn) and the conversation's total.

use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::theme::palette;
use super::tool_cell::format_elapsed;
use crate::app::activity::AgentPhase;
use crate::app::agent_status::AgentValue;
use crate::app::inert::InertText;
use crate::app::keymap::{footer_hint, QUIT_KEY, STOP_KEY};
use crate::app::permission::{esc_action, key_summary};
use crate::app::state::{Activity, AppState, StopStatus};
use crate::config::Transport;
use crate::stream::Usage;

/// Session ids longer than this are shown as their head and tail.
const SHORT_SESSION: usize = 16;
/// Time-ordered ids (UUIDv7, pi's) share their first characters within a minute; the tail is
/// random, so head and tail together tell sessions apart.
const SESSION_HEAD: usize = 8;
const SESSION_TAIL: usize = 4;

/// A part of the status bar; when space is short, the highest `drop_order` goes first: the
/// transport, the session, the usage, the context share, then the key hints (the way to every
/// other action, kept down to about 80 columns), then the model and its settings (what the
/// user chose must stay in sight), and last the provider and what is happening.
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

pub(crate) fn render_status(state: &AppState, area: Rect, buf: &mut Buffer, now: Instant) {
    if area.height == 0 {
        return;
    }
    let status = palette().status;
    let base = Style::default().bg(status.background).fg(status.text);
    buf.set_style(area, base);

    let mut segments = vec![Segment {
        drop_order: 1,
        right: false,
        spans: vec![Span::styled(
            format!(" {}", state.provider),
            base.add_modifier(Modifier::BOLD),
        )],
    }];
    // The model the agent reported running (Claude's `init`: `claude-opus-4-8[1m]`, where its
    // settings name the alias `default`), else the one its settings name (pi's `get_state`,
    // Codex's thread, ACP's current model), else the one the user configured.
    let model = state
        .usage_book
        .model
        .as_ref()
        .or(state.agent_status.model.as_ref().map(AgentValue::shown))
        .map(InertText::as_str)
        // The model the user configured.
        .or(state.model.as_deref());
    let mut settings = String::new();
    if let Some(model) = model {
        settings.push_str(&format!(" · {model}"));
        if let Some(level) = &state.agent_status.thinking_level {
            settings.push_str(&format!(" · thinking {level}"));
        }
    }
    // The mode by its name; an id the agent did not list (yet) as it is.
    let mode = state
        .agent_status
        .current_mode()
        .map(|mode| &mode.name)
        .or(state.agent_status.mode.as_ref().map(AgentValue::shown));
    if let Some(mode) = mode {
        settings.push_str(&format!(" · mode {mode}"));
    }
    if !settings.is_empty() {
        segments.push(Segment {
            drop_order: 2,
            right: false,
            spans: vec![Span::styled(settings, base)],
        });
    }
    // One stable form, head and tail, whatever else the bar holds (the whole id is in the
    // `/resume` list and the session log).
    if let Some(session) = &state.session_id {
        segments.push(Segment {
            drop_order: 6,
            right: false,
            spans: vec![Span::styled(
                format!(" · session {}", short_session_id(session)),
                base,
            )],
        });
    }
    // How agentty talks to the agent, when it is not the one-shot JSON mode.
    if let Some(transport) = state
        .agent_transport
        .filter(|transport| *transport != Transport::Json)
    {
        segments.push(Segment {
            drop_order: 7,
            right: false,
            spans: vec![Span::styled(format!(" · {}", transport.name()), base)],
        });
    }
    let mut activity = vec![Span::styled(" │ ", base)];
    activity.extend(activity_spans(state, now, base, area.width < 80));
    segments.push(Segment {
        drop_order: 0,
        right: false,
        spans: activity,
    });
    // How full the model's context window is, where the agent reports it.
    if let Some(context) = state.agent_status.context {
        let percent = context.percent();
        let colour = match percent {
            90.. => status.alarm,
            75.. => status.caution,
            _ => status.text,
        };
        segments.push(Segment {
            drop_order: 4,
            right: true,
            spans: vec![Span::styled(format!("│ ctx {percent}% "), base.fg(colour))],
        });
    }
    let usage = usage_segment(state);
    if !usage.is_empty() {
        segments.push(Segment {
            drop_order: 5,
            right: true,
            spans: vec![Span::styled(format!("│ {usage} "), base)],
        });
    }
    segments.push(if state.quit_armed {
        Segment {
            drop_order: 0,
            right: true,
            spans: vec![Span::styled(
                format!("{QUIT_KEY} again to quit "),
                base.fg(palette().status.caution)
                    .add_modifier(Modifier::BOLD),
            )],
        }
    } else {
        Segment {
            drop_order: 3,
            right: true,
            spans: vec![Span::styled(format!("│ {} ", footer_hint()), base)],
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

fn stop_status_text(status: StopStatus) -> String {
    match status {
        StopStatus::Requested => "requested".to_owned(),
        StopStatus::Interrupting => "interrupting".to_owned(),
        StopStatus::Waiting { elapsed } => format!("waiting ({:.1} s)", elapsed.as_secs_f64()),
        StopStatus::Killing => "killing".to_owned(),
        StopStatus::Stopped => "stopped".to_owned(),
    }
}

/// `narrow`: the screen has no room for the long forms (the keys are on the prompt itself).
fn activity_spans(state: &AppState, now: Instant, base: Style, narrow: bool) -> Vec<Span<'static>> {
    match state.activity(now) {
        Activity::Idle => vec![Span::styled("idle", base)],
        Activity::Starting => vec![Span::styled("starting", base)],
        Activity::Working { phase, elapsed } => {
            let (mut text, colour) = phase_text(&phase, elapsed);
            if let Some(turn) = &state.turn {
                if turn.max_attempts > 1 {
                    text.push_str(&format!(
                        " (attempt {} of {})",
                        turn.attempt, turn.max_attempts
                    ));
                }
            }
            vec![Span::styled(text, base.fg(colour))]
        }
        Activity::Stopping { stage } => vec![Span::styled(
            format!("■ stopping: {}", stop_status_text(stage)),
            base.fg(palette().status.caution)
                .add_modifier(Modifier::BOLD),
        )],
        Activity::WaitingForAnswer { waiting } => {
            let keys = state
                .permission_prompt()
                .map(|prompt| key_summary(&prompt.kinds()))
                .unwrap_or_default();
            let more = if waiting > 1 {
                format!(" (1 of {waiting})")
            } else {
                String::new()
            };
            let esc = state
                .permission_prompt()
                .map_or("rejects", |prompt| esc_action(&prompt.kinds()));
            let keys = if narrow {
                String::new()
            } else if keys.is_empty() {
                format!(" — {STOP_KEY} {esc}")
            } else {
                format!(" — {keys}, {STOP_KEY} {esc}")
            };
            vec![Span::styled(
                format!("? waiting for your answer{more}{keys}"),
                base.fg(palette().status.caution)
                    .add_modifier(Modifier::BOLD),
            )]
        }
        Activity::Retrying { remaining } => {
            let seconds = remaining.as_millis().div_ceil(1000);
            vec![Span::styled(
                format!("↻ retrying in {seconds} s"),
                base.fg(palette().status.retry),
            )]
        }
        Activity::Quitting { stage } => {
            let stage = stage
                .map(|stage| format!(" ({})", stop_status_text(stage)))
                .unwrap_or_default();
            vec![Span::styled(
                format!("quitting: stopping the agent{stage}…"),
                base.fg(palette().status.caution),
            )]
        }
    }
}

/// What the agent is doing, and for how long it has been doing it.
fn phase_text(phase: &AgentPhase, elapsed: std::time::Duration) -> (String, Color) {
    let elapsed = format_elapsed(elapsed);
    let status = palette().status;
    match phase {
        AgentPhase::Working => (format!("● working {elapsed}"), status.working),
        AgentPhase::Thinking => (format!("● thinking {elapsed}"), status.thinking),
        AgentPhase::Writing => (format!("● writing {elapsed}"), status.working),
        AgentPhase::RunningTool { name } => (format!("⚙ running {name} {elapsed}"), status.tool),
        AgentPhase::Compacting => (format!("● compacting {elapsed}"), status.thinking),
        AgentPhase::AgentRetrying => (
            format!("↻ waiting for the agent's own retry {elapsed}"),
            status.retry,
        ),
    }
}

/// "session 01a228fa…8754": whole when short, else head and tail.
fn short_session_id(session: &str) -> String {
    let count = session.chars().count();
    if count <= SHORT_SESSION {
        return session.to_owned();
    }
    let head: String = session.chars().take(SESSION_HEAD).collect();
    let tail: String = session.chars().skip(count - SESSION_TAIL).collect();
    format!("{head}…{tail}")
}

/// The last turn's figures, then the conversation's total once there is more than one turn's.
fn usage_segment(state: &AppState) -> String {
    let book = &state.usage_book;
    let turn = book.turn.as_ref().map(usage_text).unwrap_or_default();
    // One source for the total, live and after a resume alike: the sum of the completed
    // turns' own figures, as the log keeps them. (pi's `get_session_stats` counts its session
    // file, which a retry's rollback rewrites: the two disagreed across a resume.)
    let total = book
        .conversation
        .as_ref()
        .filter(|total| Some(*total) != book.turn.as_ref())
        .map(total_text)
        .unwrap_or_default();
    match (turn.is_empty(), total.is_empty()) {
        (_, true) => turn,
        (true, false) => total,
        (false, false) => format!("{turn} │ {total}"),
    }
}

/// "Σ 12k tokens · $0.41": the conversation so far.
fn total_text(total: &Usage) -> String {
    let tokens = total.total_tokens.or_else(|| {
        let parts = [
            total.input_tokens,
            total.output_tokens,
            total.reasoning_tokens,
        ];
        parts
            .iter()
            .any(Option::is_some)
            .then(|| parts.iter().flatten().sum())
    });
    let mut parts = Vec::new();
    if let Some(tokens) = tokens {
        parts.push(format!("Σ {} tokens", compact(tokens)));
    }
    if let Some(cost) = total.cost_usd {
        parts.push(format!("Σ ${cost:.4}"));
    }
    parts.join(" · ")
}

/// "1.2k in · 345 out · 12 thinking · $0.0123", as far as the agent reported it.
pub(crate) fn usage_text(usage: &Usage) -> String {
    let mut parts = Vec::new();
    if let Some(input) = usage.input_tokens {
        parts.push(format!("{} in", compact(input)));
    }
    if let Some(output) = usage.output_tokens {
        parts.push(format!("{} out", compact(output)));
    }
    if let Some(thinking) = usage.reasoning_tokens {
        parts.push(format!("{} thinking", compact(thinking)));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_started_in_the_same_minute_are_told_apart() {
        // Two pi sessions (UUIDv7) started within the same minute share their first 8 characters.
        let first = short_session_id("01a22b08-d5ab-77d5-9c75-0a50cd618754");
        let second = short_session_id("01a22b08-5d45-76d8-b82d-259017069207");
        assert_eq!(first, "01a22b08…8754");
        assert_eq!(second, "01a22b08…9207");
        assert_eq!(short_session_id("sess-42"), "sess-42");
    }

    fn status_line(state: &AppState, width: u16) -> String {
        let area = Rect::new(0, 0, width, 1);
        let mut buf = Buffer::empty(area);
        render_status(state, area, &mut buf, Instant::now());
        (0..width)
            .map(|x| buf[(x, 0)].symbol().to_owned())
            .collect::<String>()
    }

    fn busy_state() -> AppState {
        let mut state = AppState::new(crate::app::state::StartupInfo {
            provider: "pi".into(),
            model: Some("claude-sonnet-4-5".into()),
            retry_policy: Default::default(),
            config_path: None,
            warnings: Vec::new(),
        });
        state.session_id = Some("01a22b08-d5ab-77d5-9c75-0a50cd618754".into());
        state.agent_transport = Some(Transport::Rpc);
        let usage = Usage {
            input_tokens: Some(12_345),
            output_tokens: Some(678),
            cost_usd: Some(0.0123),
            ..Usage::default()
        };
        state.usage_book.turn = Some(usage);
        state
    }

    #[test]
    fn the_session_id_has_one_short_form_at_every_width() {
        let state = busy_state();
        for width in [240, 160, 120, 100] {
            let line = status_line(&state, width);
            if line.contains("session") {
                assert!(line.contains("session 01a22b08…8754 "), "{width}: {line}");
            }
            assert!(!line.contains("0a50cd618754"), "{width}: {line}");
        }
        assert!(status_line(&state, 240).contains("session 01a22b08…8754"));
    }

    #[test]
    fn the_key_hints_stay_visible_down_to_a_narrow_bar() {
        let state = busy_state();
        for width in [160, 100, 80] {
            let line = status_line(&state, width);
            assert!(
                line.contains(&footer_hint()),
                "the key hints are gone at {width} columns: {line}"
            );
            assert!(line.contains(" pi "), "{width}: {line}");
            assert!(line.contains("idle"), "{width}: {line}");
        }
        // The lower-priority parts went first.
        let line = status_line(&state, 60);
        assert!(!line.contains("session"), "{line}");
        assert!(!line.contains("12.3k in"), "{line}");
        // Narrower still, the model the user chose outranks the hints.
        let line = status_line(&state, 45);
        assert!(line.contains("claude-sonnet-4-5"), "{line}");
        assert!(!line.contains(&footer_hint()), "{line}");
    }

    #[test]
    fn the_share_of_the_context_window_is_shown_where_the_agent_reports_it() {
        let mut state = busy_state();
        assert!(!status_line(&state, 160).contains("ctx"));
        state.agent_status.context = crate::provider::ContextUse::new(84_000, 200_000);
        let line = status_line(&state, 160);
        assert!(line.contains("│ ctx 42% "), "{line}");
        // It goes before the key hints when the bar is narrow.
        let line = status_line(&state, 60);
        assert!(!line.contains("ctx"), "{line}");
        assert!(line.contains(&footer_hint()), "{line}");
    }

    #[test]
    fn the_model_the_agent_reported_outranks_its_settings_alias_until_a_switch() {
        use crate::orchestrator::OrchestratorEvent;
        use crate::provider::AgentStatus;
        let now = Instant::now();
        let mut state = busy_state();
        let alias = |model: &str| {
            OrchestratorEvent::AgentStatusChanged(AgentStatus {
                model: Some(model.into()),
                ..AgentStatus::default()
            })
        };
        state.on_orchestrator_event(alias("default"), now);
        assert!(status_line(&state, 160).contains(" pi · default "));
        // Claude's `init` names the model the alias runs.
        state
            .usage_book
            .observe(&crate::stream::AgentMessage::SessionStarted {
                provider: "claude".into(),
                session_id: None,
                model: Some("claude-opus-4-8[1m]".into()),
            });
        let line = status_line(&state, 160);
        assert!(line.contains(" pi · claude-opus-4-8[1m] "), "{line}");
        // An unchanged status keeps it; a switch shows the new choice until the agent reports.
        state.on_orchestrator_event(alias("default"), now);
        assert!(status_line(&state, 160).contains("claude-opus-4-8[1m]"));
        state.on_orchestrator_event(alias("sonnet"), now);
        let line = status_line(&state, 160);
        assert!(
            line.contains(" pi · sonnet ") && !line.contains("opus"),
            "{line}"
        );
    }
}
