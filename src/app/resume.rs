//! Reopening a conversation: which one (`--resume`, `--resume ID`, the `/resume` picker), whether
//! it may be resumed here, and its log turned back into the events that built its transcript.
//!
//! A conversation is resumed only in its own working directory and under its own provider: its
//! agent session lives in that CLI's store for that directory, and another CLI given its id would
//! fail every prompt.

use std::path::Path;
use std::time::{Duration, Instant};

use super::state::AppState;
use super::transcript::NoticeLevel;
use crate::orchestrator::{OrchestratorEvent, TurnOutcome};
use crate::session_log::lock::{ConversationLock, LockError};
use crate::session_log::{
    list_conversations, read_session_log, read_summary, ConversationSummary, LogEntry, Origin,
};
use crate::stream::FailureReason;

/// A conversation to reopen: what its log says, and the events that rebuild its transcript.
#[derive(Debug, Clone)]
pub struct ResumedConversation {
    pub(crate) summary: ConversationSummary,
    /// Each with the wall-clock time (ms) it was logged at, where the log has it.
    pub events: Vec<(OrchestratorEvent, Option<u64>)>,
}

/// The conversations of the working directory `cwd` that the chat can reopen, newest first
/// (headless runs are conversations of their own and are not listed).
pub(crate) fn conversations_here(sessions: &Path, cwd: &Path) -> Vec<ConversationSummary> {
    let cwd = cwd.display().to_string();
    list_conversations(sessions)
        .into_iter()
        .filter(|summary| summary.origin == Origin::Chat && summary.cwd == cwd)
        .collect()
}

