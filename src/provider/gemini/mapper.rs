//! Gemini CLI `--output-format stream-json` events -> shared messages.
//!
//! - Assistant `message` events are true deltas, except that after a dropped stream Gemini CLI
//!   streams the reply again from its start with no marker; [`ReplayGuard`] shows such text
//!   once and says that a retry happened.
//! - The `result` line is the only sign that a run finished: Gemini CLI exits 0 when it is
//!   signalled, printing nothing more, so a run without `result` is unfinished, never a
//!   success.
//! - Its exit status is the HTTP status of a fatal API error, mod 256 (500 -> 244,
//!   429 -> 173, 401 -> 145): when neither `result` nor its message names a status, the
//!   status is recovered from the exit code, for the orchestrator's classifier.
//! - Retries of HTTP 5xx/429 print nothing on stdout; each `Attempt N failed … Retrying`
//!   stderr line becomes an `agent_retry` notice.
//! - An `error` event is not fatal by itself: a `warning` is shown as a notice, an `error` is
//!   kept as the failure message for a `result` that gives none.
//! - stream-json carries no thinking (the CLI drops it), so no `assistant.thought` is produced;
//!   the thinking tokens are counted only in `stats.total_tokens`, so the usage's
//!   `reasoning_tokens` is what the total holds beyond input and output. The usage's `model` is
//!   the model(s) `stats.models` names (`init` says only `auto`).
//! - A failure's message is the API's own (`error.message` inside Gemini CLI's
//!   `[API Error: {…}]` wrapper).

use serde::Deserialize;
use serde_json::{json, Value};

use super::replay::ReplayGuard;
use crate::provider::common::{failure_message, session_message, text_or_empty, Text};
use crate::provider::http_status::http_status_in;
use crate::provider::session_header::SessionHeader;
use crate::provider::tool_calls::{ToolCalls, ToolEnding};
use crate::provider::{AgentOutcome, ExitFacts, LineVerdict, Mapper};
use crate::stream::{AgentMessage, FailureReason, NoticeKind, Usage};

/// The agent, as its tool failures name it.
const AGENT: &str = crate::provider::ProviderKind::Gemini.display_name();

const PROVIDER: &str = crate::provider::ProviderKind::Gemini.name();
/// The stop reason of a run whose `result` says `success`.
const RESULT_SUCCESS: &str = "success";
/// The `result` error type of a run cancelled by Ctrl+C on a terminal: the agent confirming
/// that it aborted, not a failure of its own.
const CANCELLED_ERROR_TYPE: &str = "FatalCancellationError";
/// Exit codes that can only be an HTTP error status mod 256: 400–511 map to 144–255, above
/// every exit code Gemini CLI uses for itself (41–55, 130).
const HTTP_EXIT_CODES: std::ops::RangeInclusive<i32> = 144..=255;

pub struct GeminiMapper {
    /// The attempt continues an earlier session (`--resume`).
    resumed: bool,
    session: SessionHeader,
    text: ReplayGuard,
    tools: ToolCalls,
    /// What the `result` line said.
    outcome: Option<AgentOutcome>,
    /// The last `error` event of severity `error`.
    last_error: Option<String>,
}

impl GeminiMapper {
    /// `resumed` makes the session header a `session.resumed` (the `init` line is the same).
    pub fn new(resumed: bool) -> Self {
        Self {
            resumed,
            session: SessionHeader::default(),
            text: ReplayGuard::default(),
            tools: ToolCalls::default(),
            outcome: None,
            last_error: None,
        }
    }
}

/// One stream-json line: only the fields the mapper reads.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow, rename = "type")]
    kind: Text<'a>,
    #[serde(borrow, default)]
    session_id: Option<Text<'a>>,
    #[serde(borrow, default)]
    role: Option<Text<'a>>,
    #[serde(borrow, default)]
    content: Option<Text<'a>>,
    #[serde(borrow, default)]
    tool_name: Option<Text<'a>>,
    #[serde(borrow, default)]
    tool_id: Option<Text<'a>>,
    #[serde(default)]
    parameters: Option<Value>,
    #[serde(borrow, default)]
    status: Option<Text<'a>>,
    #[serde(borrow, default)]
    output: Option<Text<'a>>,
    #[serde(borrow, default)]
    error: Option<ErrorBody<'a>>,
    #[serde(borrow, default)]
    severity: Option<Text<'a>>,
    #[serde(borrow, default)]
    message: Option<Text<'a>>,
    #[serde(default)]
    stats: Option<Stats>,
}

#[derive(Deserialize)]
struct ErrorBody<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Text<'a>>,
    #[serde(borrow, default)]
    message: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct Stats {
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cached: Option<u64>,
    /// Per model: the keys are the models that answered (the run's `init` says only `auto`).
    #[serde(default)]
    models: std::collections::BTreeMap<String, IgnoredValue>,
}

