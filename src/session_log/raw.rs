//! The agent's raw stdout lines of a session log, kept in a zstd-compressed sidecar next to it
//! (`<log>.jsonl` -> `<log>.raw.zst`), so the log grows with what the user saw, not its square.
//!
//! Why a sidecar: pi repeats the whole message so far in every update (twice), so the raw lines
//! of one turn grow quadratically with its answer. zstd finds each snapshot again in its window
//! (the one before it, in the same line or the previous one) and stores only what is new, at
//! over a gigabyte a second. The shared stream stays in the plain log, so `--resume` never
//! reads a raw line.
//!
//! Layout (decompressed): one record per raw line, `<turn> <attempt> <byte length>\n`, then the
//! line's bytes as the agent printed them (never escaped again), then `\n`. The file is a
//! sequence of zstd frames: one per turn (its end frees the compressor), plus a new one whenever
//! a longer line needs a larger window; a reopened log appends frames. A frame torn by a crash
//! is read up to where it was cut, and reading resumes at the next frame.
//!
//! Logs written before the sidecar hold their raw lines inline (`{"kind":"raw",...}` lines of
//! the log itself); [`for_each_raw_line`] reads both.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::LogEntry;
use crate::orchestrator::TurnId;

/// zstd level 1: the snapshots are found again at any level; higher levels only cost time.
const LEVEL: i32 = 1;
/// The smallest and largest windows (log2 bytes). A snapshot is found again when the window
/// reaches back to the previous snapshot: within a pi line the second copy follows the first,
/// and the next line's first copy follows the previous line's second, so a window of half a
/// line (rounded up to a power of two) suffices (measured on the 132 MB benchmark stream:
/// 1,500x smaller with a window of 256 KiB for lines of 257 KiB, 2,800x with 512 KiB). The
/// window is the compressor's memory, so it is sized to the longest line so far, not to the
/// largest line possible.
const MIN_WINDOW_LOG: u32 = 17;
const MAX_WINDOW_LOG: u32 = 24;
/// The first bytes of every zstd frame (little-endian 0xFD2FB528).
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// How an inline raw entry of an old log starts: serde writes the enum tag first.
pub(crate) const INLINE_RAW_PREFIX: &[u8] = br#"{"kind":"raw","#;

/// The sidecar that holds the raw lines of the session log at `log`.
pub fn sidecar_path(log: &Path) -> PathBuf {
    log.with_extension("raw.zst")
}

/// The session log whose sidecar `path` is, when it is one and the log exists.
pub(crate) fn log_of_sidecar(path: &Path) -> Option<PathBuf> {
    let stem = path.file_name()?.to_str()?.strip_suffix(".raw.zst")?;
    let log = path.with_file_name(format!("{stem}.jsonl"));
    log.exists().then_some(log)
}

/// Appends raw lines to a log's sidecar; the file is created with the first line, so a log
/// whose agent printed nothing has no sidecar. After a write fails (a full disk, a read-only
/// state dir) the raw lines of this writer are given up: the error is reported once, not once
/// a line, and the shared stream in the log itself goes on.
pub(crate) struct RawLineWriter {
    path: PathBuf,
    encoder: Option<zstd::stream::write::Encoder<'static, BufWriter<File>>>,
    window_log: u32,
    failed: bool,
}

impl RawLineWriter {
    pub(crate) fn new(log: &Path) -> Self {
        Self {
            path: sidecar_path(log),
            encoder: None,
            window_log: 0,
            failed: false,
        }
    }

    /// The sidecar's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one raw line as it is. A line never holds a line end (the line reader splits on
    /// them), but the length prefix keeps the record whole even if one did.
    pub(crate) fn write(&mut self, turn: TurnId, attempt: u32, line: &str) -> std::io::Result<()> {
        if self.failed {
            return Ok(());
        }
        let written = self.try_write(turn, attempt, line);
        if written.is_err() {
            self.failed = true;
            self.encoder = None;
        }
        written
    }

