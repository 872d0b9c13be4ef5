//! End-to-end in tmux: the chat on the demo agent over pi's RPC transport (the CI stand-in for
//! pi). During one turn Enter steers and Alt+Enter queues a follow-up; the agent's queue shows
//! above the composer, then both are delivered within the same turn, and Esc stops a turn
//! in-band with the agent process kept for the next prompt. Without tmux these tests fail;
//! `AGENTTY_SKIP_TMUX_TESTS=1` skips them on purpose.

use crate::support::tmux;

use tmux::{processes_with_variable, tmux_available};

struct Pane {
    pane: tmux::Pane,
    state: tempfile::TempDir,
}

impl Pane {
    fn start(name: &str, time_scale: &str) -> Option<Pane> {
        if !tmux_available() {
            return None;
        }
        let state = tempfile::tempdir().unwrap();
        let socket = format!("agentty-steer-{}-{name}", std::process::id());
        let command = format!(
            "AGENTTY_STATE_DIR={state} AGENTTY_DEMO_STATE_DIR={state}/demo \
             AGENTTY_DEMO_TIME_SCALE={time_scale} exec {bin} --provider demo --transport rpc",
            state = state.path().display(),
            bin = env!("CARGO_BIN_EXE_agentty"),
        );
        let pane = Pane {
            pane: tmux::Pane::spawn(socket, 100, 30, &command),
            state,
        };
        pane.wait_for("Ask the agent anything");
        // The working tree's first snapshot is done (the first prompt would wait for it).
        pane.wait_for(" idle");
        Some(pane)
    }

    fn wait_for(&self, needle: &str) -> String {
        self.pane.wait_for_text(needle)
    }

    fn type_text(&self, text: &str) {
        self.pane.type_text(text);
    }

    fn key(&self, key: &str) {
        self.pane.keys(&[key]);
    }

    /// PIDs of demo agents in RPC mode that carry this test's state dir.
    fn agents(&self) -> Vec<i32> {
        let marker = format!(
            "AGENTTY_DEMO_STATE_DIR={}/demo",
            self.state.path().display()
        );
        processes_with_variable(&marker)
            .into_iter()
            .filter(|(_, command)| command.contains("demo-agent --mode rpc"))
            .map(|(pid, _)| pid)
            .collect()
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        self.pane.kill_server();
    }
}

#[test]
fn a_steer_and_a_follow_up_during_one_turn() {
    let Some(pane) = Pane::start("steer", "0.1") else {
        return;
    };
    pane.type_text("be slow please");
    pane.key("Enter");
    pane.wait_for("Enter steers · Alt+Enter follows up");
    pane.type_text("go left");
    pane.key("Enter");
    pane.type_text("then right");
    pane.key("M-Enter");
    let during = pane.wait_for("↳ follow-up: then right");
    eprintln!("during the turn:\n{during}");
    assert!(during.contains("↳ steer: go left"), "{during}");
    let after = pane.wait_for("Your follow-up: \"then right\"");
    eprintln!("after the turn:\n{after}");
    assert!(after.contains("↳ steered: go left"), "{after}");
    assert!(after.contains("↳ follow-up: then right"), "{after}");
    assert!(
        after.contains("You steered me while I worked: \"go left\""),
        "{after}"
    );
    assert!(
        !after.contains("↳ steer: go left"),
        "the queue is empty once delivered"
    );
    pane.wait_for("Enter sends");
}

#[test]
fn esc_stops_in_band_and_the_same_agent_answers_the_next_prompt() {
    let Some(pane) = Pane::start("esc", "0.1") else {
        return;
    };
    pane.wait_for("demo · Demo One");
    let agents = pane.agents();
    assert_eq!(agents.len(), 1, "the agent starts with the conversation");
    pane.type_text("be slow please");
    pane.key("Enter");
    pane.wait_for("Enter steers");
    pane.key("Escape");
    pane.wait_for("Enter sends");
    assert_eq!(pane.agents(), agents, "abort kept the agent");
    pane.type_text("hello");
    pane.key("Enter");
    pane.wait_for("Prompt 2 in session");
    assert_eq!(pane.agents(), agents, "the same agent answered");
}

/// pi keeps a steer queued across `abort`: Esc must not leave it to be delivered into the next
/// prompt's turn. The user is told it did not arrive, it comes back into the editor, and the
/// next answer knows nothing of it.
#[test]
fn a_steer_still_queued_at_esc_is_not_delivered_into_the_next_turn() {
    // Full time: the slow answer's one step lasts about 30 s, so the steer is still queued.
    let Some(pane) = Pane::start("esc-steer", "1") else {
        return;
    };
    pane.wait_for("demo · Demo One");
    pane.type_text("be slow please");
    pane.key("Enter");
    pane.wait_for("Enter steers");
    pane.type_text("my steer");
    pane.key("Enter");
    pane.wait_for("↳ steer: my steer");
    pane.key("Escape");
    let stopped = pane.wait_for("back in the editor: my steer");
    eprintln!("after Esc:\n{stopped}");
    pane.wait_for("Enter sends");
    assert!(
        !pane.pane.screen().contains("↳ steer: my steer"),
        "no steer is left pending"
    );
    let screen = pane.pane.screen();
    assert!(
        screen.lines().any(|line| line.trim_end() == "my steer"),
        "the steer is back in the editor: {screen}"
    );
    // Not sent again: the user clears it and asks something else.
    pane.key("C-c");
    pane.type_text("hello");
    pane.key("Enter");
    let after = pane.wait_for("Prompt 2 in session");
    eprintln!("the next turn:\n{after}");
    assert!(!after.contains("You steered me"), "{after}");
}

/// The status bar shows how full the model's context window is once pi has said so.
#[test]
fn the_status_bar_shows_the_share_of_the_context_window() {
    let Some(pane) = Pane::start("context", "0") else {
        return;
    };
    pane.wait_for("demo · Demo One");
    assert!(!pane.pane.screen().contains("ctx "));
    pane.type_text("hi");
    pane.key("Enter");
    let screen = pane.wait_for("ctx 1%");
    eprintln!("after the turn:\n{screen}");
}
