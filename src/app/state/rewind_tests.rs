//! The `/rewind` picker's list as the chat builds it: each prompt once however often it was
//! retried, and rewind notices that number prompts, not turns.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::app::action::Action;
use crate::app::menu::Overlay;
use crate::app::state::review::tests::chat;
use crate::app::state::{AppEffect, AppState, StartupInfo};
use crate::app::transcript::{CellBody, NoticeLevel};
use crate::orchestrator::{Command, OrchestratorEvent, Rewind, RewindAsked, TurnId, TurnOutcome};
use crate::snapshot::UndoOutcome;
use crate::stream::FailureReason;

fn turn(state: &mut AppState, turn: TurnId, prompt: &str, outcome: TurnOutcome) {
    let now = Instant::now();
    let started = OrchestratorEvent::TurnStarted {
        turn,
        prompt: prompt.into(),
    };
    state.on_orchestrator_event(started, now);
    state.on_orchestrator_event(OrchestratorEvent::TurnEnded { turn, outcome }, now);
}

fn failed() -> TurnOutcome {
    TurnOutcome::Failed {
        reason: FailureReason::AgentError,
        message: "HTTP 429".into(),
    }
}

fn last_notice(state: &AppState) -> String {
    state
        .transcript
        .bodies()
        .rev()
        .find_map(|body| match body {
            CellBody::Notice(notice) if notice.level == NoticeLevel::Info => {
                Some(notice.message.to_string())
            }
            _ => None,
        })
        .unwrap_or_default()
}

/// The command a rewind (or, `undone`, its undo) sends when nothing has changed since.
fn rewind_sent(turn: TurnId, conversation: bool, files: bool, undone: bool) -> [AppEffect; 1] {
    [AppEffect::Command(Command::Rewind(RewindAsked {
        turn,
        conversation,
        files,
        overwrite: false,
        undone,
    }))]
}

#[test]
fn a_retried_prompt_is_one_entry_and_the_rewind_notice_numbers_prompts() {
    let mut state = AppState::new(StartupInfo::default());
    turn(&mut state, 1, "first", TurnOutcome::Completed);
    // "second" failed twice and was retried (`/retry`: a turn each time), then completed.
    turn(&mut state, 2, "second", failed());
    turn(&mut state, 3, "second", TurnOutcome::Cancelled);
    turn(&mut state, 4, "second", TurnOutcome::Completed);
    turn(&mut state, 5, "third", TurnOutcome::Completed);
    // The same text sent again after a completed turn is a prompt of its own.
    turn(&mut state, 6, "third", TurnOutcome::Completed);
    let prompts: Vec<(TurnId, String)> = state
        .turn_prompts
        .iter()
        .map(|record| (record.turn, record.prompt.to_string()))
        .collect();
    assert_eq!(
        prompts,
        [
            (1, "first".to_owned()),
            (4, "second".to_owned()),
            (5, "third".to_owned()),
            (6, "third".to_owned())
        ]
    );
    assert_eq!(state.turn_prompts[1].cells.len(), 3, "every attempt's cell");
    state.perform(Action::Rewind, None);
    let Some(Overlay::Rewind(picker)) = &state.overlay else {
        panic!("the picker is open");
    };
    assert_eq!(picker.entries.len(), 4);
    state.overlay = None;
    // Rewinding to before turn 5 is rewinding to before the third prompt sent.
    state.on_rewound(rewound(5, true, None, false));
    let notice = last_notice(&state);
    assert!(
        notice.starts_with("Rewound to before prompt 3;"),
        "{notice}"
    );
    state.on_rewound(rewound(5, true, None, true));
    let notice = last_notice(&state);
    assert!(
        notice.starts_with("Undid the rewind to before prompt 3;"),
        "{notice}"
    );
    // Rewinding to before turn 4 (the second prompt's last retry) marks every attempt.
    state.on_rewound(rewound(4, true, None, false));
    assert!(last_notice(&state).starts_with("Rewound to before prompt 2;"));
    let rewound = state
        .transcript
        .cells()
        .iter()
        .filter(|cell| matches!(&cell.body, CellBody::User(user) if user.rewound))
        .count();
    assert_eq!(
        rewound, 5,
        "the second prompt's three cells and the third's two"
    );
}

