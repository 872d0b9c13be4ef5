//! Session checkpoints: an agent CLI's stored session as it was before a turn, so that the
//! orchestrator can undo a failed attempt and a retry continues the conversation as if the
//! failed attempt never happened (the model then sees the prompt once).
//!
//! Why a copy of the session file rather than each CLI's branching flags: in their one-shot
//! modes the CLIs offer no safe way back. pi's JSON mode can fork a whole session but not at an
//! entry; Codex's rollback exists only in its app-server; Gemini has no rewind outside its TUI;
//! Claude's `--resume-session-at` is undocumented. All four keep a session as one file that the
//! CLI only touches while it runs (measured against the real CLIs: see tests/real_*.rs), so the
//! file's bytes before the attempt are exactly "the session as if it never happened". A
//! checkpoint is taken and restored only while no attempt runs.
//!
//! Each backend says where its CLI keeps a session ([`super::Backend::session_file`]); this module
//! only captures and restores bytes.
//!
//! `/rewind` needs a checkpoint per turn, also after `--resume`: [`CheckpointStore`] keeps each
//! turn's on disk in the conversation's snapshot folder (`checkpoints/<turn>.zst`), so they are
//! deleted with its log (retention), never in the agent's own store.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::SessionRef;

/// The bytes of a session's files at one moment: the session file first, then the files the CLI
/// updates along with it (Codex's thread-history database).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionCheckpoint {
    files: Vec<FileSnapshot>,
    /// The session file, or what names the session when the agent undoes it itself.
    name: PathBuf,
    /// Where the agent's own history stood, when the agent holds the session and can branch it.
    branch: Option<BranchPoint>,
}

/// Where an agent that holds its session itself stood when a checkpoint was taken: its thread
/// and the last turn in it (`None`: no turn yet). Such an agent branches its history there
/// (Codex app-server's `thread/fork` through that turn), which is how a conversation goes back
/// to before any finished turn; the thread itself stays as it was, so the rewind can be undone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchPoint {
    pub(crate) thread: String,
    pub(crate) after_turn: Option<String>,
}

/// One file's bytes (`None`: it did not exist).
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileSnapshot {
    path: PathBuf,
    contents: Option<Vec<u8>>,
}

impl FileSnapshot {
    fn capture(path: PathBuf) -> io::Result<Self> {
        let contents = match fs::read(&path) {
            Ok(bytes) => Some(bytes),
            Err(error) if error.kind() == io::ErrorKind::NotFound => None,
            Err(error) => return Err(error),
        };
        Ok(Self { path, contents })
    }

    /// The file is rewritten in place (not replaced by a rename), so its permissions and any
    /// link to it stay the CLI's; a file that did not exist is removed.
    fn restore(&self) -> io::Result<()> {
        match &self.contents {
            Some(bytes) => fs::write(&self.path, bytes),
            None => match fs::remove_file(&self.path) {
                Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
                _ => Ok(()),
            },
        }
    }
}

impl SessionCheckpoint {
    /// The stored session `request` continues, as `backend` finds it now; `None` for a new
    /// session, or when it cannot be found or read (then a failed attempt cannot be undone).
    pub(crate) fn of_session(
        backend: &dyn crate::provider::Backend,
        request: &crate::provider::AttemptRequest,
    ) -> Option<Self> {
        let crate::provider::SessionRef::Resume(id) = &request.session else {
            return None;
        };
        let path = backend.session_file(id, request)?;
        Self::capture(path, backend.session_companions(request))
            .map_err(|error| tracing::warn!(%error, "cannot read the agent's session file"))
            .ok()
    }

    /// Reads the session file and its companions as they are now.
    pub(crate) fn capture(session: PathBuf, companions: Vec<PathBuf>) -> io::Result<Self> {
        let files: Vec<FileSnapshot> = std::iter::once(session)
            .chain(companions)
            .map(FileSnapshot::capture)
            .collect::<io::Result<_>>()?;
        Ok(Self {
            name: files_name(&files),
            files,
            branch: None,
        })
    }

    /// A session the agent undoes in itself (Codex app-server's `thread/revert` of a turn that
    /// did not complete, `thread/fork` to go back further): there are no files to put back.
    /// `branch` is where its history stood, when the provider knows it.
    pub(crate) fn held_by_agent(name: impl Into<PathBuf>, branch: Option<BranchPoint>) -> Self {
        Self {
            files: Vec::new(),
            name: name.into(),
            branch,
        }
    }

    /// The agent undoes this session itself: a turn that did not complete through the
    /// provider's `session_restored`, any earlier point through [`Self::branch_point`].
    pub(crate) fn is_held_by_agent(&self) -> bool {
        self.files.is_empty()
    }

