//! The process layer and the provider runner with real child processes: start failures, exit
//! statuses, the three-stage stop, and that nothing the agent started survives it.

use crate::support::script_agent;

use std::time::{Duration, Instant};

use agentty::provider::{Provider, StopControl, StopProgress};
use agentty::stream::{AgentMessage, StopStage};
use script_agent::*;

#[tokio::test]
async fn a_normal_run_streams_messages_and_ends_completed() {
    let messages = run_agent(&format!(
        r#"echo '{{"type":"assistant","delta":"Hel"}}'
echo '{{"type":"assistant","delta":"lo"}}'
echo '{COMPLETED}'"#
    ))
    .await;
    assert_eq!(
        messages,
        vec![
            AgentMessage::Assistant {
                delta: "Hel".into()
            },
            AgentMessage::Assistant { delta: "lo".into() },
            AgentMessage::Completed {
                stop_reason: "stop".into(),
                usage: None
            },
        ]
    );
}

#[tokio::test]
async fn a_missing_binary_is_a_start_failure_message() {
    let messages = run_script(std::path::Path::new("/nonexistent/agent-cli"), "hi").await;
    let AgentMessage::Failed(failure) = terminal(&messages) else {
        panic!("expected terminal.failed, got {messages:?}");
    };
    assert_eq!(failure.reason, "start_failed");
    assert!(
        failure.message.contains("/nonexistent/agent-cli"),
        "{}",
        failure.message
    );
    assert_eq!(messages.len(), 1);
}

#[tokio::test]
async fn a_file_without_exec_permission_is_a_start_failure_message() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(dir.path(), "agent", "echo hi");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let messages = run_script(&script, "hi").await;
    let AgentMessage::Failed(failure) = terminal(&messages) else {
        panic!("expected terminal.failed, got {messages:?}");
    };
    assert_eq!(failure.reason, "start_failed");
    assert!(
        failure.message.to_lowercase().contains("permission denied"),
        "{}",
        failure.message
    );
}

#[tokio::test]
async fn a_missing_working_directory_is_a_start_failure_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(dir.path(), "agent", &format!("echo '{COMPLETED}'"));
    let provider = agentty::provider::CliProvider::new(ScriptBackend {
        script,
        cwd: Some(dir.path().join("gone")),
    });
    let messages = collect(provider.execute(request("hi"), StopControl::new())).await;
    let AgentMessage::Failed(failure) = terminal(&messages) else {
        panic!("expected terminal.failed, got {messages:?}");
    };
    assert_eq!(failure.reason, "start_failed");
    assert!(failure.message.contains("gone"), "{}", failure.message);
}

