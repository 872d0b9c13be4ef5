//! What the agent is doing right now and what it has cost, read off the shared stream for the
//! status bar: thinking, writing, running a tool, waiting for its own retry; the turn's usage
//! (cleared when a turn fails, never carried over), the conversation's running total, and the
//! model the CLI says it used.

use std::time::{Duration, Instant};

use crate::app::inert::InertText;
use crate::stream::NoticeKind;
use crate::stream::{AgentMessage, Usage};

/// The agent's phase within an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AgentPhase {
    /// Started, nothing heard yet (or between a tool's end and the model's next words).
    Working,
    Thinking,
    Writing,
    /// A tool call is running (the most recent one, when several are).
    RunningTool {
        name: String,
    },
    /// The agent CLI announced that it retries on its own (pi `auto_retry_start`, Gemini's
    /// `Attempt N failed` lines, Claude's `api_retry`).
    AgentRetrying,
    /// The agent compacts its conversation (`/compact`).
    Compacting,
}

/// How long the agent may say nothing while it should be answering (not running a tool, not
/// waiting for the user) before the status bar says for how long it has been silent: an agent
/// that retries its model requests by itself says nothing meanwhile (Qwen Code: 95 s).
pub(crate) const SILENT_AFTER: Duration = Duration::from_secs(15);

/// The phase and since when it holds.
#[derive(Debug, Clone)]
pub(crate) struct PhaseTracker {
    phase: AgentPhase,
    since: Instant,
    /// When the agent last said anything.
    heard: Instant,
    /// Running tool calls, oldest first: (call id, tool name, started, with the time it waited
    /// for the user's permission added: the wait is not running time).
    tools: Vec<(String, String, Instant)>,
    /// Permission requests waiting for an answer: (request id, the call it is for, since).
    waits: Vec<(String, String, Instant)>,
}

impl PhaseTracker {
    pub(crate) fn new(now: Instant) -> Self {
        Self {
            phase: AgentPhase::Working,
            since: now,
            heard: now,
            tools: Vec::new(),
            waits: Vec::new(),
        }
    }

    /// The phase, and how long it has lasted.
    pub(crate) fn current(&self, now: Instant) -> (&AgentPhase, Duration) {
        (&self.phase, now.saturating_duration_since(self.since))
    }

    /// How long the agent has said nothing, once that is [`SILENT_AFTER`] or more while it
    /// should be answering (a running tool, or a question to the user, may take its time).
    pub(crate) fn silent(&self, now: Instant) -> Option<Duration> {
        let answering = !matches!(
            self.phase,
            AgentPhase::RunningTool { .. } | AgentPhase::Compacting
        ) && self.waits.is_empty();
        let silent = now.saturating_duration_since(self.heard);
        (answering && silent >= SILENT_AFTER).then_some(silent)
    }

    pub(crate) fn observe(&mut self, message: &AgentMessage, now: Instant) {
        self.heard = now;
        let next = match message {
            AgentMessage::Thinking { .. } => AgentPhase::Thinking,
            AgentMessage::Assistant { delta } if !delta.is_empty() => AgentPhase::Writing,
            AgentMessage::ToolCall { id, name, .. } => {
                // A call described anew keeps its place and its start.
                let known = self.tools.iter_mut().find(|(call, _, _)| call == id);
                if let Some((_, known_name, started)) = known {
                    *known_name = name.clone();
                    self.phase = AgentPhase::RunningTool { name: name.clone() };
                    self.since = *started;
                    return;
                }
                self.tools.push((id.clone(), name.clone(), now));
                self.phase = AgentPhase::RunningTool { name: name.clone() };
                self.since = now;
                return;
            }
            AgentMessage::ToolCompleted { id, .. } | AgentMessage::ToolFailed { id, .. } => {
                self.tools.retain(|(call, _, _)| call != id);
                match self.tools.last() {
                    // Another call still runs: show it, with its own elapsed time.
                    Some((_, name, started)) => {
                        self.phase = AgentPhase::RunningTool { name: name.clone() };
                        self.since = *started;
                        return;
                    }
                    None => AgentPhase::Working,
                }
            }
            AgentMessage::PermissionRequest(request) => {
                if let Some(call) = &request.tool_call_id {
                    self.waits.push((request.id.clone(), call.clone(), now));
                }
                return;
            }
            AgentMessage::PermissionResolved { id, .. } => {
                self.answered(id, now);
                return;
            }
            AgentMessage::Notice { kind, .. } if *kind == NoticeKind::AgentRetry => {
                AgentPhase::AgentRetrying
            }
            _ => return,
        };
        if next != self.phase {
            self.phase = next;
            self.since = now;
        }
    }

    /// Request `id` was answered at `now`: its call's clock skips the wait.
    fn answered(&mut self, id: &str, now: Instant) {
        let Some(index) = self.waits.iter().position(|(request, _, _)| request == id) else {
            return;
        };
        let (_, call, asked) = self.waits.remove(index);
        let waited = now.saturating_duration_since(asked);
        let Some(tool) = self.tools.iter_mut().find(|(id, _, _)| *id == call) else {
            return;
        };
        tool.2 = (tool.2 + waited).min(now);
        let shown = matches!(&self.phase, AgentPhase::RunningTool { .. })
            && self.tools.last().is_some_and(|(id, _, _)| *id == call);
        if shown {
            self.since = self
                .tools
                .last()
                .map_or(self.since, |(_, _, started)| *started);
        }
    }
}

/// Token figures: the last turn's and the conversation's, and the model the CLI reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct UsageBook {
    /// The last completed turn's own figures; `None` after a failed turn.
    pub(crate) turn: Option<Usage>,
    /// Every completed turn of the conversation added up (failed attempts report none).
    pub(crate) conversation: Option<Usage>,
    /// The model the CLI last said it used (made inert as it arrives).
    pub(crate) model: Option<InertText>,
}

