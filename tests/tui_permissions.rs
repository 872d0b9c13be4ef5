//! Permission requests and plans in the chat: the prompt that opens over the composer, the one
//! key per option (numbers in the agent's order, y / a / n / N by kind), Esc that rejects
//! instead of stopping, the answer sent to the orchestrator, the queue of requests, the prompt
//! closing on a resolution or the turn's end, the cell that records the outcome, the status bar,
//! and the plan checklist. Drawn at 160x50 and 40x12 (and smaller, which must not panic).

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use agentty::app::state::AppEffect;
use agentty::app::transcript::{CellBody, PermissionCell, PermissionOutcome, PlanCell};
use agentty::orchestrator::{Command, TurnOutcome};
use agentty::stream::{
    AgentMessage, FileDiff, PermissionOption, PermissionOptionKind, PermissionRequest,
    PermissionResolver, PlanEntry, StopStage, PERMISSION_CANCELLED,
};

#[path = "support/chat.rs"]
mod chat;

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

impl Chat {
    fn new() -> Self {
        Self::with_startup(startup("gemini", Some("gemini-2.5-pro"), None))
    }

    /// A turn whose agent asks `request`.
    fn asked(request: PermissionRequest) -> Self {
        let mut chat = Self::new();
        chat.start_turn(0, "make a file x");
        chat.message(
            10,
            AgentMessage::ToolCall {
                id: request.tool_call_id.clone().unwrap_or_default(),
                name: "shell".into(),
                input: serde_json::json!({"command": request.command.clone().unwrap_or_default()}),
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
                CellBody::Permission(permission) => Some(permission.clone()),
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
        self.screen(width, height, 500)
    }
}

fn answer(id: &str, option: Option<&str>) -> Vec<AppEffect> {
    vec![AppEffect::Command(Command::AnswerPermission {
        id: id.into(),
        option: option.map(Into::into),
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
fn each_option_has_one_key_a_number_and_a_letter_by_kind() {
    let cases = [
        ('1', "proceed_once"),
        ('2', "proceed_always"),
        ('3', "cancel"),
        ('4', "never"),
        ('y', "proceed_once"),
        ('a', "proceed_always"),
        ('n', "cancel"),
        ('N', "never"),
    ];
    for (key, expected) in cases {
        let mut chat = Chat::asked(execute("0", "touch x", four_options()));
        assert_eq!(chat.char_key(key), answer("0", Some(expected)), "key {key}");
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
    // Keys that name nothing the agent offered do nothing (and type nothing).
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    for key in ['5', '0', 'x', 'q'] {
        assert!(chat.char_key(key).is_empty(), "key {key}");
    }
    assert!(chat.state.permission_prompt().is_some());
    assert!(chat.state.composer.is_empty());
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

#[test]
fn keys_typed_as_the_prompt_appears_do_not_answer_it() {
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    let key = |ch| KeyEvent::new(KeyCode::Char(ch), KeyModifiers::NONE);
    // The request arrived at 20 ms: a key 100 ms later is ignored, one 500 ms later answers.
    let early = chat.at(120);
    assert!(chat.state.on_key_at(key('a'), early).is_empty());
    assert!(chat
        .state
        .on_key_at(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE), early)
        .is_empty());
    assert!(chat.state.permission_prompt().is_some());
    assert!(
        chat.state.composer.is_empty(),
        "nothing is typed behind the prompt"
    );
    let later = chat.at(520);
    assert_eq!(
        chat.state.on_key_at(key('y'), later),
        answer("0", Some("proceed_once"))
    );
    // Esc is never held back.
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    let early = chat.at(30);
    assert_eq!(
        chat.state
            .on_key_at(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE), early),
        answer("0", Some("cancel"))
    );
    // The next prompt of a queue is held back from the moment it comes to the front.
    let mut chat = Chat::asked(execute("a", "touch a", four_options()));
    chat.message(
        30,
        AgentMessage::PermissionRequest(Box::new(execute("b", "touch b", four_options()))),
    );
    let first = chat.at(600);
    assert_eq!(
        chat.state.on_key_at(key('y'), first),
        answer("a", Some("proceed_once"))
    );
    let again = first + Duration::from_millis(50);
    assert!(chat.state.on_key_at(key('y'), again).is_empty());
    assert_eq!(chat.state.permission_prompt().unwrap().id, "b");
}

#[test]
fn help_and_the_menu_still_open_over_a_prompt_and_paste_waits() {
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    chat.press(KeyCode::F(1));
    let help = chat.draw(BIG);
    assert!(help.contains("1-9 / y a n N"), "{help}");
    assert!(help.contains("Esc (permission)"), "{help}");
    // Esc closes the help; the prompt is still there and takes the next Esc.
    assert!(chat.press(KeyCode::Esc).is_empty());
    assert!(chat.state.permission_prompt().is_some());
    chat.state.on_paste("pasted");
    assert!(chat.state.composer.is_empty());
    assert_eq!(chat.press(KeyCode::Esc), answer("0", Some("cancel")));
}

#[test]
fn the_status_bar_says_the_turn_waits_for_the_user() {
    let mut chat = Chat::asked(execute("0", "touch x", four_options()));
    let screen = chat.draw(BIG);
    let status = screen.lines().nth(usize::from(BIG.1) - 1).unwrap();
    assert!(
        status.contains("? waiting for your answer — 1-4 or y/a/n/N, Esc rejects"),
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
    chat.char_key('a');
    chat.message(
        30,
        AgentMessage::PermissionResolved {
            id: "0".into(),
            outcome: "proceed_always".into(),
            by: PermissionResolver::User,
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
fn a_plan_replaces_itself_in_place_or_leaves_an_earlier_plan_behind() {
    let plan = |done: usize| AgentMessage::Plan {
        entries: (0..3)
            .map(|index| PlanEntry {
                content: format!("step {index}"),
                status: if index < done { "completed" } else { "pending" }.into(),
                priority: "medium".into(),
            })
            .collect(),
    };
    let mut chat = Chat::new();
    chat.start_turn(0, "plan it");
    chat.message(10, plan(0));
    chat.message(20, plan(1));
    let plans = chat.plan_cells();
    assert_eq!(plans.len(), 1, "consecutive plans replace one another");
    assert_eq!(plans[0].done(), (1, 3));
    chat.delta(30, "Working on step 2.");
    chat.message(40, plan(2));
    let plans = chat.plan_cells();
    assert_eq!(plans.len(), 2);
    assert!(plans[0].superseded && !plans[0].expanded);
    assert!(!plans[1].superseded);
    assert_eq!(plans[1].done(), (2, 3));
    let screen = chat.draw((60, 16));
    assert!(
        screen.contains("Earlier plan · 1 of 3 done · replaced below"),
        "{screen}"
    );
    assert!(screen.contains("≡ Plan · 2 of 3 done"), "{screen}");
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
