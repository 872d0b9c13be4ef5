//! Transcript cells as lines: each cell kind to its renderer (user prompts, assistant markdown
//! and thinking here; tool calls, notices, permission requests, plans and changed files in
//! their own `*_cell` files), and the cache that keeps what they rendered.
//!
//! Every cell is rendered to [`RichLine`]s from its (already sanitised) model and wrapped to the
//! width; [`CellCache`] keeps the result per revision and width, so an unchanged cell costs
//! nothing per frame. An assistant cell keeps a [`MarkdownStream`]: a delta re-renders only the
//! unfinished tail, and the committed part is wrapped once per width. Live cells (a running
//! tool, a retry countdown) depend on "now" and are rendered every frame; they are small.

use std::time::Instant;

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::cell_style::{dim, toggle_marker, MARGIN};
use super::changes_cell::changes_lines;
use super::markdown_stream::MarkdownStream;
use super::notice_cell::notice_lines;
use super::permission_cell::permission_lines;
use super::plan_cell::plan_lines;
use super::theme::palette;
use super::tool_cell::tool_lines;
use super::wrap::{wrap_into, RichLine, WrapMode};
use crate::app::transcript::{AssistantCell, Cell, CellBody, ThoughtCell};
use crate::app::transcript::{UserCell, FOLDED_PROMPT_LINES};

/// The rendered rows of one cell, in up to three parts (no copying of big cached parts).
pub(crate) struct CellLines<'a> {
    parts: [&'a [Line<'static>]; 3],
}

impl<'a> CellLines<'a> {
    pub(crate) fn len(&self) -> usize {
        self.parts.iter().map(|part| part.len()).sum()
    }

    pub(crate) fn get(&self, mut index: usize) -> Option<&'a Line<'static>> {
        for part in self.parts {
            if index < part.len() {
                return Some(&part[index]);
            }
            index -= part.len();
        }
        None
    }
}

/// What one cell rendered to, kept between frames.
#[derive(Default)]
pub(crate) struct CellCache {
    rendered: Option<(u64, u16)>,
    head: Vec<Line<'static>>,
    body: Vec<Line<'static>>,
    stream: Option<MarkdownStream>,
    /// Committed markdown wrapped for `(width, superseded)`, and how many lines of it.
    stable: Vec<Line<'static>>,
    stable_key: Option<(u16, bool)>,
    stable_count: usize,
}

impl CellCache {
    /// The cell's rows at `width`, rendering only what changed since the last call.
    pub(crate) fn lines(&mut self, cell: &Cell, width: u16, now: Instant) -> CellLines<'_> {
        let fresh = self.rendered == Some((cell.revision, width)) && !cell.body.is_live();
        if !fresh {
            self.render(cell, width, now);
            self.rendered = Some((cell.revision, width));
        }
        CellLines {
            parts: [&self.head, &self.stable, &self.body],
        }
    }

    fn render(&mut self, cell: &Cell, width: u16, now: Instant) {
        let width = usize::from(width.max(1));
        self.head.clear();
        self.body.clear();
        let rich = match &cell.body {
            CellBody::Assistant(answer) => {
                self.render_assistant(answer, width);
                return;
            }
            CellBody::User(user) => user_lines(user),
            CellBody::Thought(thought) => thought_lines(thought, width),
            CellBody::Tool(tool) => tool_lines(tool, now),
            CellBody::Notice(notice) => notice_lines(notice, now),
            CellBody::Permission(permission) => permission_lines(permission),
            CellBody::Plan(plan) => plan_lines(plan),
            CellBody::Changes(changes) => changes_lines(changes),
        };
        for line in &rich {
            wrap_into(line, width, &mut self.body);
        }
    }

    fn render_assistant(&mut self, answer: &AssistantCell, width: usize) {
        let stream = self.stream.get_or_insert_with(MarkdownStream::new);
        stream.update(&answer.text);
        let patch = answer
            .superseded
            .then(|| dim().add_modifier(Modifier::CROSSED_OUT));
        if answer.superseded {
            // Who replaced it: agentty, retrying a failed attempt, or the agent itself.
            let why = if answer.retried {
                "(this attempt failed; agentty tried again, the new answer follows)"
            } else {
                "(superseded: the agent replaced this text)"
            };
            wrap_into(
                &RichLine::text(why, dim().add_modifier(Modifier::ITALIC))
                    .with_uniform_prefix(vec![Span::raw(MARGIN)]),
                width,
                &mut self.head,
            );
        }
        let key = (width as u16, answer.superseded);
        if self.stable_key != Some(key) || stream.committed().len() < self.stable_count {
            self.stable.clear();
            self.stable_count = 0;
            self.stable_key = Some(key);
        }
        for line in &stream.committed()[self.stable_count..] {
            wrap_with_margin(line, width, patch, &mut self.stable);
        }
        self.stable_count = stream.committed().len();
        for line in stream.render_tail(&answer.text) {
            wrap_with_margin(&line, width, patch, &mut self.body);
        }
        if answer.folded > 0 {
            wrap_into(
                &RichLine::text(
                    format!(
                        "… {} more of this answer not shown: too long to keep on screen (the \
                         conversation's log has all of it)",
                        byte_size(answer.folded)
                    ),
                    dim().add_modifier(Modifier::ITALIC),
                )
                .with_uniform_prefix(vec![Span::raw(MARGIN)]),
                width,
                &mut self.body,
            );
        }
    }
}

