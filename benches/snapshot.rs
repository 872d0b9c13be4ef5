//! The cost of the working tree's snapshot (issue 29), on a copy of agentty's own checkout
//! (the files git tracks: sources, tests, assets, no build output), through the same thread the
//! orchestrator uses:
//! - the baseline, cold (every file read, hashed, compressed and stored): taken when a chat
//!   opens, while the user types the first prompt;
//! - a turn's "before" snapshot with nothing changed since: what runs beside each request
//!   (the request never waits for it once the baseline is there);
//! - a turn's "after" snapshot with one file changed, and the `turn.changes` it gives.
//!
//! It also prints the bytes the tree has and the bytes the store keeps. Run:
//! `cargo bench --bench snapshot` (criterion, ~30 s).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use agentty::snapshot::{SnapshotLimits, SnapshotReply, SnapshotWorker};
use criterion::{criterion_group, criterion_main, Criterion};

/// A copy of the checkout's tracked files.
fn checkout_copy() -> (tempfile::TempDir, usize, u64) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let listed = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(repo)
        .output()
        .expect("git ls-files");
    let copy = tempfile::tempdir().unwrap();
    let (mut files, mut bytes) = (0, 0);
    for name in listed
        .stdout
        .split(|byte| *byte == 0)
        .filter(|name| !name.is_empty())
    {
        let name = std::str::from_utf8(name).unwrap();
        let from = repo.join(name);
        let Ok(metadata) = std::fs::symlink_metadata(&from) else {
            continue;
        };
        if !metadata.is_file() {
            continue;
        }
        let to = copy.path().join(name);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap();
        files += 1;
        bytes += metadata.len();
    }
    (copy, files, bytes)
}

fn folder_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let metadata = entry.metadata().unwrap();
            if metadata.is_dir() {
                pending.push(entry.path());
            } else {
                total += metadata.len();
            }
        }
    }
    total
}

struct Rig {
    runtime: tokio::runtime::Runtime,
    tree: PathBuf,
}

impl Rig {
    fn worker(&self, store: &Path) -> SnapshotWorker {
        let _guard = self.runtime.enter();
        SnapshotWorker::start(
            self.tree.clone(),
            store.to_path_buf(),
            SnapshotLimits::default(),
        )
    }

    fn reply(&self, worker: &mut SnapshotWorker) -> SnapshotReply {
        self.runtime
            .block_on(worker.next())
            .expect("the snapshot thread answers")
    }
}

fn snapshot(c: &mut Criterion) {
    let (copy, files, tree_bytes) = checkout_copy();
    let rig = Rig {
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
        tree: copy.path().to_path_buf(),
    };
    // Bytes, once.
    let stores = tempfile::tempdir().unwrap();
    let store = stores.path().join("once.snapshots");
    let mut worker = rig.worker(&store);
    assert_eq!(rig.reply(&mut worker), SnapshotReply::Ready);
    worker.begin(1, SystemTime::now());
    rig.reply(&mut worker);
    println!(
        "agentty's checkout: {files} files, {:.2} MiB; its snapshot store: {:.2} MiB \
         (blobs and the turn's manifest); a turn that changes nothing adds {} bytes of blobs",
        tree_bytes as f64 / 1048576.0,
        folder_bytes(&store) as f64 / 1048576.0,
        {
            let before = folder_bytes(&store.join("blobs"));
            worker.end(1);
            rig.reply(&mut worker);
            folder_bytes(&store.join("blobs")) - before
        }
    );
    drop(worker);

    let mut group = c.benchmark_group("snapshot of agentty's checkout");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("baseline, cold store (every file stored)", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for index in 0..iterations {
                let store = stores
                    .path()
                    .join(format!("cold-{index}-{}.snapshots", std::process::id()));
                let started = Instant::now();
                let mut worker = rig.worker(&store);
                assert_eq!(rig.reply(&mut worker), SnapshotReply::Ready);
                total += started.elapsed();
                drop(worker);
                let _ = std::fs::remove_dir_all(&store);
            }
            total
        })
    });

    let store = stores.path().join("warm.snapshots");
    let mut worker = rig.worker(&store);
    assert_eq!(rig.reply(&mut worker), SnapshotReply::Ready);
    // Past the clock slack: the baseline's metadata is trusted from here on.
    std::thread::sleep(Duration::from_millis(100));
    let mut turn = 0;
    group.bench_function("a turn's snapshot before, nothing changed", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                turn += 1;
                let started = Instant::now();
                worker.begin(turn, SystemTime::now());
                rig.reply(&mut worker);
                total += started.elapsed();
                worker.end(turn);
                rig.reply(&mut worker);
            }
            total
        })
    });

    let edited = rig.tree.join("src/stream.rs");
    group.bench_function(
        "a turn's snapshot after, one file changed (+ turn.changes)",
        |b| {
            b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                turn += 1;
                worker.begin(turn, SystemTime::now());
                rig.reply(&mut worker);
                let mut text = std::fs::read_to_string(&edited).unwrap();
                text.push_str(&format!("// turn {turn}\n"));
                std::fs::write(&edited, text).unwrap();
                let started = Instant::now();
                worker.end(turn);
                let reply = rig.reply(&mut worker);
                total += started.elapsed();
                assert!(
                    matches!(&reply, SnapshotReply::Ended { changes, .. } if changes.len() == 1),
                    "{reply:?}"
                );
            }
            total
        })
        },
    );
    group.finish();
}

criterion_group!(benches, snapshot);
criterion_main!(benches);
