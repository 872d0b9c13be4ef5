//! The headline a failed attempt shows, composed exactly as a live attempt composes it: the
//! recorded stdout through the backend's mapper, then the runner's terminal message from the
//! recorded exit and stderr, then the chat's notice text. The recorded runs are the captures in
//! protocols/ plus two stderr recordings made for this purpose (a Node crash, Codex resuming a
//! thread it does not have), kept here verbatim.

use crate::support::captures;

use std::time::Instant;

use agentty::app::state::{AppState, StartupInfo};
use agentty::app::transcript::CellBody;
use agentty::config::ProviderSettings;
use agentty::config::RetryPolicy;
use agentty::orchestrator::verdict::FailureVerdict;
use agentty::orchestrator::OrchestratorEvent;
use agentty::process::{ExitReport, Line};
use agentty::provider::runner::{AttemptMapping, EndedBy};
use agentty::provider::{build_backend, AttemptRequest};
use agentty::stream::{AgentMessage, Failure};
use captures::{Channel, RecordedRun};

/// `node crash.mjs` (Node 20.20.2): an agent whose code throws a TypeError.
const NODE_CRASH_STDERR: &str = include_str!("../fixtures/stderr/node_crash.txt");

/// `codex exec --json --skip-git-repo-check resume 0199a213-… hi` with an empty CODEX_HOME:
/// nothing on stdout, exit status 1.
const CODEX_MISSING_THREAD_STDERR: &str =
    include_str!("../fixtures/stderr/codex_missing_thread.txt");

