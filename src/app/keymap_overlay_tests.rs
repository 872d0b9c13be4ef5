//! Every overlay answers each key its footer names: pressed where it has something to act on,
//! the key closes the overlay, asks the chat for something, or changes the overlay. A key
//! cannot be advertised without being handled.

use std::fmt::Debug;
use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::app::agent_status::{ShownMode, ShownModel};
use crate::app::conversation_picker::tests::{picker, summary};
use crate::app::help::KeyHelp;
use crate::app::history_search::HistorySearch;
use crate::app::menu::ActionMenu;
use crate::app::mode_picker::ModePicker;
use crate::app::model_picker::ModelPicker;
use crate::app::pane::{OverlayPane, Step};
use crate::app::provider_picker::ProviderPicker;
use crate::app::review::{ConfirmFor, DiffView, LoadedDiff, UndoConfirm};
use crate::app::rewind::{RewindEntry, RewindPicker};
use crate::app::settings::{SettingsDraft, SettingsField};
use crate::app::transcript::InertText;
use crate::config::RetryPolicy;
use crate::provider::{ModeChoice, ModelChoice};
use crate::snapshot::{DiffLineKind, FileDiffView};
use crate::stream::ChangeStatus;

/// The key events a footer's key name stands for; a name this test does not know fails it, so
/// a new key in a footer is taught here, with the overlay that answers it.
fn events(name: &str) -> Vec<KeyEvent> {
    name.split([' ', '/'])
        .filter(|token| !token.is_empty())
        .flat_map(|token| {
            let codes = match token {
                "↑↓" => vec![KeyCode::Up, KeyCode::Down],
                "←→" => vec![KeyCode::Left, KeyCode::Right],
                "PgUp" => vec![KeyCode::PageUp],
                "PgDn" => vec![KeyCode::PageDown],
                SEND_KEY => vec![KeyCode::Enter],
                STOP_KEY => vec![KeyCode::Esc],
                DIFF_SCOPE_KEY => vec![KeyCode::Tab],
                THINKING_LEVEL_KEY => vec![KeyCode::BackTab],
                // "type to filter": a letter typed.
                "type" => vec![KeyCode::Char('e')],
                letter if letter.chars().count() == 1 => {
                    vec![KeyCode::Char(letter.chars().next().unwrap())]
                }
                other => panic!("a footer names {other:?}: which key is it?"),
            };
            codes
                .into_iter()
                .map(|code| KeyEvent::new(code, KeyModifiers::NONE))
        })
        .collect()
}

/// Each key `keys` names, pressed on a copy of `pane`, acts on it.
fn assert_answers<P, R>(pane: &P, keys: &[PaneKey], press: impl Fn(&mut P, KeyEvent) -> Step<R>)
where
    P: Clone + PartialEq + Debug,
{
    assert!(!keys.is_empty());
    for key in keys {
        for event in events(key.keys) {
            let mut pressed = pane.clone();
            let step = press(&mut pressed, event);
            assert!(
                !matches!(step, Step::Open) || pressed != *pane,
                "{} names {:?} ({:?}), which does nothing to it",
                std::any::type_name::<P>(),
                key.keys,
                event.code
            );
        }
    }
}

fn answer<P: OverlayPane<Input<'static> = ()>>(pane: &mut P, key: KeyEvent) -> Step<P::Request> {
    pane.on_key(key, None, ())
}

fn file(path: &str) -> FileDiffView {
    FileDiffView {
        path: path.into(),
        status: ChangeStatus::Modified,
        added: 2,
        removed: 1,
        lines: vec![
            (DiffLineKind::Hunk, "@@ -1 +1,2 @@".into()),
            (DiffLineKind::Removed, "old".into()),
            (DiffLineKind::Added, "new".into()),
        ],
    }
}

fn rewind_entry(turn: u64) -> RewindEntry {
    RewindEntry {
        turn,
        prompt: InertText::new("a prompt"),
        sent: Instant::now(),
        files: Vec::new(),
        prompts_taken_back: 1,
        files_put_back: Vec::new(),
        conversation_rewind: Ok(()),
    }
}

