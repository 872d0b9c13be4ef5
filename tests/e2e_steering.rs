//! End-to-end in tmux: the chat on the demo agent over pi's RPC transport (the CI stand-in for
//! pi). During one turn Enter steers and Alt+Enter queues a follow-up; the agent's queue shows
//! above the composer, then both are delivered within the same turn, and Esc stops a turn
//! in-band with the agent process kept for the next prompt. Without tmux these tests fail;
//! `AGENTTY_SKIP_TMUX_TESTS=1` skips them on purpose.

use std::process::Command;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(30);

struct Pane {
    socket: String,
    state: tempfile::TempDir,
}

impl Pane {
    fn start(name: &str, time_scale: &str) -> Option<Pane> {
        if std::env::var_os("AGENTTY_SKIP_TMUX_TESTS").is_some_and(|value| value == "1") {
            eprintln!("note: AGENTTY_SKIP_TMUX_TESTS=1; skipping the end-to-end test");
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
        let started = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "new-session",
                "-d",
                "-s",
                "t",
                "-x",
                "100",
                "-y",
                "30",
            ])
            .arg(&command)
            .status()
            .expect("tmux is installed (or set AGENTTY_SKIP_TMUX_TESTS=1)");
        assert!(started.success());
        let pane = Pane { socket, state };
        pane.wait_for("Ask the agent anything");
        Some(pane)
    }

    fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "t"])
    }

    fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let screen = self.screen();
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "no {needle:?} on screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "t", "-l", text]);
    }

    fn key(&self, key: &str) {
        self.tmux(&["send-keys", "-t", "t", key]);
    }

    /// PIDs of demo agents in RPC mode that carry this test's state dir.
    fn agents(&self) -> Vec<i32> {
        let marker = format!(
            "AGENTTY_DEMO_STATE_DIR={}/demo",
            self.state.path().display()
        );
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
                let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                cmdline.contains("demo-agent --mode rpc")
                    && String::from_utf8_lossy(&environ)
                        .split('\0')
                        .any(|var| var == marker)
            })
            .collect()
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
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
    pane.wait_for("demo · demo-1");
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
