//! End to end headless, side by side with the naive consumer (issue 18).
//!
//! The workload is `benches/data/gen_pi_stream.py 1000 131072`: 1,000 pi `message_update`
//! lines whose answer text grows to 128 KiB, each carrying both cumulative snapshots (~132 MB,
//! longest line ~257 KiB). Both programs read it through one `cat` of the same file:
//! - naive: `cat big.jsonl | python3 naive_consumer.py /dev/stdin > /dev/null`;
//! - agentty: `agentty run --provider pi --agent-bin <script that cats big.jsonl> go`, with the
//!   session log and snapshots on, stdout to /dev/null. Run from the checkout (cargo's working
//!   directory for benches), so each run snapshots it: the first run, in a fresh state dir,
//!   takes the cold baseline of the checkout (reported on its own); the timed runs then share
//!   that state dir, as a user's runs do, and walk the checkout from its stat cache.
//!
//! Reported: the two medians measured interleaved in one run and their ratio (target
//! agentty <= 0.5x naive), `cat | wc -l` as the floor of the pipe, agentty's peak RSS (its own
//! VmHWM) on the stream against a tiny stream, its growth with the longest line (a line fitted
//! over four streams; target <= 3x the longest line + a constant), and the session log's size. Criterion then
//! measures both commands again as a group.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// The workload's generator and the naive consumer (`benches/data/README.md`).
fn bench_data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/data")
}

/// Runs agentty on `script` and returns the wall time and agentty's peak RSS in bytes.
///
/// The peak is agentty's own `VmHWM`, polled every millisecond while it runs: `wait4`'s
/// `ru_maxrss` would count the benchmark process's memory that the child had before `exec`.
fn run_agentty(script: &Path, state: &Path) -> (Duration, u64) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(["run", "--provider", "pi", "--agent-bin"])
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

