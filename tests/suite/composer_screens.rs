//! The composer and the screens around it (issue 17), drawn on ratatui's `TestBackend` and
//! compared with reviewed insta snapshots at 160x50 and 40x12: the wrapping input, the `/` and
//! `@` popups, the help scrolled, a table too wide for the screen, the first-start screen. Also
//! the keys: readline editing, Ctrl+C with a draft, the expiring quit confirmation, the queue
//! coming back into the editor, history search, and the scroll position kept across a resize.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use agentty::app::state::{AppEffect, ScrollAction};
use agentty::orchestrator::{Command, OrchestratorEvent, TurnOutcome};
use agentty::stream::AgentMessage;

const BIG: (u16, u16) = (160, 50);
const SMALL: (u16, u16) = (40, 12);

use crate::support::chat;

use chat::{startup, Chat};

/// This module's helpers on the suite's test chat (a trait: each module adds its own).
trait ComposerScreensChat {
    fn new() -> Self;
    fn answer(&mut self, ms: u64, text: &str);
    /// The screen at `(width, height)`, drawn at `t0`.
    fn draw(&mut self, size: (u16, u16)) -> String;
}

impl ComposerScreensChat for Chat {
    fn new() -> Self {
        let mut chat = Self::with_startup(startup(
            "demo",
            None,
            Some("/home/user/.config/agentty/config.toml"),
        ));
        chat.state.provider_reason = Some("no provider was chosen and pi is not on PATH".into());
        chat
    }

    fn answer(&mut self, ms: u64, text: &str) {
        self.delta(ms, text);
    }

    /// The screen at `(width, height)`, drawn at `t0`.
    fn draw(&mut self, (width, height): (u16, u16)) -> String {
        self.screen(width, height, 0)
    }
}

fn files() -> Vec<String> {
    [
        "Cargo.toml",
        "README.md",
        "src/main.rs",
        "src/app/state.rs",
        "src/app/composer.rs",
        "src/view/markdown.rs",
        "docs/design notes.md",
    ]
    .map(String::from)
    .to_vec()
}

const LONG_PROMPT: &str = "Please read the README and the design notes, then explain how the orchestrator retries a failed turn without duplicating the prompt";

// ---- the composer ----

#[test]
fn the_composer_wraps_a_long_prompt() {
    let mut chat = Chat::new();
    chat.type_text(LONG_PROMPT);
    let narrow = chat.draw((60, 16));
    insta::assert_snapshot!("wrapped_prompt_60_columns", narrow);
    // Three rows at 60 columns, and every word of the prompt is on screen.
    let rows: Vec<&str> = narrow.lines().collect();
    assert!(rows[12].contains("Please read the README"), "{narrow}");
    assert!(rows[14].contains("duplicating the prompt"), "{narrow}");
    insta::assert_snapshot!("wrapped_prompt_160x50", chat.draw(BIG));
    insta::assert_snapshot!("wrapped_prompt_40x12", chat.draw(SMALL));
}

#[test]
fn the_composer_grows_to_a_limit_then_scrolls_to_the_cursor() {
    let mut chat = Chat::new();
    for line in 1..=12 {
        chat.type_text(&format!("line {line}"));
        chat.key(KeyCode::Enter, KeyModifiers::ALT);
    }
    chat.type_text("the end");
    let screen = chat.draw((60, 30));
    // Eight rows at most; the cursor's row (the last) is shown.
    assert!(screen.contains("the end"), "{screen}");
    assert!(!screen.contains("line 5\""), "{screen}");
    assert!(screen.contains("line 6"), "{screen}");
    chat.ctrl('a');
    for _ in 0..12 {
        chat.press(KeyCode::Up);
    }
    let screen = chat.draw((60, 30));
    assert!(
        screen.contains("line 1 "),
        "scrolled up with the cursor: {screen}"
    );
}

#[test]
fn readline_keys_edit_and_the_menu_moved_to_ctrl_x() {
    let mut chat = Chat::new();
    chat.type_text("hello brave world");
    chat.key(KeyCode::Char('b'), KeyModifiers::ALT);
    assert!(chat.ctrl('k').is_empty());
    assert!(
        chat.state.overlay.is_none(),
        "Ctrl+K no longer opens the menu"
    );
    assert_eq!(chat.state.composer.text(), "hello brave ");
    chat.ctrl('u');
    assert_eq!(
        chat.state.composer.text(),
        "",
        "Ctrl+U clears to the line start"
    );
    chat.ctrl('y');
    assert_eq!(chat.state.composer.text(), "hello brave ");
    chat.ctrl('x');
    assert!(chat.state.overlay.is_some(), "Ctrl+X opens the menu");
    chat.press(KeyCode::Esc);
    chat.press(KeyCode::F(2));
    assert!(chat.state.overlay.is_some(), "F2 still does");
    chat.press(KeyCode::Esc);
    assert!(chat.draw((80, 6)).contains("Ctrl+X actions"));
}

