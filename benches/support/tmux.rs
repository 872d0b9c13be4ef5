//! tmux for the benches that drive the release binary in a real terminal: a server of the
//! bench's own (`-L <socket>`) with one session, `bench`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// Whether to measure: only for `cargo bench` (`cargo test --all-targets` runs bench binaries
/// without `--bench`), and only with tmux installed.
pub fn measuring_in_tmux() -> bool {
    if !std::env::args().any(|arg| arg == "--bench") {
        return false;
    }
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("tmux is not installed; nothing measured");
        return false;
    }
    true
}

pub struct Tmux {
    pub socket: &'static str,
}

impl Tmux {
    pub fn run(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .arg("-L")
            .arg(self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Ends the server and waits (up to 2 s) until no server answers on its socket: a
    /// `new-session` sent to a server still exiting fails with "server exited unexpectedly",
    /// and the bench's next client then never comes up. (The socket file itself may stay.)
    pub fn kill_server(&self) {
        let _ = Command::new("tmux")
            .args(["-L", self.socket, "kill-server"])
            .output();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while std::time::Instant::now() < deadline {
            let gone = Command::new("tmux")
                .args(["-L", self.socket, "list-sessions"])
                .output()
                .is_ok_and(|output| {
                    let said = String::from_utf8_lossy(&output.stderr);
                    said.contains("no server running") || said.contains("error connecting")
                });
            if gone {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "bench"])
    }

    /// When `needle` showed up on the screen, polled every `poll`; `None` after `limit`.
    pub fn wait_for_screen(
        &self,
        needle: &str,
        limit: Duration,
        poll: Duration,
    ) -> Option<Instant> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.screen().contains(needle) {
                return Some(Instant::now());
            }
            std::thread::sleep(poll);
        }
        None
    }

    /// A fresh server whose 160x50 pane runs `agentty --provider demo ARGS` on the state dir
    /// `state` (in the directory `cwd`, if given): when the pane was spawned, and its pid.
    pub fn start_agentty(&self, state: &Path, args: &str, cwd: Option<&str>) -> (Instant, i32) {
        let command = format!(
            "AGENTTY_STATE_DIR={} AGENTTY_DEMO_STATE_DIR={} exec {} --provider demo {args}",
            state.display(),
            state.join("demo").display(),
            env!("CARGO_BIN_EXE_agentty")
        );
        self.start_pane((160, 50), cwd, &command)
    }

    /// A fresh server whose one pane (`width` x `height`, in `cwd` if given) runs the shell
    /// command `command`: when the pane was spawned, and its pid.
    pub fn start_pane(
        &self,
        (width, height): (u16, u16),
        cwd: Option<&str>,
        command: &str,
    ) -> (Instant, i32) {
        self.kill_server();
        let (width, height) = (width.to_string(), height.to_string());
        let spawned = Instant::now();
        let mut new_session = vec![
            "new-session",
            "-d",
            "-s",
            "bench",
            "-x",
            &width,
            "-y",
            &height,
        ];
        if let Some(cwd) = cwd {
            new_session.extend(["-c", cwd]);
        }
        new_session.push(command);
        self.run(&new_session);
        let pid = self
            .run(&["display-message", "-p", "-t", "bench", "#{pane_pid}"])
            .trim()
            .parse()
            .unwrap();
        (spawned, pid)
    }
}

/// A tmux control-mode client attached to `bench`: commands in, notifications out.
pub struct Control {
    child: Child,
    stdin: ChildStdin,
}

impl Control {
    /// Attaches at `size` (`160x50`); `on_line` sees each line the client prints, on a thread of
    /// its own, until it returns `false`.
    pub fn attach(
        tmux: &Tmux,
        size: &str,
        mut on_line: impl FnMut(&str) -> bool + Send + 'static,
    ) -> Control {
        let mut child = Command::new("tmux")
            .args(["-L", tmux.socket, "-C", "attach", "-t", "bench"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "refresh-client -C {size}").unwrap();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if !on_line(&line) {
                    break;
                }
            }
        });
        Control { child, stdin }
    }

    pub fn send(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The peak resident set (VmHWM) of `pid`, in KiB.
pub fn peak_rss_kib(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .and_then(|line| line.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// agentty's own "first frame drawn" figure (ms since `main`) from its logs under `state`.
pub fn first_frame_ms(state: &Path) -> Option<f64> {
    let logs = std::fs::read_dir(state.join("logs")).ok()?;
    let mut value = None;
    for entry in logs.flatten() {
        for line in std::fs::read_to_string(entry.path())
            .unwrap_or_default()
            .lines()
        {
            if let Some(rest) = line.split("since_launch_ms=").nth(1) {
                value = rest.split_whitespace().next()?.parse().ok();
            }
        }
    }
    value
}
