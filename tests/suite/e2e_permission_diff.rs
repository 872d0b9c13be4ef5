//! End-to-end in tmux at 40x12: the demo agent over ACP asks to edit a file (`rewrite`: a diff
//! whose two hunks are 25 lines apart, as Claude's and Codex's edit approvals show one). The
//! prompt has room for its options only; PgDn brings the change being approved into view a row
//! at a time down to its end, PgUp back to the options, and `y` then allows the edit.

use crate::support::tmux;

use tmux::tmux_available;

const FILE: &str = "agentty-demo-lines.txt";

/// The options' rows: the prompt shows them, not the diff.
fn shows_options(screen: &str) -> bool {
    screen.contains("1 y  Allow") && screen.contains("2 n  Reject")
}

#[test]
fn an_edits_diff_scrolls_into_view_with_pgdn_and_back_with_pgup_at_40x12() {
    if !tmux_available() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let old: String = (1..=40).map(|number| format!("line {number}\n")).collect();
    std::fs::write(work.path().join(FILE), &old).unwrap();
    let command = format!(
        "cd {work} && AGENTTY_STATE_DIR={state} AGENTTY_DEMO_STATE_DIR={state}/demo \
         AGENTTY_DEMO_TIME_SCALE=0.1 exec {bin} --provider demo --transport acp",
        work = work.path().display(),
        state = state.path().display(),
        bin = env!("CARGO_BIN_EXE_agentty"),
    );
    let socket = format!("agentty-permdiff-{}", std::process::id());
    let pane = tmux::Pane::spawn(socket, 40, 12, &command);
    struct Stop<'a>(&'a tmux::Pane);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.kill_server();
        }
    }
    let _stop = Stop(&pane);
    pane.wait_for_text("Ask the agent anything");
    pane.prompt("rewrite please");
    pane.wait_for_text("Tab to answer");
    pane.keys(&["Tab"]);
    let asked = pane.wait_for_text("answer with a key");
    eprintln!("the prompt at 40x12:\n{asked}");
    assert!(shows_options(&asked), "{asked}");
    assert!(
        asked.contains("PgDn"),
        "the key that shows the diff is named:\n{asked}"
    );
    assert!(
        !asked.contains("(edited)"),
        "no room for the diff yet:\n{asked}"
    );

    // PgDn, one key at a time, each waited for, until the view says nothing is below.
    let mut screen = asked;
    let mut seen = Vec::new();
    for _ in 0..60 {
        let before = screen.clone();
        pane.keys(&["NPage"]);
        screen = pane.wait_for("the diff to move", |now| now != before);
        for line in [
            "- line 5",
            "+ line 5 (edited)",
            "+ line 30 (edited)",
            "+ Rewritten by",
        ] {
            if screen.contains(line) && !seen.contains(&line) {
                seen.push(line);
            }
        }
        if screen.contains("above · PgUp") {
            break;
        }
    }
    eprintln!("the end of the diff at 40x12:\n{screen}");
    assert!(
        screen.contains("above · PgUp"),
        "PgDn reached the end:\n{screen}"
    );
    assert_eq!(
        seen,
        [
            "- line 5",
            "+ line 5 (edited)",
            "+ line 30 (edited)",
            "+ Rewritten by"
        ],
        "every change came into view, in order"
    );
    assert!(!std::fs::read_to_string(work.path().join(FILE))
        .unwrap()
        .contains("edited"));

    // PgUp goes back up to the options, which still answer.
    for _ in 0..60 {
        if shows_options(&screen) {
            break;
        }
        let before = screen.clone();
        pane.keys(&["PPage"]);
        screen = pane.wait_for("the diff to move back", |now| now != before);
    }
    assert!(
        shows_options(&screen),
        "PgUp brought the options back:\n{screen}"
    );
    pane.keys(&["y"]);
    pane.wait_for_text("Edited agentty-demo-lines.txt.");
    let edited = std::fs::read_to_string(work.path().join(FILE)).unwrap();
    assert!(edited.contains("line 30 (edited)\n"), "{edited}");
    assert!(
        edited.ends_with("Rewritten by the demo ACP agent.\n"),
        "{edited}"
    );
}
