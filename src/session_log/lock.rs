//! One writer per conversation: an advisory lock (`flock`) on `<stem>.lock` next to the log,
//! held by the agentty that appends to the conversation for as long as it does.
//!
//! Two launches that both continued one conversation would write the same turn ids, split its
//! agent session in two, and leave a log whose next resume interleaves both answers word by
//! word. So a launch that wants to append takes the lock first, and one that cannot is told
//! who holds it (the holder writes its pid into the file). The lock goes with the process:
//! whatever way agentty ends, even SIGKILL, the kernel releases it, so a crash never leaves a
//! conversation locked. The file itself stays (removing it would race with a launch that just
//! opened it); retention deletes it with the conversation.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// The lock file of the conversation whose log is `log`.
pub(crate) fn lock_path(log: &Path) -> PathBuf {
    log.with_extension("lock")
}

/// The right to append to one conversation, until dropped.
#[derive(Debug)]
pub(crate) struct ConversationLock {
    _file: Flock<File>,
}

/// Why a conversation could not be locked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LockError {
    /// Another agentty (or another part of this one) appends to it.
    #[error("{}", held_message(*pid))]
    Held { pid: Option<u32> },
    #[error("cannot lock the conversation: {0}")]
    Io(#[from] std::io::Error),
}

fn held_message(pid: Option<u32>) -> String {
    match pid {
        Some(pid) => format!("it is open in another agentty (pid {pid})"),
        None => "it is open in another agentty".to_owned(),
    }
}

impl ConversationLock {
    /// Takes the lock of the conversation whose log is `log`, without waiting.
    pub(crate) fn acquire(log: &Path) -> Result<ConversationLock, LockError> {
        let path = lock_path(log);
        let file = crate::files::no_follow()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(mut file) => {
                // Who holds it, for the message another launch shows.
                file.set_len(0)?;
                file.rewind()?;
                write!(file, "{}", std::process::id())?;
                Ok(ConversationLock { _file: file })
            }
            Err((mut file, Errno::EWOULDBLOCK)) => {
                let mut pid = String::new();
                let _ = (&mut file).take(32).read_to_string(&mut pid);
                Err(LockError::Held {
                    pid: pid.trim().parse().ok(),
                })
            }
            Err((_, errno)) => Err(LockError::Io(errno.into())),
        }
    }
}

/// Whether another agentty holds the lock of the conversation whose log is `log` (retention
/// leaves such a conversation alone). A conversation without a lock file is not held.
pub(crate) fn is_held(log: &Path) -> bool {
    let Ok(file) = crate::files::no_follow().read(true).open(lock_path(log)) else {
        return false;
    };
    // Taking the lock to find out releases it at once.
    matches!(
        Flock::lock(file, FlockArg::LockExclusiveNonblock),
        Err((_, Errno::EWOULDBLOCK))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_with_the_holders_pid_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("a.jsonl");
        let first = ConversationLock::acquire(&log).unwrap();
        // Another open file description (as another process has) is refused.
        let error = ConversationLock::acquire(&log).unwrap_err();
        let LockError::Held { pid } = error else {
            panic!("{error:?}");
        };
        assert_eq!(pid, Some(std::process::id()));
        assert!(is_held(&log));
        drop(first);
        assert!(!is_held(&log));
        let again = ConversationLock::acquire(&log).unwrap();
        drop(again);
        assert!(lock_path(&log).exists(), "the file stays");
    }

    #[test]
    fn a_link_in_place_of_the_lock_file_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("a.jsonl");
        let outside = dir.path().join("user-file");
        std::fs::write(&outside, "mine").unwrap();
        std::os::unix::fs::symlink(&outside, lock_path(&log)).unwrap();
        assert!(matches!(
            ConversationLock::acquire(&log),
            Err(LockError::Io(_))
        ));
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "mine");
    }
}
