//! Every stream-json capture of the real Gemini CLI 0.61.0
//! (`tests/fixtures/captures/gemini`) replayed through the Gemini mapper as the runner
//! does (stdout and stderr in arrival order, then `finish` with the recorded exit): the whole
//! shared stream and the outcome are snapshotted, and the stream's rules are checked on each.
//! (The `acp_*` captures are a different protocol, which this backend does not speak;
//! `f_list_sessions` is the plain-text `--list-sessions` output, replayed to show that it never
//! breaks the stream.)

use crate::support::captures;
use crate::support::replay;

use agentty::provider::gemini::mapper::GeminiMapper;
use agentty::provider::AgentOutcome;
use agentty::stream::AgentMessage;
use captures::capture_names;
use replay::{capture_tests, Replay};

fn replay_capture(name: &str) -> Replay {
    replay::replay_capture("gemini", name, |run| {
        GeminiMapper::new(run.command.contains(" --resume "))
    })
}

fn snapshot_capture(name: &str) {
    insta::assert_snapshot!(name, replay_capture(name).transcript());
}

capture_tests!(
    snapshot_capture:
    a_text,
    b_reasoning,
    c_tool_echo,
    d_drop_midstream,
    d_http401,
    d_http429,
    d_http500,
    e_slow_complete,
    e_slow_ctrlc_pipe,
    e_slow_ctrlc_pty,
    e_slow_sigint,
    e_slow_sigint_group,
    e_slow_sigint_norelaunch,
    e_slow_sigterm,
    e_slow_sigterm_group,
    e_slow_sigterm_norelaunch,
    e_toolsleep_sigint_group,
    e_toolsleep_sigterm_group,
    f_list_sessions,
    f_resume_latest,
    f_session_first,
);

#[test]
fn every_stream_json_capture_is_replayed() {
    assert_eq!(capture_names("gemini"), CAPTURES);
}

#[test]
fn text_re_sent_after_a_dropped_stream_is_shown_once_with_a_notice_per_retry() {
    let replayed = replay_capture("d_drop_midstream");
    assert_eq!(replayed.assistant_text(), "Partial answer before drop");
    assert_eq!(replayed.notice_count("warning"), 3);
    assert_eq!(
        replayed.outcome,
        AgentOutcome::Failed {
            reason: agentty::stream::FailureReason::AgentError,
            message: "Model stream ended without a finish reason.".into(),
            http_status: None,
        }
    );
}

#[test]
fn each_silent_http_retry_is_an_agent_retry_notice_from_stderr() {
    for name in ["d_http500", "d_http429"] {
        let replayed = replay_capture(name);
        // Ten attempts: nine retries announced, the tenth ends in `Max attempts reached`.
        assert_eq!(replayed.notice_count("agent_retry"), 9, "{name}");
        assert_eq!(replayed.assistant_text(), "", "{name}");
    }
    assert_eq!(replay_capture("d_http401").notice_count("agent_retry"), 0);
}

#[test]
fn http_statuses_reach_the_classifier_from_the_message_or_the_exit_code() {
    let status = |name: &str| match replay_capture(name).outcome {
        AgentOutcome::Failed { http_status, .. } => http_status,
        other => panic!("{name}: {other:?}"),
    };
    assert_eq!(status("d_http500"), Some(500));
    assert_eq!(status("d_http401"), Some(401));
    // "[API Error: Resource exhausted (fake).]" names no status: exit code 173 does.
    assert_eq!(status("d_http429"), Some(429));
}

#[test]
fn a_signalled_run_that_exits_zero_without_a_result_is_unfinished() {
    for name in [
        "e_slow_sigint_group",
        "e_slow_sigterm_norelaunch",
        "e_toolsleep_sigint_group",
    ] {
        let replayed = replay_capture(name);
        assert_eq!(replayed.exit.exit_code, Some(0), "{name}");
        assert_eq!(replayed.outcome, AgentOutcome::Unfinished, "{name}");
    }
}

#[test]
fn a_tool_left_running_by_a_stop_is_ended_as_failed() {
    let replayed = replay_capture("e_toolsleep_sigint_group");
    assert!(matches!(
        replayed.messages.last(),
        Some(AgentMessage::ToolFailed { id, .. })
            if id == "run_shell_command__run_shell_command_1795983956904_0"
    ));
}

#[test]
fn thinking_is_not_in_stream_json_so_none_is_produced() {
    let replayed = replay_capture("b_reasoning");
    assert_eq!(replayed.assistant_text(), "After thinking: hello!");
    assert!(!replayed
        .messages
        .iter()
        .any(|message| matches!(message, AgentMessage::Thought { .. })));
}
