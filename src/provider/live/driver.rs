//! The one turn driver of every long-lived transport: an attempt claims the live process
//! (kept, reloaded, reopened or started), begins its work, reads the turn to its end over one
//! `select!` (the agent's lines, its stderr, the protocol's own events, the user's messages
//! and answers, the stop), settles, keeps or closes the process, and sends the one terminal
//! message. The rules every transport follows are here, once:
//!
//! - A stop cancels in-band first, then answers every open question `cancelled`: the agent
//!   learns the turn is over before it reads a refusal it might act on.
//! - An answer must be one the agent offered ([`super::questions`]).
//! - What the turn started and left running after an in-band stop is killed: nothing a stopped
//!   turn started outlives the stop (the helpers the agent ran before the turn are its own).
//! - A message given to the turn that did not reach the agent goes back to the user
//!   (`not_delivered`), whatever the transport.
//! - The time a stop took runs to the terminal message, closing included ([`InBandStop`]).
//! - A start that fails is one `terminal.failed` (`start_failed`, or `session_lost`) saying
//!   what the agent said.
//! - A stop ends a start at any stage, an agent that never answers `initialize` too: what the
//!   start spawned is killed, and the attempt ends stopped. An attempt that waited for the
//!   warm-up start takes its failure as its own (one start is never waited for twice).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::process::{LiveItem, NoReply, Starting};
use super::protocol::{
    Ending, Live, Protocol, Question, Renewal, Reply, Settled, StartFailure, Step, Turn, TurnIo,
    Unstarted, Work,
};
use super::questions::{Decision, Questions};
use super::slot::{Claimed, LiveSlot};
use super::stop::{InBandStop, TurnEnd};
use crate::config::PermissionPolicy;
use crate::process::timings::{IN_BAND_CANCEL_GRACE, START_TIMEOUT};
use crate::process::{ExitReport, StopControl};
use crate::provider::checkpoint::UnwrittenTurn;
use crate::provider::errors::stderr_headline;
use crate::provider::runner::{mark_lost_session, AttemptMapping, AttemptSink};
use crate::provider::{AttemptRequest, Interjection, SessionRef};
use crate::stream::{
    AgentMessage, Failure, FailureReason, NoticeKind, PermissionResolver, StopStage,
    PERMISSION_CANCELLED,
};

/// What the user hands the running turn, in the order given (a message typed before an answer
/// reaches the agent before it).
pub(crate) enum UserInput {
    Interject(Interjection, String),
    /// A permission answer: the request id, the option chosen (`None`: cancelled) and the
    /// user's note with a rejection.
    Answer {
        id: String,
        option: Option<String>,
        note: Option<String>,
    },
}

/// Where the running attempt takes the user's input (a handle: clones share it).
#[derive(Clone, Default)]
pub(crate) struct Inbox(Arc<Mutex<Option<mpsc::UnboundedSender<UserInput>>>>);

impl Inbox {
    /// Hands `input` to the running turn; false when none runs.
    pub(crate) fn hand_over(&self, input: UserInput) -> bool {
        self.0
            .lock()
            .ok()
            .and_then(|inbox| inbox.as_ref().map(|inbox| inbox.send(input).is_ok()))
            .unwrap_or(false)
    }

    fn open(&self) -> mpsc::UnboundedReceiver<UserInput> {
        let (sender, receiver) = mpsc::unbounded_channel();
        if let Ok(mut inbox) = self.0.lock() {
            *inbox = Some(sender);
        }
        receiver
    }

    fn close(&self) {
        if let Ok(mut inbox) = self.0.lock() {
            *inbox = None;
        }
    }
}

/// One attempt on a protocol's live process.
pub(crate) struct Attempt<P: Protocol> {
    pub(crate) protocol: Arc<P>,
    pub(crate) slot: LiveSlot<P::Session>,
    pub(crate) inbox: Inbox,
    /// The last turn a kept process may still be writing to disk (see `UnwrittenTurn`).
    pub(crate) unwritten: Arc<Mutex<Option<UnwrittenTurn>>>,
    pub(crate) policy: PermissionPolicy,
    pub(crate) sink: AttemptSink,
    pub(crate) stop: StopControl,
}

/// How the turn went, before the process is kept or closed.
struct Played {
    terminal: AgentMessage,
    keep: bool,
    stop: InBandStop,
}

