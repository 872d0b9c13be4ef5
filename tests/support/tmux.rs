//! A tmux pane for the end-to-end tests: the real `agentty` binary in a real terminal, driven by
//! keys and read back as text. Each test has its own tmux server (`-L <socket>`), so tests run
//! in parallel. Without tmux the tests fail (CI installs it); `AGENTTY_SKIP_TMUX_TESTS=1` skips
//! them on purpose, with a note.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Debug builds on a busy machine: generous, since a timeout only makes a failing test slower.
pub const WAIT: Duration = Duration::from_secs(30);

/// How far apart two captures of one finished frame are taken.
const SETTLE: Duration = Duration::from_millis(25);

/// How many more captures a wait takes, at most, for a frame to settle.
const SETTLE_TRIES: usize = 3;

/// Whether two captures show the same frame, digits aside.
fn same_but_digits(one: &str, other: &str) -> bool {
    let masked = |screen: &str| -> String {
        screen
            .chars()
            .map(|c| if c.is_ascii_digit() { '0' } else { c })
            .collect()
    };
    masked(one) == masked(other)
}

static NEXT_SERVER: AtomicUsize = AtomicUsize::new(0);

/// Whether to run: tmux must be installed, unless the skip was asked for explicitly.
pub fn tmux_available() -> bool {
    if std::env::var_os("AGENTTY_SKIP_TMUX_TESTS").is_some_and(|value| value == "1") {
        eprintln!("note: AGENTTY_SKIP_TMUX_TESTS=1; skipping the end-to-end test");
        return false;
    }
    let available = Command::new("tmux")
        .arg("-V")
        .output()
        .map(|output| output.status.success())
        .unwrap_or(false);
    assert!(
        available,
        "tmux is not installed: the end-to-end tests need it (apt-get install tmux), or set \
         AGENTTY_SKIP_TMUX_TESTS=1 to skip them on purpose"
    );
    available
}

/// A tmux server name of this process's own: `<prefix>-<pid>-<n>`.
pub fn socket_name(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        NEXT_SERVER.fetch_add(1, Ordering::SeqCst)
    )
}

/// `sh -c` arguments running `command_line`, then printing what a test reads once it ended (see
/// [`Pane::assert_exited_restored`]): its exit status and the terminal's modes; the pane stays.
pub fn reporting_exit(command_line: &str) -> [String; 3] {
    [
        "sh".to_owned(),
        "-c".to_owned(),
        format!(
            "{command_line}; echo \"agentty exited $?\"; \
             echo \"TTY: $(stty -a | tr ' ;' '\\n\\n' | grep -E '^-?(icanon|echo|isig)$' | tr '\\n' ' ')\"; \
             sleep 600"
        ),
    ]
}

pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The pane `target` of the tmux server `socket`.
pub struct Pane {
    pub socket: String,
    pub target: &'static str,
}

impl Pane {
    /// A detached tmux session of its own (server `socket`) running `command` through the
    /// shell, `width` x `height`.
    pub fn spawn(socket: String, width: u16, height: u16, command: &str) -> Pane {
        Pane::open(socket, None, (width, height), &[command])
    }

    /// A detached tmux session on a server of its own (named after `prefix`), without the
    /// user's tmux config, running `argv` in `cwd` (the test's own when `None`) at `size`.
    pub fn start<S: AsRef<std::ffi::OsStr>>(
        prefix: &str,
        cwd: Option<&Path>,
        size: (u16, u16),
        argv: &[S],
    ) -> Pane {
        Pane::open(socket_name(prefix), cwd, size, argv)
    }

