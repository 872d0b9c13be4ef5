//! What a long-lived transport plugs into the driver: its [`Protocol`] (starting the agent,
//! opening and keeping its session, beginning a turn, settling after it) and the [`Turn`] it
//! plays (what each line means, its own events, the in-band cancel, steering, answers). The
//! driver ([`super::driver`]) does everything around them, the same way for every transport.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::process::{LiveProcess, NoReply};
use crate::process::Line;
use crate::provider::runner::AttemptMapping;
use crate::provider::{
    AgentQueue, AgentSetting, AgentStatus, AttemptRequest, Backend, BranchPoint, Capabilities,
    Interjection, Mapper, SessionCheckpoint, SessionRef,
};
use crate::stream::{AgentMessage, PermissionRequest, PermissionResolver};

/// A live agent process with its session open, as the driver keeps it between turns.
pub(crate) struct Live<S> {
    pub(crate) process: LiveProcess,
    /// What the protocol keeps of it (its connection, the session's id, ...).
    pub(crate) session: S,
    /// The session it was opened for, and whether it has had a prompt since (a process started
    /// ahead of the first prompt serves that prompt's session).
    pub(crate) opened_for: SessionRef,
    pub(crate) prompted: bool,
}

impl<S> Live<S> {
    pub(crate) fn new(process: LiveProcess, session: S, opened_for: SessionRef) -> Self {
        Self {
            process,
            session,
            opened_for,
            prompted: false,
        }
    }

    /// The session in this process is a fresh one, opened for `session` (a new session in the
    /// same process): it serves the next prompt for it, and reports only its own stderr.
    pub(crate) fn reopened(&mut self, session: SessionRef) {
        self.opened_for = session;
        self.prompted = false;
        self.process.forget_stderr();
    }

    /// A start that failed at `why`, with this process (the driver ends it).
    pub(crate) fn unstarted(self, why: StartFailure) -> Unstarted {
        Unstarted {
            process: Some(self.process),
            why,
        }
    }
}

/// Why a start failed.
#[derive(Debug)]
pub(crate) enum StartFailure {
    /// The process could not be spawned: why.
    Spawn(String),
    /// It did not answer `what` (it ended first, or not in time).
    NoAnswer(NoReply, String),
    /// The agent refused to open the session: its words.
    Refused(String),
    /// The agent cannot continue the session asked for: why.
    Lost(String),
}

/// A start that failed, and the process it left (ended by the driver, which reads its stderr).
pub(crate) struct Unstarted {
    pub(crate) process: Option<LiveProcess>,
    pub(crate) why: StartFailure,
}

impl From<StartFailure> for Unstarted {
    fn from(why: StartFailure) -> Self {
        Self { process: None, why }
    }
}

/// How a running process can serve an attempt it does not serve as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Renewal {
    /// Re-read the stored session, which the orchestrator restored from a checkpoint.
    Reload,
    /// Open a new session (a new conversation, or a retry in a fresh session).
    NewSession,
}

/// What an attempt asks of the live process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Work {
    /// The request's prompt.
    Prompt,
    /// Compact the agent's conversation, with the user's instructions for the summary: a turn
    /// with no prompt.
    Compact(Option<String>),
}

/// The agent asks before acting: what the user (or the policy) is asked, and what answering it
/// takes (`ticket`: the protocol's own, such as the JSON-RPC id to answer).
pub(crate) struct Question<T> {
    pub(crate) request: PermissionRequest,
    pub(crate) ticket: T,
}

/// The answer to a question.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reply<'a> {
    /// The option chosen, one the agent offered; `None`: cancelled (the turn is stopping).
    pub(crate) option: Option<&'a str>,
    /// The user's note with a rejection.
    pub(crate) note: Option<&'a str>,
    pub(crate) by: PermissionResolver,
}

/// What a line (or an event of the protocol's own) means for the turn.
pub(crate) enum Step<T> {
    Continue,
    /// The agent asks before acting.
    Ask(Question<T>),
    /// The turn is over.
    End(Ending),
}

