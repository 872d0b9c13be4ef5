//! The real `agentty` chat in a tmux pane, on a state dir that several launches (one after
//! another, or two at once) share. Every process started under the state dir carries
//! `AGENTTY_STATE_DIR=<dir>` in its environment, which is how leftovers are found and killed
//! when the state dir is dropped. The pane prints agentty's exit status and the terminal modes
//! after it ends, so a test can see that the terminal was restored.

use std::path::{Path, PathBuf};

use super::tmux::{processes_with_env, reporting_exit, shell_quote, tmux_available, Pane};

/// A state dir (with an empty config of its own) whose processes die with it.
pub struct StateDir {
    pub dir: tempfile::TempDir,
}

impl StateDir {
    pub fn new() -> StateDir {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("config.toml"), "").expect("write the test's config");
        StateDir { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn sessions(&self) -> PathBuf {
        self.path().join("sessions")
    }

    /// The session logs (`*.jsonl`) of the state dir.
    pub fn logs(&self) -> Vec<PathBuf> {
        let mut logs: Vec<PathBuf> = std::fs::read_dir(self.sessions())
            .map(|entries| {
                entries
                    .flatten()
                    .map(|entry| entry.path())
                    .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
                    .collect()
            })
            .unwrap_or_default();
        logs.sort();
        logs
    }

    /// SIGKILLs every process started under this state dir.
    pub fn kill_all(&self) {
        for (pid, _) in processes_with_env(self.path()) {
            // SAFETY: signalling a process the test started.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for StateDir {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// One `agentty` in a pane of its own tmux server.
pub struct ChatPane {
    pub pane: Pane,
}

impl ChatPane {
    /// Starts `<prefix> env AGENTTY_STATE_DIR=<state> agentty --config <state>/config.toml ARGS`
    /// in `cwd` at `width` x `height` (`prefix` is shell text: `ulimit -f 64;` runs first, a
    /// wrapper such as `unshare -m sh -c '...; exec "$@"' sh` runs agentty itself); `None` when
    /// tmux is missing and its tests are skipped on purpose.
    pub fn launch(
        state: &StateDir,
        cwd: &Path,
        prefix: &str,
        args: &[&str],
        (width, height): (u16, u16),
    ) -> Option<ChatPane> {
        if !tmux_available() {
            return None;
        }
        let mut command_line = format!(
            "{prefix} env AGENTTY_STATE_DIR={} {} --config {}",
            shell_quote(state.path().to_str().unwrap()),
            shell_quote(env!("CARGO_BIN_EXE_agentty")),
            shell_quote(state.path().join("config.toml").to_str().unwrap()),
        );
        for arg in args {
            command_line.push(' ');
            command_line.push_str(&shell_quote(arg));
        }
        let pane = Pane::start(
            "agentty-crash",
            Some(cwd),
            (width, height),
            &reporting_exit(&command_line),
        );
        Some(ChatPane { pane })
    }

    pub fn wait_until_ready(&self) {
        self.pane.wait_for_text("/ commands · @ files");
    }

    /// Quits a chat whose turn is over and waits for agentty to exit.
    pub fn quit(&self) {
        self.pane.keys(&["C-c"]);
        self.pane.keys(&["C-c"]);
        self.pane.wait_for_text("agentty exited");
    }
}

impl std::ops::Deref for ChatPane {
    type Target = Pane;

    fn deref(&self) -> &Pane {
        &self.pane
    }
}

impl Drop for ChatPane {
    fn drop(&mut self) {
        self.pane.kill_server();
    }
}
