//! Session logs: one file per agentty conversation, `<state dir>/sessions/<start>-<id8>.jsonl`,
//! holding every shared message of every attempt as JSON lines; the agent's raw stdout lines go
//! to a compressed sidecar next to it (`session_log::raw`).
//!
//! A conversation's log is created when its first prompt is sent (a launch that sends nothing
//! leaves nothing behind), and every later launch that resumes the conversation appends to the
//! same file, so the log is the whole conversation. Writing happens on a thread of its own, so
//! neither the UI nor an attempt ever waits on the disk; the log is flushed whenever the writer's
//! queue runs dry (text deltas that arrive together are joined into one entry and wait up to
//! 100 ms for more), so a crash loses at most the lines in flight and that moment of text.
//! `agentty --resume` reads it back.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::orchestrator::{OrchestratorEvent, TurnId, TurnOutcome};
use crate::provider::AgentSetting;
pub(crate) mod failure;
pub(crate) mod lock;
pub mod raw;
mod read;
/// A conversation id's short form, as the chat names it (the whole id is in the log).
pub(crate) fn short_conversation_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

#[cfg(test)]
mod read_fuzz;
pub(crate) mod torn;

#[cfg(test)]
pub(crate) use read::{last_session_id, tests_summary};
pub use read::{
    latest_session_log, list_conversations, read_session_log, read_summary, ConversationSummary,
};
pub(crate) use read::{parse_header, LogLine, LogLines, MAX_HEADER_LINE, MAX_LOG_LINE};

use crate::stream::{AgentMessage, FailureReason};
use failure::{FailureReport, FailureSink, LogPart};
use lock::ConversationLock;
use raw::RawLineWriter;

/// The log format written now: 2 added conversation ids, origins, timestamps and structured
/// turn outcomes (version 1 logs are still read).
const LOG_VERSION: u32 = 2;

/// Who started a conversation: the chat's `--resume` only picks up the chat's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    #[default]
    Chat,
    Headless,
}

/// What a log's first line says of its conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogHeader {
    pub version: u32,
    pub provider: String,
    pub started_at_ms: u64,
    pub cwd: String,
    /// The conversation's id (version 1 logs have none: their file stem serves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    #[serde(default)]
    pub origin: Origin,
    /// How agentty talked to the agent: `--resume` goes on over it unless the command line
    /// names another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<crate::config::Transport>,
    /// The settings the conversation started with (its provider's config and the command
    /// line: model, mode); `--resume` sets them again, with those chosen later (`Setting`)
    /// over them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<AgentSetting>,
}

/// One line of a session log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LogEntry {
    /// The first line.
    Header(LogHeader),
    Turn {
        turn: TurnId,
        prompt: String,
        /// Wall-clock time, so that a resumed transcript shows the durations it had.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<u64>,
    },
    /// The images turn `turn`'s prompt carried: path, type, size and hash, never the bytes.
    Images {
        turn: TurnId,
        images: Vec<crate::attachment::ImageRecord>,
    },
    Message {
        turn: TurnId,
        attempt: u32,
        message: AgentMessage,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<u64>,
    },
    /// A raw stdout line of the agent, as it printed it.
    Raw {
        turn: TurnId,
        attempt: u32,
        line: String,
    },
    TurnEnded {
        turn: TurnId,
        outcome: LoggedOutcome,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<u64>,
    },
    /// The agent session the next turn continues.
    Session { session_id: Option<String> },
    /// A compaction of the agent's conversation (`/compact`) began as turn `turn`: its
    /// messages and end follow as a prompt's do (replayed by `--resume` without a prompt).
    Compaction {
        turn: TurnId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instructions: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<u64>,
    },
    /// `/undo` of turn `turn`: what it put back (replayed by `--resume`, so a turn undone is
    /// not offered again).
    Undone {
        turn: TurnId,
        outcome: Result<crate::snapshot::UndoOutcome, String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<u64>,
    },
    /// `/rewind` to before turn `turn`: what went back (replayed by `--resume`: the prompts
    /// taken back are marked and no longer offered).
    Rewound {
        #[serde(flatten)]
        rewind: crate::orchestrator::Rewind,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<u64>,
    },
    /// Whether the agent's conversation can be rewound to before turn `turn` (replayed by
    /// `--resume`, so the rewind picker says it for earlier runs' turns too).
    TurnCheckpointed {
        turn: TurnId,
        conversation_rewind: Result<(), String>,
    },
    /// A setting the user chose (model, mode, thinking level), set again on resume.
    Setting {
        #[serde(flatten)]
        setting: AgentSetting,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<u64>,
    },
}

/// A turn's outcome as logged: structured since version 2, a string (`completed`, `cancelled`,
/// `failed: REASON`) before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LoggedOutcome {
    Outcome(TurnOutcome),
    Legacy(String),
}

impl LoggedOutcome {
    pub(crate) fn outcome(&self) -> TurnOutcome {
        match self {
            LoggedOutcome::Outcome(outcome) => outcome.clone(),
            LoggedOutcome::Legacy(text) => match text.as_str() {
                "completed" => TurnOutcome::Completed,
                "cancelled" => TurnOutcome::Cancelled,
                failed => TurnOutcome::Failed {
                    reason: serde_json::from_value(serde_json::Value::String(
                        failed.strip_prefix("failed: ").unwrap_or(failed).to_owned(),
                    ))
                    .unwrap_or(FailureReason::Other),
                    message: String::new(),
                },
            },
        }
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis() as u64)
        .unwrap_or(0)
}

/// What a new conversation's log starts with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NewConversation {
    pub(crate) provider: String,
    pub(crate) cwd: PathBuf,
    pub(crate) origin: Origin,
    pub(crate) start: ConversationStart,
}

