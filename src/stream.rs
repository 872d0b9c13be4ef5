//! The shared message stream: the one vocabulary every backend is mapped into.
//!
//! The JSON field names below are a contract (DESIGN.md): headless output, session logs and
//! test fixtures are read by tools outside the crate. Fields may be added; none may be renamed.
//! Every attempt's stream ends with exactly one `terminal.*` message and nothing follows it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of the shared stream, serialised as one JSON object with a `type` field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum AgentMessage {
    #[serde(rename = "session.started")]
    SessionStarted {
        provider: String,
        session_id: Option<String>,
        /// The model the agent says it runs, when it says so at the start.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    #[serde(rename = "session.resumed")]
    SessionResumed {
        provider: String,
        session_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// New assistant text only; the deltas of a turn concatenate to exactly the agent's text.
    #[serde(rename = "assistant")]
    Assistant { delta: String },
    /// Thinking text as it streams, for display only (a live pane). Consumers that want whole
    /// blocks ignore it: every block also arrives whole as `assistant.thought`.
    #[serde(rename = "assistant.thinking")]
    Thinking { delta: String },
    /// A complete thinking block, released once the message ends with a non-tool-use stop.
    #[serde(rename = "assistant.thought")]
    Thought { text: String },
    #[serde(rename = "tool.call")]
    ToolCall {
        id: String,
        name: String,
        input: Value,
        /// The tool call of the sub-agent that made this one (its pane nests under that call).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_id: Option<String>,
    },
    /// Partial tool output so far (cumulative, not a delta).
    #[serde(rename = "tool.update")]
    ToolUpdate { id: String, output: String },
    #[serde(rename = "tool.completed")]
    ToolCompleted { id: String, output: String },
    #[serde(rename = "tool.failed")]
    ToolFailed { id: String, error: String },
    #[serde(rename = "terminal.completed")]
    Completed {
        stop_reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    #[serde(rename = "terminal.failed")]
    Failed(Failure),
    #[serde(rename = "terminal.cancelled")]
    Cancelled {
        stop_stage: StopStage,
        elapsed_ms: u64,
    },
    #[serde(rename = "notice")]
    Notice { kind: NoticeKind, message: String },
    /// Orchestrator level: written between attempts, never by a provider.
    #[serde(rename = "retry.scheduled")]
    RetryScheduled {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        reason: String,
    },
    /// The agent asks before acting (two-way transports only); answered by
    /// `permission.resolved`.
    #[serde(rename = "permission.request")]
    PermissionRequest(Box<PermissionRequest>),
    #[serde(rename = "permission.resolved")]
    PermissionResolved {
        id: String,
        /// The chosen option's `id`, or `cancelled`.
        outcome: String,
        by: PermissionResolver,
        /// What the user said to do instead, with a rejection.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// The agent's current plan, replacing the previous one.
    #[serde(rename = "plan")]
    Plan { entries: Vec<PlanEntry> },
    /// Orchestrator level, after a turn that changed files (whatever changed them): what it
    /// changed in the working tree, from agentty's snapshot before the turn.
    #[serde(rename = "turn.changes")]
    TurnChanges { files: Vec<FileChange> },
}

/// What the agent wants to do and the answers it offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PermissionRequest {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    pub title: String,
    /// The tool's kind as the agent names it (`execute`, `edit`, `read`, `fetch`, ...).
    pub kind: String,
    pub options: Vec<PermissionOption>,
    /// The shell command, when the tool runs one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The files the tool touches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// The edits the tool would make.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diffs: Vec<FileDiff>,
}

impl PermissionRequest {
    /// The first option of `kind`, if the agent offers one.
    pub fn option_of(&self, kind: PermissionOptionKind) -> Option<&PermissionOption> {
        self.options.iter().find(|option| option.kind == kind)
    }
}

/// One answer the agent offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionOption {
    pub id: String,
    pub kind: PermissionOptionKind,
    pub name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionOptionKind {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
}

impl PermissionOptionKind {
    pub(crate) fn allows(self) -> bool {
        matches!(
            self,
            PermissionOptionKind::AllowOnce | PermissionOptionKind::AllowAlways
        )
    }
}

/// The outcome of a permission request that no option answered: the turn was stopped.
pub const PERMISSION_CANCELLED: &str = "cancelled";

/// Who answered a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionResolver {
    User,
    /// The provider's configured policy (`allow` / `deny`, and headless runs).
    Policy,
}

/// An edit of one file: the text before (`None` for a new file) and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileDiff {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_text: Option<String>,
    pub new_text: String,
}

