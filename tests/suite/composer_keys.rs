//! The composer's keys and conveniences (issue 28), on the reducers with hand-made events and
//! drawn on ratatui's `TestBackend`: an unknown `/word` kept, history walked past an `@`
//! mention, Ctrl+J, `@` completion without a trailing space, a folded paste, Ctrl+R once per
//! prompt, queued prompts kept apart, Ctrl+D, Ctrl+G, `!command`, and the terminal's cursor.

use crossterm::event::{KeyCode, KeyModifiers};
use ratatui::backend::Backend;

use agentty::app::menu::Overlay;
use agentty::app::state::{AppEffect, ShellOutput, ShellRequest};
use agentty::app::transcript::CellBody;
use agentty::orchestrator::{Command, OrchestratorEvent, TurnOutcome};

use crate::support::chat;

use chat::{startup, Chat};

fn chat() -> Chat {
    Chat::with_startup(startup("demo", None, None))
}

fn submitted(effects: &[AppEffect]) -> Option<String> {
    effects.iter().find_map(|effect| match effect {
        AppEffect::Command(Command::Submit(prompt)) => Some(prompt.clone()),
        _ => None,
    })
}

#[test]
fn an_unknown_slash_word_is_kept_and_a_second_enter_sends_it_as_a_message() {
    let mut chat = chat();
    chat.type_text("/etc/hosts looks wrong, fix it");
    let effects = chat.press(KeyCode::Enter);
    assert_eq!(submitted(&effects), None, "not sent at once");
    assert_eq!(chat.state.composer.text(), "/etc/hosts looks wrong, fix it");
    let screen = chat.screen(100, 20, 0);
    assert!(
        screen.contains("Unknown command /etc/hosts: Enter again sends it as a message"),
        "{screen}"
    );
    // It is in the history already: cleared by mistake, Up brings it back.
    assert_eq!(
        chat.state.composer.history().last().map(String::as_str),
        Some("/etc/hosts looks wrong, fix it")
    );
    let effects = chat.press(KeyCode::Enter);
    assert_eq!(
        submitted(&effects).as_deref(),
        Some("/etc/hosts looks wrong, fix it")
    );
    assert!(chat.state.composer.is_empty());
    // Ctrl+R offers it (once).
    chat.ctrl('r');
    let screen = chat.screen(100, 20, 0);
    assert_eq!(
        screen.matches("/etc/hosts looks wrong").count(),
        1,
        "{screen}"
    );
}

#[test]
fn an_edited_unknown_command_is_warned_about_again() {
    let mut chat = chat();
    chat.type_text("/nope");
    chat.press(KeyCode::Esc);
    chat.press(KeyCode::Enter);
    chat.type_text("x");
    let effects = chat.press(KeyCode::Enter);
    assert_eq!(submitted(&effects), None);
    assert_eq!(chat.state.composer.text(), "/nopex");
}

#[test]
fn up_walks_the_history_past_a_prompt_ending_in_a_mention() {
    let mut chat = chat();
    chat.state
        .on_files_listed(vec!["src/main.rs".into(), "README.md".into()]);
    chat.state.composer.load_history(vec![
        "first".into(),
        "explain @src/main.rs".into(),
        "last".into(),
    ]);
    chat.press(KeyCode::Up);
    chat.press(KeyCode::Up);
    assert_eq!(chat.state.composer.text(), "explain @src/main.rs");
    assert!(
        chat.state.popup.is_none(),
        "a recalled mention opens no popup"
    );
    chat.press(KeyCode::Up);
    assert_eq!(chat.state.composer.text(), "first", "Up goes on walking");
    chat.press(KeyCode::Down);
    chat.press(KeyCode::Down);
    assert_eq!(chat.state.composer.text(), "last");
}

#[test]
fn ctrl_j_inserts_a_new_line_and_the_help_says_so() {
    let mut chat = chat();
    chat.type_text("one");
    chat.ctrl('j');
    chat.type_text("two");
    assert_eq!(chat.state.composer.text(), "one\ntwo");
    chat.press(KeyCode::F(1));
    let screen = chat.screen(160, 50, 0);
    assert!(screen.contains("Ctrl+J"), "{screen}");
    assert!(screen.contains("Ctrl+G"), "{screen}");
    assert!(screen.contains("!cmd / !!cmd"), "{screen}");
}

#[test]
fn tab_completes_a_file_without_a_space_so_a_line_range_follows() {
    let mut chat = chat();
    chat.type_text("read @");
    chat.state.on_files_listed(vec![
        ".github/".into(),
        ".github/workflows/".into(),
        ".github/workflows/ci.yml".into(),
        "src/main.rs".into(),
    ]);
    chat.type_text("ci.y");
    chat.press(KeyCode::Tab);
    assert_eq!(chat.state.composer.text(), "read @.github/workflows/ci.yml");
    assert!(chat.state.popup.is_none());
    chat.type_text(":10-20");
    assert!(chat.state.popup.is_none(), "a line range is no file search");
    let effects = chat.press(KeyCode::Enter);
    assert_eq!(
        submitted(&effects).as_deref(),
        Some("read .github/workflows/ci.yml:10-20")
    );
    // Tab on a folder goes on into it.
    chat.type_text("see @workflows");
    chat.press(KeyCode::Tab);
    assert_eq!(chat.state.composer.text(), "see @.github/workflows/");
    let popup = chat.state.popup.as_ref().expect("the popup goes on");
    assert_eq!(popup.items[0].label, ".github/workflows/ci.yml");
}