/// What the orchestrator says a rewind to before `turn` (or, `undone`, its undo) did: the
/// agent's conversation went back when `conversation`; the files as `files` says.
fn rewound(turn: TurnId, conversation: bool, files: Option<UndoOutcome>, undone: bool) -> Rewind {
    Rewind {
        turn,
        conversation: conversation.then_some(Ok(())),
        files: files.map(Ok),
        undone,
    }
}

/// Files put back: `path`.
fn restored(path: &str) -> UndoOutcome {
    UndoOutcome {
        restored: vec![path.into()],
        ..UndoOutcome::default()
    }
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

#[test]
fn esc_esc_opens_the_rewind_picker_only_within_the_window_and_only_when_idle_and_empty() {
    let start = Instant::now();
    let mut state = chat(3, start);
    state.on_key_at(key(KeyCode::Esc), start);
    state.on_key_at(key(KeyCode::Esc), start + Duration::from_millis(900));
    assert!(state.overlay.is_none(), "too slow: two single Escs");
    state.on_key_at(key(KeyCode::Esc), start + Duration::from_millis(1200));
    let picker = match &state.overlay {
        Some(Overlay::Rewind(picker)) => picker.clone(),
        other => panic!("{other:?}"),
    };
    let turns: Vec<TurnId> = picker.entries.iter().map(|entry| entry.turn).collect();
    assert_eq!(turns, [3, 2, 1], "newest first");
    assert_eq!(picker.entries[1].files, ["b.txt"]);
    assert_eq!(picker.entries[2].prompts_taken_back, 3);
    assert_eq!(picker.entries[2].files_put_back, ["b.txt"]);
    assert!(picker.entries[0].files_put_back.is_empty());

    // With a draft in the composer, Esc Esc is not a rewind.
    let mut state = chat(1, start);
    state.composer.set_text("draft");
    state.on_key_at(key(KeyCode::Esc), start);
    state.on_key_at(key(KeyCode::Esc), start + Duration::from_millis(100));
    assert!(state.overlay.is_none());
}

#[test]
fn the_choice_starts_on_cancel_and_a_confirmed_rewind_is_one_command() {
    let now = Instant::now();
    let mut state = chat(2, now);
    state.perform(Action::Rewind, None);
    let (enter, up) = (key(KeyCode::Enter), key(KeyCode::Up));
    assert!(state.on_key_at(enter, now).is_empty());
    // Enter again: Cancel, nothing sent.
    assert!(state.on_key_at(enter, now).is_empty());
    assert!(state.overlay.is_none());
    state.perform(Action::Rewind, None);
    state.on_key_at(enter, now);
    state.on_key_at(up, now);
    state.on_key_at(up, now);
    assert_eq!(
        state.on_key_at(enter, now),
        rewind_sent(2, true, false, false)
    );
    state.on_orchestrator_event(
        OrchestratorEvent::Rewound(rewound(2, true, None, false)),
        now,
    );
    assert_eq!(state.composer.text(), "prompt 2");
    assert_eq!(state.turn_prompts.len(), 1);
}

#[test]
fn a_turn_whose_conversation_cannot_go_back_offers_its_files_only_and_says_why() {
    let now = Instant::now();
    let mut state = chat(2, now);
    state.on_orchestrator_event(
        OrchestratorEvent::TurnCheckpointed {
            turn: 2,
            conversation_rewind: Err("no session \u{1b}[31mfile".into()),
        },
        now,
    );
    state.perform(Action::Rewind, None);
    let Some(Overlay::Rewind(picker)) = &state.overlay else {
        panic!("{:?}", state.overlay);
    };
    let why = picker.entries[0].conversation_rewind.clone().unwrap_err();
    assert_eq!(why.as_str(), "no session ␛[31mfile");
    assert_eq!(picker.entries[1].conversation_rewind, Ok(()));
    let (enter, up) = (key(KeyCode::Enter), key(KeyCode::Up));
    state.on_key_at(enter, now);
    let Some(Overlay::Rewind(picker)) = &state.overlay else {
        panic!("{:?}", state.overlay);
    };
    assert_eq!(
        picker.choices(),
        crate::app::rewind::RewindChoice::FILES_ONLY
    );
    state.on_key_at(up, now);
    assert_eq!(
        state.on_key_at(enter, now),
        rewind_sent(2, false, true, false)
    );
}

fn user_cell_rewound(state: &AppState, prompt: &str) -> bool {
    state
        .transcript
        .bodies()
        .find_map(|body| match body {
            CellBody::User(user) if user.text == prompt => Some(user.rewound),
            _ => None,
        })
        .unwrap()
}

#[test]
fn a_rewind_marks_the_turns_it_took_back_and_can_be_undone_until_the_next_prompt() {
    let now = Instant::now();
    let mut state = chat(3, now);
    state.rewinding_prompt = Some((2, "prompt 2".into()));
    state.on_orchestrator_event(
        OrchestratorEvent::Rewound(rewound(2, true, Some(restored("b.txt")), false)),
        now,
    );
    // Marked, not deleted; the turn's changes are marked undone.
    assert!(!user_cell_rewound(&state, "prompt 1"));
    assert!(user_cell_rewound(&state, "prompt 2"));
    assert!(user_cell_rewound(&state, "prompt 3"));
    assert!(state.undoable_turn().is_none());
    assert_eq!(state.composer.text(), "prompt 2");

    // The picker offers the undo first, and its choices start on Cancel.
    state.perform(Action::Rewind, None);
    let Some(Overlay::Rewind(picker)) = &state.overlay else {
        panic!("no picker");
    };
    assert!(picker.on_undo_row());
    assert_eq!(picker.entries.len(), 1, "prompt 1 only");
    let (enter, up) = (key(KeyCode::Enter), key(KeyCode::Up));
    state.on_key_at(enter, now);
    state.on_key_at(up, now);
    assert_eq!(
        state.on_key_at(enter, now),
        rewind_sent(2, true, true, true)
    );
    // Files changed since the rewind: asked first.
    state.on_orchestrator_event(
        OrchestratorEvent::Rewound(rewound(
            2,
            false,
            Some(UndoOutcome {
                conflicts: vec!["b.txt".into()],
                ..UndoOutcome::default()
            }),
            true,
        )),
        now,
    );
    let yes = key(KeyCode::Char('y'));
    assert_eq!(
        state.on_key_at(yes, now),
        [AppEffect::Command(Command::Rewind(RewindAsked {
            turn: 2,
            conversation: true,
            files: true,
            overwrite: true,
            undone: true,
        }))]
    );
    state.on_orchestrator_event(
        OrchestratorEvent::Rewound(rewound(2, true, Some(restored("b.txt")), true)),
        now,
    );
    assert!(!user_cell_rewound(&state, "prompt 2"));
    assert!(!user_cell_rewound(&state, "prompt 3"));
    assert_eq!(state.undoable_turn().map(|changed| changed.turn), Some(2));
    let turns: Vec<TurnId> = state
        .turn_prompts
        .iter()
        .map(|record| record.turn)
        .collect();
    assert_eq!(turns, [1, 2, 3]);
    assert!(
        state.composer.is_empty(),
        "the prompt the rewind put back is gone"
    );
    assert!(state.last_rewind.is_none());

    // Rewound again, then a new prompt: the rewind can no longer be undone.
    state.on_orchestrator_event(
        OrchestratorEvent::Rewound(rewound(3, true, None, false)),
        now,
    );
    assert!(state.last_rewind.is_some());
    state.on_orchestrator_event(
        OrchestratorEvent::TurnStarted {
            turn: 4,
            prompt: "prompt 4".into(),
        },
        now,
    );
    assert!(state.last_rewind.is_none());
    assert!(user_cell_rewound(&state, "prompt 3"), "still marked");
}
