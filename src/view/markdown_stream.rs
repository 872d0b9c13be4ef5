//! Markdown that grows, rendered without flicker or quadratic work: the stable prefix (blocks
//! later text cannot change) is committed once and only the unfinished tail is rendered again.
//! A block is stable once a blank line is followed by a line that starts in column 0, or once a
//! top-level code fence opens; inside a fence every complete line is highlighted once, with the
//! highlighter's state kept between lines. Commit points depend only on the text, never on how
//! it was split into deltas, so the same text always renders the same.

use super::highlight::{plain_code_style, CodeHighlighter};
use super::markdown::render_markdown;
use super::markdown_code::{closes_fence, fence_line, opens_fence};
use super::wrap::{RichLine, WrapMode};

/// An open top-level code fence.
struct OpenFence {
    marker: char,
    length: usize,
    highlighter: CodeHighlighter,
}

/// Incremental rendering of a growing markdown text (see the module docs).
#[derive(Default)]
pub(crate) struct MarkdownStream {
    /// Bytes of the text already split into complete lines.
    scanned: usize,
    /// Start of the markdown not yet committed.
    pending_start: usize,
    /// Where the last blank line of the pending markdown starts, while it may end a block.
    blank_at: Option<usize>,
    fence: Option<OpenFence>,
    committed: Vec<RichLine>,
}

impl MarkdownStream {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Lines that later text can no longer change.
    pub(crate) fn committed(&self) -> &[RichLine] {
        &self.committed
    }

    /// Takes in the text so far (which must extend the text given before).
    pub(crate) fn update(&mut self, text: &str) {
        if text.len() < self.scanned || !text.is_char_boundary(self.scanned) {
            *self = Self::default();
        }
        let complete_end = match text[self.scanned..].rfind('\n') {
            Some(offset) => self.scanned + offset + 1,
            None => return,
        };
        let mut position = self.scanned;
        while position < complete_end {
            let line_end = position
                + text[position..complete_end]
                    .find('\n')
                    .unwrap_or(complete_end - position);
            self.scan_line(text, position, line_end);
            position = line_end + 1;
        }
        self.scanned = complete_end;
    }

    fn scan_line(&mut self, text: &str, start: usize, end: usize) {
        let line = &text[start..end];
        if let Some(fence) = self.fence.as_mut() {
            if closes_fence(line, fence.marker, fence.length) {
                self.committed.push(fence_line("```".to_owned()));
                self.fence = None;
                self.pending_start = end + 1;
                self.blank_at = None;
            } else {
                let spans = fence.highlighter.highlight_line(line);
                self.committed
                    .push(RichLine::new(spans).mode(WrapMode::Chars));
            }
            return;
        }
        if let Some((marker, length, info)) = opens_fence(line) {
            self.commit_pending(text, start);
            self.separate();
            self.committed.push(fence_line(format!("```{info}")));
            self.fence = Some(OpenFence {
                marker,
                length,
                highlighter: CodeHighlighter::new(info),
            });
            self.pending_start = end + 1;
            self.blank_at = None;
            return;
        }
        if line.trim().is_empty() {
            self.blank_at.get_or_insert(start);
            return;
        }
        if let Some(blank) = self.blank_at.take() {
            if !line.starts_with([' ', '\t']) {
                self.commit_pending(text, blank);
                self.pending_start = start;
            }
        }
    }

    /// A blank line between the committed output and what comes next.
    fn separate(&mut self) {
        if !self.committed.is_empty() {
            self.committed.push(RichLine::blank());
        }
    }

    fn commit_pending(&mut self, text: &str, end: usize) {
        let chunk = &text[self.pending_start.min(end)..end];
        if chunk.trim().is_empty() {
            return;
        }
        self.separate();
        self.committed.extend(render_markdown(chunk));
    }

    /// The lines of the text after the committed part (`text` as last given to `update`).
    pub(crate) fn render_tail(&self, text: &str) -> Vec<RichLine> {
        if self.fence.is_some() {
            // An unfinished code line is shown plain until its newline arrives.
            let partial = text.get(self.scanned..).unwrap_or("");
            if partial.is_empty() {
                return Vec::new();
            }
            return vec![RichLine::text(partial, plain_code_style()).mode(WrapMode::Chars)];
        }
        let pending = text.get(self.pending_start..).unwrap_or("");
        if pending.trim().is_empty() {
            return Vec::new();
        }
        let mut lines = Vec::new();
        if !self.committed.is_empty() {
            lines.push(RichLine::blank());
        }
        lines.extend(render_markdown(pending));
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::markdown::tests::{plain, SAMPLE};

    #[test]
    fn streaming_in_any_split_renders_like_the_whole() {
        let whole = {
            let mut stream = MarkdownStream::new();
            stream.update(SAMPLE);
            let mut lines = stream.committed().to_vec();
            lines.extend(stream.render_tail(SAMPLE));
            plain(&lines, 40)
        };
        for step in [1, 3, 7, 13] {
            let mut stream = MarkdownStream::new();
            let mut end = 0;
            while end < SAMPLE.len() {
                end = (end + step).min(SAMPLE.len());
                while !SAMPLE.is_char_boundary(end) {
                    end += 1;
                }
                stream.update(&SAMPLE[..end]);
                // The tail is rendered at every step, as the UI does.
                let _ = stream.render_tail(&SAMPLE[..end]);
            }
            let mut lines = stream.committed().to_vec();
            lines.extend(stream.render_tail(SAMPLE));
            assert_eq!(plain(&lines, 40), whole, "step {step}");
        }
        // And the whole streamed document reads like the one-shot render.
        assert_eq!(whole, plain(&render_markdown(SAMPLE), 40));
    }

    #[test]
    fn stream_commits_stable_blocks_and_code_lines() {
        let mut stream = MarkdownStream::new();
        let text = "para one\n\npara two\n\n```py\nx = 1\n";
        stream.update(text);
        assert_eq!(
            plain(stream.committed(), 40),
            vec!["para one", "", "para two", "", "```py", "x = 1"]
        );
        assert!(stream.render_tail(text).is_empty());
        // A continuation line indented under the blank does not end the block.
        let mut stream = MarkdownStream::new();
        stream.update("- item\n\n  more of item\n");
        assert!(stream.committed().is_empty());
    }

    #[test]
    fn unfinished_code_line_is_shown_plain() {
        let mut stream = MarkdownStream::new();
        let text = "```rust\nlet x";
        stream.update(text);
        assert_eq!(plain(&stream.render_tail(text), 40), vec!["let x"]);
    }
}