/// How a conversation started talking to its agent, which `--resume` restores.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ConversationStart {
    pub(crate) transport: Option<crate::config::Transport>,
    /// The model and mode it started with (config and command line).
    pub(crate) settings: Vec<AgentSetting>,
}

enum WriterCommand {
    Entry(Box<LogEntry>),
    /// A raw agent line for the sidecar, with the share of the raw-line budget it holds until
    /// it is written.
    Raw {
        turn: TurnId,
        attempt: u32,
        line: String,
        _permit: OwnedSemaphorePermit,
    },
    Flush,
    /// Write what is queued before this, flush, and end (raw-line taps may outlive the writer).
    Close,
}

/// Bytes of raw agent lines that may wait for the writer thread: the queue is bounded, and the
/// attempt waits for the writer instead of memory growing. (Only lines shorter than
/// [`INLINE_RAW_FROM`] are queued; a long line takes the whole budget, so that it is written
/// after every queued one.)
const RAW_LINE_BUDGET: usize = 256 * 1024;

/// Appends entries to one session log on a background thread.
pub(crate) struct SessionLogWriter {
    path: PathBuf,
    conversation_id: String,
    commands: Option<mpsc::Sender<WriterCommand>>,
    raw_budget: Arc<Semaphore>,
    /// The sidecar's writer, shared: the writer thread writes the queued lines, the reading
    /// task itself the large ones (see [`INLINE_RAW_FROM`]).
    raw: SharedRawWriter,
    failures: Arc<FailureReport>,
    thread: Option<JoinHandle<()>>,
}

type SharedRawWriter = Arc<std::sync::Mutex<RawLineWriter>>;

/// Raw lines at least this long are compressed by the task that read them, once every queued
/// line is written, instead of being copied to the writer thread: two copies of a long line
/// (the reader's and the queued one) would be the largest memory of a headless run, while
/// compressing on the reading task costs little (zstd level 1 finds a snapshot again at
/// several GB/s).
const INLINE_RAW_FROM: usize = 16 * 1024;

/// Where session logs live.
pub(crate) fn sessions_dir() -> PathBuf {
    crate::logging::state_dir().join("sessions")
}

impl SessionLogWriter {
    /// A new conversation's log in `dir`. Nothing is written until its first prompt is.
    pub(crate) fn start(dir: &Path, conversation: NewConversation) -> std::io::Result<Self> {
        let started_at_ms = now_ms();
        let id = uuid::Uuid::new_v4().hyphenated().to_string();
        let path = dir.join(format!("{started_at_ms:015}-{}.jsonl", &id[..8]));
        let header = LogEntry::Header(LogHeader {
            version: LOG_VERSION,
            provider: conversation.provider,
            started_at_ms,
            cwd: conversation.cwd.display().to_string(),
            conversation_id: Some(id.clone()),
            origin: conversation.origin,
            transport: conversation.start.transport,
            settings: conversation.start.settings,
        });
        Self::spawn(
            path,
            id,
            LazyLog::New {
                header: Box::new(header),
            },
            None,
        )
    }

    /// Goes on writing the log of a conversation that is being resumed (appending to it),
    /// holding its lock (`None`: the lock could not be taken for a reason other than another
    /// writer, which was logged).
    pub(crate) fn resume(
        path: &Path,
        conversation_id: &str,
        lock: Option<ConversationLock>,
    ) -> std::io::Result<Self> {
        Self::spawn(
            path.to_path_buf(),
            conversation_id.to_owned(),
            LazyLog::Existing,
            lock,
        )
    }

    fn spawn(
        path: PathBuf,
        conversation_id: String,
        log: LazyLog,
        lock: Option<ConversationLock>,
    ) -> std::io::Result<Self> {
        let (commands, receiver) = mpsc::channel::<WriterCommand>();
        let target = LogFile {
            path: path.clone(),
            lazy: Some(log),
            lock,
            file: None,
            before_first_turn: Vec::new(),
            failed: false,
            pending: None,
        };
        let raw = Arc::new(std::sync::Mutex::new(RawLineWriter::new(&path)));
        let failures = Arc::new(FailureReport::new(&conversation_id));
        let thread = std::thread::Builder::new()
            .name("session-log".into())
            .spawn({
                let raw = raw.clone();
                let failures = failures.clone();
                move || write_loop(target, raw, &failures, receiver)
            })?;
        Ok(Self {
            path,
            conversation_id,
            commands: Some(commands),
            raw_budget: Arc::new(Semaphore::new(RAW_LINE_BUDGET)),
            raw,
            failures,
            thread: Some(thread),
        })
    }

    /// Where the first failure to write each part of the log is told (see `failure`).
    pub(crate) fn report_failures_to(self, sink: FailureSink) -> Self {
        self.failures.set_sink(sink);
        self
    }

