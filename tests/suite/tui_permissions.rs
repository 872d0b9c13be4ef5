//! Permission requests and plans in the chat: the prompt that opens above the composer and takes
//! keys only once Tab gives it the focus (every key before that, whatever the pauses between
//! them, is typing, with injected time), the one key per once-only option (numbers, y / n), the
//! "always" answers that take a confirming Enter (A / N highlight them), the allow-once default,
//! Esc that rejects instead of stopping, the answer sent to the orchestrator, the queue of
//! requests (each takes its own Tab), the prompt closing on a resolution or the turn's end, the
//! cell that records the outcome, the status bar, and the plan checklist. Drawn at 160x50 and
//! 40x12 (and smaller, which must not panic).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use agentty::app::state::AppEffect;
use agentty::app::transcript::{CellBody, PermissionCell, PermissionOutcome, PlanCell};
use agentty::orchestrator::{Command, TurnOutcome};
use agentty::stream::{
    AgentMessage, FileDiff, PermissionOption, PermissionOptionKind, PermissionRequest,
    PermissionResolver, PlanEntry, StopStage, PERMISSION_CANCELLED,
};

use crate::support::chat;

use chat::{assert_no_control_character, startup, Chat};

const BIG: (u16, u16) = (160, 50);
const SMALL: (u16, u16) = (40, 12);

fn option(id: &str, kind: PermissionOptionKind, name: &str) -> PermissionOption {
    PermissionOption {
        id: id.into(),
        kind,
        name: name.into(),
    }
}

/// Gemini's four answers, in its order.
fn four_options() -> Vec<PermissionOption> {
    vec![
        option("proceed_once", PermissionOptionKind::AllowOnce, "Allow"),
        option(
            "proceed_always",
            PermissionOptionKind::AllowAlways,
            "Allow always",
        ),
        option("cancel", PermissionOptionKind::RejectOnce, "Reject"),
        option("never", PermissionOptionKind::RejectAlways, "Reject always"),
    ]
}

fn execute(id: &str, command: &str, options: Vec<PermissionOption>) -> PermissionRequest {
    PermissionRequest {
        id: id.into(),
        tool_call_id: Some(format!("call-{id}")),
        title: command.into(),
        kind: "execute".into(),
        options,
        command: Some(command.into()),
        ..PermissionRequest::default()
    }
}

fn edit_request() -> PermissionRequest {
    let old: String = (1..=40).map(|n| format!("line {n}\n")).collect();
    let new = old
        .replace("line 5\n", "line five\n")
        .replace("line 30\n", "line thirty\nline thirty-one and a half\n");
    PermissionRequest {
        id: "7".into(),
        tool_call_id: Some("call-7".into()),
        title: "Edit src/lib.rs".into(),
        kind: "edit".into(),
        options: four_options(),
        command: None,
        paths: vec!["src/lib.rs".into()],
        diffs: vec![
            FileDiff {
                path: "src/lib.rs".into(),
                old_text: Some(old),
                new_text: new,
            },
            FileDiff {
                path: "src/new.rs".into(),
                old_text: None,
                new_text: "pub fn new() {}\n".into(),
            },
        ],
    }
}

/// This module's helpers on the suite's test chat (a trait: each module adds its own).
trait PermissionsChat {
    fn new() -> Self;
    /// A turn whose agent asks `request`, the prompt given the keys (Tab).
    fn asked(request: PermissionRequest) -> Self;
    /// A turn whose agent asks `request`, the prompt still without the keys.
    fn waiting(request: PermissionRequest) -> Self;
    fn char_key(&mut self, ch: char) -> Vec<AppEffect>;
    fn permission_cells(&self) -> Vec<PermissionCell>;
    fn plan_cells(&self) -> Vec<PlanCell>;
    /// The screen a second after the start.
    fn draw(&mut self, size: (u16, u16)) -> String;
}

impl PermissionsChat for Chat {
    fn new() -> Self {
        Self::with_startup(startup("gemini", Some("gemini-2.5-pro"), None))
    }

    fn asked(request: PermissionRequest) -> Self {
        let mut chat = Self::waiting(request);
        assert!(chat.press(KeyCode::Tab).is_empty());
        assert!(chat.state.permission_prompt().unwrap().focused);
        chat
    }

    fn waiting(request: PermissionRequest) -> Self {
        let mut chat = Self::new();
        chat.start_turn(0, "make a file x");
        chat.message(
            10,
            AgentMessage::ToolCall {
                id: request.tool_call_id.clone().unwrap_or_default(),
                name: "shell".into(),
                input: serde_json::json!({"command": request.command.clone().unwrap_or_default()}),
                parent_id: None,
            },
        );
        chat.message(20, AgentMessage::PermissionRequest(Box::new(request)));
        chat
    }

    fn char_key(&mut self, ch: char) -> Vec<AppEffect> {
        let modifiers = if ch.is_uppercase() {
            KeyModifiers::SHIFT
        } else {
            KeyModifiers::NONE
        };
        self.key(KeyCode::Char(ch), modifiers)
    }

    fn permission_cells(&self) -> Vec<PermissionCell> {
        self.state
            .transcript
            .cells()
            .iter()
            .filter_map(|cell| match &cell.body {
                CellBody::Permission(permission) => Some((**permission).clone()),
                _ => None,
            })
            .collect()
    }

    fn plan_cells(&self) -> Vec<PlanCell> {
        self.state
            .transcript
            .cells()
            .iter()
            .filter_map(|cell| match &cell.body {
                CellBody::Plan(plan) => Some(plan.clone()),
                _ => None,
            })
            .collect()
    }