    fn try_write(&mut self, turn: TurnId, attempt: u32, line: &str) -> std::io::Result<()> {
        let needed = window_log_for(line.len());
        let encoder = match self.encoder.take() {
            Some(encoder) if needed <= self.window_log => encoder,
            previous => {
                // A longer line than the window covers: end this frame, start one with a
                // window that reaches back over it.
                let file = match previous {
                    Some(encoder) => encoder.finish()?,
                    // Never through a link planted in place of the sidecar, nor of a folder
                    // on its way.
                    None => {
                        if let Some(dir) = self.path.parent() {
                            crate::logging::private_state_dir(dir)?;
                        }
                        BufWriter::new(crate::files::append_no_follow(&self.path, true)?)
                    }
                };
                self.window_log = needed.max(self.window_log);
                let mut encoder = zstd::stream::write::Encoder::new(file, LEVEL)?;
                encoder.window_log(self.window_log)?;
                encoder
            }
        };
        let encoder = self.encoder.insert(encoder);
        writeln!(encoder, "{turn} {attempt} {}", line.len())?;
        encoder.write_all(line.as_bytes())?;
        encoder.write_all(b"\n")
    }

    /// Makes everything written so far readable (ends the current zstd block).
    pub(crate) fn flush(&mut self) -> std::io::Result<()> {
        let flushed = match &mut self.encoder {
            Some(encoder) => encoder.flush(),
            None => Ok(()),
        };
        if flushed.is_err() {
            self.failed = true;
            self.encoder = None;
        }
        flushed
    }

    /// Ends the frame, flushes the file, and frees the compressor (its window is as large as
    /// the longest line so far); the next line starts a frame sized to the lines that follow.
    pub(crate) fn finish(&mut self) -> std::io::Result<()> {
        self.window_log = 0;
        let finished = match self.encoder.take() {
            Some(encoder) => encoder.finish().and_then(|mut file| file.flush()),
            None => Ok(()),
        };
        if finished.is_err() {
            self.failed = true;
        }
        finished
    }
}

/// The window (log2) that reaches back over half a line of `len` bytes and a little more.
fn window_log_for(len: usize) -> u32 {
    let reach = len / 2 + 4096;
    (usize::BITS - (reach - 1).leading_zeros()).clamp(MIN_WINDOW_LOG, MAX_WINDOW_LOG)
}

/// One raw line as recorded.
pub struct RawLine<'a> {
    pub(crate) turn: TurnId,
    pub(crate) attempt: u32,
    pub(crate) line: &'a str,
}

/// What reading a log's raw lines found of its sidecar.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RawLinesRead {
    /// Raw lines read (inline and from the sidecar).
    pub(crate) lines: usize,
    /// The sidecar does not exist (a log whose agent printed nothing has none either).
    pub(crate) sidecar_missing: bool,
    /// Frames of the sidecar that could not be read whole: cut short (a crash while writing),
    /// a malformed record, or bytes that are no zstd frame.
    pub(crate) damaged_frames: usize,
}

/// Calls `each` with every raw line of the session log at `log`, oldest first: the inline
/// entries of an old log, then the sidecar's. Memory stays at one line whatever the log's size.
pub fn for_each_raw_line(
    log: &Path,
    mut each: impl FnMut(RawLine<'_>),
) -> std::io::Result<RawLinesRead> {
    let mut read = RawLinesRead::default();
    let mut counted = |line: RawLine<'_>| {
        read.lines += 1;
        each(line);
    };
    for_each_inline_raw_line(log, &mut counted)?;
    let sidecar = sidecar_path(log);
    match crate::files::open_regular(&sidecar) {
        Ok(mut file) => {
            let mut compressed = Vec::new();
            file.read_to_end(&mut compressed)?;
            read.damaged_frames = for_each_sidecar_record(&compressed, &mut counted);
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            read.sidecar_missing = true;
        }
        Err(error) => return Err(error),
    }
    Ok(read)
}

/// The inline `raw` entries of a log written before the sidecar existed. Only those lines are
/// parsed; every other line is skipped by its first bytes.
fn for_each_inline_raw_line(log: &Path, each: &mut impl FnMut(RawLine<'_>)) -> std::io::Result<()> {
    let mut reader = BufReader::new(crate::files::open_regular(log)?);
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        if reader.read_until(b'\n', &mut buffer)? == 0 {
            return Ok(());
        }
        if !buffer.starts_with(INLINE_RAW_PREFIX) {
            continue;
        }
        if let Ok(LogEntry::Raw {
            turn,
            attempt,
            line,
        }) = serde_json::from_slice(&buffer)
        {
            each(RawLine {
                turn,
                attempt,
                line: &line,
            });
        }
    }
}

