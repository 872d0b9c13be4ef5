//! End-to-end in tmux: the demo agent edits files in its working directory (its `edit`
//! scenario: a real bash child), the transcript sums the turn's changes up, `/diff` shows them
//! (also at 40x12), and `/undo` puts the last turn's files back, asking before it overwrites a
//! file changed since; `/rewind` (and Esc Esc) takes back the conversation and the files to
//! before an earlier prompt, so the agent's next request no longer carries the prompts taken
//! back (the demo agent's `requests.jsonl`). Without tmux these tests fail; `AGENTTY_SKIP_TMUX_TESTS=1` skips them.

use crate::support::tmux;

use std::path::Path;

use tmux::tmux_available;

struct Session {
    pane: tmux::Pane,
    state: tempfile::TempDir,
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
    let pane = launch(&state, &work, width, height, "");
    Some(Session { pane, state, work })
}

fn launch(
    state: &tempfile::TempDir,
    work: &tempfile::TempDir,
    width: u16,
    height: u16,
    extra: &str,
) -> tmux::Pane {
    let command = format!(
        "cd {work} && AGENTTY_STATE_DIR={state} AGENTTY_DEMO_STATE_DIR={state}/demo \
         AGENTTY_DEMO_TIME_SCALE=0.1 exec {bin} --provider demo --transport rpc {extra}",
        work = work.path().display(),
        state = state.path().display(),
        bin = env!("CARGO_BIN_EXE_agentty"),
    );
    let pane = tmux::Pane::spawn(tmux::socket_name("agentty-review"), width, height, &command);
    pane.wait_for_text("demo");
    pane
}

fn read(root: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(root.join(name)).ok()
}