    fn draw(&mut self, (width, height): (u16, u16)) -> String {
        self.screen(width, height, 1000)
    }
}

fn answer(id: &str, option: Option<&str>) -> Vec<AppEffect> {
    vec![AppEffect::Command(Command::AnswerPermission {
        id: id.into(),
        option: option.map(Into::into),
        message: None,
    })]
}

fn chosen(kind: PermissionOptionKind, name: &str) -> PermissionOutcome {
    PermissionOutcome::Chosen {
        kind: Some(kind),
        name: name.into(),
        by: PermissionResolver::User,
    }
}

#[test]
fn each_option_has_one_key_a_number_for_once_and_a_letter_by_kind() {
    // A once-only answer is one key; an "always" answer is its capital, then Enter.
    let cases = [
        ("1", "proceed_once"),
        ("2", "cancel"),
        ("y", "proceed_once"),
        ("A\n", "proceed_always"),
        ("n", "cancel"),
        ("N\n", "never"),
    ];
    for (keys, expected) in cases {
        let mut chat = Chat::asked(execute("0", "touch x", four_options()));
        let key = keys.chars().next().unwrap();
        let effects = chat.char_key(key);
        let effects = if keys.ends_with('\n') {
            assert!(effects.is_empty(), "{key} alone answers nothing");
            assert!(chat.state.permission_prompt().is_some());
            chat.press(KeyCode::Enter)
        } else {
            effects
        };
        assert_eq!(effects, answer("0", Some(expected)), "keys {keys:?}");
        assert!(chat.state.permission_prompt().is_none(), "key {key}");
        let outcome = chat.permission_cells()[0].outcome.clone();
        assert!(
            matches!(
                outcome,
                PermissionOutcome::Chosen {
                    by: PermissionResolver::User,
                    ..
                }
            ),
            "{outcome:?}"
        );
    }
    // A key that names nothing the agent offered gives the keys back to the composer and is
    // typed there; so is every key after it, answer letters included.
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    for key in ['3', 'y', 'x', 'A', 'n'] {
        assert!(chat.char_key(key).is_empty(), "key {key}");
    }
    assert!(chat.state.permission_prompt().is_some());
    assert!(!chat.state.permission_prompt().unwrap().focused);
    assert_eq!(chat.state.composer.text(), "3yxAn");
}

#[test]
fn arrows_and_enter_choose_the_highlighted_option() {
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    assert!(chat.press(KeyCode::Down).is_empty());
    assert!(chat.press(KeyCode::Down).is_empty());
    assert!(chat.press(KeyCode::Up).is_empty());
    assert_eq!(
        chat.press(KeyCode::Enter),
        answer("0", Some("proceed_always"))
    );
    assert_eq!(
        chat.permission_cells()[0].outcome,
        chosen(PermissionOptionKind::AllowAlways, "Allow always")
    );
}

#[test]
fn enter_on_a_fresh_prompt_allows_once_whatever_the_agents_order() {
    // Claude's adapter lists "Always Allow" first.
    let claude = vec![
        option(
            "allow_always",
            PermissionOptionKind::AllowAlways,
            "Always Allow",
        ),
        option("allow", PermissionOptionKind::AllowOnce, "Allow"),
        option("reject", PermissionOptionKind::RejectOnce, "Reject"),
    ];
    let mut chat = Chat::asked(execute("0", "touch x", claude.clone()));
    assert_eq!(chat.state.permission_prompt().unwrap().selected, Some(1));
    let screen = chat.draw(BIG);
    assert!(screen.contains(" › 1 y  Allow"), "{screen}");
    assert!(screen.contains("     A  Always Allow"), "{screen}");
    assert_eq!(chat.press(KeyCode::Enter), answer("0", Some("allow")));
    assert_eq!(
        chat.permission_cells()[0].outcome,
        chosen(PermissionOptionKind::AllowOnce, "Allow")
    );
    // `1` is the first once-only option, not the agent's first option.
    let mut chat = Chat::asked(execute("0", "touch x", claude));
    assert_eq!(chat.char_key('1'), answer("0", Some("allow")));

    // With only "always" answers nothing is preselected: Enter highlights the first, and only a
    // second Enter chooses it.
    let mut chat = Chat::asked(execute(
        "1",
        "touch y",
        vec![
            option("ok_always", PermissionOptionKind::AllowAlways, "Always"),
            option("never", PermissionOptionKind::RejectAlways, "Never"),
        ],
    ));
    assert_eq!(chat.state.permission_prompt().unwrap().selected, None);
    assert!(chat.press(KeyCode::Enter).is_empty());
    assert_eq!(chat.state.permission_prompt().unwrap().selected, Some(0));
    assert_eq!(chat.press(KeyCode::Enter), answer("1", Some("ok_always")));
}