#[derive(Deserialize)]
struct IgnoredValue {}

impl Mapper for GeminiMapper {
    fn map_line(&mut self, line: &str, out: &mut Vec<AgentMessage>) -> LineVerdict {
        let verdict = self.map_event(line, out);
        self.session.close_if_emitted(out);
        verdict
    }

    fn map_stderr_line(&mut self, line: &str, out: &mut Vec<AgentMessage>) {
        if let Some(retry) = retry_announcement(line) {
            out.push(AgentMessage::notice(
                NoticeKind::AgentRetry,
                format!("Gemini CLI: {retry}"),
            ));
        }
        self.session.close_if_emitted(out);
    }

    fn outcome_reported(&self) -> bool {
        self.outcome.is_some()
    }

    fn finish(&mut self, exit: ExitFacts, out: &mut Vec<AgentMessage>) -> AgentOutcome {
        self.text.end_response(out);
        self.tools.fail_all_open(AGENT, exit.stopped_by_us, out);
        self.outcome(exit)
    }
}

impl GeminiMapper {
    fn map_event(&mut self, line: &str, out: &mut Vec<AgentMessage>) -> LineVerdict {
        let Ok(event) = serde_json::from_str::<Event>(line) else {
            return LineVerdict::Invalid;
        };
        match event.kind.as_str() {
            "init" => {
                let Some(session_id) = &event.session_id else {
                    return LineVerdict::Invalid;
                };
                self.session.announce(
                    session_message(
                        PROVIDER,
                        self.resumed,
                        Some(session_id.as_str().to_owned()),
                        None,
                    ),
                    out,
                );
                LineVerdict::Event
            }
            "message" => match event.role.as_ref().map(Text::as_str) {
                Some("assistant") => {
                    self.text.push(text_or_empty(&event.content), out);
                    LineVerdict::Event
                }
                // The prompt echoed back: the UI already shows what the user wrote.
                _ => LineVerdict::Ignored,
            },
            "tool_use" => {
                let Some(id) = &event.tool_id else {
                    return LineVerdict::Invalid;
                };
                self.text.end_response(out);
                let input = event.parameters.unwrap_or_else(|| json!({}));
                self.tools
                    .start(id.as_str(), tool_name(&event.tool_name), input, out);
                LineVerdict::Event
            }
            "tool_result" => {
                let Some(id) = &event.tool_id else {
                    return LineVerdict::Invalid;
                };
                self.text.end_response(out);
                let call = (tool_name(&event.tool_name), json!({}));
                let output = text_or_empty(&event.output).to_owned();
                let ending = if event.status.as_ref().map(Text::as_str) == Some("success") {
                    ToolEnding::Completed { output }
                } else {
                    ToolEnding::Failed {
                        error: tool_error(event.error.as_ref(), output),
                    }
                };
                self.tools
                    .complete_announcing(id.as_str(), call, ending, out);
                LineVerdict::Event
            }
            "error" => {
                let message = text_or_empty(&event.message);
                if event.severity.as_ref().map(Text::as_str) == Some("warning") {
                    out.push(AgentMessage::notice(
                        NoticeKind::Warning,
                        format!("Gemini CLI: {message}"),
                    ));
                } else {
                    self.last_error = Some(message.to_owned());
                }
                LineVerdict::Event
            }
            "result" => {
                self.text.end_response(out);
                let error_kind = event
                    .error
                    .as_ref()
                    .and_then(|error| error.kind.as_ref())
                    .map(Text::as_str);
                self.outcome = Some(
                    if event.status.as_ref().map(Text::as_str) == Some("success") {
                        AgentOutcome::Completed {
                            stop_reason: RESULT_SUCCESS.to_owned(),
                            usage: event.stats.map(shared_usage),
                        }
                    } else if error_kind == Some(CANCELLED_ERROR_TYPE) {
                        AgentOutcome::Aborted
                    } else {
                        let carried = event.error.and_then(|error| error.message);
                        let message = failure_message(
                            carried.as_ref(),
                            self.last_error.as_deref(),
                            "Gemini CLI reported an error without a message",
                        );
                        AgentOutcome::Failed {
                            reason: FailureReason::AgentError,
                            http_status: http_status_in(&message),
                            message: api_error_message(&message),
                        }
                    },
                );
                LineVerdict::Event
            }
            _ => LineVerdict::Ignored,
        }
    }

