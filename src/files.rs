//! Opening files that someone other than agentty may have put in place: the config (any path
//! `--config` names), session logs, their sidecars and the prompt history in the state dir.
//!
//! Reading: only a regular file is read. A FIFO without a writer would block `open` for ever,
//! a device such as `/dev/zero` never ends, a directory is no file; so the file is opened
//! without blocking and its type checked before a byte is read, and whole-file reads stop at a
//! limit instead of growing without end.
//!
//! Writing into the state dir never follows a symbolic link (`O_NOFOLLOW`): a link planted in
//! place of a log must not make agentty append to a file elsewhere.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Opens `path` for reading if it is a regular file (following links: reading through one
/// harms nothing); anything else is an `InvalidInput` error saying what it is.
pub(crate) fn open_regular(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        // Returns at once for a FIFO with no writer instead of waiting for one; no effect on
        // a regular file.
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        Ok(file)
    } else {
        Err(not_a_regular_file(kind))
    }
}

/// Reads all of a regular file, refusing one larger than `limit` bytes (without reading more
/// than the limit of it). Errors say what is wrong with the file, not which file it is: the
/// caller names it.
pub(crate) fn read_limited(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("it is larger than {}; not read", describe_size(limit)),
        ));
    }
    Ok(bytes)
}

/// Like [`read_limited`], as text (invalid UTF-8 is an `InvalidData` error).
pub(crate) fn read_text_limited(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read_limited(path, limit)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not UTF-8 text"))
}

/// Options for writing in the state dir: `O_NOFOLLOW` (a link is an error, `ELOOP`) and
/// owner-only permissions for a file it creates.
pub(crate) fn no_follow() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.custom_flags(libc::O_NOFOLLOW).mode(0o600);
    options
}

/// How a file written by [`write_atomically`] reaches the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    /// Flushed (fsync) before it takes the old file's place: after a crash the file is the old
    /// one or the new one, whole. For what is written now and then and must not be lost: the
    /// config, a restore's journal, checkpoints, the prompt history.
    Synced,
    /// Left to the kernel's write-back, as git leaves its objects: for the snapshot store's
    /// many copies, where a flush each would cost more than the copy.
    WriteBack,
}

/// Numbers the temporary files of this process, so two writes of one file never share one.
static TEMPORARY: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Writes `bytes` to `path` with permissions `mode`: into a temporary file of its own beside it
/// (never through a link planted there), renamed into place, so a reader sees the old file or
/// the new one, never half of one. The rename replaces a link at `path` itself, never what it
/// points to. On any failure the temporary file is removed and `path` is left as it was.
pub(crate) fn write_atomically(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    durability: Durability,
) -> io::Result<()> {
    use std::io::Write;
    let parent = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_owned());
    let temporary = parent.join(format!(
        ".{name}.{}-{}.tmp",
        std::process::id(),
        TEMPORARY.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let written = (|| {
        let mut file = no_follow()
            .mode(mode)
            .write(true)
            .create_new(true)
            .open(&temporary)?;
        file.write_all(bytes)?;
        if durability == Durability::Synced {
            file.sync_all()?;
        }
        drop(file);
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// Opens `path` to append to it, creating it if `create`; never through a link.
pub(crate) fn append_no_follow(path: &Path, create: bool) -> io::Result<File> {
    no_follow().append(true).create(create).open(path)
}

/// Makes `path` a folder (owner-only where it creates one), refusing a symbolic link or a
/// non-folder in any component from `anchor` (included) down: a link planted in place of
/// `snapshots`, `sessions` or `logs` must not send agentty's writes (copies of the user's files,
/// logs) to wherever it points. Folders above `anchor` are the user's own layout (a home on
/// another volume behind a link) and are not judged. A `path` outside `anchor` is refused.
pub(crate) fn private_dir_under(anchor: &Path, path: &Path) -> io::Result<()> {
    let below = path.strip_prefix(anchor).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not inside {}", path.display(), anchor.display()),
        )
    })?;
    if let Some(parent) = anchor
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent)?;
    }
    let mut folder = anchor.to_path_buf();
    let components = std::iter::once(None).chain(below.components().map(Some));
    for component in components {
        if let Some(component) = component {
            if !matches!(component, std::path::Component::Normal(_)) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is not a plain path", path.display()),
                ));
            }
            folder.push(component);
        }
        real_folder(&folder, Some(0o700), &|| folder.display().to_string())?;
    }
    Ok(())
}

