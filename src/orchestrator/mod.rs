//! The orchestrator: turns, sessions, the prompt queue, and the retry policy.
//!
//! It is the only place that retries. `fsm` is a pure state machine (events in, effects out, no
//! IO, no clock); `driver` performs the effects (provider attempts, stop requests, retry timers)
//! on a background task and talks to the UI or the headless runner through the typed channels
//! below. `classify` decides which failures are worth a retry, `verdict` turns that and the
//! policy into the one judgement of each failure (reported as `FailureJudged`, which the chat only
//! renders); `headless` runs one turn for `agentty run` with the same policy.
//!
//! Behaviour the UI can rely on:
//! - Each `Submit` is a turn (`TurnStarted`); each attempt is exactly one provider call
//!   (`AttemptStarted`), its messages arrive as `Message` tagged with turn and attempt, the last
//!   one terminal. A failed attempt's partial output stays; the next attempt's follows it.
//! - `Stop` stops the running attempt (repeated: kill) or cancels a pending retry; the turn then
//!   ends `Cancelled` and the queue goes on. After a `Failed` turn the queue pauses (still shown)
//!   until the next `Submit` (appended; the queue resumes from its head) or `RetryLastTurn`.
//! - `RetryLastTurn` after a failed or cancelled turn starts a new turn with the same prompt in
//!   the same session; during a retry countdown it retries at once.
//! - `SetRetryPolicy` with an invalid policy (see `RetryPolicy::validate`) is ignored; saving the
//!   policy is the caller's job (`config::save_setting`).

pub(crate) mod classify;
pub(crate) mod driver;
pub(crate) mod fsm;
pub(crate) mod headless;
pub mod verdict;

use crate::config::RetryPolicy;
use crate::provider::{AgentQueue, AgentStatus};
use crate::provider::{AgentSetting, Interjection, StopProgress};
use crate::stream::AgentMessage;
use std::borrow::Cow;

pub use driver::{spawn_orchestrator, OrchestratorHandle, OrchestratorOptions};
pub use headless::run_headless_turn;

/// Identifies a turn (one user prompt) within a conversation.
pub(crate) type TurnId = u64;

/// Where an orchestrator's events and its agents' raw stdout lines are recorded (the session
/// log implements it; the orchestrator knows nothing of files).
pub trait Recorder: Send + Sync {
    fn record_event(&self, event: &OrchestratorEvent);
    /// A sink for one attempt's raw lines (`None`: they are not kept).
    fn raw_line_tap(&self, turn: TurnId, attempt: u32) -> Option<crate::provider::RawLineTap>;
}

/// A `/rewind` asked for: back to before turn `turn`, the agent's conversation (its stored
/// session as it was then, so later prompts no longer reach the model), the files (as they
/// were before it), or both. With `undone`, the undo of that rewind: what it took back comes
/// back. A file changed since (the last turn, or the rewind) is left alone and reported unless
/// `overwrite`, and then nothing is rewound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RewindAsked {
    pub turn: TurnId,
    pub conversation: bool,
    pub files: bool,
    pub overwrite: bool,
    pub undone: bool,
}

/// What the UI (or the headless runner) asks the orchestrator to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// A user prompt: starts a turn, or is queued while one runs.
    Submit(String),
    /// A user prompt with images: starts a turn whose every attempt sends them. Only while no
    /// turn runs and nothing is queued (the chat keeps such a prompt in the composer until
    /// then); otherwise it is refused with a notice.
    SubmitWithImages(String, Vec<crate::attachment::ImageAttachment>),
    /// Stop the running turn (three-stage stop), or cancel a pending retry. Repeated: kill.
    Stop,
    /// Re-send the last failed or cancelled turn's prompt in the same session.
    RetryLastTurn,
    /// Forget the agent session: the next turn starts a new one.
    NewSession,
    /// Remove the queued prompt at this index.
    RemoveQueued(usize),
    /// Replace the queued prompt at this index.
    EditQueued(usize, String),
    /// Use this retry policy from now on.
    SetRetryPolicy(RetryPolicy),
    /// A message for the running turn: steer it (after the current tool call) or follow up
    /// (after the turn), when the provider can; otherwise (or with no turn running) it is a
    /// `Submit`.
    Interject(Interjection, String),
    /// The user's answer to the running turn's permission request `id`: one of the options
    /// it offered (`None`: cancelled, as when the prompt is dismissed by a stop), and with a
    /// rejection what to do instead (`message`): sent with it where the transport can, else as
    /// the next prompt.
    AnswerPermission {
        id: String,
        option: Option<String>,
        message: Option<String>,
    },
    /// Change a setting of the agent (its model, its thinking level): for the rest of the
    /// conversation, from the agent's next request on.
    ChangeSetting(AgentSetting),
    /// Put back the files turn `turn` changed, as they were before it (only while no turn
    /// runs). A file changed since the turn is left alone and reported, unless `overwrite`.
    UndoTurn { turn: TurnId, overwrite: bool },
    /// Go back to before a turn, or undo that rewind (only while no turn runs); see
    /// [`RewindAsked`].
    Rewind(RewindAsked),
    /// Finish (`finish`) or roll back the restore a crash interrupted (`RestoresInterrupted`),
    /// unless a turn runs.
    ResolveRestore { id: String, finish: bool },
    /// Compact the agent's conversation (`/compact`, with what the summary should keep), as a
    /// turn of its own when no turn runs and the provider can; else `CompactionRefused`.
    Compact(Option<String>),
    /// Stop whatever runs and end the orchestrator.
    Shutdown,
}

