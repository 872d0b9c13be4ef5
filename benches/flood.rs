//! An agent that floods (issue 27, item 4): what it costs the app, and what the user feels.
//!
//! criterion, in process: 60 MiB of assistant text in 4 KiB deltas fed to the chat's state,
//! with a 160x50 frame drawn after every 64 deltas (the render path of the chat, on
//! ratatui's `TestBackend`), and the same for 64 KiB of one-byte deltas.
//!
//! Then, only under `cargo bench` and with tmux, the release binary in tmux at 160x50 against
//! an agent that prints 60 MiB in 4 KiB deltas (pi's JSON mode, without its snapshots) and
//! then waits: key echo while the flood comes in (keys typed one after another, each until it
//! shows in the composer, capture polled every 2 ms; those typed before agentty was done), the time agentty is busy with the flood (until its
//! CPU time stops growing), Esc until the status bar says idle, and agentty's peak memory
//! (VmHWM); then `agentty run` on a million one-byte
//! deltas, and the session log's size against the text's. `AGENTTY_BENCH_BIN` runs another
//! build (say, the one before this change) through the same measurements.
//!
//! Run: `cargo bench --bench flood`.

#[path = "support/tmux.rs"]
mod tmux;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use agentty::app::state::{AppState, StartupInfo};
use agentty::orchestrator::{OrchestratorEvent, TurnOutcome};
use agentty::stream::AgentMessage;
use agentty::view::{self, ChatView};

const MIB: usize = 1024 * 1024;

/// What the flood's text looks like.
#[derive(Clone, Copy)]
enum Shape {
    /// Paragraphs of about 400 bytes: markdown commits each as it ends.
    Paragraphs,
    /// One endless line: the worst case for a streaming markdown view.
    OneLine,
}

fn flood_text(shape: Shape, len: usize, offset: usize) -> String {
    let words = "lorem ipsum dolor sit amet, consectetur adipiscing elit; sed do eiusmod tempor. ";
    let unit = match shape {
        Shape::Paragraphs => words.repeat(5) + "\n\n",
        Shape::OneLine => words.to_owned(),
    };
    unit.chars()
        .cycle()
        .skip(offset % unit.len())
        .take(len)
        .collect()
}

fn paragraphs(len: usize, offset: usize) -> String {
    flood_text(Shape::Paragraphs, len, offset)
}

/// Feeds `total` bytes in `delta`-byte deltas to a chat's state, drawing a frame every 64.
fn flood_the_app(total: usize, delta: usize) -> Duration {
    let deltas: Vec<String> = (0..16).map(|index| paragraphs(delta, index * 7)).collect();
    let mut state = AppState::new(StartupInfo::default());
    let mut view = ChatView::default();
    let mut terminal = Terminal::new(TestBackend::new(160, 50)).unwrap();
    let now = Instant::now();
    let started = Instant::now();
    state.on_orchestrator_event(
        OrchestratorEvent::TurnStarted {
            turn: 1,
            prompt: "flood".into(),
        },
        now,
    );
    for index in 0..total / delta {
        state.on_orchestrator_event(
            OrchestratorEvent::Message {
                turn: 1,
                attempt: 1,
                message: AgentMessage::Assistant {
                    delta: deltas[index % deltas.len()].clone(),
                },
            },
            now,
        );
        if index % 64 == 0 {
            terminal
                .draw(|frame| view::render(frame, &state, &mut view, now))
                .unwrap();
        }
    }
    state.on_orchestrator_event(
        OrchestratorEvent::TurnEnded {
            turn: 1,
            outcome: TurnOutcome::Completed,
        },
        now,
    );
    terminal
        .draw(|frame| view::render(frame, &state, &mut view, now))
        .unwrap();
    started.elapsed()
}

fn app_under_a_flood(c: &mut Criterion) {
    // `cargo test --all-targets` runs each benchmark once, in a debug build: a sample of the
    // flood there checks that it runs; the figures come from `cargo bench`.
    let scale = if std::env::args().any(|arg| arg == "--bench") {
        1
    } else {
        64
    };
    let mut group = c.benchmark_group("flood");
    // Each iteration is a whole flood: few of them, each counted once.
    group.sample_size(10);
    group.sampling_mode(criterion::SamplingMode::Flat);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("app: 60 MiB in 4 KiB deltas, a frame every 64", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| flood_the_app(60 * MIB / scale, 4096))
                .sum()
        })
    });
    group.bench_function("app: 64 KiB in 1-byte deltas, a frame every 64", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| flood_the_app(64 * 1024 / scale, 1))
                .sum()
        })
    });
    group.finish();
}