    /// How the run ended: what `result` said, else what the exit code stands for.
    fn outcome(&mut self, exit: ExitFacts) -> AgentOutcome {
        let exit_status = http_status_from_exit_code(exit.exit_code);
        match self.outcome.take() {
            Some(AgentOutcome::Failed {
                reason,
                message,
                http_status,
            }) => AgentOutcome::Failed {
                reason,
                message,
                http_status: http_status.or(exit_status),
            },
            Some(outcome) => outcome,
            None if exit.stopped_by_us => AgentOutcome::Unfinished,
            None => match (exit_status, self.last_error.take()) {
                (Some(status), last_error) => AgentOutcome::Failed {
                    reason: FailureReason::AgentError,
                    message: last_error.unwrap_or_else(|| {
                        format!(
                            "Gemini CLI exited with status {}, its way of reporting HTTP {status}",
                            exit.exit_code.unwrap_or_default()
                        )
                    }),
                    http_status: Some(status),
                },
                (None, Some(message)) => AgentOutcome::Failed {
                    reason: FailureReason::AgentError,
                    http_status: http_status_in(&message),
                    message,
                },
                (None, None) => AgentOutcome::Unfinished,
            },
        }
    }
}

/// The API's own words from Gemini CLI's `[API Error: {"error":{"message":…}}]` wrapper; any
/// other message as it is.
fn api_error_message(message: &str) -> String {
    #[derive(Deserialize)]
    struct Wrapper {
        error: Inner,
    }
    #[derive(Deserialize)]
    struct Inner {
        message: String,
    }
    let Some(inner) = message
        .trim()
        .strip_prefix("[API Error: ")
        .and_then(|rest| rest.strip_suffix(']'))
    else {
        return message.to_owned();
    };
    match serde_json::from_str::<Wrapper>(inner) {
        Ok(wrapper) if !wrapper.error.message.trim().is_empty() => wrapper.error.message,
        _ => inner.trim().to_owned(),
    }
}

fn tool_name<'t>(name: &'t Option<Text<'_>>) -> &'t str {
    name.as_ref().map_or("tool", Text::as_str)
}

/// A failed tool result's error: `type: message`, else its output, else a plain statement.
fn tool_error(error: Option<&ErrorBody>, output: String) -> String {
    let kind = error
        .and_then(|error| error.kind.as_ref())
        .map(Text::as_str);
    let message = error
        .and_then(|error| error.message.as_ref())
        .map(Text::as_str);
    match (kind, message) {
        (Some(kind), Some(message)) => format!("{kind}: {message}"),
        (None, Some(message)) => message.to_owned(),
        (Some(kind), None) => kind.to_owned(),
        (None, None) if !output.is_empty() => output,
        (None, None) => "the tool call failed".to_owned(),
    }
}

/// Gemini CLI counts thinking only inside `total_tokens` (20 in + 10 out + 7 thoughts = 37, in
/// the b_reasoning capture): the rest of the total is the thinking.
fn shared_usage(stats: Stats) -> Usage {
    let reasoning_tokens = match (stats.total_tokens, stats.input_tokens, stats.output_tokens) {
        (Some(total), Some(input), Some(output)) => total
            .checked_sub(input.saturating_add(output))
            .filter(|thinking| *thinking > 0),
        _ => None,
    };
    let model = (!stats.models.is_empty())
        .then(|| stats.models.keys().cloned().collect::<Vec<_>>().join(", "));
    Usage {
        input_tokens: stats.input_tokens,
        output_tokens: stats.output_tokens,
        cache_read_tokens: stats.cached,
        cache_write_tokens: None,
        total_tokens: stats.total_tokens,
        cost_usd: None,
        reasoning_tokens,
        model,
    }
}

/// The HTTP status a Gemini CLI exit code stands for, if it stands for one.
pub(crate) fn http_status_from_exit_code(exit_code: Option<i32>) -> Option<u16> {
    exit_code
        .filter(|code| HTTP_EXIT_CODES.contains(code))
        .and_then(|code| u16::try_from(code + 256).ok())
}

