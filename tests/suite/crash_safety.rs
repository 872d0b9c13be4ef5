//! Crash safety of the chat's conversation log, end to end: the real `agentty` in tmux over
//! the demo agent, with the faults a crash or a disk leaves: a torn last line.

use crate::support::chat_pane;
use crate::support::tmux;

use std::path::Path;

use agentty::session_log::{read_session_log, read_summary, LogEntry};
use chat_pane::{ChatPane, StateDir};

const SIZE: (u16, u16) = (100, 30);

/// One demo turn answered in a chat on `state`, then quit.
fn one_turn(state: &StateDir, cwd: &Path, args: &[&str], prompt: &str, answer: &str) {
    let Some(chat) = ChatPane::launch(state, cwd, "", args, SIZE) else {
        return;
    };
    chat.wait_until_ready();
    chat.prompt(prompt);
    chat.wait_for("the answer to finish", |screen| {
        screen.contains(answer) && screen.contains("│ idle")
    });
    chat.quit();
}

fn turn_ids(log: &Path) -> Vec<u64> {
    read_session_log(log)
        .unwrap()
        .iter()
        .filter_map(|entry| match entry {
            LogEntry::Turn { turn, .. } => Some(*turn),
            _ => None,
        })
        .collect()
}

#[test]
fn a_torn_last_line_is_set_aside_and_the_next_turn_is_kept_whole() {
    if !tmux::tmux_available() {
        return;
    }
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    one_turn(
        &state,
        cwd.path(),
        &["--provider", "demo"],
        "remember the word pelican",
        "Prompt 1 in session",
    );
    let logs = state.logs();
    assert_eq!(logs.len(), 1);
    let log = &logs[0];
    // agentty killed while writing its second turn: the log ends in part of a line.
    let fragment = r#"{"kind":"turn","turn":2,"prompt":"lost to the cr"#;
    let mut bytes = std::fs::read(log).unwrap();
    bytes.extend_from_slice(fragment.as_bytes());
    std::fs::write(log, &bytes).unwrap();

    let Some(chat) = ChatPane::launch(&state, cwd.path(), "", &["--resume"], SIZE) else {
        return;
    };
    let screen = chat.wait_for_text("Resumed conversation");
    assert!(screen.contains("remember the word pelican"), "{screen}");
    // Nothing runs: no phantom activity in the status bar.
    assert!(screen.contains("│ idle"), "{screen}");
    assert!(!screen.contains("writing"), "{screen}");
    chat.prompt("now the word otter");
    chat.wait_for("the second answer", |screen| {
        screen.contains("Prompt 2 in session") && screen.contains("│ idle")
    });
    chat.quit();

    // The fragment is in the side file; the log's every line reads, the new turn whole.
    let torn = std::fs::read_to_string(log.with_extension("torn")).unwrap();
    assert_eq!(torn, format!("{fragment}\n"));
    let text = std::fs::read_to_string(log).unwrap();
    assert!(text.ends_with('\n'));
    for line in text.lines() {
        assert!(
            serde_json::from_str::<LogEntry>(line).is_ok(),
            "a line that does not read: {line}"
        );
    }
    // Turn 2 was never completed in the log, but its id was seen: the new turn is 3.
    assert_eq!(turn_ids(log), [1, 3]);
    let summary = read_summary(log).unwrap();
    assert_eq!((summary.turns, summary.last_turn), (2, 3));
    assert!(text.contains("now the word otter"));
}