/// The text inside a box on `screen` (between its side borders), its wrapped rows joined by
/// spaces: a sentence the box wrapped reads whole.
fn box_text(screen: &str) -> String {
    screen
        .lines()
        .filter_map(|row| {
            let start = row.find('│')? + '│'.len_utf8();
            let end = row.rfind('│')?;
            (end > start).then(|| row[start..end].trim())
        })
        .filter(|row| !row.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
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
    assert!(
        last.contains("│ edited by turn 1") && last.contains("│+edited by turn 2"),
        "{last}"
    );
    assert!(!last.contains("doomed.txt"), "{last}");
    pane.keys(&["Escape"]);
    pane.wait_for("the diff closed", |screen| !screen.contains("Changes ·"));

    // /undo: the last turn's line goes, and the notice names the prompt it undid.
    pane.prompt("/undo");
    let undone = pane.wait_for_text("Undone (prompt 2 “edit once more”): put back notes.txt.");
    assert!(
        undone.contains("1 file changed · +1 −0 · undone"),
        "{undone}"
    );
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
    let done = pane
        .wait_for_text("Undone (prompt 1 “please edit the files”): put back doomed.txt, notes.txt");
    eprintln!("after the second undo:\n{done}");
    let words = done.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("removed created.txt, data.bin (created by the turn)"),
        "{done}"
    );
    assert_eq!(
        read(root, "notes.txt").unwrap(),
        "first line\nsecond line\n"
    );
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
    let diff = pane.wait_for_text("n/p · Tab · Esc close");
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

/// The user messages of each request the demo agent's "model" received.
fn requests(state: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(agentty::demo_agent::state::requests_file(
        &state.join("demo"),
    ))
    .unwrap_or_default();
    text.lines()
        .map(|line| {
            let request: agentty::demo_agent::state::DemoRequest =
                serde_json::from_str(line).unwrap();
            request.messages
        })
        .collect()
}

#[test]
fn rewind_takes_back_the_conversation_and_the_files_to_an_earlier_prompt() {
    let Some(session) = start(100, 30) else {
        return;
    };
    let pane = &session.pane;
    let root = session.work.path();
    pane.prompt("hello one");
    pane.wait_for_text("Prompt 1 in session");
    pane.prompt("please edit the files");
    pane.wait_for_text("4 files changed");
    pane.prompt("hello three");
    pane.wait_for_text("Prompt 3 in session");
    pane.wait_for_text("│ idle ");

    // Esc Esc on the empty composer opens the picker, newest first. (Two Escs in one write
    // read as one key: a person's two presses come apart.)
    pane.keys(&["Escape"]);
    std::thread::sleep(std::time::Duration::from_millis(150));
    pane.keys(&["Escape"]);
    let picker = pane.wait_for_text("Rewind to before");
    eprintln!("the rewind picker:\n{picker}");
    let rows: Vec<&str> = picker
        .lines()
        .filter(|row| row.contains(" ago · "))
        .collect();
    assert_eq!(rows.len(), 3, "{picker}");
    assert!(
        rows[0].contains("hello three") && rows[1].contains("4 files · please edit the files"),
        "{picker}"
    );
    assert!(rows[2].contains("hello one"), "{picker}");
    pane.keys(&["Escape"]);
    pane.wait_for("the picker closed", |screen| {
        !screen.contains("Rewind to before")
    });

    // The last prompt changed no file: /diff's other scope names the turn it shows.
    pane.prompt("/diff");
    let all = pane.wait_for_text("Changes · this conversation (1 turn) · 4 files");
    assert!(all.contains("Tab prompt 2"), "{all}");
    pane.keys(&["Tab"]);
    let earlier = pane.wait_for_text(
        "Changes · prompt 2 “please edit the files” (the last that changed files) · 4 files",
    );
    eprintln!("/diff's Tab on an earlier turn:\n{earlier}");
    assert!(!earlier.contains("the last turn"), "{earlier}");
    pane.keys(&["Escape"]);
    pane.wait_for("the diff closed", |screen| !screen.contains("Changes ·"));

    pane.prompt("/rewind");
    pane.wait_for_text("Rewind to before");
    // The edit: a preview, and Cancel is where the selection starts.
    pane.keys(&["Down", "Enter"]);
    let choices = pane.wait_for_text("Rewind: take back what?");
    eprintln!("the choices:\n{choices}");
    assert!(
        choices.contains("the agent forgets this prompt and the 1 after it"),
        "{choices}"
    );
    assert!(
        choices.contains("Files put back: created.txt, data.bin, doomed.txt, notes.txt."),
        "{choices}"
    );
    pane.keys(&["Enter"]);
    pane.wait_for("the picker closed", |screen| {
        !screen.contains("take back what?")
    });
    assert!(
        read(root, "created.txt").is_some(),
        "Cancel took nothing back"
    );

    pane.prompt("/rewind");
    pane.wait_for_text("Rewind to before");
    pane.keys(&["Down", "Enter", "Up", "Up", "Up", "Enter"]);
    let rewound = pane.wait_for_text("Rewound to before prompt 2");
    eprintln!("after the rewind:\n{rewound}");
    assert!(
        rewound.contains("files: put back doomed.txt, notes.txt; removed created.txt, data.bin"),
        "{rewound}"
    );
    assert_eq!(
        read(root, "notes.txt").unwrap(),
        "first line\nsecond line\n"
    );
    assert_eq!(read(root, "doomed.txt").unwrap(), "bye\n");
    assert!(read(root, "created.txt").is_none());
    // The prompt is back in the composer for editing and sending again.
    let composer = rewound.lines().rev().nth(1).unwrap();
    assert!(composer.contains("please edit the files"), "{rewound}");
    pane.keys(&["C-u"]);
    pane.prompt("hello again");
    pane.wait_for_text("Prompt 2 in session");
    let requests = requests(session.state.path());
    eprintln!("the requests: {requests:?}");
    assert_eq!(
        requests.last().unwrap(),
        &["hello one".to_owned(), "hello again".to_owned()],
        "the rewound prompts no longer reach the model"
    );
}

#[test]
fn a_resumed_conversation_shows_its_changes_and_diffs_them() {
    let Some(session) = start(100, 30) else {
        return;
    };
    session.pane.wait_for_text("Ask the agent anything");
    session.pane.prompt("please edit the files");
    session.pane.wait_for_text("4 files changed");
    session.pane.wait_for_text("│ idle ");
    session.pane.keys(&["C-c"]);
    session.pane.keys(&["C-c"]);
    session.pane.kill_server();
    let pane = launch(&session.state, &session.work, 100, 30, "--resume");
    let resumed = pane.wait_for_text("4 files changed · +2 −1");
    eprintln!("resumed:\n{resumed}");
    pane.prompt("/diff");
    let diff = pane.wait_for_text("Changes · this conversation (1 turn) · 4 files");
    assert!(diff.contains("━ notes.txt +1 −0"), "{diff}");
    pane.keys(&["Escape"]);
    pane.kill_server();
}

/// Undo and rewind survive `--resume`: the log replays them (the turn undone is not offered
/// again, the prompts taken back stay marked and leave the picker), the agent resumed continues
/// from the rewound point, and an earlier turn of the first run can still be rewound: its
/// checkpoint of the agent's session was kept on disk beside the snapshots.
#[test]
fn undo_and_rewind_survive_a_resume_and_the_agent_continues_from_the_rewound_point() {
    let Some(session) = start(100, 36) else {
        return;
    };
    let root = session.work.path();
    let pane = &session.pane;
    pane.prompt("hello one");
    pane.wait_for_text("Prompt 1 in session");
    pane.prompt("please edit the files");
    pane.wait_for_text("4 files changed");
    pane.prompt("hello three");
    pane.wait_for_text("Prompt 3 in session");
    pane.wait_for_text("│ idle ");
    pane.prompt("/undo");
    // The last turn changed no file: the undo names the prompt whose changes it undid.
    pane.wait_for_text("Undone (prompt 2 “please edit the files”): put back");
    assert_eq!(read(root, "doomed.txt").unwrap(), "bye\n");

    // Rewind the conversation to before "hello three" (the newest row; it changed no file, so
    // the conversation is all there is to take back).
    pane.prompt("/rewind");
    pane.wait_for_text("Rewind to before");
    pane.keys(&["Enter", "Up", "Enter"]);
    let rewound = pane.wait_for_text("Rewound to before prompt 3");
    eprintln!("rewound in the first run:\n{rewound}");
    assert!(
        rewound.contains("↶ rewound: the agent no longer has this turn"),
        "the turn taken back is marked, not deleted:\n{rewound}"
    );
    assert!(rewound.contains("hello three"), "{rewound}");
    pane.keys(&["C-u"]);
    pane.keys(&["C-c"]);
    pane.keys(&["C-c"]);
    pane.kill_server();

    let pane = launch(&session.state, &session.work, 100, 36, "--resume");
    let resumed = pane.wait_for_text("Rewound to before prompt 3");
    eprintln!("resumed:\n{resumed}");
    assert!(
        resumed.contains("↶ rewound: the agent no longer has this turn"),
        "{resumed}"
    );
    pane.prompt("/undo");
    pane.wait_for_text("No turn's file changes are left to undo.");

    // The resumed agent continues from the rewound point.
    pane.prompt("after resume");
    // The resumed transcript already shows "Prompt 3 in session": wait for this answer's echo
    // (the turn is running from then on), then for its end.
    pane.wait_for_text("│ after resume");
    pane.wait_for_text("│ idle ");
    assert_eq!(
        requests(session.state.path()).last().unwrap(),
        &["hello one", "please edit the files", "after resume"].map(str::to_owned),
        "the prompt rewound away before the resume no longer reaches the model"
    );

    // The picker no longer offers the prompt taken back; turn 2 of the first run can still
    // be rewound (conversation only).
    pane.prompt("/rewind");
    let picker = pane.wait_for_text("Rewind to before");
    eprintln!("the picker after the resume:\n{picker}");
    let rows: Vec<&str> = picker
        .lines()
        .filter(|row| row.contains(" ago · "))
        .collect();
    assert_eq!(rows.len(), 3, "{picker}");
    assert!(rows[0].contains("after resume"), "{picker}");
    assert!(rows[1].contains("please edit the files"), "{picker}");
    assert!(rows[2].contains("hello one"), "{picker}");
    // Its files were undone: the conversation is all there is to take back.
    pane.keys(&["Down", "Enter", "Up", "Enter"]);
    let again = pane.wait_for_text("Rewound to before prompt 2");
    eprintln!("rewound after the resume:\n{again}");
    assert!(
        again.contains("the agent's conversation is as it was then"),
        "{again}"
    );
    pane.keys(&["C-u"]);
    pane.prompt("hello again");
    pane.wait_for_text("Prompt 2 in session");
    assert_eq!(
        requests(session.state.path()).last().unwrap(),
        &["hello one", "hello again"].map(str::to_owned),
    );
    pane.kill_server();
}

/// What a rewind took back stays recoverable: `/rewind` offers "Undo the last rewind" first
/// (until the next prompt), also after `--resume`; undoing it brings the files back as the
/// rewind found them and the agent's conversation as it was, so the next request carries
/// every prompt again.
#[test]
fn a_rewind_can_be_undone_after_a_resume_and_the_agent_has_every_prompt_again() {
    let Some(session) = start(100, 30) else {
        return;
    };
    let root = session.work.path();
    let pane = &session.pane;
    pane.prompt("hello one");
    pane.wait_for_text("Prompt 1 in session");
    pane.prompt("please edit the files");
    pane.wait_for_text("4 files changed");
    pane.wait_for_text("│ idle ");
    let edited = read(root, "notes.txt").unwrap();

    // Conversation and files, to before the edit (the newest row).
    pane.prompt("/rewind");
    pane.wait_for_text("Rewind to before");
    pane.keys(&["Enter", "Up", "Up", "Up", "Enter"]);
    pane.wait_for_text("Rewound to before prompt 2");
    assert_eq!(
        read(root, "notes.txt").unwrap(),
        "first line\nsecond line\n"
    );
    assert!(read(root, "created.txt").is_none());
    pane.keys(&["C-u"]);
    pane.keys(&["C-c"]);
    pane.keys(&["C-c"]);
    pane.kill_server();

    let pane = launch(&session.state, &session.work, 100, 30, "--resume");
    pane.wait_for_text("Rewound to before prompt 2");
    pane.prompt("/rewind");
    let picker = pane.wait_for_text("Rewind to before");
    eprintln!("the picker with the undo:\n{picker}");
    assert!(
        picker.contains("↷ Undo the last rewind (to before prompt 2)"),
        "{picker}"
    );
    pane.keys(&["Enter"]);
    let preview = pane.wait_for_text("Undo the last rewind?");
    eprintln!("the undo's preview:\n{preview}");
    assert!(
        preview.contains("the agent has the prompt taken back again"),
        "{preview}"
    );
    // What the undo brings back, and doomed.txt, which the rewind recreated, deleted again.
    assert!(
        box_text(&preview).contains(
            "Files brought back as the rewind found them: created.txt, data.bin, notes.txt; \
             deleted again (the turns deleted them): doomed.txt."
        ),
        "{preview}"
    );
    pane.keys(&["Up", "Enter"]);
    let undone = pane.wait_for_text("Undid the rewind to before prompt 2");
    eprintln!("after the undo:\n{undone}");
    assert!(
        !undone.contains("↶ rewound"),
        "the turn is no longer marked:\n{undone}"
    );
    assert_eq!(read(root, "notes.txt").unwrap(), edited);
    assert!(read(root, "created.txt").is_some());
    assert!(read(root, "doomed.txt").is_none());
    pane.prompt("and now");
    pane.wait_for_text("Prompt 3 in session");
    assert_eq!(
        requests(session.state.path()).last().unwrap(),
        &["hello one", "please edit the files", "and now"].map(str::to_owned),
    );
    pane.kill_server();
}

/// The demo agent playing Codex's app-server, whose session Codex holds itself: a rewind to a
/// finished turn forks its thread (`thread/fork`), before and after `--resume`, and the next
/// request carries only the prompts before the turn rewound to.
#[test]
fn on_codex_s_app_server_a_rewind_to_a_finished_turn_forks_the_thread_also_after_a_resume() {
    if !tmux_available() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let start = |resume: &str| {
        let command = format!(
            "cd {work} && AGENTTY_STATE_DIR={state} AGENTTY_DEMO_STATE_DIR={state}/demo \
             AGENTTY_DEMO_TIME_SCALE=0.1 exec {bin} --provider demo --transport app-server {resume}",
            work = work.path().display(),
            state = state.path().display(),
            bin = env!("CARGO_BIN_EXE_agentty"),
        );
        let pane = tmux::Pane::spawn(tmux::socket_name("agentty-review-codex"), 100, 30, &command);
        pane.wait_for_text("demo");
        pane
    };
    let requests = || -> Vec<Vec<String>> {
        let log = agentty::demo_agent::codex_app_server::requests_file(&state.path().join("demo"));
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .map(|line| {
                let request: serde_json::Value = serde_json::from_str(line).unwrap();
                serde_json::from_value(request["users"].clone()).unwrap()
            })
            .collect()
    };
    let pane = start("");
    for (number, prompt) in ["hello one", "hello two", "hello three"].iter().enumerate() {
        pane.prompt(prompt);
        // The answer on screen and the turn over, not only the request sent: a screen
        // captured before the loop drew the prompt still says idle.
        pane.wait_for(&format!("answer {} and idle", number + 1), |screen| {
            requests().len() == number + 1
                && screen
                    .matches("Hello from the demo Codex app-server")
                    .count()
                    == number + 1
                && screen.contains("│ idle ")
        });
    }
    let rewind_to = |pane: &tmux::Pane, row: usize, expected: &str| {
        pane.prompt("/rewind");
        let picker = pane.wait_for_text("Rewind to before");
        assert!(
            !picker.contains("files only"),
            "Codex's conversation can go back: {picker}"
        );
        let mut keys = vec!["Down"; row];
        keys.push("Enter");
        pane.keys(&keys);
        pane.wait_for_text("Rewind: take back what?");
        // Up from Cancel: "Rewind the conversation" (these turns changed no file).
        pane.keys(&["Up", "Enter"]);
        pane.wait_for_text(expected);
        pane.keys(&["C-u"]);
    };
    rewind_to(&pane, 1, "Rewound to before prompt 2");
    pane.prompt("hello again");
    pane.wait_for("the request after the rewind", |_| requests().len() == 4);
    assert_eq!(requests()[3], ["hello one", "hello again"]);
    // The turn shown (its prompt echoed), then over: a screen captured before the loop drew
    // the prompt still says idle.
    pane.wait_for_text("› hello again");
    pane.wait_for_text("│ idle ");
    pane.kill_server();

    // After --resume: back to before turn 4 ("hello again"), in a new app-server.
    let pane = start("--resume");
    // "hello again" is the second prompt the agent has.
    rewind_to(&pane, 0, "Rewound to before prompt 2");
    pane.prompt("hello five");
    pane.wait_for("the request after the resumed rewind", |_| {
        requests().len() == 5
    });
    assert_eq!(requests()[4], ["hello one", "hello five"]);
    pane.kill_server();
}
