//! One snapshot of the tree in memory ([`Manifest`]: every path with its state) and on disk (a
//! compact binary form, stored whole or as the difference from an earlier manifest).
//!
//! Paths are the names' bytes, relative to the tree, `/`-separated: a name that is not UTF-8 is
//! a file like any other. A path's state is its type, its permission bits and its content (a
//! blob of the store), with the metadata that tells, without reading it, that it has not
//! changed since (git's index keeps the same: size, mtime, ctime, inode, mode).
//!
//! The encoding is versioned by its first bytes; a file that does not parse is an error, never a
//! panic or an allocation without end (every length is bounded by what is left to read).

use std::collections::BTreeMap;
use std::io;

/// A relative path's bytes.
pub(crate) type PathBytes = Vec<u8>;

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    File,
    /// A symbolic link: its blob is the target's bytes; never followed.
    Symlink,
    /// A folder: kept for its mode, and so that an empty one, or one put where a file was, is
    /// seen (its files are entries of their own).
    Dir,
}

/// Why a path's content is not in the store: the change is seen (by its metadata), but it cannot
/// be shown or put back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotKept {
    /// Larger than `[snapshots] max_file_kb`.
    TooBig,
    /// The snapshot already held `[snapshots] max_files` files.
    OverFileCount,
    /// The snapshot already held `[snapshots] max_total_mb` of files.
    OverTotal,
    /// It could not be read (permissions, vanished while read).
    Unreadable,
    /// The state dir's disk is full.
    StoreFull,
    /// The store could not be written for another reason.
    StoreFailed,
    /// The agent changed it before agentty could read how it was before the turn.
    ChangedBeforeRead,
    /// `[snapshots] exclude` (an agent's own state): never kept, never put back.
    Excluded,
}

impl NotKept {
    /// Why, in words for a notice or a file's line.
    pub(crate) fn reason(self, limits: &super::SnapshotLimits) -> String {
        match self {
            NotKept::TooBig => format!(
                "over the {} KB a file ([snapshots] max_file_kb)",
                limits.max_file_kb
            ),
            NotKept::OverFileCount => format!(
                "past the {} files a snapshot keeps ([snapshots] max_files)",
                limits.max_files
            ),
            NotKept::OverTotal => format!(
                "past the {} MB a snapshot keeps ([snapshots] max_total_mb)",
                limits.max_total_mb
            ),
            NotKept::Unreadable => "it could not be read".to_owned(),
            NotKept::StoreFull => "the disk of agentty's state dir is full".to_owned(),
            NotKept::StoreFailed => "agentty's state dir could not be written".to_owned(),
            NotKept::ChangedBeforeRead => {
                "the agent changed it before agentty could read it".to_owned()
            }
            NotKept::Excluded => "excluded ([snapshots] exclude)".to_owned(),
        }
    }

    fn code(self) -> u8 {
        match self {
            NotKept::TooBig => 1,
            NotKept::OverFileCount => 2,
            NotKept::OverTotal => 3,
            NotKept::Unreadable => 4,
            NotKept::StoreFull => 5,
            NotKept::StoreFailed => 6,
            NotKept::ChangedBeforeRead => 7,
            NotKept::Excluded => 8,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            1 => NotKept::TooBig,
            2 => NotKept::OverFileCount,
            3 => NotKept::OverTotal,
            4 => NotKept::Unreadable,
            5 => NotKept::StoreFull,
            6 => NotKept::StoreFailed,
            7 => NotKept::ChangedBeforeRead,
            8 => NotKept::Excluded,
            _ => return None,
        })
    }
}

/// A blob's name: the XXH3-128 of its bytes.
pub(crate) type BlobId = u128;

/// Where a path's content is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Content {
    /// In the store (a folder's is the empty blob's name: it has none).
    Kept(BlobId),
    NotKept(NotKept),
}

/// One path of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) kind: EntryKind,
    /// Permission bits (`st_mode & 0o7777`).
    pub(crate) mode: u32,
    pub(crate) size: u64,
    pub(crate) mtime_ns: i64,
    pub(crate) ctime_ns: i64,
    pub(crate) ino: u64,
    pub(crate) content: Content,
}

impl Entry {
    pub(crate) fn blob(&self) -> Option<BlobId> {
        match self.content {
            Content::Kept(blob) => Some(blob),
            Content::NotKept(_) => None,
        }
    }

    pub(crate) fn not_kept(&self) -> Option<NotKept> {
        match self.content {
            Content::Kept(_) => None,
            Content::NotKept(why) => Some(why),
        }
    }

