//! The mapper contract: one per backend, pure (lines in, shared messages out, no IO).
//!
//! A mapper never decides the terminal message alone: it reports what the agent itself said
//! about the outcome, and the runner combines that with the exit status and whether we stopped
//! the agent (see `runner::terminal_message`). This keeps "exactly one terminal, last" in one
//! place for every backend.

use crate::stream::{AgentMessage, Usage};

/// What a mapper made of one stdout line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineVerdict {
    /// A recognised event (it may or may not have produced messages).
    Event,
    /// Well-formed but of a type this mapper deliberately ignores (logged at debug).
    Ignored,
    /// Not JSON, or JSON without a recognised shape: kept for `invalid_output_lines`.
    Invalid,
}

/// How the agent process ended, as far as the mapper needs to know.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExitFacts {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// We asked the agent to stop (three-stage stop).
    pub stopped_by_us: bool,
}

/// What the agent's own event stream said about how the attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentOutcome {
    /// The agent said it finished normally.
    Completed {
        stop_reason: String,
        usage: Option<Usage>,
    },
    /// The agent reported a failure in its own stream (even if it then exits 0).
    Failed {
        reason: crate::stream::FailureReason,
        message: String,
        http_status: Option<u16>,
    },
    /// The agent confirmed it aborted (only meaningful after our stop).
    Aborted,
    /// The stream ended without the agent saying anything conclusive.
    Unfinished,
}

pub trait Mapper: Send {
    /// Maps one stdout line (the newline removed, invalid UTF-8 replaced).
    fn map_line(&mut self, line: &str, out: &mut Vec<AgentMessage>) -> LineVerdict;

    /// One stderr line. Most agents put nothing structured there; some announce retries.
    fn map_stderr_line(&mut self, _line: &str, _out: &mut Vec<AgentMessage>) {}

    /// A line the client wrote to the agent (two-way transports: an answer to the agent's
    /// request). Most mappers have nothing to make of it.
    fn map_client_line(&mut self, _line: &str, _out: &mut Vec<AgentMessage>) {}

    /// True once the agent's stream has said the attempt is over (so an agent that keeps
    /// running afterwards may be stopped).
    fn outcome_reported(&self) -> bool;

    /// The process ended and stdout is drained: flush what is buffered and say how it ended.
    fn finish(&mut self, exit: ExitFacts, out: &mut Vec<AgentMessage>) -> AgentOutcome;
}

/// Asserts `out[at]` says the streamed text was superseded and `out[at + 1]` gives the text
/// that replaces it: what every mapper sends when a final text contradicts the deltas.
#[cfg(test)]
pub(crate) fn assert_superseded_by(out: &[AgentMessage], at: usize, text: &str) {
    assert!(
        matches!(&out[at], AgentMessage::Notice { kind, .. } if *kind == crate::stream::NoticeKind::Superseded),
        "{out:?}"
    );
    assert_eq!(out[at + 1].assistant_delta(), Some(text), "{out:?}");
}
