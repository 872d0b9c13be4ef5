//! `/compact` in the chat: the command goes to the orchestrator and not into the prompt
//! history, the status bar says `compacting` while it runs (Esc stops it like a turn), the
//! result and a refusal are one notice each, and a compaction leaves `/retry` to the last
//! prompt's turn. Time is injected.

use crossterm::event::KeyCode;

use agentty::app::state::AppEffect;
use agentty::orchestrator::{Command, OrchestratorEvent, TurnOutcome};
use agentty::provider::compaction::compacted_notice;
use agentty::stream::{AgentMessage, Failure, FailureReason};

use crate::support::chat;

use chat::{startup, Chat};

fn compact_command(effects: &[AppEffect]) -> Option<Option<String>> {
    effects.iter().find_map(|effect| match effect {
        AppEffect::Command(Command::Compact(instructions)) => Some(instructions.clone()),
        _ => None,
    })
}

/// A chat whose first turn failed (so `/retry` means it), then `/compact keep it` typed.
fn after_a_failed_turn_and_compact() -> (Chat, Vec<AppEffect>) {
    let mut chat = Chat::with_startup(startup("pi", None, None)).always_turn_one();
    chat.start_turn(0, "fix the tests");
    chat.message(
        100,
        AgentMessage::Failed(Failure {
            reason: FailureReason::AgentError,
            message: "boom".into(),
            ..Failure::default()
        }),
    );
    chat.end(
        100,
        TurnOutcome::Failed {
            reason: FailureReason::AgentError,
            message: "boom".into(),
        },
    );
    chat.type_text("/compact keep it");
    let effects = chat.press(KeyCode::Enter);
    (chat, effects)
}

#[test]
fn compact_goes_to_the_orchestrator_and_not_into_the_history() {
    let (chat, effects) = after_a_failed_turn_and_compact();
    assert_eq!(compact_command(&effects), Some(Some("keep it".to_owned())));
    assert!(
        !effects
            .iter()
            .any(|effect| matches!(effect, AppEffect::SavePrompt(_))),
        "{effects:?}"
    );
    assert!(!chat
        .state
        .composer
        .history()
        .iter()
        .any(|prompt| prompt.contains("/compact")));
    assert!(chat.state.composer.is_empty());
}

#[test]
fn the_status_bar_says_compacting_and_the_transcript_the_result() {
    let (mut chat, _) = after_a_failed_turn_and_compact();
    chat.event(
        1_000,
        OrchestratorEvent::CompactionStarted {
            turn: 2,
            instructions: Some("keep it".into()),
        },
    );
    chat.event(
        1_000,
        OrchestratorEvent::AttemptStarted {
            turn: 2,
            attempt: 1,
            max_attempts: 1,
        },
    );
    let screen = chat.screen(100, 20, 3_500);
    assert!(screen.contains("● compacting 2.5 s"), "{screen}");
    assert!(
        !screen.contains("› /compact"),
        "no prompt is shown: {screen}"
    );
    chat.event(
        4_000,
        OrchestratorEvent::Message {
            turn: 2,
            attempt: 1,
            message: compacted_notice(Some(120_000), Some(9_000)),
        },
    );
    chat.event(
        4_000,
        OrchestratorEvent::TurnEnded {
            turn: 2,
            outcome: TurnOutcome::Completed,
        },
    );
    let screen = chat.screen(100, 20, 4_000);
    assert!(
        screen.contains("Conversation compacted: 120,000 → 9,000 tokens"),
        "{screen}"
    );
    assert!(screen.contains("idle"), "{screen}");
    // `/retry` still means the failed prompt's turn, not the compaction.
    chat.type_text("/retry");
    let effects = chat.press(KeyCode::Enter);
    assert!(
        effects
            .iter()
            .any(|effect| matches!(effect, AppEffect::Command(Command::RetryLastTurn))),
        "{effects:?}"
    );
}

#[test]
fn esc_stops_a_compaction_like_a_turn() {
    let (mut chat, _) = after_a_failed_turn_and_compact();
    chat.event(
        1_000,
        OrchestratorEvent::CompactionStarted {
            turn: 2,
            instructions: None,
        },
    );
    let effects = chat.press(KeyCode::Esc);
    assert!(
        effects
            .iter()
            .any(|effect| matches!(effect, AppEffect::Command(Command::Stop))),
        "{effects:?}"
    );
}

#[test]
fn a_refusal_is_one_notice() {
    let mut chat = Chat::with_startup(startup("pi", None, None));
    chat.event(
        0,
        OrchestratorEvent::CompactionRefused {
            message: "/compact is not available with pi over json: nothing was sent.".into(),
        },
    );
    let screen = chat.screen(100, 20, 0);
    assert_eq!(
        screen
            .matches("/compact is not available with pi over json")
            .count(),
        1,
        "{screen}"
    );
}