    pub(crate) fn conversation_id(&self) -> &str {
        &self.conversation_id
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn append(&self, entry: LogEntry) {
        if let Some(commands) = &self.commands {
            let _ = commands.send(WriterCommand::Entry(Box::new(entry)));
        }
    }

    /// Asks for a flush (does not wait for it).
    pub(crate) fn flush(&self) {
        if let Some(commands) = &self.commands {
            let _ = commands.send(WriterCommand::Flush);
        }
    }

    /// Records what the orchestrator reported; flushes at turn ends.
    pub(crate) fn record_event(&self, event: &OrchestratorEvent) {
        match event {
            OrchestratorEvent::TurnStarted { turn, prompt } => self.append(LogEntry::Turn {
                turn: *turn,
                prompt: prompt.clone(),
                at_ms: Some(now_ms()),
            }),
            OrchestratorEvent::Message { .. }
            | OrchestratorEvent::RetryScheduled { .. }
            | OrchestratorEvent::Notice { .. }
            | OrchestratorEvent::RestoresInterrupted(_)
            | OrchestratorEvent::RestoreResolved { .. }
            | OrchestratorEvent::TurnChanges { .. } => {
                if let Some((turn, attempt, message)) = event.as_stream_message() {
                    self.append(LogEntry::Message {
                        turn,
                        attempt,
                        message: message.into_owned(),
                        at_ms: Some(now_ms()),
                    });
                }
            }
            OrchestratorEvent::TurnEnded { turn, outcome } => {
                self.append(LogEntry::TurnEnded {
                    turn: *turn,
                    outcome: LoggedOutcome::Outcome(outcome.clone()),
                    at_ms: Some(now_ms()),
                });
                self.flush();
            }
            OrchestratorEvent::ImagesAttached { turn, images } => self.append(LogEntry::Images {
                turn: *turn,
                images: images.clone(),
            }),
            OrchestratorEvent::Undone { turn, outcome } => self.append(LogEntry::Undone {
                turn: *turn,
                outcome: outcome.clone(),
                at_ms: Some(now_ms()),
            }),
            OrchestratorEvent::TurnCheckpointed {
                turn,
                conversation_rewind,
            } => self.append(LogEntry::TurnCheckpointed {
                turn: *turn,
                conversation_rewind: conversation_rewind.clone(),
            }),
            OrchestratorEvent::Rewound(rewind) => self.append(LogEntry::Rewound {
                rewind: rewind.clone(),
                at_ms: Some(now_ms()),
            }),
            OrchestratorEvent::SessionChanged { session_id } => self.append(LogEntry::Session {
                session_id: session_id.clone(),
            }),
            OrchestratorEvent::SettingChosen(setting) => self.append(LogEntry::Setting {
                setting: setting.clone(),
                at_ms: Some(now_ms()),
            }),
            OrchestratorEvent::CompactionStarted { turn, instructions } => {
                self.append(LogEntry::Compaction {
                    turn: *turn,
                    instructions: instructions.clone(),
                    at_ms: Some(now_ms()),
                })
            }
            OrchestratorEvent::ShutDown => self.flush(),
            OrchestratorEvent::AttemptStarted { .. }
            | OrchestratorEvent::StopProgress { .. }
            | OrchestratorEvent::FailureJudged { .. }
            | OrchestratorEvent::RetryCancelled { .. }
            | OrchestratorEvent::QueueChanged { .. }
            | OrchestratorEvent::AgentQueueChanged(_)
            | OrchestratorEvent::AgentStatusChanged(_)
            | OrchestratorEvent::SnapshotBusy(_)
            | OrchestratorEvent::CompactionRefused { .. } => {}
        }
    }

    /// A tap for one attempt's raw lines, to put in `AttemptRequest::raw_line_tap`.
    pub(crate) fn raw_line_tap(
        &self,
        turn: TurnId,
        attempt: u32,
    ) -> Option<crate::provider::RawLineTap> {
        let commands = self.commands.clone()?;
        let budget = self.raw_budget.clone();
        let raw = self.raw.clone();
        let failures = self.failures.clone();
        Some(crate::provider::RawLineTap::new(move |line: &str| {
            let commands = commands.clone();
            let budget = budget.clone();
            let raw = raw.clone();
            let failures = failures.clone();
            Box::pin(async move {
                if line.len() >= INLINE_RAW_FROM {
                    // The whole budget: every queued line is written first, in order.
                    let Ok(_all) = budget.acquire_many(RAW_LINE_BUDGET as u32).await else {
                        return;
                    };
                    write_raw_inline(&raw, &failures, turn, attempt, line);
                    return;
                }
                let share = line.len().max(1) as u32;
                let Ok(permit) = budget.clone().acquire_many_owned(share).await else {
                    return;
                };
                let _ = commands.send(WriterCommand::Raw {
                    turn,
                    attempt,
                    line: line.to_owned(),
                    _permit: permit,
                });
            })
        }))
    }
}

impl crate::orchestrator::Recorder for SessionLogWriter {
    fn record_event(&self, event: &OrchestratorEvent) {
        SessionLogWriter::record_event(self, event);
    }