#[test]
fn esc_rejects_instead_of_stopping_and_a_second_esc_stops() {
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    assert_eq!(chat.press(KeyCode::Esc), answer("0", Some("cancel")));
    assert!(chat
        .state
        .turn
        .as_ref()
        .is_some_and(|turn| !turn.stop_requested));
    assert_eq!(
        chat.permission_cells()[0].outcome,
        chosen(PermissionOptionKind::RejectOnce, "Reject")
    );
    assert_eq!(
        chat.press(KeyCode::Esc),
        [AppEffect::Command(Command::Stop)]
    );

    // Without a reject-once option, Esc rejects always; without either, it cancels.
    let mut chat = Chat::asked(execute(
        "1",
        "rm -rf build",
        vec![
            option("ok", PermissionOptionKind::AllowOnce, "Yes"),
            option("no-never", PermissionOptionKind::RejectAlways, "Never"),
        ],
    ));
    assert_eq!(chat.press(KeyCode::Esc), answer("1", Some("no-never")));
    let mut chat = Chat::asked(execute(
        "2",
        "ls",
        vec![option("ok", PermissionOptionKind::AllowOnce, "Yes")],
    ));
    assert_eq!(chat.press(KeyCode::Esc), answer("2", None));
    assert_eq!(
        chat.permission_cells()[0].outcome,
        PermissionOutcome::Cancelled {
            by: PermissionResolver::User
        }
    );
}

#[test]
fn requests_queue_and_are_answered_in_order() {
    let mut chat = Chat::asked(execute("a", "touch a", four_options()));
    chat.message(
        30,
        AgentMessage::PermissionRequest(Box::new(execute("b", "touch b", four_options()))),
    );
    assert_eq!(chat.state.permission_prompts.len(), 2);
    assert_eq!(chat.state.permission_prompt().unwrap().id, "a");
    let screen = chat.draw(BIG);
    assert!(screen.contains("Permission needed (1 of 2)"), "{screen}");
    assert!(
        screen.contains("waiting for your answer (1 of 2)"),
        "{screen}"
    );
    assert_eq!(chat.char_key('y'), answer("a", Some("proceed_once")));
    assert_eq!(chat.state.permission_prompt().unwrap().id, "b");
    // The next request takes its own Tab: a key pressed twice never answers two requests.
    assert!(chat.char_key('n').is_empty());
    assert_eq!(chat.state.composer.text(), "n");
    assert!(chat.press(KeyCode::Tab).is_empty());
    assert_eq!(chat.char_key('n'), answer("b", Some("cancel")));
    assert!(chat.state.permission_prompt().is_none());
    let outcomes: Vec<PermissionOutcome> = chat
        .permission_cells()
        .into_iter()
        .map(|cell| cell.outcome)
        .collect();
    assert_eq!(
        outcomes,
        [
            chosen(PermissionOptionKind::AllowOnce, "Allow"),
            chosen(PermissionOptionKind::RejectOnce, "Reject")
        ]
    );
}

#[test]
fn a_resolution_closes_its_prompt_and_the_cell_says_who_answered() {
    let mut chat = Chat::asked(execute("a", "touch a", four_options()));
    chat.message(
        30,
        AgentMessage::PermissionRequest(Box::new(execute("b", "touch b", four_options()))),
    );
    // The policy answered the second one: the first stays open.
    chat.message(
        40,
        AgentMessage::PermissionResolved {
            id: "b".into(),
            outcome: "never".into(),
            by: PermissionResolver::Policy,
            message: None,
        },
    );
    assert_eq!(chat.state.permission_prompts.len(), 1);
    assert_eq!(chat.state.permission_prompt().unwrap().id, "a");
    // The stop cancelled the first.
    chat.message(
        50,
        AgentMessage::PermissionResolved {
            id: "a".into(),
            outcome: PERMISSION_CANCELLED.into(),
            by: PermissionResolver::User,
            message: None,
        },
    );
    assert!(chat.state.permission_prompt().is_none());
    let outcomes: Vec<PermissionOutcome> = chat
        .permission_cells()
        .into_iter()
        .map(|cell| cell.outcome)
        .collect();
    assert_eq!(
        outcomes,
        [
            PermissionOutcome::Cancelled {
                by: PermissionResolver::User
            },
            PermissionOutcome::Chosen {
                kind: Some(PermissionOptionKind::RejectAlways),
                name: "Reject always".into(),
                by: PermissionResolver::Policy,
            },
        ]
    );
    // With the prompt gone, Esc stops the turn again.
    assert_eq!(
        chat.press(KeyCode::Esc),
        [AppEffect::Command(Command::Stop)]
    );
}

#[test]
fn a_policy_answer_with_no_prompt_is_recorded() {
    let mut chat = Chat::new();
    chat.start_turn(0, "make a file x");
    chat.message(
        10,
        AgentMessage::PermissionResolved {
            id: "9".into(),
            outcome: "proceed_once".into(),
            by: PermissionResolver::Policy,
            message: None,
        },
    );
    assert!(chat.state.permission_prompt().is_none());
    let cells = chat.permission_cells();
    assert_eq!(cells.len(), 1);
    let screen = chat.draw((80, 10));
    assert!(
        screen.contains("Permission request — answered proceed_once (policy)"),
        "{screen}"
    );
}

#[test]
fn the_prompt_closes_when_the_attempt_or_turn_ends() {
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    chat.message(
        30,
        AgentMessage::Cancelled {
            stop_stage: StopStage::Interrupt,
            elapsed_ms: 100,
        },
    );
    assert!(chat.state.permission_prompt().is_none());
    assert_eq!(
        chat.permission_cells()[0].outcome,
        PermissionOutcome::Cancelled {
            by: PermissionResolver::User
        }
    );

    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    chat.end(40, TurnOutcome::Completed);
    assert!(chat.state.permission_prompt().is_none());
    assert_eq!(
        chat.permission_cells()[0].outcome,
        PermissionOutcome::Unanswered
    );
    // A late key goes to the composer, not to a closed prompt.
    assert!(chat.char_key('y').is_empty());
    assert_eq!(chat.state.composer.text(), "y");
}

