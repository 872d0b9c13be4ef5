//! End-to-end: the real `agentty` binary in a real terminal (tmux), driven by keys.
//!
//! Each test starts its own tmux server (`-L agentty-test-<pid>-<n>`, so tests run in parallel)
//! with its own `AGENTTY_STATE_DIR`, which also marks every process the test started: an agent
//! process "left behind" is one whose environment still carries that directory. The command in
//! the pane prints agentty's exit status and the terminal modes (`stty`) afterwards, so a test
//! can see that the terminal was restored. Without tmux these tests fail (CI installs it);
//! `AGENTTY_SKIP_TMUX_TESTS=1` skips them on purpose, with a note.

use crate::support::captures;
use crate::support::tmux;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tmux::{
    processes_with_env, reporting_exit, shell_quote, socket_name, tmux_available, Pane, WAIT,
};

const WIDTH: u16 = 100;
const HEIGHT: u16 = 30;

struct Session {
    pane: Pane,
    state_dir: tempfile::TempDir,
    /// The working directory agentty runs in (`None`: the test's).
    cwd: Option<PathBuf>,
}

impl Session {
    /// Starts `agentty ARGS` in a fresh tmux server; `None` when tmux is missing.
    fn start(args: &[&str]) -> Option<Session> {
        Self::start_in(tempfile::tempdir().expect("temp dir"), args)
    }

    /// Like `start`, with extra environment for agentty.
    fn start_with_env(env: &[(&str, &str)], args: &[&str]) -> Option<Session> {
        let prefix: Vec<String> = env
            .iter()
            .map(|(key, value)| format!("{key}={}", shell_quote(value)))
            .collect();
        Self::launch(
            tempfile::tempdir().expect("temp dir"),
            None,
            &prefix.join(" "),
            args,
        )
    }

    /// Ends this session's tmux server and starts `agentty ARGS` again on the same state dir
    /// (its session logs included).
    fn restart(self, args: &[&str]) -> Option<Session> {
        let cwd = self.cwd.clone();
        self.restart_in(cwd.as_deref(), args)
    }