impl<P: Protocol> Attempt<P> {
    /// Plays `work` of `request` and sends its terminal message (the stream's last).
    pub(crate) async fn run(mut self, request: AttemptRequest, work: Work) {
        self.protocol.prepare(&request);
        let Some(mut claimed) = self.claim(&request).await else {
            return;
        };
        let Some(live) = claimed.as_mut() else {
            return;
        };
        let Played {
            mut terminal,
            keep,
            stop,
        } = self.play(live, &request, &work).await;
        if !keep {
            if let Some(live) = claimed.take() {
                close(self.protocol.as_ref(), live).await;
            }
        }
        stop.stamp(&mut terminal);
        self.sink.send(terminal).await;
    }

    /// The live process for `request`, locked for this attempt: the one kept when it serves
    /// `request`'s session and no restore made it stale, reloaded where a restore did, a new
    /// session in it for a new one, else a new process (the old one closed first). `None` when
    /// the attempt is over already, its terminal message sent: stopped before it began, or the
    /// start failed.
    async fn claim(&mut self, request: &AttemptRequest) -> Option<Claimed<P::Session>> {
        let protocol = self.protocol.as_ref();
        let (mut claimed, warm_failure) = self.slot.lock(&self.stop).await;
        if let Some(terminal) = warm_failure {
            self.sink.send(terminal).await;
            return None;
        }
        if self.sink.stopped_before_start(&self.stop).await {
            return None;
        }
        let stale = self.slot.take_stale();
        let serves = claimed
            .as_mut()
            .is_some_and(|live| protocol.serves(live, &request.session));
        let mut reuse = serves && !stale;
        if serves && stale {
            // The restored file is what the process must hold: re-read where it can.
            if let Some(live) = claimed.as_mut() {
                reuse = protocol.renew(live, request, Renewal::Reload).await;
            }
        }
        if !reuse && !stale && request.session == SessionRef::New {
            // A fresh session needs no fresh process where the agent can open another.
            if let Some(live) = claimed.as_mut() {
                reuse = protocol.renew(live, request, Renewal::NewSession).await;
            }
        }
        if !reuse {
            if let Some(old) = claimed.take() {
                close(protocol, old).await;
            }
            match start(protocol, request, &self.stop).await {
                Ok(live) => *claimed = Some(live),
                Err(terminal) => {
                    self.sink.send(terminal).await;
                    return None;
                }
            }
        }
        Some(claimed)
    }