#[test]
fn a_blank_prompt_is_not_sent_and_leaves_nothing_behind() {
    let mut chat = Chat::new();
    chat.type_text("   ");
    assert!(chat.press(KeyCode::Enter).is_empty());
    assert_eq!(chat.state.composer.text(), "");
    chat.type_text("hi");
    assert_eq!(
        chat.press(KeyCode::Enter)[0],
        AppEffect::Command(Command::Submit("hi".into()))
    );
}

// ---- Ctrl+C and quitting ----

#[test]
fn ctrl_c_clears_a_draft_that_up_brings_back() {
    let mut chat = Chat::new();
    chat.type_text("half a thought");
    assert!(chat.ctrl('c').is_empty());
    assert_eq!(chat.state.composer.text(), "");
    // Only a second Ctrl+C right after it would quit (within a second; any key between
    // ends that).
    assert!(chat.state.quit_armed);
    chat.press(KeyCode::Up);
    assert!(!chat.state.quit_armed);
    assert_eq!(chat.state.composer.text(), "half a thought");
}

#[test]
fn the_quit_confirmation_expires() {
    let mut chat = Chat::new();
    let now = chat.at(0);
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(chat.state.on_key_at(ctrl_c, now).is_empty());
    assert!(chat.state.quit_armed);
    assert!(chat.state.needs_clock(), "the loop must wake to expire it");
    chat.state.on_clock(chat.at(1_000));
    assert!(chat.state.quit_armed);
    chat.state.on_clock(chat.at(2_500));
    assert!(!chat.state.quit_armed);
    assert!(!chat.draw((60, 6)).contains("again to quit"));
    // After expiry Ctrl+C arms again instead of quitting.
    assert!(chat.state.on_key_at(ctrl_c, chat.at(3_000)).is_empty());
    assert_eq!(
        chat.state.on_key_at(ctrl_c, chat.at(3_500)),
        vec![AppEffect::Leave]
    );
}

#[test]
fn ctrl_z_suspends() {
    let mut chat = Chat::new();
    assert_eq!(chat.ctrl('z'), vec![AppEffect::Suspend]);
}

// ---- the queue ----

/// A chat whose turn "first" runs with `queued` waiting behind it.
fn running_with_a_queue(queued: &[&str]) -> Chat {
    let mut chat = Chat::new();
    chat.start_turn(0, "first");
    chat.event(
        10,
        OrchestratorEvent::QueueChanged {
            queued: queued.iter().map(|prompt| prompt.to_string()).collect(),
        },
    );
    chat
}

#[test]
fn a_stopped_turn_gives_the_queue_back_to_the_editor() {
    let mut chat = running_with_a_queue(&["second", "third"]);
    chat.type_text("draft");
    assert_eq!(
        chat.press(KeyCode::Esc),
        vec![AppEffect::Command(Command::Stop)]
    );
    let effects = chat.end(20, TurnOutcome::Cancelled);
    assert_eq!(
        effects,
        vec![
            AppEffect::Command(Command::RemoveQueued(0)),
            AppEffect::Command(Command::RemoveQueued(0)),
        ]
    );
    // Each comes back as its own prompt, one at a time, the draft after them.
    assert_eq!(chat.state.composer.text(), "second");
    assert!(chat.state.queued.is_empty());
    assert!(chat
        .draw((80, 12))
        .contains("2 queued prompts back in the editor"));
    // Ctrl+C drops one at a time (more than a second apart: twice within a second quits).
    let ctrl_c_at = |chat: &mut Chat, ms: u64| {
        let now = chat.at(ms);
        chat.state.on_clock(now);
        chat.state.on_key_at(
            KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
            now,
        )
    };
    assert!(ctrl_c_at(&mut chat, 2_000).is_empty());
    assert_eq!(chat.state.composer.text(), "third");
    assert!(ctrl_c_at(&mut chat, 3_500).is_empty());
    assert_eq!(chat.state.composer.text(), "draft");
    assert!(ctrl_c_at(&mut chat, 5_000).is_empty());
    assert_eq!(chat.state.composer.text(), "");
}