/// One step of the agent's plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanEntry {
    pub content: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
    /// `high`, `medium` or `low`.
    pub priority: String,
}

/// How a file changed in a turn (`turn.changes`' `status`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeStatus {
    Created,
    #[default]
    Modified,
    Deleted,
    /// A file that is not text, created, changed or deleted: no line counts.
    Binary,
}

impl ChangeStatus {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ChangeStatus::Created => "created",
            ChangeStatus::Modified => "modified",
            ChangeStatus::Deleted => "deleted",
            ChangeStatus::Binary => "binary",
        }
    }
}

/// One file a turn changed, with its line counts (0 for a binary file or one not kept).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// Relative to the working directory, `/`-separated.
    pub path: String,
    pub status: ChangeStatus,
    pub added: u64,
    pub removed: u64,
    /// Its content before or after was not kept (over the snapshot limits, unreadable, the
    /// state disk full, ...): the change is seen, but it cannot be shown or undone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub too_big: bool,
    /// Why it was not kept, in words (with `too_big`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_kept: Option<String>,
    /// What else changed: the permissions (`mode 644 → 755`) or the type (`file → folder`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What a `notice` message is about. On the wire its `kind` stays an open string (`wire`); the
/// kinds agentty writes or treats specially are named here, once, and any other is kept as it
/// arrived (`Other`, unsanitised).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum NoticeKind {
    /// The agent CLI retried on its own: assistant text after it starts afresh.
    AgentRetry,
    Warning,
    /// The agent's partial text so far was replaced by an authoritative final answer.
    Superseded,
    /// The orchestrator continues in a fresh agent session (the CLI lost its own, or a failed
    /// attempt could not be undone in it).
    FreshSession,
    /// A message the user typed during the turn reached the agent: steering (after a tool
    /// call) or a follow-up (after the turn). The text is the message.
    SteerDelivered,
    FollowUpDelivered,
    /// A message the user typed during the turn did not reach the agent (the turn ended, or was
    /// stopped, first): it goes back to the user. The text is the message.
    NotDelivered,
    /// What `/undo` put back (or why it could not).
    Undo,
    /// What `/rewind` took back (the agent's conversation, the files, or both).
    Rewind,
    /// A snapshot of the working tree could not keep something (over the limits).
    Snapshot,
    /// The permission policy refused what the agent asked to do, without asking the user.
    PermissionRefused,
    /// The agent changed its own mode (Gemini's approval mode); the text says to what.
    ModeChanged,
    /// The user rejected a request and said what to do instead; the transport cannot send that
    /// with the rejection, so it goes to the agent as the next prompt. The text is the note.
    PermissionFeedback,
    /// The agent's conversation was compacted (`/compact`); the text says by how much.
    Compacted,
    /// A kind agentty has no name for, as it arrived.
    Other(String),
}

impl NoticeKind {
    /// Every kind agentty names.
    const KNOWN: [NoticeKind; 14] = [
        NoticeKind::AgentRetry,
        NoticeKind::Warning,
        NoticeKind::Superseded,
        NoticeKind::FreshSession,
        NoticeKind::SteerDelivered,
        NoticeKind::FollowUpDelivered,
        NoticeKind::NotDelivered,
        NoticeKind::Undo,
        NoticeKind::Rewind,
        NoticeKind::Snapshot,
        NoticeKind::PermissionRefused,
        NoticeKind::ModeChanged,
        NoticeKind::PermissionFeedback,
        NoticeKind::Compacted,
    ];