    /// Begins `work` and reads the turn to its end.
    async fn play(
        &mut self,
        live: &mut Live<P::Session>,
        request: &AttemptRequest,
        work: &Work,
    ) -> Played {
        let protocol = self.protocol.clone();
        let reused = live.prompted;
        if reused {
            live.process.forget_stderr();
        }
        // The helpers the agent runs between turns are its own; what the turn adds (its tools)
        // does not outlive a stop. Read before the work goes out: a fast agent starts its tool
        // at once.
        let helpers = live.process.descendants().await;
        let mut out = Vec::new();
        let (mut turn, mapper) = protocol.begin(live, request, work, reused, &mut out).await;
        live.prompted = true;
        // The session the protocol announced (a mapper may announce it later, from the turn).
        let announced = out.iter().find_map(|message| match message {
            AgentMessage::SessionStarted {
                session_id: Some(id),
                ..
            }
            | AgentMessage::SessionResumed { session_id: id, .. } => Some(id.clone()),
            _ => None,
        });
        self.sink.flush(&mut out).await;
        let mut mapping = AttemptMapping::new(mapper);
        let mut inputs = self.inbox.open();
        let mut questions = Questions::new(self.policy, protocol.backend().name());
        let mut stop = InBandStop::new(self.stop.clone(), live.process.process_stop.clone());
        let mut ending = None;
        let end = loop {
            let step = tokio::select! {
                item = live.process.items.recv() => match item {
                    Some(LiveItem::Line(line)) => {
                        if let Some(tap) = &request.raw_line_tap {
                            tap.record(&line.text).await;
                        }
                        let mut io = TurnIo { mapping: &mut mapping, out: &mut out, stopping: stop.is_sent() };
                        turn.on_line(live, &line, &mut io)
                    }
                    Some(LiveItem::Exited(report)) => {
                        live.process.exited = Some(report);
                        break TurnEnd::Exited(report);
                    }
                    None => break TurnEnd::Exited(ExitReport::default()),
                },
                Some(line) = live.process.stderr_lines.recv() => {
                    mapping.map_stderr_line(&line, &mut out);
                    Step::Continue
                }
                wake = turn.wake() => {
                    let mut io = TurnIo { mapping: &mut mapping, out: &mut out, stopping: stop.is_sent() };
                    turn.on_wake(live, wake, &mut io)
                }
                Some(input) = inputs.recv() => {
                    match input {
                        UserInput::Interject(kind, text) => {
                            let sent = !stop.is_sent() && turn.interject(live, kind, &text);
                            if !sent {
                                out.push(AgentMessage::notice(NoticeKind::NotDelivered, text));
                            }
                        }
                        UserInput::Answer { id, option, note } => {
                            if let Some(question) = questions.answered(&id, option.as_deref()) {
                                let reply = Reply { option: option.as_deref(), note: note.as_deref(), by: PermissionResolver::User };
                                answer(&mut turn, live, &mut mapping, &mut out, question, reply);
                            }
                        }
                    }
                    Step::Continue
                }
                _ = stop.requested(), if !stop.is_sent() => {
                    tracing::info!(agent = protocol.agent(), "stopping the turn in-band");
                    let in_band = turn.cancel(live);
                    stop.sent(if in_band { IN_BAND_CANCEL_GRACE } else { Duration::ZERO });
                    // After the cancel: the agent knows the turn is over when it reads these.
                    for question in questions.drain() {
                        let reply = Reply { option: None, note: None, by: PermissionResolver::User };
                        answer(&mut turn, live, &mut mapping, &mut out, question, reply);
                    }
                    Step::Continue
                }
            };
            match step {
                Step::Continue => {}
                Step::Ask(question) => {
                    // The request is on record (in `out`) before it is answered.
                    self.sink.flush(&mut out).await;
                    if let Decision::Answer {
                        question,
                        option,
                        by,
                    } = questions.asked(question, stop.is_sent(), &mut out)
                    {
                        let reply = Reply {
                            option: option.as_deref(),
                            note: None,
                            by,
                        };
                        answer(&mut turn, live, &mut mapping, &mut out, *question, reply);
                    }
                }
                Step::End(how) => ending = Some(how),
            }
            self.sink.flush(&mut out).await;
            if ending.is_some() {
                break TurnEnd::Answered;
            }
        };
        self.inbox.close();
        // What was handed over as the turn ended goes back to the user too.
        let mut late = Vec::new();
        while let Ok(input) = inputs.try_recv() {
            if let UserInput::Interject(_, text) = input {
                late.push(text);
            }
        }
        while let Ok(line) = live.process.stderr_lines.try_recv() {
            mapping.map_stderr_line(&line, &mut out);
        }
        let undelivered: Vec<String> = turn
            .undelivered(live, &mut out)
            .into_iter()
            .chain(late)
            .collect();
        for text in &undelivered {
            out.push(AgentMessage::notice(NoticeKind::NotDelivered, text.clone()));
        }
        let stopped = stop.is_sent();
        let answered = matches!(end, TurnEnd::Answered);
        let (report, ended_by, keep) = stop.outcome(end);
        if stopped && answered {
            let killed = live.process.kill_all_but(helpers).await;
            if killed > 0 {
                tracing::info!(
                    killed,
                    "killed the tool processes the stopped turn left running"
                );
            }
        }
        let stderr = live.process.stderr_text();
        let session_id = mapping.session_id().map(str::to_owned).or(announced);
        let backend = protocol.backend();
        let mut terminal = match ending {
            Some(Ending::Refused(message)) => AgentMessage::Failed(Failure {
                reason: FailureReason::AgentError,
                message,
                stderr,
                ..Failure::default()
            }),
            Some(Ending::Completed(stop_reason)) => AgentMessage::Completed {
                stop_reason,
                usage: None,
            },
            Some(Ending::Answered) | None => {
                let mut terminal = mapping.finish(&report, ended_by, stderr, &mut out);
                // The process died under it (a failure the agent reported is said as it is).
                if let (Work::Compact(_), AgentMessage::Failed(failure), false) =
                    (work, &mut terminal, answered)
                {
                    failure.message = format!(
                        "{} ended while compacting: {}",
                        backend.name(),
                        failure.message
                    );
                }
                terminal
            }
        };
        if request.session != SessionRef::New {
            mark_lost_session(&mut terminal, backend.lost_session_phrases());
        }
        self.sink.flush(&mut out).await;
        let settled = Settled {
            request,
            terminal: &terminal,
            answered_unstopped: answered && !stopped,
            stopped,
            undelivered: !undelivered.is_empty(),
        };
        let keep = keep && protocol.settle(turn, live, settled).await;
        if let (true, true, Some(id)) = (keep, backend.writes_session_after_turn(), session_id) {
            if let Ok(mut unwritten) = self.unwritten.lock() {
                *unwritten = Some(UnwrittenTurn::of_session(
                    backend.clone(),
                    id,
                    request.clone(),
                ));
            }
        }
        Played {
            terminal,
            keep,
            stop,
        }
    }
}