impl OrchestratorEvent {
    /// The shared-stream message this event is, with its turn and the attempt it belongs to, as
    /// `agentty run` prints it and session logs keep it: an attempt's own messages; between
    /// attempts the orchestrator's `retry.scheduled` (after attempt N-1); its notices (attempt
    /// 0: the turn's). `None` for the events the stream has no message for.
    pub(crate) fn as_stream_message(&self) -> Option<(TurnId, u32, Cow<'_, AgentMessage>)> {
        match self {
            OrchestratorEvent::Message {
                turn,
                attempt,
                message,
            } => Some((*turn, *attempt, Cow::Borrowed(message))),
            OrchestratorEvent::RetryScheduled {
                turn,
                attempt,
                max_attempts,
                delay_ms,
                reason,
            } => Some((
                *turn,
                attempt.saturating_sub(1),
                Cow::Owned(AgentMessage::RetryScheduled {
                    attempt: *attempt,
                    max_attempts: *max_attempts,
                    delay_ms: *delay_ms,
                    reason: reason.clone(),
                }),
            )),
            OrchestratorEvent::Notice {
                turn,
                kind,
                message,
            } => Some((
                *turn,
                0,
                Cow::Owned(AgentMessage::Notice {
                    kind: kind.clone(),
                    message: message.clone(),
                }),
            )),
            OrchestratorEvent::TurnChanges { turn, files } => Some((
                *turn,
                0,
                Cow::Owned(AgentMessage::TurnChanges {
                    files: files.clone(),
                }),
            )),
            OrchestratorEvent::Undone { turn, outcome } => Some((
                *turn,
                0,
                Cow::Owned(AgentMessage::Notice {
                    kind: crate::stream::NoticeKind::Undo,
                    message: crate::snapshot::describe_undo(outcome),
                }),
            )),
            OrchestratorEvent::Rewound(rewind) => Some((
                rewind.turn,
                0,
                Cow::Owned(AgentMessage::Notice {
                    kind: crate::stream::NoticeKind::Rewind,
                    message: rewind.describe(),
                }),
            )),
            OrchestratorEvent::RestoresInterrupted(found) => Some((
                0,
                0,
                Cow::Owned(AgentMessage::Notice {
                    kind: crate::stream::NoticeKind::Snapshot,
                    message: found
                        .iter()
                        .map(crate::snapshot::InterruptedRestore::describe)
                        .collect::<Vec<_>>()
                        .join(" "),
                }),
            )),
            OrchestratorEvent::RestoreResolved {
                finish, outcome, ..
            } => Some((
                0,
                0,
                Cow::Owned(AgentMessage::Notice {
                    kind: crate::stream::NoticeKind::Undo,
                    message: describe_resolved(*finish, outcome),
                }),
            )),
            OrchestratorEvent::TurnStarted { .. }
            | OrchestratorEvent::SnapshotBusy(_)
            | OrchestratorEvent::ImagesAttached { .. }
            | OrchestratorEvent::AttemptStarted { .. }
            | OrchestratorEvent::TurnCheckpointed { .. }
            | OrchestratorEvent::StopProgress { .. }
            | OrchestratorEvent::FailureJudged { .. }
            | OrchestratorEvent::RetryCancelled { .. }
            | OrchestratorEvent::TurnEnded { .. }
            | OrchestratorEvent::QueueChanged { .. }
            | OrchestratorEvent::SessionChanged { .. }
            | OrchestratorEvent::AgentQueueChanged(_)
            | OrchestratorEvent::AgentStatusChanged(_)
            | OrchestratorEvent::SettingChosen(_)
            | OrchestratorEvent::CompactionStarted { .. }
            | OrchestratorEvent::CompactionRefused { .. }
            | OrchestratorEvent::ShutDown => None,
        }
    }
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TurnOutcome {
    Completed,
    Failed {
        reason: crate::stream::FailureReason,
        message: String,
    },
    Cancelled,
}

/// agentty's exit statuses, the chat's and `agentty run`'s (DESIGN.md's command-line contract):
/// the one place they are written.
pub mod exit_status {
    /// The turn completed; the chat was left normally.
    pub const COMPLETED: i32 = 0;
    /// The turn failed, or agentty could not run (no runtime, no terminal).
    pub(crate) const FAILED: i32 = 1;
    /// A usage error: a bad flag, config, provider or scenario, said in one line on stderr.
    pub const USAGE: i32 = 2;
    /// The turn was cancelled (Ctrl+C, SIGINT): 128 + SIGINT, as shells report it.
    pub(crate) const CANCELLED: i32 = 130;
    /// `agentty run`'s reader closed stdout (`| head -2`): the agent was stopped and agentty
    /// exits as a program killed by SIGPIPE does (128 + 13), like `cat`, `grep` or `git log`
    /// in the same pipe, so that `set -o pipefail` scripts treat it like every other tool,
    /// and never as a completed (0) or cancelled (130) turn.
    pub(crate) const OUTPUT_CLOSED: i32 = 128 + 13;

