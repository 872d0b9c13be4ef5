//! Every `codex exec --json` capture of the real Codex CLI 0.171.0
//! (`tests/fixtures/captures/codex`) replayed through the Codex mapper as the runner does
//! (stdout and stderr in arrival order, then `finish` with the recorded exit): the whole shared
//! stream and the outcome are snapshotted, and the stream's rules are checked on each.
//! (The `appserver_*` captures are a different protocol, which this backend does not speak.)

use crate::support::captures;
use crate::support::replay;

use agentty::provider::codex::mapper::CodexMapper;
use agentty::provider::AgentOutcome;
use agentty::stream::AgentMessage;
use captures::{capture_names, Channel, RecordedRun};
use replay::{capture_tests, stream_violations, Replay};
use serde_json::Value;

fn replay_capture(name: &str) -> Replay {
    replay::replay_capture("codex", name, |run| {
        CodexMapper::new(run.command.contains(" resume "))
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
    assert_eq!(capture_names("codex"), CAPTURES);
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
            reason: agentty::stream::FailureReason::AgentError,
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
            session_id: Some(id.into()),
            model: None,
        }
    );
    assert_eq!(
        resumed.messages[0],
        AgentMessage::SessionResumed {
            provider: "codex".into(),
            session_id: id.into(),
            model: None,
        }
    );
}

// ---- The replay support itself (in this one test binary, so its tests run once) ----

#[test]
fn a_recorded_run_keeps_the_arrival_order_and_the_exit() {
    let meta = "scenario: x\ncommand: codex exec --json 'hi'\nexit code: 244\n\
                -- output timeline (t = seconds since child start) --\n\
                \x20  0.1 err warn one\n   0.2 out {\"a\":1}\n   0.3 err warn t\n";
    let run = RecordedRun::parse("{\"a\":1}\n{\"b\":2}\n", "warn one\nwarn two\n", meta);
    assert_eq!(run.command, "codex exec --json 'hi'");
    assert_eq!(
        run.lines,
        [
            (Channel::Stderr, "warn one".to_owned()),
            (Channel::Stdout, "{\"a\":1}".to_owned()),
            (Channel::Stderr, "warn two".to_owned()),
            (Channel::Stdout, "{\"b\":2}".to_owned()),
        ]
    );
    assert_eq!(run.exit.exit_code, Some(244));
    assert!(!run.exit.stopped_by_us);

    let killed = RecordedRun::parse(
        "",
        "",
        "exit code: -15 (killed by signal SIGTERM)\ncancel: t=3 sent sigterm\n",
    );
    assert_eq!(
        (killed.exit.exit_code, killed.exit.signal),
        (None, Some(15))
    );
    assert!(killed.exit.stopped_by_us);
    let signalled = RecordedRun::parse(
        "",
        "",
        "exit code: killed by signal 2 (SIGINT); a shell would show 130\n",
    );
    assert_eq!(signalled.exit.signal, Some(2));
}

#[test]
fn every_harness_records_a_stop_its_own_way_and_each_is_read() {
    let stopped = |meta: &str| RecordedRun::parse("", "", meta).exit;
    // pi's harness: the actions it took.
    assert!(stopped("exit code: 143\nactions:\n  t=2.5s sent SIGTERM to pi pid 7\n").stopped_by_us);
    assert!(stopped("exit code: 0\nactions:\n  t=3.0s write '03'\n").stopped_by_us);
    assert!(!stopped("exit code: 0\nactions:\n  t=0.0s write '70726f6d7074'\n").stopped_by_us);
    // Claude's harness: its steps as JSON, and `exit_code:`.
    let claude =
        |steps: &str, status: &str| stopped(&format!("steps: {steps}\nexit_code: {status}\n"));
    let killed = claude(
        r#"[{"sleep": 2}, {"signal": "SIGKILL"}]"#,
        "-9 (killed by signal 9: SIGKILL)",
    );
    assert_eq!(
        (killed.exit_code, killed.signal, killed.stopped_by_us),
        (None, Some(9), true)
    );
    assert!(claude(r#"[{"write_hex": "03"}]"#, "0").stopped_by_us);
    let interrupt = r#"[{"write": "{\"type\":\"control_request\",\"request\":{\"subtype\":\"interrupt\"}}\n"}]"#;
    assert!(claude(interrupt, "0").stopped_by_us);
    let plain = claude(
        r#"[{"write": "prompt from stdin\n"}, {"close": true}]"#,
        "1",
    );
    assert_eq!(
        (plain.exit_code, plain.signal, plain.stopped_by_us),
        (Some(1), None, false)
    );
}

#[test]
fn stream_violations_name_each_broken_rule() {
    let session = AgentMessage::SessionStarted {
        provider: "codex".into(),
        session_id: Some("t1".into()),
        model: None,
    };
    let assistant = |delta: &str| AgentMessage::Assistant {
        delta: delta.into(),
    };
    let call = |id: &str| AgentMessage::ToolCall {
        id: id.into(),
        name: "shell".into(),
        input: Value::Null,
        parent_id: None,
    };
    let done = |id: &str| AgentMessage::ToolCompleted {
        id: id.into(),
        output: String::new(),
    };
    let thought = AgentMessage::Thought { text: "hmm".into() };
    let good = [
        session.clone(),
        assistant("no, no, "),
        call("a"),
        done("a"),
        thought.clone(),
        assistant("Partial answer"),
        AgentMessage::notice("agent_retry", "retried"),
        assistant("Partial answer, again"),
    ];
    assert_eq!(stream_violations(&good), Vec::<String>::new());
    let bad = [
        assistant("Partial answerPartial answer"),
        session,
        call("a"),
        thought,
        done("b"),
        call("a"),
        done("a"),
        call("a"),
        AgentMessage::Completed {
            stop_reason: "x".into(),
            usage: None,
        },
    ];
    assert_eq!(
        stream_violations(&bad),
        [
            "session header at position 1",
            "thought at position 3, inside tool call a",
            "end of tool call b, which is not open",
            "tool call a announced after its end",
            "terminal message from the mapper: Completed { stop_reason: \"x\", usage: None }",
            "text shown twice in a row: \"Partial answer\"",
        ]
    );
}
