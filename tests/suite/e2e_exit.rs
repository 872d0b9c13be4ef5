//! Every way out of the chat ends the same way: the quit key, a shutdown signal and a lost
//! terminal all leave through the chat's one exit (`ChatLoop::leave`), so the running turn is
//! stopped, the conversation's log records it, no agent is left behind, and where a terminal
//! is still there it is restored and shown the way back (`agentty --resume <id>`).

use crate::support::chat_pane;
use crate::support::tmux;

use std::time::{Duration, Instant};

use agentty::session_log::read_summary;
use chat_pane::{ChatPane, StateDir};
use tmux::{processes_with_env, WAIT};

const SIZE: (u16, u16) = (100, 30);

/// How the test ends the chat.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Way {
    /// `/quit` while the turn runs.
    QuitKey,
    /// SIGTERM to agentty.
    Signal,
    /// The pane is closed: the terminal hangs up under agentty.
    TerminalLost,
}

/// Starts a slow turn, ends the chat `way`, and checks what every way out must leave behind.
/// Returns the pane (closed for `TerminalLost`) and the conversation's id.
fn leave_during_a_turn(way: Way) -> Option<(StateDir, ChatPane, String)> {
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    let chat = ChatPane::launch(
        &state,
        cwd.path(),
        "",
        &["--provider", "demo", "--scenario", "slow"],
        SIZE,
    )?;
    chat.wait_until_ready();
    chat.prompt("stream slowly");
    chat.wait_for_text("streams slowly on purpose");
    match way {
        Way::QuitKey => chat.prompt("/quit"),
        Way::Signal => {
            let agentty = agentty_pid(&state);
            // SAFETY: signalling the agentty this test started.
            unsafe {
                libc::kill(agentty, libc::SIGTERM);
            }
        }
        Way::TerminalLost => {
            chat.tmux(&["kill-pane", "-t", "chat"]);
        }
    }
    // Nothing agentty started outlives it, and agentty itself ends.
    let started = Instant::now();
    while processes_with_env(state.path())
        .iter()
        .any(|(_, command)| command.contains(env!("CARGO_BIN_EXE_agentty")))
    {
        assert!(
            started.elapsed() < WAIT,
            "{way:?}: left behind: {:?}",
            processes_with_env(state.path())
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The turn was stopped and the log says so: it was flushed before agentty ended.
    let logs = state.logs();
    assert_eq!(logs.len(), 1, "{way:?}: {logs:?}");
    let log = std::fs::read_to_string(&logs[0]).unwrap();
    assert!(log.contains("stream slowly"), "{way:?}: {log}");
    assert!(
        log.contains("terminal.cancelled"),
        "{way:?}: the stopped turn is not in the log:\n{log}"
    );
    // One way out, said once, with its reason.
    let leaving = leaving_lines(&state);
    assert_eq!(leaving.len(), 1, "{way:?}: {leaving:?}");
    let reason = &leaving[0];
    match way {
        Way::QuitKey => assert!(reason.contains("quit key"), "{reason}"),
        Way::Signal => assert!(reason.contains("SIGTERM"), "{reason}"),
        // Closing the pane both hangs the terminal up (SIGHUP) and ends its input; whichever
        // agentty sees first names the way out.
        Way::TerminalLost => assert!(
            reason.contains("SIGHUP") || reason.contains("terminal lost"),
            "{reason}"
        ),
    }
    let id = read_summary(&logs[0]).unwrap().id;
    Some((state, chat, id))
}

/// The pid of the agentty under `state`.
fn agentty_pid(state: &StateDir) -> i32 {
    let binary = env!("CARGO_BIN_EXE_agentty");
    processes_with_env(state.path())
        .into_iter()
        .find(|(_, command)| command.starts_with(binary) && !command.contains("demo-agent"))
        .map(|(pid, _)| pid)
        .expect("agentty is running")
}

/// The lines of agentty's own log that record a way out.
fn leaving_lines(state: &StateDir) -> Vec<String> {
    let Ok(files) = std::fs::read_dir(state.path().join("logs")) else {
        return Vec::new();
    };
    files
        .flatten()
        .filter_map(|file| std::fs::read_to_string(file.path()).ok())
        .flat_map(|text| {
            text.lines()
                .filter(|line| line.contains(" leaving "))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Where the terminal is still there: restored, with the exit status and the way back.
fn assert_restored_with_the_way_back(chat: &ChatPane, status: &str, id: &str) {
    chat.assert_exited_restored(status);
    let joined: String = chat.screen().lines().map(str::trim_end).collect();
    assert!(
        joined.contains(&format!(
            "To continue this conversation: agentty --resume {id}"
        )),
        "{joined}"
    );
}

#[test]
fn the_quit_key_during_a_turn_leaves_through_the_one_exit() {
    let Some((_state, chat, id)) = leave_during_a_turn(Way::QuitKey) else {
        return;
    };
    assert_restored_with_the_way_back(&chat, "0", &id);
}

#[test]
fn a_shutdown_signal_during_a_turn_leaves_through_the_one_exit() {
    let Some((_state, chat, id)) = leave_during_a_turn(Way::Signal) else {
        return;
    };
    assert_restored_with_the_way_back(&chat, "143", &id);
}

#[test]
fn a_lost_terminal_during_a_turn_leaves_through_the_one_exit() {
    // What can be seen without a terminal: the turn stopped and logged, nothing left, the way
    // out said once (checked in `leave_during_a_turn`).
    let _ = leave_during_a_turn(Way::TerminalLost);
}