    /// Where the agent can branch its history back to this checkpoint (held sessions only).
    pub(crate) fn branch_point(&self) -> Option<&BranchPoint> {
        self.branch.as_ref()
    }

    /// The session file (or the session's name when the agent holds it).
    pub(crate) fn path(&self) -> &Path {
        &self.name
    }

    /// Puts every file back as it was.
    pub(crate) fn restore(&self) -> io::Result<()> {
        self.files.iter().try_for_each(FileSnapshot::restore)
    }
}

/// After a turn, how long an agent that writes the turn to its session file after reporting
/// its end may take (Claude Code drains its transcript queue every 100 ms; measured 50–350 ms
/// after the `result`, also under the ACP adapter); a checkpoint taken sooner waits for it, up
/// to this long.
const SESSION_WRITE_LIMIT: Duration = Duration::from_millis(1500);
/// The session file is written once its size has stayed the same this long.
const SESSION_WRITE_QUIET: Duration = Duration::from_millis(80);

/// A turn's end that the agent may still be writing to its session file: a checkpoint taken
/// before it is written would lose that turn's end on a rollback or rewind.
pub(crate) struct UnwrittenTurn {
    /// Finds the session file (the agent may create it only with the first turn's write).
    locate: Box<dyn Fn() -> Option<PathBuf> + Send>,
    size_at_end: Option<u64>,
    ended: Instant,
}

impl UnwrittenTurn {
    /// A turn of session `id` ended now; `backend` finds its file, looked for again while
    /// waiting (a new session's file may appear only with the turn's late write).
    pub(crate) fn of_session(
        backend: std::sync::Arc<dyn crate::provider::Backend>,
        id: String,
        request: crate::provider::AttemptRequest,
    ) -> Self {
        let locate = move || backend.session_file(&id, &request);
        Self {
            size_at_end: Self::size(&locate),
            locate: Box::new(locate),
            ended: Instant::now(),
        }
    }

    fn size(locate: &dyn Fn() -> Option<PathBuf>) -> Option<u64> {
        locate().and_then(|file| fs::metadata(file).ok().map(|meta| meta.len()))
    }

    /// Waits (a short blocking wait: the checkpoint is taken between turns) until the file
    /// has grown since the turn's end and stays quiet, or the limit passes.
    pub(crate) fn wait(&self) {
        let size = || Self::size(&self.locate);
        let mut last = size();
        let mut quiet_since = Instant::now();
        while self.ended.elapsed() < SESSION_WRITE_LIMIT {
            std::thread::sleep(Duration::from_millis(20));
            let now = size();
            if now != last {
                last = now;
                quiet_since = Instant::now();
            } else if now != self.size_at_end && quiet_since.elapsed() >= SESSION_WRITE_QUIET {
                return;
            }
        }
        tracing::debug!(file = ?(self.locate)(), "the session file did not change after the turn");
    }
}

/// Each turn's session before it, kept on disk (`<dir>/<turn>.zst`: zstd of a JSON header
/// line, then the checkpoint's files' bytes one after another), so `/rewind` reaches turns of
/// an earlier run.
#[derive(Debug, Clone)]
pub(crate) struct CheckpointStore {
    dir: PathBuf,
}

/// The header of a turn's file.
#[derive(Serialize, Deserialize)]
struct StoredTurn {
    session: StoredSession,
    checkpoint: Option<StoredCheckpoint>,
}

#[derive(Serialize, Deserialize)]
struct StoredCheckpoint {
    name: PathBuf,
    /// Each file and how many of the bytes after the header are its (`None`: it did not exist).
    files: Vec<(PathBuf, Option<u64>)>,
    /// Absent in checkpoints written before agents could branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    branch: Option<BranchPoint>,
}

/// [`SessionRef`] as stored.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum StoredSession {
    New,
    ContinueLatest,
    Resume(String),
}

/// zstd level of a stored checkpoint: session files are JSON lines, which compress well fast.
const STORE_LEVEL: i32 = 3;