/// How the agent ended the turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ending {
    /// It said so: the mapping composes the terminal message (the user's stop wins).
    Answered,
    /// It refused the work (the prompt, the compaction): a failure in its words; the process
    /// serves on.
    Refused(String),
    /// It finished, with this stop reason, whatever else happened (a compaction the agent
    /// finished stands even when a stop raced it).
    Completed(String),
}

/// What a turn's handlers work with: the attempt's mapping and the messages on their way out.
pub(crate) struct TurnIo<'a> {
    pub(crate) mapping: &'a mut AttemptMapping,
    pub(crate) out: &'a mut Vec<AgentMessage>,
    /// The stop began (the in-band cancel is out).
    pub(crate) stopping: bool,
}

impl TurnIo<'_> {
    /// Maps one of the agent's lines into the messages going out.
    pub(crate) fn map(&mut self, line: &Line) {
        self.mapping.map_line(line, self.out);
    }

    /// The permission request the mapper just made of the line (the agent's request).
    pub(crate) fn asked(&self) -> Option<PermissionRequest> {
        self.out.iter().rev().find_map(|message| match message {
            AgentMessage::PermissionRequest(asked) => Some((**asked).clone()),
            _ => None,
        })
    }
}

/// How a turn ended, for the protocol's keep-or-close.
pub(crate) struct Settled<'a> {
    pub(crate) request: &'a AttemptRequest,
    pub(crate) terminal: &'a AgentMessage,
    /// The agent ended the turn itself, with no stop (it neither died nor was cancelled).
    pub(crate) answered_unstopped: bool,
    /// The user stopped the turn.
    pub(crate) stopped: bool,
    /// Messages the user gave the turn did not reach the agent.
    pub(crate) undelivered: bool,
}

impl Settled<'_> {
    pub(crate) fn failed(&self) -> bool {
        matches!(self.terminal, AgentMessage::Failed(_))
    }
}

/// One turn as its protocol plays it, on the live process the driver lends it.
pub(crate) trait Turn: Send + 'static {
    type Session: Send + 'static;
    /// What answering one of the agent's questions takes.
    type Ticket: Send + 'static;
    /// An event of the protocol's own (the answer to its prompt request, a deadline).
    type Wake: Send;

    /// A line of the agent's: mapped (or handled) into `io.out`.
    fn on_line(
        &mut self,
        live: &mut Live<Self::Session>,
        line: &Line,
        io: &mut TurnIo<'_>,
    ) -> Step<Self::Ticket>;

    /// The protocol's next event; pending when it has none (must be cancel-safe: the driver
    /// selects on it).
    fn wake(&mut self) -> impl Future<Output = Self::Wake> + Send + '_ {
        std::future::pending()
    }

    fn on_wake(
        &mut self,
        live: &mut Live<Self::Session>,
        wake: Self::Wake,
        io: &mut TurnIo<'_>,
    ) -> Step<Self::Ticket> {
        let _ = (live, wake, io);
        Step::Continue
    }

    /// Stage 0 of the stop: sends the in-band cancel. `false`: the protocol has none for this
    /// work, and the signal stages run at once.
    fn cancel(&mut self, live: &mut Live<Self::Session>) -> bool;

    /// Hands the user's message to the running turn; false when it did not go out.
    fn interject(
        &mut self,
        live: &mut Live<Self::Session>,
        kind: Interjection,
        text: &str,
    ) -> bool {
        let _ = (live, kind, text);
        false
    }

    /// Answers a question; returns the line written (the mapper reads the client's answers).
    fn answer(
        &mut self,
        live: &mut Live<Self::Session>,
        ticket: Self::Ticket,
        reply: Reply<'_>,
    ) -> String;

    /// The turn is over: the messages the user gave it that did not reach the agent (each
    /// goes back to the user). Warnings go into `out`.
    fn undelivered(
        &mut self,
        live: &mut Live<Self::Session>,
        out: &mut Vec<AgentMessage>,
    ) -> Vec<String> {
        let _ = (live, out);
        Vec::new()
    }
}

