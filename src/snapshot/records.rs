//! A conversation's own part of the snapshots, in `snapshots/<its log's stem>/` (so it follows
//! the session logs' retention): which tree store it uses (`tree`), each turn's two manifests
//! (`turns/<turn>.json`), the turns taken back (`taken-back/<turn>`) and what each rewind took
//! back (`rewinds/<turn>.json`). The tree's store (blobs, manifests) is shared with the other
//! conversations in that tree; its `users/` lists the conversations that keep turns in it.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::manifest::BlobId;
use super::store::Store;

/// A turn's two snapshots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TurnRecord {
    before: String,
    after: String,
    /// Other agentty processes that ran a turn in the same tree during this one: what they
    /// changed may be counted here, so `/undo` asks before touching anything.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) foreign: Vec<u32>,
    /// When the turn began and ended (ns), to find those other turns again later: one that was
    /// still running when this one ended may have said what it changed by the time of the undo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) window: Option<(i64, i64)>,
}

impl TurnRecord {
    pub(crate) fn new(
        before: BlobId,
        after: BlobId,
        foreign: Vec<u32>,
        window: (i64, i64),
    ) -> Self {
        Self {
            before: format!("{before:032x}"),
            after: format!("{after:032x}"),
            window: (!foreign.is_empty()).then_some(window),
            foreign,
        }
    }

    pub(crate) fn ids(&self) -> io::Result<(BlobId, BlobId)> {
        let parse = |hex: &str| {
            u128::from_str_radix(hex, 16)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a damaged turn record"))
        };
        Ok((parse(&self.before)?, parse(&self.after)?))
    }
}

/// A conversation's records, with the tree store they point into.
#[derive(Debug, Clone)]
pub(crate) struct Records {
    dir: PathBuf,
    store: Store,
}

const TREE_FILE: &str = "tree";
/// The limits the conversation's snapshots were taken under (to name them, in `/diff`).
const LIMITS_FILE: &str = "limits.json";

impl Records {
    pub(crate) fn new(dir: impl Into<PathBuf>, store: Store) -> Self {
        Self {
            dir: dir.into(),
            store,
        }
    }

    /// The records in `dir` and the tree store they name (`anchor`: the state dir).
    pub(crate) fn open(dir: &Path, anchor: &Path) -> io::Result<Self> {
        let text = crate::files::read_text_limited(&dir.join(TREE_FILE), 4096)?;
        let tree = PathBuf::from(text.trim_end());
        if !tree.starts_with(anchor.join(super::store::TREES_DIR)) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the conversation names a store outside agentty's state dir",
            ));
        }
        Ok(Self::new(dir, Store::new(anchor, tree)))
    }

    /// The limits the conversation's snapshots were taken under (the defaults where not said).
    pub(crate) fn limits(&self) -> super::SnapshotLimits {
        crate::files::read_limited(&self.dir.join(LIMITS_FILE), 64 * 1024)
            .ok()
            .and_then(|json| serde_json::from_slice(&json).ok())
            .unwrap_or_default()
    }

    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Notes which store the conversation uses, under which limits, and that the store has a
    /// user in it.
    pub(crate) fn link(&self, limits: &super::SnapshotLimits) -> io::Result<()> {
        use std::os::unix::ffi::OsStrExt;
        let tree = self.store.dir().as_os_str().as_bytes();
        let mut line = tree.to_vec();
        line.push(b'\n');
        self.write(&self.dir.join(TREE_FILE), &line)?;
        let limits = serde_json::to_vec(limits).map_err(io::Error::other)?;
        self.write(&self.dir.join(LIMITS_FILE), &limits)?;
        let stem = self.dir.file_name().unwrap_or_default();
        self.write(&self.store.dir().join("users").join(stem), b"")
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.store.write_atomically(path, bytes)
    }

    fn turn_path(&self, turn: u64) -> PathBuf {
        self.dir.join("turns").join(format!("{turn}.json"))
    }

    pub(crate) fn save_turn(&self, turn: u64, record: &TurnRecord) -> io::Result<()> {
        let json = serde_json::to_vec(record).map_err(io::Error::other)?;
        self.write(&self.turn_path(turn), &json)
    }

    pub(crate) fn turn(&self, turn: u64) -> io::Result<TurnRecord> {
        let json = crate::files::read_limited(&self.turn_path(turn), 64 * 1024)?;
        serde_json::from_slice(&json)
            .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))
    }

    fn taken_back_path(&self, turn: u64) -> PathBuf {
        self.dir.join("taken-back").join(turn.to_string())
    }

    /// Marks turns' changes as taken back (`true`) or brought back (`false`).
    pub(crate) fn mark_taken_back(&self, turns: &[u64], taken_back: bool) -> io::Result<()> {
        for turn in turns {
            let path = self.taken_back_path(*turn);
            if taken_back {
                self.write(&path, b"")?;
            } else {
                match std::fs::remove_file(&path) {
                    Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(error),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn rewind_path(&self, turn: u64) -> PathBuf {
        self.dir.join("rewinds").join(format!("{turn}.json"))
    }

    /// Keeps which turns a rewind to before `turn` took back, so it can be undone.
    pub(crate) fn save_rewind(&self, turn: u64, turns: &[u64]) -> io::Result<()> {
        let json = serde_json::to_vec(turns).map_err(io::Error::other)?;
        self.write(&self.rewind_path(turn), &json)
    }

    /// The turns the rewind to before `turn` took back.
    pub(crate) fn rewind_record(&self, turn: u64) -> io::Result<Vec<u64>> {
        let json = crate::files::read_limited(&self.rewind_path(turn), 1024 * 1024)?;
        serde_json::from_slice(&json)
            .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))
    }

    pub(crate) fn forget_rewind(&self, turn: u64) {
        let _ = std::fs::remove_file(self.rewind_path(turn));
    }

    /// The turns from `first` on with both snapshots kept and their changes not taken back,
    /// in order.
    pub(crate) fn turns_from(&self, first: u64) -> Vec<u64> {
        let Ok(entries) = std::fs::read_dir(self.dir.join("turns")) else {
            return Vec::new();
        };
        let mut turns: Vec<u64> = entries
            .flatten()
            .filter_map(|entry| {
                entry
                    .file_name()
                    .to_str()?
                    .strip_suffix(".json")?
                    .parse()
                    .ok()
            })
            .filter(|turn| *turn >= first)
            .filter(|turn| std::fs::symlink_metadata(self.taken_back_path(*turn)).is_err())
            .collect();
        turns.sort_unstable();
        turns
    }
}
