//! End-to-end in tmux: the chat on the demo agent playing Claude Code's stream-json control
//! protocol (`--transport stream`). The agent asks before it writes a file; one key allows it
//! and the file is on disk; `r` rejects with a note the agent receives; Shift+Tab cycles
//! Claude Code's permission modes and `/model` switches the model, both shown in the status
//! bar. Without tmux these tests fail; `AGENTTY_SKIP_TMUX_TESTS=1` skips them on purpose.

use crate::support::tmux;

use tmux::tmux_available;

struct Pane {
    pane: tmux::Pane,
    state: tempfile::TempDir,
    work: tempfile::TempDir,
}

impl Pane {
    fn start(name: &str, width: u16, height: u16) -> Option<Pane> {
        if !tmux_available() {
            return None;
        }
        let state = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let socket = format!("agentty-cstream-{}-{name}", std::process::id());
        let command = format!(
            "cd {work} && AGENTTY_STATE_DIR={state} AGENTTY_DEMO_STATE_DIR={state}/demo \
             AGENTTY_DEMO_TIME_SCALE=0.1 exec {bin} --provider demo --transport stream",
            work = work.path().display(),
            state = state.path().display(),
            bin = env!("CARGO_BIN_EXE_agentty"),
        );
        let pane = Pane {
            pane: tmux::Pane::spawn(socket, width, height, &command),
            state,
            work,
        };
        pane.pane.wait_for_text("Ask the agent anything");
        Some(pane)
    }

    /// The prompt opened, and Tab gave it the keys.
    fn focus_prompt(&self) -> String {
        self.pane.wait_for_text("Tab to answer");
        self.pane.keys(&["Tab"]);
        self.pane.wait_for_text("answer with a key")
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        self.pane.kill_server();
        let _ = &self.state;
    }
}

#[test]
fn a_write_is_asked_allowed_with_tab_and_one_key_and_on_disk() {
    let Some(pane) = Pane::start("allow", 160, 50) else {
        return;
    };
    pane.pane.prompt("please write it");
    let asked = pane.focus_prompt();
    eprintln!("the prompt at 160x50:\n{asked}");
    assert!(asked.contains("Allow edit: Write "), "{asked}");
    assert!(
        asked.contains("+ written by the demo agent"),
        "the diff:\n{asked}"
    );
    assert!(asked.contains("1 y  Allow once"), "{asked}");
    assert!(
        asked.contains("A  Always allow in this session (Write)"),
        "{asked}"
    );
    assert!(
        asked.contains("· stream"),
        "the status bar names the transport:\n{asked}"
    );
    pane.pane.keys(&["y"]);
    let done = pane.pane.wait_for_text("Wrote demo-claude.txt.");
    assert!(done.contains("allowed once (you)"), "{done}");
    assert_eq!(
        std::fs::read_to_string(pane.work.path().join("demo-claude.txt")).unwrap(),
        "written by the demo agent\n"
    );
}

#[test]
fn a_rejection_with_a_note_reaches_the_agent() {
    let Some(pane) = Pane::start("note", 100, 30) else {
        return;
    };
    pane.pane.prompt("write other.txt please");
    pane.focus_prompt();
    pane.pane.keys(&["r"]);
    pane.pane.wait_for_text("What should the agent do instead?");
    pane.pane.type_text("put it in notes.md");
    pane.pane.keys(&["Enter"]);
    let done = pane
        .pane
        .wait_for_text("Not written: The user rejected this tool use and said: put it in");
    assert!(done.contains("rejected (you)"), "{done}");
    assert!(!pane.work.path().join("other.txt").exists());
}

#[test]
fn shift_tab_cycles_the_permission_mode_and_model_switches_the_model() {
    let Some(pane) = Pane::start("mode", 160, 40) else {
        return;
    };
    let first = pane.pane.wait_for_text("mode default");
    assert!(
        first.contains("· Default (demo-claude-1) · mode default"),
        "{first}"
    );
    pane.pane.keys(&["BTab"]);
    let accept = pane.pane.wait_for_text("mode accept edits");
    assert!(accept.contains("Mode: accept edits"), "{accept}");
    // In acceptEdits Claude Code writes without asking.
    pane.pane.prompt("please write it");
    let done = pane.pane.wait_for_text("Wrote demo-claude.txt.");
    assert!(!done.contains("Permission needed"), "{done}");
    pane.pane.keys(&["BTab"]);
    pane.pane.wait_for_text("mode plan");
    pane.pane.prompt("/model");
    let picker = pane.pane.wait_for_text("Demo Claude Two");
    assert!(picker.contains("● Default (demo-claude-1)"), "{picker}");
    pane.pane.keys(&["Down", "Enter"]);
    let switched = pane.pane.wait_for_text("· Demo Claude Two · mode plan");
    assert!(switched.contains("Model: Demo Claude Two"), "{switched}");
}

#[test]
fn the_prompt_fits_a_small_terminal() {
    let Some(pane) = Pane::start("small", 60, 18) else {
        return;
    };
    pane.pane.prompt("please write it");
    let asked = pane.focus_prompt();
    eprintln!("the prompt at 60x18:\n{asked}");
    assert!(asked.contains("Allow once"), "{asked}");
    pane.pane.keys(&["y"]);
    pane.pane.wait_for_text("Wrote demo-claude.txt.");
    assert!(pane.work.path().join("demo-claude.txt").exists());
}

/// Claude's session-wide suggestion for a write is offered as such, with the care of any
/// "always" answer: ↓ only highlights it, Enter confirms; the mode then shows in the status bar
/// and the next write is not asked.
#[test]
fn all_edits_this_session_is_highlighted_then_confirmed_and_the_mode_shows() {
    let Some(pane) = Pane::start("edits", 160, 50) else {
        return;
    };
    pane.pane.prompt("write a.txt please");
    let asked = pane.focus_prompt();
    assert!(asked.contains("Allow all edits this session"), "{asked}");
    // Allow once is highlighted first; the rule, then the session's mode, below it.
    pane.pane.keys(&["Down", "Down"]);
    let highlighted = pane
        .pane
        .wait_for_text("confirms: Allow all edits this session");
    eprintln!("the session-wide option highlighted at 160x50:\n{highlighted}");
    assert!(!pane.work.path().join("a.txt").exists(), "not yet chosen");
    pane.pane.keys(&["Enter"]);
    let done = pane.pane.wait_for_text("mode accept edits");
    assert!(pane.work.path().join("a.txt").exists(), "{done}");
    pane.pane.prompt("write b.txt please");
    let second = pane.pane.wait_for_text("Wrote b.txt.");
    assert!(!second.contains("Tab to answer"), "{second}");
    assert!(pane.work.path().join("b.txt").exists());
}

/// Claude's effort: Shift+Tab in `/model` steps the levels the model lists, and the status
/// bar shows the one chosen.
#[test]
fn the_effort_steps_in_the_model_picker_and_shows_in_the_status_bar() {
    let Some(pane) = Pane::start("effort", 60, 20) else {
        return;
    };
    pane.pane.prompt("hi");
    pane.pane.wait_for_text("heard: 'hi'");
    pane.pane.prompt("/model");
    pane.pane.wait_for_text("Demo Claude Two");
    pane.pane.keys(&["BTab", "BTab"]);
    let picker = pane.pane.wait_for_text("thinking: medium");
    eprintln!("the model picker at 60x20:\n{picker}");
    pane.pane.keys(&["Escape"]);
    let status = pane.pane.wait_for_text("Thinking level: medium");
    assert!(status.contains("· medium ·"), "{status}");
}
