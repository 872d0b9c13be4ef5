use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::changes::turn_changes;
use super::manifest::{EntryKind, Manifest};
use super::restore::undo as undo_journaled;
use super::scan::{scan, Guard, ScanReport, Walk};
use super::store::Store;
use super::*;

fn undo(
    root: &Path,
    store: &Store,
    before: &Manifest,
    after: &Manifest,
    overwrite: bool,
) -> UndoOutcome {
    undo_journaled(
        root,
        store,
        &SnapshotLimits::default(),
        before,
        after,
        overwrite,
        "test",
    )
}

/// The paths of a manifest, as text.
fn paths(manifest: &Manifest) -> Vec<String> {
    manifest
        .entries
        .keys()
        .map(|path| manifest::display_path(path))
        .collect()
}

fn entry<'a>(manifest: &'a Manifest, path: &str) -> &'a manifest::Entry {
    &manifest.entries[path.as_bytes()]
}

fn write(root: &Path, path: &str, text: &str) {
    let full = root.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, text).unwrap();
}

/// A tree and a store in separate temporary folders.
struct Rig {
    tree: tempfile::TempDir,
    state: tempfile::TempDir,
    store: Store,
    limits: SnapshotLimits,
}

impl Rig {
    fn new() -> Self {
        let state = tempfile::tempdir().unwrap();
        let store = Store::new(state.path(), state.path().join("trees/t"));
        Self {
            tree: tempfile::tempdir().unwrap(),
            state,
            store,
            limits: SnapshotLimits::default(),
        }
    }

    fn root(&self) -> &Path {
        self.tree.path()
    }

    fn scan(&self, cache: Option<&Manifest>) -> (Manifest, ScanReport) {
        self.scan_guarded(cache, None)
    }

    fn scan_guarded(
        &self,
        cache: Option<&Manifest>,
        guard: Option<Guard<'_>>,
    ) -> (Manifest, ScanReport) {
        let exclude = scan::exclude_matcher(self.root(), &self.limits.exclude_patterns());
        let walk = Walk {
            root: self.root(),
            store: &self.store,
            limits: &self.limits,
            exclude: &exclude,
        };
        scan(&walk, cache, guard)
    }

    fn changes(&self, before: &Manifest, after: &Manifest) -> Vec<FileChange> {
        turn_changes(&self.store, &self.limits, before, after)
    }

    /// A worker on this tree, its records in `name` of the state dir.
    fn worker(&self, name: &str) -> SnapshotWorker {
        SnapshotWorker::start(SnapshotSetup {
            root: self.root().to_path_buf(),
            dir: self.state.path().join("snapshots").join(name),
            state: self.state.path().to_path_buf(),
            limits: self.limits.clone(),
        })
    }
}

/// A worker on a rig's tree, driven one job at a time: each call waits for the job's reply.
struct Driven {
    runtime: tokio::runtime::Runtime,
    worker: SnapshotWorker,
}

impl Rig {
    /// A worker whose baseline is taken, its records in `name`; with the launch's notice.
    fn driven(&self, name: &str) -> (Driven, Option<String>) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut driven = Driven {
            runtime,
            worker: self.worker(name),
        };
        let SnapshotReply::Ready { notice } = driven.next() else {
            panic!("no baseline");
        };
        (driven, notice)
    }
}

impl Driven {
    fn next(&mut self) -> SnapshotReply {
        let worker = &mut self.worker;
        self.runtime
            .block_on(worker.next())
            .expect("the worker answers")
    }

    /// Turn `turn`: the tree before it (once past the clock slack of earlier writes), `edit`,
    /// the tree after it: what it changed, and the turn's notice.
    fn turn(&mut self, turn: u64, edit: impl FnOnce()) -> (Vec<FileChange>, Option<String>) {
        std::thread::sleep(Duration::from_millis(120));
        self.worker.begin(turn, SystemTime::now());
        let SnapshotReply::Began { turn: began, .. } = self.next() else {
            panic!("turn {turn} not begun");
        };
        assert_eq!(began, turn);
        edit();
        self.worker.end(turn);
        let SnapshotReply::Ended {
            changes, notice, ..
        } = self.next()
        else {
            panic!("turn {turn} not ended");
        };
        (changes, notice)
    }

    fn undo(&mut self, turn: u64, overwrite: bool) -> Result<UndoOutcome, String> {
        self.worker.undo(turn, overwrite);
        let SnapshotReply::Undone { outcome, .. } = self.next() else {
            panic!("no undo");
        };
        outcome
    }

    fn rewind(&mut self, turn: u64, overwrite: bool) -> Result<UndoOutcome, String> {
        self.worker.rewind(turn, overwrite);
        let SnapshotReply::Rewound {
            turn: rewound,
            outcome,
        } = self.next()
        else {
            panic!("no rewind");
        };
        assert_eq!(rewound, turn);
        outcome
    }

    fn undo_rewind(&mut self, turn: u64, overwrite: bool) -> Result<UndoOutcome, String> {
        self.worker.undo_rewind(turn, overwrite);
        let SnapshotReply::RewindUndone { outcome, .. } = self.next() else {
            panic!("no undo of the rewind");
        };
        outcome
    }
}

fn change(path: &str, status: ChangeStatus, added: u64, removed: u64) -> FileChange {
    FileChange {
        path: path.into(),
        status,
        added,
        removed,
        ..FileChange::default()
    }
}

#[test]
fn a_turn_s_changes_are_counted_by_lines_and_named_by_status() {
    let rig = Rig::new();
    write(rig.root(), "notes.txt", "one\ntwo\nthree\n");
    write(rig.root(), "doomed.txt", "a\nb\n");
    write(rig.root(), "same.txt", "unchanged\n");
    let (before, _) = rig.scan(None);
    write(rig.root(), "notes.txt", "one\n2\nthree\nfour\n");
    std::fs::remove_file(rig.root().join("doomed.txt")).unwrap();
    write(rig.root(), "src/new.rs", "fn main() {}\n");
    let (after, _) = rig.scan(Some(&before));
    assert_eq!(
        rig.changes(&before, &after),
        [
            change("doomed.txt", ChangeStatus::Deleted, 0, 2),
            change("notes.txt", ChangeStatus::Modified, 2, 1),
            change("src/new.rs", ChangeStatus::Created, 1, 0),
        ]
    );
}