/// The conversation `--resume [QUERY]` names: without a query the last one of `cwd`; with one,
/// the conversation whose id (or log name) starts with it, which must belong to `cwd`.
pub(crate) fn find(
    sessions: &Path,
    cwd: &Path,
    query: Option<&str>,
) -> Result<ConversationSummary, String> {
    let Some(query) = query.map(str::trim).filter(|query| !query.is_empty()) else {
        return conversations_here(sessions, cwd)
            .into_iter()
            .next()
            .ok_or_else(|| format!("no earlier conversation in {}", cwd.display()));
    };
    let mut named: Vec<ConversationSummary> = list_conversations(sessions)
        .into_iter()
        .filter(|summary| summary.is_named(query))
        .collect();
    match named.len() {
        0 => Err(format!(
            "no conversation {query:?} in {}",
            sessions.display()
        )),
        1 => {
            let summary = named.remove(0);
            if summary.cwd != cwd.display().to_string() {
                return Err(format!(
                    "conversation {} belongs to {}; resume it from there (cd {} && agentty --resume {})",
                    short(&summary.id),
                    summary.cwd,
                    summary.cwd,
                    short(&summary.id)
                ));
            }
            Ok(summary)
        }
        many => Err(format!(
            "{query:?} names {many} conversations ({}); give more of the id",
            named
                .iter()
                .map(|summary| short(&summary.id))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Refuses to continue a conversation under a provider other than its own.
pub(crate) fn check_provider(
    summary: &ConversationSummary,
    requested: Option<&str>,
) -> Result<(), String> {
    match requested {
        Some(requested) if requested != summary.provider => Err(format!(
            "conversation {} ran on {}, not {requested}: its agent session exists only there. \
             Resume it with --provider {} (or without --provider), or start a new conversation.",
            short(&summary.id),
            summary.provider,
            summary.provider
        )),
        _ => Ok(()),
    }
}

/// How this launch may use a conversation it reopens: one writer per conversation.
#[derive(Debug)]
pub(crate) enum Access {
    /// It appends to it, holding its lock (`None`: the lock could not be taken for another
    /// reason than another writer, such as a read-only state dir; that is logged, and writing
    /// the log will say the rest).
    Append(Option<ConversationLock>),
    /// Another agentty appends to it: it is shown read-only, and the next prompt starts a new
    /// conversation.
    ReadOnly { pid: Option<u32> },
}

/// Takes the conversation's lock and reads it back; without the lock, read-only.
pub(crate) fn reopen(
    summary: ConversationSummary,
) -> Result<(ResumedConversation, Access), String> {
    let access = match ConversationLock::acquire(&summary.path) {
        Ok(lock) => Access::Append(Some(lock)),
        Err(LockError::Held { pid }) => Access::ReadOnly { pid },
        Err(error) => {
            tracing::warn!(%error, log = %summary.path.display(), "resuming without the lock");
            Access::Append(None)
        }
    };
    // Read again under the lock: what a writer added before it let go counts (the turn ids
    // this launch numbers on from).
    let summary = match access {
        Access::Append(_) => read_summary(&summary.path).unwrap_or(summary),
        Access::ReadOnly { .. } => summary,
    };
    Ok((load(summary)?, access))
}

/// What the chat says when it shows a conversation another agentty writes.
pub(crate) fn read_only_notice(summary: &ConversationSummary, pid: Option<u32>) -> String {
    let holder = pid.map_or_else(String::new, |pid| format!(" (pid {pid})"));
    format!(
        "Conversation {} is open in another agentty{holder}: shown here read-only, and nothing \
         is added to it. The next prompt starts a new conversation with a fresh agent session.",
        short(&summary.id)
    )
}

/// Reads a conversation's log back into the events that built its transcript.
///
/// Every turn shown ends: one whose end the log lacks (agentty stopped before it, or a line
/// was lost) is closed as interrupted, so nothing looks as if it still ran; the end of a turn
/// whose start was lost is left out, as the rest of that turn is (the chat shows only the
/// running turn's messages).
pub fn load(summary: ConversationSummary) -> Result<ResumedConversation, String> {
    let entries = read_session_log(&summary.path)
        .map_err(|error| format!("cannot read {}: {error}", summary.path.display()))?;
    let mut events = Vec::new();
    let mut open_turn = None;
    let mut last_at = None;
    for entry in entries {
        let event = match entry {
            LogEntry::Turn {
                turn,
                prompt,
                at_ms,
            } => Some((OrchestratorEvent::TurnStarted { turn, prompt }, at_ms)),
            LogEntry::Compaction {
                turn,
                instructions,
                at_ms,
            } => Some((
                OrchestratorEvent::CompactionStarted { turn, instructions },
                at_ms,
            )),
            LogEntry::Message {
                turn,
                attempt,
                message,
                at_ms,
            } => Some((
                OrchestratorEvent::Message {
                    turn,
                    attempt,
                    message,
                },
                at_ms,
            )),
            LogEntry::TurnEnded {
                turn,
                outcome,
                at_ms,
            } if open_turn == Some(turn) => {
                open_turn = None;
                Some((
                    OrchestratorEvent::TurnEnded {
                        turn,
                        outcome: outcome.outcome(),
                    },
                    at_ms,
                ))
            }
            // What the user answered to a conflict (asked again only in the run that met it)
            // is not replayed: only what was done.
            LogEntry::Undone {
                turn,
                outcome,
                at_ms,
            } if !stopped_by_conflicts(&outcome) => {
                Some((OrchestratorEvent::Undone { turn, outcome }, at_ms))
            }
            LogEntry::TurnCheckpointed {
                turn,
                conversation_rewind,
            } => Some((
                OrchestratorEvent::TurnCheckpointed {
                    turn,
                    conversation_rewind,
                },
                None,
            )),
            LogEntry::Rewound { rewind, at_ms } if rewind.stopped_by_conflicts().is_none() => {
                Some((OrchestratorEvent::Rewound(rewind), at_ms))
            }
            LogEntry::Images { turn, images } => {
                Some((OrchestratorEvent::ImagesAttached { turn, images }, last_at))
            }
            LogEntry::Undone { .. }
            | LogEntry::Rewound { .. }
            | LogEntry::TurnEnded { .. }
            | LogEntry::Header(_)
            | LogEntry::Raw { .. }
            | LogEntry::Session { .. }
            // Set again on the agent once it runs (`ConversationSummary::settings`).
            | LogEntry::Setting { .. } => None,
        };
        if let Some((
            OrchestratorEvent::TurnStarted { turn, .. }
            | OrchestratorEvent::CompactionStarted { turn, .. },
            _,
        )) = &event
        {
            // A turn starts while another is open: that one never ended.
            if let Some(unended) = open_turn.replace(*turn) {
                events.push((
                    interrupted(unended, "the log does not say how this turn ended"),
                    last_at,
                ));
            }
        }
        if let Some((event, at_ms)) = event {
            last_at = at_ms.or(last_at);
            events.push((event, at_ms));
        }
    }
    if let Some(turn) = open_turn {
        // agentty ended (or crashed) before this turn did: it must not look as if it still ran.
        events.push((
            interrupted(turn, "agentty stopped before this turn ended"),
            last_at,
        ));
    }
    Ok(ResumedConversation { summary, events })
}

/// An undo that did nothing because files changed since the turn: the user was asked.
fn stopped_by_conflicts(outcome: &Result<crate::snapshot::UndoOutcome, String>) -> bool {
    matches!(outcome, Ok(done) if done.stopped_by_conflicts())
}

/// The end given to a turn whose end the log lacks.
fn interrupted(turn: crate::orchestrator::TurnId, why: &str) -> OrchestratorEvent {
    OrchestratorEvent::TurnEnded {
        turn,
        outcome: TurnOutcome::Failed {
            reason: FailureReason::Interrupted,
            message: why.to_owned(),
        },
    }
}

/// Rebuilds the transcript in `state`. Logged times become instants as far in the past as they
/// are (so `/rewind` says how long ago each prompt was sent) and at the same distances from one
/// another (so tool durations and stop times read as they did).
pub(crate) fn replay_into(state: &mut AppState, events: Vec<(OrchestratorEvent, Option<u64>)>) {
    replay_at(state, events, Instant::now(), crate::session_log::now_ms());
}

/// [`replay_into`] with the clocks read: `now` is the wall-clock time `now_ms`.
fn replay_at(
    state: &mut AppState,
    events: Vec<(OrchestratorEvent, Option<u64>)>,
    now: Instant,
    now_ms: u64,
) {
    // The editor stays the user's: a message a logged turn gave back (`not_delivered`) was
    // given back then, not now.
    let editor = std::mem::take(&mut state.composer);
    let first_at = events.iter().find_map(|(_, at_ms)| *at_ms);
    // The first logged event, as long ago as it was (a clock set back since counts as now).
    let base = first_at
        .and_then(|first| now.checked_sub(Duration::from_millis(now_ms.saturating_sub(first))))
        .unwrap_or(now);
    let mut last = base;
    for (event, at_ms) in events {
        let now = match (first_at, at_ms) {
            (Some(first), Some(at)) => base + Duration::from_millis(at.saturating_sub(first)),
            _ => last,
        };
        last = now;
        state.on_orchestrator_event(event, now);
    }
    state.composer = editor;
}

/// Rebuilds a reopened conversation's transcript in `state` and says what the next prompt
/// continues.
pub(crate) fn show_resumed(state: &mut AppState, resumed: ResumedConversation) {
    replay_into(state, resumed.events);
    state.session_id = resumed
        .summary
        .session_id
        .as_deref()
        .map(crate::app::inert::InertText::new);
    state.show_notice(NoticeLevel::Info, &resumed_notice(&resumed.summary));
}

/// Shows a conversation that another agentty writes, and says that the next prompt starts a
/// new one.
pub(crate) fn show_read_only(state: &mut AppState, resumed: ResumedConversation, pid: Option<u32>) {
    replay_into(state, resumed.events);
    // The replay named the other agentty's agent session; this chat's next prompt starts its own.
    state.session_id = None;
    state.show_notice(
        NoticeLevel::Warning,
        &read_only_notice(&resumed.summary, pid),
    );
}

/// What the chat says when it reopens a conversation.
fn resumed_notice(summary: &ConversationSummary) -> String {
    let session = match (&summary.session_id, summary.rewound_to_start) {
        (Some(id), _) => format!("continues agent session {id}"),
        (None, true) => "starts a fresh agent session (the conversation was rewound to before \
                         its first prompt; /rewind can still undo that)"
            .to_owned(),
        (None, false) if summary.completed_turns == 0 => {
            "starts a fresh agent session (no turn completed before)".to_owned()
        }
        (None, false) => "starts a fresh agent session (no agent session was kept)".to_owned(),
    };
    format!(
        "Resumed conversation {} ({}, {} {}); the next prompt {session}",
        short(&summary.id),
        summary.provider,
        summary.turns,
        if summary.turns == 1 { "turn" } else { "turns" },
    )
}

/// The first characters of an id, enough to tell conversations apart in a message.
pub(crate) use crate::session_log::short_conversation_id as short;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session_log::{NewConversation, SessionLogWriter};
    use crate::stream::AgentMessage;

    #[test]
    fn replayed_prompts_are_as_old_as_the_log_says() {
        let now = Instant::now();
        let now_ms = 10_000_000;
        let five_minutes = 5 * 60 * 1000;
        let events = vec![
            (
                OrchestratorEvent::TurnStarted {
                    turn: 1,
                    prompt: "old".into(),
                },
                Some(now_ms - five_minutes),
            ),
            (
                OrchestratorEvent::TurnEnded {
                    turn: 1,
                    outcome: TurnOutcome::Completed,
                },
                Some(now_ms - five_minutes + 2_000),
            ),
            (
                OrchestratorEvent::TurnStarted {
                    turn: 2,
                    prompt: "recent".into(),
                },
                Some(now_ms - 30_000),
            ),
        ];
        let mut state = AppState::new(Default::default());
        replay_at(&mut state, events, now, now_ms);
        let ages: Vec<u64> = state
            .turn_prompts
            .iter()
            .map(|record| now.saturating_duration_since(record.sent).as_secs())
            .collect();
        assert_eq!(ages, [300, 30]);
    }

    /// A conversation in `cwd` on `provider` whose one turn sent `prompt` and was answered;
    /// its id.
    fn conversation(
        sessions: &Path,
        cwd: &str,
        provider: &str,
        origin: Origin,
        prompt: &str,
    ) -> String {
        let id = logged(
            sessions,
            NewConversation {
                provider: provider.into(),
                cwd: cwd.into(),
                origin,
                start: Default::default(),
            },
            &[
                OrchestratorEvent::TurnStarted {
                    turn: 1,
                    prompt: prompt.into(),
                },
                OrchestratorEvent::Message {
                    turn: 1,
                    attempt: 1,
                    message: AgentMessage::Assistant {
                        delta: "answer".into(),
                    },
                },
                OrchestratorEvent::TurnEnded {
                    turn: 1,
                    outcome: TurnOutcome::Completed,
                },
            ],
        );
        // File times are what "newest" means: keep them apart.
        std::thread::sleep(Duration::from_millis(15));
        id
    }

    /// A new conversation's log holding `events`; its id.
    fn logged(sessions: &Path, new: NewConversation, events: &[OrchestratorEvent]) -> String {
        let writer = SessionLogWriter::start(sessions, new).unwrap();
        let id = writer.conversation_id().to_owned();
        record_and_close(writer, events);
        id
    }

    /// A later launch in `/p` appends `events` to conversation `id`: its summary after that.
    fn appended(sessions: &Path, id: &str, events: &[OrchestratorEvent]) -> ConversationSummary {
        let summary = find(sessions, Path::new("/p"), Some(id)).unwrap();
        let writer = SessionLogWriter::resume(&summary.path, id, None).unwrap();
        record_and_close(writer, events);
        find(sessions, Path::new("/p"), Some(id)).unwrap()
    }

    /// Why `find` finds nothing to resume in `cwd`.
    fn refusal(sessions: &Path, cwd: &str, id: Option<&str>) -> String {
        find(sessions, Path::new(cwd), id).unwrap_err()
    }

    fn record_and_close(writer: SessionLogWriter, events: &[OrchestratorEvent]) {
        for event in events {
            writer.record_event(event);
        }
    }

    #[test]
    fn resume_without_an_id_takes_the_last_chat_of_this_directory() {
        let sessions = tempfile::tempdir().unwrap();
        let here = conversation(sessions.path(), "/p/here", "demo", Origin::Chat, "mine");
        conversation(
            sessions.path(),
            "/p/elsewhere",
            "demo",
            Origin::Chat,
            "theirs",
        );
        conversation(
            sessions.path(),
            "/p/here",
            "demo",
            Origin::Headless,
            "scripted",
        );
        let found = find(sessions.path(), Path::new("/p/here"), None).unwrap();
        assert_eq!(found.id, here);
        assert_eq!(found.first_prompt, "mine");
        let error = refusal(sessions.path(), "/p/none", None);
        assert!(
            error.contains("no earlier conversation in /p/none"),
            "{error}"
        );
    }

    #[test]
    fn an_id_from_another_directory_or_provider_is_refused_with_the_way_out() {
        let sessions = tempfile::tempdir().unwrap();
        let id = conversation(sessions.path(), "/p/a", "claude", Origin::Chat, "hi");
        let error = refusal(sessions.path(), "/p/b", Some(&id[..8]));
        assert!(error.contains("belongs to /p/a"), "{error}");
        let found = find(sessions.path(), Path::new("/p/a"), Some(&id[..8])).unwrap();
        let error = check_provider(&found, Some("pi")).unwrap_err();
        assert!(error.contains("ran on claude, not pi"), "{error}");
        assert!(check_provider(&found, Some("claude")).is_ok());
        assert!(check_provider(&found, None).is_ok());
        let error = refusal(sessions.path(), "/p/a", Some("nosuch"));
        assert!(error.contains("no conversation"), "{error}");
    }

    #[test]
    fn a_log_becomes_the_events_that_built_its_transcript_and_an_open_turn_is_closed() {
        let sessions = tempfile::tempdir().unwrap();
        let id = conversation(sessions.path(), "/p", "demo", Origin::Chat, "hi");
        // A second launch crashed mid-turn.
        let crashed = OrchestratorEvent::TurnStarted {
            turn: 2,
            prompt: "crash".into(),
        };
        let summary = appended(sessions.path(), &id, &[crashed]);
        let resumed = load(summary).unwrap();
        let events: Vec<_> = resumed.events.iter().map(|(event, _)| event).collect();
        assert_eq!(events.len(), 5, "{events:?}");
        assert!(matches!(
            events[0],
            OrchestratorEvent::TurnStarted { turn: 1, .. }
        ));
        assert!(matches!(
            events[4],
            OrchestratorEvent::TurnEnded {
                turn: 2,
                outcome: TurnOutcome::Failed { .. }
            }
        ));
        assert!(resumed.events.iter().all(|(_, at)| at.is_some()));
    }

    #[test]
    fn a_conversation_someone_writes_is_reopened_read_only_and_its_lock_is_held_while_appending() {
        let sessions = tempfile::tempdir().unwrap();
        let id = conversation(sessions.path(), "/p", "demo", Origin::Chat, "hi");
        let summary = find(sessions.path(), Path::new("/p"), Some(&id)).unwrap();
        let (_, access) = reopen(summary.clone()).unwrap();
        let Access::Append(Some(lock)) = access else {
            panic!("{access:?}");
        };
        let (resumed, access) = reopen(summary.clone()).unwrap();
        let Access::ReadOnly { pid } = access else {
            panic!("{access:?}");
        };
        assert_eq!(pid, Some(std::process::id()));
        assert_eq!(resumed.events.len(), 3, "the transcript is still shown");
        let notice = read_only_notice(&resumed.summary, pid);
        assert!(
            notice.contains(&format!(
                "is open in another agentty (pid {})",
                std::process::id()
            )),
            "{notice}"
        );
        drop(lock);
        assert!(matches!(
            reopen(summary).unwrap().1,
            Access::Append(Some(_))
        ));
    }

    #[test]
    fn a_damaged_log_shows_every_turn_it_can_and_leaves_none_running() {
        use crate::app::state::StartupInfo;
        use crate::app::transcript::CellBody;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000000000000001-abcdef12.jsonl");
        let turn = |turn: u64, prompt: &str| {
            serde_json::json!({"kind":"turn","turn":turn,"prompt":prompt,"at_ms":turn * 1000})
                .to_string()
        };
        let answer = |turn: u64| {
            serde_json::json!({"kind":"message","turn":turn,"attempt":1,"at_ms":turn * 1000 + 10,
                "message":{"type":"assistant","delta":format!("answer {turn}")}})
            .to_string()
        };
        let ended = |turn: u64| {
            serde_json::json!({"kind":"turn_ended","turn":turn,"outcome":{"kind":"completed"},"at_ms":turn * 1000 + 20})
                .to_string()
        };
        let mut log: Vec<u8> = Vec::new();
        let mut line = |bytes: &[u8]| {
            log.extend_from_slice(bytes);
            log.push(b'\n');
        };
        // A corrupt byte in the header.
        line(br#"{"kind":"header","version":2,"provider":"demo","started_at_ms":0,"cwd":"/p","conversation_id":"abcdef12-0000"x,"origin":"chat"}"#);
        line(turn(1, "one").as_bytes());
        line(answer(1).as_bytes());
        line(ended(1).as_bytes());
        // Turn 2's answer holds invalid UTF-8.
        line(turn(2, "two").as_bytes());
        line(
            &[
                answer(2).replace("answer", "answer \u{1}").as_bytes(),
                b"\xff",
            ]
            .concat(),
        );
        line(&[answer(2).as_bytes(), b"\xff\xfe"].concat());
        line(ended(2).as_bytes());
        // Turn 3's end was torn and turn 4 glued to it by an older agentty.
        line(turn(3, "three").as_bytes());
        line(answer(3).as_bytes());
        line(format!("{}{}", &ended(3)[..40], turn(4, "four")).as_bytes());
        line(answer(4).as_bytes());
        line(ended(4).as_bytes());
        // Turn 5's start is lost for good; its end must not end turn 6's display.
        line(br#"{"kind":"turn","turn":5,"pro\xff\xfe garbage"#);
        line(answer(5).as_bytes());
        line(ended(5).as_bytes());
        line(turn(6, "six").as_bytes());
        line(answer(6).as_bytes());
        std::fs::write(&path, &log).unwrap();

        let summary = crate::session_log::read_summary(&path).unwrap();
        assert_eq!(summary.id, "abcdef12-0000");
        assert_eq!(summary.provider, "demo");
        assert_eq!(summary.turns, 5, "turns 1, 2, 3, 4 and 6 are read");
        assert_eq!(summary.last_turn, 6, "the next turn is 7: no id repeats");
        let resumed = load(summary).unwrap();
        let mut state = AppState::new(StartupInfo::default());
        replay_into(&mut state, resumed.events);
        assert!(state.turn.is_none(), "no turn looks as if it still ran");
        let prompts = state.transcript.pick_all(|body| match body {
            CellBody::User(user) => Some(user.text.as_str()),
            _ => None,
        });
        assert_eq!(prompts, ["one", "two", "three", "four", "six"]);
    }

    #[test]
    fn durations_stop_stages_and_failure_details_survive_a_resume() {
        use crate::app::state::StartupInfo;
        use crate::app::transcript::{CellBody, ToolStatus};
        use crate::stream::Failure;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000000000000001-abcdef12.jsonl");
        let entries = [
            serde_json::json!({"kind":"header","version":2,"provider":"demo","started_at_ms":0,"cwd":"/p","conversation_id":"abcdef12-0000"}),
            serde_json::json!({"kind":"turn","turn":1,"prompt":"build","at_ms":1000}),
            serde_json::json!({"kind":"message","turn":1,"attempt":1,"at_ms":1100,"message":{"type":"tool.call","id":"t1","name":"bash","input":{"command":"make"}}}),
            serde_json::json!({"kind":"message","turn":1,"attempt":1,"at_ms":3600,"message":{"type":"tool.completed","id":"t1","output":"ok"}}),
            serde_json::json!({"kind":"message","turn":1,"attempt":1,"at_ms":4000,"message":{"type":"terminal.cancelled","stop_stage":"grace","elapsed_ms":1200}}),
            serde_json::json!({"kind":"turn_ended","turn":1,"outcome":{"kind":"cancelled"},"at_ms":4000}),
            serde_json::json!({"kind":"turn","turn":2,"prompt":"again","at_ms":5000}),
        ];
        let text: String = entries.iter().map(|entry| format!("{entry}\n")).collect();
        let failed = AgentMessage::Failed(Failure {
            reason: crate::stream::FailureReason::AgentError,
            message: "HTTP 500: overloaded".into(),
            stderr: "first stderr line\nsecond".into(),
            ..Failure::default()
        });
        let text = format!(
            "{text}{}\n{}\n",
            serde_json::json!({"kind":"message","turn":2,"attempt":1,"at_ms":5100,"message":failed}),
            serde_json::json!({"kind":"turn_ended","turn":2,"outcome":{"kind":"failed","reason":"agent_error","message":"HTTP 500: overloaded"},"at_ms":5100}),
        );
        std::fs::write(&path, text).unwrap();
        let summary = crate::session_log::read_summary(&path).unwrap();
        let mut state = AppState::new(StartupInfo::default());
        replay_into(&mut state, load(summary).unwrap().events);
        let bodies: Vec<&CellBody> = state.transcript.bodies().collect();
        let tool = bodies
            .iter()
            .find_map(|body| match body {
                CellBody::Tool(tool) => Some(tool.status),
                _ => None,
            })
            .unwrap();
        assert_eq!(
            tool,
            ToolStatus::Done {
                elapsed: Duration::from_millis(2500)
            }
        );
        let notices: Vec<String> = bodies
            .iter()
            .filter_map(|body| match body {
                CellBody::Notice(notice) => {
                    Some(format!("{} | {}", notice.message, notice.details_summary))
                }
                _ => None,
            })
            .collect();
        assert!(
            notices
                .iter()
                .any(|text| text.contains("the agent exited 1.2 s after the interrupt")),
            "{notices:?}"
        );
        assert!(
            notices.iter().any(
                |text| text.contains("HTTP 500: overloaded") && text.contains("2 stderr lines")
            ),
            "{notices:?}"
        );
        assert!(state.turn.is_none());
    }

    #[test]
    fn permission_requests_their_outcomes_and_the_plan_survive_a_resume() {
        use crate::app::state::StartupInfo;
        use crate::app::transcript::{CellBody, PermissionOutcome};
        use crate::stream::{PermissionOptionKind, PermissionResolver};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000000000000001-abcdef12.jsonl");
        let options = serde_json::json!([
            {"id":"allow","kind":"allow_once","name":"Allow"},
            {"id":"reject","kind":"reject_once","name":"Reject"}
        ]);
        let entries = [
            serde_json::json!({"kind":"header","version":2,"provider":"gemini","started_at_ms":0,"cwd":"/p","conversation_id":"abcdef12-0000"}),
            serde_json::json!({"kind":"turn","turn":1,"prompt":"touch x","at_ms":1000}),
            serde_json::json!({"kind":"message","turn":1,"attempt":1,"at_ms":1100,"message":{"type":"plan","entries":[{"content":"touch","status":"in_progress","priority":"high"}]}}),
            serde_json::json!({"kind":"message","turn":1,"attempt":1,"at_ms":1200,"message":{"type":"permission.request","id":"0","title":"touch x","kind":"execute","options":options,"command":"touch x"}}),
            serde_json::json!({"kind":"message","turn":1,"attempt":1,"at_ms":1300,"message":{"type":"permission.resolved","id":"0","outcome":"allow","by":"user"}}),
            serde_json::json!({"kind":"message","turn":1,"attempt":1,"at_ms":1400,"message":{"type":"permission.request","id":"1","title":"rm y","kind":"execute","options":options}}),
            serde_json::json!({"kind":"message","turn":1,"attempt":1,"at_ms":1500,"message":{"type":"permission.resolved","id":"1","outcome":"reject","by":"policy"}}),
            serde_json::json!({"kind":"message","turn":1,"attempt":1,"at_ms":1600,"message":{"type":"permission.request","id":"2","title":"ls","kind":"execute","options":options}}),
            serde_json::json!({"kind":"turn_ended","turn":1,"outcome":{"kind":"cancelled"},"at_ms":1700}),
        ];
        let text: String = entries.iter().map(|entry| format!("{entry}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let summary = crate::session_log::read_summary(&path).unwrap();
        let mut state = AppState::new(StartupInfo::default());
        replay_into(&mut state, load(summary).unwrap().events);
        assert!(
            state.permission_prompts.is_empty(),
            "no prompt opens on a resume"
        );
        let outcomes = state.transcript.pick_all(|body| match body {
            CellBody::Permission(permission) => Some(permission.outcome.clone()),
            _ => None,
        });
        assert_eq!(
            outcomes,
            [
                PermissionOutcome::Chosen {
                    kind: Some(PermissionOptionKind::AllowOnce),
                    name: "Allow".into(),
                    by: PermissionResolver::User
                },
                PermissionOutcome::Chosen {
                    kind: Some(PermissionOptionKind::RejectOnce),
                    name: "Reject".into(),
                    by: PermissionResolver::Policy
                },
                PermissionOutcome::Cancelled {
                    by: PermissionResolver::User
                },
            ]
        );
        assert!(state
            .transcript
            .cells()
            .iter()
            .any(|cell| matches!(&cell.body, CellBody::Plan(plan) if plan.entries.len() == 1)));
    }

    #[test]
    fn a_message_given_back_in_a_logged_turn_stays_out_of_the_editor_on_a_resume() {
        use crate::app::state::StartupInfo;
        let events = vec![
            (
                OrchestratorEvent::TurnStarted {
                    turn: 1,
                    prompt: "run the sleep-tool".into(),
                },
                Some(0),
            ),
            (
                OrchestratorEvent::Message {
                    turn: 1,
                    attempt: 1,
                    message: AgentMessage::notice(
                        crate::stream::NoticeKind::NotDelivered,
                        "my steer",
                    ),
                },
                Some(10),
            ),
            (
                OrchestratorEvent::TurnEnded {
                    turn: 1,
                    outcome: TurnOutcome::Cancelled,
                },
                Some(20),
            ),
        ];
        let mut state = AppState::new(StartupInfo::default());
        state.composer.set_text("my draft");
        replay_into(&mut state, events);
        assert_eq!(state.composer.text(), "my draft");
    }

    #[test]
    fn a_prompt_s_images_are_logged_without_their_bytes_and_come_back_on_resume() {
        let sessions = tempfile::tempdir().unwrap();
        let image = crate::attachment::sample_png();
        let prompt = "what is [image: shot.png 11 B] ?";
        let id = logged(
            sessions.path(),
            NewConversation {
                provider: "demo".into(),
                cwd: "/p".into(),
                origin: Origin::Chat,
                start: Default::default(),
            },
            &[
                OrchestratorEvent::TurnStarted {
                    turn: 1,
                    prompt: prompt.into(),
                },
                OrchestratorEvent::ImagesAttached {
                    turn: 1,
                    images: vec![image.record()],
                },
                OrchestratorEvent::TurnEnded {
                    turn: 1,
                    outcome: TurnOutcome::Completed,
                },
            ],
        );
        let summary = find(sessions.path(), Path::new("/p"), Some(&id)).unwrap();
        let text = std::fs::read_to_string(&summary.path).unwrap();
        assert!(text.contains(&image.hash), "{text}");
        assert!(text.contains(r#""path":"/work/shot.png""#), "{text}");
        assert!(!text.contains(&image.base64()), "never the bytes: {text}");
        let resumed = load(summary).unwrap();
        let events: Vec<_> = resumed.events.iter().map(|(event, _)| event).collect();
        assert!(
            matches!(events[0], OrchestratorEvent::TurnStarted { prompt: shown, .. } if shown == prompt),
            "the transcript shows the prompt with its chip: {events:?}"
        );
        assert_eq!(
            events[1],
            &OrchestratorEvent::ImagesAttached {
                turn: 1,
                images: vec![image.record()],
            }
        );
    }

    #[test]
    fn a_compaction_is_replayed_without_a_prompt_and_resume_continues_its_session() {
        use crate::app::state::StartupInfo;
        use crate::app::transcript::CellBody;
        let sessions = tempfile::tempdir().unwrap();
        let id = conversation(sessions.path(), "/p", "pi", Origin::Chat, "hi");
        let summary = appended(
            sessions.path(),
            &id,
            &[
                OrchestratorEvent::CompactionStarted {
                    turn: 2,
                    instructions: Some("keep it".into()),
                },
                OrchestratorEvent::Message {
                    turn: 2,
                    attempt: 1,
                    message: crate::provider::compaction::compacted_notice(Some(5_000), Some(700)),
                },
                OrchestratorEvent::TurnEnded {
                    turn: 2,
                    outcome: TurnOutcome::Completed,
                },
                OrchestratorEvent::SessionChanged {
                    session_id: Some("compacted-session".into()),
                },
            ],
        );
        assert_eq!(summary.session_id.as_deref(), Some("compacted-session"));
        assert_eq!(summary.last_turn, 2, "the next turn is numbered after it");
        assert_eq!(summary.later_prompts, Vec::<String>::new(), "no prompt");
        let resumed = load(summary).unwrap();
        let mut state = AppState::new(StartupInfo::default());
        replay_into(&mut state, resumed.events);
        let texts = state.transcript.pick_all(|body| match body {
            CellBody::Notice(notice) => Some(notice.message.to_string()),
            _ => None,
        });
        assert!(
            texts
                .iter()
                .any(|text| text.contains("Conversation compacted: 5,000 → 700 tokens")),
            "{texts:?}"
        );
        let users = state
            .transcript
            .cells()
            .iter()
            .filter(|cell| matches!(cell.body, CellBody::User(_)))
            .count();
        assert_eq!(users, 1, "only the real prompt");
        assert!(state.turn.is_none(), "the compaction ended");
    }
}
