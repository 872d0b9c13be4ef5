//! End-to-end in tmux: the chat on the demo agent playing `codex app-server`
//! (`--provider demo --transport app-server`). The agent asks before it runs a command; the
//! prompt shows the command and Codex's own choices, `y` allows it and the file is written; `r`
//! rejects with a note that reaches the agent as the next prompt; Shift+Tab cycles Codex's
//! approval presets in the status bar. Without tmux these tests fail;
//! `AGENTTY_SKIP_TMUX_TESTS=1` skips them on purpose.

use crate::support::tmux;

use agentty::demo_agent::codex_app_server::{requests_file, WRITTEN_FILE};
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
        let socket = format!("agentty-codex-{}-{name}", std::process::id());
        let command = format!(
            "cd {work} && AGENTTY_STATE_DIR={state} AGENTTY_DEMO_STATE_DIR={state}/demo \
             AGENTTY_DEMO_TIME_SCALE=0.1 exec {bin} --provider demo --transport app-server",
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

    fn written(&self) -> bool {
        self.work.path().join(WRITTEN_FILE).exists()
    }

    /// The user messages of each model request the demo made.
    fn requests(&self) -> Vec<Vec<String>> {
        std::fs::read_to_string(requests_file(&self.state.path().join("demo")))
            .unwrap_or_default()
            .lines()
            .map(|line| {
                let request: serde_json::Value = serde_json::from_str(line).unwrap();
                request["users"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|user| user.as_str().unwrap().to_owned())
                    .collect()
            })
            .collect()
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        self.pane.kill_server();
    }
}

#[test]
fn the_prompt_shows_codexs_choices_and_y_writes_the_file() {
    let Some(pane) = Pane::start("allow", 160, 50) else {
        return;
    };
    pane.pane.prompt("please write the file");
    pane.pane.wait_for_text("Tab to answer");
    pane.pane.keys(&["Tab"]);
    let asked = pane.pane.wait_for_text("answer with a key");
    eprintln!("the prompt at 160x50:\n{asked}");
    assert!(asked.contains(&format!("touch {WRITTEN_FILE}")), "{asked}");
    for option in [
        "1 y  Yes, proceed",
        "A  Yes, and don't ask again this session",
        "2 n  No, and let Codex go on without it",
        "No, and stop the turn",
    ] {
        assert!(asked.contains(option), "{option} missing:\n{asked}");
    }
    assert!(asked.contains("shell · waiting for you"), "{asked}");
    assert!(!pane.written(), "nothing ran before the answer");
    pane.pane.keys(&["y"]);
    pane.pane
        .wait_for_text(&format!("I created {WRITTEN_FILE}."));
    assert!(pane.written());
}

#[test]
fn a_rejection_with_a_note_reaches_the_agent_as_the_next_prompt_at_a_small_size() {
    let Some(pane) = Pane::start("note", 60, 18) else {
        return;
    };
    pane.pane.prompt("please write the file");
    pane.pane.wait_for_text("Tab to answer");
    pane.pane.keys(&["Tab"]);
    let asked = pane.pane.wait_for_text("answer with a key");
    eprintln!("the prompt at 60x18:\n{asked}");
    pane.pane.keys(&["r"]);
    pane.pane.type_text("use echo instead");
    pane.pane.keys(&["Enter"]);
    pane.pane.wait_for("the note's turn", |screen| {
        screen.contains("› use echo instead") && screen.contains("idle")
    });
    assert!(!pane.written());
    let requests = pane.requests();
    assert_eq!(
        requests.last().unwrap(),
        &["please write the file", "use echo instead"],
        "{requests:?}"
    );
}

#[test]
fn shift_tab_cycles_codexs_approval_presets_but_full_access_takes_an_explicit_yes() {
    let Some(pane) = Pane::start("modes", 160, 50) else {
        return;
    };
    pane.pane.prompt("say hello");
    let screen = pane
        .pane
        .wait_for_text("Hello from the demo Codex app-server.");
    let bar = screen
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap()
        .to_owned();
    assert!(
        bar.contains("Demo Model · thinking medium · mode read only"),
        "{bar}"
    );
    pane.pane.keys(&["BTab"]);
    let screen = pane.pane.wait_for_text("Mode: auto");
    eprintln!("after Shift+Tab:\n{screen}");
    // Full access is never a step of the cycle: after auto comes read only.
    pane.pane.keys(&["BTab"]);
    let screen = pane.pane.wait_for_text("Mode: read only");
    assert!(!screen.contains("Mode: full access"), "{screen}");
    // It takes /permissions and an explicit yes that names what it allows.
    pane.pane.prompt("/permissions");
    let picker = pane.pane.wait_for_text("┌ Permission mode");
    eprintln!("/permissions:\n{picker}");
    assert!(
        picker.contains("full access  ⚠ most permissive: asks first"),
        "{picker}"
    );
    pane.pane.keys(&["End", "Enter"]);
    let asked = pane.pane.wait_for_text("Switch to full access?");
    eprintln!("the question:\n{asked}");
    assert!(asked.contains("Codex runs every command"), "{asked}");
    pane.pane.keys(&["y"]);
    let switched = pane.pane.wait_for_text("Mode: full access —");
    assert!(switched.contains("mode ⚠ full access"), "{switched}");
    // Full access: the agent runs the command without asking.
    pane.pane.prompt("please write the file");
    pane.pane
        .wait_for_text(&format!("I created {WRITTEN_FILE}."));
    assert!(pane.written());
    assert!(!pane.pane.screen().contains("Permission needed"));
}