    /// Leaving because of `signal` (SIGTERM, SIGHUP, ...): 128 + its number, as shells report
    /// a process the signal ended.
    pub(crate) fn for_signal(number: i32) -> i32 {
        128 + number
    }
}

impl TurnOutcome {
    /// `agentty run`'s exit status for a turn that ended this way.
    pub fn exit_status(&self) -> i32 {
        match self {
            TurnOutcome::Completed => exit_status::COMPLETED,
            TurnOutcome::Failed { .. } => exit_status::FAILED,
            TurnOutcome::Cancelled => exit_status::CANCELLED,
        }
    }
}

/// What the orchestrator tells the UI. Agent messages arrive tagged with their turn and attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum OrchestratorEvent {
    TurnStarted {
        turn: TurnId,
        prompt: String,
    },
    /// The images turn `turn`'s prompt carries (right after its `TurnStarted`): what the
    /// session log keeps of them.
    ImagesAttached {
        turn: TurnId,
        images: Vec<crate::attachment::ImageRecord>,
    },
    AttemptStarted {
        turn: TurnId,
        attempt: u32,
        max_attempts: u32,
    },
    /// Whether `/rewind` can take the agent's conversation back to before turn `turn` (the
    /// agent's session was kept as it was before it), and why not; said when the turn's first
    /// attempt starts, so the rewind picker can say it before anything is chosen.
    TurnCheckpointed {
        turn: TurnId,
        conversation_rewind: Result<(), String>,
    },
    /// One message of the current attempt's shared stream (terminal messages included).
    Message {
        turn: TurnId,
        attempt: u32,
        message: AgentMessage,
    },
    /// Progress of a stop the user asked for.
    StopProgress {
        turn: TurnId,
        progress: StopProgress,
    },
    /// What the orchestrator decided about attempt `attempt`, which just failed (right after
    /// its `terminal.failed` message, before the retry, fresh session or turn end it leads to).
    /// The UI renders it; it is not part of the shared stream (`retry.scheduled` and the turn's
    /// end carry what follows).
    FailureJudged {
        turn: TurnId,
        attempt: u32,
        verdict: verdict::FailureVerdict,
    },
    /// The next attempt starts after `delay_ms`, unless the user stops it.
    RetryScheduled {
        turn: TurnId,
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        reason: String,
    },
    RetryCancelled {
        turn: TurnId,
    },
    TurnEnded {
        turn: TurnId,
        outcome: TurnOutcome,
    },
    /// The prompts waiting for the running turn to end.
    QueueChanged {
        queued: Vec<String>,
    },
    /// The agent session the next turn continues (`None`: a new one).
    SessionChanged {
        session_id: Option<String>,
    },
    /// The agent's own queue of steering and follow-up messages (long-lived transports).
    AgentQueueChanged(AgentQueue),
    /// The agent's model, mode and thinking level and what it offers (long-lived transports).
    AgentStatusChanged(AgentStatus),
    /// The agent took a setting the user chose: the conversation keeps it (its log holds it,
    /// and a resume sets it again).
    SettingChosen(AgentSetting),
    /// Something the orchestrator did that the user should know (`kind` as in `notice`).
    Notice {
        turn: TurnId,
        kind: crate::stream::NoticeKind,
        message: String,
    },
    /// What the turn changed in the working tree (only after a turn that changed files),
    /// shortly after its `TurnEnded` (the next turn starts, and the orchestrator shuts down,
    /// only after it).
    TurnChanges {
        turn: TurnId,
        files: Vec<crate::stream::FileChange>,
    },
    /// What an `UndoTurn` did, or why it could not.
    Undone {
        turn: TurnId,
        outcome: Result<crate::snapshot::UndoOutcome, String>,
    },
    /// What a `Rewind` did.
    Rewound(Rewind),
    /// A compaction of the agent's conversation began (`Compact`): a turn like a prompt's
    /// (attempt, messages, stop, end), with no prompt; its result is a `compacted` notice.
    CompactionStarted {
        turn: TurnId,
        instructions: Option<String>,
    },
    /// `Compact` could not start; the message says why (nothing was sent to the agent).
    CompactionRefused {
        message: String,
    },
    /// What the snapshot thread is busy with that the UI must not call idle (`None`: nothing).
    SnapshotBusy(Option<SnapshotBusy>),
    /// Restores (`/undo`, `/rewind`) a crash interrupted in this tree: each to be finished or
    /// rolled back (`Command::ResolveRestore`).
    RestoresInterrupted(Vec<crate::snapshot::InterruptedRestore>),
    /// What `ResolveRestore` did.
    RestoreResolved {
        id: String,
        finish: bool,
        outcome: Result<crate::snapshot::UndoOutcome, String>,
    },
    /// The orchestrator has stopped (after `Shutdown`); nothing follows.
    ShutDown,
}

