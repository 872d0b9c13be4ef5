//! The `/rewind` picker's list as the chat builds it: each prompt once however often it was
//! retried, and rewind notices that number prompts, not turns.

use std::time::Instant;

use crate::app::menu::Overlay;
use crate::app::state::{AppState, StartupInfo};
use crate::app::transcript::{CellBody, NoticeLevel};
use crate::orchestrator::{OrchestratorEvent, Rewind, TurnId, TurnOutcome};
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
        .cells()
        .iter()
        .rev()
        .find_map(|cell| match &cell.body {
            CellBody::Notice(notice) if notice.level == NoticeLevel::Info => {
                Some(notice.message.to_string())
            }
            _ => None,
        })
        .unwrap_or_default()
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
    state.perform(crate::app::action::Action::Rewind, None);
    let Some(Overlay::Rewind(picker)) = &state.overlay else {
        panic!("the picker is open");
    };
    assert_eq!(picker.entries.len(), 4);
    state.overlay = None;
    // Rewinding to before turn 5 is rewinding to before the third prompt sent.
    state.on_rewound(Rewind {
        turn: 5,
        conversation: Some(Ok(())),
        files: None,
        undone: false,
    });
    let notice = last_notice(&state);
    assert!(
        notice.starts_with("Rewound to before prompt 3;"),
        "{notice}"
    );
    state.on_rewound(Rewind {
        turn: 5,
        conversation: Some(Ok(())),
        files: None,
        undone: true,
    });
    let notice = last_notice(&state);
    assert!(
        notice.starts_with("Undid the rewind to before prompt 3;"),
        "{notice}"
    );
    // Rewinding to before turn 4 (the second prompt's last retry) marks every attempt.
    state.on_rewound(Rewind {
        turn: 4,
        conversation: Some(Ok(())),
        files: None,
        undone: false,
    });
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
