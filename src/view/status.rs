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
use crate::app::keymap::{footer_hint, PERMISSION_FOCUS_KEY, QUIT_KEY, STOP_KEY};
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

/// A part of the status bar in its forms, longest first. When space is short the bar gives up
/// one step at a time, always the step with the highest order left: the transport, the
/// session, the usage, the context share, the key hints (the way to every other action, kept
/// down to about 80 columns), then the long form of what is happening, the words around the
/// model and mode, the provider's name, and last the model's length; the model, the mode and
/// what is happening stay in sight at any width (what the user chose must stay in sight).
struct Segment {
    right: bool,
    /// Each form, and the order at which the bar gives it up for the next (or, for the last,
    /// drops the segment; 0: never).
    forms: Vec<(u8, Vec<Span<'static>>)>,
    /// The form shown.
    shown: usize,
}

impl Segment {
    /// A segment of one form, dropped at `order` (0: never).
    fn one(order: u8, right: bool, spans: Vec<Span<'static>>) -> Self {
        Self::forms(right, vec![(order, spans)])
    }

    fn forms(right: bool, forms: Vec<(u8, Vec<Span<'static>>)>) -> Self {
        Self {
            right,
            forms,
            shown: 0,
        }
    }

    fn width(&self) -> usize {
        self.forms[self.shown].1.iter().map(Span::width).sum()
    }

    /// The order at which its form is given up next (0: never).
    fn next_step(&self) -> u8 {
        self.forms[self.shown].0
    }
}

/// Gives up one step (the highest order left) until `segments` fit `width` with a space between
/// the sides; a segment whose last form is given up goes.
fn fit(mut segments: Vec<Segment>, width: usize) -> Vec<Segment> {
    while segments.iter().map(Segment::width).sum::<usize>() + 1 > width {
        let Some((index, _)) = segments
            .iter()
            .enumerate()
            .filter(|(_, segment)| segment.next_step() > 0)
            .max_by_key(|(_, segment)| segment.next_step())
        else {
            break;
        };
        let segment = &mut segments[index];
        if segment.shown + 1 < segment.forms.len() {
            segment.shown += 1;
        } else {
            segments.remove(index);
        }
    }
    segments
}

/// The model (at most `MODEL_SHORT` characters in its shortest form), its thinking level and
/// the mode, in three forms: with their words, bare, and with the model shortened. A most
/// permissive mode is marked (⚠, and the alarm colour) in every form.
fn settings_segment(state: &AppState, base: Style) -> Option<Segment> {
    // The model the agent reported running (Claude's `init`: `claude-opus-4-8[1m]`, where its
    // settings name the alias `default`), else the one its settings name (pi's `get_state`,
    // Codex's thread, ACP's current model), else the one the user configured.
    // A model the agent lists goes by the name it gives it (Qwen Code's id
    // `$runtime|openai|plain(openai)` is "plain").
    let model = state
        .usage_book
        .model
        .as_ref()
        .or(state.agent_status.model.as_ref().map(AgentValue::shown))
        .map(|shown| model_name(state, shown))
        // The model the user configured.
        .or(state.model.as_deref());
    let level = model.and(state.agent_status.thinking_level.as_ref());
    // The mode by its name; an id the agent did not list (yet) as it is.
    let current = state.agent_status.current_mode();
    let mode =
        current
            .map(|mode| &mode.name)
            .or(state.agent_status.mode.as_ref().map(AgentValue::shown));
    if model.is_none() && mode.is_none() {
        return None;
    }
    let permissive = current.is_some_and(|mode| mode.most_permissive.is_some());
    let mode_style = if permissive {
        base.fg(palette().status.alarm).add_modifier(Modifier::BOLD)
    } else {
        base
    };
    let form = |model: Option<String>, level_word: &str, mode_word: &str| {
        let mut text = String::new();
        if let Some(model) = &model {
            text.push_str(&format!(" · {model}"));
            if let Some(level) = level {
                text.push_str(&format!(" · {level_word}{level}"));
            }
        }
        let mut spans = vec![Span::styled(text, base)];
        if let Some(mode) = mode {
            let mark = if permissive { "⚠ " } else { "" };
            spans.push(Span::styled(" · ", base));
            spans.push(Span::styled(format!("{mode_word}{mark}{mode}"), mode_style));
        }
        spans
    };
    let short_model = model.map(|model| {
        if model.chars().count() > MODEL_SHORT {
            let head: String = model.chars().take(MODEL_SHORT - 1).collect();
            format!("{head}…")
        } else {
            model.to_owned()
        }
    });
    Some(Segment::forms(
        false,
        vec![
            (22, form(model.map(str::to_owned), "thinking ", "mode ")),
            (12, form(model.map(str::to_owned), "", "")),
            (0, form(short_model, "", "")),
        ],
    ))
}

/// The model's name at the narrowest.
const MODEL_SHORT: usize = 14;

pub(crate) fn render_status(state: &AppState, area: Rect, buf: &mut Buffer, now: Instant) {
    if area.height == 0 {
        return;
    }
    let status = palette().status;
    let base = Style::default().bg(status.background).fg(status.text);
    buf.set_style(area, base);

    let mut segments = vec![Segment::one(
        11,
        false,
        vec![Span::styled(
            format!(" {}", state.provider),
            base.add_modifier(Modifier::BOLD),
        )],
    )];
    segments.extend(settings_segment(state, base));
    // One stable form, head and tail, whatever else the bar holds (the whole id is in the
    // `/resume` list and the session log).
    if let Some(session) = &state.session_id {
        segments.push(Segment::one(
            60,
            false,
            vec![Span::styled(
                format!(" · session {}", short_session_id(session)),
                base,
            )],
        ));
    }
    // How agentty talks to the agent, when it is not the one-shot JSON mode.
    if let Some(transport) = state
        .agent_transport
        .filter(|transport| *transport != Transport::Json)
    {
        segments.push(Segment::one(
            70,
            false,
            vec![Span::styled(format!(" · {}", transport.name()), base)],
        ));
    }
    let activity = activity_forms(state, now, base)
        .into_iter()
        .enumerate()
        .map(|(index, spans)| {
            let mut form = vec![Span::styled(" │ ", base)];
            form.extend(spans);
            // The long form goes before the model's words, the middle ones before the
            // provider's name and the model's length, the shortest never.
            (if index == 0 { 25 } else { 13 }, form)
        })
        .collect::<Vec<_>>();
    let mut activity = activity;
    if let Some(last) = activity.last_mut() {
        last.0 = 0;
    }
    segments.push(Segment::forms(false, activity));
    // How full the model's context window is, where the agent reports it.
    if let Some(context) = state.agent_status.context {
        let percent = context.percent();
        let colour = match percent {
            90.. => status.alarm,
            75.. => status.caution,
            _ => status.text,
        };
        segments.push(Segment::one(
            40,
            true,
            vec![Span::styled(format!("│ ctx {percent}% "), base.fg(colour))],
        ));
    }
    let usage = usage_segment(state);
    if !usage.is_empty() {
        segments.push(Segment::one(
            50,
            true,
            vec![Span::styled(format!("│ {usage} "), base)],
        ));
    }
    segments.push(if state.quit_armed {
        Segment::one(
            0,
            true,
            vec![Span::styled(
                format!("{QUIT_KEY} again to quit "),
                base.fg(palette().status.caution)
                    .add_modifier(Modifier::BOLD),
            )],
        )
    } else {
        Segment::one(
            30,
            true,
            vec![Span::styled(format!("│ {} ", footer_hint()), base)],
        )
    });

    let segments = fit(segments, usize::from(area.width));
    let (right, left): (Vec<Segment>, Vec<Segment>) =
        segments.into_iter().partition(|segment| segment.right);
    let spans = |segments: Vec<Segment>| -> Vec<Span<'static>> {
        segments
            .into_iter()
            .flat_map(|mut segment| segment.forms.swap_remove(segment.shown).1)
            .collect()
    };
    let mut left = spans(left);
    // Without the provider's name, the model does not follow a separator.
    if let Some(first) = left.first_mut() {
        if let Some(rest) = first.content.strip_prefix(" · ") {
            first.content = format!(" {rest}").into();
        }
    }
    let left = Line::from(left);
    let right = Line::from(spans(right));
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

/// What is happening, in its forms, longest first (the shortest stays at any width).
fn activity_forms(state: &AppState, now: Instant, base: Style) -> Vec<Vec<Span<'static>>> {
    let one = |text: String, style: Style| vec![vec![Span::styled(text, style)]];
    let caution = base
        .fg(palette().status.caution)
        .add_modifier(Modifier::BOLD);
    match state.activity(now) {
        Activity::Idle => one("idle".to_owned(), base),
        Activity::Snapshotting(busy) => one(
            match busy {
                crate::orchestrator::SnapshotBusy::Baseline => "reading the files",
                crate::orchestrator::SnapshotBusy::TurnEnd { .. } => "summing up the changes",
            }
            .to_owned(),
            base,
        ),
        Activity::Starting => one("starting".to_owned(), base),
        Activity::Working {
            phase,
            elapsed,
            silent,
        } => {
            let (mut text, colour) = phase_text(&phase, elapsed);
            if let Some(silent) = silent {
                // An agent that retries by itself says nothing meanwhile: say so.
                text.push_str(&format!(" · agent silent {} s", silent.as_secs()));
            }
            let attempt = state
                .turn
                .as_ref()
                .filter(|turn| turn.max_attempts > 1)
                .map(|turn| format!(" (attempt {} of {})", turn.attempt, turn.max_attempts));
            let style = base.fg(colour);
            match attempt {
                Some(attempt) => vec![
                    vec![Span::styled(format!("{text}{attempt}"), style)],
                    vec![Span::styled(text, style)],
                ],
                None => one(text, style),
            }
        }
        Activity::Stopping { stage } => {
            one(format!("■ stopping: {}", stop_status_text(stage)), caution)
        }
        Activity::WaitingForAnswer { waiting } => {
            let more = if waiting > 1 {
                format!(" (1 of {waiting})")
            } else {
                String::new()
            };
            let how = match state.permission_prompt() {
                Some(prompt) if prompt.focused => {
                    let keys = key_summary(&prompt.kinds());
                    let esc = esc_action(&prompt.kinds());
                    if keys.is_empty() {
                        format!(" — {STOP_KEY} {esc}")
                    } else {
                        format!(" — {keys}, {STOP_KEY} {esc}")
                    }
                }
                Some(_) => format!(" — {} to answer", PERMISSION_FOCUS_KEY.keys),
                None => String::new(),
            };
            vec![
                vec![Span::styled(
                    format!("? waiting for your answer{more}{how}"),
                    caution,
                )],
                vec![Span::styled(
                    format!("? waiting for your answer{more}"),
                    caution,
                )],
                vec![Span::styled(format!("? answer{more}"), caution)],
            ]
        }
        Activity::Retrying { remaining } => {
            let seconds = remaining.as_millis().div_ceil(1000);
            let style = base.fg(palette().status.retry);
            vec![
                vec![Span::styled(
                    format!("↻ retrying in {seconds} s · {STOP_KEY} cancels"),
                    style,
                )],
                vec![Span::styled(format!("↻ retry in {seconds} s"), style)],
            ]
        }
        Activity::Quitting { stage } => {
            let stage = stage
                .map(|stage| format!(" ({})", stop_status_text(stage)))
                .unwrap_or_default();
            one(
                format!("quitting: stopping the agent{stage}…"),
                base.fg(palette().status.caution),
            )
        }
    }
}

/// The name the agent gives model `shown` where it lists it, else `shown` itself.
fn model_name<'a>(state: &'a AppState, shown: &'a InertText) -> &'a str {
    state
        .agent_status
        .models
        .iter()
        .find(|model| model.id.shown() == shown)
        .map_or(shown.as_str(), |model| model.name.as_str())
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
    fn at_narrow_widths_the_model_and_mode_stay_and_shorten_last() {
        use crate::provider::{AgentStatus, ModeChoice};
        let mut state = busy_state();
        state.provider = "demo".into();
        state.agent_status = crate::app::agent_status::ShownAgentStatus::from(AgentStatus {
            model: Some("demo-acp-2".into()),
            mode: Some("accept-edits".into()),
            modes: vec![ModeChoice {
                id: "accept-edits".into(),
                name: "Accept edits".into(),
                most_permissive: None,
            }],
            ..AgentStatus::default()
        });
        for width in [60, 50, 40] {
            let line = status_line(&state, width);
            assert!(line.contains("demo-acp-2"), "{width}: {line}");
            assert!(line.contains("Accept edits"), "{width}: {line}");
            assert!(line.contains("idle"), "{width}: {line}");
        }
        // The words around them go first, then the provider's name.
        let line = status_line(&state, 60);
        assert!(
            line.contains(" demo · demo-acp-2 · mode Accept edits │ idle"),
            "{line}"
        );
        let line = status_line(&state, 45);
        assert!(
            line.contains(" demo · demo-acp-2 · Accept edits │ idle"),
            "{line}"
        );
        let narrow = status_line(&state, 34);
        assert!(
            narrow.contains("demo-acp-2 · Accept edits │ idle"),
            "{narrow}"
        );
        assert!(!narrow.starts_with(" ·"), "{narrow}");
    }
}
