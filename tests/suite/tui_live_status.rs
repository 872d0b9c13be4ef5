//! The live thinking pane and the status bar's phases, drawn on ratatui's `TestBackend` from
//! hand-made orchestrator event sequences with an injected clock, compared with reviewed insta
//! snapshots.

use serde_json::json;

use agentty::orchestrator::{OrchestratorEvent, TurnOutcome};
use agentty::stream::{AgentMessage, Failure, NoticeKind, Usage};

use crate::support::chat;

use chat::{startup, Chat};

/// This module's helpers on the suite's test chat (a trait: each module adds its own).
trait LiveStatusChat {
    fn new() -> Self;
    /// The bottom row: the status bar.
    fn status_bar(&mut self, width: u16, ms: u64) -> String;
}

impl LiveStatusChat for Chat {
    fn new() -> Self {
        Self::with_startup(startup("pi", None, None))
            .always_turn_one()
            .announcing_session("pi", "01a228fa-d5ab-77d5-9c75-0a50cd618754")
    }

    /// The bottom row: the status bar.
    fn status_bar(&mut self, width: u16, ms: u64) -> String {
        let screen = self.screen(width, 8, ms);
        screen.lines().last().unwrap_or_default().to_owned()
    }
}

const THOUGHT: &str =
    "The user asks for the largest file.\nI should list the directory with sizes first.";

fn thinking_phase(chat: &mut Chat) {
    chat.start_turn(0, "Which file is largest?");
    let mut ms = 100;
    for piece in THOUGHT.split_inclusive(' ') {
        chat.thinking(ms, piece);
        ms += 100;
    }
}

#[test]
fn live_thinking_pane_while_thinking() {
    let mut chat = Chat::new();
    thinking_phase(&mut chat);
    insta::assert_snapshot!(chat.screen(70, 10, 2_500));
}

#[test]
fn live_thinking_pane_completed_by_the_thought() {
    let mut chat = Chat::new();
    thinking_phase(&mut chat);
    chat.message(
        2_600,
        AgentMessage::Assistant {
            delta: "It is `big.bin`.".into(),
        },
    );
    chat.message(
        2_700,
        AgentMessage::Thought {
            text: THOUGHT.into(),
        },
    );
    let screen = chat.screen(70, 10, 2_800);
    // One thought cell, no longer live, and its word count is the whole thought's.
    assert_eq!(screen.matches("Thinking").count(), 1, "{screen}");
    assert!(screen.contains("▸ Thinking · 15 words"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn status_while_thinking() {
    let mut chat = Chat::new();
    thinking_phase(&mut chat);
    insta::assert_snapshot!(chat.status_bar(90, 2_500));
}

#[test]
fn status_while_a_tool_runs() {
    let mut chat = Chat::new();
    chat.start_turn(0, "Which file is largest?");
    chat.message(
        200,
        AgentMessage::Assistant {
            delta: "Listing.".into(),
        },
    );
    chat.message(
        400,
        AgentMessage::ToolCall {
            id: "t1".into(),
            name: "bash".into(),
            input: json!({"command": "du -a | sort -n"}),
            parent_id: None,
        },
    );
    insta::assert_snapshot!(chat.status_bar(90, 4_600));
}

#[test]
fn status_while_the_agent_retries_on_its_own() {
    let mut chat = Chat::new();
    chat.start_turn(0, "Hello");
    chat.message(
        1_000,
        AgentMessage::notice(NoticeKind::AgentRetry,
            "pi is retrying on its own after \"500 fake internal server error\" (retry 1 of 3, in 2000 ms); the reply starts afresh",
        ),
    );
    insta::assert_snapshot!(chat.status_bar(90, 2_500));
}

fn completed(input: u64, cost: f64) -> AgentMessage {
    AgentMessage::Completed {
        stop_reason: "stop".into(),
        usage: Some(Usage {
            input_tokens: Some(input),
            output_tokens: Some(56),
            reasoning_tokens: Some(12),
            cost_usd: Some(cost),
            model: Some("gpt-fake-1".into()),
            ..Usage::default()
        }),
    }
}

#[test]
fn status_shows_the_reported_model_the_turn_and_the_conversation() {
    let mut chat = Chat::new();
    for (turn_ms, input) in [(0, 1_234), (10_000, 2_000)] {
        chat.start_turn(turn_ms, "Hello");
        chat.message(turn_ms + 500, completed(input, 0.0125));
        chat.event(
            turn_ms + 500,
            OrchestratorEvent::TurnEnded {
                turn: 1,
                outcome: TurnOutcome::Completed,
            },
        );
    }
    let bar = chat.status_bar(110, 11_000);
    assert!(bar.contains("pi · gpt-fake-1"), "{bar}");
    insta::assert_snapshot!(bar);
}

#[test]
fn a_failed_turn_clears_the_turn_figures() {
    let mut chat = Chat::new();
    chat.start_turn(0, "Hello");
    chat.message(500, completed(1_234, 0.0125));
    chat.event(
        500,
        OrchestratorEvent::TurnEnded {
            turn: 1,
            outcome: TurnOutcome::Completed,
        },
    );
    chat.start_turn(1_000, "Again");
    chat.message(
        1_500,
        AgentMessage::Failed(Failure {
            reason: agentty::stream::FailureReason::AgentError,
            message: "500 fake internal server error".into(),
            http_status: Some(500),
            ..Failure::default()
        }),
    );
    chat.event(
        1_500,
        OrchestratorEvent::TurnEnded {
            turn: 1,
            outcome: TurnOutcome::Failed {
                reason: agentty::stream::FailureReason::AgentError,
                message: "500 fake internal server error".into(),
            },
        },
    );
    let bar = chat.status_bar(110, 2_000);
    // The earlier turn's "1.2k in" is gone; the conversation's total stays.
    assert!(!bar.contains(" in ·"), "{bar}");
    assert!(bar.contains("Σ"), "{bar}");
    insta::assert_snapshot!(bar);
}
