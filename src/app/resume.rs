//! `agentty --resume`: the last session log, turned back into the orchestrator events that
//! built its transcript, plus the agent session to continue.

use crate::orchestrator::{OrchestratorEvent, TurnOutcome};
use std::path::Path;

use crate::session_log::{
    last_session_id, latest_session_log_except, read_session_log, sessions_dir, LogEntry,
};

/// What `--resume` reopens.
pub struct ResumedSession {
    pub provider: String,
    pub session_id: Option<String>,
    /// Replayed through the app state to rebuild the transcript.
    pub events: Vec<OrchestratorEvent>,
}

/// The most recent session log in the state dir, other than `current` (the log of this run).
pub fn last_session(current: Option<&Path>) -> Result<ResumedSession, String> {
    let dir = sessions_dir();
    let path = latest_session_log_except(&dir, current)
        .ok_or_else(|| format!("no earlier session in {}", dir.display()))?;
    let entries = read_session_log(&path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    from_entries(&entries).ok_or_else(|| format!("{} is not a session log", path.display()))
}

/// Rebuilds the events of a log; `None` when it has no header.
pub fn from_entries(entries: &[LogEntry]) -> Option<ResumedSession> {
    let Some(LogEntry::Header { provider, .. }) = entries.first() else {
        return None;
    };
    let events = entries
        .iter()
        .filter_map(|entry| match entry {
            LogEntry::Turn { turn, prompt } => Some(OrchestratorEvent::TurnStarted {
                turn: *turn,
                prompt: prompt.clone(),
            }),
            LogEntry::Message {
                turn,
                attempt,
                message,
            } => Some(OrchestratorEvent::Message {
                turn: *turn,
                attempt: *attempt,
                message: message.clone(),
            }),
            LogEntry::TurnEnded { turn, outcome } => Some(OrchestratorEvent::TurnEnded {
                turn: *turn,
                outcome: parse_outcome(outcome),
            }),
            LogEntry::Header { .. } | LogEntry::Raw { .. } | LogEntry::Session { .. } => None,
        })
        .collect();
    Some(ResumedSession {
        provider: provider.clone(),
        session_id: last_session_id(entries),
        events,
    })
}

fn parse_outcome(outcome: &str) -> TurnOutcome {
    match outcome {
        "completed" => TurnOutcome::Completed,
        "cancelled" => TurnOutcome::Cancelled,
        failed => TurnOutcome::Failed {
            reason: failed.strip_prefix("failed: ").unwrap_or(failed).to_owned(),
            message: String::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::AgentMessage;

    #[test]
    fn a_log_becomes_the_events_that_built_its_transcript() {
        let entries = vec![
            LogEntry::Header {
                version: 1,
                provider: "demo".into(),
                started_at_ms: 0,
                cwd: "/".into(),
            },
            LogEntry::Turn {
                turn: 1,
                prompt: "hi".into(),
            },
            LogEntry::Raw {
                turn: 1,
                attempt: 1,
                line: "{}".into(),
            },
            LogEntry::Message {
                turn: 1,
                attempt: 1,
                message: AgentMessage::SessionStarted {
                    provider: "demo".into(),
                    session_id: Some("abc".into()),
                },
            },
            LogEntry::TurnEnded {
                turn: 1,
                outcome: "failed: agent_error".into(),
            },
        ];
        let resumed = from_entries(&entries).unwrap();
        assert_eq!(resumed.provider, "demo");
        assert_eq!(resumed.session_id.as_deref(), Some("abc"));
        assert_eq!(resumed.events.len(), 3);
        assert_eq!(
            resumed.events[2],
            OrchestratorEvent::TurnEnded {
                turn: 1,
                outcome: TurnOutcome::Failed {
                    reason: "agent_error".into(),
                    message: String::new()
                }
            }
        );
        assert!(from_entries(&entries[1..]).is_none());
    }
}
