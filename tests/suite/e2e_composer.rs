//! End-to-end (issue 17): the real `agentty` binary in tmux, driven by keys: an `@` mention
//! completed with Tab reaches the agent as a path, prompt history survives a restart, Esc puts
//! the queue back into the editor, and Ctrl+Z / `fg` restores the terminal and suspends the agent
//! with agentty. Each test has its own tmux server, state dir and working directory. Without
//! tmux these tests fail; `AGENTTY_SKIP_TMUX_TESTS=1` skips them on purpose.

use crate::support::tmux;

use std::path::Path;
use std::time::{Duration, Instant};

use tmux::{processes_with_env, tmux_available, Pane, WAIT};

const READY: &str = "/ commands · @ files";

struct Session {
    pane: Pane,
    state_dir: tempfile::TempDir,
    work_dir: tempfile::TempDir,
}

impl Session {
    /// A tmux server whose pane runs an interactive shell in a fresh working directory; `None`
    /// when tmux is missing.
    fn new() -> Option<Session> {
        if !tmux_available() {
            return None;
        }
        let work_dir = tempfile::tempdir().unwrap();
        let pane = Pane::start(
            "agentty-e2e17",
            Some(work_dir.path()),
            (100, 30),
            &["env", "PS1=$ ", "bash", "--norc", "--noprofile", "-i"],
        );
        let session = Session {
            pane,
            state_dir: tempfile::tempdir().unwrap(),
            work_dir,
        };
        Some(session)
    }

    /// Runs agentty in the pane's shell (on the demo agent unless `args` says otherwise).
    fn launch(&self, args: &str) {
        // `--config` must name a file that exists; an empty one is the defaults.
        let config = self.state_dir.path().join("config.toml");
        if !config.exists() {
            std::fs::write(&config, "").expect("write the empty config");
        }
        let state = self.state_dir.path().display();
        self.type_text(&format!(
            "AGENTTY_STATE_DIR={state} {} --config {state}/config.toml --provider demo {args}; \
             echo \"agentty exited $?\"",
            env!("CARGO_BIN_EXE_agentty")
        ));
        self.keys(&["Enter"]);
        self.wait_for_text(READY);
    }

    /// Launches agentty and starts a slow turn on the demo agent.
    fn launch_with_a_slow_turn(&self) {
        self.launch("");
        self.prompt("slow please");
        self.wait_for_text("Esc stops the turn");
    }