#[test]
fn ignored_files_and_vcs_folders_are_not_kept_even_outside_git() {
    let rig = Rig::new();
    // No `.git` here: .gitignore applies all the same.
    write(rig.root(), ".gitignore", "target/\n*.log\n");
    write(rig.root(), "target/debug/big", "build output");
    write(rig.root(), "run.log", "noise");
    write(rig.root(), ".hg/store", "another tool's insides");
    write(rig.root(), ".env", "hidden but the user's");
    write(rig.root(), "src/lib.rs", "pub fn f() {}\n");
    let (manifest, _) = rig.scan(None);
    let paths = paths(&manifest);
    assert_eq!(paths, [".env", ".gitignore", "src", "src/lib.rs"]);
}

#[test]
fn unchanged_files_are_not_read_again_and_cost_no_new_blob() {
    let rig = Rig::new();
    for index in 0..20 {
        write(
            rig.root(),
            &format!("f{index}.txt"),
            &format!("file {index}\n"),
        );
    }
    let (first, report) = rig.scan(None);
    assert!(report.bytes_read > 0);
    // Past the clock slack, the metadata is trusted.
    std::thread::sleep(Duration::from_millis(120));
    let (second, report) = rig.scan(Some(&first));
    // The first scan's files were written just before it: read once more, then trusted.
    let (third, third_report) = rig.scan(Some(&second));
    assert_eq!(third_report.bytes_read, 0, "{report:?}");
    assert_eq!(first.entries.len(), third.entries.len());
    let blobs = walk_count(&rig.store.dir().join("blobs"));
    assert_eq!(blobs, 20, "each distinct content stored once");
}

