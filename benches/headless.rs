//! End to end headless: `agentty run --agent-bin` on an agent that replays the synthetic pi
//! stream (text growing to 256 KiB over 2,000 updates, two cumulative snapshots per line) from a
//! file. Reports MB/s of agent output mapped, and agentty's peak RSS against the target of
//! 3x the largest line plus a small constant (agentty's RSS on a tiny stream).

mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// Runs agentty on `script` and returns the wall time and agentty's peak RSS in bytes.
///
/// The peak is agentty's own `VmHWM`, polled every millisecond while it runs: `wait4`'s
/// `ru_maxrss` would count the benchmark process's memory that the child had before `exec`.
fn run_agentty(script: &Path, state: &Path) -> (Duration, u64) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(["run", "--provider", "demo", "--agent-bin"])
        .arg(script)
        .arg("go")
        .env("AGENTTY_STATE_DIR", state)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        let hwm = std::fs::read_to_string(&status_file)
            .unwrap_or_default()
            .lines()
            .find(|line| line.starts_with("VmHWM:"))
            .and_then(|line| line.split_whitespace().nth(1)?.parse::<u64>().ok())
            .unwrap_or(0);
        peak_kib = peak_kib.max(hwm);
        std::thread::sleep(Duration::from_millis(1));
    };
    assert!(status.success(), "agentty run did not complete");
    (started.elapsed(), peak_kib * 1024)
}

fn write_agent(dir: &Path, name: &str, lines: &[String]) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let stream = dir.join(format!("{name}.jsonl"));
    let mut file = std::io::BufWriter::new(std::fs::File::create(&stream).unwrap());
    for line in lines {
        writeln!(file, "{line}").unwrap();
    }
    file.flush().unwrap();
    let script = dir.join(name);
    std::fs::write(
        &script,
        format!("#!/bin/sh\nexec cat '{}'\n", stream.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

fn headless(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let lines = support::pi_stream::pi_stream(256 * 1024, 2000);
    let bytes: usize = lines.iter().map(|line| line.len() + 1).sum();
    let largest = lines.iter().map(String::len).max().unwrap() as u64;
    let big = write_agent(dir.path(), "big", &lines);
    let tiny = write_agent(dir.path(), "tiny", &support::pi_stream::pi_stream(64, 4));
    drop(lines);

    let (_, baseline_rss) = run_agentty(&tiny, dir.path());
    let (_, peak_rss) = run_agentty(&big, dir.path());
    let bound = 3 * largest + baseline_rss;
    eprintln!(
        "headless: stream {:.1} MiB, largest line {} KiB; peak RSS {} KiB on it vs {} KiB on a tiny stream; \
         target 3x largest line + tiny = {} KiB: {}",
        bytes as f64 / 1048576.0,
        largest / 1024,
        peak_rss / 1024,
        baseline_rss / 1024,
        bound / 1024,
        if peak_rss <= bound { "met" } else { "missed" }
    );

    let mut group = c.benchmark_group("headless_run");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("pi_stream_256KiB_2000_updates", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| run_agentty(&big, dir.path()).0)
                .sum()
        })
    });
    group.finish();
}

criterion_group!(benches, headless);
criterion_main!(benches);
