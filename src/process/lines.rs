//! Bounded line reading: memory stays bounded whatever the agent prints.
//!
//! A line longer than the cap is cut at the cap, the rest of it skipped, and the line flagged,
//! so a 64 MiB line without a newline costs at most `max_line` bytes, once. Lines end at `\n`,
//! `\r\n` or a lone `\r`: JSON text never holds a raw carriage return, so splitting on it only
//! rescues agents that use `\r` as their line ending.
//!
//! Lines are found with a SIMD scan (`memchr`) and lent out of one buffer that is kept from
//! line to line ([`LineReader::next_line_ref`]): reading a line of hundreds of KiB allocates
//! nothing and touches no fresh memory (fresh pages cost more than the parsing).

use std::borrow::Cow;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Default cap on one stdout line: large tool results fit, a runaway line does not.
pub const DEFAULT_MAX_LINE: usize = 8 * 1024 * 1024;
const READ_CHUNK: usize = 64 * 1024;
/// A buffer grown past this for one long line is given back once lines are short again.
const KEEP_BUFFER_UP_TO: usize = 1024 * 1024;
/// How much of a cut line is kept: it is only ever shown as a diagnostic.
pub(crate) const CUT_LINE_PREVIEW: usize = 4 * 1024;

/// One line as read, invalid UTF-8 replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub text: String,
    /// The line was longer than the cap: `text` is only its first [`CUT_LINE_PREVIEW`] bytes.
    pub truncated: bool,
    /// The length the line really had, in bytes (more than `text` when cut).
    pub original_len: usize,
}

/// A line lent from the reader's buffer, valid until the next read; fields as in [`Line`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineRef<'a> {
    pub(crate) text: Cow<'a, str>,
    pub(crate) truncated: bool,
    pub(crate) original_len: usize,
}

impl Line {
    pub(crate) fn as_line_ref(&self) -> LineRef<'_> {
        LineRef {
            text: Cow::Borrowed(&self.text),
            truncated: self.truncated,
            original_len: self.original_len,
        }
    }
}

impl LineRef<'_> {
    pub(crate) fn into_owned(self) -> Line {
        Line {
            text: self.text.into_owned(),
            truncated: self.truncated,
            original_len: self.original_len,
        }
    }
}

/// Where the next line is.
enum Found {
    /// A whole line, `buffer[start..end]`.
    InBuffer { start: usize, end: usize },
    /// A line over the cap: only its preview is kept.
    Cut(Line),
}

pub(crate) struct LineReader<R> {
    reader: R,
    max_line: usize,
    buffer: Vec<u8>,
    /// Start of the unread part of `buffer`; the bytes before it (the line lent last) are
    /// dropped before the next read.
    start: usize,
    /// Bytes of the current over-long line skipped so far; `Some` while skipping.
    skipping: Option<usize>,
    pending_cut: Option<Vec<u8>>,
    /// The previous line ended with `\r`: a `\n` right after it belongs to that line ending.
    after_cr: bool,
    /// Bytes after `start` already searched for a line end, so that a long line arriving in
    /// small reads is scanned once, not once per read.
    searched: usize,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub(crate) fn new(reader: R, max_line: usize) -> Self {
        Self {
            reader,
            max_line: max_line.max(1),
            buffer: Vec::with_capacity(READ_CHUNK),
            start: 0,
            skipping: None,
            pending_cut: None,
            after_cr: false,
            searched: 0,
            eof: false,
        }
    }