/// A byte count for people: `812 bytes`, `48.0 KB`, `57.3 MB`.
fn byte_size(bytes: usize) -> String {
    const KB: f64 = 1000.0;
    let bytes_f = bytes as f64;
    if bytes_f < KB {
        format!("{bytes} bytes")
    } else if bytes_f < KB * KB {
        format!("{:.1} KB", bytes_f / KB)
    } else if bytes_f < KB * KB * KB {
        format!("{:.1} MB", bytes_f / (KB * KB))
    } else {
        format!("{:.1} GB", bytes_f / (KB * KB * KB))
    }
}

fn wrap_with_margin(
    line: &RichLine,
    width: usize,
    patch: Option<Style>,
    out: &mut Vec<Line<'static>>,
) {
    let mut line = line.clone();
    line.first_prefix.insert(0, Span::raw(MARGIN));
    line.rest_prefix.insert(0, Span::raw(MARGIN));
    if let Some(style) = patch {
        line.patch_style(style);
    }
    wrap_into(&line, width, out);
}

/// The characters a folded prompt shows at most (a long single line).
const FOLDED_PROMPT_CHARS: usize = 240;

/// What a folded prompt shows: its first [`FOLDED_PROMPT_LINES`] lines, at most
/// [`FOLDED_PROMPT_CHARS`] characters of them, and what it leaves out ("12 more lines", or
/// "860 more characters" when the lines are all shown but cut).
fn folded_prompt(text: &str) -> (String, String) {
    let total_lines = text.split('\n').count();
    let head: String = text
        .split('\n')
        .take(FOLDED_PROMPT_LINES)
        .collect::<Vec<_>>()
        .join("\n");
    let shown: String = head.chars().take(FOLDED_PROMPT_CHARS).collect();
    let hidden = if total_lines > FOLDED_PROMPT_LINES {
        format!("{} more lines", total_lines - FOLDED_PROMPT_LINES)
    } else {
        let more = text.chars().count() - shown.chars().count();
        format!("{more} more characters")
    };
    let shown = if shown.chars().count() < head.chars().count() {
        format!("{shown}…")
    } else {
        shown
    };
    (shown, hidden)
}

/// A prompt; a retried one is marked `↻` (sent again, once: the failed attempt was undone).
/// A prompt; one that `/rewind` took back is dimmed and says so (its turn stays on screen,
/// but the agent no longer has it).
fn user_lines(user: &UserCell) -> Vec<RichLine> {
    let (text, retry, rewound) = (&user.text, user.retry, user.rewound);
    let (marker, style) = if rewound {
        (dim(), dim().add_modifier(Modifier::CROSSED_OUT))
    } else {
        (
            Style::default()
                .fg(palette().accent)
                .add_modifier(Modifier::BOLD),
            Style::default().add_modifier(Modifier::BOLD),
        )
    };
    // A long prompt (a large paste) folds to its first lines, like a tool's output; one long
    // line folds to its first characters.
    let folded = user.folds() && !user.expanded;
    let (shown_text, hidden) = if folded {
        folded_prompt(text)
    } else {
        (text.to_string(), String::new())
    };
    let mut lines: Vec<RichLine> = shown_text
        .split('\n')
        .enumerate()
        .map(|(index, line)| {
            let first = if index == 0 {
                Span::styled(if retry { "↻ " } else { "› " }, marker)
            } else {
                Span::raw(MARGIN)
            };
            RichLine::text(line, style).with_prefix(vec![first], vec![Span::raw(MARGIN)])
        })
        .collect();
    if user.folds() {
        let note = if folded {
            format!("{}{hidden} · click to expand", toggle_marker(false))
        } else {
            format!("{}click to fold", toggle_marker(true))
        };
        lines.push(RichLine::text(note, dim()).with_uniform_prefix(vec![Span::raw(MARGIN)]));
    }
    if rewound {
        lines.push(
            RichLine::text(
                "↶ rewound: the agent no longer has this turn",
                dim().add_modifier(Modifier::ITALIC),
            )
            .with_uniform_prefix(vec![Span::raw(MARGIN)]),
        );
    }
    lines
}

