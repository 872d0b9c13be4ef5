//! The chat's memory per turn (issue 37, item 9: under 2 KiB a turn beyond the transcript's
//! own text): agentty over the demo agent (pi's RPC transport) in a 160x50 tmux pane, with
//! snapshots on, each prompt sent as the last answer ends; agentty's VmRSS after turns
//! `FROM` and `TO`, and the growth per turn between them.
//!
//! Not a criterion bench: it drives the real binary in a real terminal and prints figures.
//! Run: `cargo bench --bench chat_memory` (needs tmux), or `--profile dev` for the debug build.
//! `AGENTTY_BENCH_RUNS` runs it that many times (default 1); `AGENTTY_BENCH_WRAP` is put
//! before the binary (`heaptrack -o /tmp/chat` shows what the turns keep: the pane's pid is
//! then heaptrack's, and the figures are of no use).

#[path = "support/tmux.rs"]
mod tmux;

use std::time::{Duration, Instant};

use tmux::Tmux;

const TMUX: Tmux = Tmux {
    socket: "agentty-bench-memory",
};
const FROM: usize = 100;
const TO: usize = 600;
/// The demo's answer to these prompts (its `hello` scenario, which quotes the prompt), in bytes.
const ANSWER: usize = 735;

fn rss_kib(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .and_then(|line| line.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// The children of `pid`.
fn children(pid: i32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|child| child.parse().ok())
        .collect()
}

/// Waits until the screen shows `needle` and the status bar says idle.
fn wait_for_answer(needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let screen = TMUX.screen();
        if screen.contains(needle) && screen.contains("│ idle") {
            return;
        }
        assert!(Instant::now() < deadline, "no answer {needle:?}:\n{screen}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One conversation of `TO` turns: (RSS after `FROM`, after `TO`, text bytes a turn).
fn run() -> (u64, u64, usize) {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(state.path().join("config.toml"), "").unwrap();
    let command = format!(
        "AGENTTY_STATE_DIR={state} AGENTTY_DEMO_STATE_DIR={state}/demo AGENTTY_DEMO_TIME_SCALE=0.01 \
         exec {wrap} {bin} --config {state}/config.toml --provider demo --transport rpc",
        state = state.path().display(),
        bin = env!("CARGO_BIN_EXE_agentty"),
        wrap = std::env::var("AGENTTY_BENCH_WRAP").unwrap_or_default(),
    );
    let (_, pid) = TMUX.start_pane((160, 50), work.path().to_str(), &command);
    assert!(
        TMUX.wait_for_screen(
            "/ commands",
            Duration::from_secs(30),
            Duration::from_millis(10)
        )
        .is_some(),
        "the chat opened"
    );
    let mut at_from = 0;
    let mut text = 0;
    for turn in 1..=TO {
        let prompt = format!("question number {turn} about the code");
        TMUX.run(&["send-keys", "-t", "bench", "-l", &prompt]);
        TMUX.run(&["send-keys", "-t", "bench", "Enter"]);
        wait_for_answer(&format!("Prompt {turn} in session"));
        if turn == FROM {
            std::thread::sleep(Duration::from_millis(500));
            at_from = rss_kib(pid);
        }
        text += prompt.len();
    }
    std::thread::sleep(Duration::from_millis(500));
    let at_to = rss_kib(pid);
    if std::env::var_os("AGENTTY_BENCH_WRAP").is_some() {
        // Killed, not ended: what the wrapper sees still allocated is what the turns kept.
        for child in children(pid) {
            // SAFETY: signalling a process this bench started.
            unsafe {
                libc::kill(child, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_secs(5));
    }
    TMUX.kill_server();
    (at_from, at_to, text / TO)
}

fn main() {
    if !tmux::measuring_in_tmux() {
        return;
    }
    let runs = std::env::var("AGENTTY_BENCH_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(1);
    for _ in 0..runs {
        let (from, to, prompt_text) = run();
        let per_turn = (to as f64 - from as f64) / (TO - FROM) as f64;
        println!(
            "chat memory: VmRSS {from} KiB after turn {FROM}, {to} KiB after turn {TO}: {per_turn:.2} KiB a turn; a turn's own text: its prompt ({prompt_text} B) and the demo's answer ({ANSWER} B)"
        );
    }
}