#[tokio::test]
async fn exit_zero_without_a_completion_event_is_a_failure() {
    let messages = run_agent(r#"echo '{"type":"assistant","delta":"partial"}'"#).await;
    let AgentMessage::Failed(failure) = terminal(&messages) else {
        panic!("expected terminal.failed, got {messages:?}");
    };
    assert_eq!(failure.reason, "no_completion");
    assert_eq!(failure.exit_code, Some(0));
    assert_eq!(failure.text, "partial");
}

#[tokio::test]
async fn a_nonzero_exit_carries_status_stderr_text_and_invalid_lines() {
    let messages = run_agent(
        r#"echo '{"type":"assistant","delta":"so far"}'
echo 'not json at all'
echo '{"no_type":1}'
echo 'boom: model exploded' >&2
exit 3"#,
    )
    .await;
    let AgentMessage::Failed(failure) = terminal(&messages) else {
        panic!("expected terminal.failed, got {messages:?}");
    };
    assert_eq!(failure.reason, "exit_nonzero");
    assert_eq!(failure.exit_code, Some(3));
    assert_eq!(failure.signal, None);
    assert!(
        failure.message.contains("boom: model exploded"),
        "{}",
        failure.message
    );
    assert_eq!(failure.stderr, "boom: model exploded\n");
    assert_eq!(failure.text, "so far");
    assert_eq!(
        failure.invalid_output_lines,
        ["not json at all", r#"{"no_type":1}"#]
    );
}

#[tokio::test]
async fn death_by_signal_is_reported_with_the_signal() {
    let messages = run_agent("kill -SEGV $$").await;
    let AgentMessage::Failed(failure) = terminal(&messages) else {
        panic!("expected terminal.failed, got {messages:?}");
    };
    assert_eq!(failure.reason, "killed_by_signal");
    assert_eq!(failure.signal, Some(11));
    assert!(failure.message.contains("SIGSEGV"), "{}", failure.message);
}

#[tokio::test]
async fn a_prompt_with_shell_metacharacters_arrives_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let received = dir.path().join("received");
    let script = write_script(
        dir.path(),
        "agent",
        &format!(
            "printf '%s' \"$1\" > '{}'\necho '{COMPLETED}'",
            received.display()
        ),
    );
    let prompt =
        "it's \"quoted\" $(rm -rf /) `id` ; echo pwned & | > x\nsecond line\t$HOME \\ 'end";
    let messages = run_script(&script, prompt).await;
    assert!(matches!(
        terminal(&messages),
        AgentMessage::Completed { .. }
    ));
    assert_eq!(std::fs::read_to_string(&received).unwrap(), prompt);
}

#[tokio::test]
async fn an_agent_that_honours_sigint_stops_in_the_interrupt_stage() {
    let agent = pid_script(|pids| format!("echo $$ > '{pids}'\nexec sleep 30"));
    let (terminal, elapsed, pids) = stop_after_start(&agent.script, &agent.pid_file).await;
    let (stop_stage, elapsed_ms) = cancelled(&terminal);
    assert_eq!(stop_stage, StopStage::Interrupt);
    assert!(elapsed_ms < 1000, "took {elapsed_ms} ms");
    assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");
    assert_all_gone(&pids, "the stop");
}

/// A process started with SIGINT ignored (a script's `cmd &` without job control, or a CI
/// runner launched so) still interrupts its agents: an ignored signal stays ignored across
/// `exec`, so the process layer gives the agent SIGINT's default back. Runs the test above in
/// such a process (this test binary, that one test alone, so no handler of another test is
/// installed meanwhile).
#[test]
fn the_interrupt_stage_works_in_a_process_started_with_sigint_ignored() {
    use std::os::unix::process::CommandExt;
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command.args([
        "--exact",
        "process::an_agent_that_honours_sigint_stops_in_the_interrupt_stage",
    ]);
    // SAFETY: signal(2) is async-signal-safe, as required between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        });
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn an_agent_that_ignores_sigint_and_sigterm_is_killed_after_the_grace() {
    let agent = pid_script(|pids| {
        format!("trap '' INT TERM\necho $$ > '{pids}'\nwhile :; do sleep 0.05; done")
    });
    let (terminal, elapsed, pids) = stop_after_start(&agent.script, &agent.pid_file).await;
    let (stop_stage, elapsed_ms) = cancelled(&terminal);
    assert_eq!(stop_stage, StopStage::Kill);
    assert!((1900..4000).contains(&elapsed_ms), "took {elapsed_ms} ms");
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    assert_all_gone(&pids, "the stop");
}

#[tokio::test]
async fn a_second_stop_request_skips_the_grace() {
    let agent = pid_script(|pids| {
        format!("trap '' INT TERM\necho $$ > '{pids}'\nwhile :; do sleep 0.05; done")
    });
    let stop = StopControl::new();
    let mut progress = stop.subscribe();
    let collecting = tokio::spawn(collect(
        provider_for(&agent.script).execute(request("go"), stop.clone()),
    ));
    read_pids(&agent.pid_file).await;
    let started = Instant::now();
    stop.stop();
    progress
        .wait_for(|stage| *stage == StopProgress::Waiting)
        .await
        .unwrap();
    stop.stop();
    let messages = collecting.await.unwrap();
    assert!(matches!(
        terminal(&messages),
        AgentMessage::Cancelled {
            stop_stage: StopStage::Kill,
            ..
        }
    ));
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(*progress.borrow(), StopProgress::Stopped);
}

#[tokio::test]
async fn a_tool_child_that_called_setsid_and_a_grandchild_in_the_group_are_both_killed() {
    // Like pi's bash tool: the tool runs in its own session, out of the agent's process group.
    let agent = pid_script(|pids| {
        format!(
            "setsid sleep 300 &\ndetached=$!\nsleep 300 &\ngrouped=$!\necho \"$detached $grouped\" > '{pids}'\nexec sleep 30"
        )
    });
    let (terminal, _, pids) = stop_after_start(&agent.script, &agent.pid_file).await;
    assert!(
        matches!(terminal, AgentMessage::Cancelled { .. }),
        "{terminal:?}"
    );
    assert_eq!(pids.len(), 2);
    assert_all_gone(&pids, "the stop");
}

#[tokio::test]
async fn a_double_forked_daemon_left_by_an_agent_that_exits_is_killed() {
    let agent = pid_script(|pids| {
        format!(
            "( setsid sh -c 'echo $$ > \"{pids}\"; exec sleep 300' & )\nwhile [ ! -s '{pids}' ]; do sleep 0.01; done\necho '{COMPLETED}'"
        )
    });
    let messages = run_script(&agent.script, "hi").await;
    assert!(matches!(
        terminal(&messages),
        AgentMessage::Completed { .. }
    ));
    let daemon = read_pids(&agent.pid_file).await;
    assert_all_gone(&daemon, "its agent");
}

#[tokio::test]
async fn a_stop_whose_requester_went_away_still_runs_to_completion() {
    let agent = pid_script(|pids| {
        format!("trap '' INT TERM\nsetsid sleep 300 &\necho \"$$ $!\" > '{pids}'\nwhile :; do sleep 0.05; done")
    });
    let stop = StopControl::new();
    let stream = provider_for(&agent.script).execute(request("go"), stop.clone());
    let pids = read_pids(&agent.pid_file).await;
    // The caller cancels and walks away at once: the stream and the token are gone.
    stop.stop();
    drop(stream);
    drop(stop);
    wait_until_gone(&pids, Duration::from_secs(8), "an abandoned stop").await;
}

#[tokio::test]
async fn a_stream_dropped_without_a_stop_still_stops_the_agent() {
    let agent = pid_script(|pids| {
        format!("echo $$ > '{pids}'\nwhile :; do echo '{{\"type\":\"assistant\",\"delta\":\"x\"}}'; sleep 0.05; done")
    });
    let stream = provider_for(&agent.script).execute(request("go"), StopControl::new());
    let pids = read_pids(&agent.pid_file).await;
    drop(stream);
    wait_until_gone(&pids, Duration::from_secs(5), "a dropped stream").await;
}

#[tokio::test]
async fn an_agent_that_never_exits_after_completing_is_stopped_and_still_completed() {
    let started = Instant::now();
    let messages = run_agent(&format!("echo '{COMPLETED}'\nexec sleep 300")).await;
    assert!(
        matches!(terminal(&messages), AgentMessage::Completed { .. }),
        "{messages:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[tokio::test]
async fn an_agent_that_closes_stdout_but_stays_alive_fails_as_stalled() {
    let messages = run_agent("exec >&-\nexec sleep 300").await;
    let AgentMessage::Failed(failure) = terminal(&messages) else {
        panic!("expected terminal.failed, got {messages:?}");
    };
    assert_eq!(failure.reason, "stalled");
}

#[tokio::test]
async fn a_stderr_flood_neither_blocks_the_agent_nor_grows_memory() {
    // 100 MiB on stderr, then a normal completion.
    let messages = run_agent(&format!("head -c 104857600 /dev/zero | tr '\\0' 'e' >&2\necho 'last words' >&2\necho '{COMPLETED}'\nexit 1")).await;
    let AgentMessage::Failed(failure) = terminal(&messages) else {
        panic!("expected terminal.failed, got {messages:?}");
    };
    assert!(failure.stderr.len() <= agentty::process::STDERR_TAIL_BYTES + 100);
    assert!(failure.stderr.ends_with("last words\n"));
    assert!(
        failure.stderr.starts_with("[… "),
        "the tail says bytes were dropped"
    );
}
