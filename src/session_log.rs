//! Session logs: every shared message of every attempt, appended as JSON lines to
//! `<state dir>/sessions/<start>-<id>.jsonl`; the agent's raw stdout lines go to a compressed
//! sidecar next to it (`crate::raw_log`).
//!
//! Writing happens on a thread of its own, so neither the UI nor an attempt ever waits on the
//! disk. The log is flushed at each turn end, on stop, and when the writer is dropped; a crash
//! loses at most the lines of the turn in flight. `agentty --resume` reads it back.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::orchestrator::{OrchestratorEvent, TurnId, TurnOutcome};
use crate::raw_log::{RawLineBuffers, RawLineWriter, INLINE_RAW_PREFIX};
use crate::stream::AgentMessage;

/// One line of a session log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LogEntry {
    /// The first line.
    Header {
        version: u32,
        provider: String,
        started_at_ms: u64,
        cwd: String,
    },
    Turn {
        turn: TurnId,
        prompt: String,
    },
    Message {
        turn: TurnId,
        attempt: u32,
        message: AgentMessage,
    },
    /// A raw stdout line of the agent, as it printed it.
    Raw {
        turn: TurnId,
        attempt: u32,
        line: String,
    },
    TurnEnded {
        turn: TurnId,
        outcome: String,
    },
    /// The agent session the next turn continues.
    Session {
        session_id: Option<String>,
    },
}

enum WriterCommand {
    Entry(LogEntry),
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

/// Bytes of raw agent lines that may wait for the disk. Raw lines can be huge (pi repeats the
/// whole answer twice on every update), so the queue is bounded and the attempt waits for the
/// writer instead of memory growing; a line larger than this waits until the queue is empty,
/// and the attempt goes on once it is written.
const RAW_LINE_BUDGET: usize = 256 * 1024;

/// Appends entries to one session log on a background thread.
pub struct SessionLogWriter {
    path: PathBuf,
    commands: Option<mpsc::Sender<WriterCommand>>,
    raw_budget: Arc<Semaphore>,
    raw_buffers: RawLineBuffers,
    thread: Option<JoinHandle<()>>,
}

/// Where session logs live.
pub fn sessions_dir() -> PathBuf {
    crate::logging::state_dir().join("sessions")
}

impl SessionLogWriter {
    /// Creates a new log in `dir` and writes its header.
    pub fn create(dir: &Path, provider: &str) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let started_at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_millis() as u64)
            .unwrap_or(0);
        let id = uuid::Uuid::new_v4().simple().to_string();
        let path = dir.join(format!("{started_at_ms:015}-{}.jsonl", &id[..8]));
        let file = File::create(&path)?;
        let raw = RawLineWriter::new(&path);
        let raw_buffers = RawLineBuffers::default();
        let (commands, receiver) = mpsc::channel::<WriterCommand>();
        let thread = std::thread::Builder::new()
            .name("session-log".into())
            .spawn({
                let raw_buffers = raw_buffers.clone();
                move || write_loop(BufWriter::new(file), raw, raw_buffers, receiver)
            })?;
        let writer = Self {
            path,
            commands: Some(commands),
            raw_budget: Arc::new(Semaphore::new(RAW_LINE_BUDGET)),
            raw_buffers,
            thread: Some(thread),
        };
        writer.append(LogEntry::Header {
            version: 1,
            provider: provider.to_owned(),
            started_at_ms,
            cwd: std::env::current_dir()
                .map(|dir| dir.display().to_string())
                .unwrap_or_default(),
        });
        writer.flush();
        Ok(writer)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn append(&self, entry: LogEntry) {
        if let Some(commands) = &self.commands {
            let _ = commands.send(WriterCommand::Entry(entry));
        }
    }

    /// Asks for a flush (does not wait for it).
    pub fn flush(&self) {
        if let Some(commands) = &self.commands {
            let _ = commands.send(WriterCommand::Flush);
        }
    }

