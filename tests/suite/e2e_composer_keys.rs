//! End-to-end (issue 28): the real `agentty` in tmux on the demo agent, driven by keys: a large
//! bracketed paste folds in the composer and reaches the agent whole, Ctrl+G edits the prompt in
//! `$EDITOR` (and says so when there is none), `!command` shows a command's output, the
//! terminal's own cursor sits on the composer's, and Ctrl+D on an empty prompt quits. Without
//! tmux these tests fail; `AGENTTY_SKIP_TMUX_TESTS=1` skips them on purpose.

use crate::support::chat_pane;

use chat_pane::{ChatPane, StateDir};

const SIZE: (u16, u16) = (100, 30);

fn launch(state: &StateDir, cwd: &std::path::Path, prefix: &str) -> Option<ChatPane> {
    let chat = ChatPane::launch(state, cwd, prefix, &["--provider", "demo"], SIZE)?;
    chat.wait_until_ready();
    Some(chat)
}

#[test]
fn a_large_paste_is_folded_in_the_composer_and_the_agent_gets_all_of_it() {
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    let Some(chat) = launch(&state, cwd.path(), "") else {
        return;
    };
    let text: String = (1..=200).map(|n| format!("pasted row {n}\n")).collect();
    let file = cwd.path().join("paste.txt");
    std::fs::write(&file, &text).unwrap();
    chat.tmux(&["load-buffer", "-b", "big", file.to_str().unwrap()]);
    chat.type_text("count these: ");
    // -p: as a bracketed paste, since agentty asked for it.
    chat.tmux(&["paste-buffer", "-p", "-b", "big", "-t", chat.target]);
    let screen = chat.wait_for_text("count these: [Pasted 200 lines]");
    eprintln!("the folded paste:\n{screen}");
    assert!(!screen.contains("pasted row 2"), "{screen}");
    chat.keys(&["Enter"]);
    // The answer's last line (the bar says idle before the turn starts, too).
    chat.wait_for_text("Prompt 1 in session");
    let idle = chat.wait_for_text("│ idle");
    assert!(!idle.contains("[Pasted 200 lines]"), "sent:\n{idle}");
    // Up brings the prompt back as it was typed: the paste folded, not 200 rows.
    chat.keys(&["Up"]);
    let recalled = chat.wait_for_text("count these: [Pasted 200 lines]");
    eprintln!("Up after sending it:\n{recalled}");
    chat.keys(&["C-u"]);
    chat.quit();
    // The conversation's log has the prompt as the agent got it: every row.
    let logs = state.logs();
    let log = std::fs::read_to_string(&logs[0]).unwrap();
    assert!(log.contains("pasted row 1\\n"), "{log}");
    assert!(log.contains("pasted row 200\\n"), "{log}");
}

#[test]
fn ctrl_g_edits_the_prompt_in_the_editor_and_without_one_says_so() {
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    let Some(chat) = launch(&state, cwd.path(), "VISUAL= EDITOR='sed -i s/draft/final/'") else {
        return;
    };
    chat.type_text("my draft prompt");
    chat.keys(&["C-g"]);
    let screen = chat.wait_for_text("my final prompt");
    assert!(!screen.contains("my draft"), "{screen}");
    assert_eq!(
        chat.pane_flag("#{alternate_on}"),
        "1",
        "back in full screen"
    );
    chat.keys(&["C-c"]);
    chat.quit();
    drop(chat);

    let Some(chat) = launch(&state, cwd.path(), "VISUAL= EDITOR=") else {
        return;
    };
    chat.type_text("kept as typed");
    chat.keys(&["C-g"]);
    let screen = chat.wait_for_text("Ctrl+G: no editor is set");
    assert!(screen.contains("kept as typed"), "{screen}");
    chat.keys(&["C-c"]);
    chat.quit();
}

#[test]
fn a_bang_command_runs_in_the_working_dir_and_shows_its_output() {
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("marker-file.txt"), "").unwrap();
    let Some(chat) = launch(&state, cwd.path(), "") else {
        return;
    };
    chat.prompt("!ls; printf '\\033]0;pwned\\007'");
    let screen = chat.wait_for_text("exit 0");
    eprintln!("!ls:\n{screen}");
    assert!(screen.contains("marker-file.txt"), "{screen}");
    // A command's output is headed as such, not as a failure's "diagnostics".
    assert!(screen.contains("output"), "{screen}");
    assert!(!screen.contains("diagnostics"), "{screen}");
    assert!(screen.contains("$ ls;"), "{screen}");
    // Nothing went to the agent: no turn ran.
    assert!(!screen.contains("› !ls"), "{screen}");
    assert_ne!(
        chat.pane_flag("#{pane_title}"),
        "pwned",
        "the output is inert"
    );
    chat.quit();
}

#[test]
fn the_terminal_cursor_sits_after_a_wide_emoji_and_ctrl_d_quits() {
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    let Some(chat) = launch(&state, cwd.path(), "") else {
        return;
    };
    chat.type_text("hi \u{1F44D}\u{1F3FD}!");
    let screen = chat.wait_for_text("hi \u{1F44D}");
    assert_eq!(chat.pane_flag("#{cursor_flag}"), "1", "shown:\n{screen}");
    assert_eq!(chat.pane_flag("#{cursor_x}"), "6", "{screen}");
    let input_row = screen
        .lines()
        .position(|line| line.contains("hi \u{1F44D}"))
        .unwrap();
    assert_eq!(chat.pane_flag("#{cursor_y}"), input_row.to_string());
    // One Backspace, one grapheme; then Ctrl+U empties the line and Ctrl+D leaves.
    chat.keys(&["BSpace", "BSpace"]);
    chat.wait_for("the emoji gone", |screen| {
        screen.lines().any(|line| line.trim_end() == "hi")
    });
    chat.keys(&["C-u", "C-d"]);
    chat.assert_exited_restored("0");
}