/// Reads the sidecar's frames in turn; returns how many could not be read whole. The
/// compressed file is small (that is its point); what it expands to is streamed one record at
/// a time.
fn for_each_sidecar_record(compressed: &[u8], each: &mut impl FnMut(RawLine<'_>)) -> usize {
    let mut start = 0;
    let mut damaged = 0;
    while start < compressed.len() {
        let rest = &compressed[start..];
        let frame_len = match zstd::zstd_safe::find_frame_compressed_size(rest) {
            Ok(len) if len > 0 => len,
            // A torn frame (a crash while writing): it runs up to the next frame, which a
            // later launch appended; what it holds up to the cut is still read.
            _ => next_frame_start(&rest[1..]).map_or(rest.len(), |at| at + 1),
        };
        if !read_frame_records(&rest[..frame_len], each) {
            damaged += 1;
        }
        start += frame_len;
    }
    damaged
}

fn next_frame_start(bytes: &[u8]) -> Option<usize> {
    memchr::memmem::find(bytes, &ZSTD_MAGIC)
}

/// A record header is three numbers; anything longer is not one.
const MAX_HEADER: u64 = 64;
/// No recorded line is longer than the line reader's cap; a length beyond it is corruption,
/// not a reason to allocate.
const MAX_RECORD: u64 = crate::process::DEFAULT_MAX_LINE as u64;

/// Streams the records of one frame; stops at a cut or a malformed record. Returns whether the
/// frame was read whole.
fn read_frame_records(frame: &[u8], each: &mut impl FnMut(RawLine<'_>)) -> bool {
    let Ok(decoder) = zstd::stream::read::Decoder::with_buffer(frame) else {
        return false;
    };
    let mut reader = BufReader::new(decoder.single_frame());
    let mut header = String::new();
    let mut line = Vec::new();
    loop {
        header.clear();
        match (&mut reader).take(MAX_HEADER).read_line(&mut header) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
        let mut fields = header.trim_end().split(' ').map(str::parse::<u64>);
        let (Some(Ok(turn)), Some(Ok(attempt)), Some(Ok(len)), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            tracing::warn!("malformed raw-line record; the rest of this frame is skipped");
            return false;
        };
        if len > MAX_RECORD {
            tracing::warn!(
                len,
                "raw-line record too long; the rest of this frame is skipped"
            );
            return false;
        }
        line.clear();
        line.resize(len as usize + 1, 0);
        if reader.read_exact(&mut line).is_err() {
            return false;
        }
        line.pop();
        let text = String::from_utf8_lossy(&line);
        each(RawLine {
            turn: turn as TurnId,
            attempt: attempt as u32,
            line: &text,
        });
    }
}

/// The raw lines of the last attempt that printed any, oldest first, streamed to `each` (two
/// passes over the log: the first finds that attempt). Says what the first pass found of the
/// sidecar.
pub(crate) fn for_each_raw_line_of_last_attempt(
    log: &Path,
    mut each: impl FnMut(&str),
) -> std::io::Result<RawLinesRead> {
    let mut last = None;
    let read = for_each_raw_line(log, |raw| last = Some((raw.turn, raw.attempt)))?;
    let Some(last) = last else {
        return Ok(read);
    };
    for_each_raw_line(log, |raw| {
        if (raw.turn, raw.attempt) == last {
            each(raw.line);
        }
    })?;
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(log: &Path) -> Vec<(TurnId, u32, String)> {
        let mut lines = Vec::new();
        for_each_raw_line(log, |raw| {
            lines.push((raw.turn, raw.attempt, raw.line.to_owned()))
        })
        .unwrap();
        lines
    }

    #[test]
    fn lines_come_back_exactly_across_window_growth_and_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("a.jsonl");
        std::fs::write(&log, "").unwrap();
        let big = "é\\\"x".repeat(100_000);
        let expected = vec![
            (1, 1, r#"{"type":"agent_start"}"#.to_owned()),
            (1, 1, String::new()),
            (1, 2, big.clone()),
            (2, 1, "bad \u{1b}[31m line".to_owned()),
        ];
        let mut writer = RawLineWriter::new(&log);
        for (turn, attempt, line) in &expected[..3] {
            writer.write(*turn, *attempt, line).unwrap();
        }
        writer.finish().unwrap();
        // A later launch appends a frame of its own.
        let mut writer = RawLineWriter::new(&log);
        let (turn, attempt, line) = &expected[3];
        writer.write(*turn, *attempt, line).unwrap();
        writer.finish().unwrap();
        assert_eq!(collect(&log), expected);
        assert!(std::fs::metadata(sidecar_path(&log)).unwrap().len() < 2_000);
    }

    #[test]
    fn a_frame_torn_by_a_crash_keeps_what_was_flushed_and_later_frames() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("a.jsonl");
        std::fs::write(&log, "").unwrap();
        let mut writer = RawLineWriter::new(&log);
        writer.write(1, 1, "first").unwrap();
        writer.flush().unwrap();
        // The process dies here: the frame is never ended.
        std::mem::forget(writer);
        let mut writer = RawLineWriter::new(&log);
        writer.write(2, 1, "after the crash").unwrap();
        writer.finish().unwrap();
        assert_eq!(
            collect(&log),
            [
                (1, 1, "first".to_owned()),
                (2, 1, "after the crash".to_owned())
            ]
        );
    }

    #[test]
    fn a_sidecar_that_cannot_be_written_fails_once_not_once_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("a.jsonl");
        // A directory where the sidecar should be: opening it for writing fails.
        std::fs::create_dir(sidecar_path(&log)).unwrap();
        let mut writer = RawLineWriter::new(&log);
        assert!(writer.write(1, 1, "first").is_err());
        assert!(writer.write(1, 1, "second").is_ok());
        assert!(writer.flush().is_ok());
        assert!(writer.finish().is_ok());
    }

    #[test]
    fn a_corrupt_record_ends_its_frame_without_a_huge_allocation() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("a.jsonl");
        std::fs::write(&log, "").unwrap();
        let mut bad = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
        bad.write_all(b"1 1 5\nfirst\n1 1 99999999999999\nx\n")
            .unwrap();
        let mut garbage = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
        garbage.write_all(&[b'7'; 100_000]).unwrap();
        let mut good = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
        good.write_all(b"2 1 4\nnext\n").unwrap();
        let sidecar = [
            bad.finish().unwrap(),
            garbage.finish().unwrap(),
            good.finish().unwrap(),
        ]
        .concat();
        std::fs::write(sidecar_path(&log), sidecar).unwrap();
        assert_eq!(
            collect(&log),
            [(1, 1, "first".to_owned()), (2, 1, "next".to_owned())]
        );
        let read = for_each_raw_line(&log, |_| {}).unwrap();
        assert_eq!(
            read,
            RawLinesRead {
                lines: 2,
                sidecar_missing: false,
                damaged_frames: 2
            }
        );
    }

    #[test]
    fn old_logs_with_inline_raw_entries_are_read_too() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("old.jsonl");
        // Exactly as the release before the sidecar wrote them (the tag first).
        let entries = [
            r#"{"kind":"header","version":1,"provider":"pi","started_at_ms":0,"cwd":"/"}"#,
            r#"{"kind":"raw","turn":1,"attempt":1,"line":"{\"type\":\"agent_start\"}"}"#,
            r#"{"kind":"turn_ended","turn":1,"outcome":"completed"}"#,
            r#"{"kind":"raw","turn":2,"attempt":1,"line":"two"}"#,
        ];
        let text: String = entries.iter().map(|entry| format!("{entry}\n")).collect();
        std::fs::write(&log, text).unwrap();
        assert_eq!(
            collect(&log),
            [
                (1, 1, r#"{"type":"agent_start"}"#.to_owned()),
                (2, 1, "two".to_owned())
            ]
        );
        let mut last = Vec::new();
        for_each_raw_line_of_last_attempt(&log, |line| last.push(line.to_owned())).unwrap();
        assert_eq!(last, ["two"]);
    }

    #[test]
    fn repeated_snapshots_cost_what_is_new_not_the_whole_line() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("a.jsonl");
        let mut writer = RawLineWriter::new(&log);
        let mut text = String::new();
        let mut raw_bytes = 0;
        for index in 0..500 {
            text.push_str(&format!("word{index} "));
            let line = format!(r#"{{"partial":"{text}","message":"{text}"}}"#);
            raw_bytes += line.len();
            writer.write(1, 1, &line).unwrap();
        }
        writer.finish().unwrap();
        let stored = std::fs::metadata(sidecar_path(&log)).unwrap().len() as usize;
        assert!(
            stored * 50 < raw_bytes,
            "{stored} bytes stored for {raw_bytes}"
        );
    }
}