impl UsageBook {
    pub(crate) fn observe(&mut self, message: &AgentMessage) {
        match message {
            AgentMessage::SessionStarted { model, .. }
            | AgentMessage::SessionResumed { model, .. } => {
                self.saw_model(model.as_deref());
            }
            AgentMessage::Completed { usage, .. } => {
                self.turn = usage.clone();
                if let Some(usage) = usage {
                    self.saw_model(usage.model.as_deref());
                    add(self.conversation.get_or_insert_with(Usage::default), usage);
                }
            }
            AgentMessage::Failed(_) => self.turn = None,
            _ => {}
        }
    }

    /// The model as the agent named it, made inert for the terminal (it is shown as is).
    fn saw_model(&mut self, model: Option<&str>) {
        if let Some(model) = model.filter(|model| !model.is_empty()) {
            self.model = Some(InertText::new(model));
        }
    }
}

fn add(total: &mut Usage, usage: &Usage) {
    fn sum(total: &mut Option<u64>, value: Option<u64>) {
        if let Some(value) = value {
            *total = Some(total.unwrap_or(0).saturating_add(value));
        }
    }
    sum(&mut total.input_tokens, usage.input_tokens);
    sum(&mut total.output_tokens, usage.output_tokens);
    sum(&mut total.cache_read_tokens, usage.cache_read_tokens);
    sum(&mut total.cache_write_tokens, usage.cache_write_tokens);
    sum(&mut total.total_tokens, usage.total_tokens);
    sum(&mut total.reasoning_tokens, usage.reasoning_tokens);
    if let Some(cost) = usage.cost_usd {
        total.cost_usd = Some(total.cost_usd.unwrap_or(0.0) + cost);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::Failure;
    use serde_json::json;

    fn at(start: Instant, ms: u64) -> Instant {
        start + Duration::from_millis(ms)
    }

    #[test]
    fn the_phase_follows_the_stream() {
        let start = Instant::now();
        let mut tracker = PhaseTracker::new(start);
        let mut seen = Vec::new();
        let messages = [
            AgentMessage::Thinking { delta: "hm".into() },
            AgentMessage::Thinking { delta: "m".into() },
            AgentMessage::Assistant {
                delta: "Let me look.".into(),
            },
            AgentMessage::ToolCall {
                id: "a".into(),
                name: "bash".into(),
                input: json!({}),
                parent_id: None,
            },
            AgentMessage::ToolCall {
                id: "b".into(),
                name: "read".into(),
                input: json!({}),
                parent_id: None,
            },
            AgentMessage::ToolCompleted {
                id: "b".into(),
                output: String::new(),
            },
            AgentMessage::ToolFailed {
                id: "a".into(),
                error: String::new(),
            },
            AgentMessage::notice(crate::stream::NoticeKind::AgentRetry, "pi is retrying"),
        ];
        for (index, message) in messages.iter().enumerate() {
            tracker.observe(message, at(start, 100 * index as u64));
            let (phase, elapsed) = tracker.current(at(start, 100 * index as u64 + 50));
            seen.push((phase.clone(), elapsed.as_millis()));
        }
        let tool = |name: &str| AgentPhase::RunningTool { name: name.into() };
        assert_eq!(
            seen,
            [
                (AgentPhase::Thinking, 50),
                (AgentPhase::Thinking, 150),
                (AgentPhase::Writing, 50),
                (tool("bash"), 50),
                (tool("read"), 50),
                // `read` ended: `bash` still runs, timed from its own start.
                (tool("bash"), 250),
                (AgentPhase::Working, 50),
                (AgentPhase::AgentRetrying, 50),
            ]
        );
    }

    #[test]
    fn a_failed_turn_clears_the_turn_figures_and_totals_add_up() {
        let mut book = UsageBook::default();
        let completed = |input, cost| AgentMessage::Completed {
            stop_reason: "stop".into(),
            usage: Some(Usage {
                input_tokens: Some(input),
                output_tokens: Some(10),
                cost_usd: Some(cost),
                model: Some("gpt-fake".into()),
                ..Usage::default()
            }),
        };
        book.observe(&completed(100, 0.5));
        book.observe(&completed(200, 0.25));
        assert_eq!(book.turn.as_ref().unwrap().input_tokens, Some(200));
        book.observe(&AgentMessage::Failed(Failure::default()));
        assert_eq!(book.turn, None);
        let total = book.conversation.unwrap();
        assert_eq!(total.input_tokens, Some(300));
        assert_eq!(total.output_tokens, Some(20));
        assert_eq!(total.cost_usd, Some(0.75));
        assert_eq!(book.model.as_deref(), Some("gpt-fake"));
    }

    #[test]
    fn the_model_named_at_the_session_start_is_known_before_the_turn_ends() {
        let mut book = UsageBook::default();
        book.observe(&AgentMessage::SessionStarted {
            provider: "claude".into(),
            session_id: None,
            model: Some("claude-opus-4-8".into()),
        });
        assert_eq!(book.model.as_deref(), Some("claude-opus-4-8"));
        // A header without one keeps what is known; the usage's model is the later word.
        book.observe(&AgentMessage::SessionResumed {
            provider: "claude".into(),
            session_id: "s".into(),
            model: None,
        });
        assert_eq!(book.model.as_deref(), Some("claude-opus-4-8"));
        book.observe(&AgentMessage::Completed {
            stop_reason: "stop".into(),
            usage: Some(Usage {
                model: Some("claude-sonnet-5".into()),
                ..Usage::default()
            }),
        });
        assert_eq!(book.model.as_deref(), Some("claude-sonnet-5"));
    }
}