impl CheckpointStore {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.zst"))
    }

    /// The name of turn `turn`'s checkpoint (the session before it).
    pub(crate) fn turn_name(turn: u64) -> String {
        turn.to_string()
    }

    /// The name of the session as it was before the rewind to before turn `turn`.
    pub(crate) fn rewind_name(turn: u64) -> String {
        format!("rewind-{turn}")
    }

    /// Keeps a session and its checkpoint as `name` (written beside, then renamed into place).
    pub(crate) fn save(
        &self,
        name: &str,
        session: &SessionRef,
        checkpoint: Option<&SessionCheckpoint>,
    ) -> io::Result<()> {
        let stored = StoredTurn {
            session: match session {
                SessionRef::New => StoredSession::New,
                SessionRef::ContinueLatest => StoredSession::ContinueLatest,
                SessionRef::Resume(id) => StoredSession::Resume(id.clone()),
            },
            checkpoint: checkpoint.map(|checkpoint| StoredCheckpoint {
                name: checkpoint.name.clone(),
                files: checkpoint
                    .files
                    .iter()
                    .map(|file| {
                        let length = file.contents.as_ref().map(|bytes| bytes.len() as u64);
                        (file.path.clone(), length)
                    })
                    .collect(),
                branch: checkpoint.branch.clone(),
            }),
        };
        let mut plain = serde_json::to_vec(&stored).map_err(io::Error::other)?;
        plain.push(b'\n');
        for file in checkpoint.iter().flat_map(|checkpoint| &checkpoint.files) {
            plain.extend_from_slice(file.contents.as_deref().unwrap_or_default());
        }
        let compressed = zstd::bulk::compress(&plain, STORE_LEVEL)?;
        // Never through a link in any folder of the state dir (the checkpoint is a copy of
        // the agent's session).
        crate::logging::private_state_dir(&self.dir)?;
        let path = self.path(name);
        crate::files::write_atomically(&path, &compressed, 0o600, crate::files::Durability::Synced)
    }

    /// The session and checkpoint kept as `name`.
    pub(crate) fn load(&self, name: &str) -> io::Result<(SessionRef, Option<SessionCheckpoint>)> {
        let file = crate::files::open_regular(&self.path(name))?;
        let plain = zstd::stream::decode_all(file)?;
        let damaged = || io::Error::new(io::ErrorKind::InvalidData, "a damaged checkpoint");
        let header_end = memchr::memchr(b'\n', &plain).ok_or_else(damaged)?;
        let stored: StoredTurn =
            serde_json::from_slice(&plain[..header_end]).map_err(io::Error::other)?;
        let session = match stored.session {
            StoredSession::New => SessionRef::New,
            StoredSession::ContinueLatest => SessionRef::ContinueLatest,
            StoredSession::Resume(id) => SessionRef::Resume(id),
        };
        let mut rest = &plain[header_end + 1..];
        let checkpoint = match stored.checkpoint {
            None => None,
            Some(stored) => {
                let mut files = Vec::with_capacity(stored.files.len());
                for (path, length) in stored.files {
                    let contents = match length {
                        None => None,
                        Some(length) => {
                            let length = usize::try_from(length).map_err(|_| damaged())?;
                            if length > rest.len() {
                                return Err(damaged());
                            }
                            let (bytes, after) = rest.split_at(length);
                            rest = after;
                            Some(bytes.to_vec())
                        }
                    };
                    files.push(FileSnapshot { path, contents });
                }
                Some(SessionCheckpoint {
                    files,
                    name: stored.name,
                    branch: stored.branch,
                })
            }
        };
        Ok((session, checkpoint))
    }

    /// Forgets the checkpoint kept as `name`.
    pub(crate) fn remove(&self, name: &str) {
        match fs::remove_file(self.path(name)) {
            Err(error) if error.kind() != io::ErrorKind::NotFound => {
                tracing::warn!(name, %error, "cannot remove a session checkpoint")
            }
            _ => {}
        }
    }
}

fn files_name(files: &[FileSnapshot]) -> PathBuf {
    files
        .first()
        .map(|file| file.path.clone())
        .unwrap_or_default()
}

/// A variable from the provider's configured environment, else agentty's own (the agent
/// inherits both, the configured one winning).
pub(crate) fn agent_env(config_env: &BTreeMap<String, String>, key: &str) -> Option<OsString> {
    config_env
        .get(key)
        .map(OsString::from)
        .or_else(|| std::env::var_os(key))
        .filter(|value| !value.is_empty())
}

/// The agent's home directory (`HOME` as the agent sees it).
pub(crate) fn agent_home(config_env: &BTreeMap<String, String>) -> Option<PathBuf> {
    agent_env(config_env, "HOME").map(PathBuf::from)
}