    /// The next line as an owned [`Line`] (a copy of [`Self::next_line_ref`]'s).
    pub(crate) async fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        Ok(self.next_line_ref().await?.map(LineRef::into_owned))
    }

    /// The next line, or `None` at end of input. Empty lines are skipped. Cancel-safe: a
    /// partial line stays buffered when the future is dropped.
    pub(crate) async fn next_line_ref(&mut self) -> std::io::Result<Option<LineRef<'_>>> {
        let found = loop {
            if let Some(found) = self.take_buffered_line() {
                if matches!(found, Found::InBuffer { start, end } if start == end) {
                    continue;
                }
                break found;
            }
            if self.eof {
                match self.take_rest() {
                    Some(found) => break found,
                    None => return Ok(None),
                }
            }
            self.compact();
            // Grow by exactly one chunk: doubling would overshoot the cap by up to 2x.
            self.buffer.reserve_exact(READ_CHUNK);
            // `read_buf` appends only the bytes read, so dropping this future mid-read (the
            // runner's `select!` does) leaves the buffer as it was: cancel-safe.
            let read = self.reader.read_buf(&mut self.buffer).await?;
            if read == 0 {
                self.eof = true;
            }
        };
        Ok(Some(match found {
            Found::InBuffer { start, end } => LineRef {
                text: text_of(&self.buffer[start..end]),
                truncated: false,
                original_len: end - start,
            },
            Found::Cut(line) => LineRef {
                text: Cow::Owned(line.text),
                truncated: line.truncated,
                original_len: line.original_len,
            },
        }))
    }

    /// Drops the lines already lent, keeping the buffer (and its warm pages) for the next.
    fn compact(&mut self) {
        if self.start > 0 {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        if self.buffer.capacity() > KEEP_BUFFER_UP_TO
            && self.buffer.len() + READ_CHUNK < self.buffer.capacity() / 4
        {
            self.buffer.shrink_to(self.buffer.len() + READ_CHUNK);
        }
    }

    fn take_buffered_line(&mut self) -> Option<Found> {
        if self.after_cr && self.start < self.buffer.len() {
            if self.buffer[self.start] == b'\n' {
                self.start += 1;
            }
            self.after_cr = false;
        }
        let unread = &self.buffer[self.start..];
        let from = self.searched.min(unread.len());
        match memchr::memchr2(b'\n', b'\r', &unread[from..]).map(|offset| from + offset) {
            Some(end) => {
                self.searched = 0;
                self.after_cr = unread[end] == b'\r';
                let line_start = self.start;
                let line_end = self.start + end;
                self.start = line_end + 1;
                Some(if let Some(skipped) = self.skipping.take() {
                    let cut = self.pending_cut.take().unwrap_or_default();
                    Found::Cut(Line {
                        text: String::from_utf8_lossy(&cut).into_owned(),
                        truncated: true,
                        original_len: skipped + end,
                    })
                } else if end > self.max_line {
                    Found::Cut(Line {
                        text: lossy_prefix(&self.buffer[line_start..line_end], CUT_LINE_PREVIEW),
                        truncated: true,
                        original_len: end,
                    })
                } else {
                    Found::InBuffer {
                        start: line_start,
                        end: line_end,
                    }
                })
            }
            None => {
                self.searched = unread.len();
                // No line end yet: start skipping once the partial line passes the cap, so
                // the buffer never grows past cap + one read.
                let unread_len = unread.len();
                if self.skipping.is_none() && unread_len > self.max_line {
                    self.pending_cut = Some(unread[..CUT_LINE_PREVIEW.min(unread_len)].to_vec());
                    self.skipping = Some(0);
                }
                if let Some(skipped) = self.skipping.as_mut() {
                    *skipped += unread_len;
                    self.buffer.clear();
                    self.buffer.shrink_to(2 * READ_CHUNK);
                    self.start = 0;
                    self.searched = 0;
                }
                None
            }
        }
    }

    fn take_rest(&mut self) -> Option<Found> {
        let rest_start = self.start;
        let rest_len = self.buffer.len() - rest_start;
        self.start = self.buffer.len();
        if let Some(skipped) = self.skipping.take() {
            let cut = self.pending_cut.take().unwrap_or_default();
            return Some(Found::Cut(Line {
                text: String::from_utf8_lossy(&cut).into_owned(),
                truncated: true,
                original_len: skipped + rest_len,
            }));
        }
        if rest_len == 0 {
            None
        } else if rest_len > self.max_line {
            Some(Found::Cut(Line {
                text: lossy_prefix(&self.buffer[rest_start..], CUT_LINE_PREVIEW),
                truncated: true,
                original_len: rest_len,
            }))
        } else {
            Some(Found::InBuffer {
                start: rest_start,
                end: self.buffer.len(),
            })
        }
    }
}