    fn raw_line_tap(&self, turn: TurnId, attempt: u32) -> Option<crate::provider::RawLineTap> {
        SessionLogWriter::raw_line_tap(self, turn, attempt)
    }
}

impl Drop for SessionLogWriter {
    fn drop(&mut self) {
        if let Some(commands) = self.commands.take() {
            let _ = commands.send(WriterCommand::Close);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How the log file comes into being at the first prompt.
enum LazyLog {
    /// Create it, header first (and take its lock).
    New { header: Box<LogEntry> },
    /// Append to it (its lock taken by whoever resumed it).
    Existing,
}

/// The log file, opened when the first turn is recorded.
struct LogFile {
    path: PathBuf,
    lazy: Option<LazyLog>,
    /// The conversation's lock, held for as long as the log is written.
    lock: Option<ConversationLock>,
    file: Option<BufWriter<File>>,
    /// Entries recorded before the first prompt (the session to continue, ...).
    before_first_turn: Vec<LogEntry>,
    /// A write failed: the log is given up (appending after a failure would leave a torn
    /// line in the middle of the log).
    failed: bool,
    /// Text deltas not written yet, joined (see [`Coalesced`]).
    pending: Option<Coalesced>,
}

/// Consecutive text deltas of one attempt, written as one entry: an agent that streams one
/// character per event would otherwise log a hundred bytes of entry per byte of text. They
/// are held at most [`COALESCE_FOR`] after the queue runs dry, or up to [`COALESCE_BYTES`]:
/// what a crash can lose.
struct Coalesced {
    turn: TurnId,
    attempt: u32,
    thinking: bool,
    text: String,
    at_ms: Option<u64>,
}

/// How long joined deltas wait for more once nothing else is queued.
const COALESCE_FOR: std::time::Duration = std::time::Duration::from_millis(100);
/// The most text joined into one entry.
const COALESCE_BYTES: usize = 64 * 1024;

impl Coalesced {
    /// The delta an entry holds, if it is one that joins.
    fn delta_of(entry: &LogEntry) -> Option<(TurnId, u32, bool, &str, Option<u64>)> {
        match entry {
            LogEntry::Message {
                turn,
                attempt,
                message: AgentMessage::Assistant { delta },
                at_ms,
            } => Some((*turn, *attempt, false, delta, *at_ms)),
            LogEntry::Message {
                turn,
                attempt,
                message: AgentMessage::Thinking { delta },
                at_ms,
            } => Some((*turn, *attempt, true, delta, *at_ms)),
            _ => None,
        }
    }

    fn into_entry(self) -> LogEntry {
        let message = if self.thinking {
            AgentMessage::Thinking { delta: self.text }
        } else {
            AgentMessage::Assistant { delta: self.text }
        };
        LogEntry::Message {
            turn: self.turn,
            attempt: self.attempt,
            message,
            at_ms: self.at_ms,
        }
    }
}

impl LogFile {
    /// Records `entry`: a text delta joins the deltas before it (written later, see
    /// [`Coalesced`]), anything else is written after them.
    fn record(&mut self, entry: &LogEntry) -> std::io::Result<()> {
        if let Some((turn, attempt, thinking, delta, at_ms)) = Coalesced::delta_of(entry) {
            let joins = self.pending.as_ref().is_some_and(|pending| {
                (pending.turn, pending.attempt, pending.thinking) == (turn, attempt, thinking)
            });
            if !joins {
                self.write_pending()?;
            }
            let pending = self.pending.get_or_insert_with(|| Coalesced {
                turn,
                attempt,
                thinking,
                text: String::new(),
                at_ms,
            });
            pending.text.push_str(delta);
            if pending.text.len() >= COALESCE_BYTES {
                self.write_pending()?;
            }
            return Ok(());
        }
        self.write_pending()?;
        self.write(entry)
    }

    fn has_pending(&self) -> bool {
        self.pending.is_some()
    }

    fn write_pending(&mut self) -> std::io::Result<()> {
        match self.pending.take() {
            Some(pending) => self.write(&pending.into_entry()),
            None => Ok(()),
        }
    }

    /// Writes `entry`; the first failure is returned, after which nothing more is written.
    fn write(&mut self, entry: &LogEntry) -> std::io::Result<()> {
        if self.failed {
            return Ok(());
        }
        if self.file.is_none() {
            if !self.opened_by(entry) {
                self.before_first_turn.push(entry.clone());
                return Ok(());
            }
            let opened = self.open();
            self.give_up_on(opened)?;
        }
        let written = match self.file.as_mut() {
            Some(file) => write_entry(file, entry),
            None => Ok(()),
        };
        self.give_up_on(written)
    }

    /// Whether `entry` is what opens the log: a prompt's turn or a compaction (a new
    /// conversation's log appears with its first prompt); in a resumed conversation also what
    /// the user did to it before any prompt (an undo, a rewind, a setting chosen), which must
    /// hold when it is resumed again.
    fn opened_by(&self, entry: &LogEntry) -> bool {
        match entry {
            LogEntry::Turn { .. } | LogEntry::Compaction { .. } => true,
            LogEntry::Undone { .. } | LogEntry::Rewound { .. } | LogEntry::Setting { .. } => {
                matches!(self.lazy, Some(LazyLog::Existing))
            }
            _ => false,
        }
    }

    /// Gives the log up after `result` failed (its buffer is dropped unwritten: a later flush
    /// could only add a fragment).
    fn give_up_on(&mut self, result: std::io::Result<()>) -> std::io::Result<()> {
        if result.is_err() {
            self.failed = true;
            if let Some(file) = self.file.take() {
                drop(file.into_parts());
            }
        }
        result
    }

    fn open(&mut self) -> std::io::Result<()> {
        // No folder on the way to the log may be a link (a new log or one resumed).
        if let Some(dir) = self.path.parent() {
            crate::logging::private_state_dir(dir)?;
        }
        let lazy = self.lazy.take();
        let (file, header) = match lazy {
            Some(LazyLog::New { header }) => {
                self.lock = Some(ConversationLock::acquire(&self.path).map_err(|error| {
                    std::io::Error::other(format!("cannot lock the new conversation: {error}"))
                })?);
                let file = crate::files::no_follow()
                    .write(true)
                    .create_new(true)
                    .open(&self.path)?;
                (file, Some(*header))
            }
            Some(LazyLog::Existing) => {
                let file = crate::files::no_follow()
                    .read(true)
                    .append(true)
                    .open(&self.path)?;
                // Whatever a crash left half-written must not swallow what comes next.
                torn::set_aside_torn_tail(&file, &self.path)?;
                (file, None)
            }
            None => return Err(std::io::Error::other("the log could not be opened")),
        };
        let mut file = BufWriter::new(file);
        // The header twice: the second line is its backup, read when a damaged byte leaves
        // the first beyond reading, so that the conversation is still found.
        for entry in header
            .iter()
            .chain(header.iter())
            .chain(std::mem::take(&mut self.before_first_turn).iter())
        {
            write_entry(&mut file, entry)?;
        }
        self.file = Some(file);
        Ok(())
    }

    /// Writes the joined deltas and flushes.
    fn flush(&mut self) -> std::io::Result<()> {
        self.write_pending()?;
        let flushed = match self.file.as_mut() {
            Some(file) => file.flush(),
            None => Ok(()),
        };
        self.give_up_on(flushed)
    }
}

fn write_entry(file: &mut BufWriter<File>, entry: &LogEntry) -> std::io::Result<()> {
    let line = crate::sanitize::inert_json(entry).map_err(std::io::Error::from)?;
    file.write_all(line.as_bytes())?;
    file.write_all(b"\n")
}

/// Writes a raw line on the calling task, and makes it readable (as a queued line is once the
/// queue runs dry), so that a crash loses none of it.
fn write_raw_inline(
    raw: &SharedRawWriter,
    failures: &FailureReport,
    turn: TurnId,
    attempt: u32,
    line: &str,
) {
    let Ok(mut raw) = raw.lock() else {
        return;
    };
    if let Err(error) = raw.write(turn, attempt, line).and_then(|()| raw.flush()) {
        failures.report(LogPart::RawLines, raw.path(), &error);
    }
}

/// Writes entries as they come and flushes whenever the queue runs dry, so that a crash (the
/// panic hook exits the process) loses at most what was still queued (and text deltas joined
/// in the last moment, see [`Coalesced`]). Raw lines go to the compressed sidecar as they are,
/// never escaped again. A flush there ends a compressed block; flushing the sidecar only at
/// turn ends was tried and stored more (the 30 kB echo of `tests/suite/session_log_replay.rs`:
/// 1.6 MB of sidecar against 0.7 MB). Each part's first write failure is reported (see
/// `failure`), and that part given up.
fn write_loop(
    mut log: LogFile,
    raw: SharedRawWriter,
    failures: &FailureReport,
    commands: mpsc::Receiver<WriterCommand>,
) {
    let log_path = log.path.clone();
    let sidecar = raw::sidecar_path(&log_path);
    let log_failed = |error: std::io::Error| {
        failures.report(LogPart::Conversation, &log_path, &error);
    };
    let raw_failed = |error: std::io::Error| {
        failures.report(LogPart::RawLines, &sidecar, &error);
    };
    let mut next = commands.recv().ok();
    while let Some(command) = next {
        match command {
            WriterCommand::Entry(entry) => {
                if let Err(error) = log.record(&entry) {
                    log_failed(error);
                }
            }
            // The permit is released once the line is in the compressor.
            WriterCommand::Raw {
                turn,
                attempt,
                line,
                _permit,
            } => {
                if let Err(error) = lock(&raw).and_then(|mut raw| raw.write(turn, attempt, &line)) {
                    raw_failed(error);
                }
            }
            // Flushes come at turn ends: the turn's raw lines end their frame, so an idle
            // chat holds no compressor.
            WriterCommand::Flush => {
                if let Err(error) = log.flush() {
                    log_failed(error);
                }
                if let Err(error) = lock(&raw).and_then(|mut raw| raw.finish()) {
                    raw_failed(error);
                }
            }
            WriterCommand::Close => break,
        }
        next = match commands.try_recv() {
            Ok(command) => Some(command),
            // Joined deltas wait a moment for more before they are written.
            Err(mpsc::TryRecvError::Empty) if log.has_pending() => {
                match commands.recv_timeout(COALESCE_FOR) {
                    Ok(command) => Some(command),
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if let Err(error) = log.flush() {
                            log_failed(error);
                        }
                        if let Err(error) = lock(&raw).and_then(|mut raw| raw.flush()) {
                            raw_failed(error);
                        }
                        commands.recv().ok()
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => None,
                }
            }
            Err(mpsc::TryRecvError::Empty) => {
                if let Err(error) = log.flush() {
                    log_failed(error);
                }
                if let Err(error) = lock(&raw).and_then(|mut raw| raw.flush()) {
                    raw_failed(error);
                }
                commands.recv().ok()
            }
            Err(mpsc::TryRecvError::Disconnected) => None,
        };
    }
    if let Err(error) = log.flush() {
        log_failed(error);
    }
    if let Err(error) = lock(&raw).and_then(|mut raw| raw.finish()) {
        raw_failed(error);
    }
}

fn lock(raw: &SharedRawWriter) -> std::io::Result<std::sync::MutexGuard<'_, RawLineWriter>> {
    raw.lock()
        .map_err(|_| std::io::Error::other("the raw-line writer panicked"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_chat(dir: &Path) -> SessionLogWriter {
        SessionLogWriter::start(
            dir,
            NewConversation {
                provider: "demo".into(),
                cwd: PathBuf::from("/work/project"),
                origin: Origin::Chat,
                start: ConversationStart::default(),
            },
        )
        .unwrap()
    }

    fn turn(writer: &SessionLogWriter, turn: TurnId, prompt: &str, session: &str) {
        writer.record_event(&OrchestratorEvent::TurnStarted {
            turn,
            prompt: prompt.into(),
        });
        let tap = writer.raw_line_tap(turn, 1).unwrap();
        futures::executor::block_on(tap.record(r#"{"type":"agent_start"}"#));
        writer.record_event(&OrchestratorEvent::Message {
            turn,
            attempt: 1,
            message: AgentMessage::SessionStarted {
                provider: "demo".into(),
                session_id: Some(session.into()),
                model: None,
            },
        });
        writer.record_event(&OrchestratorEvent::SessionChanged {
            session_id: Some(session.into()),
        });
        writer.record_event(&OrchestratorEvent::TurnEnded {
            turn,
            outcome: TurnOutcome::Completed,
        });
    }

    /// A new chat whose first turn (`prompt`) has started: the writer and its log's path.
    fn turn_started(dir: &Path, prompt: &str) -> (SessionLogWriter, PathBuf) {
        let writer = new_chat(dir);
        let path = writer.path().to_path_buf();
        writer.record_event(&OrchestratorEvent::TurnStarted {
            turn: 1,
            prompt: prompt.into(),
        });
        (writer, path)
    }

    /// A chat of one finished turn ("hi", agent session `s-1`), its writer gone: the log's
    /// path and the conversation's id.
    fn one_turn_logged(dir: &Path) -> (PathBuf, String) {
        let writer = new_chat(dir);
        let path = writer.path().to_path_buf();
        let id = writer.conversation_id().to_owned();
        turn(&writer, 1, "hi", "s-1");
        (path, id)
    }

    #[test]
    fn nothing_is_written_until_the_first_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let writer = new_chat(dir.path());
        let path = writer.path().to_path_buf();
        writer.record_event(&OrchestratorEvent::SessionChanged { session_id: None });
        writer.flush();
        drop(writer);
        assert!(!path.exists(), "a launch without a prompt leaves no log");
        assert!(list_conversations(dir.path()).is_empty());
    }

    #[test]
    fn events_and_raw_lines_round_trip_and_a_resumed_conversation_appends() {
        let dir = tempfile::tempdir().unwrap();
        let (path, id) = one_turn_logged(dir.path());

        let entries = read_session_log(&path).unwrap();
        assert!(matches!(
            &entries[0],
            LogEntry::Header(LogHeader { provider, version: 2, conversation_id: Some(logged), origin: Origin::Chat, .. })
                if provider == "demo" && *logged == id
        ));
        assert!(
            matches!(&entries[1], LogEntry::Turn { turn: 1, prompt, at_ms: Some(_) } if prompt == "hi")
        );
        assert!(
            entries
                .iter()
                .all(|entry| !matches!(entry, LogEntry::Raw { .. })),
            "the log holds no raw line: they are in the sidecar"
        );
        assert!(matches!(
            entries.last(),
            Some(LogEntry::TurnEnded {
                outcome: LoggedOutcome::Outcome(TurnOutcome::Completed),
                ..
            })
        ));
        assert_eq!(last_session_id(&entries), Some("s-1".into()));

        // A later launch resumes the conversation: same file, turns numbered on.
        let lock = ConversationLock::acquire(&path).unwrap();
        let resumed = SessionLogWriter::resume(&path, &id, Some(lock)).unwrap();
        turn(&resumed, 2, "again", "s-1");
        drop(resumed);
        let summaries = list_conversations(dir.path());
        assert_eq!(summaries.len(), 1);
        let summary = &summaries[0];
        assert_eq!(summary.id, id);
        assert_eq!(summary.turns, 2);
        assert_eq!(summary.last_turn, 2);
        assert_eq!(summary.first_prompt, "hi");
        assert_eq!(summary.cwd, "/work/project");
        assert_eq!(summary.session_id.as_deref(), Some("s-1"));
        // Both launches' raw lines, in the one sidecar.
        let mut raw_lines = Vec::new();
        crate::session_log::raw::for_each_raw_line(&path, |raw| {
            raw_lines.push((raw.turn, raw.line.to_owned()))
        })
        .unwrap();
        assert_eq!(
            raw_lines,
            [
                (1, r#"{"type":"agent_start"}"#.to_owned()),
                (2, r#"{"type":"agent_start"}"#.to_owned())
            ]
        );
        assert!(summary.is_named(&id[..6]));
        assert!(!summary.is_named("zzz"));
        assert_eq!(latest_session_log(dir.path()), Some(path));
    }

    #[test]
    fn the_settings_chosen_are_logged_and_the_last_of_each_kind_is_resumed() {
        let dir = tempfile::tempdir().unwrap();
        let writer = new_chat(dir.path());
        let path = writer.path().to_path_buf();
        turn(&writer, 1, "hi", "s-1");
        for setting in [
            AgentSetting::Mode("plan".into()),
            AgentSetting::Model("m2".into()),
            AgentSetting::Mode("default".into()),
        ] {
            writer.record_event(&OrchestratorEvent::SettingChosen(setting));
        }
        drop(writer);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains(r#"{"kind":"setting","setting":"mode","value":"plan","at_ms":"#),
            "{text}"
        );
        assert_eq!(
            read_summary(&path).unwrap().settings,
            [
                AgentSetting::Model("m2".into()),
                AgentSetting::Mode("default".into())
            ]
        );
    }

    #[test]
    fn a_header_damaged_beyond_reading_is_replaced_by_its_backup() {
        let dir = tempfile::tempdir().unwrap();
        let (path, id) = one_turn_logged(dir.path());
        // One byte of the first line's keys damaged: the provider cannot be read from it.
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes
            .windows(b"\"provider\"".len())
            .position(|window| window == b"\"provider\"")
            .unwrap();
        bytes[at + 3] = 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let first_line = bytes.split(|byte| *byte == b'\n').next().unwrap();
        assert_eq!(read::parse_header(first_line, &path), None);

        let summary = read_summary(&path).expect("the conversation is still found");
        assert_eq!(
            (
                summary.id.as_str(),
                summary.provider.as_str(),
                summary.cwd.as_str()
            ),
            (id.as_str(), "demo", "/work/project")
        );
        assert_eq!(summary.turns, 1);
        let entries = read_session_log(&path).unwrap();
        assert_eq!(
            entries
                .iter()
                .filter(|entry| matches!(entry, LogEntry::Header(_)))
                .count(),
            1,
            "the backup stands in for the header, once"
        );
        assert!(matches!(&entries[1], LogEntry::Turn { turn: 1, .. }));
    }

    #[test]
    fn a_log_that_cannot_be_written_is_told_once_per_part_and_given_up() {
        let dir = tempfile::tempdir().unwrap();
        // The sessions "folder" is a file: nothing can be created in it, even as root.
        let blocked = dir.path().join("sessions");
        std::fs::write(&blocked, "not a folder").unwrap();
        let told = Arc::new(std::sync::Mutex::new(Vec::new()));
        let writer = new_chat(&blocked).report_failures_to(Box::new({
            let told = told.clone();
            move |failure| told.lock().unwrap().push(failure)
        }));
        let id = writer.conversation_id().to_owned();
        turn(&writer, 1, "hi", "s-1");
        turn(&writer, 2, "again", "s-1");
        drop(writer);
        let told = told.lock().unwrap();
        // The raw lines failed too, but a conversation not saved says that already.
        let parts: Vec<LogPart> = told.iter().map(|failure| failure.part).collect();
        assert_eq!(parts, [LogPart::Conversation], "{told:?}");
        let message = told[0].message();
        assert!(
            message.starts_with(&format!("Conversation {} is not being saved", &id[..8])),
            "{message}"
        );
        assert!(message.contains("File exists"), "{message}");
        assert_eq!(std::fs::read_to_string(&blocked).unwrap(), "not a folder");
    }

    #[test]
    fn links_in_place_of_a_log_or_its_sidecar_are_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let (path, id) = one_turn_logged(dir.path());
        // The log and its sidecar become links to files elsewhere (copies, so the log reads
        // as the conversation it was).
        let elsewhere = tempfile::tempdir().unwrap();
        let sidecar = raw::sidecar_path(&path);
        let mut targets = Vec::new();
        for file in [&path, &sidecar] {
            let target = elsewhere.path().join(file.file_name().unwrap());
            std::fs::rename(file, &target).unwrap();
            std::os::unix::fs::symlink(&target, file).unwrap();
            targets.push((target.clone(), std::fs::read(&target).unwrap()));
        }
        assert_eq!(read_summary(&path).unwrap().turns, 1, "reading may follow");
        let told = Arc::new(std::sync::Mutex::new(Vec::new()));
        let lock = ConversationLock::acquire(&path).unwrap();
        let resumed = SessionLogWriter::resume(&path, &id, Some(lock))
            .unwrap()
            .report_failures_to(Box::new({
                let told = told.clone();
                move |failure| told.lock().unwrap().push(failure)
            }));
        turn(&resumed, 2, "again", "s-1");
        drop(resumed);
        for (target, before) in targets {
            assert_eq!(
                std::fs::read(&target).unwrap(),
                before,
                "{target:?} was written"
            );
        }
        let told = told.lock().unwrap();
        assert_eq!(told.len(), 1, "{told:?}");
        assert!(
            told[0].error.contains("Too many levels of symbolic links"),
            "{told:?}"
        );
    }

    #[test]
    fn a_fifo_named_like_a_log_is_passed_over_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let writer = new_chat(dir.path());
        turn(&writer, 1, "hi", "s-1");
        drop(writer);
        nix::unistd::mkfifo(
            &dir.path().join("999999999999999-ffffffff.jsonl"),
            nix::sys::stat::Mode::S_IRWXU,
        )
        .unwrap();
        let found = list_conversations(dir.path());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].first_prompt, "hi");
    }

    #[test]
    fn one_character_deltas_are_joined_in_order_and_the_log_stays_near_the_text_size() {
        let dir = tempfile::tempdir().unwrap();
        let writer = new_chat(dir.path());
        let path = writer.path().to_path_buf();
        writer.record_event(&OrchestratorEvent::TurnStarted {
            turn: 1,
            prompt: "flood".into(),
        });
        let delta = |text: &str, thinking: bool| OrchestratorEvent::Message {
            turn: 1,
            attempt: 1,
            message: if thinking {
                AgentMessage::Thinking { delta: text.into() }
            } else {
                AgentMessage::Assistant { delta: text.into() }
            },
        };
        let mut text = String::new();
        for index in 0..200_000 {
            let character = char::from(b'a' + (index % 26) as u8).to_string();
            text.push_str(&character);
            writer.record_event(&delta(&character, false));
            if index == 100_000 {
                writer.record_event(&delta("hmm", true));
                writer.record_event(&delta(" ok", true));
            }
        }
        writer.record_event(&OrchestratorEvent::TurnEnded {
            turn: 1,
            outcome: TurnOutcome::Completed,
        });
        drop(writer);
        let entries = read_session_log(&path).unwrap();
        let mut read = String::new();
        let mut thinking = Vec::new();
        for entry in &entries {
            match entry {
                LogEntry::Message {
                    message: AgentMessage::Assistant { delta },
                    ..
                } => read.push_str(delta),
                LogEntry::Message {
                    message: AgentMessage::Thinking { delta },
                    ..
                } => thinking.push((read.len(), delta.clone())),
                _ => {}
            }
        }
        assert!(read == text, "the text comes back whole");
        assert_eq!(thinking, [(100_001, "hmm ok".to_owned())], "in its place");
        let size = std::fs::metadata(&path).unwrap().len() as usize;
        assert!(
            size <= 10 * text.len(),
            "{size} bytes of log for {} of text",
            text.len()
        );
    }

    #[test]
    fn a_lone_delta_is_written_without_waiting_for_the_turn_to_end() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, path) = turn_started(dir.path(), "slow");
        writer.record_event(&OrchestratorEvent::Message {
            turn: 1,
            attempt: 1,
            message: AgentMessage::Assistant {
                delta: "first word".into(),
            },
        });
        let started = std::time::Instant::now();
        while !std::fs::read_to_string(&path).is_ok_and(|text| text.contains("first word")) {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(10),
                "never written"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        drop(writer);
    }

    #[test]
    fn queued_and_inline_raw_lines_keep_their_order() {
        let dir = tempfile::tempdir().unwrap();
        let writer = new_chat(dir.path());
        let path = writer.path().to_path_buf();
        turn(&writer, 1, "hi", "s-1");
        let tap = writer.raw_line_tap(1, 1).unwrap();
        // Short lines go through the writer thread, long ones are compressed by the caller.
        let lines: Vec<String> = [10, INLINE_RAW_FROM + 5, 20, 3 * INLINE_RAW_FROM, 7, 30]
            .iter()
            .enumerate()
            .map(|(index, len)| format!("{index}:{}", "x".repeat(*len)))
            .collect();
        for line in &lines {
            futures::executor::block_on(tap.record(line));
        }
        drop(tap);
        drop(writer);
        let mut read = Vec::new();
        crate::session_log::raw::for_each_raw_line(&path, |raw| {
            if raw.line.starts_with(|c: char| c.is_ascii_digit()) {
                read.push(raw.line.to_owned());
            }
        })
        .unwrap();
        let shape = |lines: &[String]| -> Vec<(String, usize)> {
            lines
                .iter()
                .map(|line| (line[..2].to_owned(), line.len()))
                .collect()
        };
        assert_eq!(shape(&read), shape(&lines));
        assert!(read == lines, "the lines come back as they were");
    }

    #[test]
    fn a_failed_attempts_session_is_not_the_one_to_continue() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, path) = turn_started(dir.path(), "hi");
        writer.record_event(&OrchestratorEvent::Message {
            turn: 1,
            attempt: 1,
            message: AgentMessage::SessionStarted {
                provider: "demo".into(),
                session_id: Some("failed".into()),
                model: None,
            },
        });
        drop(writer);
        assert_eq!(read_summary(&path).unwrap().session_id, None);
    }