    /// Ctrl+C until agentty has left: a draft is cleared first, then two presses quit (a
    /// press every 300 ms, so that two in a row count as "twice" however the first was taken).
    fn quit(&self) {
        // (After Ctrl+Z and `fg` the shell has already printed the stopped job's status.)
        let started = Instant::now();
        while self.pane_flag("#{alternate_on}") != "0" {
            assert!(
                started.elapsed() < WAIT,
                "agentty did not quit:\n{}",
                self.screen()
            );
            self.keys(&["C-c"]);
            std::thread::sleep(Duration::from_millis(300));
        }
        let started = Instant::now();
        while !self.agent_pids().is_empty() {
            assert!(started.elapsed() < WAIT, "agents left behind");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The demo agent processes this test started (they inherit the state dir variable).
    fn agent_pids(&self) -> Vec<i32> {
        processes_with_env(self.state_dir.path())
            .into_iter()
            .filter(|(_, command)| command.contains("demo-agent"))
            .map(|(pid, _)| pid)
            .collect()
    }
}

tmux::deref_to_pane!(Session);

impl Drop for Session {
    fn drop(&mut self) {
        // Continue anything left stopped, so that the kill below is not held up.
        for pid in self.agent_pids() {
            // SAFETY: signalling processes this test started.
            unsafe {
                libc::kill(pid, libc::SIGCONT);
                libc::kill(pid, libc::SIGKILL);
            }
        }
        self.pane.kill_server();
    }
}

/// The process state letter from /proc/PID/stat (`T` = stopped).
fn process_state(pid: i32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next())
        .unwrap_or('?')
}

fn write(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn an_at_mention_completed_with_tab_reaches_the_agent_as_a_path() {
    let Some(session) = Session::new() else {
        return;
    };
    let work = session.work_dir.path();
    write(work, "notes/todo.md", "- ship it\n");
    write(work, "src/main.rs", "fn main() {}\n");
    write(work, ".gitignore", "build/\n");
    write(work, "build/todo-output.md", "ignored\n");
    session.launch("");
    session.type_text("summarise @todo");
    let popup = session.wait_for_text("notes/todo.md");
    assert!(
        !popup.contains("build/"),
        "ignored files stay out:\n{popup}"
    );
    session.keys(&["Tab"]);
    session.wait_for_text("summarise @notes/todo.md");
    // Tab adds no space (a line range may follow the path).
    session.prompt(" please");
    // The demo agent quotes the prompt it received.
    let screen = session.wait_for_text("│ summarise notes/todo.md please");
    assert!(!screen.contains("@notes"), "{screen}");
    session.quit();
}

#[test]
fn prompt_history_survives_a_restart() {
    let Some(session) = Session::new() else {
        return;
    };
    session.launch("");
    session.prompt("remember me across launches");
    session.wait_for_text("│ remember me across launches");
    session.wait_for_text("│ idle");
    session.quit();
    session.launch("");
    session.keys(&["Up"]);
    let screen = session.wait_for_text("remember me across launches");
    assert!(
        screen.contains(READY) || screen.contains("Enter sends"),
        "{screen}"
    );
    // Ctrl+R finds it too.
    session.keys(&["C-u", "C-r"]);
    session.type_text("across");
    session.wait_for_text("search: across");
    session.keys(&["Enter"]);
    session.wait_for("the search result in the editor", |screen| {
        !screen.contains("search: across") && screen.contains("remember me across")
    });
    session.quit();
}

#[test]
fn esc_puts_the_queue_back_into_the_editor() {
    let Some(session) = Session::new() else {
        return;
    };
    session.launch_with_a_slow_turn();
    session.prompt("the queued follow-up");
    session.wait_for_text("queued 1: the queued follow-up");
    session.keys(&["Escape"]);
    let screen = session.wait_for_text("1 queued prompt back in the editor");
    assert!(!screen.contains("queued 1:"), "{screen}");
    // It sits in the editor, not sent: only the first prompt reached the agent.
    assert!(!screen.contains("› the queued follow-up"), "{screen}");
    let rows: Vec<&str> = screen.lines().collect();
    let editor = rows[rows.len() - 2];
    assert!(editor.contains("the queued follow-up"), "{screen}");
    session.quit();
}

#[test]
fn ctrl_z_restores_the_terminal_and_suspends_the_agent_until_fg() {
    let Some(session) = Session::new() else {
        return;
    };
    session.launch_with_a_slow_turn();
    let agents = session.agent_pids();
    assert!(!agents.is_empty(), "the demo agent runs");
    assert_eq!(session.pane_flag("#{alternate_on}"), "1");
    session.keys(&["C-z"]);
    let screen = session.wait_for_text("Stopped");
    assert_eq!(
        session.pane_flag("#{alternate_on}"),
        "0",
        "left the alternate screen:\n{screen}"
    );
    assert_eq!(
        session.pane_flag("#{cursor_flag}"),
        "1",
        "the cursor is shown"
    );
    for pid in &agents {
        assert_eq!(process_state(*pid), 'T', "the agent {pid} is suspended too");
    }
    // The shell works normally: a cooked-mode command echoes.
    session.prompt("echo shell-is-$((20+22))");
    session.wait_for_text("shell-is-42");
    session.prompt("fg");
    session.wait_for_text("Esc stops the turn");
    assert_eq!(
        session.pane_flag("#{alternate_on}"),
        "1",
        "back in full screen"
    );
    for pid in &agents {
        let started = Instant::now();
        while process_state(*pid) == 'T' && started.elapsed() < WAIT {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_ne!(process_state(*pid), 'T', "the agent {pid} was continued");
    }
    // Still responsive: Esc stops the turn.
    session.keys(&["Escape"]);
    session.wait_for_text("Stopped");
    session.wait_for_text("│ idle");
    session.quit();
}

#[test]
fn sigtstp_from_outside_suspends_like_ctrl_z() {
    let Some(session) = Session::new() else {
        return;
    };
    session.launch("");
    let agentty = processes_with_env(session.state_dir.path())
        .into_iter()
        .find(|(_, command)| command.starts_with(env!("CARGO_BIN_EXE_agentty")))
        .map(|(pid, _)| pid)
        .expect("agentty runs");
    // SAFETY: signalling the process this test started.
    unsafe { libc::kill(agentty, libc::SIGTSTP) };
    session.wait_for_text("Stopped");
    assert_eq!(session.pane_flag("#{alternate_on}"), "0");
    session.prompt("fg");
    session.wait_for_text(READY);
    assert_eq!(session.pane_flag("#{alternate_on}"), "1");
    session.quit();
}