/// A key at `ms` after the chat's start.
fn key_at(chat: &mut Chat, ms: u64, code: KeyCode) -> Vec<AppEffect> {
    let modifiers = match code {
        KeyCode::Char(ch) if ch.is_uppercase() => KeyModifiers::SHIFT,
        _ => KeyModifiers::NONE,
    };
    let now = chat.at(ms);
    chat.state.on_key_at(KeyEvent::new(code, modifiers), now)
}

/// Types `text` from `start` ms, a key every `gap` ms; the effects of all the keys and the time
/// of the last.
fn type_at(chat: &mut Chat, start: u64, gap: u64, text: &str) -> (Vec<AppEffect>, u64) {
    let mut effects = Vec::new();
    let mut ms = start;
    for (index, ch) in text.chars().enumerate() {
        ms = start + gap * index as u64;
        effects.extend(key_at(chat, ms, KeyCode::Char(ch)));
    }
    (effects, ms)
}

#[test]
fn typing_with_pauses_never_answers_the_prompt_and_every_character_reaches_the_composer() {
    // The issue's sequence: a prompt opens as the user starts typing; a 1.2 s pause, then a
    // sentence that starts with `N` (reject always, before) and holds `n`, `y`-less words.
    let mut chat = Chat::new();
    chat.start_turn(0, "permission test");
    chat.message(
        20,
        AgentMessage::PermissionRequest(Box::new(execute("0", "touch x", four_options()))),
    );
    let (effects, last) = type_at(&mut chat, 40, 60, "Also fix the bug. ");
    assert!(effects.is_empty(), "{effects:?}");
    let (effects, last) = type_at(&mut chat, last + 1200, 60, "Now run the tests");
    assert!(effects.is_empty(), "{effects:?}");
    assert_eq!(
        chat.state.composer.text(),
        "Also fix the bug. Now run the tests"
    );
    // Minutes of quiet change nothing, and neither does any answer key typed after them.
    let (effects, last) = type_at(&mut chat, last + 120_000, 10, " yes 1 A N n r");
    assert!(effects.is_empty(), "{effects:?}");
    assert_eq!(
        chat.permission_cells()[0].outcome,
        PermissionOutcome::Waiting
    );
    let screen = chat.screen(BIG.0, BIG.1, last + 5000);
    assert!(
        screen.contains("Tab to answer — typing stays in the composer"),
        "{screen}"
    );
    assert!(screen.contains("Also fix the bug. Now run the tests yes 1 A N n r"));
    // Enter sends the draft (queued behind the running turn) and answers nothing; the queued
    // prompt shows under the prompt.
    assert_eq!(
        key_at(&mut chat, last + 5100, KeyCode::Enter),
        [
            AppEffect::Command(Command::Submit(
                "Also fix the bug. Now run the tests yes 1 A N n r".into()
            )),
            AppEffect::SavePrompt("Also fix the bug. Now run the tests yes 1 A N n r".into()),
        ]
    );
    chat.state
        .queued
        .push("Also fix the bug. Now run the tests yes 1 A N n r".into());
    let screen = chat.screen(BIG.0, BIG.1, last + 5200);
    assert!(
        screen.contains("↳ queued 1: Also fix the bug. Now run the tests"),
        "{screen}"
    );
    assert!(screen.contains("Permission needed"), "{screen}");
    assert_eq!(
        chat.permission_cells()[0].outcome,
        PermissionOutcome::Waiting
    );
    // Only the deliberate Tab gives the prompt the keys; then `y` answers.
    assert!(key_at(&mut chat, last + 5300, KeyCode::Tab).is_empty());
    let screen = chat.screen(BIG.0, BIG.1, last + 5300);
    assert!(screen.contains("answer with a key below"), "{screen}");
    assert_eq!(
        key_at(&mut chat, last + 5400, KeyCode::Char('y')),
        answer("0", Some("proceed_once"))
    );
}

#[test]
fn without_the_focus_every_key_kind_does_what_it_does_without_a_prompt() {
    let fresh = || Chat::waiting(execute("0", "touch x", four_options()));
    // Letters and digits that would answer it are typed.
    let mut chat = fresh();
    for (ms, ch) in [
        (100, 'y'),
        (900, 'A'),
        (2000, '1'),
        (2500, 'n'),
        (9000, 'N'),
    ] {
        assert!(key_at(&mut chat, ms, KeyCode::Char(ch)).is_empty());
    }
    assert_eq!(chat.state.composer.text(), "yA1nN");
    assert!(chat.state.permission_prompt().is_some());
    // Enter sends what was typed (queued behind the running turn), it does not answer.
    assert_eq!(
        key_at(&mut chat, 9500, KeyCode::Enter),
        vec![
            AppEffect::Command(Command::Submit("yA1nN".into())),
            AppEffect::SavePrompt("yA1nN".into()),
        ]
    );
    assert!(chat.state.permission_prompt().is_some());
    // Arrows are the composer's: Up recalls the prompt just sent, the selection stays.
    assert!(key_at(&mut chat, 9600, KeyCode::Up).is_empty());
    assert_eq!(chat.state.composer.text(), "yA1nN");
    assert_eq!(chat.state.permission_prompt().unwrap().selected, Some(0));
    // A paste is typing too.
    chat.state.on_paste(" pasted");
    assert_eq!(chat.state.composer.text(), "yA1nN pasted");
    // Esc stops the turn, as it does while typing; the stop cancels the request.
    let mut chat = fresh();
    assert_eq!(
        key_at(&mut chat, 100, KeyCode::Esc),
        [AppEffect::Command(Command::Stop)]
    );
    // Enter on an empty composer sends nothing and answers nothing, however long the quiet.
    let mut chat = fresh();
    assert!(key_at(&mut chat, 100, KeyCode::Enter).is_empty());
    assert!(key_at(&mut chat, 60_000, KeyCode::Enter).is_empty());
    assert!(chat.state.permission_prompt().is_some());
    assert_eq!(
        chat.permission_cells()[0].outcome,
        PermissionOutcome::Waiting
    );
}

