//! Every way out of the chat ends the same way: the quit key, a shutdown signal and a lost
//! terminal all leave through the chat's one exit (`ChatLoop::leave`), so the running turn is
//! stopped, the conversation's log records it, no agent is left behind, and where a terminal
//! is still there it is restored and shown the way back (`agentty --resume <id>`).

use crate::support::chat_pane;
use crate::support::tmux;

use std::path::Path;
use std::time::{Duration, Instant};

use agentty::session_log::read_summary;
use chat_pane::{ChatPane, StateDir};
use tmux::{processes_with_env, shell_quote, socket_name, WAIT};

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
            chat.tmux(&["kill-pane", "-t", chat.target]);
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

/// agentty in a pane of its own, under a shell that runs `trap_hup` first and writes agentty's
/// exit status to `status` after it; returns the pane and agentty's pid.
fn launch_under_shell(state: &StateDir, trap_hup: &str, status: &Path) -> (tmux::Pane, i32) {
    let command = format!(
        "sh -c {}",
        shell_quote(&format!(
            "{trap_hup} env AGENTTY_STATE_DIR={state} {bin} --config {state}/config.toml \
             --provider demo; echo $? > {status}",
            state = state.path().display(),
            bin = env!("CARGO_BIN_EXE_agentty"),
            status = status.display(),
        ))
    );
    let pane = tmux::Pane::spawn(socket_name("agentty-hangup"), SIZE.0, SIZE.1, &command);
    pane.wait_for_text("/ commands · @ files");
    (pane, agentty_pid(state))
}

/// CPU time (user + system) of `pid` so far, in clock ticks; `None` once it is gone.
fn cpu_ticks(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// The lines of agentty's own log.
fn log_lines(state: &StateDir) -> Vec<String> {
    std::fs::read_dir(state.path().join("logs"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|file| std::fs::read_to_string(file.path()).ok())
        .flat_map(|text| text.lines().map(str::to_owned).collect::<Vec<_>>())
        .collect()
}

/// Waits for `status` to be written; its content.
fn exit_status_in(status: &Path) -> String {
    let started = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(status) {
            if text.ends_with('\n') {
                return text.trim().to_owned();
            }
        }
        assert!(
            started.elapsed() < WAIT,
            "agentty's status was never written"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A terminal that goes away under a shell that ignores SIGHUP (as `nohup` or a wrapper
/// script does) sends agentty no signal at all; its input hangs up. agentty notices the
/// hang-up itself and leaves through the one exit with status 1, at once, without spinning on
/// the dead terminal meanwhile.
#[test]
fn a_closed_terminal_ends_agentty_even_when_sighup_is_ignored() {
    if !tmux::tmux_available() {
        return;
    }
    let state = StateDir::new();
    let status = state.path().join("status");
    let (pane, agentty) = launch_under_shell(&state, "trap '' HUP;", &status);
    let ticks_before = cpu_ticks(agentty).expect("agentty runs");
    let mut ticks_last = ticks_before;
    let closed = Instant::now();
    pane.kill_server();
    while let Some(ticks) = cpu_ticks(agentty) {
        ticks_last = ticks;
        assert!(
            closed.elapsed() < WAIT,
            "agentty outlived its terminal by {:?}",
            closed.elapsed()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    eprintln!(
        "agentty ended {:?} after its terminal, using {} clock ticks of CPU meanwhile",
        closed.elapsed(),
        ticks_last - ticks_before
    );
    // A spinning reader burns a full core (100 ticks a second) until it is stopped.
    assert!(
        ticks_last - ticks_before < 50,
        "agentty spun on the dead terminal: {} ticks",
        ticks_last - ticks_before
    );
    assert_eq!(exit_status_in(&status), "1");
    let log = log_lines(&state);
    assert!(
        log.iter()
            .any(|line| line.contains("the terminal is gone") && line.contains("hung up")),
        "{log:#?}"
    );
}

/// SIGHUP as the terminal goes away: agentty stops, writes its log and exits 129, and the way
/// back it prints to a terminal that is gone is no panic.
#[test]
fn a_hangup_with_the_terminal_gone_exits_129_without_a_panic() {
    if !tmux::tmux_available() {
        return;
    }
    let state = StateDir::new();
    let status = state.path().join("status");
    // The shell catches SIGHUP (so it lives on to write the status); agentty gets it by default.
    let (pane, agentty) = launch_under_shell(&state, "trap : HUP;", &status);
    pane.prompt("hello");
    pane.wait_for_text("Ask the agent anything");
    pane.wait_for("the turn's end", |screen| screen.contains("idle"));
    // SAFETY: signalling the agentty this test started.
    unsafe {
        libc::kill(agentty, libc::SIGHUP);
    }
    pane.kill_server();
    assert_eq!(exit_status_in(&status), "129");
    let log = log_lines(&state);
    assert!(
        log.iter()
            .any(|line| line.contains("leaving reason=\"SIGHUP\"")),
        "{log:#?}"
    );
    assert!(!log.iter().any(|line| line.contains("panic")), "{log:#?}");
    let logs = state.logs();
    assert_eq!(logs.len(), 1, "the conversation's log: {logs:?}");
    assert!(std::fs::read_to_string(&logs[0]).unwrap().contains("hello"));
}