    /// Records what the orchestrator reported; flushes at turn ends.
    pub fn record_event(&self, event: &OrchestratorEvent) {
        match event {
            OrchestratorEvent::TurnStarted { turn, prompt } => self.append(LogEntry::Turn {
                turn: *turn,
                prompt: prompt.clone(),
            }),
            OrchestratorEvent::Message {
                turn,
                attempt,
                message,
            } => self.append(LogEntry::Message {
                turn: *turn,
                attempt: *attempt,
                message: message.clone(),
            }),
            OrchestratorEvent::RetryScheduled {
                turn,
                attempt,
                max_attempts,
                delay_ms,
                reason,
            } => self.append(LogEntry::Message {
                turn: *turn,
                attempt: attempt.saturating_sub(1),
                message: AgentMessage::RetryScheduled {
                    attempt: *attempt,
                    max_attempts: *max_attempts,
                    delay_ms: *delay_ms,
                    reason: reason.clone(),
                },
            }),
            OrchestratorEvent::TurnEnded { turn, outcome } => {
                self.append(LogEntry::TurnEnded {
                    turn: *turn,
                    outcome: match outcome {
                        TurnOutcome::Completed => "completed".into(),
                        TurnOutcome::Failed { reason, .. } => format!("failed: {reason}"),
                        TurnOutcome::Cancelled => "cancelled".into(),
                    },
                });
                self.flush();
            }
            OrchestratorEvent::SessionChanged { session_id } => self.append(LogEntry::Session {
                session_id: session_id.clone(),
            }),
            OrchestratorEvent::ShutDown => self.flush(),
            OrchestratorEvent::AttemptStarted { .. }
            | OrchestratorEvent::StopProgress { .. }
            | OrchestratorEvent::RetryCancelled { .. }
            | OrchestratorEvent::QueueChanged { .. } => {}
        }
    }

    /// A tap for one attempt's raw lines, to put in `AttemptRequest::raw_line_tap`.
    pub fn raw_line_tap(&self, turn: TurnId, attempt: u32) -> Option<crate::provider::RawLineTap> {
        let commands = self.commands.clone()?;
        let budget = self.raw_budget.clone();
        let buffers = self.raw_buffers.clone();
        Some(crate::provider::RawLineTap::new(move |line: &str| {
            let commands = commands.clone();
            let budget = budget.clone();
            let buffers = buffers.clone();
            Box::pin(async move {
                let share = line.len().clamp(1, RAW_LINE_BUDGET) as u32;
                let Ok(permit) = budget.clone().acquire_many_owned(share).await else {
                    return;
                };
                let _ = commands.send(WriterCommand::Raw {
                    turn,
                    attempt,
                    line: buffers.copy_of(line),
                    _permit: permit,
                });
                if share as usize == RAW_LINE_BUDGET {
                    // A line that takes the whole budget is written before the next is read,
                    // so no two of them are ever held at once.
                    let _ = budget.acquire_many(share).await;
                }
            })
        }))
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

/// Writes entries as they come and flushes whenever the queue runs dry, so that a crash (the
/// panic hook exits the process) loses at most what was still queued. Raw lines go to the
/// compressed sidecar as they are, never escaped again. A flush there ends a compressed
/// block; flushing the sidecar only at turn ends was tried and stored more (the 30 kB echo of
/// `tests/session_log_replay.rs`: 1.6 MB of sidecar against 0.7 MB).
fn write_loop(
    mut file: BufWriter<File>,
    mut raw: RawLineWriter,
    raw_buffers: RawLineBuffers,
    commands: mpsc::Receiver<WriterCommand>,
) {
    let mut next = commands.recv().ok();
    while let Some(command) = next {
        let result = match command {
            WriterCommand::Entry(entry) => serde_json::to_writer(&mut file, &entry)
                .map_err(std::io::Error::from)
                .and_then(|()| file.write_all(b"\n")),
            // The permit is released once the line is in the compressor, and its buffer
            // goes back for the next line.
            WriterCommand::Raw {
                turn,
                attempt,
                line,
                _permit,
            } => {
                let written = raw.write(turn, attempt, &line);
                raw_buffers.give_back(line);
                written
            }
            // Flushes come at turn ends: the turn's raw lines end their frame, so an idle
            // chat holds no compressor.
            WriterCommand::Flush => file.flush().and_then(|()| raw.finish()),
            WriterCommand::Close => break,
        };
        if let Err(error) = result {
            tracing::error!(%error, "cannot write the session log");
        }
        next = match commands.try_recv() {
            Ok(command) => Some(command),
            Err(mpsc::TryRecvError::Empty) => {
                let _ = file.flush().and_then(|()| raw.flush());
                commands.recv().ok()
            }
            Err(mpsc::TryRecvError::Disconnected) => None,
        };
    }
    let _ = file.flush();
    if let Err(error) = raw.finish() {
        tracing::error!(%error, "cannot finish the session log's raw lines");
    }
}

/// The most recent session log in `dir`.
pub fn latest_session_log(dir: &Path) -> Option<PathBuf> {
    latest_session_log_except(dir, None)
}

/// The most recent session log in `dir` other than `except` (the one being written now).
/// Log names start with their start time, so the newest sorts last.
pub fn latest_session_log_except(dir: &Path, except: Option<&Path>) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "jsonl")
        })
        .filter(|path| Some(path.as_path()) != except)
        .max()
}

