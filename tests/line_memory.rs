//! A 64 MiB stdout line without a newline keeps memory bounded. Alone in its test binary (not in
//! `tests/suite/`) so that the peak RSS it reads is its own: tests running beside it in one
//! process would raise it.

// The suite's script-agent support, of which this binary needs three functions.
#[allow(dead_code)]
#[path = "support/script_agent.rs"]
mod script_agent;

use agentty::process::DEFAULT_MAX_LINE;
use agentty::stream::AgentMessage;
use script_agent::*;

fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

#[tokio::test]
async fn a_64_mib_line_is_cut_and_memory_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "agent",
        r#"head -c 67108864 /dev/zero | tr '\0' 'x'
echo
echo '{"type":"assistant","delta":"after the flood"}'
echo '{"type":"terminal.completed","stop_reason":"stop"}'
exit 7"#,
    );
    let before = peak_rss_bytes();
    let messages = run_script(&script, "hi").await;
    let growth = peak_rss_bytes().saturating_sub(before);

    let AgentMessage::Failed(failure) = terminal(&messages) else {
        panic!("expected terminal.failed (exit 7), got a different terminal");
    };
    assert!(messages.contains(&AgentMessage::Assistant {
        delta: "after the flood".into()
    }));
    assert_eq!(failure.invalid_output_lines.len(), 1);
    assert!(failure.invalid_output_lines[0].starts_with("[line of 67108864 bytes cut] xxx"));
    // One copy of the line cap at most, plus buffers: far below the 64 MiB line.
    let bound = DEFAULT_MAX_LINE as u64 + 8 * 1024 * 1024;
    assert!(
        growth < bound,
        "peak RSS grew by {growth} bytes (bound {bound})"
    );
    eprintln!("peak RSS growth for a 64 MiB line: {} KiB", growth / 1024);
}