fn walk_count(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| {
                    if entry.file_type().unwrap().is_dir() {
                        walk_count(&entry.path())
                    } else {
                        1
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn binary_files_are_said_binary_and_undone_byte_for_byte() {
    let rig = Rig::new();
    let image: Vec<u8> = (0..=255u8).cycle().take(4000).collect();
    std::fs::write(rig.root().join("logo.png"), &image).unwrap();
    let (before, _) = rig.scan(None);
    std::fs::write(rig.root().join("logo.png"), b"\x89PNG\0\0changed").unwrap();
    let (after, _) = rig.scan(Some(&before));
    assert_eq!(
        rig.changes(&before, &after),
        [change("logo.png", ChangeStatus::Binary, 0, 0)]
    );
    let outcome = undo(rig.root(), &rig.store, &before, &after, false);
    assert_eq!(outcome.restored, ["logo.png"]);
    assert_eq!(std::fs::read(rig.root().join("logo.png")).unwrap(), image);
}

#[test]
fn undo_recreates_deleted_files_removes_created_ones_and_restores_permissions() {
    let rig = Rig::new();
    write(rig.root(), "keep/doomed.sh", "#!/bin/sh\necho hi\n");
    let script = rig.root().join("keep/doomed.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
    write(rig.root(), "mode.txt", "text\n");
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let original_mode = mode(&rig.root().join("mode.txt"));
    let (before, _) = rig.scan(None);
    std::fs::remove_dir_all(rig.root().join("keep")).unwrap();
    write(rig.root(), "created.txt", "new\n");
    std::fs::set_permissions(
        rig.root().join("mode.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let (after, _) = rig.scan(Some(&before));
    let changes = rig.changes(&before, &after);
    assert_eq!(
        changes,
        [
            change("created.txt", ChangeStatus::Created, 1, 0),
            change("keep/doomed.sh", ChangeStatus::Deleted, 0, 2),
            FileChange {
                detail: Some(format!("mode {:o} → 600", original_mode)),
                ..change("mode.txt", ChangeStatus::Modified, 0, 0)
            },
        ]
    );
    let outcome = undo(rig.root(), &rig.store, &before, &after, false);
    assert_eq!(outcome.restored, ["keep/doomed.sh", "mode.txt"]);
    assert_eq!(outcome.removed, ["created.txt"]);
    assert!(outcome.conflicts.is_empty() && outcome.failed.is_empty());
    assert_eq!(
        std::fs::read_to_string(&script).unwrap(),
        "#!/bin/sh\necho hi\n"
    );
    assert_eq!(mode(&script), 0o750);
    assert_eq!(mode(&rig.root().join("mode.txt")), original_mode);
    assert!(!rig.root().join("created.txt").exists());
    // The tree is as before the turn: another snapshot sees no change.
    let (again, _) = rig.scan(Some(&after));
    assert!(rig.changes(&before, &again).is_empty());
}

#[test]
fn a_file_changed_since_the_turn_is_not_overwritten_unless_asked() {
    let rig = Rig::new();
    write(rig.root(), "a.txt", "v1\n");
    write(rig.root(), "b.txt", "b1\n");
    let (before, _) = rig.scan(None);
    write(rig.root(), "a.txt", "v2 by the agent\n");
    write(rig.root(), "b.txt", "b2 by the agent\n");
    let (after, _) = rig.scan(Some(&before));
    write(rig.root(), "a.txt", "v3 by the user\n");
    let outcome = undo(rig.root(), &rig.store, &before, &after, false);
    assert_eq!(outcome.conflicts, ["a.txt"]);
    assert!(!outcome.changed_anything(), "nothing is undone half-way");
    assert_eq!(
        std::fs::read_to_string(rig.root().join("a.txt")).unwrap(),
        "v3 by the user\n"
    );
    assert_eq!(
        std::fs::read_to_string(rig.root().join("b.txt")).unwrap(),
        "b2 by the agent\n"
    );
    let outcome = undo(rig.root(), &rig.store, &before, &after, true);
    assert_eq!(outcome.restored, ["a.txt", "b.txt"]);
    assert_eq!(
        std::fs::read_to_string(rig.root().join("a.txt")).unwrap(),
        "v1\n"
    );
}

#[test]
fn symbolic_links_are_kept_as_links_and_never_followed_out_of_the_tree() {
    let rig = Rig::new();
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.txt", "outside the tree\n");
    std::os::unix::fs::symlink(outside.path(), rig.root().join("out")).unwrap();
    std::os::unix::fs::symlink("secret.txt", rig.root().join("link.txt")).unwrap();
    write(rig.root(), "real/file.txt", "inside\n");
    let (before, report) = rig.scan(None);
    let paths = paths(&before);
    assert_eq!(paths, ["link.txt", "out", "real", "real/file.txt"]);
    assert_eq!(entry(&before, "out").kind, EntryKind::Symlink);
    // Only the link's target text was read, not the folder or file behind it.
    let target_len = outside.path().as_os_str().len() as u64;
    assert_eq!(
        report.bytes_read,
        target_len + "secret.txt".len() as u64 + 7
    );

    // The agent swaps the folder for a link out of the tree: undoing removes the link and
    // puts the folder back, inside the tree.
    std::fs::remove_dir_all(rig.root().join("real")).unwrap();
    std::os::unix::fs::symlink(outside.path(), rig.root().join("real")).unwrap();
    let (after, _) = rig.scan(Some(&before));
    let outcome = undo(rig.root(), &rig.store, &before, &after, false);
    // The link goes (replaced), the folder and its file come back.
    assert_eq!(outcome.restored, ["real/", "real/file.txt"]);
    assert!(
        outcome.removed.is_empty() && outcome.failed.is_empty(),
        "{outcome:?}"
    );
    assert!(std::fs::symlink_metadata(rig.root().join("real"))
        .unwrap()
        .is_dir());
    assert!(!outside.path().join("file.txt").exists());

    // The agent deletes the folder, then (after the turn) a link out of the tree appears in
    // its place: asked to overwrite, the undo replaces the link itself with the folder, and
    // never writes through it.
    let (before, _) = rig.scan(Some(&after));
    std::fs::remove_dir_all(rig.root().join("real")).unwrap();
    let (after, _) = rig.scan(Some(&before));
    std::os::unix::fs::symlink(outside.path(), rig.root().join("real")).unwrap();
    let outcome = undo(rig.root(), &rig.store, &before, &after, false);
    assert_eq!(outcome.conflicts, ["real/"], "asked first");
    let outcome = undo(rig.root(), &rig.store, &before, &after, true);
    assert_eq!(outcome.restored, ["real/file.txt"], "{outcome:?}");
    assert!(std::fs::symlink_metadata(rig.root().join("real"))
        .unwrap()
        .is_dir());
    assert!(!outside.path().join("file.txt").exists());
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "outside the tree\n"
    );
}

#[test]
fn files_over_the_limits_are_seen_changing_but_not_kept() {
    let mut rig = Rig::new();
    rig.limits.max_file_kb = 1;
    write(rig.root(), "big.txt", &"x".repeat(4096));
    write(rig.root(), "small.txt", "s\n");
    let (before, report) = rig.scan(None);
    assert_eq!(report.not_kept, [(manifest::NotKept::TooBig, 1)]);
    assert_eq!(entry(&before, "big.txt").blob(), None);
    write(rig.root(), "big.txt", &"y".repeat(5000));
    let (after, _) = rig.scan(Some(&before));
    let changes = rig.changes(&before, &after);
    assert_eq!(changes.len(), 1);
    assert!(changes[0].too_big && changes[0].status == ChangeStatus::Modified);
    let outcome = undo(rig.root(), &rig.store, &before, &after, false);
    assert_eq!(outcome.failed.len(), 1);
    assert_eq!(
        std::fs::read(rig.root().join("big.txt")).unwrap().len(),
        5000
    );
}

#[test]
fn a_snapshot_taken_after_the_agent_started_uses_the_baseline_for_what_it_wrote() {
    let rig = Rig::new();
    write(rig.root(), "early.txt", "before the turn\n");
    write(rig.root(), "gone.txt", "deleted by the agent\n");
    let (baseline, _) = rig.scan(None);
    std::thread::sleep(Duration::from_millis(120));
    let since = SystemTime::now();
    // The agent is quicker than the snapshot.
    write(rig.root(), "early.txt", "the agent's\n");
    write(rig.root(), "fresh.txt", "created by the agent\n");
    std::fs::remove_file(rig.root().join("gone.txt")).unwrap();
    let guard = Guard {
        since,
        baseline: &baseline,
        baseline_done: None,
    };
    let (before, _) = rig.scan_guarded(Some(&baseline), Some(guard));
    assert_eq!(
        before,
        Manifest {
            taken_at_ns: before.taken_at_ns,
            ..baseline.clone()
        }
    );
    let (after, _) = rig.scan(Some(&before));
    let statuses: Vec<(String, ChangeStatus)> = rig
        .changes(&before, &after)
        .into_iter()
        .map(|change| (change.path, change.status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("early.txt".to_owned(), ChangeStatus::Modified),
            ("fresh.txt".to_owned(), ChangeStatus::Created),
            ("gone.txt".to_owned(), ChangeStatus::Deleted),
        ]
    );
}

#[test]
fn the_diff_has_hunks_with_context_and_says_what_it_cannot_show() {
    let rig = Rig::new();
    let lines: String = (1..=20).map(|line| format!("line {line}\n")).collect();
    write(rig.root(), "a.txt", &lines);
    std::fs::write(rig.root().join("b.bin"), [0u8, 1, 2]).unwrap();
    let (before, _) = rig.scan(None);
    write(
        rig.root(),
        "a.txt",
        &lines.replace("line 10\n", "line ten\n"),
    );
    std::fs::write(rig.root().join("b.bin"), [0u8, 9]).unwrap();
    let (after, _) = rig.scan(Some(&before));
    let files = diff_files(&rig.store, &rig.limits, &before, &after);
    assert_eq!(files[0].path, "a.txt");
    let text: Vec<String> = files[0]
        .lines
        .iter()
        .map(|(kind, text)| format!("{kind:?} {text}"))
        .collect();
    assert_eq!(
        text,
        [
            "Hunk @@ -7,7 +7,7 @@",
            "Context line 7",
            "Context line 8",
            "Context line 9",
            "Removed line 10",
            "Added line ten",
            "Context line 11",
            "Context line 12",
            "Context line 13",
        ]
    );
    assert_eq!(files[1].status, ChangeStatus::Binary);
    assert_eq!(
        files[1].lines,
        [(DiffLineKind::Note, "binary file modified".to_owned())]
    );
}

#[test]
fn the_conversation_s_diff_spans_its_turns_per_file() {
    let rig = Rig::new();
    write(rig.root(), "a.txt", "1\n");
    let (b1, _) = rig.scan(None);
    write(rig.root(), "a.txt", "1\n2\n");
    let (a1, _) = rig.scan(Some(&b1));
    write(rig.root(), "b.txt", "b\n");
    let (b2, _) = rig.scan(Some(&a1));
    write(rig.root(), "a.txt", "1\n2\n3\n");
    let (a2, _) = rig.scan(Some(&b2));
    let (before, after) = compose(&[(b1, a1), (b2, a2)]);
    // b.txt came between the turns (the user's): not the conversation's change.
    assert_eq!(
        rig.changes(&before, &after),
        [change("a.txt", ChangeStatus::Modified, 2, 0)]
    );
}

/// Runs git in `dir` and returns its output.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Everything of `.git` a snapshot store must never change: HEAD, refs, stash, the index,
/// the objects, and the list of its files with their contents' hashes.
fn git_state(root: &Path) -> Vec<String> {
    let mut state = vec![
        git(root, &["rev-parse", "HEAD"]),
        git(root, &["for-each-ref"]),
        git(root, &["stash", "list"]),
        git(root, &["count-objects", "-v"]),
        format!("{:?}", std::fs::read(root.join(".git/index")).unwrap()),
    ];
    let mut files = Vec::new();
    list_files(&root.join(".git"), &mut files);
    files.sort();
    state.extend(files);
    state
}

fn list_files(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            list_files(&path, out);
        } else {
            let bytes = std::fs::read(&path).unwrap();
            out.push(format!(
                "{} {:x}",
                path.display(),
                xxhash_rust::xxh3::xxh3_64(&bytes)
            ));
        }
    }
}

#[test]
fn no_operation_touches_the_user_s_git_state() {
    let rig = Rig::new();
    let root = rig.root();
    git(root, &["init", "-q", "-b", "main"]);
    write(root, "tracked.txt", "v1\n");
    write(root, ".gitignore", "ignored/\n");
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "first"]);
    write(root, "tracked.txt", "stashed change\n");
    git(root, &["stash", "-q"]);
    write(root, "staged.txt", "in the index\n");
    git(root, &["add", "staged.txt"]);
    write(root, "ignored/x", "ignored\n");
    let git_before = git_state(root);

    let worker_dir = rig.state.path().join("snapshots/w");
    let (before, _) = rig.scan(None);
    write(root, "tracked.txt", "the agent's\n");
    write(root, "new.txt", "new\n");
    std::fs::remove_file(root.join("staged.txt")).unwrap();
    let (after, _) = rig.scan(Some(&before));
    assert_eq!(rig.changes(&before, &after).len(), 3);
    let _ = diff_files(&rig.store, &rig.limits, &before, &after);
    let outcome = undo(root, &rig.store, &before, &after, false);
    assert!(outcome.changed_anything() && outcome.failed.is_empty());
    // The worker as the orchestrator runs it, too.
    let (mut worker, notice) = rig.driven("w");
    assert_eq!(notice, None);
    let (changes, _) = worker.turn(1, || write(root, "tracked.txt", "again\n"));
    assert_eq!(
        changes,
        [change("tracked.txt", ChangeStatus::Modified, 1, 1)]
    );
    assert_eq!(worker.undo(1, false).unwrap().restored, ["tracked.txt"]);

    // The tree is as the user left it, and so is git's every file.
    assert_eq!(
        std::fs::read_to_string(root.join("staged.txt")).unwrap(),
        "in the index\n"
    );
    assert!(!root.join("new.txt").exists());
    assert_eq!(git_state(root), git_before);
    assert_eq!(git(root, &["status", "--porcelain"]), "A  staged.txt\n");
    assert!(worker_dir.join("turns/1.json").exists());
}

#[test]
fn the_snapshot_folder_is_named_after_the_log_beside_the_sessions_folder() {
    assert_eq!(
        dir_for_log(Path::new("/s/sessions/0001-abcd.jsonl")),
        Path::new("/s/snapshots/0001-abcd")
    );
}

#[test]
fn a_file_the_baseline_read_after_the_agent_wrote_it_is_never_restored_to_the_agent_s_version() {
    let rig = Rig::new();
    write(rig.root(), "old.txt", "the user's\n");
    std::thread::sleep(Duration::from_millis(120));
    // The first request went out before the baseline walk reached old.txt.
    let since = SystemTime::now();
    write(rig.root(), "old.txt", "the agent's, seen by the baseline\n");
    let (baseline, _) = rig.scan(None);
    let guard = Guard {
        since,
        baseline: &baseline,
        baseline_done: None,
    };
    let (before, _) = rig.scan_guarded(Some(&baseline), Some(guard));
    assert_eq!(
        entry(&before, "old.txt").blob(),
        None,
        "unknown, not the agent's text"
    );
    write(rig.root(), "old.txt", "the agent's, later\n");
    let (after, _) = rig.scan(Some(&before));
    let changes = rig.changes(&before, &after);
    assert_eq!(changes.len(), 1);
    assert!(changes[0].too_big, "reported, not restorable: {changes:?}");
    let outcome = undo(rig.root(), &rig.store, &before, &after, true);
    assert_eq!(outcome.failed.len(), 1);
    assert_eq!(read_text(rig.root(), "old.txt"), "the agent's, later\n");
}

fn read_text(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(path)).unwrap()
}

