//! The working tree's snapshots on a big tree (issue 37), side by side with git doing the same
//! job: a generated tree of 50,000 files and about 600 MB (`support/big_tree.rs`, made once
//! under the temporary folder), snapshot through the thread the orchestrator uses, against
//! `git add -A && git write-tree` into a throwaway repository and index (as a shadow-git
//! checkpoint would) on the same tree:
//! - the cold baseline (an empty store; git: an empty index and object store);
//! - a turn that changes nothing (agentty: the "before" walk beside the request and the "after"
//!   walk; git: one `add -A` + `write-tree` with its index warm), and one that edits 10 files;
//! - a second conversation in the same tree (a new `agentty run`): its baseline, with the stat
//!   cache the first one left in the tree's store;
//! - the state dir after 20 turns that change nothing, and the store against git's objects.
//!
//! Wall and CPU time (this process's for agentty, whose snapshot thread runs in it; the child's
//! for git), the median and range of `AGENTTY_BENCH_RUNS` runs (default 3). Not a criterion
//! bench: a cold baseline of 600 MB is seconds, and the table is what is read. Run:
//! `cargo bench --bench snapshot` (the first run also writes the tree: about a minute).

#[path = "support/big_tree.rs"]
mod big_tree;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use agentty::snapshot::{SnapshotLimits, SnapshotReply, SnapshotSetup, SnapshotWorker};

fn runs() -> usize {
    std::env::var("AGENTTY_BENCH_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(3)
}

/// CPU seconds (user + system) of this process (`children`: of its waited-for children).
fn cpu(children: bool) -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let who = if children {
        libc::RUSAGE_CHILDREN
    } else {
        libc::RUSAGE_SELF
    };
    unsafe { libc::getrusage(who, &mut usage) };
    let seconds = |time: libc::timeval| time.tv_sec as f64 + time.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// One measurement: wall and CPU seconds.
#[derive(Clone, Copy)]
struct Cost {
    wall: f64,
    cpu: f64,
}

fn measure(children: bool, work: impl FnOnce()) -> Cost {
    let (cpu_before, started) = (cpu(children), Instant::now());
    work();
    Cost {
        wall: started.elapsed().as_secs_f64(),
        cpu: cpu(children) - cpu_before,
    }
}

/// "median [min–max]" of a list of seconds, in ms.
fn spread(mut values: Vec<f64>) -> String {
    values.sort_by(f64::total_cmp);
    let median = values[values.len() / 2];
    format!(
        "{:>8.0} ms [{:.0}–{:.0}]",
        median * 1000.0,
        values[0] * 1000.0,
        values[values.len() - 1] * 1000.0
    )
}

fn row(name: &str, agentty: &[Cost], git: &[Cost]) {
    let column = |costs: &[Cost], pick: fn(&Cost) -> f64| {
        if costs.is_empty() {
            format!("{:>24}", "—")
        } else {
            spread(costs.iter().map(pick).collect())
        }
    };
    println!(
        "| {name:<44} | {} | {} | {} | {} |",
        column(agentty, |cost| cost.wall),
        column(agentty, |cost| cost.cpu),
        column(git, |cost| cost.wall),
        column(git, |cost| cost.cpu),
    );
}

fn folder_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            if metadata.is_dir() {
                pending.push(entry.path());
            } else {
                total += metadata.len();
            }
        }
    }
    total
}

struct Agentty {
    runtime: tokio::runtime::Runtime,
    tree: PathBuf,
    state: PathBuf,
}

impl Agentty {
    fn worker(&self, conversation: &str) -> SnapshotWorker {
        let _guard = self.runtime.enter();
        SnapshotWorker::start(SnapshotSetup {
            root: self.tree.clone(),
            dir: self.state.join("snapshots").join(conversation),
            state: self.state.clone(),
            limits: SnapshotLimits::default(),
        })
    }

    fn reply(&self, worker: &mut SnapshotWorker) -> SnapshotReply {
        self.runtime
            .block_on(worker.next())
            .expect("the snapshot thread answers")
    }

    /// A new conversation's worker, once its baseline is taken.
    fn ready(&self, conversation: &str) -> SnapshotWorker {
        let mut worker = self.worker(conversation);
        loop {
            if let SnapshotReply::Ready { .. } = self.reply(&mut worker) {
                return worker;
            }
        }
    }

    /// One turn: the "before" walk beside the request, `edit` as the agent, the "after" walk.
    fn turn(&self, worker: &mut SnapshotWorker, turn: u64, edit: impl FnOnce()) -> usize {
        let since = SystemTime::now();
        worker.turn_started(since);
        worker.begin(turn, since);
        self.reply(worker);
        edit();
        worker.end(turn);
        match self.reply(worker) {
            SnapshotReply::Ended { changes, .. } => changes.len(),
            other => panic!("{other:?}"),
        }
    }
}

