//! The on-disk store of one conversation: `blobs/<2 hex>/<30 hex>` (a file's bytes, zstd,
//! named by their XXH3-128) and `manifests/<name>.json.zst` (one snapshot: every kept path with
//! its metadata and blob). Blobs and manifests are written to a temporary name and renamed, so a
//! crash leaves either the whole file or none; nothing is written through a symbolic link.
//!
//! XXH3-128 rather than a cryptographic hash: the store only dedupes what agentty itself read
//! from the tree, and whoever could craft a collision (the agent) can write the tree directly.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_128;

/// zstd level: fast, and source text still shrinks about fourfold.
const LEVEL: i32 = 3;
/// A manifest larger than this (decompressed) is refused: a damaged or planted file must not
/// make agentty allocate without end.
const MAX_MANIFEST_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum EntryKind {
    File,
    /// A symbolic link: its blob is the target's text; never followed.
    Symlink,
}

/// One path of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    pub(crate) kind: EntryKind,
    /// Permission bits (`st_mode & 0o7777`).
    pub(crate) mode: u32,
    pub(crate) size: u64,
    pub(crate) mtime_ns: i128,
    pub(crate) ctime_ns: i128,
    pub(crate) ino: u64,
    /// The content's blob; `None` when it was over the limits (or unreadable): only the
    /// metadata above says whether it changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) blob: Option<String>,
}

impl Entry {
    /// Whether `other` has the same content (and kind and mode), as far as can be told.
    pub(crate) fn same_content(&self, other: &Entry) -> bool {
        if self.kind != other.kind || self.mode != other.mode {
            return false;
        }
        match (&self.blob, &other.blob) {
            (Some(mine), Some(theirs)) => mine == theirs,
            // Not kept on one side: the metadata decides.
            _ => self.same_stat(other),
        }
    }

    /// The metadata a file keeps while nobody writes it.
    pub(crate) fn same_stat(&self, other: &Entry) -> bool {
        self.kind == other.kind
            && self.mode == other.mode
            && self.size == other.size
            && self.mtime_ns == other.mtime_ns
            && self.ctime_ns == other.ctime_ns
            && self.ino == other.ino
    }
}

/// One snapshot of the tree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    /// When the walk started (ns since the epoch): a file written after it may have been read
    /// half-way, so its metadata is not trusted by the next snapshot.
    pub(crate) taken_at_ns: i128,
    /// By relative, `/`-separated path.
    pub(crate) entries: BTreeMap<String, Entry>,
}

/// A conversation's snapshot store.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    dir: PathBuf,
}