#[test]
fn a_file_saved_just_before_the_prompt_is_kept_as_the_baseline_read_it() {
    let rig = Rig::new();
    // The user saves a file and sends the prompt at once: its times are after `since`'s slack.
    write(rig.root(), "notes.txt", "the user's, just saved\n");
    let (baseline, _) = rig.scan(None);
    let baseline_done = SystemTime::now();
    let since = SystemTime::now();
    write(rig.root(), "notes.txt", "the agent's\n");
    let guard = Guard {
        since,
        baseline: &baseline,
        baseline_done: Some(baseline_done),
    };
    let (before, _) = rig.scan_guarded(Some(&baseline), Some(guard));
    assert!(
        entry(&before, "notes.txt").blob().is_some(),
        "the baseline was read before the request: its copy is how the file was"
    );
    let (after, _) = rig.scan(Some(&before));
    let changes = rig.changes(&before, &after);
    assert_eq!(changes.len(), 1);
    assert!(!changes[0].too_big, "{changes:?}");
    let outcome = undo(rig.root(), &rig.store, &before, &after, true);
    assert!(outcome.failed.is_empty(), "{outcome:?}");
    assert_eq!(
        read_text(rig.root(), "notes.txt"),
        "the user's, just saved\n"
    );
}

/// A turn taken back (by `/undo` or a rewind) no longer counts for a later rewind, and a
/// rewind can be undone: the files come back as the turns taken back left them, unless
/// changed since (then nothing is written until the user says so).
#[test]
fn a_rewind_skips_undone_turns_and_can_itself_be_undone() {
    let rig = Rig::new();
    let root = rig.root().to_path_buf();
    write(&root, "a.txt", "a0\n");
    write(&root, "b.txt", "b0\n");
    let (mut worker, notice) = rig.driven("w");
    assert_eq!(notice, None);
    {
        let turns: [(u64, &[(&str, &str)]); 3] = [
            (1, &[("a.txt", "a1\n")]),
            (2, &[("b.txt", "b2\n")]),
            (3, &[("a.txt", "a3\n"), ("c.txt", "c3\n")]),
        ];
        for (number, edit) in turns {
            worker.turn(number, || {
                for (path, text) in edit {
                    write(&root, path, text);
                }
            });
        }
        // Turn 2 undone: b.txt is as before it.
        assert_eq!(worker.undo(2, false).unwrap().restored, ["b.txt"]);

        // A rewind to before turn 2 counts turn 3 only: no conflict on b.txt.
        let outcome = worker.rewind(2, false).unwrap();
        assert_eq!(
            (outcome.restored, outcome.removed),
            (vec!["a.txt".to_owned()], vec!["c.txt".to_owned()])
        );
        assert!(outcome.conflicts.is_empty());
        assert_eq!(read_text(&root, "a.txt"), "a1\n");
        assert!(!root.join("c.txt").exists());

        // Undoing the rewind brings turn 3's files back, not turn 2's (undone before).
        write(&root, "a.txt", "the user's\n");
        let outcome = worker.undo_rewind(2, false).unwrap();
        assert_eq!(
            outcome.conflicts,
            ["a.txt"],
            "changed since the rewind: asked first"
        );
        assert!(!root.join("c.txt").exists(), "nothing written while asking");
        let outcome = worker.undo_rewind(2, true).unwrap();
        assert_eq!(outcome.restored, ["a.txt", "c.txt"]);
        assert_eq!(read_text(&root, "a.txt"), "a3\n");
        assert_eq!(read_text(&root, "c.txt"), "c3\n");
        assert_eq!(read_text(&root, "b.txt"), "b0\n");
        // Done once: the record is gone.
        assert!(worker.undo_rewind(2, false).is_err());
        // Turn 3 counts again for a later rewind.
        let outcome = worker.rewind(3, false).unwrap();
        assert_eq!(read_text(&root, "a.txt"), "a1\n");
        assert_eq!(outcome.removed, ["c.txt"]);
    }
}