    /// The `kind` string on the wire.
    pub fn wire(&self) -> &str {
        match self {
            NoticeKind::AgentRetry => "agent_retry",
            NoticeKind::Warning => "warning",
            NoticeKind::Superseded => "superseded",
            NoticeKind::FreshSession => "fresh_session",
            NoticeKind::SteerDelivered => "steer_delivered",
            NoticeKind::FollowUpDelivered => "follow_up_delivered",
            NoticeKind::NotDelivered => "not_delivered",
            NoticeKind::Undo => "undo",
            NoticeKind::Rewind => "rewind",
            NoticeKind::Snapshot => "snapshot",
            NoticeKind::PermissionRefused => "permission_refused",
            NoticeKind::ModeChanged => "mode_changed",
            NoticeKind::PermissionFeedback => "permission_feedback",
            NoticeKind::Compacted => "compacted",
            NoticeKind::Other(kind) => kind,
        }
    }

    /// The kind the wire string `kind` names.
    pub(crate) fn from_wire(kind: &str) -> Self {
        Self::KNOWN
            .into_iter()
            .find(|known| known.wire() == kind)
            .unwrap_or_else(|| NoticeKind::Other(kind.to_owned()))
    }
}

impl From<String> for NoticeKind {
    fn from(kind: String) -> Self {
        NoticeKind::from_wire(&kind)
    }
}

impl From<&str> for NoticeKind {
    fn from(kind: &str) -> Self {
        NoticeKind::from_wire(kind)
    }
}

/// A kind equals its wire string (tests and recorded lines name kinds by it).
impl PartialEq<str> for NoticeKind {
    fn eq(&self, wire: &str) -> bool {
        self.wire() == wire
    }
}

impl PartialEq<&str> for NoticeKind {
    fn eq(&self, wire: &&str) -> bool {
        self.wire() == *wire
    }
}

impl From<NoticeKind> for String {
    fn from(kind: NoticeKind) -> Self {
        match kind {
            NoticeKind::Other(kind) => kind,
            known => known.wire().to_owned(),
        }
    }
}

/// Why an attempt failed, with every diagnostic passed through whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// Machine-readable cause.
    pub reason: FailureReason,
    pub message: String,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// The assistant text produced before the failure.
    pub text: String,
    /// The tail of the agent's stderr.
    pub stderr: String,
    /// Lines that did not parse (bounded, each possibly cut).
    pub invalid_output_lines: Vec<String>,
    /// The HTTP status the agent reported, when it reported one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
}

/// Why an attempt failed, as `terminal.failed`'s `reason` names it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureReason {
    /// The agent could not be started (binary missing, not executable, refused to start).
    StartFailed,
    /// The agent reported an error (API error, auth, ...) in its own event stream.
    #[default]
    AgentError,
    ExitNonzero,
    KilledBySignal,
    /// The agent exited 0 without the event that says its work is done.
    NoCompletion,
    /// The agent kept running after its completion event and had to be stopped.
    Stalled,
    /// The agent CLI could not find the stored session it was asked to continue.
    SessionLost,
    /// agentty itself ended before the turn did (a resumed log's unfinished turn).
    Interrupted,
    /// A reason this version does not know (a log written by a later one).
    #[serde(other)]
    Other,
}

impl FailureReason {
    /// The wire name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FailureReason::StartFailed => "start_failed",
            FailureReason::AgentError => "agent_error",
            FailureReason::ExitNonzero => "exit_nonzero",
            FailureReason::KilledBySignal => "killed_by_signal",
            FailureReason::NoCompletion => "no_completion",
            FailureReason::Stalled => "stalled",
            FailureReason::SessionLost => "session_lost",
            FailureReason::Interrupted => "interrupted",
            FailureReason::Other => "other",
        }
    }
}

impl std::fmt::Display for FailureReason {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// Scripts and tests compare a reason with its wire name.
impl PartialEq<&str> for FailureReason {
    fn eq(&self, name: &&str) -> bool {
        self.as_str() == *name
    }
}

/// Token and cost accounting, as far as the agent reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Thinking (reasoning) tokens, where the CLI counts them apart from the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// The model that answered, as the CLI reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// The stage of the three-stage stop that ended the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StopStage {
    /// Stage 0: the agent ended the turn on its transport's own cancel (ACP `session/cancel`,
    /// pi RPC `abort`); its process stays. Also a stop that came before anything started.
    Cancel,
    /// Exited promptly on the Ctrl+C byte / SIGINT.
    Interrupt,
    /// Exited on its own during the grace period.
    Grace,
    /// Had to be killed.
    Kill,
}

