//! The hostile-agent catalogue at the process and runner level: whatever the agent does, the
//! stream ends with exactly one terminal message, memory stays bounded, and no process is left.
//! (Cases that need a stop or a flood are in tests/process.rs and tests/line_memory.rs.)

use crate::support::script_agent;

use std::time::Duration;

use agentty::stream::{AgentMessage, StopStage};
use script_agent::*;

#[tokio::test]
async fn invalid_utf8_nul_bytes_and_cr_only_line_endings_are_survived() {
    let messages = run_agent(&format!(
        r#"printf '\377\376 not utf-8\n'
printf 'nul\000inside\n'
printf '{{"type":"assistant","delta":"one"}}\r{{"type":"assistant","delta":"two"}}\r'
printf '{{"type":"assistant","delta":"caf\303\251"}}\r\n'
echo '{COMPLETED}'"#
    ))
    .await;
    assert!(
        matches!(terminal(&messages), AgentMessage::Completed { .. }),
        "{messages:?}"
    );
    let text = agentty::stream::assistant_text(&messages);
    assert_eq!(text, "onetwocafé");
}

#[tokio::test]
async fn invalid_lines_are_reported_with_replacement_characters_when_the_attempt_fails() {
    let messages = run_agent("printf '\\377bad\\n'\nprintf 'nul\\000x\\n'\nexit 2").await;
    let AgentMessage::Failed(failure) = terminal(&messages) else {
        panic!("expected terminal.failed, got {messages:?}");
    };
    assert_eq!(failure.invalid_output_lines, ["\u{fffd}bad", "nul\0x"]);
}

#[tokio::test]
async fn thousands_of_invalid_lines_keep_a_bounded_sample() {
    let messages =
        run_agent("i=0\nwhile [ $i -lt 5000 ]; do echo \"garbage $i\"; i=$((i+1)); done\nexit 1")
            .await;
    let AgentMessage::Failed(failure) = terminal(&messages) else {
        panic!("expected terminal.failed, got {messages:?}");
    };
    let kept = &failure.invalid_output_lines;
    assert_eq!(kept.len(), agentty::provider::runner::MAX_INVALID_LINES + 1);
    assert_eq!(kept[0], "garbage 0");
    assert_eq!(kept.last().unwrap(), "[… 4900 more invalid lines not kept]");
}

#[tokio::test]
async fn an_agent_that_exits_between_our_sigint_and_sigkill_ends_in_the_grace_stage() {
    // Ignores the interrupt, then gives up on its own after about a second.
    let agent = pid_script(|pids| {
        format!("trap 'sleep 1; exit 0' INT\necho $$ > '{pids}'\nwhile :; do sleep 0.05; done")
    });
    let (terminal, elapsed, pids) = stop_after_start(&agent.script, &agent.pid_file).await;
    let (stop_stage, elapsed_ms) = cancelled(&terminal);
    assert_eq!(stop_stage, StopStage::Grace);
    assert!((250..2000).contains(&elapsed_ms), "{elapsed_ms} ms");
    assert!(elapsed < Duration::from_secs(3));
    assert_all_gone(&pids, "the stop");
}

#[tokio::test]
async fn escape_sequences_pass_through_the_stream_unchanged_for_the_ui_to_neutralise() {
    // The stream carries the agent's text as data; the view layer neutralises it (tested there).
    let messages = run_agent(&format!(
        r#"echo '{{"type":"assistant","delta":"\u001b[2J\u001b]0;pwned\u0007"}}'
echo '{COMPLETED}'"#
    ))
    .await;
    assert_eq!(
        messages[0],
        AgentMessage::Assistant {
            delta: "\u{1b}[2J\u{1b}]0;pwned\u{7}".into()
        }
    );
    // On the wire (headless output) the control characters are JSON-escaped, never raw.
    let line = messages[0].to_json_line();
    assert!(
        !line.contains('\u{1b}') && line.contains("\\u001b[2J"),
        "{line}"
    );
}
