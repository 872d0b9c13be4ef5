//! End-to-end in tmux: the chat on the demo agent over the Agent Client Protocol. The agent asks
//! before it runs a command; the prompt renders over the transcript with the agent's options,
//! one key answers it, and the tool runs (or does not) accordingly; Esc rejects. Without tmux
//! these tests fail; `AGENTTY_SKIP_TMUX_TESTS=1` skips them on purpose.

#[path = "support/tmux.rs"]
mod tmux;

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
        let socket = format!("agentty-perm-{}-{name}", std::process::id());
        let command = format!(
            "cd {work} && AGENTTY_STATE_DIR={state} AGENTTY_DEMO_STATE_DIR={state}/demo \
             AGENTTY_DEMO_TIME_SCALE=0.1 exec {bin} --provider demo --transport acp",
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

    fn created(&self) -> bool {
        self.work.path().join("agentty-demo.txt").exists()
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        self.pane.kill_server();
        let _ = &self.state;
    }
}

#[test]
fn the_prompt_renders_and_one_key_allows_the_command() {
    let Some(pane) = Pane::start("allow", 160, 50) else {
        return;
    };
    pane.pane.prompt("please ask permission to create the file");
    let asked = pane.pane.wait_for_text("Permission needed");
    eprintln!("the prompt at 160x50:\n{asked}");
    assert!(
        asked.contains("Allow execute: touch agentty-demo.txt?"),
        "{asked}"
    );
    for option in [
        "1 y  Allow",
        "2 a  Always allow",
        "3 n  Reject",
        "4 N  Never",
    ] {
        assert!(asked.contains(option), "{option} missing:\n{asked}");
    }
    assert!(
        asked.contains("waiting for your answer"),
        "the status says so:\n{asked}"
    );
    assert!(!pane.created(), "nothing ran before the answer");
    // Keys typed in the first moment after the prompt appears are not taken as answers.
    std::thread::sleep(std::time::Duration::from_millis(600));
    pane.pane.keys(&["y"]);
    let after = pane.pane.wait_for_text("allowed once (you)");
    pane.pane.wait_for_text("Done.");
    assert!(pane.created(), "the command ran after approval");
    assert!(
        !after.contains("Permission needed"),
        "the prompt closed:\n{after}"
    );
}

#[test]
fn esc_rejects_and_the_command_never_runs_at_a_small_size() {
    let Some(pane) = Pane::start("esc", 40, 12) else {
        return;
    };
    pane.pane.prompt("permission please");
    let asked = pane.pane.wait_for_text("Reject");
    eprintln!("the prompt at 40x12:\n{asked}");
    pane.pane.keys(&["Escape"]);
    pane.pane.wait_for_text("refused");
    assert!(!pane.created());
    // The turn was not stopped: the agent finished it and the chat is idle again.
    pane.pane.wait_for_text("idle");
}
