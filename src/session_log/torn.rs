//! A torn last line is set aside before a log is appended to.
//!
//! agentty killed mid-write, or a disk that filled up, leaves a log ending in part of a line.
//! Appending to it as it is would glue the next entry to the fragment, and the reader would
//! lose both (the next turn's prompt with them). So before the first append the fragment is
//! copied to a side file next to the log (`<stem>.torn`, fragments one a line, kept for
//! whoever wants to look) and the log is cut back to its last whole line.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Where the fragments cut from the log at `log` go.
pub(crate) fn torn_path(log: &Path) -> PathBuf {
    log.with_extension("torn")
}

/// How far back a log is searched for its last line end, per read.
const CHUNK: u64 = 64 * 1024;

/// Moves the part of `log` after its last `\n` to the side file, if there is such a part.
/// `log` must be open for reading and writing. Returns the bytes set aside.
pub(crate) fn set_aside_torn_tail(log: &File, path: &Path) -> std::io::Result<u64> {
    let len = log.metadata()?.len();
    if len == 0 {
        return Ok(0);
    }
    let mut last = [0u8];
    log.read_exact_at(&mut last, len - 1)?;
    if last[0] == b'\n' {
        return Ok(0);
    }
    let keep = last_line_end(log, len)?;
    let mut side = crate::files::append_no_follow(&torn_path(path), true)?;
    let mut fragment = std::io::Read::take(
        ReadAt {
            file: log,
            at: keep,
        },
        len - keep,
    );
    std::io::copy(&mut fragment, &mut side)?;
    side.write_all(b"\n")?;
    // The fragment is safe on disk before the log loses it.
    side.sync_data()?;
    log.set_len(keep)?;
    tracing::warn!(
        log = %path.display(),
        bytes = len - keep,
        "a torn last line was set aside before appending"
    );
    Ok(len - keep)
}

/// The offset just after the last `\n` before `len` (0 when there is none).
fn last_line_end(log: &File, len: u64) -> std::io::Result<u64> {
    let mut end = len;
    let mut chunk = Vec::new();
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        chunk.resize((end - start) as usize, 0);
        log.read_exact_at(&mut chunk, start)?;
        if let Some(at) = memchr::memrchr(b'\n', &chunk) {
            return Ok(start + at as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// Reads a file from an offset on, without moving its cursor (the log is open to append).
struct ReadAt<'a> {
    file: &'a File,
    at: u64,
}

impl Read for ReadAt<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let read = self.file.read_at(buffer, self.at)?;
        self.at += read as u64;
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(path: &Path) -> File {
        std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .unwrap()
    }

    #[test]
    fn a_torn_tail_goes_to_the_side_file_and_the_log_ends_with_a_whole_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jsonl");
        // Longer than one search chunk, so the line end is found across reads.
        let fragment = format!(
            r#"{{"kind":"turn_ended","turn":3,"outcome":{{"ki{}"#,
            "x".repeat(100_000)
        );
        std::fs::write(&path, format!("{{\"kind\":\"turn\"}}\n{fragment}")).unwrap();
        let log = open(&path);
        assert_eq!(
            set_aside_torn_tail(&log, &path).unwrap(),
            fragment.len() as u64
        );
        (&log).write_all(b"next\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"kind\":\"turn\"}\nnext\n"
        );
        assert_eq!(
            std::fs::read_to_string(torn_path(&path)).unwrap(),
            format!("{fragment}\n")
        );
        // A whole log is left alone, and so is an empty one.
        assert_eq!(set_aside_torn_tail(&log, &path).unwrap(), 0);
        std::fs::write(&path, "").unwrap();
        assert_eq!(set_aside_torn_tail(&open(&path), &path).unwrap(), 0);
    }

    #[test]
    fn a_log_that_is_all_fragment_is_emptied() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jsonl");
        std::fs::write(&path, "{\"kind\":\"hea").unwrap();
        assert_eq!(set_aside_torn_tail(&open(&path), &path).unwrap(), 12);
        assert_eq!(std::fs::read(&path).unwrap(), b"");
        assert_eq!(
            std::fs::read_to_string(torn_path(&path)).unwrap(),
            "{\"kind\":\"hea\n"
        );
    }
}
