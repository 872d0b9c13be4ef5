//! Whether anything changed in the tree between two moments, without walking it: the folders
//! a snapshot covers are watched (Linux's inotify) from just before a walk between turns (the
//! baseline, a turn's end) until the next turn's request. If nothing happened in any of them,
//! that walk is the next turn's "before" as it is: one walk a turn. Any event at all (a write,
//! a new name, a changed mode, a full event queue), or a folder that could not be watched,
//! means the turn's "before" is walked as before, so a missed event can only cost a walk, never
//! an edit. Elsewhere than Linux there is no watcher and the walk always runs.

use std::path::Path;

/// The folders being watched since a walk.
pub(crate) struct Watcher {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::OwnedFd,
    /// A folder could not be watched (the per-user limit, permissions): nothing can be told.
    blind: bool,
}

#[cfg(target_os = "linux")]
const MASK: u32 = libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_CLOSE_WRITE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_DONT_FOLLOW
    | libc::IN_ONLYDIR;

impl Watcher {
    /// A watcher with no folder yet; `None` where there is no way to watch.
    pub(crate) fn new() -> Option<Self> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::FromRawFd;
            // SAFETY: inotify_init1 returns a new descriptor or -1.
            let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
            if fd < 0 {
                return None;
            }
            // SAFETY: `fd` was just opened and is owned by nothing else.
            let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
            Some(Self { fd, blind: false })
        }
        #[cfg(not(target_os = "linux"))]
        {
            None
        }
    }

    /// Watches the folder `dir` (its names and its files' contents and modes).
    pub(crate) fn watch(&mut self, dir: &Path) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            use std::os::unix::ffi::OsStrExt;
            let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
                self.blind = true;
                return;
            };
            // SAFETY: a valid descriptor and a NUL-terminated path.
            let added =
                unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), path.as_ptr(), MASK) };
            if added < 0 {
                self.blind = true;
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = dir;
            self.blind = true;
        }
    }

    /// Whether nothing happened in the watched folders since they were watched.
    pub(crate) fn quiet(&self) -> bool {
        if self.blind {
            return false;
        }
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let mut buffer = [0u8; 4096];
            // SAFETY: reads into a buffer of its length from a descriptor we own.
            let read = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    buffer.as_mut_ptr().cast(),
                    buffer.len(),
                )
            };
            // Nothing to read (EAGAIN): no event. Anything else is a change (or an error).
            read < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }
}