/// One damaged byte that leaves the first line's provider unreadable: the backup header on the
/// second line stands in, and `--resume` finds the conversation.
#[test]
fn a_header_damaged_beyond_reading_is_resumed_from_its_backup() {
    if !tmux::tmux_available() {
        return;
    }
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    one_turn(
        &state,
        cwd.path(),
        &["--provider", "demo"],
        "remember the word heron",
        "Prompt 1 in session",
    );
    let log = &state.logs()[0];
    let mut bytes = std::fs::read(log).unwrap();
    let key = br#""provider""#;
    let at = bytes
        .windows(key.len())
        .position(|window| window == key)
        .unwrap();
    bytes[at + 2] = 0xff;
    std::fs::write(log, &bytes).unwrap();

    let Some(chat) = ChatPane::launch(&state, cwd.path(), "", &["--resume"], SIZE) else {
        return;
    };
    let screen = chat.wait_for_text("Resumed conversation");
    assert!(screen.contains("remember the word heron"), "{screen}");
    chat.prompt("and the word crane");
    chat.wait_for("the second answer", |screen| {
        screen.contains("Prompt 2 in session") && screen.contains("│ idle")
    });
    chat.quit();
    assert_eq!(turn_ids(log), [1, 2]);
}

/// The pid of the `agentty` chat (not its agents) running under `state`.
fn agentty_pids(state: &StateDir) -> Vec<i32> {
    let binary = env!("CARGO_BIN_EXE_agentty");
    tmux::processes_with_env(state.path())
        .into_iter()
        .filter(|(_, command)| command.starts_with(binary) && !command.contains("demo-agent"))
        .map(|(pid, _)| pid)
        .collect()
}