#[test]
fn with_the_focus_the_prompt_takes_its_keys_and_gives_the_rest_back() {
    // Esc rejects (the turn goes on).
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    assert_eq!(
        key_at(&mut chat, 100, KeyCode::Esc),
        answer("0", Some("cancel"))
    );
    // Arrows move the selection, Enter chooses it.
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    assert!(key_at(&mut chat, 100, KeyCode::Down).is_empty());
    assert_eq!(chat.state.permission_prompt().unwrap().selected, Some(1));
    assert!(key_at(&mut chat, 110, KeyCode::Down).is_empty());
    assert_eq!(
        key_at(&mut chat, 120, KeyCode::Enter),
        answer("0", Some("cancel"))
    );
    // A key it has no use for is typing: it goes to the composer with the keys, and an answer
    // letter right after it is typed too.
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    assert!(key_at(&mut chat, 100, KeyCode::Char('h')).is_empty());
    assert!(key_at(&mut chat, 5000, KeyCode::Char('y')).is_empty());
    assert_eq!(chat.state.composer.text(), "hy");
    // Tab gives the keys back, and again to the prompt.
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    assert!(key_at(&mut chat, 100, KeyCode::Tab).is_empty());
    assert!(key_at(&mut chat, 200, KeyCode::Char('y')).is_empty());
    assert!(key_at(&mut chat, 300, KeyCode::Tab).is_empty());
    assert_eq!(
        key_at(&mut chat, 400, KeyCode::Char('n')),
        answer("0", Some("cancel"))
    );
    assert_eq!(chat.state.composer.text(), "y");
    // A paste never answers, focused or not.
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    chat.state.on_paste("y");
    assert_eq!(chat.state.composer.text(), "y");
    assert!(chat.state.permission_prompt().is_some());
}

#[test]
fn help_and_the_menu_still_open_over_a_prompt() {
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    chat.press(KeyCode::F(1));
    // The help's permission keys, scrolled into view.
    let mut help = String::new();
    for _ in 0..12 {
        help.push_str(&chat.draw(BIG));
        chat.press(KeyCode::PageDown);
    }
    assert!(help.contains("1-9 / y / n"), "{help}");
    assert!(help.contains("A / N"), "{help}");
    assert!(help.contains("Permission prompt"), "{help}");
    // Esc closes the help; the prompt is still there and takes the next Esc.
    assert!(chat.press(KeyCode::Esc).is_empty());
    assert!(chat.state.permission_prompt().is_some());
    assert_eq!(chat.press(KeyCode::Esc), answer("0", Some("cancel")));
}

#[test]
fn the_status_bar_says_the_turn_waits_for_the_user() {
    let mut chat = Chat::waiting(execute("0", "touch x", four_options()));
    let screen = chat.draw(BIG);
    let status = screen.lines().nth(usize::from(BIG.1) - 1).unwrap();
    assert!(
        status.contains("? waiting for your answer — Tab to answer"),
        "{status}"
    );
    chat.press(KeyCode::Tab);
    let screen = chat.draw(BIG);
    let status = screen.lines().nth(usize::from(BIG.1) - 1).unwrap();
    assert!(
        status.contains("? waiting for your answer — 1-2 or y/A/n/N, Esc rejects"),
        "{status}"
    );
    chat.char_key('y');
    let screen = chat.draw(BIG);
    let status = screen.lines().nth(usize::from(BIG.1) - 1).unwrap();
    assert!(!status.contains("waiting for your answer"), "{status}");
}

#[test]
fn execute_prompt_160x50_and_40x12() {
    let mut chat = Chat::asked(execute(
        "0",
        "touch x && ls -la /tmp/some/rather/long/directory/name/that/wraps",
        four_options(),
    ));
    insta::assert_snapshot!("execute_prompt_160x50", chat.draw(BIG));
    insta::assert_snapshot!("execute_prompt_40x12", chat.draw(SMALL));
}

#[test]
fn edit_prompt_with_a_diff_160x50_and_40x12() {
    let mut chat = Chat::asked(edit_request());
    insta::assert_snapshot!("edit_prompt_160x50", chat.draw(BIG));
    insta::assert_snapshot!("edit_prompt_40x12", chat.draw(SMALL));
}