/// `git add -A && git write-tree` on `tree` into the repository `git_dir` and index `index`.
fn git_snapshot(tree: &Path, git_dir: &Path, index: &Path) {
    for args in [&["add", "-A"][..], &["write-tree"][..]] {
        let status = Command::new("git")
            .arg("--git-dir")
            .arg(git_dir)
            .arg("--work-tree")
            .arg(tree)
            .args(args)
            .env("GIT_INDEX_FILE", index)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdout(std::process::Stdio::null())
            .status()
            .expect("git runs");
        assert!(status.success(), "git {args:?}");
    }
}

fn git_init(git_dir: &Path) {
    let _ = std::fs::remove_dir_all(git_dir);
    let status = Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(git_dir)
        .status()
        .expect("git runs");
    assert!(status.success());
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this with no such flag.
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let started = Instant::now();
    let (tree, files, bytes) = big_tree::ensure();
    println!(
        "tree: {} — {files} files, {:.0} MB (ready in {:.1} s)",
        tree.display(),
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    let scratch = tempfile::tempdir().unwrap();
    let bench = Agentty {
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
        tree: tree.clone(),
        state: scratch.path().join("state"),
    };
    let git_dir = scratch.path().join("shadow.git");
    let index = scratch.path().join("index");
    let runs = runs();

    // The cold baseline, and git's cold add.
    let (mut cold, mut git_cold) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let _ = std::fs::remove_dir_all(&bench.state);
        cold.push(measure(false, || drop(bench.ready(&format!("cold-{run}")))));
        git_init(&git_dir);
        let _ = std::fs::remove_file(&index);
        git_cold.push(measure(true, || git_snapshot(&tree, &git_dir, &index)));
    }
    eprintln!(
        "cold baselines done ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    let store_bytes = folder_bytes(&bench.state.join("trees"));
    let git_bytes = folder_bytes(&git_dir.join("objects"));

    // Turns: the store keeps the last cold run's baseline.
    std::thread::sleep(Duration::from_millis(100));
    let mut worker = bench.ready("turns");
    let state_before = folder_bytes(&bench.state);
    let mut unchanged = Vec::new();
    let mut turn = 0;
    for _ in 0..20 {
        turn += 1;
        let cost = measure(false, || {
            let changed = bench.turn(&mut worker, turn, || {});
            assert_eq!(changed, 0);
        });
        eprintln!("turn {turn}: {:.0} ms", cost.wall * 1000.0);
        unchanged.push(cost);
    }
    let state_after = folder_bytes(&bench.state);
    let mut git_unchanged = Vec::new();
    for _ in 0..runs {
        git_unchanged.push(measure(true, || git_snapshot(&tree, &git_dir, &index)));
    }
    let (mut edited, mut git_edited) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        turn += 1;
        edited.push(measure(false, || {
            let changed = bench.turn(&mut worker, turn, || {
                big_tree::touch(&tree, 10, turn as usize)
            });
            assert_eq!(changed, 10);
        }));
        // git snapshots the same ten edits.
        git_edited.push(measure(true, || git_snapshot(&tree, &git_dir, &index)));
    }
    drop(worker);

    // A second conversation (a new `agentty run`) in the same tree.
    let mut second = Vec::new();
    for run in 0..runs {
        second.push(measure(false, || {
            drop(bench.ready(&format!("second-{run}")))
        }));
    }

    println!();
    println!(
        "| {:<44} | {:>24} | {:>24} | {:>24} | {:>24} |",
        "", "agentty wall", "agentty CPU", "git wall", "git CPU"
    );
    println!("|{}|", ["-"; 5].map(|_| "-".repeat(26)).join("|"));
    row(
        "cold baseline (empty store / empty index)",
        &cold,
        &git_cold,
    );
    row(
        "a turn that changes nothing (its snapshots)",
        &unchanged,
        &git_unchanged,
    );
    row(
        "a turn that edits 10 files (its snapshots)",
        &edited,
        &git_edited,
    );
    row(
        "a second conversation's baseline (warm store)",
        &second,
        &[],
    );
    println!();
    println!(
        "store after the cold baseline: {:.1} MB (git's objects: {:.1} MB)",
        store_bytes as f64 / 1e6,
        git_bytes as f64 / 1e6
    );
    println!(
        "state dir over 20 turns that change nothing: {:.1} KB → {:.1} KB (+{} bytes, {} bytes a turn)",
        state_before as f64 / 1e3,
        state_after as f64 / 1e3,
        state_after.saturating_sub(state_before),
        state_after.saturating_sub(state_before) / 20
    );
}