/// Whether `folder` is a real folder, judged without following a link: `Ok(true)`. Missing, it
/// is made with `create`'s mode where one is given (one another process made meanwhile will
/// do), else `Ok(false)`. A symbolic link or a file is refused, named by `shown`: nothing is
/// done through it (it could point anywhere). The one place that judges a folder on the way
/// for agentty's own writes (`private_dir_under`) and for an undo's (`snapshot::restore`).
pub(crate) fn real_folder(
    folder: &Path,
    create: Option<u32>,
    shown: &dyn Fn() -> String,
) -> io::Result<bool> {
    use std::os::unix::fs::DirBuilderExt;
    let refused = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is a symbolic link or a file, not a folder: nothing is written through it",
                shown()
            ),
        )
    };
    match std::fs::symlink_metadata(folder) {
        Ok(metadata) if metadata.is_dir() => Ok(true),
        Ok(_) => Err(refused()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            let Some(mode) = create else {
                return Ok(false);
            };
            match std::fs::DirBuilder::new().mode(mode).create(folder) {
                Ok(()) => Ok(true),
                // Another process made it meanwhile: judged as it is.
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                    if std::fs::symlink_metadata(folder)?.is_dir() {
                        Ok(true)
                    } else {
                        Err(refused())
                    }
                }
                Err(error) => Err(error),
            }
        }
        Err(error) => Err(error),
    }
}

/// What a non-regular file is, for messages.
fn describe_kind(kind: std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

fn not_a_regular_file(kind: std::fs::FileType) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is {}, not a regular file", describe_kind(kind)),
    )
}

fn describe_size(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn an_atomic_write_replaces_whole_files_and_links_and_leaves_nothing_when_it_fails() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.toml");
        std::fs::write(&path, "old").unwrap();
        write_atomically(&path, b"new", 0o640, Durability::Synced).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        // A link in the file's place is replaced, and what it points to is left alone.
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "theirs").unwrap();
        let linked = dir.path().join("linked");
        std::os::unix::fs::symlink(&elsewhere, &linked).unwrap();
        write_atomically(&linked, b"ours", 0o600, Durability::WriteBack).unwrap();
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "theirs");
        assert!(!std::fs::symlink_metadata(&linked).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&linked).unwrap(), "ours");
        // A folder (not empty) in the way: the rename fails, the temporary file goes.
        let folder = dir.path().join("folder");
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(folder.join("inside"), "x").unwrap();
        assert!(write_atomically(&folder, b"lost", 0o600, Durability::Synced).is_err());
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["elsewhere", "folder", "linked", "settings.toml"]);
    }

    #[test]
    fn odd_files_are_refused_at_once_with_what_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let started = Instant::now();
        let cases = [
            (fifo.as_path(), "is a FIFO, not a regular file"),
            (Path::new("/dev/zero"), "is a character device"),
            (dir.path(), "is a directory"),
        ];
        for (path, expected) in cases {
            let error = open_regular(path).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{path:?}");
            assert!(error.to_string().contains(expected), "{error}");
        }
        assert!(started.elapsed() < Duration::from_secs(5), "nothing blocks");
    }

    #[test]
    fn a_file_over_the_limit_is_refused_and_one_within_it_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        std::fs::write(&path, vec![b'x'; 2048]).unwrap();
        let error = read_limited(&path, 1024).unwrap_err();
        assert!(
            error.to_string().contains("larger than 1024 bytes"),
            "{error}"
        );
        assert_eq!(read_limited(&path, 2048).unwrap().len(), 2048);
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        assert!(read_text_limited(&path, 10)
            .unwrap_err()
            .to_string()
            .contains("not UTF-8"));
    }

    #[test]
    fn writing_never_follows_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("user-file");
        std::fs::write(&outside, "mine\n").unwrap();
        let link = dir.path().join("log.jsonl");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let error = append_no_follow(&link, true).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::ELOOP));
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "mine\n");
    }

    /// No folder of the state dir is made or written through a link, whichever component it
    /// is (`snapshots`, `trees`, a store's own folder): the link's target stays empty.
    #[test]
    fn no_folder_of_the_state_dir_is_followed_through_a_link() {
        let state = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let anchor = state.path();
        std::os::unix::fs::symlink(elsewhere.path(), anchor.join("trees")).unwrap();
        let error = private_dir_under(anchor, &anchor.join("trees/abc/blobs")).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        std::fs::create_dir_all(anchor.join("snapshots/conv")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), anchor.join("snapshots/conv/turns")).unwrap();
        assert!(private_dir_under(anchor, &anchor.join("snapshots/conv/turns")).is_err());
        assert!(private_dir_under(anchor, &anchor.join("../outside")).is_err());
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
        // Real folders are made, owner-only.
        private_dir_under(anchor, &anchor.join("sessions/deep")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(anchor.join("sessions/deep"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
