//! The whole app as a user feels it, in tmux at 160x50 (issue: performance, item 8 and the
//! idle/start-up item). Not a criterion bench: it drives the release binary in a real terminal
//! and prints a table.
//!
//! - start-up: agentty's own "first frame drawn" log line (time since `main`), and the time from
//!   spawning the pane to the status bar showing up (includes tmux);
//! - key echo: a key sent through a tmux control-mode client, until tmux reports the pane's next
//!   output (`%output`), on a fresh chat and after `--resume` of a 4,000-block transcript;
//! - idle: CPU ticks and context switches of agentty over 10 s with nothing happening;
//! - a 10 s slow stream (the demo's `slow` scenario): CPU ticks;
//! - peak memory (VmHWM) at the end.
//!
//! Run: `cargo bench --bench terminal` (needs tmux).

#[path = "support/tmux.rs"]
mod tmux;

use std::io::Write;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tmux::{first_frame_ms, measuring_in_tmux, peak_rss_kib, Control, Tmux};

const TMUX: Tmux = Tmux {
    socket: "agentty-bench-terminal",
};

/// A tmux control-mode client: commands in, `%output` notifications out.
struct Echoes {
    control: Control,
    outputs: mpsc::Receiver<Instant>,
}

impl Echoes {
    fn attach() -> Echoes {
        let (sender, outputs) = mpsc::channel();
        let control = Control::attach(&TMUX, "160x50", move |line| {
            !(line.starts_with("%output") && sender.send(Instant::now()).is_err())
        });
        Echoes { control, outputs }
    }

    /// Sends one key and returns the time until the pane next printed anything.
    fn echo(&mut self, key: &str) -> Duration {
        std::thread::sleep(Duration::from_millis(150));
        while self.outputs.try_recv().is_ok() {}
        let sent = Instant::now();
        self.control.send(&format!("send-keys -t bench {key}"));
        let printed = self
            .outputs
            .recv_timeout(Duration::from_secs(5))
            .expect("the key was echoed");
        printed - sent
    }
}

fn median_echo(samples: usize) -> (Duration, Duration, Duration) {
    let mut control = Echoes::attach();
    std::thread::sleep(Duration::from_millis(300));
    let mut echoes: Vec<Duration> = (0..samples).map(|_| control.echo("x")).collect();
    for _ in 0..samples {
        control.echo("BSpace");
    }
    echoes.sort();
    (echoes[0], echoes[samples / 2], echoes[samples - 1])
}

/// utime + stime in clock ticks, and voluntary + involuntary context switches over all threads.
fn cpu_and_switches(pid: i32) -> (u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = fields
        .get(11)
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
        + fields
            .get(12)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    let mut switches = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        for line in status.lines() {
            if line.starts_with("voluntary_ctxt_switches")
                || line.starts_with("nonvoluntary_ctxt_switches")
            {
                switches += line
                    .split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    (ticks, switches)
}

/// A session log of `turns` turns of four blocks (prompt, thinking, tool call, markdown answer).
fn write_long_session(state: &Path, turns: usize) {
    use serde_json::json;
    let dir = state.join("sessions");
    std::fs::create_dir_all(&dir).unwrap();
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(dir.join("000000000000001-bench.jsonl")).unwrap(),
    );
    let mut line = |value: serde_json::Value| writeln!(file, "{value}").unwrap();
    line(json!({"kind":"header","version":1,"provider":"demo","started_at_ms":1,"cwd":"/"}));
    for turn in 1..=turns {
        line(
            json!({"kind":"turn","turn":turn,"prompt":format!("question {turn}: what does the parser do?")}),
        );
        let message = |message: serde_json::Value| json!({"kind":"message","turn":turn,"attempt":1,"message":message});
        line(message(
            json!({"type":"assistant.thought","text":"Let me read the tokenizer, then the quoting rules. ".repeat(3)}),
        ));
        line(message(
            json!({"type":"tool.call","id":format!("c{turn}"),"name":"bash","input":{"command":"rg -n parse src/"}}),
        ));
        line(message(
            json!({"type":"tool.completed","id":format!("c{turn}"),"output":"src/parser.rs:120: fn parse_quoted()\n".repeat(4)}),
        ));
        line(message(
            json!({"type":"assistant","delta":format!("## Answer {turn}\n\nThe parser **tracks depth**:\n\n- push\n- pop\n\n```rust\nfn parse() -> u32 {{ {turn} }}\n```\n")}),
        ));
        line(message(
            json!({"type":"terminal.completed","stop_reason":"stop"}),
        ));
        line(json!({"kind":"turn_ended","turn":turn,"outcome":"completed"}));
    }
}

fn main() {
    if !measuring_in_tmux() {
        return;
    }
    let state = tempfile::tempdir().unwrap();

    // Start-up, idle, key echo on a fresh chat, then a slow stream.
    let (spawned, pid) = TMUX.start_agentty(state.path(), "", None);
    let visible = TMUX
        .wait_for_screen("idle", Duration::from_secs(10), Duration::from_millis(1))
        .expect("the chat came up");
    println!(
        "start-up: pane spawn to status bar {:.1} ms (includes tmux and capture polling)",
        (visible - spawned).as_secs_f64() * 1000.0
    );
    std::thread::sleep(Duration::from_millis(500));
    if let Some(ms) = first_frame_ms(state.path()) {
        println!("start-up: first frame drawn {ms:.1} ms after main()");
    }
    let (ticks_before, switches_before) = cpu_and_switches(pid);
    std::thread::sleep(Duration::from_secs(10));
    let (ticks_after, switches_after) = cpu_and_switches(pid);
    println!(
        "idle 10 s: {} CPU ticks, {} context switches (all threads)",
        ticks_after - ticks_before,
        switches_after - switches_before
    );
    let (min, median, max) = median_echo(20);
    println!(
        "key echo, fresh chat: median {:.2} ms (min {:.2}, max {:.2})",
        ms(median),
        ms(min),
        ms(max)
    );

    TMUX.run(&["send-keys", "-t", "bench", "slow please", "Enter"]);
    std::thread::sleep(Duration::from_millis(500));
    let (ticks_before, _) = cpu_and_switches(pid);
    std::thread::sleep(Duration::from_secs(10));
    let (ticks_after, _) = cpu_and_switches(pid);
    println!(
        "slow stream 10 s (a token every 300 ms): {} CPU ticks",
        ticks_after - ticks_before
    );
    TMUX.run(&["send-keys", "-t", "bench", "Escape"]);
    println!(
        "peak RSS, fresh chat after a slow stream: {} KiB",
        peak_rss_kib(pid)
    );

    // A 4,000-block transcript, reopened with --resume.
    let long = tempfile::tempdir().unwrap();
    write_long_session(long.path(), 1000);
    let (_, pid) = TMUX.start_agentty(long.path(), "--resume", Some("/"));
    TMUX.wait_for_screen("idle", Duration::from_secs(20), Duration::from_millis(1))
        .expect("the resumed chat came up");
    std::thread::sleep(Duration::from_millis(500));
    let (min, median, max) = median_echo(20);
    println!(
        "key echo, 4,000-block transcript: median {:.2} ms (min {:.2}, max {:.2})",
        ms(median),
        ms(min),
        ms(max)
    );
    println!(
        "peak RSS with a 4,000-block transcript: {} KiB",
        peak_rss_kib(pid)
    );
    TMUX.kill_server();
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