fn thought_lines(thought: &ThoughtCell, width: usize) -> Vec<RichLine> {
    let style = dim().add_modifier(Modifier::ITALIC);
    let words = if thought.words == 1 { "word" } else { "words" };
    let ellipsis = if thought.live { "…" } else { "" };
    let mut lines = vec![RichLine::text(
        format!(
            "{}Thinking{ellipsis} · {} {words}",
            toggle_marker(thought.expanded),
            thought.words
        ),
        style,
    )
    .mode(WrapMode::Truncate)];
    if thought.live && !thought.expanded {
        // While it streams, the latest line shows what the agent is thinking about now.
        let latest = thought
            .text
            .trim_end()
            .rsplit('\n')
            .next()
            .unwrap_or_default()
            .trim();
        if !latest.is_empty() {
            let room = width.saturating_sub(LIVE_THOUGHT_PREFIX_WIDTH);
            lines.push(
                RichLine::text(latest_words(latest, room), style)
                    .with_uniform_prefix(vec![Span::styled("  │ ", dim())])
                    .mode(WrapMode::Truncate),
            );
        }
    }
    if thought.expanded {
        let bar = vec![Span::styled("  │ ", dim())];
        for line in thought.text.trim_end().split('\n') {
            lines.push(RichLine::text(line, style).with_uniform_prefix(bar.clone()));
        }
    }
    lines
}

/// The margin and bar in front of a live thought's latest line.
const LIVE_THOUGHT_PREFIX_WIDTH: usize = 4;

/// The end of `line` that fits in `room` columns: the newest words of a long paragraph, after
/// an ellipsis, rather than its first words.
fn latest_words(line: &str, room: usize) -> String {
    if UnicodeWidthStr::width(line) <= room {
        return line.to_owned();
    }
    let mut kept = 0;
    let mut start = line.len();
    for (index, ch) in line.char_indices().rev() {
        let ch_width = UnicodeWidthChar::width(ch).unwrap_or(0);
        if kept + ch_width + 1 > room {
            break;
        }
        kept += ch_width;
        start = index;
    }
    let tail = &line[start..];
    // Start at a word when the cut fell inside one (unless that leaves nothing).
    let tail = match tail.find(' ') {
        Some(space) if space + 1 < tail.len() && !line[..start].ends_with(' ') => {
            &tail[space + 1..]
        }
        _ => tail,
    };
    format!("…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_live_line_shows_its_newest_words() {
        let line = "first I will list the files then I will sort them by size";
        assert_eq!(latest_words(line, 80), line);
        let tail = latest_words(line, 20);
        assert_eq!(tail, "…sort them by size");
        assert!(UnicodeWidthStr::width(tail.as_str()) <= 20);
        // One long word: cut inside it, since nothing else fits.
        assert_eq!(latest_words("abcdefghijklmnop", 6), "…lmnop");
    }

    #[test]
    fn a_folded_prompt_says_what_it_leaves_out_lines_or_characters() {
        let long_line = "word ".repeat(220);
        let (shown, hidden) = folded_prompt(&long_line);
        assert_eq!(shown.chars().count(), FOLDED_PROMPT_CHARS + 1);
        assert!(shown.ends_with('…'));
        assert_eq!(
            hidden,
            format!("{} more characters", 1100 - FOLDED_PROMPT_CHARS)
        );
        let pasted: String = (1..=200).map(|n| format!("line {n}\n")).collect();
        let (shown, hidden) = folded_prompt(pasted.trim_end());
        assert_eq!(shown, "line 1\nline 2\nline 3");
        assert_eq!(hidden, "197 more lines");
    }
}
