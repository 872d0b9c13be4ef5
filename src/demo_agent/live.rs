//! What the long-lived modes (pi's `rpc`, `claude-stream`, `codex-app-server`, `acp`) share:
//! stdin read on a thread of its own, tools whose output arrives among the inputs, and
//! [`Serving`]: a turn that waits (script time, or for the answer to a question it asked) while
//! it keeps serving whatever else arrives.

use std::io::{self, BufRead};
use std::path::Path;
use std::process::Child;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::Instant;

use serde_json::Value;

use super::pace::Pace;
use super::signals::{TerminationDeferred, ToolGroup};
use super::{bash, knobs};

/// Reads stdin on a thread of its own and hands each non-blank line to `tx` as `input(the line
/// parsed as JSON)`, then `eof` once stdin closes. The thread keeps SIGTERM/SIGHUP blocked, so
/// the handler runs on the main thread, which defers it while a line is being written.
pub(crate) fn spawn_stdin_reader<I: Send + 'static>(
    tx: Sender<I>,
    input: fn(serde_json::Result<Value>) -> I,
    eof: I,
) {
    let _deferred = TerminationDeferred::new();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if line.trim().is_empty() {
                continue;
            }
            knobs::log_stdin(&line);
            if tx.send(input(serde_json::from_str(&line))).is_err() {
                return;
            }
        }
        let _ = tx.send(eof);
    });
}

/// Starts `command` as a bash tool (in `cwd` when given) whose output arrives among the inputs:
/// `output(Some(piece))` for each piece, then `output(None)` once it closes.
pub(crate) fn spawn_tool<I: Send + 'static>(
    command: &str,
    cwd: Option<&Path>,
    tx: Sender<I>,
    output: fn(Option<Vec<u8>>) -> I,
) -> io::Result<(Child, ToolGroup)> {
    bash::spawn_streamed(command, cwd, move |piece| tx.send(output(piece)).is_ok())
}

/// A mode that keeps serving its inputs while one of its turns runs.
pub(crate) trait Serving {
    /// What the stdin reader hands the mode.
    type Input;
    /// Why a turn ends early.
    type Stop;

    fn inputs(&self) -> &Receiver<Self::Input>;

    fn pace(&self) -> Pace;

    /// Serves an input that arrives during a turn; `Some` when it ends the turn.
    fn during_turn(&mut self, input: Self::Input) -> io::Result<Option<Self::Stop>>;

    /// Why the turn ends when stdin's reader is gone.
    fn reader_gone() -> Self::Stop;

    /// Waits `ms` of script time, serving inputs meanwhile; `Some` when the turn must end.
    fn wait(&mut self, ms: u64) -> io::Result<Option<Self::Stop>> {
        let deadline = Instant::now() + self.pace().scaled(ms);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.inputs().recv_timeout(left) {
                Ok(input) => {
                    if let Some(stop) = self.during_turn(input)? {
                        return Ok(Some(stop));
                    }
                }
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => return Ok(Some(Self::reader_gone())),
            }
        }
    }

    /// Serves inputs until `pick` takes one as the answer to a question the turn asked (it
    /// hands any other input back); `Err` when the turn ends first.
    fn await_answer<A>(
        &mut self,
        mut pick: impl FnMut(Self::Input) -> Result<A, Self::Input>,
    ) -> io::Result<Result<A, Self::Stop>> {
        loop {
            let Ok(input) = self.inputs().recv() else {
                return Ok(Err(Self::reader_gone()));
            };
            match pick(input) {
                Ok(answer) => return Ok(Ok(answer)),
                Err(other) => {
                    if let Some(stop) = self.during_turn(other)? {
                        return Ok(Err(stop));
                    }
                }
            }
        }
    }
}
