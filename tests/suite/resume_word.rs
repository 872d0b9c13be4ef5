//! `agentty --resume WORD`: the word is a conversation's id only when it looks like one and
//! names a conversation; any other word starts the first prompt, which goes to the last
//! conversation of the directory. Tried with the real binary: its refusals before any terminal
//! is touched, its `--help`, and in tmux a prompt that reaches the resumed conversation.

use std::path::Path;

use crate::support::chat_pane;

use agentty::session_log::read_summary;
use chat_pane::{ChatPane, StateDir};

/// `agentty ARGS` in `cwd` with its own state dir; (exit status, stdout, stderr).
fn agentty(state: &Path, cwd: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(args)
        .current_dir(cwd)
        .env("AGENTTY_STATE_DIR", state)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run agentty");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_prompt_after_resume_is_a_prompt_and_an_id_is_an_id() {
    let state = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    // Taken as the prompt: the last conversation here is wanted, and there is none.
    let (code, _, stderr) = agentty(state.path(), project.path(), &["--resume", "fix the tests"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--resume: no earlier conversation in"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("fix the tests"),
        "not read as an id: {stderr}"
    );
    // A word shaped like an id is one: a mistyped id is refused, never sent as a prompt.
    let (code, _, stderr) = agentty(state.path(), project.path(), &["--resume", "0b1e7c99"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no conversation \"0b1e7c99\""), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn help_says_when_the_word_after_resume_is_an_id() {
    let state = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = agentty(state.path(), state.path(), &["--help"]);
    assert_eq!(code, Some(0), "{stderr}");
    let joined = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        joined.contains("an ID only when it looks like one"),
        "{stdout}"
    );
    assert!(joined.contains("--resume -- PROMPT"), "{stdout}");
}

#[test]
fn resume_with_a_prompt_continues_the_last_conversation_with_it() {
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    let size = (100, 30);
    let Some(chat) = ChatPane::launch(&state, cwd.path(), "", &["--provider", "demo"], size) else {
        return;
    };
    chat.wait_until_ready();
    chat.prompt("remember the word kestrel");
    chat.wait_for("the answer", |screen| {
        screen.contains("Prompt 1 in") && screen.contains("idle")
    });
    chat.quit();
    drop(chat);
    let logs = state.logs();
    assert_eq!(logs.len(), 1);
    let id = read_summary(&logs[0]).unwrap().id;

    let Some(again) = ChatPane::launch(
        &state,
        cwd.path(),
        "",
        &["--resume", "what was the word"],
        size,
    ) else {
        return;
    };
    // The old conversation is back, and the word went to its agent as the second prompt.
    let screen = again.wait_for("the second answer", |screen| {
        screen.contains("Prompt 2 in") && screen.contains("idle")
    });
    assert!(screen.contains("Resumed conversation"), "{screen}");
    assert!(screen.contains("› what was the word"), "{screen}");
    again.quit();
    assert_eq!(state.logs().len(), 1, "the same conversation went on");
    let text = std::fs::read_to_string(&state.logs()[0]).unwrap();
    assert!(text.contains("remember the word kestrel"), "{text}");
    assert!(text.contains("what was the word"), "{text}");
    assert_eq!(read_summary(&state.logs()[0]).unwrap().id, id);
}