criterion_group!(benches, app_under_a_flood);

const TMUX: tmux::Tmux = tmux::Tmux {
    socket: "agentty-bench-flood",
};

/// The binary measured: this build's, or `AGENTTY_BENCH_BIN`.
fn binary() -> String {
    std::env::var("AGENTTY_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_agentty").into())
}

/// A pi JSON-mode agent that prints `total` bytes of answer in `delta`-byte deltas, then (if
/// `wait`) waits to be stopped.
fn flooding_agent(dir: &Path, total: usize, delta: usize, wait: bool, shape: Shape) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let name = match shape {
        Shape::Paragraphs => "paragraphs",
        Shape::OneLine => "one-line",
    };
    let stream = dir.join(format!("flood-{total}-{delta}-{name}.jsonl"));
    let mut out = std::io::BufWriter::new(std::fs::File::create(&stream).unwrap());
    writeln!(out, r#"{{"type":"agent_start"}}"#).unwrap();
    writeln!(
        out,
        r#"{{"type":"message_start","message":{{"role":"assistant","content":[],"stopReason":"stop"}}}}"#
    )
    .unwrap();
    let chunks: Vec<String> = (0..16)
        .map(|index| flood_text(shape, delta, index * 7))
        .collect();
    for index in 0..total / delta {
        let line = serde_json::json!({"type":"message_update","assistantMessageEvent":
            {"type":"text_delta","contentIndex":0,"delta":chunks[index % chunks.len()]}});
        writeln!(out, "{line}").unwrap();
    }
    if !wait {
        writeln!(
            out,
            r#"{{"type":"message_end","message":{{"role":"assistant","content":[],"stopReason":"stop"}}}}"#
        )
        .unwrap();
        writeln!(out, r#"{{"type":"agent_end","messages":[]}}"#).unwrap();
    }
    drop(out);
    let agent = dir.join(format!("agent-{total}-{delta}-{name}"));
    let tail = if wait { "exec sleep 300" } else { "exit 0" };
    std::fs::write(
        &agent,
        format!("#!/bin/sh\ncat '{}'\n{tail}\n", stream.display()),
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    agent
}

/// agentty's CPU time so far, in clock ticks (user + system, all threads).
fn cpu_ticks(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime are fields 14 and 15; the first field after the name is field 3.
    let field = |number: usize| -> u64 {
        fields
            .get(number - 3)
            .and_then(|value| value.parse().ok())
            .unwrap_or(0)
    };
    field(14) + field(15)
}

/// agentty's CPU time, sampled every 20 ms on a thread of its own until `stop` is set.
fn sample_cpu(
    pid: i32,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Vec<(Instant, u64)>> {
    std::thread::spawn(move || {
        let mut samples = Vec::new();
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            samples.push((Instant::now(), cpu_ticks(pid)));
            std::thread::sleep(Duration::from_millis(20));
        }
        samples
    })
}

/// When agentty's CPU time came within 2 ticks of where it ended: when it was done with the
/// flood (the agent then only waits).
fn busy_until(samples: &[(Instant, u64)]) -> Option<Instant> {
    let last = samples.last()?.1;
    samples
        .iter()
        .find(|(_, ticks)| ticks + 2 >= last)
        .map(|(at, _)| *at)
}

fn peak_rss_mib(pid: i32) -> f64 {
    tmux::peak_rss_kib(pid) as f64 / 1024.0
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The chat in tmux against the flooding agent.
fn flood_in_tmux(state: &Path, agent: &Path) {
    std::fs::create_dir_all(state).unwrap();
    let config = state.join("config.toml");
    std::fs::write(&config, "").unwrap();
    let command = format!(
        "AGENTTY_STATE_DIR={} exec {} --config {} --provider pi --transport json --agent-bin {}",
        state.display(),
        binary(),
        config.display(),
        agent.display()
    );
    let (_, pid) = TMUX.start_pane((160, 50), None, &command);
    TMUX.wait_for_screen("idle", Duration::from_secs(20), Duration::from_millis(5))
        .expect("the chat came up");
    TMUX.run(&["send-keys", "-t", "bench", "-l", "flood me"]);
    TMUX.run(&["send-keys", "-t", "bench", "Enter"]);
    let sent = Instant::now();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = sample_cpu(pid, stop.clone());
    TMUX.wait_for_screen(
        "lorem ipsum",
        Duration::from_secs(60),
        Duration::from_millis(2),
    )
    .expect("the flood began");
    // Key echo while it floods: a token typed every 20 ms after the last one showed; only the
    // keys typed before agentty was done with the flood count.
    let mut echoes: Vec<(Instant, Duration)> = Vec::new();
    for index in 0..60 {
        let token = format!("k{index}x");
        let typed = Instant::now();
        TMUX.run(&["send-keys", "-t", "bench", "-l", &token]);
        match TMUX.wait_for_screen(&token, Duration::from_secs(60), Duration::from_millis(2)) {
            Some(shown) => {
                echoes.push((typed, shown - typed));
                // An empty composer again, so that no token wraps.
                TMUX.run(&["send-keys", "-t", "bench", "C-u"]);
            }
            None => {
                println!("key {index} not echoed within 60 s");
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Wait for the flood to be taken in whole: agentty's CPU time stops growing.
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let before = cpu_ticks(pid);
        std::thread::sleep(Duration::from_secs(1));
        if cpu_ticks(pid) <= before + 2 || Instant::now() > deadline {
            break;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let samples = sampler.join().unwrap();
    let done = busy_until(&samples).unwrap_or_else(Instant::now);
    println!(
        "60 MiB flood taken in (agentty busy until): {:.2} s",
        (done - sent).as_secs_f64()
    );
    let mut during: Vec<Duration> = echoes
        .iter()
        .filter(|(typed, _)| *typed < done)
        .map(|(_, echo)| *echo)
        .collect();
    during.sort();
    match (during.get(during.len() / 2), during.last()) {
        (Some(median), Some(worst)) => println!(
            "key echo during the flood ({} keys): median {:.1} ms, worst {:.1} ms",
            during.len(),
            ms(*median),
            ms(*worst)
        ),
        _ => println!("key echo during the flood: no key typed before it was over"),
    }
    let escaped = Instant::now();
    TMUX.run(&["send-keys", "-t", "bench", "Escape"]);
    match TMUX.wait_for_screen("│ idle", Duration::from_secs(60), Duration::from_millis(2)) {
        Some(idle) => println!("Esc → idle: {:.1} ms", ms(idle - escaped)),
        None => println!("Esc → idle: not within 60 s"),
    }
    println!("agentty peak memory (VmHWM): {:.1} MiB", peak_rss_mib(pid));
    TMUX.kill_server();
}

/// `agentty run` on a million one-byte deltas: the session log against the text.
fn one_byte_deltas_logged(state: &Path) {
    std::fs::create_dir_all(state).unwrap();
    let agent = flooding_agent(state, MIB, 1, false, Shape::Paragraphs);
    let output = std::process::Command::new(binary())
        .env("AGENTTY_STATE_DIR", state)
        .args(["run", "--provider", "pi", "--agent-bin"])
        .arg(&agent)
        .arg("hi")
        .output()
        .unwrap();
    let sessions = state.join("sessions");
    let log = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .expect("a session log");
    let size = std::fs::metadata(&log).unwrap().len();
    println!(
        "1,048,576 one-byte deltas (exit {:?}): session log {:.1} MB, {:.1}x the text",
        output.status.code(),
        size as f64 / 1e6,
        size as f64 / MIB as f64
    );
}

fn main() {
    benches();
    if !tmux::measuring_in_tmux() {
        return;
    }
    println!("measuring {}", binary());
    let state = tempfile::tempdir().unwrap();
    for (shape, name) in [
        (Shape::Paragraphs, "paragraphs"),
        (Shape::OneLine, "one endless line"),
    ] {
        println!("60 MiB of {name}:");
        let agent = flooding_agent(state.path(), 60 * MIB, 4096, true, shape);
        flood_in_tmux(&state.path().join(name.replace(' ', "-")), &agent);
    }
    one_byte_deltas_logged(&state.path().join("run"));
}
