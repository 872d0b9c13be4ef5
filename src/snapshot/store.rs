//! The on-disk store of one working tree, shared by every conversation (and every agentty) that
//! works in it: `blobs/<2 hex>/<30 hex>` (a file's bytes, zstd, named by their XXH3-128),
//! `manifests/<32 hex>` (a snapshot, whole or as a delta from an earlier one, named by the hash
//! of its bytes) and `latest` (the newest walk: the stat cache the next one starts from, so a
//! second `agentty run` in the same tree reads only what changed).
//!
//! Every file is written to a temporary name beside it and renamed, so a crash leaves the whole
//! file or none, and never through a symbolic link (in any folder of the path, from the state dir
//! down: `files::private_dir_under`).
//!
//! XXH3-128 rather than a cryptographic hash: the store only dedupes what agentty itself read
//! from the tree, and whoever could craft a collision (the agent) can write the tree directly.

use std::io::{self, Read};

use crate::files::Durability;
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::xxh3_128;

use super::manifest::{BlobId, Manifest, Stored};

/// zstd level: fast, and source text still shrinks about fourfold.
const LEVEL: i32 = 3;
/// A manifest larger than this (decompressed) is refused: a damaged or planted file must not
/// make agentty allocate without end.
const MAX_MANIFEST_BYTES: u64 = 1024 * 1024 * 1024;
/// A delta chain longer than this is not followed (a whole manifest is written long before).
const MAX_DEPTH: u32 = 256;
/// Deltas at most this deep are written; the next manifest is whole.
const DELTA_DEPTH: u32 = 64;

/// The folder of the tree stores, in the state dir.
pub(crate) const TREES_DIR: &str = "trees";

/// A working tree's store.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    /// The folder from which no path component may be a link (the state dir).
    anchor: PathBuf,
    dir: PathBuf,
    /// Folders this process has already made or checked (each is judged once, not once for
    /// every blob written into it).
    checked: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<PathBuf>>>,
}

impl Store {
    /// The store in `dir`, inside `anchor` (created on the first write).
    pub(crate) fn new(anchor: impl Into<PathBuf>, dir: impl Into<PathBuf>) -> Self {
        Self {
            anchor: anchor.into(),
            dir: dir.into(),
            checked: Default::default(),
        }
    }