#[test]
fn the_lists_answer_the_keys_their_footers_name() {
    let mut help = KeyHelp::default();
    help.laid_out(40);
    help.scroll = 10;
    assert_answers(&help, HELP_KEYS, answer);

    assert_answers(&ActionMenu::default(), MENU_KEYS, answer);
    assert_answers(&ProviderPicker::new("pi"), PROVIDER_PICKER_KEYS, answer);

    let conversations = picker(vec![
        summary("aaa", "pi", "Fix the parser"),
        summary("bbb", "pi", "Write tests"),
    ]);
    assert_answers(&conversations, CONVERSATION_PICKER_KEYS, answer);

    let prompts = ["first".to_owned(), "second".to_owned()];
    assert_answers(
        &HistorySearch::default(),
        HISTORY_SEARCH_KEYS,
        |search, key| search.on_key(key, None, &prompts),
    );
}

#[test]
fn the_model_picker_answers_the_keys_its_footers_name() {
    let models = [("m-1", "Small"), ("m-2", "Large")].map(|(id, name)| {
        ShownModel::from(ModelChoice {
            id: id.into(),
            name: name.into(),
            ..ModelChoice::default()
        })
    });
    let picker = ModelPicker::new(&models, Some(&models[0].id));
    assert_answers(&picker, MODEL_PICKER_KEYS, |picker, key| {
        picker.on_key(key, None, &models)
    });
    assert_answers(&picker, MODEL_PICKER_EMPTY_KEYS, |picker, key| {
        picker.on_key(key, None, &[])
    });
}

#[test]
fn the_mode_picker_and_its_question_answer_the_keys_their_footers_name() {
    let modes = [("default", None), ("yolo", Some("everything"))].map(|(id, permissive)| {
        ShownMode::from(ModeChoice {
            id: id.into(),
            name: id.into(),
            most_permissive: permissive.map(str::to_owned),
        })
    });
    let press = |picker: &mut ModePicker, key| picker.on_key(key, None, &modes);
    let picker = ModePicker::new(&modes, Some(&modes[0].id));
    assert_answers(&picker, MODE_PICKER_KEYS, press);
    let mut asking = ModePicker::new(&modes, Some(&modes[1].id));
    press(
        &mut asking,
        KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
    );
    assert!(asking.confirming);
    assert_answers(&asking, MODE_CONFIRM_KEYS, press);
}

#[test]
fn the_settings_answer_the_keys_their_footers_name_on_every_field() {
    let mut tables = Vec::new();
    for field in SettingsField::ALL {
        let mut draft = SettingsDraft::new(RetryPolicy::default());
        draft.field = field;
        let keys = draft.keys();
        assert_answers(&draft, keys, answer);
        tables.push(keys);
    }
    assert!(tables.contains(&SETTINGS_KEYS) && tables.contains(&SETTINGS_NUMBER_KEYS));
    // A number field also takes the value typed, as its footer says.
    let mut draft = SettingsDraft::new(RetryPolicy::default());
    draft.field = SettingsField::MaxAttempts;
    let before = draft.clone();
    assert_eq!(
        answer(
            &mut draft,
            KeyEvent::new(KeyCode::Char('4'), KeyModifiers::NONE)
        ),
        Step::Open
    );
    assert_ne!(draft, before);
}

#[test]
fn review_and_rewind_answer_the_keys_their_footers_name() {
    let mut diff = DiffView::new(LoadedDiff {
        conversation: vec![file("a.rs"), file("b.rs"), file("c.rs")],
        last_turn: vec![file("c.rs")],
        turns: 2,
        last: 2,
    });
    // On b.rs's lines: a file above and below, rows to scroll either way.
    diff.scroll = 6;
    assert_answers(&diff, DIFF_KEYS, answer);

    let confirm = UndoConfirm {
        turn: 1,
        conflicts: vec![InertText::new("a.rs")],
        asked_by: ConfirmFor::Undo,
        shared_with: Vec::new(),
    };
    assert_answers(&confirm, UNDO_CONFIRM_KEYS, answer);

    let mut picker = RewindPicker::new(vec![rewind_entry(2), rewind_entry(1)], None);
    assert_eq!(picker.keys(), REWIND_KEYS);
    assert_answers(&picker, picker.keys(), answer);
    answer(
        &mut picker,
        KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
    );
    assert_eq!(picker.keys(), REWIND_CHOICE_KEYS);
    assert_answers(&picker, picker.keys(), answer);
}
