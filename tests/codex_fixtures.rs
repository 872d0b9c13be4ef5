//! Every `codex exec --json` capture of the real Codex CLI 0.171.0
//! (`../shared/protocols/codex/captures`) replayed through the Codex mapper as the runner does
//! (stdout and stderr in arrival order, then `finish` with the recorded exit): the whole shared
//! stream and the outcome are snapshotted, and the stream's rules are checked on each.
//! (The `appserver_*` captures are a different protocol, which this backend does not speak.)

use std::path::PathBuf;

use agentty::provider::codex::mapper::CodexMapper;
use agentty::provider::common::{replay, stream_violations, RecordedRun, Replay};
use agentty::provider::AgentOutcome;
use agentty::stream::AgentMessage;

/// `shared/` sits beside the crate (`<x>/main` and `<x>/shared`); a worktree one level deeper
/// (`<x>/wt/<name>`) finds it one level further up.
fn captures_dir() -> PathBuf {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    ["..", "../.."]
        .iter()
        .map(|up| crate_dir.join(up).join("shared/protocols/codex/captures"))
        .find(|dir| dir.is_dir())
        .unwrap_or_else(|| crate_dir.join("../shared/protocols/codex/captures"))
}

fn replay_capture(name: &str) -> Replay {
    let run = RecordedRun::read(&captures_dir(), name)
        .unwrap_or_else(|error| panic!("cannot read capture {name}: {error}"));
    let resumed = run.command.contains(" resume ");
    let replayed = replay(&mut CodexMapper::new(resumed), &run);
    let violations = stream_violations(&replayed.messages);
    assert!(violations.is_empty(), "{name}: {violations:#?}");
    replayed
}

macro_rules! capture_snapshots {
    ($($name:ident),* $(,)?) => {
        const CAPTURES: &[&str] = &[$(stringify!($name)),*];
        $(
            #[test]
            fn $name() {
                insta::assert_snapshot!(stringify!($name), replay_capture(stringify!($name)).transcript());
            }
        )*
    };
}

capture_snapshots!(
    a_text,
    b_reasoning,
    c_tool_echo,
    d_drop_midstream,
    d_http401,
    d_http429,
    d_http500,
    d_http500_retries_off,
    e_slow_complete,
    e_slow_ctrlc_pipe,
    e_slow_ctrlc_pty,
    e_slow_sigint,
    e_slow_sigterm,
    e_toolsleep_sigint,
    e_toolsleep_sigterm,
    f_resume,
    f_session_first,
);

#[test]
fn every_exec_capture_is_replayed() {
    let found = RecordedRun::names_in(&captures_dir()).expect("the protocols folder is readable");
    assert_eq!(found, CAPTURES);
}

#[test]
fn the_model_metadata_error_item_is_a_warning_not_a_failure() {
    let replayed = replay_capture("a_text");
    assert_eq!(replayed.notice_count("warning"), 1);
    assert_eq!(replayed.assistant_text(), "Hello from the fake server.");
    assert!(matches!(replayed.outcome, AgentOutcome::Completed { .. }));
}

#[test]
fn codex_retries_are_agent_retry_notices_and_its_last_error_is_the_failure() {
    let replayed = replay_capture("d_drop_midstream");
    assert_eq!(replayed.notice_count("agent_retry"), 5);
    assert_eq!(
        replayed.outcome,
        AgentOutcome::Failed {
            reason: "agent_error".into(),
            message:
                "stream disconnected before completion: stream closed before response.completed"
                    .into(),
            http_status: None,
        }
    );
}

#[test]
fn http_statuses_reach_the_classifier() {
    let status = |name: &str| match replay_capture(name).outcome {
        AgentOutcome::Failed { http_status, .. } => http_status,
        other => panic!("{name}: {other:?}"),
    };
    assert_eq!(status("d_http401"), Some(401));
    assert_eq!(status("d_http429"), Some(429));
    assert_eq!(status("d_http500"), Some(500));
    assert_eq!(status("d_http500_retries_off"), Some(500));
}

#[test]
fn a_stopped_run_is_unfinished_and_its_tool_call_is_ended() {
    let replayed = replay_capture("e_toolsleep_sigint");
    assert_eq!(replayed.outcome, AgentOutcome::Unfinished);
    assert!(matches!(
        replayed.messages.last(),
        Some(AgentMessage::ToolFailed { id, .. }) if id == "item_1"
    ));
}

#[test]
fn a_resumed_thread_is_announced_as_resumed() {
    let first = replay_capture("f_session_first");
    let resumed = replay_capture("f_resume");
    let id = "01a228fb-59e5-7320-b52e-935d7b550aca";
    assert_eq!(
        first.messages[0],
        AgentMessage::SessionStarted {
            provider: "codex".into(),
            session_id: Some(id.into())
        }
    );
    assert_eq!(
        resumed.messages[0],
        AgentMessage::SessionResumed {
            provider: "codex".into(),
            session_id: id.into()
        }
    );
}