#[test]
fn a_completed_turn_leaves_the_queue_to_the_orchestrator() {
    let mut chat = running_with_a_queue(&["second"]);
    assert!(chat.end(20, TurnOutcome::Completed).is_empty());
    assert_eq!(chat.state.composer.text(), "");
}

#[test]
fn alt_up_pulls_the_last_queued_prompt_back() {
    let mut chat = running_with_a_queue(&["second", "third"]);
    assert_eq!(
        chat.key(KeyCode::Up, KeyModifiers::ALT),
        vec![AppEffect::Command(Command::RemoveQueued(1))]
    );
    assert_eq!(chat.state.composer.text(), "third");
    // Dropped by clearing it (and still recallable with Up).
    chat.ctrl('c');
    assert_eq!(chat.state.composer.text(), "");
}

// ---- history ----

#[test]
fn ctrl_r_searches_earlier_prompts() {
    let mut chat = Chat::new();
    chat.state.composer.load_history(vec![
        "explain the retry policy".into(),
        "list the files".into(),
        "fix the failing test".into(),
    ]);
    chat.ctrl('r');
    chat.type_text("retry");
    let screen = chat.draw((60, 16));
    assert!(screen.contains("explain the retry policy"), "{screen}");
    assert!(!screen.contains("list the files"), "{screen}");
    chat.press(KeyCode::Enter);
    assert!(chat.state.overlay.is_none());
    assert_eq!(chat.state.composer.text(), "explain the retry policy");
}

// ---- popups ----

#[test]
fn the_slash_popup_filters_and_completes() {
    let mut chat = Chat::new();
    chat.type_text("/");
    insta::assert_snapshot!("slash_popup_160x50", chat.draw(BIG));
    insta::assert_snapshot!("slash_popup_40x12", chat.draw(SMALL));
    chat.type_text("pr");
    let popup = chat.state.popup.as_ref().expect("popup");
    assert_eq!(popup.items.len(), 1);
    assert_eq!(popup.items[0].label, "/provider");
    chat.press(KeyCode::Tab);
    assert_eq!(chat.state.composer.text(), "/provider ");
    assert!(chat.state.popup.is_none(), "an argument follows: no popup");
    // Enter on /provider (no name yet) opens the picker.
    chat.state.composer.set_text("");
    chat.type_text("/prov");
    chat.press(KeyCode::Enter);
    assert!(matches!(
        chat.state.overlay,
        Some(agentty::app::menu::Overlay::ProviderPicker { .. })
    ));
    chat.press(KeyCode::Esc);
    // Enter on a listed command runs it.
    chat.state.composer.set_text("");
    chat.type_text("/he");
    chat.press(KeyCode::Enter);
    assert!(matches!(
        chat.state.overlay,
        Some(agentty::app::menu::Overlay::Help { .. })
    ));
    // Esc hides the popup; typing on shows it again.
    chat.press(KeyCode::Esc);
    chat.type_text("/n");
    chat.press(KeyCode::Esc);
    assert!(chat.state.popup.is_none());
    chat.type_text("e");
    assert!(chat.state.popup.is_some());
}

#[test]
fn the_mention_popup_lists_files_and_the_agent_gets_the_path() {
    let mut chat = Chat::new();
    let effects = chat.type_text("explain @");
    assert_eq!(
        effects,
        vec![AppEffect::ListFiles],
        "files are listed once, on demand"
    );
    assert!(chat.draw((60, 14)).contains("listing files"));
    chat.state.on_files_listed(files());
    chat.type_text("stat");
    insta::assert_snapshot!("mention_popup_160x50", chat.draw(BIG));
    insta::assert_snapshot!("mention_popup_40x12", chat.draw(SMALL));
    chat.press(KeyCode::Tab);
    assert_eq!(chat.state.composer.text(), "explain @src/app/state.rs");
    assert!(
        chat.state.popup.is_none(),
        "the file is chosen: Enter sends"
    );
    let effects = chat.type_text(" and @design");
    assert_eq!(
        effects,
        vec![AppEffect::ListFiles],
        "a new mention lists the files again (once)"
    );
    chat.press(KeyCode::Enter);
    assert_eq!(
        chat.state.composer.text(),
        "explain @src/app/state.rs and @\"docs/design notes.md\""
    );
    let effects = chat.press(KeyCode::Enter);
    assert_eq!(
        effects[0],
        AppEffect::Command(Command::Submit(
            "explain src/app/state.rs and \"docs/design notes.md\"".into()
        ))
    );
}

// ---- screens that fit ----