    fn open<S: AsRef<std::ffi::OsStr>>(
        socket: String,
        cwd: Option<&Path>,
        (width, height): (u16, u16),
        argv: &[S],
    ) -> Pane {
        let mut tmux = Command::new("tmux");
        if let Some(cwd) = cwd {
            tmux.current_dir(cwd);
        }
        let started = tmux
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "t",
            ])
            .args(["-x", &width.to_string(), "-y", &height.to_string()])
            .args(argv)
            .status()
            .expect("tmux is installed (or set AGENTTY_SKIP_TMUX_TESTS=1)");
        assert!(started.success(), "tmux new-session failed");
        Pane {
            socket,
            target: "t",
        }
    }

    pub fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("run tmux");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// One capture of the pane, as it is at this instant: possibly a frame the terminal is still
    /// drawing. Tests read [`Pane::screen`] or [`Pane::wait_for`] instead.
    fn capture(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", self.target])
    }

    /// The screen once the frame on it is finished (see [`Pane::wait_for`]).
    pub fn screen(&self) -> String {
        self.wait_for("a finished frame", |_| true)
    }

    /// A tmux format for the pane, e.g. `#{alternate_on}`.
    pub fn pane_flag(&self, format: &str) -> String {
        self.tmux(&["display-message", "-p", "-t", self.target, format])
            .trim()
            .to_owned()
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", self.target];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", self.target, "-l", text]);
    }

    /// Types `text` and presses Enter.
    pub fn prompt(&self, text: &str) {
        self.type_text(text);
        self.keys(&["Enter"]);
    }

    /// The first finished frame that satisfies `predicate`; fails the test with the screen after
    /// [`WAIT`].
    ///
    /// A capture can catch the terminal halfway through drawing a frame (on a busy machine an
    /// overlay's lower rows were seen missing), so a capture that satisfies the predicate is
    /// followed by others, [`SETTLE`] apart, until one is the same as the one before but for
    /// its digits (the status bar's clocks tick while a turn runs): that frame was finished. A
    /// screen that keeps changing (a stream) is taken after [`SETTLE_TRIES`] captures, and one
    /// that no longer satisfies the predicate (a passing state) as it last did, so a wait costs
    /// a passing state at most a tenth of a second.
    pub fn wait_for(&self, what: &str, predicate: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let screen = self.capture();
            if predicate(&screen) {
                return self.finished_frame(screen, &predicate);
            }
            if started.elapsed() > WAIT {
                panic!("timed out waiting for {what}; the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The frame to return for `screen`, which satisfies `predicate` (see [`Pane::wait_for`]).
    fn finished_frame(&self, mut screen: String, predicate: &impl Fn(&str) -> bool) -> String {
        for _ in 0..SETTLE_TRIES {
            std::thread::sleep(SETTLE);
            let again = self.capture();
            if !predicate(&again) {
                return screen;
            }
            let finished = same_but_digits(&screen, &again);
            screen = again;
            if finished {
                break;
            }
        }
        screen
    }

    pub fn wait_for_text(&self, needle: &str) -> String {
        self.wait_for(&format!("{needle:?}"), |screen| screen.contains(needle))
    }

    /// After a command started with [`reporting_exit`] ended: it exited with `status` and left
    /// the terminal as it found it (cooked mode, main screen, no mouse reporting, the cursor
    /// shown, nothing of the chat on the screen, no stray mouse report).
    pub fn assert_exited_restored(&self, status: &str) {
        let screen = self.wait_for_text("TTY: ");
        assert!(
            screen.contains(&format!("agentty exited {status}")),
            "{screen}"
        );
        let modes: Vec<&str> = screen
            .lines()
            .find_map(|line| line.strip_prefix("TTY: "))
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        for mode in ["icanon", "echo", "isig"] {
            assert!(
                modes.contains(&mode),
                "raw mode left on ({modes:?}):\n{screen}"
            );
        }
        assert_eq!(
            self.pane_flag("#{alternate_on}"),
            "0",
            "still on the alternate screen"
        );
        assert_eq!(
            self.pane_flag("#{mouse_any_flag}"),
            "0",
            "mouse reporting left on"
        );
        assert_eq!(self.pane_flag("#{cursor_flag}"), "1", "cursor left hidden");
        assert!(!screen.contains("/ commands · @ files"), "{screen}");
        assert!(!screen.contains("[<"), "a mouse report leaked:\n{screen}");
    }

    /// Ends the tmux server (and with it the pane).
    pub fn kill_server(&self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// `impl Deref<Target = Pane>` for a session type that has its pane in a field `pane`.
macro_rules! deref_to_pane {
    ($session:ty) => {
        impl std::ops::Deref for $session {
            type Target = tmux::Pane;

            fn deref(&self) -> &tmux::Pane {
                &self.pane
            }
        }
    };
}
pub(crate) use deref_to_pane;

/// (pid, command line) of live processes whose environment holds `AGENTTY_STATE_DIR=dir`: the
/// agentty under test and everything it started (only its command line sets the variable).
pub fn processes_with_env(dir: &Path) -> Vec<(i32, String)> {
    processes_with_variable(&format!("AGENTTY_STATE_DIR={}", dir.display()))
}

/// (pid, command line) of live processes whose environment holds `marker` (`NAME=value`).
pub fn processes_with_variable(marker: &str) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            continue;
        };
        let path: PathBuf = entry.path();
        let Ok(environ) = std::fs::read(path.join("environ")) else {
            continue;
        };
        if !environ
            .split(|byte| *byte == 0)
            .any(|variable| variable == marker.as_bytes())
        {
            continue;
        }
        let stat = std::fs::read_to_string(path.join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        if zombie {
            continue;
        }
        let command = std::fs::read(path.join("cmdline"))
            .map(|bytes| {
                String::from_utf8_lossy(&bytes)
                    .split('\0')
                    .filter(|part| !part.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        found.push((pid, command));
    }
    found
}

impl Pane {
    /// Copies every byte the program in the pane writes to its terminal into `file`, from now
    /// on (`tmux pipe-pane`): what the terminal is told to do, escape sequences and BELs
    /// included, which a capture (the resulting screen) never shows.
    pub fn record_output(&self, file: &Path) {
        let command = format!(
            "cat >> {}",
            shell_quote(file.to_str().expect("a UTF-8 path"))
        );
        self.tmux(&["pipe-pane", "-o", "-t", self.target, &command]);
    }
}

/// The bytes recorded in `file` (by [`Pane::record_output`]) once they hold `needle`: the
/// recorder runs behind the pane.
pub fn recorded_until(file: &Path, needle: &[u8]) -> Vec<u8> {
    let started = Instant::now();
    loop {
        let written = std::fs::read(file).unwrap_or_default();
        if written.windows(needle.len()).any(|window| window == needle) {
            return written;
        }
        if started.elapsed() > WAIT {
            panic!(
                "timed out waiting for {:?} in the recorded output:\n{}",
                String::from_utf8_lossy(needle),
                String::from_utf8_lossy(&written).escape_debug()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