impl Store {
    /// The store in `dir` (created on the first write).
    pub(crate) fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    #[cfg(test)]
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    fn blob_path(&self, name: &str) -> Option<PathBuf> {
        // Names come from manifests on disk: only our own shape is accepted, so a damaged
        // manifest cannot name a path outside the store.
        if name.len() != 32 || !name.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return None;
        }
        Some(self.dir.join("blobs").join(&name[..2]).join(&name[2..]))
    }

    /// Stores `bytes` (once: an existing blob is not written again) and returns its name.
    pub(crate) fn put_blob(&self, bytes: &[u8]) -> io::Result<String> {
        let name = format!("{:032x}", xxh3_128(bytes));
        let path = self.blob_path(&name).expect("our own blob names are valid");
        if std::fs::symlink_metadata(&path).is_ok() {
            return Ok(name);
        }
        let compressed = zstd::bulk::compress(bytes, LEVEL)?;
        write_atomically(&path, &compressed)?;
        Ok(name)
    }

    /// The bytes of blob `name`, at most `limit` of them.
    pub(crate) fn blob(&self, name: &str, limit: u64) -> io::Result<Vec<u8>> {
        let path = self
            .blob_path(name)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not a blob name"))?;
        let file = crate::files::open_regular(&path)?;
        let mut bytes = Vec::new();
        zstd::stream::read::Decoder::new(file)?
            .take(limit.saturating_add(1))
            .read_to_end(&mut bytes)?;
        if bytes.len() as u64 > limit {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the stored file is larger than the limit",
            ));
        }
        if format!("{:032x}", xxh3_128(&bytes)) != name {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the stored file is damaged",
            ));
        }
        Ok(bytes)
    }

    fn manifest_path(&self, name: &str) -> PathBuf {
        self.dir.join("manifests").join(format!("{name}.json.zst"))
    }

    /// The marker of a turn whose changes were taken back (`/undo`, `/rewind`): a later rewind
    /// does not count them again.
    fn taken_back_path(&self, turn: u64) -> PathBuf {
        self.dir
            .join("manifests")
            .join(format!("{turn}-taken-back"))
    }

    /// Marks turns' changes as taken back (`true`) or brought back (`false`).
    pub(crate) fn mark_taken_back(&self, turns: &[u64], taken_back: bool) -> io::Result<()> {
        for turn in turns {
            let path = self.taken_back_path(*turn);
            if taken_back {
                write_atomically(&path, b"")?;
            } else {
                match std::fs::remove_file(&path) {
                    Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(error),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn rewind_record_path(&self, turn: u64) -> PathBuf {
        self.dir
            .join("manifests")
            .join(format!("rewind-{turn}.json"))
    }

    /// Keeps which turns a rewind to before `turn` took back, so it can be undone.
    pub(crate) fn save_rewind(&self, turn: u64, turns: &[u64]) -> io::Result<()> {
        let json = serde_json::to_vec(turns).map_err(io::Error::other)?;
        write_atomically(&self.rewind_record_path(turn), &json)
    }

    /// The turns the rewind to before `turn` took back.
    pub(crate) fn rewind_record(&self, turn: u64) -> io::Result<Vec<u64>> {
        let json = crate::files::read_limited(&self.rewind_record_path(turn), 1024 * 1024)?;
        serde_json::from_slice(&json)
            .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))
    }

    pub(crate) fn forget_rewind(&self, turn: u64) {
        let _ = std::fs::remove_file(self.rewind_record_path(turn));
    }

    /// The turns from `first` on with both snapshots kept and their changes not taken back,
    /// in order.
    pub(crate) fn turns_from(&self, first: u64) -> Vec<u64> {
        let Ok(entries) = std::fs::read_dir(self.dir.join("manifests")) else {
            return Vec::new();
        };
        let names: Vec<String> = entries
            .flatten()
            .filter_map(|entry| entry.file_name().to_str().map(str::to_owned))
            .collect();
        let mut turns: Vec<u64> = names
            .iter()
            .filter_map(|name| name.strip_suffix("-after.json.zst")?.parse().ok())
            .filter(|turn| *turn >= first)
            .filter(|turn| names.contains(&format!("{turn}-before.json.zst")))
            .filter(|turn| !names.contains(&format!("{turn}-taken-back")))
            .collect();
        turns.sort_unstable();
        turns
    }

    pub(crate) fn save_manifest(&self, name: &str, manifest: &Manifest) -> io::Result<()> {
        let json = serde_json::to_vec(manifest).map_err(io::Error::other)?;
        let compressed = zstd::bulk::compress(&json, LEVEL)?;
        write_atomically(&self.manifest_path(name), &compressed)
    }

    pub(crate) fn manifest(&self, name: &str) -> io::Result<Manifest> {
        let file = crate::files::open_regular(&self.manifest_path(name))?;
        let mut json = Vec::new();
        zstd::stream::read::Decoder::new(file)?
            .take(MAX_MANIFEST_BYTES)
            .read_to_end(&mut json)?;
        serde_json::from_slice(&json)
            .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder, renamed into place.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let parent = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no parent folder"))?;
    create_private_dir(parent)?;
    let temporary = parent.join(format!(
        ".{}.{}.tmp",
        path.file_name()
            .and_then(|name| name.to_str())
            .unwrap_or("blob"),
        std::process::id()
    ));
    let written = (|| {
        let mut file = crate::files::no_follow()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temporary)?;
        file.write_all(bytes)?;
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// Creates `dir` and its parents, owner-only.
fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}