/// CPU time (user + system) of every child waited for so far, grandchildren included.
fn children_cpu() -> Duration {
    // SAFETY: getrusage only fills the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let time = |value: libc::timeval| {
        Duration::from_secs(value.tv_sec as u64) + Duration::from_micros(value.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Wall time of a shell pipeline.
fn run_shell(pipeline: &str) -> Duration {
    let started = Instant::now();
    let status = Command::new("sh")
        .args(["-c", pipeline])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{pipeline} failed");
    started.elapsed()
}

fn generate(dir: &Path, name: &str, updates: usize, size: usize) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let stream = dir.join(format!("{name}.jsonl"));
    let output = Command::new("python3")
        .arg(bench_data().join("gen_pi_stream.py"))
        .args([updates.to_string(), size.to_string()])
        .output()
        .expect("python3 runs");
    assert!(output.status.success(), "gen_pi_stream.py failed");
    std::fs::write(&stream, output.stdout).unwrap();
    let script = dir.join(name);
    std::fs::write(
        &script,
        format!("#!/bin/sh\nexec cat '{}'\n", stream.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (stream, script)
}

/// The least-squares line through `points`: (slope, intercept).
fn least_squares(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let mean_x = points.iter().map(|(x, _)| x).sum::<f64>() / n;
    let mean_y = points.iter().map(|(_, y)| y).sum::<f64>() / n;
    let covariance: f64 = points
        .iter()
        .map(|(x, y)| (x - mean_x) * (y - mean_y))
        .sum();
    let variance: f64 = points.iter().map(|(x, _)| (x - mean_x).powi(2)).sum();
    let slope = covariance / variance;
    (slope, mean_y - slope * mean_x)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The session log and its sidecar in a state dir, in bytes.
fn log_bytes(state: &Path) -> u64 {
    std::fs::read_dir(state.join("sessions"))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| entry.metadata().ok())
                .map(|metadata| metadata.len())
                .sum()
        })
        .unwrap_or(0)
}

fn headless(c: &mut Criterion) {
    // `cargo test --all-targets` runs bench binaries once without `--bench`: a small stream
    // then, and one round of each measure.
    let measuring = std::env::args().any(|arg| arg == "--bench");
    let (updates, size, rounds) = if measuring {
        (1000, 131_072, 20)
    } else {
        (50, 8192, 1)
    };
    let dir = tempfile::tempdir().unwrap();
    let (big, script) = generate(dir.path(), "big", updates, size);
    let (_, tiny) = generate(dir.path(), "tiny", 4, 64);
    let text = std::fs::read_to_string(&big).unwrap();
    let bytes = text.len() as u64;
    let largest = text.lines().map(str::len).max().unwrap() as u64;
    drop(text);
    let naive = format!(
        "cat '{}' | python3 '{}' /dev/stdin",
        big.display(),
        bench_data().join("naive_consumer.py").display()
    );
    let floor = format!("cat '{}' | wc -l", big.display());
    let state_path = |index: usize| dir.path().join(format!("state-{index}"));
    let fresh_state = |index: usize| {
        let state = state_path(index);
        let _ = std::fs::remove_dir_all(&state);
        state
    };

    // The first run in this checkout: a fresh state dir, so the cold baseline of the tree.
    let warm = fresh_state(1000);
    let first_run = run_agentty(&script, &warm).0;
    let first_log_bytes = log_bytes(&warm);
    eprintln!(
        "headless: the first run in a fresh state dir (cold snapshot of the checkout, {}): {:.0} ms",
        std::env::current_dir()
            .map(|dir| dir.display().to_string())
            .unwrap_or_default(),
        ms(first_run)
    );

    // Side by side, interleaved so that both see the same machine load; the CPU time of each
    // side (its processes and `cat`) is the figure other builds on the machine disturb least.
    let (mut naive_times, mut agentty_times, mut floor_times) = (vec![], vec![], vec![]);
    let (mut naive_cpu, mut agentty_cpu, mut pair_ratios) = (vec![], vec![], vec![]);
    for _ in 0..rounds {
        let before = children_cpu();
        let naive_time = run_shell(&naive);
        let between = children_cpu();
        let agentty_time = run_agentty(&script, &warm).0;
        naive_cpu.push(between - before);
        agentty_cpu.push(children_cpu() - between);
        pair_ratios.push(agentty_time.as_secs_f64() / naive_time.as_secs_f64());
        naive_times.push(naive_time);
        agentty_times.push(agentty_time);
        floor_times.push(run_shell(&floor));
    }
    let (naive_median, agentty_median) = (median(naive_times), median(agentty_times));
    let ratio = agentty_median.as_secs_f64() / naive_median.as_secs_f64();
    pair_ratios.sort_by(f64::total_cmp);
    let (naive_cpu, agentty_cpu) = (median(naive_cpu), median(agentty_cpu));
    eprintln!(
        "headless: ratio of each interleaved pair: median {:.2}x (min {:.2}, max {:.2}); CPU (user + system, \
         `cat` included): naive {:.0} ms, agentty {:.0} ms = {:.2}x",
        pair_ratios[pair_ratios.len() / 2],
        pair_ratios[0],
        pair_ratios[pair_ratios.len() - 1],
        ms(naive_cpu),
        ms(agentty_cpu),
        agentty_cpu.as_secs_f64() / naive_cpu.as_secs_f64(),
    );
    eprintln!(
        "headless: stream {:.1} MB, longest line {} KiB; medians of {rounds} interleaved runs: \
         naive Python {:.0} ms, agentty (session log and snapshots on, warm state dir) {:.0} ms = {ratio:.2}x (target <= 0.5x: {}); \
         cat | wc -l {:.0} ms",
        bytes as f64 / 1e6,
        largest / 1024,
        ms(naive_median),
        ms(agentty_median),
        if ratio <= 0.5 { "met" } else { "missed" },
        ms(median(floor_times)),
    );
    eprintln!(
        "headless: session log of the run {} KiB (log + raw-line sidecar) for {:.1} MB of agent output",
        first_log_bytes / 1024,
        bytes as f64 / 1e6
    );

    let tiny_state = fresh_state(100);
    let (_, baseline_rss) = run_agentty(&tiny, &tiny_state);
    let peaks: Vec<u64> = (0..rounds.min(5))
        .map(|round| run_agentty(&script, &fresh_state(200 + round)).1)
        .collect();
    let peak_rss = *peaks.iter().max().unwrap();
    eprintln!(
        "headless: peak RSS {} KiB (max of {}: {:?} KiB) vs {} KiB on a tiny stream: +{} KiB = {:.1}x the longest line",
        peak_rss / 1024,
        peaks.len(),
        peaks.iter().map(|peak| peak / 1024).collect::<Vec<_>>(),
        baseline_rss / 1024,
        (peak_rss.saturating_sub(baseline_rss)) / 1024,
        peak_rss.saturating_sub(baseline_rss) as f64 / largest as f64,
    );
    // "<= 3x the longest line + a constant": the peak's growth with the line, fitted over
    // streams whose longest lines differ 8-fold (the constant: the compressor's tables and
    // blocks, the allocator's arenas, and so on, the same for any stream).
    let sizes: &[usize] = if measuring {
        &[32_768, 65_536, 131_072, 262_144]
    } else {
        &[4096, 8192]
    };
    let mut points = Vec::new();
    for (index, &size) in sizes.iter().enumerate() {
        let (stream, script) = generate(dir.path(), &format!("fit-{size}"), 200, size);
        let longest = std::fs::read_to_string(&stream)
            .unwrap()
            .lines()
            .map(str::len)
            .max()
            .unwrap() as f64;
        let peak = (0..rounds.min(3))
            .map(|round| run_agentty(&script, &fresh_state(300 + 10 * index + round)).1)
            .max()
            .unwrap() as f64;
        points.push((longest, peak));
    }
    let (slope, intercept) = least_squares(&points);
    eprintln!(
        "headless: peak RSS against the longest line (KiB, max of {} runs each): {}; fitted: \
         {:.2}x the longest line + {:.0} KiB (tiny stream: {} KiB); target <= 3x + a constant: {}",
        rounds.min(3),
        points
            .iter()
            .map(|(longest, peak)| format!("{:.0} -> {:.0}", longest / 1024.0, peak / 1024.0))
            .collect::<Vec<_>>()
            .join(", "),
        slope,
        intercept / 1024.0,
        baseline_rss / 1024,
        if slope <= 3.0 { "met" } else { "missed" }
    );

    let mut group = c.benchmark_group("headless_vs_naive");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("naive_python", |b| {
        b.iter_custom(|iterations| (0..iterations).map(|_| run_shell(&naive)).sum())
    });
    group.bench_function("agentty_run_session_log_on", |b| {
        b.iter_custom(|iterations| (0..iterations).map(|_| run_agentty(&script, &warm).0).sum())
    });
    group.finish();
}

criterion_group!(benches, headless);
criterion_main!(benches);
