//! End-to-end in tmux: the demo agent edits files in its working directory (its `edit`
//! scenario: a real bash child), the transcript sums the turn's changes up, `/diff` shows them
//! (also at 40x12), and `/undo` puts the last turn's files back, asking before it overwrites a
//! file changed since. Without tmux these tests fail; `AGENTTY_SKIP_TMUX_TESTS=1` skips them.

#[path = "support/tmux.rs"]
mod tmux;

use std::path::Path;

use tmux::tmux_available;

struct Session {
    pane: tmux::Pane,
    _state: tempfile::TempDir,
    work: tempfile::TempDir,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.pane.kill_server();
    }
}

fn start(width: u16, height: u16) -> Option<Session> {
    if !tmux_available() {
        return None;
    }
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("notes.txt"), "first line\nsecond line\n").unwrap();
    std::fs::write(work.path().join("doomed.txt"), "bye\n").unwrap();
    let command = format!(
        "cd {work} && AGENTTY_STATE_DIR={state} AGENTTY_DEMO_STATE_DIR={state}/demo \
         AGENTTY_DEMO_TIME_SCALE=0.1 exec {bin} --provider demo --transport rpc",
        work = work.path().display(),
        state = state.path().display(),
        bin = env!("CARGO_BIN_EXE_agentty"),
    );
    let pane = tmux::Pane::spawn(tmux::socket_name("agentty-review"), width, height, &command);
    pane.wait_for_text("Ask the agent anything");
    Some(Session {
        pane,
        _state: state,
        work,
    })
}

fn read(root: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(root.join(name)).ok()
}

#[test]
fn the_turn_s_changes_are_summed_up_shown_as_a_diff_and_undone() {
    let Some(session) = start(100, 30) else {
        return;
    };
    let pane = &session.pane;
    let root = session.work.path();
    pane.prompt("please edit the files");
    let summary = pane.wait_for_text("4 files changed");
    eprintln!("the change summary:\n{summary}");
    for row in [
        "± 4 files changed · +2 −1 · /diff review · /undo revert",
        "│ A created.txt  created · +1",
        "│ B data.bin  binary",
        "│ D doomed.txt  deleted · −1",
        "│ M notes.txt  +1 −0",
    ] {
        assert!(summary.contains(row), "{row:?} in\n{summary}");
    }
    pane.prompt("edit once more");
    pane.wait_for_text("1 file changed · +1 −0");

    pane.prompt("/diff");
    let diff = pane.wait_for_text("Changes · this conversation (2 turns) · 4 files");
    eprintln!("/diff:\n{diff}");
    for row in [
        "━ notes.txt +2 −0",
        "@@ -1,2 +1,4 @@",
        "│ first line",
        "│+edited by turn 1",
        "│+edited by turn 2",
        "━ doomed.txt deleted −1",
        "│-bye",
        "(binary file created)",
    ] {
        assert!(diff.contains(row), "{row:?} in\n{diff}");
    }
    pane.keys(&["Tab"]);
    let last = pane.wait_for_text("Changes · the last turn · 1 file");
    assert!(last.contains("│ edited by turn 1") && last.contains("│+edited by turn 2"), "{last}");
    assert!(!last.contains("doomed.txt"), "{last}");
    pane.keys(&["Escape"]);
    pane.wait_for("the diff closed", |screen| !screen.contains("Changes ·"));

    // /undo: the last turn's line goes.
    pane.prompt("/undo");
    let undone = pane.wait_for_text("Undone: put back notes.txt.");
    assert!(undone.contains("1 file changed · +1 −0 · undone"), "{undone}");
    assert_eq!(
        read(root, "notes.txt").unwrap(),
        "first line\nsecond line\nedited by turn 1\n"
    );

    // The user changes a file the first turn created: the next /undo asks first.
    std::fs::write(root.join("created.txt"), "the user's now\n").unwrap();
    pane.prompt("/undo");
    let asked = pane.wait_for_text("Changed since the turn");
    eprintln!("the question:\n{asked}");
    assert!(asked.contains("• created.txt"), "{asked}");
    pane.keys(&["n"]);
    pane.wait_for_text("Nothing undone: created.txt kept as changed since the turn.");
    assert_eq!(read(root, "created.txt").unwrap(), "the user's now\n");
    assert!(read(root, "doomed.txt").is_none());

    pane.prompt("/undo");
    pane.wait_for_text("Changed since the turn");
    pane.keys(&["y"]);
    let done = pane.wait_for_text("removed created.txt, data.bin (created by the turn)");
    eprintln!("after the second undo:\n{done}");
    assert!(done.contains("put back doomed.txt, notes.txt"), "{done}");
    assert_eq!(read(root, "notes.txt").unwrap(), "first line\nsecond line\n");
    assert_eq!(read(root, "doomed.txt").unwrap(), "bye\n");
    assert!(read(root, "created.txt").is_none() && read(root, "data.bin").is_none());

    // Nothing left: /undo says so instead of doing anything.
    pane.prompt("/undo");
    pane.wait_for_text("No turn's file changes are left to undo.");
}

#[test]
fn the_diff_fits_a_40x12_terminal() {
    let Some(session) = start(40, 12) else {
        return;
    };
    let pane = &session.pane;
    pane.prompt("edit");
    pane.wait_for_text("4 files changed");
    pane.prompt("/diff");
    let diff = pane.wait_for_text("↑↓ n/p Tab Esc");
    eprintln!("/diff at 40x12:\n{diff}");
    let rows: Vec<&str> = diff.lines().collect();
    assert!(rows[0].starts_with("┌ All 1 turn · 4 files "), "{diff}");
    assert!(rows.iter().all(|row| row.chars().count() <= 40), "{diff}");
    assert!(diff.contains("━ created.txt created +1"), "{diff}");
    // n jumps from file to file.
    pane.keys(&["n", "n", "n"]);
    pane.wait_for("notes.txt's header on the first row", |screen| {
        screen
            .lines()
            .nth(1)
            .is_some_and(|row| row.contains("━ notes.txt +1 −0"))
    });
    pane.keys(&["Tab"]);
    pane.wait_for_text("┌ Last turn · 4 files ");
    pane.keys(&["q"]);
    pane.wait_for("the diff closed", |screen| !screen.contains("Last turn ·"));
}