    /// Like `restart`, in the working directory `cwd`.
    fn restart_in(mut self, cwd: Option<&Path>, args: &[&str]) -> Option<Session> {
        let state_dir =
            std::mem::replace(&mut self.state_dir, tempfile::tempdir().expect("temp dir"));
        for (pid, _) in processes_with_env(state_dir.path()) {
            // SAFETY: signalling a process we started.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        drop(self);
        Self::launch(state_dir, cwd, "", args)
    }

    fn start_in(state_dir: tempfile::TempDir, args: &[&str]) -> Option<Session> {
        Self::launch(state_dir, None, "", args)
    }

    /// Starts `agentty ARGS` in the working directory `cwd`.
    fn start_in_dir(cwd: &Path, args: &[&str]) -> Option<Session> {
        Self::launch(tempfile::tempdir().expect("temp dir"), Some(cwd), "", args)
    }

    fn launch(
        state_dir: tempfile::TempDir,
        cwd: Option<&Path>,
        env: &str,
        args: &[&str],
    ) -> Option<Session> {
        if !tmux_available() {
            return None;
        }
        // An empty config of its own, so that the user's config is not read (`--config` must
        // name a file that exists).
        let config = state_dir.path().join("config.toml");
        std::fs::write(&config, "").expect("write the test's config");
        let mut command_line = format!(
            "{env} AGENTTY_STATE_DIR={} {} --config {}",
            shell_quote(state_dir.path().to_str().unwrap()),
            shell_quote(env!("CARGO_BIN_EXE_agentty")),
            shell_quote(config.to_str().unwrap()),
        );
        for arg in args {
            command_line.push(' ');
            command_line.push_str(&shell_quote(arg));
        }
        let pane = Pane::start(
            "agentty-test",
            cwd,
            (WIDTH, HEIGHT),
            &reporting_exit(&command_line),
        );
        Some(Session {
            pane,
            state_dir,
            cwd: cwd.map(Path::to_path_buf),
        })
    }

    fn wait_until_ready(&self) {
        self.wait_for_text("/ commands · @ files");
    }

    /// Processes started under this test's state dir, by command line.
    fn processes(&self) -> Vec<(i32, String)> {
        processes_with_env(self.state_dir.path())
    }

    fn agent_processes(&self) -> Vec<(i32, String)> {
        self.processes()
            .into_iter()
            .filter(|(_, command)| command.contains("demo-agent") || command.contains("sleep 300"))
            .collect()
    }

    fn agentty_pid(&self) -> i32 {
        let binary = env!("CARGO_BIN_EXE_agentty");
        self.processes()
            .into_iter()
            .find(|(_, command)| command.starts_with(binary) && !command.contains("demo-agent"))
            .map(|(pid, _)| pid)
            .expect("agentty is running")
    }

    fn wait_for_no_agents(&self) {
        let started = Instant::now();
        while !self.agent_processes().is_empty() {
            if started.elapsed() > WAIT {
                panic!("agent processes left behind: {:?}", self.agent_processes());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

tmux::deref_to_pane!(Session);

impl Drop for Session {
    fn drop(&mut self) {
        self.pane.kill_server();
        // Whatever survived the test must not outlive it.
        for (pid, _) in processes_with_env(self.state_dir.path()) {
            // SAFETY: signalling a process we started.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// Writes an executable `#!/bin/sh` agent script.
fn write_agent(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let agent = dir.join("agent");
    std::fs::write(&agent, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    agent
}

#[test]
fn quit_restores_the_terminal() {
    let Some(session) = Session::start(&["--provider", "demo"]) else {
        return;
    };
    session.wait_until_ready();
    assert_eq!(session.pane_flag("#{alternate_on}"), "1");
    assert_eq!(session.pane_flag("#{mouse_any_flag}"), "1");
    // Typed text and a multi-line prompt are kept in the input; Ctrl+C clears it, then twice
    // quits.
    session.type_text("first line");
    session.keys(&["M-Enter"]);
    session.type_text("second line");
    session.wait_for_text("second line");
    session.keys(&["C-c"]);
    session.wait_for("the draft cleared", |screen| {
        !screen.contains("second line")
    });
    // Past the double press (a second Ctrl+C within a second of the first quits at once): on
    // an empty composer, Ctrl+C only asks for another.
    std::thread::sleep(Duration::from_millis(1200));
    session.keys(&["C-c"]);
    session.wait_for_text("Ctrl+C again to quit");
    session.keys(&["C-c"]);
    session.assert_exited_restored("0");
}

#[test]
fn sigterm_restores_the_terminal() {
    let Some(session) = Session::start(&["--provider", "demo"]) else {
        return;
    };
    session.wait_until_ready();
    let pid = session.agentty_pid();
    // SAFETY: signalling the agentty this test started.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    session.assert_exited_restored("143");
}

#[test]
fn demo_agent_answers_a_prompt() {
    let Some(session) = Session::start(&["--provider", "demo", "--scenario", "hello"]) else {
        return;
    };
    session.wait_until_ready();
    session.prompt("hi there, who are you?");
    session.wait_for_text("› hi there, who are you?");
    let screen = session.wait_for_text("scripted stand-in for a coding agent");
    assert!(screen.contains("agentty demo agent"), "{screen}");
    session.wait_for_text("│ idle");
}

#[test]
fn thinking_is_collapsed_and_expands() {
    let Some(session) = Session::start(&["--provider", "demo", "--scenario", "thinking"]) else {
        return;
    };
    session.wait_until_ready();
    session.prompt("think first");
    // While it thinks, the live pane shows the thinking so far; the status bar says so.
    session.wait_for_text("▸ Thinking… ·");
    session.wait_for_text("● thinking");
    session.wait_for_text("Here is my answer");
    // The whole thought completes the pane, collapsed again.
    let screen = session.wait_for_text("▸ Thinking ·");
    assert!(
        !screen.contains("Before answering I should consider"),
        "{screen}"
    );
    session.keys(&["C-t"]);
    session.wait_for_text("Before answering I should consider");
    session.wait_for_text("▾ Thinking ·");
}

#[test]
fn esc_stops_a_slow_stream_and_leaves_no_agent() {
    let Some(session) = Session::start(&["--provider", "demo", "--scenario", "slow"]) else {
        return;
    };
    session.wait_until_ready();
    session.prompt("stream slowly");
    session.wait_for_text("streams slowly on purpose");
    assert!(!session.agent_processes().is_empty(), "the agent runs");
    session.keys(&["Escape"]);
    let screen = session.wait_for_text("■ Stopped");
    // What the agent did, in words ("ended on the interrupt … in 12 ms"), not "Stopped at
    // the interrupt after 1 ms".
    assert!(screen.contains("■ Stopped: the agent "), "{screen}");
    assert!(!screen.contains("Stopped at the"), "{screen}");
    // What was shown stays.
    assert!(screen.contains("streams slowly on purpose"), "{screen}");
    session.wait_for_text("│ idle");
    session.wait_for_no_agents();
    assert!(
        !screen.contains("Thank you for waiting"),
        "the stream was cut short"
    );
}

/// Ctrl+C twice within a second while a turn streams: the first stops the turn, the second
/// quits (as Claude Code's users press it), and no agent is left.
#[test]
fn ctrl_c_twice_during_a_turn_quits() {
    let Some(session) = Session::start(&["--provider", "demo", "--scenario", "slow"]) else {
        return;
    };
    session.wait_until_ready();
    session.prompt("stream slowly");
    session.wait_for_text("streams slowly on purpose");
    session.keys(&["C-c", "C-c"]);
    let left = session.wait_for_text("agentty exited 0");
    eprintln!("Ctrl+C twice during a turn:\n{left}");
    session.wait_for_no_agents();
}

#[test]
fn retry_from_the_menu_after_a_flaky_failure() {
    let Some(session) = Session::start(&["--provider", "demo", "--scenario", "flaky"]) else {
        return;
    };
    session.wait_until_ready();
    session.prompt("please answer");
    session.wait_for_text("429 rate limit exceeded");
    session.wait_for_text("│ idle");
    session.keys(&["C-x"]);
    session.wait_for_text("Retry last turn");
    session.keys(&["Enter"]);
    session.wait_for_text("Second time lucky");
}

/// Sends `signal` to agentty while a slow answer streams: the agent is stopped, the terminal
/// restored, and agentty exits with `status`.
fn signal_during_a_turn_stops_the_agent_and_restores_the_terminal(signal: i32, status: &str) {
    let Some(session) = Session::start(&["--provider", "demo", "--scenario", "slow"]) else {
        return;
    };
    session.wait_until_ready();
    session.prompt("stream slowly");
    session.wait_for_text("streams slowly on purpose");
    let pid = session.agentty_pid();
    // SAFETY: signalling the agentty this test started.
    unsafe {
        libc::kill(pid, signal);
    }
    session.assert_exited_restored(status);
    session.wait_for_no_agents();
}

#[test]
fn sigterm_during_a_turn_stops_the_agent_and_restores_the_terminal() {
    signal_during_a_turn_stops_the_agent_and_restores_the_terminal(libc::SIGTERM, "143");
}

/// SIGQUIT's default action would dump core with the terminal in raw mode and the agent running.
#[test]
fn sigquit_during_a_turn_stops_the_agent_and_restores_the_terminal() {
    signal_during_a_turn_stops_the_agent_and_restores_the_terminal(libc::SIGQUIT, "131");
}

#[test]
fn closing_the_terminal_stops_the_agent() {
    let Some(session) = Session::start(&["--provider", "demo", "--scenario", "slow"]) else {
        return;
    };
    session.wait_until_ready();
    session.prompt("stream slowly");
    session.wait_for_text("streams slowly on purpose");
    close_the_terminal_and_expect_nothing_left(&session);
}

#[test]
fn closing_the_terminal_ends_agentty() {
    let Some(session) = Session::start(&["--provider", "demo"]) else {
        return;
    };
    session.wait_until_ready();
    assert!(!session.processes().is_empty());
    close_the_terminal_and_expect_nothing_left(&session);
}

fn close_the_terminal_and_expect_nothing_left(session: &Session) {
    // Killing the pane closes its terminal: agentty gets SIGHUP.
    session.tmux(&["kill-pane", "-t", session.target]);
    let started = Instant::now();
    while !session.processes().is_empty() {
        if started.elapsed() > WAIT {
            panic!("left behind after SIGHUP: {:?}", session.processes());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn second_esc_kills_an_agent_that_ignores_sigint() {
    let Some(session) = Session::start(&["--provider", "demo", "--scenario", "ignore-sigint"])
    else {
        return;
    };
    session.wait_until_ready();
    // The working tree's first snapshot is done (a prompt would wait for it).
    session.wait_for_text(" idle");
    session.prompt("try to stop me");
    session.wait_for_text("● w"); // working, or writing once text streams
    session.keys(&["Escape"]);
    session.wait_for_text("stopping: ");
    session.keys(&["Escape"]);
    session.wait_for_text("■ Stopped: the agent was killed");
    session.wait_for_no_agents();
}

#[test]
fn stopping_leaves_no_grandchild_behind() {
    let Some(session) = Session::start(&["--provider", "demo", "--scenario", "grandchild"]) else {
        return;
    };
    session.wait_until_ready();
    session.prompt("spawn helpers");
    session.wait_for("the grandchildren to start", |_| {
        session
            .agent_processes()
            .iter()
            .any(|(_, command)| command.contains("sleep 300"))
    });
    session.keys(&["Escape"]);
    session.wait_for_text("■ Stopped");
    session.wait_for_no_agents();
}

/// Clear screen, cursor home, window title (OSC 0), clipboard write (OSC 52), bracketed-paste
/// end, cursor move: what a hostile agent puts in its text.
const HOSTILE: &str =
    "A\u{1b}[2J\u{1b}[H\u{1b}]0;pwned-title\u{7}\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}[201~\u{1b}[10;10HZ";

/// Which of [`HOSTILE`]'s sequences appear raw in `written` (bytes sent to the terminal).
/// agentty itself writes no BEL and no OSC unless the user copies (OSC 52), which these tests
/// never do.
/// `written` without the titles agentty itself sets (`ESC ] 0 ; agentty … BEL`, checked by
/// [`the_title_follows_the_turn_and_an_unfocused_terminal_is_called_back`]): what is left of
/// OSC or BEL came from somewhere else.
fn without_agenttys_titles(written: &[u8]) -> Vec<u8> {
    const TITLE: &[u8] = b"\x1b]0;agentty";
    let mut kept = Vec::with_capacity(written.len());
    let mut rest = written;
    while let Some(start) = rest.windows(TITLE.len()).position(|window| window == TITLE) {
        kept.extend_from_slice(&rest[..start]);
        let after = &rest[start..];
        match after.iter().position(|byte| *byte == 0x07) {
            Some(bell) => rest = &after[bell + 1..],
            None => {
                rest = after;
                break;
            }
        }
    }
    kept.extend_from_slice(rest);
    kept
}

fn leaked_sequences(written: &[u8]) -> Vec<&'static str> {
    const SEQUENCES: &[(&str, &[u8])] = &[
        ("BEL", b"\x07"),
        ("OSC (title, clipboard)", b"\x1b]"),
        ("clear screen after the agent's A", b"A\x1b[2J"),
        ("bracketed-paste end", b"\x1b[201~"),
        ("cursor move before the agent's Z", b"\x1b[10;10HZ"),
    ];
    SEQUENCES
        .iter()
        .filter(|(_, bytes)| written.windows(bytes.len()).any(|window| window == *bytes))
        .map(|(name, _)| *name)
        .collect()
}

/// A pi `--mode json` stream whose text, thinking and tool output carry hostile escape
/// sequences: clear screen, window title (OSC 0), clipboard write (OSC 52), bracketed-paste end,
/// cursor moves.
fn hostile_pi_stream() -> String {
    use serde_json::json;
    let hostile = HOSTILE;
    let text = format!("Escapes ahead: {hostile} end of answer");
    let usage = json!({"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,
        "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}});
    let message = |content: serde_json::Value, stop: &str| {
        json!({"role":"assistant","content":content,"api":"openai-completions","provider":"fake",
            "model":"plain","usage":usage,"stopReason":stop,"timestamp":1})
    };
    let thinking = json!({"type":"thinking","thinking":format!("thinking {hostile}"),"thinkingSignature":"reasoning_content"});
    let tool_call = json!({"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"printf hostile"}});
    let tool_output = json!({"content":[{"type":"text","text":format!("tool {hostile}\n")}]});
    let final_content = json!([thinking, {"type":"text","text":text}]);
    let lines = [
        json!({"type":"session","version":3,"id":"01a228f9-0000-7000-8000-000000000001","timestamp":"2026-11-29T20:00:00.000Z","cwd":"/"}),
        json!({"type":"agent_start"}),
        json!({"type":"turn_start"}),
        json!({"type":"message_start","message":message(json!([]), "toolUse")}),
        json!({"type":"message_end","message":message(json!([tool_call]), "toolUse")}),
        json!({"type":"tool_execution_start","toolCallId":"call_1","toolName":"bash","args":{"command":"printf hostile"}}),
        json!({"type":"tool_execution_update","toolCallId":"call_1","toolName":"bash","args":{},"partialResult":tool_output}),
        json!({"type":"tool_execution_end","toolCallId":"call_1","toolName":"bash","result":tool_output,"isError":false}),
        json!({"type":"turn_end","message":message(json!([tool_call]), "toolUse"),"toolResults":[]}),
        json!({"type":"turn_start"}),
        json!({"type":"message_start","message":message(json!([]), "stop")}),
        json!({"type":"message_update","assistantMessageEvent":{"type":"thinking_delta","contentIndex":0,"delta":format!("thinking {hostile}")},"message":message(json!([]), "stop")}),
        json!({"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":1,"delta":text},"message":message(json!([]), "stop")}),
        json!({"type":"message_end","message":message(final_content.clone(), "stop")}),
        json!({"type":"turn_end","message":message(final_content, "stop"),"toolResults":[]}),
        json!({"type":"agent_end","messages":[]}),
    ];
    lines.iter().map(|line| format!("{line}\n")).collect()
}

#[test]
fn hostile_escape_sequences_neither_retitle_nor_clear_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let stream = dir.path().join("hostile.jsonl");
    std::fs::write(&stream, hostile_pi_stream()).unwrap();
    let agent = write_agent(dir.path(), &format!("cat '{}'", stream.display()));
    let Some(session) =
        Session::start(&["--provider", "demo", "--agent-bin", agent.to_str().unwrap()])
    else {
        return;
    };
    session.wait_until_ready();
    let recording = dir.path().join("terminal.bytes");
    session.record_output(&recording);
    // Let applications write tmux's clipboard, so that a leaked OSC 52 would show as a buffer.
    session.tmux(&["set", "-g", "set-clipboard", "on"]);
    session.prompt("show me something hostile");
    let screen = session.wait_for_text("end of answer");
    // The sequences are shown as visible control pictures, and the screen around them intact.
    assert!(screen.contains("␛[2J"), "{screen}");
    assert!(
        screen.contains("show me something hostile"),
        "the prompt is still on screen:\n{screen}"
    );
    session.keys(&["C-o"]);
    // What agentty wrote to the terminal, read where the screen cannot show it: the agent's
    // sequences arrived as text (␛ pictures), none as bytes the terminal would act on.
    // The words of the answer's last line arrive as separate writes (ratatui skips the
    // unchanged spaces between them).
    let written = tmux::recorded_until(&recording, b"answer");
    assert!(
        written.windows(3).any(|window| window == "␛".as_bytes()),
        "the recording holds the agent's text"
    );
    let leaked = leaked_sequences(&without_agenttys_titles(&written));
    assert!(
        leaked.is_empty(),
        "the agent's {leaked:?} reached the terminal:\n{}",
        String::from_utf8_lossy(&written).escape_debug()
    );
    // The title is agentty's own, whatever the agent wrote.
    wait_for_title(&session, "agentty · demo · idle");
    // tmux keeps a pane's clipboard writes as paste buffers: none may appear.
    assert_eq!(
        session.tmux(&["list-buffers"]).trim(),
        "",
        "an agent wrote the clipboard"
    );
    // Still responsive: the composer takes input.
    session.type_text("still here");
    session.wait_for_text("still here");
    // Ctrl+C clears the draft, and another within a second quits.
    session.keys(&["C-c"]);
    session.keys(&["C-c"]);
    session.assert_exited_restored("0");
}

/// Runs one turn and quits, so that the state dir holds a finished session log.
fn one_remembered_turn() -> Option<Session> {
    let session = Session::start(&["--provider", "demo"])?;
    session.wait_until_ready();
    session.prompt("remember the word pelican");
    // The demo's answer ends by numbering the prompt in its session; then the turn is over.
    session.wait_for("the answer to finish", |screen| {
        screen.contains("Prompt 1 in session") && screen.contains("│ idle")
    });
    session.keys(&["C-c"]);
    session.keys(&["C-c"]);
    session.wait_for_text("agentty exited");
    Some(session)
}

#[test]
fn resume_reopens_the_last_transcript_and_continues_its_session() {
    let Some(first) = one_remembered_turn() else {
        return;
    };
    let session = first.restart(&["--resume"]).unwrap();
    let screen = session.wait_for_text("remember the word pelican");
    assert!(
        screen.contains("demo"),
        "the provider of the log is used:\n{screen}"
    );
    // The next turn continues the same demo session (the demo agent numbers its prompts).
    session.prompt("and again");
    session.wait_for_text("Prompt 2 in");
}

#[test]
fn the_resume_picker_lists_conversations_and_reopens_the_chosen_one() {
    let Some(first) = one_remembered_turn() else {
        return;
    };
    let session = first.restart(&["--provider", "demo"]).unwrap();
    session.wait_until_ready();
    assert!(!session.screen().contains("pelican"));
    session.prompt("/resume");
    // The picker's own footer (the slash popup also names the command).
    let picker = session.wait_for_text("type to filter");
    assert!(picker.contains("remember the word pelican"), "{picker}");
    assert!(picker.contains("1 turn"), "{picker}");
    // Typing filters: nothing matches this.
    session.type_text("zebra");
    session.wait_for_text("Nothing matches");
    for _ in 0..5 {
        session.keys(&["BSpace"]);
    }
    session.wait_for_text("remember the word pelican");
    session.keys(&["Enter"]);
    let screen = session.wait_for_text("Resumed conversation");
    assert!(screen.contains("› remember the word pelican"), "{screen}");
    session.prompt("and again");
    session.wait_for_text("Prompt 2 in");
}

/// The picker's filter reads every prompt of a conversation, not only its first: a word of the
/// second prompt finds it, from the log as the picker reads it after a restart.
#[test]
fn the_resume_picker_finds_a_conversation_by_a_later_prompt() {
    let Some(second) = two_remembered_turns_quit() else {
        return;
    };
    let third = second.restart(&["--provider", "demo"]).unwrap();
    third.wait_until_ready();
    third.prompt("/resume");
    third.wait_for_text("type to filter");
    third.type_text("otter");
    let picker = third.wait_for_text("2 turns");
    assert!(
        picker.contains("remember the word pelican"),
        "the conversation is found by its second prompt:\n{picker}"
    );
    third.type_text("zz");
    third.wait_for_text("Nothing matches");
}

/// A conversation of two turns ("remember the word pelican", then after `--resume` "now the
/// word otter"), quit; `None` where tmux is skipped.
fn two_remembered_turns_quit() -> Option<Session> {
    let first = one_remembered_turn()?;
    let second = first.restart(&["--resume"]).unwrap();
    second.wait_for_text("remember the word pelican");
    second.prompt("now the word otter");
    second.wait_for("the second answer", |screen| {
        screen.contains("Prompt 2 in session") && screen.contains("│ idle")
    });
    quit(&second);
    Some(second)
}

/// Quits a chat whose turn is over and waits for agentty to exit.
fn quit(session: &Session) {
    session.keys(&["C-c"]);
    session.keys(&["C-c"]);
    session.wait_for_text("agentty exited");
}

#[test]
fn three_launches_of_one_conversation_come_back_whole() {
    let Some(second) = two_remembered_turns_quit() else {
        return;
    };
    let third = second.restart(&["--resume"]).unwrap();
    let screen = third.wait_for_text("now the word otter");
    assert!(screen.contains("2 turns"), "{screen}");
    // The first launch's turn is back too, above (Home scrolls to the top).
    third.keys(&["Home"]);
    third.wait_for_text("remember the word pelican");
    third.keys(&["End"]);
    third.prompt("and a third");
    third.wait_for_text("Prompt 3 in");
    // One conversation, one log (and its raw-line sidecar).
    let logs = std::fs::read_dir(third.state_dir.path().join("sessions"))
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .is_ok_and(|entry| entry.path().extension().is_some_and(|ext| ext == "jsonl"))
        })
        .count();
    assert_eq!(logs, 1);
}

#[test]
fn a_launch_without_a_prompt_does_not_displace_the_conversation() {
    let Some(first) = one_remembered_turn() else {
        return;
    };
    let idle = first.restart(&["--provider", "demo"]).unwrap();
    idle.wait_until_ready();
    quit(&idle);
    let resumed = idle.restart(&["--resume"]).unwrap();
    resumed.wait_for_text("remember the word pelican");
}

#[test]
fn resume_in_another_directory_does_not_open_its_conversations() {
    let project = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let Some(session) = Session::start_in_dir(project.path(), &["--provider", "demo"]) else {
        return;
    };
    session.wait_until_ready();
    session.prompt("remember the word pelican");
    session.wait_for("the answer", |screen| {
        screen.contains("Prompt 1 in session") && screen.contains("│ idle")
    });
    quit(&session);
    let other = session
        .restart_in(Some(elsewhere.path()), &["--resume"])
        .unwrap();
    let screen = other.wait_for_text("agentty exited 2");
    assert!(screen.contains("no earlier conversation in"), "{screen}");
    assert!(!screen.contains("pelican"), "{screen}");
}

#[test]
fn a_notice_while_an_answer_streams_leaves_the_answer_and_its_copy_whole() {
    let Some(session) = Session::start(&["--provider", "demo", "--scenario", "markdown"]) else {
        return;
    };
    session.wait_until_ready();
    session.tmux(&["set", "-g", "set-clipboard", "on"]);
    session.prompt("show me markdown");
    session.wait_for_text("A tour of markdown");
    session.prompt("/log");
    session.wait_for("the answer to finish", |screen| screen.contains("│ idle"));
    let screen = session.screen();
    assert!(screen.contains("Log file:"), "{screen}");
    session.prompt("/copy");
    // Through a clipboard tool where one is installed (it confirms), else the terminal's
    // clipboard, which the notice says cannot confirm.
    let said = session.wait_for("the copy to be said", |screen| {
        screen.contains("to the clipboard (") || screen.contains("clipboard (OSC 52)")
    });
    if !said.contains("clipboard (OSC 52)") {
        return;
    }
    // No tool confirmed it: the notice says the terminal may not have taken it, and why.
    let words = said.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("since no clipboard tool was found (wl-copy, xclip or pbcopy)"),
        "{said}"
    );
    assert!(!said.contains("Copied"), "{said}");
    let copied = session.tmux(&["show-buffer"]);
    // The demo's markdown answer, whole: its first and its last line.
    assert!(copied.starts_with("# A tour of markdown"), "{copied}");
    assert!(copied.trim_end().ends_with("still arriving."), "{copied}");
}

/// `/copy` with a clipboard tool on `PATH` (a fake `wl-copy` that keeps what it reads): the
/// tool gets the last answer whole, and the notice names the tool, which confirmed it.
#[test]
fn copy_through_a_clipboard_tool_names_it_and_the_tool_gets_the_answer() {
    use std::os::unix::fs::PermissionsExt;
    let tools = tempfile::tempdir().unwrap();
    let kept = tools.path().join("clipboard.txt");
    let tool = tools.path().join("wl-copy");
    std::fs::write(
        &tool,
        format!("#!/bin/sh\ncat > {}\n", shell_quote(kept.to_str().unwrap())),
    )
    .unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        tools.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let Some(session) = Session::start_with_env(
        &[("PATH", &path)],
        &["--provider", "demo", "--scenario", "markdown"],
    ) else {
        return;
    };
    session.wait_until_ready();
    session.prompt("show me markdown");
    session.wait_for("the answer to finish", |screen| {
        screen.contains("still arriving.") && screen.contains("│ idle")
    });
    session.prompt("/copy");
    let said = session.wait_for_text("to the clipboard (wl-copy)");
    eprintln!("/copy with a tool:\n{said}");
    assert!(said.contains("Copied the last answer ("), "{said}");
    let copied = std::fs::read_to_string(&kept).unwrap();
    assert!(copied.starts_with("# A tour of markdown"), "{copied}");
    assert!(copied.trim_end().ends_with("still arriving."), "{copied}");
}

#[test]
fn a_panic_restores_the_terminal_stops_the_agents_and_says_where_the_log_is() {
    let Some(session) = Session::start_with_env(
        &[
            ("AGENTTY_TEST_PANIC_ON_PROMPT", "crash now"),
            ("RUST_BACKTRACE", "0"),
        ],
        &["--provider", "demo", "--scenario", "grandchild"],
    ) else {
        return;
    };
    session.wait_until_ready();
    session.prompt("spawn helpers");
    session.wait_for("the grandchildren to start", |_| {
        session
            .agent_processes()
            .iter()
            .any(|(_, command)| command.contains("sleep 300"))
    });
    let answer_so_far = session.screen();
    assert!(answer_so_far.contains("spawn helpers"));
    session.prompt("crash now");
    session.assert_exited_restored("101");
    let screen = session.screen();
    assert!(screen.contains("test panic on prompt"), "{screen}");
    assert!(
        screen.contains("this is a bug") && screen.contains("agentty.log"),
        "{screen}"
    );
    session.wait_for_no_agents();
    // What the user saw is in the session log, flushed before the crash.
    let sessions = session.state_dir.path().join("sessions");
    let log = agentty::session_log::latest_session_log(&sessions).expect("a session log");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("spawn helpers"), "{text}");
    // So are the agent's raw lines, in the sidecar whose frame the crash left unfinished.
    let mut raw_lines = 0;
    agentty::session_log::raw::for_each_raw_line(&log, |_| raw_lines += 1).unwrap();
    assert!(raw_lines > 0, "no raw line readable after the crash");
}

#[test]
fn orphans_that_exit_on_their_own_are_reaped_not_left_as_zombies() {
    let dir = tempfile::tempdir().unwrap();
    let capture = captures::captures_dir("pi").join("a_plain.stdout.jsonl");
    // Three short-lived orphans in sessions of their own: they re-parent to agentty (a subreaper)
    // and exit before any scan could match them (a zombie has no environment).
    let agent = write_agent(
        dir.path(),
        &format!(
            "for i in 1 2 3; do ( setsid sleep 0.05 & ); done\nsleep 0.5\ncat '{}'",
            capture.display()
        ),
    );
    let Some(session) =
        Session::start(&["--provider", "demo", "--agent-bin", agent.to_str().unwrap()])
    else {
        return;
    };
    session.wait_until_ready();
    let agentty = session.agentty_pid();
    session.prompt("hello");
    session.wait_for("the turn to end", |screen| {
        screen.contains("The quick brown fox") && screen.contains("│ idle")
    });
    let zombies = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let fields: Vec<&str> = stat
                    .rsplit_once(')')
                    .map(|(_, rest)| rest.split_whitespace().collect())
                    .unwrap_or_default();
                fields.first() == Some(&"Z") && fields.get(1) == Some(&agentty.to_string().as_str())
            })
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while zombies() > 0 {
        assert!(
            Instant::now() < deadline,
            "{} zombie children of agentty",
            zombies()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the pane's title is `title`.
fn wait_for_title(session: &Session, title: &str) {
    let started = Instant::now();
    loop {
        let shown = session.pane_flag("#{pane_title}");
        if shown == title {
            return;
        }
        if started.elapsed() > WAIT {
            panic!("the title is {shown:?}, not {title:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What agentty wrote to the terminal since `pipe-pane` started copying it to `file`.
fn written(file: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(file).unwrap_or_default()).into_owned()
}

/// The title names agentty, the agent and its state; a turn that ends while the terminal is
/// not focused rings the bell and posts the desktop notification the terminal shows (OSC 9 for
/// iTerm2), and none while it is focused; the terminal's own title comes back on exit.
#[test]
fn the_title_follows_the_turn_and_an_unfocused_terminal_is_called_back() {
    let Some(session) = Session::start_with_env(
        &[
            ("TERM_PROGRAM", "iTerm.app"),
            ("AGENTTY_DEMO_TIME_SCALE", "0.3"),
        ],
        &["--provider", "demo"],
    ) else {
        return;
    };
    session.wait_until_ready();
    wait_for_title(&session, "agentty · demo · idle");
    let raw = session.state_dir.path().join("written");
    session.tmux(&[
        "pipe-pane",
        "-o",
        "-t",
        session.target,
        &format!("cat >> {}", shell_quote(raw.to_str().unwrap())),
    ]);
    // The terminal reports that it lost the focus (CSI O).
    session.tmux(&["send-keys", "-t", session.target, "-H", "1b", "5b", "4f"]);
    session.prompt("be slow please");
    wait_for_title(&session, "agentty · demo · working");
    let screen = session.wait_for_text("Enter sends");
    eprintln!("after the turn:\n{screen}");
    wait_for_title(&session, "agentty · demo · idle");
    let notification = "\x1b]9;demo finished its turn\x07\x07";
    let started = Instant::now();
    while !written(&raw).contains(notification) {
        assert!(
            started.elapsed() < WAIT,
            "no notification was written: {:?}",
            written(&raw)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Focused again (CSI I): the next turn ends without a call back.
    session.tmux(&["send-keys", "-t", session.target, "-H", "1b", "5b", "49"]);
    session.prompt("hi");
    session.wait_for_text("Prompt 2 in session");
    wait_for_title(&session, "agentty · demo · idle");
    assert_eq!(
        written(&raw).matches("\x1b]9;").count(),
        1,
        "{:?}",
        written(&raw)
    );
    session.keys(&["C-c"]);
    session.keys(&["C-c"]);
    session.assert_exited_restored("0");
    let title = session.pane_flag("#{pane_title}");
    assert!(!title.contains("agentty"), "the title was left: {title:?}");
}

/// The recording of [`hostile_escape_sequences_neither_retitle_nor_clear_the_terminal`] sees
/// sequences that do reach the terminal: a program that prints [`HOSTILE`] raw leaks them all.
#[test]
fn the_terminal_recording_catches_sequences_a_program_prints_raw() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw.txt");
    std::fs::write(&raw, HOSTILE).unwrap();
    let recording = dir.path().join("terminal.bytes");
    // Prints only once told to (Enter), after the recorder is attached.
    let pane = Pane::spawn(
        socket_name("agentty-raw"),
        80,
        24,
        &format!(
            "read go; cat {}; echo; echo raw-done; sleep 600",
            shell_quote(raw.to_str().unwrap())
        ),
    );
    pane.record_output(&recording);
    pane.keys(&["Enter"]);
    let written = tmux::recorded_until(&recording, b"raw-done");
    pane.kill_server();
    assert_eq!(
        leaked_sequences(&written),
        [
            "BEL",
            "OSC (title, clipboard)",
            "clear screen after the agent's A",
            "bracketed-paste end",
            "cursor move before the agent's Z",
        ],
        "{}",
        String::from_utf8_lossy(&written).escape_debug()
    );
}