/// The terminal message the runner composes for `stdout`, `stderr` and `exit_code`.
fn terminal_for(provider: &str, stdout: &[String], stderr: &str, exit_code: i32) -> Failure {
    let backend = build_backend(provider, &ProviderSettings::default()).unwrap();
    let mut mapping = AttemptMapping::new(backend.mapper(&AttemptRequest::default()));
    let mut out = Vec::new();
    for text in stdout.iter().filter(|line| !line.is_empty()) {
        let line = Line {
            text: text.clone(),
            truncated: false,
            original_len: text.len(),
        };
        mapping.map_line(&line, &mut out);
    }
    for line in stderr.lines() {
        mapping.map_stderr_line(line, &mut out);
    }
    let report = ExitReport {
        exit_code: Some(exit_code),
        ..ExitReport::default()
    };
    match mapping.finish(&report, EndedBy::Exit, stderr.to_owned(), &mut out) {
        AgentMessage::Failed(failure) => failure,
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn capture_terminal(cli: &str, name: &str) -> Failure {
    let run = RecordedRun::read(cli, name);
    let stdout: Vec<String> = run
        .lines
        .iter()
        .filter(|(channel, _)| *channel == Channel::Stdout)
        .map(|(_, line)| line.clone())
        .collect();
    let stderr: String = run
        .lines
        .iter()
        .filter(|(channel, _)| *channel == Channel::Stderr)
        .map(|(_, line)| format!("{line}\n"))
        .collect();
    terminal_for(cli, &stdout, &stderr, run.exit.exit_code.unwrap_or(0))
}

/// The failure notice the chat shows for `failure`, judged as the orchestrator judges it
/// (automatic retry off, the default): its
/// headline, and the one-line summary of its folded diagnostics.
fn chat_headline(failure: &Failure) -> String {
    let now = Instant::now();
    let mut state = AppState::new(StartupInfo::default());
    for event in [
        OrchestratorEvent::TurnStarted {
            turn: 1,
            prompt: "hi".into(),
        },
        OrchestratorEvent::AttemptStarted {
            turn: 1,
            attempt: 1,
            max_attempts: 1,
        },
        OrchestratorEvent::Message {
            turn: 1,
            attempt: 1,
            message: AgentMessage::Failed(failure.clone()),
        },
        OrchestratorEvent::FailureJudged {
            turn: 1,
            attempt: 1,
            // Automatic retry off: the line then says what the user can do.
            verdict: FailureVerdict::judge(
                &RetryPolicy {
                    enabled: false,
                    ..RetryPolicy::default()
                },
                1,
                failure,
                false,
            ),
        },
    ] {
        state.on_orchestrator_event(event, now);
    }
    let notice = state
        .transcript
        .cells()
        .iter()
        .find_map(|cell| match &cell.body {
            CellBody::Notice(notice) => Some(notice.clone()),
            _ => None,
        })
        .expect("a failure notice");
    if notice.details_summary.is_empty() {
        notice.message.to_string()
    } else {
        format!(
            "{} [diagnostics: {}]",
            notice.message, notice.details_summary
        )
    }
}

#[test]
fn a_node_crash_is_headed_by_its_error_not_the_node_banner() {
    let failure = terminal_for("pi", &[], NODE_CRASH_STDERR, 1);
    assert_eq!(failure.exit_code, Some(1));
    assert_eq!(
        chat_headline(&failure),
        "Failed: TypeError: Cannot read properties of undefined (reading 'content') · \
         not retried automatically: unrecognised failure · Ctrl+X → Retry or /retry to try again \
         [diagnostics: exit code 1 · 12 stderr lines]"
    );
    // The whole stderr still travels with the failure.
    assert!(failure.stderr.contains("Node.js v20.20.2"));
}

#[test]
fn codex_resuming_a_missing_thread_is_headed_by_the_missing_rollout() {
    let failure = terminal_for("codex", &[], CODEX_MISSING_THREAD_STDERR, 1);
    assert_eq!(
        failure.message,
        "thread/resume: thread/resume failed: no rollout found for thread id \
         0199a213-81c0-7800-8aa1-bbab2a035a53 (code -32600)"
    );
    assert!(
        chat_headline(&failure).starts_with(
            "Failed: thread/resume: thread/resume failed: no rollout found for thread id \
             0199a213-81c0-7800-8aa1-bbab2a035a53 (code -32600) · "
        ),
        "{}",
        chat_headline(&failure)
    );
}

#[test]
fn pi_http_500_is_headed_by_pis_error_message() {
    let failure = capture_terminal("pi", "e_http500");
    assert_eq!(failure.http_status, Some(500));
    assert_eq!(
        chat_headline(&failure),
        "Failed: 500 fake internal server error · automatic retry is off \
         (Ctrl+X → Settings) · Ctrl+X → Retry or /retry to try again"
    );
}

#[test]
fn a_pi_dropped_stream_says_the_connection_dropped() {
    let failure = capture_terminal("pi", "e_drop");
    assert_eq!(
        chat_headline(&failure),
        "Failed: the connection to the model dropped mid-reply (terminated) · automatic retry \
         is off (Ctrl+X → Settings) · Ctrl+X → Retry or /retry to try again"
    );
}

#[test]
fn claude_401_is_headed_by_claudes_result_and_is_not_retried() {
    let failure = capture_terminal("claude", "err401");
    assert_eq!(
        chat_headline(&failure),
        "Failed: Invalid API key · Fix external API key · not retried automatically: \
         not authenticated · Ctrl+X → Retry or /retry to try again \
         [diagnostics: HTTP 401 · exit code 1 · 1 invalid output line]"
    );
}

#[test]
fn gemini_500_is_headed_by_the_apis_own_message() {
    let failure = capture_terminal("gemini", "d_http500");
    assert_eq!(failure.message, "fake internal error");
    assert_eq!(failure.http_status, Some(500));
}

/// How often `status` stands as a number of its own in `line`.
fn times_said(line: &str, status: u16) -> usize {
    line.split(|ch: char| !ch.is_ascii_digit())
        .filter(|number| *number == status.to_string())
        .count()
}

#[test]
fn the_failed_turn_line_says_the_http_status_once() {
    for (cli, name, status) in [
        ("claude", "err429", 429),
        ("claude", "err500_default", 500),
        ("codex", "d_http429", 429),
        ("codex", "d_http500", 500),
        ("gemini", "d_http429", 429),
        ("gemini", "d_http500", 500),
        ("pi", "e_http500", 500),
    ] {
        let failure = capture_terminal(cli, name);
        assert_eq!(failure.http_status, Some(status), "{cli}/{name}");
        let line = chat_headline(&failure);
        assert_eq!(times_said(&line, status), 1, "{cli}/{name}: {line}");
    }
    // In the agent's words when it names the status, else as a fact.
    assert_eq!(
        chat_headline(&capture_terminal("claude", "err429")),
        "Failed: API Error: Request rejected (429) · Number of request tokens has exceeded your \
         rate limit (fake) · exit code 1 · automatic retry is off (Ctrl+X → Settings) · \
         Ctrl+X → Retry or /retry to try again"
    );
    assert_eq!(
        chat_headline(&capture_terminal("codex", "d_http429")),
        "Failed: exceeded retry limit, last status: 429 Too Many Requests · automatic retry is \
         off (Ctrl+X → Settings) · Ctrl+X → Retry or /retry to try again \
         [diagnostics: exit code 1 · 2 stderr lines]"
    );
    assert!(chat_headline(&capture_terminal("gemini", "d_http500"))
        .ends_with("[diagnostics: HTTP 500 · exit code 244 · 135 stderr lines]"));
}