#[test]
fn answered_requests_and_the_plan_stay_in_the_transcript() {
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    chat.message(
        15,
        AgentMessage::Plan {
            entries: vec![
                PlanEntry {
                    content: "Create the file".into(),
                    status: "in_progress".into(),
                    priority: "high".into(),
                },
                PlanEntry {
                    content: "List the directory".into(),
                    status: "pending".into(),
                    priority: "medium".into(),
                },
            ],
        },
    );
    chat.char_key('A');
    chat.press(KeyCode::Enter);
    chat.message(
        30,
        AgentMessage::PermissionResolved {
            id: "0".into(),
            outcome: "proceed_always".into(),
            by: PermissionResolver::User,
            message: None,
        },
    );
    chat.message(
        40,
        AgentMessage::ToolCompleted {
            id: "call-0".into(),
            output: String::new(),
        },
    );
    chat.message(
        50,
        AgentMessage::PermissionRequest(Box::new(edit_request())),
    );
    chat.message(
        60,
        AgentMessage::PermissionResolved {
            id: "7".into(),
            outcome: "cancel".into(),
            by: PermissionResolver::Policy,
            message: None,
        },
    );
    chat.message(
        70,
        AgentMessage::Plan {
            entries: vec![
                PlanEntry {
                    content: "Create the file".into(),
                    status: "completed".into(),
                    priority: "high".into(),
                },
                PlanEntry {
                    content: "List the directory".into(),
                    status: "in_progress".into(),
                    priority: "medium".into(),
                },
                PlanEntry {
                    content: "Report".into(),
                    status: "pending".into(),
                    priority: "low".into(),
                },
            ],
        },
    );
    chat.complete(80, None);
    insta::assert_snapshot!("answered_and_plan_80x24", chat.screen(80, 24, 100));
    // Expanded, the edit shows its diff.
    chat.ctrl('o');
    insta::assert_snapshot!("answered_expanded_80x40", chat.screen(80, 40, 100));
}

#[test]
fn the_plan_is_pinned_while_its_turn_runs_and_kept_in_the_transcript_after() {
    let plan = |done: usize| AgentMessage::Plan {
        entries: (0..3)
            .map(|index| PlanEntry {
                content: format!("step {index}"),
                status: match index.cmp(&done) {
                    std::cmp::Ordering::Less => "completed",
                    std::cmp::Ordering::Equal => "in_progress",
                    std::cmp::Ordering::Greater => "pending",
                }
                .into(),
                priority: "medium".into(),
            })
            .collect(),
    };
    let mut chat = Chat::new();
    chat.start_turn(0, "plan it");
    chat.message(10, plan(0));
    chat.message(20, plan(1));
    assert!(
        chat.plan_cells().is_empty(),
        "while the turn runs the plan is pinned above the input, not in the transcript"
    );
    assert_eq!(chat.state.live_plan().map(PlanCell::done), Some((1, 3)));
    chat.delta(30, "Working on step 1.");
    let screen = chat.draw((60, 16));
    let rows: Vec<&str> = screen.lines().collect();
    let header = rows
        .iter()
        .position(|row| row.contains("≡ Plan · 1 of 3 done") && row.contains("Ctrl+P folds"))
        .unwrap_or_else(|| panic!("the pinned plan's header: {screen}"));
    assert!(rows[header + 1].contains("✔ step 0"), "{screen}");
    assert!(rows[header + 2].contains("◐ step 1"), "{screen}");
    assert!(rows[header + 3].contains("□ step 2"), "{screen}");
    assert!(
        rows[header + 4].contains("Enter queues"),
        "right above the input: {screen}"
    );
    // Folded, one row says where the plan is.
    chat.ctrl('p');
    let screen = chat.draw((60, 16));
    assert!(
        screen.contains("≡ Plan · 1 of 3 done · ◐ step 1 ─ Ctrl+P shows the steps"),
        "{screen}"
    );
    assert!(!screen.contains("□ step 2"), "{screen}");
    chat.ctrl('p');

    chat.complete(40, None);
    assert!(chat.state.live_plan().is_none());
    let plans = chat.plan_cells();
    assert_eq!(plans.len(), 1, "the turn's last plan, once");
    assert_eq!(plans[0].done(), (1, 3));

    // The next turn's plan goes below, and the earlier one folds.
    chat.start_turn(50, "go on");
    chat.message(60, plan(3));
    chat.complete(70, None);
    let plans = chat.plan_cells();
    assert_eq!(plans.len(), 2);
    assert!(plans[0].superseded && !plans[0].expanded);
    assert_eq!(plans[1].done(), (3, 3));
    let screen = chat.draw((60, 16));
    assert!(
        screen.contains("Earlier plan · 1 of 3 done · replaced below"),
        "{screen}"
    );
    assert!(screen.contains("≡ Plan · 3 of 3 done"), "{screen}");
    assert!(
        !screen.contains("Ctrl+P folds"),
        "no plan is pinned between turns: {screen}"
    );
}

#[test]
fn agent_text_in_a_request_reaches_the_terminal_inert() {
    let hostile = "rm x\x1b[2J\x1b]52;c;aGk=\x07\u{9b}31m\r";
    let mut request = execute("0", hostile, four_options());
    request.kind = "exe\x1b[31mcute".into();
    request.options[0].name = "Allow\x1b]0;pwned\x07".into();
    request.paths = vec!["a\x1b[1m.rs".into()];
    request.diffs = vec![FileDiff {
        path: "b\x1b[2J.rs".into(),
        old_text: Some("old\x1b[31m\n".into()),
        new_text: "new\x07\n".into(),
    }];
    let mut chat = Chat::asked(request);
    for size in [BIG, SMALL] {
        let terminal = chat.terminal(size.0, size.1, 500);
        assert_no_control_character(&terminal);
    }
    // Neutralised by agentty, not only dropped by ratatui: the escapes show, inert.
    let screen = chat.screen(BIG.0, BIG.1, 500);
    assert!(screen.contains("rm x␛[2J"), "{screen}");
}