#[test]
fn a_large_paste_is_folded_in_the_input_and_sent_whole() {
    let mut chat = chat();
    chat.type_text("why does this fail? ");
    let log: String = (1..=200).map(|n| format!("error line {n}\n")).collect();
    chat.state.on_paste(&log);
    assert_eq!(
        chat.state.composer.text(),
        "why does this fail? [Pasted 200 lines]"
    );
    let screen = chat.screen(60, 18, 0);
    assert!(screen.contains("[Pasted 200 lines]"), "{screen}");
    assert!(!screen.contains("error line 1"), "{screen}");
    let effects = chat.press(KeyCode::Enter);
    assert_eq!(
        submitted(&effects),
        Some(format!("why does this fail? {log}"))
    );
}

#[test]
fn alt_up_with_a_draft_keeps_the_two_prompts_apart() {
    let mut chat = chat();
    chat.start_turn(0, "first");
    chat.event(
        10,
        OrchestratorEvent::QueueChanged {
            queued: vec!["queued one".into()],
        },
    );
    chat.type_text("my draft");
    assert_eq!(
        chat.key(KeyCode::Up, KeyModifiers::ALT),
        vec![AppEffect::Command(Command::RemoveQueued(0))]
    );
    assert_eq!(chat.state.composer.text(), "queued one");
    assert!(chat.screen(100, 20, 0).contains("1 more after this one"));
    chat.end(20, TurnOutcome::Completed);
    let effects = chat.press(KeyCode::Enter);
    assert_eq!(submitted(&effects).as_deref(), Some("queued one"));
    assert_eq!(
        chat.state.composer.text(),
        "my draft",
        "the draft comes next"
    );
}

#[test]
fn ctrl_d_quits_on_an_empty_prompt_and_deletes_otherwise() {
    let mut chat = chat();
    chat.type_text("ab");
    chat.press(KeyCode::Home);
    assert!(chat.ctrl('d').is_empty());
    assert_eq!(chat.state.composer.text(), "b");
    chat.ctrl('d');
    assert!(chat.state.composer.is_empty());
    assert!(!chat.state.quitting);
    assert_eq!(
        chat.ctrl('d'),
        vec![AppEffect::Leave],
        "the same path as /quit"
    );
    // The chat's way out asks the orchestrator to shut down.
    assert_eq!(
        chat.state.begin_quit(),
        vec![AppEffect::Command(Command::Shutdown)]
    );
    assert!(chat.state.quitting);
}

#[test]
fn ctrl_g_hands_the_prompt_to_the_editor_and_takes_its_text_back() {
    let mut chat = chat();
    chat.type_text("draft ");
    chat.state.on_paste(&"line\n".repeat(20));
    let expected = format!("draft {}", "line\n".repeat(20));
    assert_eq!(chat.ctrl('g'), vec![AppEffect::EditPrompt(expected)]);
    chat.state.on_prompt_edited(Ok("edited\nprompt\n".into()));
    assert_eq!(chat.state.composer.text(), "edited\nprompt");
    chat.state
        .on_prompt_edited(Err("no editor is set (set $VISUAL or $EDITOR)".into()));
    assert_eq!(chat.state.composer.text(), "edited\nprompt", "nothing lost");
    let screen = chat.screen(120, 20, 0);
    assert!(
        screen.contains("Ctrl+G: no editor is set (set $VISUAL or $EDITOR); the prompt is as it"),
        "{screen}"
    );
}

fn shell_output(command: &str, to_prompt: bool, text: &str) -> ShellOutput {
    ShellOutput {
        request: ShellRequest {
            command: command.into(),
            to_prompt,
        },
        ended: "exit 0".into(),
        success: true,
        text: text.into(),
        truncated: false,
    }
}

#[test]
fn a_bang_command_runs_here_and_its_output_is_shown_inert() {
    let mut chat = chat();
    chat.type_text("!ls -a");
    let effects = chat.press(KeyCode::Enter);
    assert_eq!(
        effects[0],
        AppEffect::RunShell(ShellRequest {
            command: "ls -a".into(),
            to_prompt: false
        })
    );
    assert_eq!(submitted(&effects), None, "nothing goes to the agent");
    chat.state.on_shell_done(shell_output(
        "ls -a",
        false,
        "Cargo.toml\n\u{1b}]0;pwned\u{7}src\n",
    ));
    let screen = chat.screen(100, 20, 0);
    assert!(screen.contains("$ ls -a · exit 0"), "{screen}");
    assert!(screen.contains("Cargo.toml"), "{screen}");
    assert!(!screen.contains('\u{1b}'), "inert: {screen:?}");
    let notice = chat
        .state
        .transcript
        .cells()
        .iter()
        .find_map(|cell| match &cell.body {
            CellBody::Notice(notice) => Some(notice.clone()),
            _ => None,
        })
        .unwrap();
    assert!(notice.details[0]
        .lines
        .iter()
        .all(|line| !line.contains('\u{1b}')));
}