/// The first sentences of a retry line (`Attempt 2 failed with status 500. Retrying with
/// backoff...`), without the error dump that follows; `None` for any other stderr line,
/// including the last attempt's `… Max attempts reached`.
fn retry_announcement(line: &str) -> Option<&str> {
    let line = line.trim();
    let after_number = line
        .strip_prefix("Attempt ")?
        .trim_start_matches(|c: char| c.is_ascii_digit());
    if !after_number.starts_with(" failed") {
        return None;
    }
    let retrying = line.find("Retrying")?;
    let end = line[retrying..]
        .find("...")
        .map_or(line.len(), |dots| retrying + dots + "...".len());
    Some(&line[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_lines_of_every_form_are_recognised_and_cut_before_the_dump() {
        let cases = [
            (
                r#"Attempt 1 failed with status 500. Retrying with backoff... _ApiError: {"error":{}}"#,
                Some("Attempt 1 failed with status 500. Retrying with backoff..."),
            ),
            (
                "Attempt 3 failed with 429 error (no Retry-After header). Retrying with backoff... Error: 429",
                Some("Attempt 3 failed with 429 error (no Retry-After header). Retrying with backoff..."),
            ),
            (
                "Attempt 2 failed: quota. Retrying after 5123ms...",
                Some("Attempt 2 failed: quota. Retrying after 5123ms..."),
            ),
            (
                r#"Attempt 10 failed: {"error":{"code":500}}. Max attempts reached"#,
                None,
            ),
            ("    at async retryWithBackoff (file:///x.js:1:2)", None),
            ("Attempting nothing. Retrying", None),
        ];
        for (line, expected) in cases {
            assert_eq!(retry_announcement(line), expected, "{line}");
        }
    }

    #[test]
    fn exit_codes_give_back_http_statuses_and_nothing_else() {
        assert_eq!(http_status_from_exit_code(Some(244)), Some(500));
        assert_eq!(http_status_from_exit_code(Some(173)), Some(429));
        assert_eq!(http_status_from_exit_code(Some(145)), Some(401));
        for own in [0, 1, 41, 42, 52, 53, 55, 130, 143] {
            assert_eq!(http_status_from_exit_code(Some(own)), None, "{own}");
        }
        assert_eq!(http_status_from_exit_code(None), None);
    }

    #[test]
    fn a_run_killed_before_its_result_is_unfinished_even_with_exit_zero() {
        let mut mapper = GeminiMapper::new(false);
        let mut out = Vec::new();
        mapper.map_line(
            r#"{"type":"tool_use","tool_name":"run_shell_command","tool_id":"t1","parameters":{"command":"sleep 30"}}"#,
            &mut out,
        );
        let outcome = mapper.finish(
            ExitFacts {
                exit_code: Some(0),
                ..ExitFacts::default()
            },
            &mut out,
        );
        assert_eq!(outcome, AgentOutcome::Unfinished);
        assert_eq!(
            out.last().map(AgentMessage::to_json_line).as_deref(),
            Some(
                r#"{"type":"tool.failed","id":"t1","error":"Gemini CLI ended before the tool call finished"}"#
            )
        );
    }

    #[test]
    fn an_http_exit_code_without_a_result_is_a_failure_with_that_status() {
        let mut mapper = GeminiMapper::new(false);
        let outcome = mapper.finish(
            ExitFacts {
                exit_code: Some(247),
                ..ExitFacts::default()
            },
            &mut Vec::new(),
        );
        assert_eq!(
            outcome,
            AgentOutcome::Failed {
                reason: crate::stream::FailureReason::AgentError,
                message: "Gemini CLI exited with status 247, its way of reporting HTTP 503".into(),
                http_status: Some(503),
            }
        );
    }

    #[test]
    fn a_tool_result_error_names_its_type() {
        let mut mapper = GeminiMapper::new(false);
        let mut out = Vec::new();
        let verdict = mapper.map_line(
            r#"{"type":"tool_result","tool_id":"t9","status":"error","output":"","error":{"type":"tool_not_registered","message":"Tool \"run_shell_command\" not found"}}"#,
            &mut out,
        );
        assert_eq!(verdict, LineVerdict::Event);
        let lines: Vec<String> = out.iter().map(AgentMessage::to_json_line).collect();
        assert_eq!(
            lines,
            [
                r#"{"type":"tool.call","id":"t9","name":"tool","input":{}}"#,
                r#"{"type":"tool.failed","id":"t9","error":"tool_not_registered: Tool \"run_shell_command\" not found"}"#,
            ]
        );
    }

    #[test]
    fn an_api_error_is_named_by_the_apis_own_message() {
        // gemini_fixtures d_http500 / d_http401: the result line's error.message.
        assert_eq!(
            api_error_message(
                r#"[API Error: {"error":{"code":500,"message":"fake internal error","status":"INTERNAL"}}]"#
            ),
            "fake internal error"
        );
        assert_eq!(
            api_error_message("[API Error: socket hang up]"),
            "socket hang up"
        );
        assert_eq!(api_error_message("quota"), "quota");
    }

    #[test]
    fn bad_and_unknown_lines_never_end_the_stream() {
        let mut mapper = GeminiMapper::new(false);
        let mut out = Vec::new();
        let verdicts: Vec<LineVerdict> = [
            "{",
            r#"{"type":"init"}"#,
            r#"{"type":"tool_use","tool_name":"x"}"#,
            r#"{"type":"future_event","x":1}"#,
            r#"{"type":"message","role":"user","content":"hi"}"#,
            r#"{"type":"message","role":"assistant","content":"ok","delta":true}"#,
        ]
        .iter()
        .map(|line| mapper.map_line(line, &mut out))
        .collect();
        assert_eq!(
            verdicts,
            [
                LineVerdict::Invalid,
                LineVerdict::Invalid,
                LineVerdict::Invalid,
                LineVerdict::Ignored,
                LineVerdict::Ignored,
                LineVerdict::Event,
            ]
        );
        assert!(!mapper.outcome_reported());
    }
}