    /// The store of the tree at `root`, in the state dir `state`: one per tree, whatever the
    /// conversation.
    pub(crate) fn for_tree(state: &Path, root: &Path) -> Self {
        let canonical = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let key = xxh3_128(super::manifest::os_bytes(&canonical));
        Self::new(state, state.join(TREES_DIR).join(format!("{key:032x}")))
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn anchor(&self) -> &Path {
        &self.anchor
    }

    fn blob_path(&self, blob: BlobId) -> PathBuf {
        let name = format!("{blob:032x}");
        self.dir.join("blobs").join(&name[..2]).join(&name[2..])
    }

    /// Stores `bytes` (once: an existing blob is not written again) and returns its name.
    pub(crate) fn put_blob(&self, bytes: &[u8]) -> io::Result<BlobId> {
        let blob = xxh3_128(bytes);
        let path = self.blob_path(blob);
        if std::fs::symlink_metadata(&path).is_ok() {
            return Ok(blob);
        }
        let compressed = compress(bytes)?;
        self.write_atomically(&path, &compressed)?;
        Ok(blob)
    }

    /// The bytes of `blob`, at most `limit` of them.
    pub(crate) fn blob(&self, blob: BlobId, limit: u64) -> io::Result<Vec<u8>> {
        let file = crate::files::open_regular(&self.blob_path(blob))?;
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
        if xxh3_128(&bytes) != blob {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the stored file is damaged",
            ));
        }
        Ok(bytes)
    }

    fn manifest_path(&self, id: BlobId) -> PathBuf {
        self.dir.join("manifests").join(format!("{id:032x}"))
    }

    /// Writes a stored manifest and returns its id.
    pub(crate) fn put_manifest(&self, stored: &Stored) -> io::Result<BlobId> {
        let encoded = stored.encode();
        let id = xxh3_128(&encoded);
        let path = self.manifest_path(id);
        if std::fs::symlink_metadata(&path).is_err() {
            let compressed = compress(&encoded)?;
            self.write_atomically(&path, &compressed)?;
        }
        Ok(id)
    }

    /// One manifest file as stored.
    pub(crate) fn stored_manifest(&self, id: BlobId) -> io::Result<Stored> {
        let file = crate::files::open_regular(&self.manifest_path(id))?;
        let mut encoded = Vec::new();
        zstd::stream::read::Decoder::new(file)?
            .take(MAX_MANIFEST_BYTES)
            .read_to_end(&mut encoded)?;
        if xxh3_128(&encoded) != id {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a snapshot's manifest is damaged",
            ));
        }
        Stored::decode(&encoded)
    }

    /// The manifest `id`, whole (its deltas applied to the whole one they start from).
    pub(crate) fn manifest(&self, id: BlobId) -> io::Result<Manifest> {
        let mut chain = vec![self.stored_manifest(id)?];
        while let Some(base) = chain.last().and_then(|stored| stored.base) {
            if chain.len() as u32 > MAX_DEPTH {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a snapshot's chain of deltas is too long",
                ));
            }
            chain.push(self.stored_manifest(base)?);
        }
        let mut manifest = Manifest::default();
        while let Some(stored) = chain.pop() {
            manifest = stored.apply(manifest);
        }
        Ok(manifest)
    }

    /// Saves `manifest`: as what changed since `base` (a manifest of this store, with its id and
    /// depth) when that is small, else whole. A manifest with the same entries as `base` is
    /// `base` itself: nothing is written. Returns its id and depth.
    pub(crate) fn save_manifest(
        &self,
        manifest: &Manifest,
        base: Option<(&Manifest, BlobId, u32)>,
    ) -> io::Result<(BlobId, u32)> {
        if let Some((base, id, depth)) = base {
            if base.entries == manifest.entries {
                return Ok((id, depth));
            }
            let delta = Stored::delta(manifest, base, id, depth);
            let small = delta.changes.len() <= (manifest.entries.len() / 4).max(256);
            if depth < DELTA_DEPTH && small {
                let depth = delta.depth;
                return Ok((self.put_manifest(&delta)?, depth));
            }
        }
        Ok((self.put_manifest(&Stored::whole(manifest))?, 0))
    }

    fn latest_path(&self) -> PathBuf {
        self.dir.join("latest")
    }

    /// Records the newest walk of the tree: its manifest, when it started, and the rules it
    /// walked by (`rules`: a hash of the `[snapshots] exclude` patterns).
    pub(crate) fn set_latest(
        &self,
        id: BlobId,
        depth: u32,
        taken_at_ns: i64,
        rules: u64,
    ) -> io::Result<()> {
        self.write_atomically(
            &self.latest_path(),
            format!("{id:032x} {depth} {taken_at_ns} {rules:016x}\n").as_bytes(),
        )
    }

    /// The newest walk of the tree by the same `rules`, if one was kept (by any conversation):
    /// its manifest, id and depth.
    pub(crate) fn latest(&self, rules: u64) -> Option<(Manifest, BlobId, u32)> {
        let text = crate::files::read_text_limited(&self.latest_path(), 4096).ok()?;
        let mut words = text.split_whitespace();
        let id = u128::from_str_radix(words.next()?, 16).ok()?;
        let depth: u32 = words.next()?.parse().ok()?;
        let taken_at_ns: i64 = words.next()?.parse().ok()?;
        if u64::from_str_radix(words.next()?, 16).ok()? != rules {
            // Walked by other exclusions: what it lists is not what this walk would.
            return None;
        }
        let mut manifest = self.manifest(id).ok()?;
        manifest.taken_at_ns = taken_at_ns;
        Some((manifest, id, depth))
    }

    /// Makes `folder` (inside the store's anchor), never through a link.
    pub(crate) fn private_dir(&self, folder: &Path) -> io::Result<()> {
        let known = |checked: &std::collections::HashSet<PathBuf>| checked.contains(folder);
        if self.checked.lock().is_ok_and(|checked| known(&checked)) {
            return Ok(());
        }
        crate::files::private_dir_under(&self.anchor, folder)?;
        if let Ok(mut checked) = self.checked.lock() {
            checked.insert(folder.to_path_buf());
        }
        Ok(())
    }

    /// Writes `bytes` to `path` (see [`crate::files::write_atomically`]), its folder made or
    /// checked first; copies and manifests are left to the kernel's write-back.
    pub(crate) fn write_atomically(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.write(path, bytes, Durability::WriteBack)
    }

    /// Like [`Store::write_atomically`], flushed before it takes the old file's place: what a
    /// crash must not lose (a restore's journal).
    pub(crate) fn write_durably(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.write(path, bytes, Durability::Synced)
    }

    fn write(&self, path: &Path, bytes: &[u8], durability: Durability) -> io::Result<()> {
        let parent = path
            .parent()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no parent folder"))?;
        self.private_dir(parent)?;
        crate::files::write_atomically(path, bytes, 0o600, durability)
    }
}

thread_local! {
    /// A compressor per thread, made once: making a zstd context costs more than compressing
    /// a small source file with it.
    static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// `bytes` compressed at [`LEVEL`].
fn compress(bytes: &[u8]) -> io::Result<Vec<u8>> {
    COMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = Some(zstd::bulk::Compressor::new(LEVEL)?);
        }
        cell.as_mut().expect("made above").compress(bytes)
    })
}

/// Whether an error is a full disk (or quota).
pub(crate) fn is_disk_full(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::ENOSPC) | Some(libc::EDQUOT)
    )
}
