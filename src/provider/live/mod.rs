//! The long-lived, two-way transports' one turn driver: each transport (pi RPC, Claude Code's
//! stream-json, Codex's app-server, ACP) is a [`Protocol`] and plays its [`Turn`]s; the driver
//! owns the rest, once for all of them.
//!
//! - `process`: the live agent process (stdin writer, stdout router, stderr, exit, its tree).
//! - `slot`: where a provider keeps that process between attempts.
//! - `protocol`: what a transport plugs in.
//! - `driver`: one attempt: claim, begin, the `select!` over the turn, the stop stages, the
//!   agent's questions, settle, keep or close, the terminal message; "did not start".
//! - `questions`: the agent's permission requests: the policy, and answers checked against
//!   what was offered.
//! - `stop`: the staged stop of a turn (stage 0 in-band, then the signal stages).
//! - `provider`: a protocol behind the [`crate::provider::Provider`] contract.
//!
//! Nothing here names a transport; the transports import this, never the other way round.

mod driver;
mod process;
mod protocol;
mod provider;
mod questions;
mod slot;
mod stop;

pub(crate) use process::{LiveItem, LiveProcess, NoReply, ResponseRouter};
pub(crate) use protocol::{
    Compaction, Ending, Live, Protocol, Question, Renewal, Reply, Settled, StartFailure, Step,
    Turn, TurnIo, Unstarted, Work,
};
pub(crate) use provider::LiveProvider;
