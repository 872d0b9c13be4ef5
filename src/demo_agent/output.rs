//! Where the demo agent's lines go: stdout, each line written whole and flushed, never cut in
//! half by a SIGTERM (every mode writes through here).

use std::io::{self, Write};

use super::signals::TerminationDeferred;
use super::state::now_ms;
use super::wire::{Event, MessageRef, UserMessage};

/// Where events go: stdout, one flushed line each.
pub(crate) struct Output {
    stdout: io::Stdout,
}

impl Output {
    pub(crate) fn stdout() -> Self {
        Self {
            stdout: io::stdout(),
        }
    }

    pub(crate) fn event(&mut self, event: &Event) -> io::Result<()> {
        let line = serde_json::to_string(event).map_err(io::Error::other)?;
        self.line(&line)
    }

    /// The user's message, announced as pi does (`message_start`, `message_end`).
    pub(crate) fn user_message(&mut self, text: &str) -> io::Result<UserMessage> {
        let user = UserMessage::new(text, now_ms());
        self.whole_message(MessageRef::User(&user))?;
        Ok(user)
    }

    /// A message that is complete when it is shown: `message_start`, then `message_end`.
    pub(crate) fn whole_message(&mut self, message: MessageRef) -> io::Result<()> {
        self.event(&Event::MessageStart { message })?;
        self.event(&Event::MessageEnd { message })
    }

    /// Writes one line in one piece (see [`write_line`]).
    pub(crate) fn line(&mut self, line: &str) -> io::Result<()> {
        write_line(&self.stdout, line)
    }
}

/// Writes one line to stdout in one piece; a SIGTERM arriving meanwhile waits until it is out.
pub(crate) fn write_line(stdout: &io::Stdout, line: &str) -> io::Result<()> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    let _deferred = TerminationDeferred::new();
    let mut stdout = stdout.lock();
    stdout.write_all(&bytes)?;
    stdout.flush()
}