/// The most recently modified file at most `depth` directories below `root` whose name
/// satisfies `wanted`. Unreadable directories are skipped.
pub(crate) fn newest_file_named(
    root: &Path,
    depth: usize,
    wanted: &dyn Fn(&str) -> bool,
) -> Option<PathBuf> {
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    let mut pending = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, level)) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            // `metadata` follows links: pi's private config dir links `sessions` to the user's.
            let Ok(meta) = fs::metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                if level < depth {
                    pending.push((path, level + 1));
                }
                continue;
            }
            let named = path
                .file_name()
                .and_then(|name| name.to_str())
                .is_some_and(wanted);
            if !named {
                continue;
            }
            let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
            if best.as_ref().is_none_or(|(newest, _)| modified > *newest) {
                best = Some((modified, path));
            }
        }
    }
    best.map(|(_, path)| path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restore_puts_back_the_bytes_or_removes_a_file_that_was_not_there() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.jsonl");
        let database = dir.path().join("history.sqlite");
        let journal = dir.path().join("history.sqlite-wal");
        fs::write(&file, "one\n").unwrap();
        fs::write(&database, "db v1").unwrap();
        let checkpoint =
            SessionCheckpoint::capture(file.clone(), vec![database.clone(), journal.clone()])
                .unwrap();
        assert_eq!(checkpoint.path(), file);
        fs::write(&file, "one\ntwo\n").unwrap();
        fs::write(&database, "db v2").unwrap();
        fs::write(&journal, "pending").unwrap();
        checkpoint.restore().unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "one\n");
        assert_eq!(fs::read_to_string(&database).unwrap(), "db v1");
        assert!(!journal.exists(), "a file that was not there is removed");

        let absent = SessionCheckpoint::capture(dir.path().join("new.jsonl"), Vec::new()).unwrap();
        fs::write(dir.path().join("new.jsonl"), "x").unwrap();
        absent.restore().unwrap();
        assert!(!dir.path().join("new.jsonl").exists());
        // Restoring twice is harmless.
        absent.restore().unwrap();
    }

    #[test]
    fn a_stored_checkpoint_comes_back_as_it_was_and_restores_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("s.jsonl");
        fs::write(&session, "{\"prompt\":\"one\"}\n").unwrap();
        let missing = dir.path().join("companion.db");
        let checkpoint =
            SessionCheckpoint::capture(session.clone(), vec![missing.clone()]).unwrap();
        let store = CheckpointStore::new(dir.path().join("checkpoints"));
        store
            .save("2", &SessionRef::Resume("abc".into()), Some(&checkpoint))
            .unwrap();
        store.save("1", &SessionRef::New, None).unwrap();

        // A later run (a new store on the same folder) reads them back.
        let store = CheckpointStore::new(dir.path().join("checkpoints"));
        let (kept_session, kept) = store.load("2").unwrap();
        assert_eq!(kept_session, SessionRef::Resume("abc".into()));
        assert_eq!(kept.as_ref(), Some(&checkpoint));
        assert_eq!(store.load("1").unwrap(), (SessionRef::New, None));
        assert!(store.load("3").is_err(), "a turn never kept is not made up");

        fs::write(&session, "{\"prompt\":\"one\"}\n{\"prompt\":\"two\"}\n").unwrap();
        fs::write(&missing, "x").unwrap();
        kept.unwrap().restore().unwrap();
        assert_eq!(
            fs::read_to_string(&session).unwrap(),
            "{\"prompt\":\"one\"}\n"
        );
        assert!(!missing.exists());

        store.remove("2");
        store.remove("2");
        assert!(store.load("2").is_err());
        // Nothing but the stored turns is left in the folder (no temporary files).
        let left: Vec<_> = fs::read_dir(dir.path().join("checkpoints"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(left, [std::ffi::OsString::from("1.zst")]);
    }

    #[test]
    fn a_branch_point_of_a_session_the_agent_holds_survives_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = CheckpointStore::new(dir.path().join("checkpoints"));
        let after_a_turn = SessionCheckpoint::held_by_agent(
            "codex thread t1",
            Some(BranchPoint {
                thread: "t1".into(),
                after_turn: Some("turn-1".into()),
            }),
        );
        let unknown = SessionCheckpoint::held_by_agent("codex thread t1", None);
        let session = SessionRef::Resume("t1".into());
        store.save("4", &session, Some(&after_a_turn)).unwrap();
        store.save("5", &session, Some(&unknown)).unwrap();

        let (_, kept) = store.load("4").unwrap();
        let kept = kept.unwrap();
        assert!(kept.is_held_by_agent());
        assert_eq!(kept.branch_point(), after_a_turn.branch_point());
        assert_eq!(store.load("5").unwrap().1.unwrap().branch_point(), None);
    }

    #[test]
    fn the_newest_matching_file_is_found_below_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b");
        fs::create_dir_all(&deep).unwrap();
        fs::write(dir.path().join("a/x_id1.jsonl"), "").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(deep.join("y_id1.jsonl"), "").unwrap();
        fs::write(deep.join("y_id2.jsonl"), "").unwrap();
        let wanted = |name: &str| name.ends_with("_id1.jsonl");
        assert_eq!(
            newest_file_named(dir.path(), 2, &wanted),
            Some(deep.join("y_id1.jsonl"))
        );
        assert_eq!(
            newest_file_named(dir.path(), 1, &wanted),
            Some(dir.path().join("a/x_id1.jsonl"))
        );
        assert_eq!(newest_file_named(dir.path(), 0, &wanted), None);
    }
}