#[test]
fn a_double_bang_command_puts_its_output_in_the_prompt_to_send() {
    let mut chat = chat();
    chat.type_text("!!git status");
    let effects = chat.press(KeyCode::Enter);
    assert_eq!(
        effects[0],
        AppEffect::RunShell(ShellRequest {
            command: "git status".into(),
            to_prompt: true
        })
    );
    chat.state
        .on_shell_done(shell_output("git status", true, "On branch main\n"));
    assert_eq!(
        chat.state.composer.text(),
        "Output of `git status` (exit 0):\n```\nOn branch main\n```\n"
    );
    assert!(chat.state.popup.is_none());
}

#[test]
fn the_terminals_cursor_is_placed_on_the_composers_and_hidden_under_an_overlay() {
    let mut chat = chat();
    chat.type_text("hi \u{1F44D}\u{1F3FD}");
    let mut terminal = chat.terminal(60, 18, 0);
    let position = terminal.backend_mut().get_cursor_position().unwrap();
    let screen = terminal.backend().to_string();
    let row: Vec<&str> = screen.lines().collect();
    assert!(
        row[position.y as usize].contains("hi \u{1F44D}\u{1F3FD}"),
        "{screen}"
    );
    assert_eq!(
        position.x, 5,
        "after two letters, a space and a two-column emoji"
    );
    chat.ctrl('r');
    assert!(matches!(
        chat.state.overlay,
        Some(Overlay::HistorySearch(_))
    ));
}

#[test]
fn a_long_prompt_is_folded_in_the_transcript_and_a_click_expands_it() {
    let mut chat = chat();
    let prompt: String = (1..=200)
        .map(|n| format!("pasted row {n}"))
        .collect::<Vec<_>>()
        .join("\n");
    chat.start_turn(0, &prompt);
    let screen = chat.screen(100, 30, 0);
    assert!(screen.contains("pasted row 3"), "{screen}");
    assert!(!screen.contains("pasted row 4"), "{screen}");
    assert!(
        screen.contains("▸ 197 more lines · click to expand"),
        "{screen}"
    );
    let id = chat
        .state
        .transcript
        .cells()
        .iter()
        .find(|cell| matches!(cell.body, CellBody::User(_)))
        .unwrap()
        .id;
    assert!(chat.state.toggle_cell(id));
    let screen = chat.screen(100, 300, 0);
    assert!(screen.contains("pasted row 200"), "{screen}");
    assert!(screen.contains("▾ click to fold"), "{screen}");
    // A short prompt has nothing to fold.
    let mut chat = self::chat();
    chat.start_turn(0, "short");
    assert!(!chat.screen(100, 30, 0).contains("click to expand"));
    // One line of 1,100 characters (seven wrapped rows) folds by characters: its first ones,
    // then what it leaves out, never "0 more lines".
    let mut chat = self::chat();
    let words: Vec<String> = (0..220).map(|n| format!("w{n:03}")).collect();
    let long = format!("{}.", words.join(" "));
    assert_eq!(long.chars().count(), 1_100);
    chat.start_turn(0, &long);
    let screen = chat.screen(160, 40, 0);
    eprintln!("a long one-line prompt:\n{screen}");
    assert!(screen.contains("w000 w001"), "{screen}");
    assert!(!screen.contains("w219"), "{screen}");
    assert!(
        screen.contains("▸ 860 more characters · click to expand"),
        "{screen}"
    );
    assert!(!screen.contains("0 more lines"), "{screen}");
}

/// A file's whole path typed after `@` offers that file (issue 37: it said "no matching file").
#[test]
fn a_mention_typed_as_the_file_s_full_path_offers_that_file() {
    let mut chat = chat();
    chat.type_text("see @");
    chat.state.on_files_listed(vec![
        "pkg00/".into(),
        "pkg00/mod00/".into(),
        "pkg00/mod00/f00.rs".into(),
        "pkg00/mod00/f01.rs".into(),
    ]);
    chat.type_text("pkg00/mod00/f00.rs");
    let popup = chat.state.popup.as_ref().expect("the popup is open");
    assert_eq!(
        popup.items.first().map(|item| item.label.as_str()),
        Some("pkg00/mod00/f00.rs")
    );
    chat.press(KeyCode::Tab);
    assert_eq!(chat.state.composer.text(), "see @pkg00/mod00/f00.rs");
}