/// What a snapshot the UI waits on is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotBusy {
    /// The tree as the conversation opens (the first request waits for it).
    Baseline,
    /// The tree after turn `turn` (its summary follows).
    TurnEnd { turn: TurnId },
}

/// What finishing (or rolling back) an interrupted restore did, in a sentence.
pub fn describe_resolved(
    finish: bool,
    outcome: &Result<crate::snapshot::UndoOutcome, String>,
) -> String {
    let done = crate::snapshot::describe_undo(outcome);
    if finish {
        format!("Interrupted restore finished. {done}")
    } else {
        format!(
            "Interrupted restore rolled back. {}",
            done.replace("put back", "returned as the turn left")
        )
    }
}

/// What a rewind to before turn `turn` did (logged as it is: `--resume` replays it).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rewind {
    pub(crate) turn: TurnId,
    /// The agent's conversation: `None` not asked; `Ok` rewound; `Err` why not.
    pub conversation: Option<Result<(), String>>,
    /// The files: `None` not asked.
    pub(crate) files: Option<Result<crate::snapshot::UndoOutcome, String>>,
    /// This undid the rewind to before `turn` (what it took back came back).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) undone: bool,
}

impl Rewind {
    /// Files changed since the last turn stopped it: nothing was rewound, the user decides.
    pub(crate) fn stopped_by_conflicts(&self) -> Option<&[String]> {
        match &self.files {
            Some(Ok(outcome))
                if outcome.stopped_by_conflicts()
                    && self.conversation.as_ref().is_none_or(|done| done.is_err()) =>
            {
                Some(&outcome.conflicts)
            }
            _ => None,
        }
    }

    /// What it did, in a sentence for the log (which numbers turns).
    pub fn describe(&self) -> String {
        self.describe_at(&format!("turn {}", self.turn))
    }

    /// What it did, in a sentence, the point it went back to called `point` ("prompt 3": the
    /// chat numbers the prompts the user sent, not the turns, which count every retry).
    pub fn describe_at(&self, point: &str) -> String {
        let mut parts = vec![if self.undone {
            format!("Undid the rewind to before {point}")
        } else {
            format!("Rewound to before {point}")
        }];
        match (&self.conversation, self.undone) {
            (Some(Ok(())), false) => parts.push(
                "the agent's conversation is as it was then (later prompts no longer reach it)"
                    .to_owned(),
            ),
            (Some(Ok(())), true) => parts
                .push("the agent's conversation is back as it was before the rewind".to_owned()),
            (Some(Err(why)), _) => {
                parts.push(format!("the agent's conversation could not be: {why}"))
            }
            (None, _) => {}
        }
        match &self.files {
            Some(Ok(outcome))
                if !outcome.changed_anything()
                    && outcome.conflicts.is_empty()
                    && outcome.failed.is_empty() =>
            {
                parts.push(if self.undone {
                    "the files were already as before the rewind".to_owned()
                } else {
                    "the files were already as they were then".to_owned()
                })
            }
            Some(outcome) => {
                let files = crate::snapshot::describe_undo(outcome)
                    .trim_end_matches('.')
                    .replace("Undone: ", "");
                // Undoing a rewind removes what the turns taken back had deleted.
                let files = if self.undone {
                    files.replace(
                        "(created by the turn)",
                        "(deleted by the turns brought back)",
                    )
                } else {
                    files
                };
                parts.push(format!("files: {files}"))
            }
            None => {}
        }
        format!("{}.", parts.join("; "))
    }
}
