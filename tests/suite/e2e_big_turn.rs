//! End-to-end in tmux, at 160x50 and 60x20: a turn that changes 3,000 files (issue 37). The
//! prompt is given on the command line, so it goes as the chat opens, and the agent appends a
//! line to every file at once before its first word: the first request waits for the baseline,
//! so every edit is the turn's, summed up and undone. The tree holds one file past
//! `[snapshots] max_files`: the launch says the snapshot is incomplete and why, and the turn's
//! notice that the agent's change to it cannot be undone (it arrives after the turn ended, from
//! the "after" walk) is shown in the chat. The rewind and undo dialogs over those 3,000 files keep
//! their choices on screen, the list folded with a count. Without tmux these tests fail;
//! `AGENTTY_SKIP_TMUX_TESTS=1` skips them.

use crate::support::tmux;

use std::path::Path;

const FILES: usize = 3000;

/// The agent: `agentty demo-agent` (pi's JSON mode, one process a turn), which first appends a
/// line to every file of the tree when the prompt says "touch every file".
fn wrapper(dir: &Path) -> std::path::PathBuf {
    crate::support::script_agent::write_script(
        dir,
        "agent",
        &format!(
            "case \"$*\" in *'touch every file'*)\n\
             for f in f*.txt zz-extra.txt; do echo 'the agent was here' >> \"$f\"; done;;\n\
             esac\n\
             exec {} demo-agent \"$@\"",
            env!("CARGO_BIN_EXE_agentty")
        ),
    )
}

fn original(index: usize) -> String {
    format!("line {index}\n")
}

fn assert_fits(screen: &str, width: usize) {
    for row in screen.lines() {
        assert!(
            row.chars().count() <= width,
            "row wider than {width}:\n{screen}"
        );
    }
}

fn a_turn_of_3000_files(width: u16, height: u16) {
    if !tmux::tmux_available() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    for index in 0..FILES {
        std::fs::write(root.join(format!("f{index:04}.txt")), original(index)).unwrap();
    }
    // Sorted last: the one file past the cap.
    std::fs::write(root.join("zz-extra.txt"), "extra\n").unwrap();
    let config = state.path().join("config.toml");
    std::fs::write(&config, format!("[snapshots]\nmax_files = {FILES}\n")).unwrap();
    let agent = wrapper(state.path());
    let command = format!(
        "cd {work} && AGENTTY_STATE_DIR={state} AGENTTY_DEMO_STATE_DIR={state}/demo \
         AGENTTY_DEMO_TIME_SCALE=0.1 exec {bin} --config {config} --provider demo \
         --transport json --agent-bin {agent} 'touch every file'",
        work = root.display(),
        state = state.path().display(),
        config = config.display(),
        agent = agent.display(),
        bin = env!("CARGO_BIN_EXE_agentty"),
    );
    let pane = tmux::Pane::spawn(
        tmux::socket_name("agentty-big-turn"),
        width,
        height,
        &command,
    );
    let kill = scopeguard(&pane);

    if height >= 50 {
        // The launch says what the snapshot cannot keep, before the turn's answer.
        let launch = pane.wait_for_text("is incomplete");
        eprintln!("the launch's notice:\n{launch}");
        for said in [
            "The snapshot of this folder (3001 files) is incomplete",
            "1 file not kept (past the 3000 files a snapshot keeps",
        ] {
            assert!(launch.contains(said), "{said:?} in\n{launch}");
        }
    }
    let summary = pane.wait_for_text("3001 files changed");
    eprintln!("{width}x{height}, the turn's summary:\n{summary}");
    assert_fits(&summary, usize::from(width));
    pane.wait_for_text("│ idle ");
    if height >= 50 {
        // The turn's own notice comes from the walk after it ended: shown all the same.
        let late = pane.wait_for_text("Changed but not kept");
        eprintln!("the turn's notice:\n{late}");
        assert!(late.contains("zz-extra.txt (past the 3000 files"), "{late}");
    }

    // The rewind of that turn: the files put back are folded, the choices are on screen.
    pane.prompt("/rewind");
    pane.wait_for_text("Rewind to before");
    pane.keys(&["Enter"]);
    let choices = pane.wait_for_text("take back what?");
    eprintln!("{width}x{height}, the rewind's choices:\n{choices}");
    assert_fits(&choices, usize::from(width));
    for choice in ["Conversation and files", "Files only", "Cancel"] {
        assert!(choices.contains(choice), "{choice:?} in\n{choices}");
    }
    assert!(
        choices.contains("more"),
        "the list says it folds:\n{choices}"
    );
    // Cancel is selected first.
    pane.keys(&["Enter"]);
    pane.wait_for("the picker closed", |screen| {
        !screen.contains("take back what?")
    });
    assert_eq!(
        std::fs::read_to_string(root.join("f0000.txt"))
            .unwrap()
            .lines()
            .count(),
        2
    );

    // /undo puts back every one of the 3,000 files; the one past the cap is said not kept.
    pane.prompt("/undo");
    let undone = pane.wait_for_text("Undone (prompt 1 “touch every file”): put back");
    eprintln!("{width}x{height}, after /undo:\n{undone}");
    for index in 0..FILES {
        assert_eq!(
            std::fs::read_to_string(root.join(format!("f{index:04}.txt"))).unwrap(),
            original(index),
            "f{index:04}.txt undone"
        );
    }

    // Again, and then the user edits every file: /undo asks, the list folds, the answers show.
    pane.prompt("touch every file");
    pane.wait_for_text("Prompt 2 in session");
    pane.wait_for_text("│ idle ");
    for index in 0..FILES {
        let path = root.join(format!("f{index:04}.txt"));
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("the user's line\n");
        std::fs::write(&path, text).unwrap();
    }
    pane.prompt("/undo");
    let asked = pane.wait_for_text("Changed since the turn");
    eprintln!("{width}x{height}, the undo's question:\n{asked}");
    assert_fits(&asked, usize::from(width));
    assert!(asked.contains("• f0000.txt"), "{asked}");
    assert!(
        asked.contains("… and "),
        "the list folds with a count:\n{asked}"
    );
    assert!(asked.contains("more"), "{asked}");
    let flat: String = asked.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("Undo anyway"), "the question shows:\n{asked}");
    pane.keys(&["n"]);
    // Said in a few rows: the first names and a count (it listed all 3,000, 300 rows).
    let kept = pane.wait_for_text("kept as changed since the turn.");
    eprintln!("{width}x{height}, after n:\n{kept}");
    let flat: String = kept.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("Nothing undone: f0000.txt, f0001.txt,")
            && flat.contains("f0011.txt and 2988 more kept as changed since the turn."),
        "{kept}"
    );
    assert!(std::fs::read_to_string(root.join("f2999.txt"))
        .unwrap()
        .ends_with("the user's line\n"));
    drop(kill);
}

/// Ends the pane's tmux server when the test ends, passed or failed.
fn scopeguard(pane: &tmux::Pane) -> impl Drop + '_ {
    struct Kill<'a>(&'a tmux::Pane);
    impl Drop for Kill<'_> {
        fn drop(&mut self) {
            self.0.kill_server();
        }
    }
    Kill(pane)
}

#[test]
fn a_turn_that_changed_3000_files_at_160x50() {
    a_turn_of_3000_files(160, 50);
}

#[test]
fn a_turn_that_changed_3000_files_at_60x20() {
    a_turn_of_3000_files(60, 20);
}