impl StopStage {
    pub fn as_str(self) -> &'static str {
        match self {
            StopStage::Cancel => "cancel",
            StopStage::Interrupt => "interrupt",
            StopStage::Grace => "grace",
            StopStage::Kill => "kill",
        }
    }
}

impl AgentMessage {
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            AgentMessage::Completed { .. }
                | AgentMessage::Failed(_)
                | AgentMessage::Cancelled { .. }
        )
    }

    /// The message as one JSON line (without the newline), with no raw character that could act
    /// on a terminal (`sanitize::inert_json`): what `agentty run` prints and the logs keep.
    pub fn to_json_line(&self) -> String {
        // Serialising our own enum of strings and JSON values cannot fail.
        crate::sanitize::inert_json(self).unwrap_or_else(|error| {
            format!(r#"{{"type":"notice","kind":"warning","message":"unserialisable message: {error}"}}"#)
        })
    }

    pub fn from_json_line(line: &str) -> Result<AgentMessage, serde_json::Error> {
        serde_json::from_str(line)
    }

    /// The new assistant text, if this is an `assistant` delta.
    pub fn assistant_delta(&self) -> Option<&str> {
        match self {
            AgentMessage::Assistant { delta } => Some(delta),
            _ => None,
        }
    }

    pub fn notice(kind: impl Into<NoticeKind>, message: impl Into<String>) -> AgentMessage {
        AgentMessage::Notice {
            kind: kind.into(),
            message: message.into(),
        }
    }
}

/// A tool argument as text: a string as it is, an argument vector joined, or for a shell
/// wrapper (`["/bin/bash", "-lc", "make"]`, as the Codex adapter gives commands) the command it
/// runs. `None` for anything else.
pub(crate) fn argument_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let parts: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
            match parts.as_slice() {
                [shell, flag, command]
                    if shell.ends_with("sh") && flag.starts_with('-') && flag.ends_with('c') =>
                {
                    Some((*command).to_owned())
                }
                [] => None,
                parts => Some(parts.join(" ")),
            }
        }
        _ => None,
    }
}