    #[test]
    fn the_header_keeps_how_the_conversation_started_and_the_summary_what_became_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let writer = SessionLogWriter::start(
            dir.path(),
            NewConversation {
                provider: "demo".into(),
                cwd: PathBuf::from("/work/project"),
                origin: Origin::Chat,
                start: ConversationStart {
                    transport: Some(crate::config::Transport::Acp),
                    settings: vec![AgentSetting::Model("demo-acp-2".into())],
                },
            },
        )
        .unwrap();
        let path = writer.path().to_path_buf();
        for turn in 1..=2 {
            writer.record_event(&OrchestratorEvent::TurnStarted {
                turn,
                prompt: format!("prompt {turn}"),
            });
            writer.record_event(&OrchestratorEvent::TurnEnded {
                turn,
                outcome: TurnOutcome::Completed,
            });
        }
        writer.record_event(&OrchestratorEvent::SettingChosen(AgentSetting::Mode(
            "accept-edits".into(),
        )));
        // Rewound to before the first prompt: the way back stays, the agent session does not.
        writer.record_event(&OrchestratorEvent::Rewound(crate::orchestrator::Rewind {
            turn: 1,
            conversation: Some(Ok(())),
            files: None,
            undone: false,
        }));
        writer.record_event(&OrchestratorEvent::SessionChanged { session_id: None });
        drop(writer);
        let summary = read_summary(&path).unwrap();
        assert_eq!(summary.transport, Some(crate::config::Transport::Acp));
        assert_eq!(
            summary.settings,
            [
                AgentSetting::Model("demo-acp-2".into()),
                AgentSetting::Mode("accept-edits".into())
            ]
        );
        assert_eq!((summary.turns, summary.completed_turns), (2, 2));
        assert!(summary.rewound_to_start);
        assert_eq!(summary.session_id, None);
    }