/// A mode the user changed after the turn is a change of its own: `/undo` asks before it puts
/// the file back (and so never loosens a `chmod 600`).
#[test]
fn a_mode_changed_since_the_turn_is_a_conflict() {
    let rig = Rig::new();
    write(rig.root(), "f.txt", "v1\n");
    let (before, _) = rig.scan(None);
    write(rig.root(), "f.txt", "v2 by the agent\n");
    let (after, _) = rig.scan(Some(&before));
    let file = rig.root().join("f.txt");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let outcome = undo(rig.root(), &rig.store, &before, &after, false);
    assert_eq!(outcome.conflicts, ["f.txt"]);
    assert!(!outcome.changed_anything());
    assert_eq!(read_text(rig.root(), "f.txt"), "v2 by the agent\n");
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

/// Names are bytes: a file whose name is not UTF-8 is seen changing, named (with `\xNN`) and
/// put back, in a folder whose name is not UTF-8 either.
#[test]
fn names_that_are_not_utf8_are_tracked_and_undone() {
    use std::os::unix::ffi::OsStrExt;
    let rig = Rig::new();
    let odd = std::ffi::OsStr::from_bytes(b"name-\xff\xfe.txt");
    let folder = std::ffi::OsStr::from_bytes(b"dir-\xff");
    std::fs::write(rig.root().join(odd), "doomed\n").unwrap();
    std::fs::create_dir(rig.root().join(folder)).unwrap();
    std::fs::write(rig.root().join(folder).join("f.txt"), "one\n").unwrap();
    let (before, _) = rig.scan(None);
    std::fs::remove_file(rig.root().join(odd)).unwrap();
    std::fs::write(rig.root().join(folder).join("f.txt"), "one\ntwo\n").unwrap();
    let (after, _) = rig.scan(Some(&before));
    let changes = rig.changes(&before, &after);
    assert_eq!(
        changes,
        [
            change("dir-\\xff/f.txt", ChangeStatus::Modified, 1, 0),
            change("name-\\xff\\xfe.txt", ChangeStatus::Deleted, 0, 1),
        ]
    );
    let outcome = undo(rig.root(), &rig.store, &before, &after, false);
    assert_eq!(outcome.restored, ["dir-\\xff/f.txt", "name-\\xff\\xfe.txt"]);
    assert_eq!(std::fs::read(rig.root().join(odd)).unwrap(), b"doomed\n");
    assert_eq!(
        std::fs::read(rig.root().join(folder).join("f.txt")).unwrap(),
        b"one\n"
    );
}

/// A file the agent replaced with a folder comes back as the file: what the turn made in the
/// folder goes first, then the folder.
#[test]
fn a_file_replaced_by_a_folder_is_put_back() {
    let rig = Rig::new();
    write(rig.root(), "thing", "a file\n");
    let (before, _) = rig.scan(None);
    std::fs::remove_file(rig.root().join("thing")).unwrap();
    write(rig.root(), "thing/inside.txt", "made by the agent\n");
    let (after, _) = rig.scan(Some(&before));
    let changes = rig.changes(&before, &after);
    assert_eq!(
        changes
            .iter()
            .map(|change| (change.path.as_str(), change.detail.as_deref()))
            .collect::<Vec<_>>(),
        [("thing", Some("file → folder")), ("thing/inside.txt", None)]
    );
    let outcome = undo(rig.root(), &rig.store, &before, &after, false);
    assert!(outcome.failed.is_empty(), "{outcome:?}");
    assert_eq!(read_text(rig.root(), "thing"), "a file\n");
}

/// Agents' own state inside the project (`DEFAULT_EXCLUDE`, `[snapshots] exclude`) is never
/// snapshot, so never reported nor put back.
#[test]
fn excluded_paths_are_never_snapshot() {
    let mut rig = Rig::new();
    rig.limits.exclude = vec!["/scratch/".to_owned()];
    write(rig.root(), ".claude/settings.local.json", "{}\n");
    write(rig.root(), ".claude/commands/mine.md", "the user's\n");
    write(rig.root(), "scratch/tmp.txt", "x\n");
    write(rig.root(), "kept.txt", "k\n");
    let (manifest, _) = rig.scan(None);
    assert_eq!(
        paths(&manifest),
        [
            ".claude",
            ".claude/commands",
            ".claude/commands/mine.md",
            "kept.txt"
        ]
    );
}

/// Manifests are stored as deltas: a walk that finds nothing changed writes no manifest at
/// all, and one that finds one file changed writes a few hundred bytes, whatever the tree.
#[test]
fn manifests_are_deltas_and_an_unchanged_tree_adds_nothing() {
    let rig = Rig::new();
    for index in 0..2000 {
        write(
            rig.root(),
            &format!("d{}/f{index}.txt", index % 20),
            &format!("{index}\n"),
        );
    }
    let (first, _) = rig.scan(None);
    let (id, depth) = rig.store.save_manifest(&first, None).unwrap();
    let manifests = rig.store.dir().join("manifests");
    let whole = walk_bytes(&manifests);
    std::thread::sleep(Duration::from_millis(120));
    let (same, _) = rig.scan(Some(&first));
    let again = rig
        .store
        .save_manifest(&same, Some((&first, id, depth)))
        .unwrap();
    assert_eq!(again, (id, depth), "nothing changed: the same manifest");
    write(rig.root(), "d0/f0.txt", "changed\n");
    let (changed, _) = rig.scan(Some(&same));
    let (delta, delta_depth) = rig
        .store
        .save_manifest(&changed, Some((&same, id, depth)))
        .unwrap();
    assert_eq!(delta_depth, 1);
    let added = walk_bytes(&manifests) - whole;
    assert!(
        added < 400,
        "a one-file delta is {added} bytes (whole: {whole})"
    );
    assert_eq!(rig.store.manifest(delta).unwrap().entries, changed.entries);
}

fn walk_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| {
                    let metadata = entry.metadata().unwrap();
                    if metadata.is_dir() {
                        walk_bytes(&entry.path())
                    } else {
                        metadata.len()
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

/// A restore killed half-way leaves a journal: the next launch removes the temporary file it
/// left beside its target, counts what was put back and what was not, and finishes it or rolls
/// it back on request, never counting agentty's own writes as the user's.
#[test]
fn an_interrupted_restore_is_found_cleaned_and_finished_or_rolled_back() {
    let rig = Rig::new();
    for index in 0..10 {
        write(rig.root(), &format!("f{index}.txt"), "before\n");
    }
    let (before, _) = rig.scan(None);
    for index in 0..10 {
        write(rig.root(), &format!("f{index}.txt"), "after\n");
    }
    let (after, _) = rig.scan(Some(&before));
    let conversation = rig.state.path().join("snapshots/c");
    let journal = journal::Journal::begin(
        &rig.store,
        RestoreKind::Undo,
        1,
        vec![1],
        &conversation,
        &before,
        &after,
    )
    .unwrap();
    // Killed after four files, with a temporary file beside the fifth.
    for index in 0..4 {
        write(rig.root(), &format!("f{index}.txt"), "before\n");
    }
    let temporary = rig
        .root()
        .join(format!(".f4.txt.agentty-restore.{}", journal.id));
    std::fs::write(&temporary, "before\n").unwrap();
    std::mem::forget(journal);
    let found = journal::interrupted(&rig.store);
    assert_eq!(found.len(), 1);
    let seen = journal::examine(rig.root(), &rig.store, &found[0]).unwrap();
    assert_eq!((seen.done, seen.pending, seen.changed_since), (4, 6, 0));
    assert!(!temporary.exists(), "the temporary file is gone");
    assert!(
        seen.describe().contains("4 of 10 files put back"),
        "{}",
        seen.describe()
    );

    // Rolled back: the four go back as the turn left them.
    let outcome = journal::resolve(rig.root(), &rig.store, &rig.limits, &found[0], false).unwrap();
    assert_eq!(outcome.restored.len(), 4, "{outcome:?}");
    for index in 0..10 {
        assert_eq!(read_text(rig.root(), &format!("f{index}.txt")), "after\n");
    }
    assert!(journal::interrupted(&rig.store).is_empty(), "resolved once");

    // Again, finished this time.
    let journal = journal::Journal::begin(
        &rig.store,
        RestoreKind::Undo,
        1,
        vec![1],
        &conversation,
        &before,
        &after,
    )
    .unwrap();
    write(rig.root(), "f0.txt", "before\n");
    std::mem::forget(journal);
    let found = journal::interrupted(&rig.store);
    let outcome = journal::resolve(rig.root(), &rig.store, &rig.limits, &found[0], true).unwrap();
    assert_eq!(outcome.restored.len(), 9, "{outcome:?}");
    for index in 0..10 {
        assert_eq!(read_text(rig.root(), &format!("f{index}.txt")), "before\n");
    }
}

/// Two agentty processes ran turns in one tree at the same time: the turn's summary may hold
/// the other's files, so its `/undo` asks before touching anything.
#[test]
fn a_turn_that_overlapped_another_agentty_s_asks_before_undoing() {
    let rig = Rig::new();
    write(rig.root(), "mine.txt", "v1\n");
    let store = Store::for_tree(rig.state.path(), rig.root());
    // Another agentty (a live process: this test's parent) began a turn here a moment ago.
    let other = std::os::unix::process::parent_id();
    let since = SystemTime::now() - Duration::from_secs(1);
    store
        .write_atomically(
            &store
                .dir()
                .join("activity")
                .join(format!("{other}-{}", scan::ns(since))),
            b"",
        )
        .unwrap();
    let (mut worker, _) = rig.driven("w");
    let (changes, notice) = worker.turn(1, || {
        write(rig.root(), "theirs.txt", "made by the other agentty\n")
    });
    assert_eq!(changes.len(), 1);
    assert!(notice.unwrap().contains("Another agentty"));
    let outcome = worker.undo(1, false).unwrap();
    assert_eq!(outcome.shared_with, [other]);
    assert_eq!(outcome.conflicts, ["theirs.txt"]);
    assert!(rig.root().join("theirs.txt").exists(), "asked, not deleted");
    assert!(describe_undo(&Ok(outcome)).contains("another agentty"));
}

/// Another agentty's turn (this test's parent's pid stands in for it) that created
/// `theirs.txt` during this process's turn 1: its activity record in the tree's store, begun
/// at `since`, ended with the ids of its two manifests when `ended` (else still running).
fn other_agentty_turn(rig: &Rig, since: SystemTime, ended: bool) {
    let store = Store::for_tree(rig.state.path(), rig.root());
    let exclude = scan::exclude_matcher(rig.root(), &rig.limits.exclude_patterns());
    let walk = Walk {
        root: rig.root(),
        store: &store,
        limits: &rig.limits,
        exclude: &exclude,
    };
    let (now, _) = scan(&walk, None, None);
    let mut before = now.clone();
    before.entries.remove(b"theirs.txt".as_slice());
    let mut after = Manifest::default();
    after.entries.insert(
        b"theirs.txt".to_vec(),
        now.entries[b"theirs.txt".as_slice()].clone(),
    );
    before
        .entries
        .retain(|path, _| path.as_slice() == b"theirs.txt");
    let (before, _) = store.save_manifest(&before, None).unwrap();
    let (after, _) = store.save_manifest(&after, None).unwrap();
    let text = if ended {
        format!("{} {before:032x} {after:032x}", scan::ns(SystemTime::now()))
    } else {
        String::new()
    };
    let other = std::os::unix::process::parent_id();
    store
        .write_atomically(
            &store
                .dir()
                .join("activity")
                .join(format!("{other}-{}", scan::ns(since))),
            text.as_bytes(),
        )
        .unwrap();
}

/// Issue 37, item 11: a file another agentty's turn wrote during this turn is not this turn's
/// change, when that turn has ended by the end of this one (its summary leaves it out) or by
/// the time of the undo (the undo leaves it alone without asking).
#[test]
fn a_file_another_agentty_s_turn_wrote_is_not_this_turn_s_change() {
    for ended_before_ours in [true, false] {
        let rig = Rig::new();
        write(rig.root(), "mine.txt", "v1\n");
        let (mut worker, _) = rig.driven("w");
        let since = std::cell::Cell::new(SystemTime::now());
        let (changes, notice) = worker.turn(1, || {
            since.set(SystemTime::now());
            write(rig.root(), "mine.txt", "v2\n");
            write(rig.root(), "theirs.txt", "made by the other agentty\n");
            other_agentty_turn(&rig, since.get(), ended_before_ours);
        });
        {
            let changed: Vec<&str> = changes.iter().map(|change| change.path.as_str()).collect();
            let notice = notice.unwrap_or_default();
            if ended_before_ours {
                assert_eq!(changed, ["mine.txt"], "{notice}");
                assert!(
                    notice.contains("1 file changed meanwhile by another agentty's turn"),
                    "{notice}"
                );
            } else {
                // Still running then: what it did is not known yet, so it is counted and said.
                assert_eq!(changed, ["mine.txt", "theirs.txt"]);
                assert!(notice.contains("Another agentty"), "{notice}");
                other_agentty_turn(&rig, since.get(), true);
            }
            let outcome = worker.undo(1, false).unwrap();
            assert_eq!(outcome.restored, ["mine.txt"], "{outcome:?}");
            assert!(outcome.removed.is_empty(), "{outcome:?}");
            assert!(outcome.shared_with.is_empty(), "{outcome:?}");
            assert_eq!(read_text(rig.root(), "mine.txt"), "v1\n");
            assert_eq!(
                read_text(rig.root(), "theirs.txt"),
                "made by the other agentty\n"
            );
        }
    }
}

/// The walk from a stat cache sees what a whole walk sees: new files in known folders, new
/// folders whole, deletions, and a new `.gitignore` (the rules changed: all walked again).
#[test]
fn the_walk_from_the_stat_cache_sees_what_a_whole_walk_sees() {
    let rig = Rig::new();
    write(rig.root(), "a/one.txt", "1\n");
    write(rig.root(), "a/deep/two.txt", "2\n");
    write(rig.root(), "b/three.txt", "3\n");
    // Older than the clock slack: the first walk's metadata is trusted.
    std::thread::sleep(Duration::from_millis(120));
    let (first, _) = rig.scan(None);
    std::thread::sleep(Duration::from_millis(120));
    write(rig.root(), "a/deep/new.txt", "new\n");
    write(rig.root(), "c/d/e/f.txt", "in a new folder\n");
    std::fs::remove_file(rig.root().join("b/three.txt")).unwrap();
    write(rig.root(), "a/one.txt", "1 changed\n");
    let (cached, report) = rig.scan(Some(&first));
    let (whole, _) = rig.scan(None);
    assert_eq!(paths(&cached), paths(&whole));
    assert_eq!(
        report.files_read, 3,
        "only the changed and new files are read"
    );
    std::thread::sleep(Duration::from_millis(120));
    write(rig.root(), "a/.gitignore", "deep/\n");
    let (after_rules, _) = rig.scan(Some(&cached));
    assert!(
        !paths(&after_rules)
            .iter()
            .any(|path| path.starts_with("a/deep")),
        "{:?}",
        paths(&after_rules)
    );
}

/// One walk a turn: when nothing happened in the tree since the last turn's end, that walk is
/// the next turn's "before"; an edit of the user's between turns (seen by the folder watch)
/// makes the "before" walk run, so the edit is never taken for the turn's.
#[test]
fn an_edit_between_turns_is_the_user_s_not_the_next_turn_s() {
    let rig = Rig::new();
    write(rig.root(), "mine.txt", "v1\n");
    write(rig.root(), "sub/agent.txt", "a1\n");
    std::thread::sleep(Duration::from_millis(120));
    // A first conversation leaves the stat cache the second starts from (and watches).
    drop(rig.driven("first"));
    let (mut worker, _) = rig.driven("w");
    {
        for (turn, user_edit) in [(1, false), (2, true), (3, false)] {
            if user_edit {
                write(rig.root(), "mine.txt", "the user's, between turns\n");
            }
            let (changes, _) = worker.turn(turn, || {
                write(rig.root(), "sub/agent.txt", &format!("a{turn}\n"))
            });
            let paths: Vec<&str> = changes.iter().map(|change| change.path.as_str()).collect();
            let expected: &[&str] = if turn == 1 { &[] } else { &["sub/agent.txt"] };
            // Turn 1 wrote what was there ("a1"): no change.
            assert_eq!(paths, expected, "turn {turn}");
        }
        worker.undo(3, false).unwrap();
        assert_eq!(worker.undo(2, false).unwrap().restored, ["sub/agent.txt"]);
        assert_eq!(
            read_text(rig.root(), "mine.txt"),
            "the user's, between turns\n"
        );
        assert_eq!(read_text(rig.root(), "sub/agent.txt"), "a1\n");
    }
}

/// A conversation deleted by retention takes what only it needed with it: the tree's store is
/// collected, and what the other conversation and the latest walk need stays.
#[test]
fn what_no_conversation_needs_is_collected_from_the_tree_s_store() {
    let rig = Rig::new();
    write(rig.root(), "shared.txt", "both\n");
    let store = Store::for_tree(rig.state.path(), rig.root());
    for (name, text) in [
        ("gone", "only the gone one's\n"),
        ("kept", "the kept one's\n"),
    ] {
        let (mut worker, _) = rig.driven(name);
        worker.turn(1, || write(rig.root(), &format!("{name}.txt"), text));
        std::fs::remove_file(rig.root().join(format!("{name}.txt"))).unwrap();
    }
    let blobs_before = walk_count(&store.dir().join("blobs"));
    std::fs::remove_dir_all(rig.state.path().join("snapshots/gone")).unwrap();
    let snapshots = rig.state.path().join("snapshots");
    let deleted = collect::collect(&store, &snapshots, &[], Duration::ZERO);
    assert!(deleted >= 1, "{deleted}");
    let blobs_after = walk_count(&store.dir().join("blobs"));
    assert_eq!(blobs_after, blobs_before - 1, "only the gone one's file");
    // The kept conversation's turn still diffs.
    let (conversation, _) = load_diffs(&snapshots.join("kept"), &[1], 1).unwrap();
    assert_eq!(conversation[0].path, "kept.txt");
    assert!(conversation[0]
        .lines
        .iter()
        .any(|(_, text)| text == "the kept one's"));
}

/// A path already as before the turn (an earlier undo cut short and finished at a later launch,
/// or the user's own revert) is neither written again nor taken for a change of someone else's:
/// a second undo says the files are as before (issue 37: agentty's own restores were listed as
/// "changed since the turn").
#[test]
fn files_already_put_back_are_no_conflict() {
    let rig = Rig::new();
    for index in 0..5 {
        write(rig.root(), &format!("f{index}.txt"), "before\n");
    }
    let (before, _) = rig.scan(None);
    for index in 0..5 {
        write(rig.root(), &format!("f{index}.txt"), "after\n");
    }
    let (after, _) = rig.scan(Some(&before));
    write(rig.root(), "f0.txt", "before\n");
    write(rig.root(), "f1.txt", "before\n");
    let outcome = undo(rig.root(), &rig.store, &before, &after, false);
    assert!(outcome.conflicts.is_empty(), "{outcome:?}");
    assert_eq!(outcome.restored, ["f2.txt", "f3.txt", "f4.txt"]);
    let again = undo(rig.root(), &rig.store, &before, &after, false);
    assert_eq!(again, UndoOutcome::default());
    assert_eq!(
        describe_undo(&Ok(again)),
        "Nothing to undo: the files are as before the turn."
    );
}

/// After `/undo`, the tree as the undo left it is the next turn's "before", also for a file the
/// next agent writes before the turn's walk reads it (issue 37, seen on a 3,000-file turn: the
/// same edit made again after an undo was taken for "before", so the turn reported and undid
/// nothing of it).
#[test]
fn after_an_undo_the_same_edit_again_is_the_next_turn_s() {
    let rig = Rig::new();
    write(rig.root(), "f.txt", "line\n");
    write(rig.root(), "sub/g.txt", "other\n");
    std::thread::sleep(Duration::from_millis(120));
    let (mut driven, _) = rig.driven("w");
    for turn in 1..=2 {
        std::thread::sleep(Duration::from_millis(120));
        // The request goes out and the agent writes before the "before" walk runs.
        let since = SystemTime::now();
        driven.worker.turn_started(since);
        write(rig.root(), "f.txt", "line\nthe agent was here\n");
        driven.worker.begin(turn, since);
        driven.next();
        driven.worker.end(turn);
        let SnapshotReply::Ended { changes, .. } = driven.next() else {
            panic!("no end");
        };
        let paths: Vec<&str> = changes.iter().map(|change| change.path.as_str()).collect();
        assert_eq!(paths, ["f.txt"], "turn {turn}");
        let outcome = driven.undo(turn, false).unwrap();
        assert_eq!(outcome.restored, ["f.txt"], "turn {turn}");
        assert_eq!(read_text(rig.root(), "f.txt"), "line\n", "turn {turn}");
    }
}

/// What an agent keeps of its own inside the project (`DEFAULT_EXCLUDE`, `[snapshots]
/// exclude`) is never put back by `/undo` or `/rewind`, whatever the turn did to it: rolling it
/// back would change the agent's state behind its back.
#[test]
fn undo_and_rewind_never_put_back_an_agents_own_state() {
    let mut rig = Rig::new();
    rig.limits.exclude = vec!["/.agent-store/".to_owned()];
    let root = rig.root().to_path_buf();
    write(&root, "notes.txt", "n0\n");
    write(&root, ".claude/settings.local.json", "{\"before\":true}\n");
    write(&root, ".agent-store/session.db", "before\n");
    let (mut worker, notice) = rig.driven("w");
    assert_eq!(notice, None);
    {
        for number in [1, 2] {
            worker.turn(number, || {
                write(&root, "notes.txt", &format!("n{number}\n"));
                write(
                    &root,
                    ".claude/settings.local.json",
                    &format!("{{\"turn\":{number}}}\n"),
                );
                write(
                    &root,
                    ".agent-store/session.db",
                    &format!("turn {number}\n"),
                );
            });
        }
        assert_eq!(worker.undo(2, false).unwrap().restored, ["notes.txt"]);
        assert_eq!(read_text(&root, "notes.txt"), "n1\n");
        assert_eq!(read_text(&root, ".agent-store/session.db"), "turn 2\n");
        assert_eq!(
            read_text(&root, ".claude/settings.local.json"),
            "{\"turn\":2}\n"
        );

        assert_eq!(worker.rewind(1, false).unwrap().restored, ["notes.txt"]);
        assert_eq!(read_text(&root, "notes.txt"), "n0\n");
        assert_eq!(read_text(&root, ".agent-store/session.db"), "turn 2\n");
        assert_eq!(
            read_text(&root, ".claude/settings.local.json"),
            "{\"turn\":2}\n"
        );
    }
}

/// A file past `[snapshots] max_files` cannot be undone, and the undo and `/diff` name the cap
/// the conversation's snapshots were taken under (they said "past the 100000 files", the
/// default, under a cap of 3,000).
#[test]
fn a_file_past_the_cap_names_the_cap_in_force() {
    let mut rig = Rig::new();
    rig.limits.max_files = 2;
    for name in ["a.txt", "b.txt", "c.txt"] {
        write(rig.root(), name, "v1\n");
    }
    let (mut worker, _) = rig.driven("w");
    worker.turn(1, || write(rig.root(), "c.txt", "v2\n"));
    let said = describe_undo(&worker.undo(1, false));
    assert!(
        said.contains("c.txt (not kept before the turn: past the 2 files a snapshot keeps"),
        "{said}"
    );
    let (_, last) = load_diffs(&rig.state.path().join("snapshots/w"), &[1], 1).unwrap();
    let notes: Vec<&str> = last[0]
        .lines
        .iter()
        .filter(|(kind, _)| *kind == DiffLineKind::Note)
        .map(|(_, text)| text.as_str())
        .collect();
    assert!(
        notes.iter().any(|note| note.contains("past the 2 files")),
        "{notes:?}"
    );
}