/// Reads back what a session log shows: every entry but the agent's raw lines, which a log
/// written before the sidecar holds inline and which are skipped by their first bytes without
/// being parsed, so memory follows the transcript, not the raw log (`crate::raw_log` reads
/// them). Lines that do not parse (a torn last line) are skipped.
pub fn read_session_log(path: &Path) -> std::io::Result<Vec<LogEntry>> {
    let mut reader = BufReader::new(File::open(path)?);
    let mut entries = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(entries);
        }
        if line.starts_with(INLINE_RAW_PREFIX) {
            continue;
        }
        match serde_json::from_slice(&line) {
            Ok(LogEntry::Raw { .. }) | Err(_) => {}
            Ok(entry) => entries.push(entry),
        }
    }
}

/// The agent session to continue from a log: the last one it recorded.
pub fn last_session_id(entries: &[LogEntry]) -> Option<String> {
    entries.iter().rev().find_map(|entry| match entry {
        LogEntry::Session { session_id } => Some(session_id.clone()),
        LogEntry::Message {
            message: AgentMessage::SessionStarted { session_id, .. },
            ..
        } => Some(session_id.clone()),
        LogEntry::Message {
            message: AgentMessage::SessionResumed { session_id, .. },
            ..
        } => Some(Some(session_id.clone())),
        _ => None,
    })?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_and_raw_lines_round_trip_through_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let writer = SessionLogWriter::create(dir.path(), "demo").unwrap();
        let path = writer.path().to_path_buf();
        writer.record_event(&OrchestratorEvent::TurnStarted {
            turn: 1,
            prompt: "hi".into(),
        });
        let tap = writer.raw_line_tap(1, 1).unwrap();
        futures::executor::block_on(tap.record(r#"{"type":"agent_start"}"#));
        writer.record_event(&OrchestratorEvent::Message {
            turn: 1,
            attempt: 1,
            message: AgentMessage::SessionStarted {
                provider: "demo".into(),
                session_id: Some("s-1".into()),
            },
        });
        writer.record_event(&OrchestratorEvent::TurnEnded {
            turn: 1,
            outcome: TurnOutcome::Completed,
        });
        drop(writer);

        let entries = read_session_log(&path).unwrap();
        assert!(matches!(&entries[0], LogEntry::Header { provider, .. } if provider == "demo"));
        assert_eq!(
            entries[1..],
            [
                LogEntry::Turn {
                    turn: 1,
                    prompt: "hi".into()
                },
                LogEntry::Message {
                    turn: 1,
                    attempt: 1,
                    message: AgentMessage::SessionStarted {
                        provider: "demo".into(),
                        session_id: Some("s-1".into())
                    }
                },
                LogEntry::TurnEnded {
                    turn: 1,
                    outcome: "completed".into()
                },
            ]
        );
        let mut raw_lines = Vec::new();
        crate::raw_log::for_each_raw_line(&path, |raw| {
            raw_lines.push((raw.turn, raw.attempt, raw.line.to_owned()))
        })
        .unwrap();
        assert_eq!(raw_lines, [(1, 1, r#"{"type":"agent_start"}"#.to_owned())]);
        assert_eq!(last_session_id(&entries), Some("s-1".into()));
        assert_eq!(latest_session_log(dir.path()), Some(path));
    }
}