    #[test]
    fn a_rewind_or_a_setting_in_a_resumed_launch_is_logged_without_a_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, path) = turn_started(dir.path(), "hi");
        let id = writer.conversation_id().to_owned();
        drop(writer);
        let resumed = SessionLogWriter::resume(&path, &id, None).unwrap();
        resumed.record_event(&OrchestratorEvent::Rewound(crate::orchestrator::Rewind {
            turn: 1,
            conversation: Some(Ok(())),
            files: None,
            undone: false,
        }));
        resumed.record_event(&OrchestratorEvent::SettingChosen(AgentSetting::Mode(
            "plan".into(),
        )));
        drop(resumed);
        let entries = read_session_log(&path).unwrap();
        assert!(entries
            .iter()
            .any(|entry| matches!(entry, LogEntry::Rewound { .. })));
        assert!(read_summary(&path).unwrap().rewound_to_start);
        assert_eq!(
            read_summary(&path).unwrap().settings,
            [AgentSetting::Mode("plan".into())]
        );
        // A new conversation's log still appears only with its first prompt.
        let dir = tempfile::tempdir().unwrap();
        let writer = new_chat(dir.path());
        writer.record_event(&OrchestratorEvent::SettingChosen(AgentSetting::Mode(
            "plan".into(),
        )));
        let path = writer.path().to_path_buf();
        drop(writer);
        assert!(!path.exists());
    }

    #[test]
    fn version_1_logs_are_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001764000000-abcdef12.jsonl");
        std::fs::write(
            &path,
            concat!(
                r#"{"kind":"header","version":1,"provider":"pi","started_at_ms":5,"cwd":"/p"}"#,
                "\n",
                r#"{"kind":"turn","turn":1,"prompt":"old"}"#,
                "\n",
                r#"{"kind":"message","turn":1,"attempt":1,"message":{"type":"session.started","provider":"pi","session_id":"s-old"}}"#,
                "\n",
                r#"{"kind":"turn_ended","turn":1,"outcome":"failed: agent_error"}"#,
                "\n",
            ),
        )
        .unwrap();
        let summary = read_summary(&path).unwrap();
        assert_eq!(summary.id, "000001764000000-abcdef12");
        assert_eq!(summary.origin, Origin::Chat);
        assert_eq!(summary.session_id.as_deref(), Some("s-old"));
        let entries = read_session_log(&path).unwrap();
        let LogEntry::TurnEnded { outcome, .. } = &entries[3] else {
            panic!("{entries:?}");
        };
        assert_eq!(
            outcome.outcome(),
            TurnOutcome::Failed {
                reason: crate::stream::FailureReason::AgentError,
                message: String::new()
            }
        );
    }
}
