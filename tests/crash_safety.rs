//! Crash safety of the chat's conversation log, end to end: the real `agentty` in tmux over
//! the demo agent, with the faults a crash or a disk leaves: a torn last line.

#[path = "support/chat_pane.rs"]
mod chat_pane;
#[path = "support/tmux.rs"]
mod tmux;

use std::path::Path;

use agentty::session_log::{read_session_log, read_summary, LogEntry};
use chat_pane::{ChatPane, StateDir};

const SIZE: (u16, u16) = (100, 30);

/// One demo turn answered in a chat on `state`, then quit.
fn one_turn(state: &StateDir, cwd: &Path, args: &[&str], prompt: &str, answer: &str) {
    let Some(chat) = ChatPane::launch(state, cwd, "", args, SIZE) else {
        return;
    };
    chat.wait_until_ready();
    chat.prompt(prompt);
    chat.wait_for("the answer to finish", |screen| {
        screen.contains(answer) && screen.contains("│ idle")
    });
    chat.quit();
}

fn turn_ids(log: &Path) -> Vec<u64> {
    read_session_log(log)
        .unwrap()
        .iter()
        .filter_map(|entry| match entry {
            LogEntry::Turn { turn, .. } => Some(*turn),
            _ => None,
        })
        .collect()
}

#[test]
fn a_torn_last_line_is_set_aside_and_the_next_turn_is_kept_whole() {
    if !tmux::tmux_available() {
        return;
    }
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    one_turn(
        &state,
        cwd.path(),
        &["--provider", "demo"],
        "remember the word pelican",
        "Prompt 1 in session",
    );
    let logs = state.logs();
    assert_eq!(logs.len(), 1);
    let log = &logs[0];
    // agentty killed while writing its second turn: the log ends in part of a line.
    let fragment = r#"{"kind":"turn","turn":2,"prompt":"lost to the cr"#;
    let mut bytes = std::fs::read(log).unwrap();
    bytes.extend_from_slice(fragment.as_bytes());
    std::fs::write(log, &bytes).unwrap();

    let Some(chat) = ChatPane::launch(&state, cwd.path(), "", &["--resume"], SIZE) else {
        return;
    };
    let screen = chat.wait_for_text("Resumed conversation");
    assert!(screen.contains("remember the word pelican"), "{screen}");
    // Nothing runs: no phantom activity in the status bar.
    assert!(screen.contains("│ idle"), "{screen}");
    assert!(!screen.contains("writing"), "{screen}");
    chat.prompt("now the word otter");
    chat.wait_for("the second answer", |screen| {
        screen.contains("Prompt 2 in session") && screen.contains("│ idle")
    });
    chat.quit();

    // The fragment is in the side file; the log's every line reads, the new turn whole.
    let torn = std::fs::read_to_string(log.with_extension("torn")).unwrap();
    assert_eq!(torn, format!("{fragment}\n"));
    let text = std::fs::read_to_string(log).unwrap();
    assert!(text.ends_with('\n'));
    for line in text.lines() {
        assert!(
            serde_json::from_str::<LogEntry>(line).is_ok(),
            "a line that does not read: {line}"
        );
    }
    // Turn 2 was never completed in the log, but its id was seen: the new turn is 3.
    assert_eq!(turn_ids(log), [1, 3]);
    let summary = read_summary(log).unwrap();
    assert_eq!((summary.turns, summary.last_turn), (2, 3));
    assert!(text.contains("now the word otter"));
}

/// The pid of the `agentty` chat (not its agents) running under `state`.
fn agentty_pids(state: &StateDir) -> Vec<i32> {
    let binary = env!("CARGO_BIN_EXE_agentty");
    tmux::processes_with_env(state.path())
        .into_iter()
        .filter(|(_, command)| command.starts_with(binary) && !command.contains("demo-agent"))
        .map(|(pid, _)| pid)
        .collect()
}

fn prompts(log: &Path) -> Vec<(u64, String)> {
    read_session_log(log)
        .unwrap()
        .into_iter()
        .filter_map(|entry| match entry {
            LogEntry::Turn { turn, prompt, .. } => Some((turn, prompt)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_second_agentty_on_the_same_conversation_shows_it_read_only_and_never_appends() {
    if !tmux::tmux_available() {
        return;
    }
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    let Some(first) = ChatPane::launch(&state, cwd.path(), "", &["--provider", "demo"], SIZE)
    else {
        return;
    };
    first.wait_until_ready();
    first.prompt("remember the word pelican");
    first.wait_for("the first answer", |screen| {
        screen.contains("Prompt 1 in session") && screen.contains("│ idle")
    });
    let first_pid = agentty_pids(&state)[0];
    let log = state.logs().remove(0);

    // A second launch asks for the same conversation while the first still writes it.
    let Some(second) = ChatPane::launch(&state, cwd.path(), "", &["--resume"], SIZE) else {
        return;
    };
    let screen = second.wait_for_text("read-only");
    eprintln!("the second instance:\n{screen}");
    assert!(
        screen.contains(&format!("is open in another agentty (pid {first_pid})")),
        "{screen}"
    );
    assert!(screen.contains("remember the word pelican"), "{screen}");
    assert!(screen.contains("The next prompt starts a new"), "{screen}");
    second.prompt("a prompt of my own");
    // (The demo quotes the prompt in its answer.)
    second.wait_for("the second instance's answer", |screen| {
        screen.contains("│ a prompt of my own") && screen.contains("│ idle")
    });
    // The first goes on numbering its own turns in its own agent session.
    first.prompt("now the word otter");
    first.wait_for("the first instance's second answer", |screen| {
        screen.contains("Prompt 2 in session") && screen.contains("│ idle")
    });
    second.quit();
    second.assert_exited_restored("0");

    assert_eq!(
        prompts(&log),
        [
            (1, "remember the word pelican".to_owned()),
            (2, "now the word otter".to_owned())
        ],
        "only the first instance wrote the conversation"
    );
    let logs = state.logs();
    assert_eq!(logs.len(), 2, "the second instance's prompt began its own");
    let other = logs.iter().find(|path| **path != log).unwrap();
    assert_eq!(prompts(other), [(1, "a prompt of my own".to_owned())]);

    // A crash never leaves a conversation locked: after a SIGKILL of the first, a third
    // launch continues it.
    // SAFETY: signalling a process the test started.
    unsafe {
        libc::kill(first_pid, libc::SIGKILL);
    }
    drop(first);
    let id = read_summary(&log).unwrap().id;
    let Some(third) = ChatPane::launch(&state, cwd.path(), "", &["--resume", &id[..8]], SIZE)
    else {
        return;
    };
    let screen = third.wait_for_text("Resumed conversation");
    assert!(!screen.contains("read-only"), "{screen}");
    third.prompt("and a third");
    third.wait_for_text("Prompt 3 in session");
    third.wait_for_text("│ idle");
    third.quit();
    assert_eq!(
        prompts(&log)
            .iter()
            .map(|(turn, _)| *turn)
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
}