/// Answers `question` with `reply` and says how (`permission.resolved`, then what the mapper
/// makes of the answer written).
fn answer<T: Turn>(
    turn: &mut T,
    live: &mut Live<T::Session>,
    mapping: &mut AttemptMapping,
    out: &mut Vec<AgentMessage>,
    question: Question<T::Ticket>,
    reply: Reply<'_>,
) {
    let line = turn.answer(live, question.ticket, reply);
    out.push(AgentMessage::PermissionResolved {
        id: question.request.id,
        outcome: reply.option.unwrap_or(PERMISSION_CANCELLED).to_owned(),
        by: reply.by,
        message: reply.note.map(str::to_owned),
    });
    mapping.map_client_line(&line, out);
}

/// Starts `protocol`'s agent for `request`; `Err` is the attempt's terminal message. A stop
/// ends the start at any stage, before the agent answers anything too: what it spawned is
/// killed, and the attempt ends stopped.
pub(crate) async fn start<P: Protocol>(
    protocol: &P,
    request: &AttemptRequest,
    stop: &StopControl,
) -> Result<Live<P::Session>, AgentMessage> {
    let starting = Starting::default();
    let stopped_at = tokio::select! {
        biased;
        _ = stop.stop_token().cancelled() => Instant::now(),
        started = starting.run(protocol.start(request)) => match started {
            Ok(live) => return Ok(live),
            Err(unstarted) => return Err(unstarted_terminal(protocol, request, unstarted).await),
        },
    };
    tracing::info!(
        agent = protocol.agent(),
        "stopped while starting; killing it"
    );
    starting.kill_all().await;
    Err(AgentMessage::Cancelled {
        stop_stage: StopStage::Kill,
        elapsed_ms: stopped_at.elapsed().as_millis() as u64,
    })
}

/// The terminal message of a start that failed.
async fn unstarted_terminal<P: Protocol>(
    protocol: &P,
    request: &AttemptRequest,
    unstarted: Unstarted,
) -> AgentMessage {
    let mut terminal = did_not_start(protocol, unstarted).await;
    if request.session != SessionRef::New {
        mark_lost_session(&mut terminal, protocol.backend().lost_session_phrases());
    }
    terminal
}

/// The terminal message of a start that failed: the process ended (killed if it still runs),
/// its exit and stderr kept, the failure said in the agent's words where it gave any.
async fn did_not_start<P: Protocol>(protocol: &P, unstarted: Unstarted) -> AgentMessage {
    let Unstarted { process, why } = unstarted;
    let (report, stderr) = match process {
        Some(mut process) => {
            if process.exited.is_none() {
                process.process_stop.kill_now();
            }
            let report = process.wait_exit().await;
            (report, process.stderr_text())
        }
        None => (ExitReport::default(), String::new()),
    };
    let agent = protocol.agent();
    let (reason, message) = match why {
        StartFailure::Spawn(message) => (FailureReason::StartFailed, message),
        StartFailure::Refused(message) => (FailureReason::StartFailed, message),
        StartFailure::Lost(message) => (FailureReason::SessionLost, message),
        StartFailure::NoAnswer(no_reply, what) => {
            let why = match (stderr_headline(&stderr), no_reply) {
                (Some(said), _) => said,
                (None, NoReply::Exited) => {
                    format!("it ended without answering {what}{}", protocol.start_hint())
                }
                (None, NoReply::TimedOut) => format!(
                    "it did not answer {what} within {} s",
                    START_TIMEOUT.as_secs()
                ),
            };
            (
                FailureReason::StartFailed,
                format!("{agent} did not start: {why}"),
            )
        }
    };
    AgentMessage::Failed(Failure {
        reason,
        message,
        exit_code: report.exit_code,
        signal: report.signal,
        stderr,
        ..Failure::default()
    })
}

/// Ends a live process that cannot serve the next attempt and waits for it: whatever reaches
/// it from outside lets go, stdin closes, and the three-stage stop runs if it does not exit.
pub(crate) async fn close<P: Protocol>(protocol: &P, live: Live<P::Session>) {
    let Live {
        process,
        mut session,
        ..
    } = live;
    protocol.closing(&mut session);
    drop(session);
    process.close(protocol.exit_after_close()).await;
}