fn prompts(log: &Path) -> Vec<(u64, String)> {
    read_session_log(log)
        .unwrap()
        .into_iter()
        .filter_map(|entry| match entry {
            LogEntry::Turn { turn, prompt, .. } => Some((turn, prompt)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_second_agentty_on_the_same_conversation_shows_it_read_only_and_never_appends() {
    if !tmux::tmux_available() {
        return;
    }
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    let Some(first) = ChatPane::launch(&state, cwd.path(), "", &["--provider", "demo"], SIZE)
    else {
        return;
    };
    first.wait_until_ready();
    first.prompt("remember the word pelican");
    first.wait_for("the first answer", |screen| {
        screen.contains("Prompt 1 in session") && screen.contains("│ idle")
    });
    let first_pid = agentty_pids(&state)[0];
    let log = state.logs().remove(0);

    // A second launch asks for the same conversation while the first still writes it.
    let Some(second) = ChatPane::launch(&state, cwd.path(), "", &["--resume"], SIZE) else {
        return;
    };
    let screen = second.wait_for_text("read-only");
    eprintln!("the second instance:\n{screen}");
    assert!(
        screen.contains(&format!("is open in another agentty (pid {first_pid})")),
        "{screen}"
    );
    assert!(screen.contains("remember the word pelican"), "{screen}");
    assert!(screen.contains("The next prompt starts a new"), "{screen}");
    let status_bar = screen
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap();
    assert!(
        !status_bar.contains("session"),
        "the other agentty's session is not this chat's: {status_bar}"
    );
    second.prompt("a prompt of my own");
    // (The demo quotes the prompt in its answer.)
    second.wait_for("the second instance's answer", |screen| {
        screen.contains("│ a prompt of my own") && screen.contains("│ idle")
    });
    // The first goes on numbering its own turns in its own agent session.
    first.prompt("now the word otter");
    first.wait_for("the first instance's second answer", |screen| {
        screen.contains("Prompt 2 in session") && screen.contains("│ idle")
    });
    second.quit();
    second.assert_exited_restored("0");

    assert_eq!(
        prompts(&log),
        [
            (1, "remember the word pelican".to_owned()),
            (2, "now the word otter".to_owned())
        ],
        "only the first instance wrote the conversation"
    );
    let logs = state.logs();
    assert_eq!(logs.len(), 2, "the second instance's prompt began its own");
    let other = logs.iter().find(|path| **path != log).unwrap();
    assert_eq!(prompts(other), [(1, "a prompt of my own".to_owned())]);

    // A crash never leaves a conversation locked: after a SIGKILL of the first, a third
    // launch continues it.
    // SAFETY: signalling a process the test started.
    unsafe {
        libc::kill(first_pid, libc::SIGKILL);
    }
    drop(first);
    let id = read_summary(&log).unwrap().id;
    let Some(third) = ChatPane::launch(&state, cwd.path(), "", &["--resume", &id[..8]], SIZE)
    else {
        return;
    };
    let screen = third.wait_for_text("Resumed conversation");
    assert!(!screen.contains("read-only"), "{screen}");
    third.prompt("and a third");
    third.wait_for_text("Prompt 3 in session");
    third.wait_for_text("│ idle");
    third.quit();
    assert_eq!(
        prompts(&log)
            .iter()
            .map(|(turn, _)| *turn)
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
}

/// Whether this machine lets a test have mounts of its own (`unshare -m`, as root): the
/// read-only and full-disk cases need them. Where it does not, they say so and pass.
fn private_mounts(dir: &Path) -> bool {
    let works = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs \"$0\""])
        .arg(dir)
        .output()
        .is_ok_and(|output| output.status.success());
    if !works {
        eprintln!("note: no private mounts here (unshare -m); this case is skipped");
    }
    works
}

/// The screen's text with each line break and the indent after it made one space, so that a
/// wrapped notice reads as one line.
fn unwrapped(screen: &str) -> String {
    screen.lines().map(str::trim).collect::<Vec<_>>().join(" ")
}

/// The notice that a conversation is not being saved, after its reason.
const NOT_SAVED: &str = "It goes on without its log: nothing from here on can be resumed.";

/// Waits for the notice that the conversation is not being saved, because of `why`, and
/// checks that a later turn neither repeats it nor stops.
fn unsaved_notice_once(chat: &ChatPane, why: &str) -> String {
    let told = format!("{why}. {NOT_SAVED}");
    let screen = chat.wait_for(&told, |screen| unwrapped(screen).contains(&told));
    assert!(
        unwrapped(&screen).contains("is not being saved: cannot write"),
        "{screen}"
    );
    chat.wait_for_text("│ idle");
    chat.prompt("and once more");
    let screen = chat.wait_for("the next answer", |screen| {
        screen.contains("│ and once more") && screen.contains("│ idle")
    });
    assert_eq!(
        unwrapped(&screen).matches(NOT_SAVED).count(),
        1,
        "told once:\n{screen}"
    );
    screen
}

const WIDE: (u16, u16) = (160, 50);

#[test]
fn a_read_only_state_dir_is_told_once_and_the_chat_goes_on() {
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    if !tmux::tmux_available() || !private_mounts(state.path()) {
        return;
    }
    let dir = state.path().to_str().unwrap();
    let read_only = format!(
        "unshare -m sh -c 'mount --bind \"$0\" \"$0\" && mount -o remount,bind,ro \"$0\" && \
         shift && exec \"$@\"' {} sh",
        tmux::shell_quote(dir)
    );
    let Some(chat) = ChatPane::launch(
        &state,
        cwd.path(),
        &read_only,
        &["--provider", "demo"],
        WIDE,
    ) else {
        return;
    };
    chat.wait_until_ready();
    chat.prompt("hello there");
    let screen = unsaved_notice_once(&chat, "(Read-only file system (os error 30))");
    eprintln!("the unsaved-log notice:\n{screen}");
    chat.quit();
    chat.assert_exited_restored("0");
    assert!(state.logs().is_empty());
}

#[test]
fn a_full_disk_is_told_once_and_the_chat_goes_on() {
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::create_dir(state.sessions()).unwrap();
    if !tmux::tmux_available() || !private_mounts(&state.sessions()) {
        return;
    }
    // One page: the conversation's lock file takes it, and the log's first write (during the
    // first turn) finds the disk full.
    let full = format!(
        "unshare -m sh -c 'mount -t tmpfs -o size=4k tmpfs \"$0\" && shift && exec \"$@\"' {} sh",
        tmux::shell_quote(state.sessions().to_str().unwrap())
    );
    let Some(chat) = ChatPane::launch(&state, cwd.path(), &full, &["--provider", "demo"], WIDE)
    else {
        return;
    };
    chat.wait_until_ready();
    chat.prompt("hello there");
    unsaved_notice_once(&chat, "(No space left on device (os error 28))");
    chat.quit();
    chat.assert_exited_restored("0");
}

#[test]
fn a_file_size_limit_is_told_once_and_neither_kills_agentty_nor_leaves_the_terminal_raw() {
    if !tmux::tmux_available() {
        return;
    }
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    one_turn(
        &state,
        cwd.path(),
        &["--provider", "demo"],
        "markdown please",
        "That is the end of the tour",
    );
    let log = state.logs().remove(0);
    let size = std::fs::metadata(&log).unwrap().len();
    // `ulimit -f` counts 512-byte blocks in sh: the log is already over the limit, so the
    // first line appended fails (EFBIG; SIGXFSZ would kill a process that did not ignore it).
    // The demo agent keeps its state elsewhere, under the limit.
    let demo_state = tempfile::tempdir().unwrap();
    let limited = format!(
        "ulimit -f {}; AGENTTY_DEMO_STATE_DIR={}",
        size / 512,
        tmux::shell_quote(demo_state.path().to_str().unwrap())
    );
    let Some(chat) = ChatPane::launch(&state, cwd.path(), &limited, &["--resume"], WIDE) else {
        return;
    };
    chat.wait_for_text("Resumed conversation");
    chat.prompt("hello again");
    unsaved_notice_once(&chat, "(File too large (os error 27))");
    chat.quit();
    chat.assert_exited_restored("0");
    assert_eq!(
        std::fs::metadata(&log).unwrap().len(),
        size,
        "nothing torn added"
    );
}

/// The pids of `sleep 300` processes started under `state`.
fn sleeps(state: &StateDir) -> Vec<i32> {
    tmux::processes_with_env(state.path())
        .into_iter()
        .filter(|(_, command)| command == "sleep 300")
        .map(|(pid, _)| pid)
        .collect()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = std::time::Instant::now();
    while !done() {
        assert!(
            started.elapsed() < tmux::WAIT,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn tools_left_running_by_an_agentty_killed_with_sigkill_are_ended_by_the_next_launch() {
    use std::os::unix::fs::PermissionsExt;
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    // An agent whose tools outlive it: one in its process group, one in a session of its own.
    let agent = state.path().join("agent");
    std::fs::write(
        &agent,
        "#!/bin/sh\nsleep 300 &\nsetsid sleep 300 &\nexec sleep 300\n",
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let agentty = |args: &[&str]| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_agentty"));
        command
            .current_dir(cwd.path())
            .env("AGENTTY_STATE_DIR", state.path())
            .args([
                "--config",
                state.path().join("config.toml").to_str().unwrap(),
            ])
            .args(args);
        command
    };
    let mut first = agentty(&["run", "--provider", "pi", "--agent-bin"])
        .arg(&agent)
        .arg("go")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the agent and its two tools", || sleeps(&state).len() == 3);
    let records = || {
        std::fs::read_dir(state.path().join("agents"))
            .map(|entries| entries.count())
            .unwrap_or(0)
    };
    assert_eq!(records(), 1, "the running agent is recorded");

    // A launch while the first one lives leaves its agents alone.
    let output = agentty(&["run", "--provider", "demo", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains("ended without stopping"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(sleeps(&state).len(), 3);

    // SIGKILL: agentty cannot clean up. The agent dies by its parent-death signal; its tools
    // run on.
    first.kill().unwrap();
    first.wait().unwrap();
    wait_until("the agent's own death", || sleeps(&state).len() == 2);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let left = sleeps(&state);
    assert_eq!(left.len(), 2, "the tools outlived agentty");

    let Some(chat) = ChatPane::launch(&state, cwd.path(), "", &["--provider", "demo"], SIZE) else {
        return;
    };
    let screen = chat.wait_for_text("ended without stopping its agents");
    assert!(
        unwrapped(&screen).contains(&format!(
            "An earlier agentty (pid {}) ended without stopping its agents: 2 processes they \
             left running were ended.",
            first.id()
        )),
        "{screen}"
    );
    assert!(sleeps(&state).is_empty(), "left: {:?}", sleeps(&state));
    assert_eq!(records(), 0);
    chat.quit();
}

/// A pi JSON-mode stream of `total` bytes of answer in `delta`-byte deltas (paragraphs of
/// about 400 bytes), without pi's cumulative snapshots; the agent that prints it then waits,
/// so the turn runs until it is stopped.
fn flooding_agent(dir: &Path, total: usize, delta: usize) -> std::path::PathBuf {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let stream = dir.join("flood.jsonl");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&stream).unwrap());
    writeln!(out, r#"{{"type":"agent_start"}}"#).unwrap();
    writeln!(
        out,
        r#"{{"type":"message_start","message":{{"role":"assistant","content":[],"stopReason":"stop"}}}}"#
    )
    .unwrap();
    let words = "lorem ipsum dolor sit amet, consectetur adipiscing elit; sed do eiusmod tempor. ";
    let paragraph: String = words.repeat(5) + "\n\n";
    let text: String = paragraph.repeat(delta / paragraph.len() + 2);
    let mut written = 0;
    while written < total {
        let chunk = &text[written % paragraph.len()..][..delta];
        let line = serde_json::json!({"type":"message_update","assistantMessageEvent":
            {"type":"text_delta","contentIndex":0,"delta":chunk}});
        writeln!(out, "{line}").unwrap();
        written += delta;
    }
    drop(out);
    let agent = dir.join("flood-agent");
    std::fs::write(
        &agent,
        format!("#!/bin/sh\ncat '{}'\nexec sleep 300\n", stream.display()),
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    agent
}

/// agentty's peak resident memory (VmHWM), in MiB.
fn peak_rss_mib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| {
            value
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(0)
        / 1024
}

#[test]
fn a_flood_of_output_is_folded_keys_still_echo_and_esc_stops_it() {
    if !tmux::tmux_available() {
        return;
    }
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    let agent = flooding_agent(state.path(), 60 * 1024 * 1024, 4096);
    let Some(chat) = ChatPane::launch(
        &state,
        cwd.path(),
        "",
        &[
            "--provider",
            "pi",
            "--transport",
            "json",
            "--agent-bin",
            agent.to_str().unwrap(),
        ],
        WIDE,
    ) else {
        return;
    };
    chat.wait_until_ready();
    let pid = agentty_pids(&state)[0];
    chat.prompt("flood me");
    chat.wait_for_text("lorem ipsum");
    // Typing goes on while the answer floods in.
    chat.type_text("still here");
    chat.wait_for_text("still here");
    // Past the limit, the rest of the answer is counted, not kept: 60 MiB less the 512 KiB
    // kept (128 deltas).
    chat.wait_for_text("62.4 MB more of this answer not shown");
    assert!(chat.screen().contains("● writing"), "the agent still runs");
    chat.keys(&["Escape"]);
    let screen = chat.wait_for_text("│ idle");
    assert!(screen.contains("Stopped"), "{screen}");
    let peak = peak_rss_mib(pid);
    eprintln!("peak memory during a 60 MiB flood: {peak} MiB");
    assert!(peak <= 200, "agentty peaked at {peak} MiB");
    chat.keys(&["C-u"]);
    chat.quit();
    // The log has the whole answer (up to the stop), joined into few entries.
    let log = state.logs().remove(0);
    let text: usize = read_session_log(&log)
        .unwrap()
        .iter()
        .map(|entry| match entry {
            LogEntry::Message {
                message: agentty::stream::AgentMessage::Assistant { delta },
                ..
            } => delta.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(
        text,
        60 * 1024 * 1024,
        "the log keeps what the screen folds"
    );
}