/// The line as text: borrowed when it is valid UTF-8 (checked at memory speed), else with
/// the invalid bytes replaced (std's lossy decoder is several times slower, so it only runs
/// when needed).
fn text_of(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

fn lossy_prefix(bytes: &[u8], max: usize) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(max)]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read_all(input: &[u8], max: usize) -> Vec<Line> {
        let mut reader = LineReader::new(input, max);
        let mut lines = Vec::new();
        while let Some(line) = reader.next_line().await.unwrap() {
            lines.push(line);
        }
        lines
    }

    fn texts(lines: &[Line]) -> Vec<&str> {
        lines.iter().map(|line| line.text.as_str()).collect()
    }

    #[tokio::test]
    async fn splits_on_every_line_ending_and_keeps_a_last_unterminated_line() {
        let lines = read_all(b"a\nb\r\nc\rd\n\n\ne", 100).await;
        assert_eq!(texts(&lines), ["a", "b", "c", "d", "e"]);
        assert!(lines.iter().all(|line| !line.truncated));
    }

    #[tokio::test]
    async fn over_long_lines_are_cut_and_flagged_and_reading_goes_on() {
        let mut input = vec![b'x'; 300_000];
        input.extend_from_slice(b"\nnext\n");
        let lines = read_all(&input, 10_000).await;
        assert_eq!(lines.len(), 2);
        assert!(lines[0].truncated);
        assert_eq!(lines[0].text.len(), CUT_LINE_PREVIEW);
        assert_eq!(lines[0].original_len, 300_000);
        assert_eq!(lines[1].text, "next");
    }

    #[tokio::test]
    async fn an_unterminated_over_long_line_is_cut_at_eof() {
        let input = vec![b'y'; 200_000];
        let lines = read_all(&input, 10).await;
        assert_eq!(lines.len(), 1);
        assert!(lines[0].truncated);
        assert_eq!(lines[0].original_len, 200_000);
    }

    #[tokio::test]
    async fn a_read_cancelled_midway_loses_and_adds_nothing() {
        use tokio::io::AsyncWriteExt;
        let (mut writer, reader) = tokio::io::duplex(1024);
        let mut reader = LineReader::new(reader, 100);
        writer.write_all(b"first ").await.unwrap();
        // The runner's select! drops `next_line` whenever another branch wins.
        let cancelled =
            tokio::time::timeout(std::time::Duration::from_millis(20), reader.next_line()).await;
        assert!(cancelled.is_err());
        writer.write_all(b"line\nsecond\n").await.unwrap();
        assert_eq!(
            reader.next_line().await.unwrap().unwrap().text,
            "first line"
        );
        assert_eq!(reader.next_line().await.unwrap().unwrap().text, "second");
    }

    #[tokio::test]
    async fn large_lines_keep_their_bytes_and_their_neighbours_in_any_chunking() {
        let big: String = (0..300_000)
            .map(|index| char::from(b'a' + (index % 26) as u8))
            .collect();
        let mut input = format!("short\n{big}\r\nafter\n{big}é\n").into_bytes();
        input.extend_from_slice(b"\xffbad\n");
        input.extend_from_slice(b"tail");
        for chunk in [1000, 65_536, 7] {
            let reader = ChunkedReader {
                data: input.clone(),
                position: 0,
                chunks: vec![chunk; 10_000],
                next_chunk: 0,
            };
            let mut reader = LineReader::new(reader, DEFAULT_MAX_LINE);
            let mut lines = Vec::new();
            while let Some(line) = reader.next_line().await.unwrap() {
                lines.push(line.text);
            }
            let expected = [
                "short",
                big.as_str(),
                "after",
                &format!("{big}é"),
                "\u{fffd}bad",
                "tail",
            ];
            assert_eq!(lines, expected, "chunks of {chunk}");
        }
    }

    #[tokio::test]
    async fn lines_are_lent_from_one_buffer_kept_from_line_to_line() {
        let big = "x".repeat(300_000);
        let input = format!("{big}\n{big}\nok \u{e9}\n");
        let mut reader = LineReader::new(input.as_bytes(), DEFAULT_MAX_LINE);
        let first = reader.next_line_ref().await.unwrap().unwrap();
        assert!(matches!(first.text, Cow::Borrowed(_)));
        assert_eq!(first.text.len(), 300_000);
        let first_at = first.text.as_ptr();
        let second = reader.next_line_ref().await.unwrap().unwrap();
        assert!(matches!(second.text, Cow::Borrowed(_)));
        assert_eq!(second.text, big);
        // The second line was read into the same memory as the first: no copy, no new pages.
        assert_eq!(second.text.as_ptr(), first_at);
        let last = reader.next_line_ref().await.unwrap().unwrap();
        assert_eq!(last.text, "ok \u{e9}");
        assert!(reader.next_line_ref().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn invalid_utf8_is_replaced_not_fatal() {
        let lines = read_all(b"ok \xff\xfe end\n", 100).await;
        assert_eq!(lines[0].text, "ok \u{fffd}\u{fffd} end");
    }

    /// Hands out the input in the given chunk sizes, to exercise every boundary.
    struct ChunkedReader {
        data: Vec<u8>,
        position: usize,
        chunks: Vec<usize>,
        next_chunk: usize,
    }

    impl AsyncRead for ChunkedReader {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let this = &mut *self;
            let size = this
                .chunks
                .get(this.next_chunk)
                .copied()
                .unwrap_or(7)
                .max(1);
            this.next_chunk += 1;
            let end = (this.position + size)
                .min(this.data.len())
                .min(this.position + buf.remaining());
            buf.put_slice(&this.data[this.position..end]);
            this.position = end;
            std::task::Poll::Ready(Ok(()))
        }
    }

    fn expected_lines(data: &[u8]) -> Vec<Vec<u8>> {
        data.split(|byte| *byte == b'\n' || *byte == b'\r')
            .filter(|segment| !segment.is_empty())
            .map(<[u8]>::to_vec)
            .collect()
    }

    /// Any bytes, cut into any chunks, with any cap, give exactly the lines a plain split gives.
    /// 100,000 cases by default (`AGENTTY_FUZZ_CASES` for a longer run), all on one runtime.
    #[test]
    fn any_bytes_in_any_chunking_give_the_same_lines() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        let cases = std::env::var("AGENTTY_FUZZ_CASES")
            .ok()
            .and_then(|cases| cases.parse().ok())
            .unwrap_or(100_000);
        let strategy = (
            proptest::collection::vec(
                prop_oneof![
                    4 => proptest::num::u8::ANY,
                    1 => Just(b'\n'),
                    1 => Just(b'\r'),
                ],
                0..400,
            ),
            proptest::collection::vec(1usize..40, 0..50),
            1usize..30,
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut runner = TestRunner::new(Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        });
        runner
            .run(&strategy, |(data, chunks, max_line)| {
                let lines = runtime.block_on(async {
                    let reader = ChunkedReader {
                        data: data.clone(),
                        position: 0,
                        chunks,
                        next_chunk: 0,
                    };
                    let mut reader = LineReader::new(reader, max_line);
                    let mut lines = Vec::new();
                    while let Some(line) = reader.next_line().await.unwrap() {
                        lines.push(line);
                    }
                    lines
                });
                let expected = expected_lines(&data);
                prop_assert_eq!(lines.len(), expected.len());
                for (line, raw) in lines.iter().zip(&expected) {
                    prop_assert_eq!(line.original_len, raw.len());
                    prop_assert_eq!(line.truncated, raw.len() > max_line);
                    if !line.truncated {
                        prop_assert_eq!(&line.text, &String::from_utf8_lossy(raw).into_owned());
                    }
                }
                Ok(())
            })
            .unwrap();
    }
}