#[test]
fn help_scrolls_at_40x12() {
    let mut chat = Chat::new();
    chat.press(KeyCode::F(1));
    let top = chat.draw(SMALL);
    assert!(top.contains("↓"), "more below is marked: {top}");
    for _ in 0..3 {
        chat.press(KeyCode::PageDown);
    }
    insta::assert_snapshot!("help_scrolled_40x12", chat.draw(SMALL));
    insta::assert_snapshot!("help_160x50", chat.draw(BIG));
    // The keys scroll what the screen last showed.
    chat.draw(SMALL);
    chat.press(KeyCode::End);
    let bottom = chat.draw(SMALL);
    assert!(
        bottom.contains("permission note"),
        "the last keys are reachable: {bottom}"
    );
    // One Up from the end moves at once (no hidden overshoot to climb back first).
    chat.press(KeyCode::Up);
    assert_ne!(chat.draw(SMALL), bottom);
}

#[test]
fn the_menu_keeps_its_selection_in_view_at_40x12() {
    let mut chat = Chat::new();
    chat.ctrl('x');
    chat.press(KeyCode::Up); // wraps to the last item, Quit
    let screen = chat.draw(SMALL);
    assert!(screen.contains("Quit"), "{screen}");
}

const TABLE_ANSWER: &str = "Transports:\n\n| Provider | Transport | Notes |\n|---|---|---|\n| pi | json, rpc | the default when it is on PATH |\n| claude | json | stream-json on stdout |\n| codex | json | exec --json |\n";

#[test]
fn a_table_too_wide_reads_as_records() {
    let mut chat = Chat::new();
    chat.start_turn(0, "which transports?");
    chat.answer(10, TABLE_ANSWER);
    chat.end(20, TurnOutcome::Completed);
    let big = chat.draw(BIG);
    assert!(big.contains("pi       │ json, rpc │ the default"), "{big}");
    insta::assert_snapshot!("narrow_table_160x50", big);
    let small = chat.draw(SMALL);
    assert!(small.contains("Provider: codex"), "{small}");
    assert!(!small.contains("│ json"), "no broken grid: {small}");
    insta::assert_snapshot!("narrow_table_40x12", small);
}

#[test]
fn the_first_start_screen_says_which_agent_and_why() {
    let mut chat = Chat::new();
    let big = chat.draw(BIG);
    assert!(big.contains("Agent: demo"), "{big}");
    assert!(big.contains("pi is not on PATH"), "{big}");
    assert!(
        big.contains("npm install -g @mariozechner/pi-coding-agent"),
        "{big}"
    );
    insta::assert_snapshot!("first_start_160x50", big);
    let small = chat.draw(SMALL);
    assert!(small.contains("Agent: demo"), "{small}");
    insta::assert_snapshot!("first_start_40x12", small);
}

#[test]
fn the_scrolled_view_keeps_its_text_across_a_resize() {
    let mut chat = Chat::new();
    chat.start_turn(0, "count");
    let text: String = (1..=200)
        .map(|n| format!("sentence number {n} of the long answer."))
        .collect::<Vec<_>>()
        .join(" ");
    chat.answer(10, &text);
    chat.end(20, TurnOutcome::Completed);
    chat.draw((100, 20));
    // Into the middle of the long answer (one cell: the row within it is what must carry over).
    for _ in 0..2 {
        chat.state.scroll_transcript(ScrollAction::PageUp);
    }
    let first_number = |screen: &str| -> u32 {
        let word = screen
            .split("number ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .expect("a sentence on screen");
        word.parse().unwrap()
    };
    let before = first_number(&chat.draw((100, 20)));
    let after = first_number(&chat.draw((50, 20)));
    assert!(
        before.abs_diff(after) <= 3,
        "the top of the view moved from sentence {before} to {after}"
    );
}

#[test]
fn an_expanded_tool_call_shows_its_whole_command_at_60_columns() {
    let mut chat = Chat::new();
    chat.start_turn(0, "run it");
    let turn = chat.turn;
    let command =
        "cargo test --workspace --all-features -- --nocapture --test-threads 1 the_last_words";
    chat.event(
        10,
        OrchestratorEvent::Message {
            turn,
            attempt: 1,
            message: AgentMessage::ToolCall {
                id: "call_1".into(),
                name: "bash".into(),
                input: serde_json::json!({ "command": command }),
                parent_id: None,
            },
        },
    );
    let collapsed = chat.draw((60, 12));
    assert!(!collapsed.contains("the_last_words"), "{collapsed}");
    chat.ctrl('o');
    let expanded = chat.draw((60, 12));
    assert!(expanded.contains("the_last_words"), "{expanded}");
}
