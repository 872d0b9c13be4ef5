//! Snapshots with real agentty processes in tmux (issue 37): two agentty instances running
//! overlapping turns in one tree keep their changes apart, and an agentty killed with SIGKILL
//! in the middle of an `/undo` of 3,000 files leaves no temporary file in the user's tree once
//! launched again, which offers to finish or roll back the restore without blaming the user.
//! Without tmux these tests fail; `AGENTTY_SKIP_TMUX_TESTS=1` skips them.

use crate::support::chat_pane::{ChatPane, StateDir};
use crate::support::tmux;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SIZE: (u16, u16) = (160, 50);

/// An agent for the chat: `agentty demo-agent` (pi's JSON mode, one process a turn), run after
/// `before` (shell text, in the tree) when the prompt has `when` in it.
fn agent(dir: &Path, when: &str, before: &str) -> PathBuf {
    crate::support::script_agent::write_script(
        dir,
        "agent",
        &format!(
            "case \"$*\" in *'{when}'*)\n{before};;\nesac\nexec {} demo-agent \"$@\"",
            env!("CARGO_BIN_EXE_agentty")
        ),
    )
}

/// The chat on `state` in `root`, over `agent`, ready for a prompt.
fn launch(state: &StateDir, root: &Path, agent: &Path, more: &[&str]) -> Option<ChatPane> {
    let mut args = vec![
        "--provider",
        "demo",
        "--transport",
        "json",
        "--agent-bin",
        agent.to_str().unwrap(),
    ];
    args.extend_from_slice(more);
    let chat = ChatPane::launch(
        state,
        root,
        &format!(
            "AGENTTY_DEMO_STATE_DIR={}/demo AGENTTY_DEMO_TIME_SCALE=0.1",
            tmux::shell_quote(state.path().to_str().unwrap())
        ),
        &args,
        SIZE,
    )?;
    chat.wait_until_ready();
    Some(chat)
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The screen's text with each line break and the indent after it made one space.
fn unwrapped(screen: &str) -> String {
    screen.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text inside the boxes on `screen` (between each row's first and last side border), its
/// wrapped rows joined by spaces: a sentence a dialog wrapped reads whole.
fn box_text(screen: &str) -> String {
    let rows: Vec<&str> = screen
        .lines()
        .filter_map(|row| {
            let start = row.find('│')? + '│'.len_utf8();
            let end = row.rfind('│')?;
            (end > start).then(|| row[start..end].trim())
        })
        .collect();
    unwrapped(&rows.join(" "))
}

/// Issue 37, item 11, with two real agentty processes in one tree and one state dir: A, the
/// chat, whose agent writes `mine.txt` and then waits; meanwhile B, `agentty run` over the
/// demo agent's `edit` scenario, edits, creates and deletes files, start to end. A's change
/// summary names `mine.txt` alone, and A's `/undo` removes it and leaves B's files as B made
/// them, without asking.
#[test]
fn a_second_agentty_s_files_are_not_in_the_chat_s_turn_nor_undone_by_it() {
    let state = StateDir::new();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    std::fs::write(root.join("notes.txt"), "first\n").unwrap();
    std::fs::write(root.join("doomed.txt"), "bye\n").unwrap();
    let flag = state.path().join("go");
    let agent = agent(
        state.path(),
        "mine please",
        &format!(
            "echo mine > mine.txt; while [ ! -e '{}' ]; do sleep 0.05; done",
            flag.display()
        ),
    );
    let Some(chat) = launch(&state, root, &agent, &[]) else {
        return;
    };
    chat.prompt("mine please");
    wait_until("A's agent to write", || root.join("mine.txt").exists());

    let other = std::process::Command::new(env!("CARGO_BIN_EXE_agentty"))
        .current_dir(root)
        .env("AGENTTY_STATE_DIR", state.path())
        .env("AGENTTY_DEMO_STATE_DIR", state.path().join("demo-b"))
        .env("AGENTTY_DEMO_TIME_SCALE", "0.1")
        .args([
            "--config",
            state.path().join("config.toml").to_str().unwrap(),
        ])
        .args(["run", "--provider", "demo", "edit please"])
        .output()
        .unwrap();
    assert!(other.status.success(), "{other:?}");
    assert!(root.join("created.txt").exists(), "B edited");
    std::fs::write(&flag, "").unwrap();

    let summary = chat.wait_for("A's change summary", |screen| {
        screen.contains("1 file changed") && screen.contains("│ idle")
    });
    let said = unwrapped(&summary);
    assert!(said.contains("A mine.txt"), "{summary}");
    for theirs in ["created.txt", "data.bin", "doomed.txt", "notes.txt"] {
        assert!(!said.contains(theirs), "{theirs} in A's turn:\n{summary}");
    }
    assert!(
        said.contains("4 files changed meanwhile by another agentty's turn in this folder"),
        "{summary}"
    );

    chat.prompt("/undo");
    let undone = chat.wait_for_text("Undone (prompt 1");
    assert!(
        unwrapped(&undone).contains("removed mine.txt (created by the turn)."),
        "{undone}"
    );
    assert!(!root.join("mine.txt").exists());
    assert!(root.join("created.txt").exists());
    assert!(root.join("data.bin").exists());
    assert!(!root.join("doomed.txt").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).unwrap(),
        "first\nedited by turn 1\n"
    );
    chat.quit();
}

const FILES: usize = 3000;

fn original(index: usize) -> String {
    format!("line {index}\n")
}

/// How many of the tree's files are as before the turn.
fn put_back(root: &Path) -> usize {
    (0..FILES)
        .filter(|index| {
            std::fs::read_to_string(root.join(format!("f{index:04}.txt")))
                .is_ok_and(|text| text == original(*index))
        })
        .count()
}

/// Files agentty wrote for itself into the tree (a restore's temporary files).
fn leftovers(root: &Path) -> Vec<String> {
    std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".agentty-"))
        .collect()
}