/// What a compaction is to the protocol.
pub(crate) enum Compaction {
    /// A turn of its own ([`Work::Compact`]).
    Native,
    /// A prompt the agent reads as the command (Claude Code's `/compact`): the agent's name
    /// for what it says when it did not compact.
    SlashCommand(&'static str),
    /// The agent's own compaction command among those it announced (Qwen Code's `compress`),
    /// by its name: sent as the prompt `/name`, the agent's words its result.
    AgentCommand(String),
    /// None.
    Unavailable,
}

/// A long-lived transport.
pub(crate) trait Protocol: Send + Sync + 'static {
    type Session: Send + 'static;
    type Turn: Turn<Session = Self::Session>;

    fn backend(&self) -> &Arc<dyn Backend>;
    /// What the transport lets agentty do (declared as data).
    fn capabilities(&self) -> Capabilities;
    /// The agent as messages name it ("pi in RPC mode").
    fn agent(&self) -> &'static str;
    /// What a start that ended without a word may mean, and the way out (after "it ended
    /// without answering …").
    fn start_hint(&self) -> &'static str {
        ""
    }
    /// How long the process may take to exit once its stdin closes before it is stopped.
    fn exit_after_close(&self) -> Duration {
        crate::process::timings::EXIT_AFTER_CLOSE
    }

    /// An attempt (or a warm-up) is about to run `request`: what it carries for the whole
    /// conversation (the settings chosen).
    fn prepare(&self, request: &AttemptRequest) {
        let _ = request;
    }

    /// Starts the agent for `request` and opens its session.
    fn start(
        &self,
        request: &AttemptRequest,
    ) -> impl Future<Output = Result<Live<Self::Session>, Unstarted>> + Send;

    /// Whether the live process holds the session `id`.
    fn holds(&self, session: &Self::Session, id: &str) -> bool;

    /// Whether the live process (still running) serves `session`.
    fn serves(&self, live: &mut Live<Self::Session>, session: &SessionRef) -> bool {
        if !live.process.is_running() {
            return false;
        }
        if !live.prompted && *session == live.opened_for {
            return true;
        }
        matches!(session, SessionRef::Resume(id) if self.holds(&live.session, id))
    }

    /// Makes the running process serve `request` as `renewal` says instead of starting
    /// another; false when it cannot (the process is then replaced).
    fn renew(
        &self,
        live: &mut Live<Self::Session>,
        request: &AttemptRequest,
        renewal: Renewal,
    ) -> impl Future<Output = bool> + Send {
        let _ = (live, request, renewal);
        async { false }
    }

    /// The process is about to be closed: whatever reaches it from outside the attempt
    /// (settings) lets go of it.
    fn closing(&self, session: &mut Self::Session) {
        let _ = session;
    }

    /// Begins a turn on `live`: what the claim asked of the session first (a revert, a
    /// branch), the attempt's `session.*` message (`reused`: the process has served a prompt
    /// before), and the prompt or the command `work` is. Messages go into `out`; returns the
    /// turn and the mapper of its lines.
    fn begin(
        &self,
        live: &mut Live<Self::Session>,
        request: &AttemptRequest,
        work: &Work,
        reused: bool,
        out: &mut Vec<AgentMessage>,
    ) -> impl Future<Output = (Self::Turn, Box<dyn Mapper>)> + Send;

    /// The turn is over (its terminal message composed): whether the process may serve the
    /// next attempt, and what the provider keeps of the turn.
    fn settle(
        &self,
        turn: Self::Turn,
        live: &mut Live<Self::Session>,
        settled: Settled<'_>,
    ) -> impl Future<Output = bool> + Send;

    /// The agent's stored session that `request` continues, as it is now.
    fn checkpoint(&self, request: &AttemptRequest) -> Option<SessionCheckpoint> {
        SessionCheckpoint::of_session(self.backend().as_ref(), request)
    }

    /// The orchestrator restored the stored session: whether what the live process holds is
    /// out of date now (the next claim reloads or replaces it).
    fn restored(&self) -> bool {
        true
    }

    fn branch_session(&self, point: Option<&BranchPoint>) -> bool {
        let _ = point;
        false
    }

    fn change_setting(&self, setting: AgentSetting) -> bool {
        let _ = setting;
        false
    }

    fn status(&self) -> Option<watch::Receiver<AgentStatus>> {
        None
    }

    fn queue(&self) -> Option<watch::Receiver<AgentQueue>> {
        None
    }

    fn compaction(&self) -> Compaction {
        Compaction::Unavailable
    }
}