#[test]
fn tiny_screens_never_panic_and_keep_the_options() {
    let mut chat = Chat::asked(edit_request());
    for (width, height) in [
        (1, 1),
        (2, 2),
        (10, 3),
        (20, 5),
        (40, 6),
        (12, 40),
        (200, 4),
    ] {
        chat.screen(width, height, 500);
    }
    let screen = chat.screen(40, 9, 500);
    for option in ["Allow", "Allow always", "Reject", "Reject always"] {
        assert!(screen.contains(option), "{option}\n{screen}");
    }
}

fn reject_with(id: &str, option: &str, note: &str) -> Vec<AppEffect> {
    vec![AppEffect::Command(Command::AnswerPermission {
        id: id.into(),
        option: Some(option.into()),
        message: Some(note.into()),
    })]
}

#[test]
fn r_opens_a_line_and_enter_rejects_with_what_to_do_instead() {
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    let screen = chat.draw(BIG);
    assert!(
        screen.contains("r  Reject, say what to do instead"),
        "{screen}"
    );
    assert!(chat.char_key('r').is_empty());
    assert_eq!(
        chat.state.permission_prompt().unwrap().feedback.as_deref(),
        Some("")
    );
    // Every key is the note's now, answer letters included; nothing reaches the composer.
    assert!(chat.type_text("use mkdirr").is_empty());
    assert!(chat.press(KeyCode::Backspace).is_empty());
    chat.state.on_paste(" -p\nplease");
    assert!(chat.state.composer.is_empty());
    let screen = chat.draw(BIG);
    assert!(
        screen.contains("What should the agent do instead?"),
        "{screen}"
    );
    assert!(screen.contains("› use mkdir -p please"), "{screen}");
    assert!(screen.contains("reject with a note"), "{screen}");
    assert_eq!(
        chat.press(KeyCode::Enter),
        reject_with("0", "cancel", "use mkdir -p please")
    );
    let cell = &chat.permission_cells()[0];
    assert_eq!(
        cell.outcome,
        chosen(PermissionOptionKind::RejectOnce, "Reject")
    );
    assert_eq!(cell.feedback.as_deref(), Some("use mkdir -p please"));
    let screen = chat.draw(BIG);
    assert!(
        screen.contains("rejected (you) · instead: use mkdir -p please"),
        "{screen}"
    );
}

#[test]
fn esc_leaves_the_note_and_an_empty_note_is_a_plain_rejection() {
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    chat.char_key('r');
    chat.type_text("never mind");
    // Esc goes back to the options: nothing is sent, the prompt still asks.
    assert!(chat.press(KeyCode::Esc).is_empty());
    let prompt = chat.state.permission_prompt().unwrap();
    assert_eq!(prompt.feedback, None);
    assert_eq!(
        chat.permission_cells()[0].outcome,
        PermissionOutcome::Waiting
    );
    chat.char_key('r');
    chat.type_text("  ");
    assert_eq!(chat.press(KeyCode::Enter), answer("0", Some("cancel")));

    // Before the prompt has the keys, `r` is typing like any key.
    let mut chat = Chat::waiting(execute("0", "touch x", four_options()));
    assert!(key_at(&mut chat, 100, KeyCode::Char('r')).is_empty());
    assert_eq!(chat.state.composer.text(), "r");
    assert_eq!(chat.state.permission_prompt().unwrap().feedback, None);

    // With nothing to reject with, `r` offers nothing and is typing.
    let mut chat = Chat::asked(execute(
        "1",
        "ls",
        vec![option("ok", PermissionOptionKind::AllowOnce, "Yes")],
    ));
    assert!(!chat.draw(BIG).contains("say what to do instead"));
    assert!(chat.char_key('r').is_empty());
    assert_eq!(chat.state.composer.text(), "r");
}

#[test]
fn a_rejection_that_ends_the_turn_says_so() {
    let resolved = |chat: &mut Chat, ms, message: Option<&str>| {
        chat.message(
            ms,
            AgentMessage::PermissionResolved {
                id: "0".into(),
                outcome: "cancel".into(),
                by: PermissionResolver::User,
                message: message.map(Into::into),
            },
        );
    };
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    chat.char_key('n');
    resolved(&mut chat, 30, None);
    // The refused call's failure is not the agent going on.
    chat.message(
        40,
        AgentMessage::ToolFailed {
            id: "call-0".into(),
            error: "refused".into(),
        },
    );
    chat.complete(50, None);
    let screen = chat.draw(BIG);
    assert!(
        screen.contains("The agent ended the turn at the rejection (Allow execute: touch x)."),
        "{screen}"
    );

    // An agent that goes on after the rejection ended the turn itself.
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    chat.char_key('n');
    resolved(&mut chat, 30, None);
    chat.delta(40, "I did not run it.");
    chat.complete(50, None);
    assert!(!chat.draw(BIG).contains("ended the turn at the rejection"));

    // The note, recorded with the answer (as a resumed log replays it), shows on the cell; the
    // orchestrator's notice says where it went.
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    resolved(&mut chat, 30, Some("use mkdir"));
    chat.event(
        31,
        agentty::orchestrator::OrchestratorEvent::Notice {
            turn: chat.turn,
            kind: "permission_feedback".into(),
            message: "use mkdir".into(),
        },
    );
    assert_eq!(
        chat.permission_cells()[0].feedback.as_deref(),
        Some("use mkdir")
    );
    let screen = chat.draw(BIG);
    assert!(
        screen.contains("so yours goes to it as the next prompt: use mkdir"),
        "{screen}"
    );
}