/// The journals of restores under way in the state dir's tree stores.
fn journals(state: &Path) -> usize {
    std::fs::read_dir(state.join("trees"))
        .map(|trees| {
            trees
                .flatten()
                .filter_map(|tree| std::fs::read_dir(tree.path().join("journal")).ok())
                .map(|journal| journal.count())
                .sum()
        })
        .unwrap_or(0)
}

/// Issue 37, item 3, with a real kill: agentty is SIGKILLed while `/undo` puts back 3,000
/// files. Launched again in the same tree, it removes the restore's temporary files, says how
/// far the undo got (agentty's own writes are not "changed since"), and finishes it on `f`.
#[test]
fn an_undo_killed_half_way_is_cleaned_and_offered_to_finish_at_the_next_launch() {
    let state = StateDir::new();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    for index in 0..FILES {
        std::fs::write(root.join(format!("f{index:04}.txt")), original(index)).unwrap();
    }
    let agent = agent(
        state.path(),
        "touch every file",
        "for f in f*.txt; do echo 'the agent was here' >> \"$f\"; done",
    );
    let Some(chat) = launch(&state, root, &agent, &[]) else {
        return;
    };
    chat.prompt("touch every file");
    chat.wait_for("the turn's summary", |screen| {
        screen.contains("3000 files changed") && screen.contains("│ idle")
    });
    assert_eq!(put_back(root), 0);
    let pids = tmux::processes_with_env(state.path());
    let agentty: Vec<i32> = pids
        .iter()
        .filter(|(_, command)| !command.contains("demo-agent") && command.contains("agentty"))
        .map(|(pid, _)| *pid)
        .collect();
    assert_eq!(agentty.len(), 1, "{pids:?}");

    chat.prompt("/undo");
    wait_until("the undo to be under way", || {
        journals(state.path()) > 0 && put_back(root) > 0
    });
    // SAFETY: signalling the agentty this test started.
    unsafe {
        libc::kill(agentty[0], libc::SIGKILL);
    }
    chat.wait_for_text("agentty exited");
    let done = put_back(root);
    eprintln!(
        "killed with {done} of {FILES} files put back; left in the tree: {:?}",
        leftovers(root)
    );
    assert!(done < FILES, "the undo was cut short");
    drop(chat);

    let Some(chat) = launch(&state, root, &agent, &[]) else {
        return;
    };
    let asked = chat.wait_for_text("was interrupted");
    let said = box_text(&asked);
    eprintln!("the next launch:\n{asked}");
    assert!(
        said.contains(&format!(
            "An undo of turn 1 was interrupted: {done} of {FILES} files put back."
        )),
        "{asked}"
    );
    assert!(!said.contains("changed since"), "{asked}");
    assert_eq!(leftovers(root), Vec::<String>::new());

    chat.keys(&["f"]);
    let finished = chat.wait_for_text("Interrupted restore finished.");
    let said = unwrapped(&finished);
    assert!(said.contains("Undone: put back"), "{finished}");
    assert!(!said.contains("changed since"), "{finished}");
    assert_eq!(put_back(root), FILES);
    assert_eq!(leftovers(root), Vec::<String>::new());
    assert_eq!(journals(state.path()), 0);
    chat.quit();
}
