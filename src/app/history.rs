//! Prompt history kept between launches, one file per working directory in the state dir
//! (`<state dir>/history/<hash of the directory>.jsonl`), so Up and Ctrl+R find what was asked
//! here before.
//!
//! Each line is one prompt as a JSON string (prompts may span lines). Appending is cheap; the
//! file is rewritten to its newest `MAX_HISTORY` entries once it holds twice as many, so it
//! stays bounded. A damaged line is skipped, never fatal: history is a convenience.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::composer::MAX_HISTORY;

/// The history file for prompts sent in `cwd`.
pub(crate) fn history_file(state_dir: &Path, cwd: &Path) -> PathBuf {
    state_dir.join("history").join(format!(
        "{:016x}.jsonl",
        fnv1a(cwd.as_os_str().as_encoded_bytes())
    ))
}

/// A stable hash (FNV-1a, 64 bit): the same directory maps to the same file on every launch.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The largest history file read (twice `MAX_HISTORY` prompts, pastes among them): the file
/// is in the state dir, but whatever sits there is read only if it is a regular file of sane
/// size (a FIFO there must not hang the start).
const MAX_HISTORY_BYTES: u64 = 64 * 1024 * 1024;

/// The newest `MAX_HISTORY` prompts of the file, oldest first; none if it does not exist (or
/// is no regular file, or too large).
pub(crate) fn load(path: &Path) -> Vec<String> {
    let Ok(text) = crate::files::read_text_limited(path, MAX_HISTORY_BYTES) else {
        return Vec::new();
    };
    let mut prompts: Vec<String> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<String>(line).ok())
        // The file is outside agentty's control: nothing in it may reach the terminal raw.
        .map(|prompt| crate::sanitize::untrusted_owned(&prompt))
        .collect();
    if prompts.len() > MAX_HISTORY {
        prompts.drain(..prompts.len() - MAX_HISTORY);
    }
    prompts
}

/// Appends one prompt, compacting the file when it has grown to twice the bound.
pub(crate) fn append(path: &Path, prompt: &str) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        crate::logging::private_state_dir(dir)?;
    }
    let line = serde_json::to_string(prompt).map_err(io::Error::other)?;
    // Never through a link planted in the state dir.
    let mut file = crate::files::append_no_follow(path, true)?;
    writeln!(file, "{line}")?;
    drop(file);
    let lines = crate::files::read_text_limited(path, MAX_HISTORY_BYTES)?
        .lines()
        .count();
    if lines >= 2 * MAX_HISTORY {
        let kept = load(path);
        let mut text = String::new();
        for prompt in kept {
            text.push_str(&serde_json::to_string(&prompt).map_err(io::Error::other)?);
            text.push('\n');
        }
        crate::files::write_atomically(
            path,
            text.as_bytes(),
            0o600,
            crate::files::Durability::Synced,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn a_fifo_in_place_of_the_history_is_not_waited_on_and_a_link_not_written_through() {
        let state = tempfile::tempdir().unwrap();
        let path = history_file(state.path(), Path::new("/work/project"));
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(load(&path).is_empty());
        fs::remove_file(&path).unwrap();
        let outside = state.path().join("user-file");
        fs::write(&outside, "mine\n").unwrap();
        std::os::unix::fs::symlink(&outside, &path).unwrap();
        assert!(append(&path, "hello").is_err());
        assert_eq!(fs::read_to_string(&outside).unwrap(), "mine\n");
    }

    #[test]
    fn prompts_survive_a_reload_per_directory() {
        let state = tempfile::tempdir().unwrap();
        let here = history_file(state.path(), Path::new("/work/project"));
        let there = history_file(state.path(), Path::new("/work/other"));
        assert_ne!(here, there);
        append(&here, "first").unwrap();
        append(&here, "two\nlines").unwrap();
        append(&there, "elsewhere").unwrap();
        assert_eq!(load(&here), ["first", "two\nlines"]);
        assert_eq!(load(&there), ["elsewhere"]);
        assert!(load(&state.path().join("missing")).is_empty());
    }

    #[test]
    fn the_file_stays_bounded_and_skips_damaged_lines() {
        let state = tempfile::tempdir().unwrap();
        let path = history_file(state.path(), Path::new("/p"));
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, "not json\n\"kept\"\n\"esc \\u001b[2J\"\n").unwrap();
        assert_eq!(load(&path), ["kept", "esc ␛[2J"]);
        for n in 0..2 * MAX_HISTORY {
            append(&path, &n.to_string()).unwrap();
        }
        let lines = fs::read_to_string(&path).unwrap().lines().count();
        assert!(lines < 2 * MAX_HISTORY, "{lines} lines");
        let prompts = load(&path);
        assert_eq!(prompts.len(), MAX_HISTORY);
        assert_eq!(prompts.last().unwrap(), &(2 * MAX_HISTORY - 1).to_string());
    }
}