/// The text the agent produced in `messages`: every `assistant` delta, concatenated.
pub fn assistant_text(messages: &[AgentMessage]) -> String {
    messages
        .iter()
        .filter_map(AgentMessage::assistant_delta)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(message: AgentMessage, expected: Value) {
        let line = message.to_json_line();
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value, expected);
        assert_eq!(AgentMessage::from_json_line(&line).unwrap(), message);
    }

    #[test]
    fn wire_shapes_match_the_design_table() {
        round_trip(
            AgentMessage::SessionStarted {
                provider: "pi".into(),
                session_id: None,
                model: None,
            },
            json!({"type":"session.started","provider":"pi","session_id":null}),
        );
        round_trip(
            AgentMessage::Assistant { delta: "hi".into() },
            json!({"type":"assistant","delta":"hi"}),
        );
        round_trip(
            AgentMessage::Thinking {
                delta: "hmm".into(),
            },
            json!({"type":"assistant.thinking","delta":"hmm"}),
        );
        round_trip(
            AgentMessage::ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                input: json!({"command":"ls"}),
                parent_id: None,
            },
            json!({"type":"tool.call","id":"c1","name":"bash","input":{"command":"ls"}}),
        );
        round_trip(
            AgentMessage::Failed(Failure {
                reason: crate::stream::FailureReason::StartFailed,
                message: "no such file".into(),
                ..Failure::default()
            }),
            json!({"type":"terminal.failed","reason":"start_failed","message":"no such file",
                   "exit_code":null,"signal":null,"text":"","stderr":"","invalid_output_lines":[]}),
        );
        round_trip(
            AgentMessage::Cancelled {
                stop_stage: StopStage::Grace,
                elapsed_ms: 1400,
            },
            json!({"type":"terminal.cancelled","stop_stage":"grace","elapsed_ms":1400}),
        );
        round_trip(
            AgentMessage::RetryScheduled {
                attempt: 2,
                max_attempts: 3,
                delay_ms: 2000,
                reason: "429".into(),
            },
            json!({"type":"retry.scheduled","attempt":2,"max_attempts":3,"delay_ms":2000,"reason":"429"}),
        );
    }

    #[test]
    fn permission_and_plan_shapes_match_the_design_table() {
        round_trip(
            AgentMessage::PermissionRequest(Box::new(PermissionRequest {
                id: "0".into(),
                tool_call_id: Some("t1".into()),
                title: "touch x".into(),
                kind: "execute".into(),
                options: vec![PermissionOption {
                    id: "proceed_once".into(),
                    kind: PermissionOptionKind::AllowOnce,
                    name: "Allow".into(),
                }],
                command: Some("touch x".into()),
                ..PermissionRequest::default()
            })),
            json!({"type":"permission.request","id":"0","tool_call_id":"t1","title":"touch x",
                   "kind":"execute","options":[{"id":"proceed_once","kind":"allow_once","name":"Allow"}],
                   "command":"touch x"}),
        );
        round_trip(
            AgentMessage::PermissionResolved {
                id: "0".into(),
                outcome: PERMISSION_CANCELLED.into(),
                by: PermissionResolver::User,
                message: None,
            },
            json!({"type":"permission.resolved","id":"0","outcome":"cancelled","by":"user"}),
        );
        round_trip(
            AgentMessage::PermissionResolved {
                id: "1".into(),
                outcome: "reject".into(),
                by: PermissionResolver::User,
                message: Some("use mkdir instead".into()),
            },
            json!({"type":"permission.resolved","id":"1","outcome":"reject","by":"user",
                   "message":"use mkdir instead"}),
        );
        round_trip(
            AgentMessage::Plan {
                entries: vec![PlanEntry {
                    content: "read".into(),
                    status: "pending".into(),
                    priority: "high".into(),
                }],
            },
            json!({"type":"plan","entries":[{"content":"read","status":"pending","priority":"high"}]}),
        );
    }

    #[test]
    fn turn_changes_shape_matches_the_design_table() {
        round_trip(
            AgentMessage::TurnChanges {
                files: vec![
                    FileChange {
                        path: "src/a.rs".into(),
                        status: ChangeStatus::Modified,
                        added: 3,
                        removed: 1,
                        ..FileChange::default()
                    },
                    FileChange {
                        path: "big.bin".into(),
                        status: ChangeStatus::Created,
                        added: 0,
                        removed: 0,
                        too_big: true,
                        not_kept: Some("over the 1024 KB a file".into()),
                        detail: None,
                    },
                ],
            },
            json!({"type":"turn.changes","files":[
                {"path":"src/a.rs","status":"modified","added":3,"removed":1},
                {"path":"big.bin","status":"created","added":0,"removed":0,"too_big":true,
                 "not_kept":"over the 1024 KB a file"}]}),
        );
    }

    #[test]
    fn only_terminal_messages_are_terminal() {
        assert!(AgentMessage::Completed {
            stop_reason: "stop".into(),
            usage: None
        }
        .is_terminal());
        assert!(!AgentMessage::Assistant {
            delta: String::new()
        }
        .is_terminal());
    }

    #[test]
    fn every_notice_kind_reads_back_from_its_wire_string_and_others_are_kept() {
        for kind in NoticeKind::KNOWN {
            assert_eq!(NoticeKind::from_wire(kind.wire()), kind);
        }
        assert_eq!(NoticeKind::from_wire("agent_retry"), NoticeKind::AgentRetry);
        assert_eq!(
            NoticeKind::from_wire("permission_denied"),
            NoticeKind::Other("permission_denied".to_owned())
        );
        assert_eq!(
            NoticeKind::from_wire("permission_denied").wire(),
            "permission_denied"
        );
    }

    #[test]
    fn a_notice_line_keeps_its_kind_as_the_wire_string_known_or_not() {
        for (line, kind) in [
            (
                r#"{"type":"notice","kind":"agent_retry","message":"m"}"#,
                NoticeKind::AgentRetry,
            ),
            (
                r#"{"type":"notice","kind":"quota_low","message":"m"}"#,
                NoticeKind::Other("quota_low".to_owned()),
            ),
        ] {
            let message = AgentMessage::from_json_line(line).unwrap();
            assert_eq!(
                message,
                AgentMessage::Notice {
                    kind,
                    message: "m".to_owned()
                }
            );
            assert_eq!(message.to_json_line(), line);
        }
    }
}