    /// Whether `other` is the same state: type, mode and content (by the metadata, where the
    /// content of one side was not kept).
    pub(crate) fn same_state(&self, other: &Entry) -> bool {
        if self.kind != other.kind || self.mode != other.mode {
            return false;
        }
        if self.kind == EntryKind::Dir {
            return true;
        }
        match (self.content, other.content) {
            (Content::Kept(mine), Content::Kept(theirs)) => mine == theirs,
            // How it was is unknown: whatever it is now, it changed.
            (Content::NotKept(NotKept::ChangedBeforeRead), _)
            | (_, Content::NotKept(NotKept::ChangedBeforeRead)) => false,
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Manifest {
    /// When the walk started (ns since the epoch): a file written after it may have been read
    /// half-way, so its metadata is not trusted by the next walk.
    pub(crate) taken_at_ns: i64,
    pub(crate) entries: BTreeMap<PathBytes, Entry>,
}

impl Manifest {
    /// The paths whose state differs between `self` and `other` (present on one side only, or
    /// different), sorted.
    pub(crate) fn changed_paths<'a>(&'a self, other: &'a Manifest) -> Vec<&'a [u8]> {
        let mut paths: Vec<&[u8]> = Vec::new();
        let (mut mine, mut theirs) = (
            self.entries.iter().peekable(),
            other.entries.iter().peekable(),
        );
        loop {
            match (mine.peek(), theirs.peek()) {
                (None, None) => break,
                (Some((path, _)), None) => {
                    paths.push(path);
                    mine.next();
                }
                (None, Some((path, _))) => {
                    paths.push(path);
                    theirs.next();
                }
                (Some((a, entry_a)), Some((b, entry_b))) => match a.cmp(b) {
                    std::cmp::Ordering::Less => {
                        paths.push(a);
                        mine.next();
                    }
                    std::cmp::Ordering::Greater => {
                        paths.push(b);
                        theirs.next();
                    }
                    std::cmp::Ordering::Equal => {
                        if !entry_a.same_state(entry_b) {
                            paths.push(a);
                        }
                        mine.next();
                        theirs.next();
                    }
                },
            }
        }
        paths
    }
}

/// A path as text for people and messages: UTF-8 as it is, any other byte as `\xNN`.
pub(crate) fn display_path(path: &[u8]) -> String {
    let mut text = String::with_capacity(path.len());
    for chunk in path.utf8_chunks() {
        text.push_str(chunk.valid());
        for byte in chunk.invalid() {
            text.push_str(&format!("\\x{byte:02x}"));
        }
    }
    text
}

/// The bytes of an OS path (Unix: they are the name).
pub(crate) fn os_bytes(path: &std::path::Path) -> &[u8] {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes()
}

/// A path of the tree from its bytes.
pub(crate) fn bytes_path(path: &[u8]) -> &std::path::Path {
    use std::os::unix::ffi::OsStrExt;
    std::path::Path::new(std::ffi::OsStr::from_bytes(path))
}

const MAGIC: &[u8; 6] = b"AGSN2\n";

/// A manifest on disk: the whole of it, or what changed since `base` (another manifest's id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stored {
    pub(crate) base: Option<BlobId>,
    /// How many deltas lead back to a whole manifest (0: this one is whole).
    pub(crate) depth: u32,
    pub(crate) taken_at_ns: i64,
    /// Paths with their new state; `None`: gone since `base`.
    pub(crate) changes: Vec<(PathBytes, Option<Entry>)>,
}

impl Stored {
    /// The manifest whole.
    pub(crate) fn whole(manifest: &Manifest) -> Self {
        Self {
            base: None,
            depth: 0,
            taken_at_ns: manifest.taken_at_ns,
            changes: manifest
                .entries
                .iter()
                .map(|(path, entry)| (path.clone(), Some(entry.clone())))
                .collect(),
        }
    }

    /// What `manifest` changed from `base` (whose id is `base_id`, `base_depth` deltas deep).
    pub(crate) fn delta(
        manifest: &Manifest,
        base: &Manifest,
        base_id: BlobId,
        base_depth: u32,
    ) -> Self {
        let mut changes = Vec::new();
        let (mut new, mut old) = (
            manifest.entries.iter().peekable(),
            base.entries.iter().peekable(),
        );
        loop {
            match (new.peek(), old.peek()) {
                (None, None) => break,
                (Some((path, entry)), None) => {
                    changes.push(((*path).clone(), Some((*entry).clone())));
                    new.next();
                }
                (None, Some((path, _))) => {
                    changes.push(((*path).clone(), None));
                    old.next();
                }
                (Some((a, entry_a)), Some((b, entry_b))) => match a.cmp(b) {
                    std::cmp::Ordering::Less => {
                        changes.push(((*a).clone(), Some((*entry_a).clone())));
                        new.next();
                    }
                    std::cmp::Ordering::Greater => {
                        changes.push(((*b).clone(), None));
                        old.next();
                    }
                    std::cmp::Ordering::Equal => {
                        if entry_a != entry_b {
                            changes.push(((*a).clone(), Some((*entry_a).clone())));
                        }
                        new.next();
                        old.next();
                    }
                },
            }
        }
        Self {
            base: Some(base_id),
            depth: base_depth + 1,
            taken_at_ns: manifest.taken_at_ns,
            changes,
        }
    }

    /// `base` with these changes applied (`base` must be the manifest this one was made from).
    pub(crate) fn apply(self, mut base: Manifest) -> Manifest {
        base.taken_at_ns = self.taken_at_ns;
        for (path, entry) in self.changes {
            match entry {
                Some(entry) => {
                    base.entries.insert(path, entry);
                }
                None => {
                    base.entries.remove(&path);
                }
            }
        }
        base
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.changes.len() * 64);
        out.extend_from_slice(MAGIC);
        match self.base {
            Some(base) => {
                out.push(1);
                out.extend_from_slice(&base.to_le_bytes());
            }
            None => out.push(0),
        }
        out.extend_from_slice(&self.depth.to_le_bytes());
        out.extend_from_slice(&self.taken_at_ns.to_le_bytes());
        out.extend_from_slice(&(self.changes.len() as u64).to_le_bytes());
        for (path, entry) in &self.changes {
            out.extend_from_slice(&(path.len() as u32).to_le_bytes());
            out.extend_from_slice(path);
            let Some(entry) = entry else {
                out.push(0);
                continue;
            };
            out.push(match entry.kind {
                EntryKind::File => 1,
                EntryKind::Symlink => 2,
                EntryKind::Dir => 3,
            });
            out.extend_from_slice(&entry.mode.to_le_bytes());
            out.extend_from_slice(&entry.size.to_le_bytes());
            out.extend_from_slice(&entry.mtime_ns.to_le_bytes());
            out.extend_from_slice(&entry.ctime_ns.to_le_bytes());
            out.extend_from_slice(&entry.ino.to_le_bytes());
            match entry.content {
                Content::Kept(blob) => {
                    out.push(0);
                    out.extend_from_slice(&blob.to_le_bytes());
                }
                Content::NotKept(why) => out.push(why.code()),
            }
        }
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> io::Result<Self> {
        let mut reader = Reader { bytes };
        if reader.take(MAGIC.len())? != MAGIC {
            return Err(bad("not a manifest of this agentty"));
        }
        let base = match reader.u8()? {
            0 => None,
            1 => Some(reader.u128()?),
            _ => return Err(bad("a damaged manifest header")),
        };
        let depth = reader.u32()?;
        let taken_at_ns = reader.u64()? as i64;
        let count = reader.u64()?;
        let mut changes = Vec::with_capacity((count as usize).min(reader.bytes.len() / 5));
        for _ in 0..count {
            let length = reader.u32()? as usize;
            let path = reader.take(length)?.to_vec();
            let kind = match reader.u8()? {
                0 => {
                    changes.push((path, None));
                    continue;
                }
                1 => EntryKind::File,
                2 => EntryKind::Symlink,
                3 => EntryKind::Dir,
                _ => return Err(bad("a damaged manifest entry")),
            };
            let mode = reader.u32()?;
            let size = reader.u64()?;
            let mtime_ns = reader.u64()? as i64;
            let ctime_ns = reader.u64()? as i64;
            let ino = reader.u64()?;
            let content = match reader.u8()? {
                0 => Content::Kept(reader.u128()?),
                code => Content::NotKept(
                    NotKept::from_code(code).ok_or_else(|| bad("a damaged manifest entry"))?,
                ),
            };
            changes.push((
                path,
                Some(Entry {
                    kind,
                    mode,
                    size,
                    mtime_ns,
                    ctime_ns,
                    ino,
                    content,
                }),
            ));
        }
        Ok(Self {
            base,
            depth,
            taken_at_ns,
            changes,
        })
    }
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, count: usize) -> io::Result<&'a [u8]> {
        if count > self.bytes.len() {
            return Err(bad("a manifest cut short"));
        }
        let (head, rest) = self.bytes.split_at(count);
        self.bytes = rest;
        Ok(head)
    }

    fn u8(&mut self) -> io::Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn u64(&mut self) -> io::Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn u128(&mut self) -> io::Result<u128> {
        Ok(u128::from_le_bytes(
            self.take(16)?.try_into().expect("16 bytes"),
        ))
    }
}