#[test]
fn a_tool_waiting_for_the_answer_says_so_and_the_wait_is_not_running_time() {
    // The call starts at 10 ms and is asked about at 20 ms.
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    let screen = chat.screen(BIG.0, BIG.1, 5000);
    let tool = screen.lines().find(|line| line.contains("shell")).unwrap();
    assert!(tool.contains("? shell · waiting for you"), "{tool}");
    assert!(!tool.contains("running"), "{tool}");
    // Answered at 5 s: the call's clock goes on from the 10 ms it had run.
    chat.char_key('y');
    chat.message(
        5000,
        AgentMessage::PermissionResolved {
            id: "0".into(),
            outcome: "proceed_once".into(),
            by: PermissionResolver::User,
            message: None,
        },
    );
    let screen = chat.screen(BIG.0, BIG.1, 6000);
    let tool = screen.lines().find(|line| line.contains("shell")).unwrap();
    assert!(tool.contains("⋯ shell · running 1.0 s"), "{tool}");
    let status = screen.lines().last().unwrap();
    assert!(status.contains("⚙ running shell 1.0 s"), "{status}");
    chat.message(
        7000,
        AgentMessage::ToolCompleted {
            id: "call-0".into(),
            output: "ok".into(),
        },
    );
    let screen = chat.screen(BIG.0, BIG.1, 7000);
    let tool = screen.lines().find(|line| line.contains("shell")).unwrap();
    assert!(tool.contains("✓ shell · done 2.0 s"), "{tool}");

    // A call still waiting when the attempt ends ran only what it ran before the request.
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    chat.end(9000, TurnOutcome::Completed);
    let screen = chat.screen(BIG.0, BIG.1, 9000);
    let tool = screen.lines().find(|line| line.contains("shell")).unwrap();
    assert!(tool.contains("no result 0.0 s"), "{tool}");
}

#[test]
fn slash_permissions_lists_the_always_answers_and_how_to_take_them_back() {
    let mut chat = Chat::new();
    chat.state.on_agent_started(
        crate::support::chat::capabilities_of(agentty::config::Transport::Acp),
        None,
    );
    chat.type_text("/permissions");
    chat.press(KeyCode::Enter);
    let screen = chat.draw(BIG);
    assert!(
        screen.contains("Nothing was allowed or refused always in this conversation."),
        "{screen}"
    );
    chat.start_turn(10, "make a file x");
    chat.message(
        20,
        AgentMessage::PermissionRequest(Box::new(execute("0", "touch x", four_options()))),
    );
    chat.press(KeyCode::Tab);
    assert!(chat.char_key('A').is_empty());
    assert_eq!(
        chat.press(KeyCode::Enter),
        answer("0", Some("proceed_always"))
    );
    chat.message(
        30,
        AgentMessage::PermissionRequest(Box::new(execute("1", "rm -rf /", four_options()))),
    );
    chat.message(
        40,
        AgentMessage::PermissionResolved {
            id: "1".into(),
            outcome: "never".into(),
            by: PermissionResolver::Policy,
            message: None,
        },
    );
    chat.message(
        50,
        AgentMessage::PermissionRequest(Box::new(execute("2", "ls", four_options()))),
    );
    chat.press(KeyCode::Tab);
    assert_eq!(chat.char_key('y'), answer("2", Some("proceed_once")));
    chat.complete(60, None);
    chat.type_text("/permissions");
    chat.press(KeyCode::Enter);
    let screen = chat.screen(BIG.0, BIG.1, 100);
    for said in [
        "Answered always in this conversation (agentty's record of the answers; the agent keeps its own):",
        "✓ Allow execute: touch x — Allow always (you)",
        "✗ Allow execute: rm -rf / — Reject always (policy)",
        "the Agent Client Protocol has no request to revoke it",
        "the new agent session asks again.",
    ] {
        assert!(screen.contains(said), "{said:?} missing:\n{screen}");
    }
    assert!(!screen.contains("ls — Allow (you)"), "{screen}");
}

#[test]
fn at_40x12_the_change_being_approved_scrolls_into_view_and_no_scroll_key_answers() {
    let mut chat = Chat::asked(edit_request());
    let options = chat.draw(SMALL);
    assert!(
        options.contains("PgDn diff"),
        "the key is shown:\n{options}"
    );
    let mut seen = String::new();
    for _ in 0..80 {
        assert!(chat.press(KeyCode::PageDown).is_empty(), "never an answer");
        let screen = chat.draw(SMALL);
        seen.push_str(&screen);
        if screen.contains("pub fn new() {}") {
            break;
        }
    }
    eprintln!("the change at 40x12:\n{}", chat.draw(SMALL));
    for row in ["line five", "line thirty-one and a half", "pub fn new() {}"] {
        assert!(seen.contains(row), "{row} never came into view:\n{seen}");
    }
    let screen = chat.draw(SMALL);
    assert!(screen.contains("PgUp"), "{screen}");
    assert!(screen.contains("Esc rejects"), "Esc stays named:\n{screen}");
    assert!(chat.state.permission_prompt().is_some(), "still open");
    for _ in 0..80 {
        assert!(chat.press(KeyCode::PageUp).is_empty());
    }
    let back = chat.draw(SMALL);
    assert!(
        back.contains("Allow always"),
        "PgUp at the top: the options\n{back}"
    );
    assert_eq!(
        chat.permission_cells()[0].outcome,
        PermissionOutcome::Waiting,
        "unanswered"
    );
}
