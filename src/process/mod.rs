//! The OS boundary: spawn an agent CLI, read its output, stop it in three stages, and make sure
//! nothing it started outlives it. Knows nothing about JSON.
//!
//! The supervisor that owns the child runs on its own task, so a stop, once asked for, runs to
//! completion even if whoever asked has gone away; and if even the runtime goes away, the
//! supervisor's drop guard kills the tree synchronously.

mod control;
pub(crate) mod job_control;
pub(crate) mod lines;
pub(crate) mod orphans;
mod proc_table;
mod redact;
pub(crate) mod stop;
pub(crate) mod timings;
pub mod tree;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncReadExt;
use tokio::process::{ChildStderr, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};

use crate::stream::StopStage;
pub use control::{StopControl, StopProgress};
pub(crate) use lines::LineReader;
pub(crate) use lines::LineRef;
pub use lines::{Line, DEFAULT_MAX_LINE};
pub(crate) use tree::TreeIdentity;

/// How much of the agent's stderr is kept for diagnostics.
pub const STDERR_TAIL_BYTES: usize = 64 * 1024;
/// Cap on one stderr line handed to the mapper.
const STDERR_MAX_LINE: usize = 16 * 1024;

/// What the agent's stdin is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum StdinMode {
    /// `/dev/null`: the one-shot JSON modes read stdin to EOF before they start.
    #[default]
    Null,
    /// A pipe kept open (for agents that take input, and for the Ctrl+C byte on stop).
    Pipe,
}

/// How to start an agent: an argument vector, never a shell command line.
#[derive(Debug, Clone, Default)]
pub struct SpawnSpec {
    pub(crate) program: OsString,
    pub(crate) args: Vec<OsString>,
    /// Added to (or overriding) the inherited environment.
    pub(crate) env: Vec<(OsString, OsString)>,
    pub cwd: Option<PathBuf>,
    pub(crate) stdin: StdinMode,
    /// Text in the arguments that logs must not show (the user's prompt): the display form
    /// gives its length and a short hash instead.
    pub(crate) unlogged: Option<String>,
}

impl SpawnSpec {
    pub fn new(program: impl Into<OsString>) -> Self {
        Self {
            program: program.into(),
            ..Self::default()
        }
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Keeps `text` (the user's prompt, wherever it stands in the arguments) out of the display
    /// form.
    pub(crate) fn unlogged(mut self, text: &str) -> Self {
        self.unlogged = (!text.is_empty()).then(|| text.to_owned());
        self
    }

    /// The command line for logs and error messages (not for execution), with secrets and the
    /// prompt replaced (`redact`), since logs are files users attach to bug reports.
    pub(crate) fn display(&self) -> String {
        let args = self.args.iter().map(|arg| {
            let arg = arg.to_string_lossy();
            match &self.unlogged {
                Some(text) if arg.contains(text.as_str()) => std::borrow::Cow::Owned(
                    arg.replace(text.as_str(), &redact::prompt_summary(text)),
                ),
                _ => arg,
            }
        });
        redact::command_line(&self.program.to_string_lossy(), args)
    }
}

/// How the agent process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExitReport {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Set when the three-stage stop ended the agent: which stage, and how long it took.
    pub stopped: Option<(StopStage, u64)>,
    /// Processes of the tree still alive after the final kill (should always be 0).
    pub survivors: usize,
}

/// The bounded tail of the agent's stderr.
#[derive(Debug, Default)]
pub(crate) struct StderrTail {
    bytes: Vec<u8>,
    dropped: usize,
}

impl StderrTail {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > STDERR_TAIL_BYTES {
            let excess = self.bytes.len() - STDERR_TAIL_BYTES;
            self.bytes.drain(..excess);
            self.dropped += excess;
        }
    }

    /// Forgets what was kept (a long-lived agent's next turn reports its own stderr only).
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.dropped = 0;
    }

    pub(crate) fn text(&self) -> String {
        let text = String::from_utf8_lossy(&self.bytes);
        if self.dropped > 0 {
            format!("[… {} earlier bytes not kept]\n{text}", self.dropped)
        } else {
            text.into_owned()
        }
    }
}

/// A started agent.
pub(crate) struct AgentProcess {
    pub(crate) pid: u32,
    pub(crate) stdout: LineReader<ChildStdout>,
    /// stderr lines (bounded), for mappers that read structured hints from stderr.
    pub(crate) stderr_lines: mpsc::Receiver<String>,
    pub(crate) stderr_tail: Arc<Mutex<StderrTail>>,
    /// Resolves once the agent has exited and its leftover tree has been killed.
    pub(crate) exit: oneshot::Receiver<ExitReport>,
    pub(crate) tree: TreeIdentity,
}

/// Why an agent could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpawnError {
    #[error("cannot start `{program}`: {source}")]
    Io {
        program: String,
        #[source]
        source: std::io::Error,
    },
}

/// Starts the agent in its own process group, with the tree marker in its environment, and
/// hands it to a supervisor task that performs `stop`'s requests.
pub(crate) fn spawn(spec: &SpawnSpec, stop: StopControl) -> Result<AgentProcess, SpawnError> {
    spawn_inner(spec, stop, StdinOwner::Supervisor).map(|(agent, _)| agent)
}

/// Who holds the agent's stdin pipe.
#[derive(Clone, Copy, PartialEq, Eq)]
enum StdinOwner {
    /// The supervisor, for the Ctrl+C byte of the stop.
    Supervisor,
    /// The caller, who writes commands on it (a long-lived, two-way agent).
    Caller,
}

/// Like [`spawn`], with stdin a pipe handed to the caller (who writes commands on it): a
/// long-lived agent that takes commands. The stop's interrupt stage then sends only SIGINT;
/// closing the returned stdin is the caller's way to ask the agent to exit.
pub(crate) fn spawn_with_stdin(
    spec: &SpawnSpec,
    stop: StopControl,
) -> Result<(AgentProcess, tokio::process::ChildStdin), SpawnError> {
    let mut spec = spec.clone();
    spec.stdin = StdinMode::Pipe;
    let (agent, stdin) = spawn_inner(&spec, stop, StdinOwner::Caller)?;
    Ok((agent, stdin.expect("stdin was piped")))
}

fn spawn_inner(
    spec: &SpawnSpec,
    stop: StopControl,
    stdin_owner: StdinOwner,
) -> Result<(AgentProcess, Option<tokio::process::ChildStdin>), SpawnError> {
    let marker = uuid::Uuid::new_v4().simple().to_string();
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .envs(spec.env.iter().map(|(key, value)| (key, value)))
        .env(proc_table::TREE_MARKER_VAR, &marker)
        .stdin(match spec.stdin {
            StdinMode::Null => Stdio::null(),
            StdinMode::Pipe => Stdio::piped(),
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    set_child_signals(&mut command);

    let mut child = spawn_when_not_busy(&mut command).map_err(|source| SpawnError::Io {
        program: spec.program.to_string_lossy().into_owned(),
        source,
    })?;
    let pid = child.id().unwrap_or_default();
    let tree = TreeIdentity {
        root: pid as i32,
        marker,
    };
    tree::register(&tree);

    let stdout = child.stdout.take().expect("stdout was piped");
    widen_pipe(&stdout);
    let stderr = child.stderr.take().expect("stderr was piped");
    let stdin = child.stdin.take();
    let stderr_tail = Arc::new(Mutex::new(StderrTail::default()));
    let (stderr_tx, stderr_lines) = mpsc::channel(256);
    tokio::spawn(drain_stderr(stderr, stderr_tail.clone(), stderr_tx));

    let (supervisor_stdin, caller_stdin) = match stdin_owner {
        StdinOwner::Supervisor => (stdin, None),
        StdinOwner::Caller => (None, stdin),
    };
    let (exit_tx, exit) = oneshot::channel();
    tokio::spawn(stop::supervise(
        child,
        supervisor_stdin,
        tree.clone(),
        stop,
        exit_tx,
    ));

    let agent = AgentProcess {
        pid,
        stdout: LineReader::new(stdout, DEFAULT_MAX_LINE),
        stderr_lines,
        stderr_tail,
        exit,
        tree,
    };
    Ok((agent, caller_stdin))
}

/// The agent's stdout pipe holds 1 MiB instead of 64 KiB: an agent that prints lines of
/// hundreds of KiB then writes ahead while a line is mapped, and each line is read in a few
/// wake-ups instead of one per 64 KiB. Kernel memory, bounded; failure is harmless.
fn widen_pipe(stdout: &ChildStdout) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        const PIPE_BYTES: libc::c_int = 1024 * 1024;
        // SAFETY: fcntl on a descriptor we own; F_SETPIPE_SZ only resizes the pipe's buffer.
        unsafe {
            libc::fcntl(stdout.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_BYTES);
        }
    }
}

/// On Linux the agent gets SIGKILL if agentty dies without cleaning up (e.g. SIGKILL). It also
/// gets the default action back for SIGXFSZ, which agentty ignores for itself (see `main`), and
/// for SIGINT, which agentty may have been started with ignored (`agentty run … &` in a script:
/// a shell without job control starts background commands so): an ignored signal stays ignored
/// across `exec`, and the stop's interrupt stage would then never reach the agent.
fn set_child_signals(command: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: only async-signal-safe calls (signal, prctl, getppid, _exit) between fork
        // and exec.
        unsafe {
            command.pre_exec(move || {
                libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                // The parent may have died before prctl took effect.
                if libc::getppid() != parent {
                    libc::_exit(137);
                }
                Ok(())
            });
        }
    }
}

/// Keeps the stderr tail and forwards lines; never stops reading, so the agent never blocks on
/// a full stderr pipe, whatever it floods.
async fn drain_stderr(
    mut stderr: ChildStderr,
    tail: Arc<Mutex<StderrTail>>,
    lines: mpsc::Sender<String>,
) {
    let mut chunk = vec![0u8; 16 * 1024];
    let mut current_line: Vec<u8> = Vec::new();
    loop {
        let read = match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        if let Ok(mut tail) = tail.lock() {
            tail.push(&chunk[..read]);
        }
        for byte in &chunk[..read] {
            if *byte == b'\n' {
                let line = String::from_utf8_lossy(&current_line).into_owned();
                current_line.clear();
                // A full channel means nobody reads lines fast enough: drop, the tail keeps it.
                let _ = lines.try_send(line);
            } else if current_line.len() < STDERR_MAX_LINE {
                current_line.push(*byte);
            }
        }
    }
    if !current_line.is_empty() {
        let _ = lines.try_send(String::from_utf8_lossy(&current_line).into_owned());
    }
}

/// Starts `command`, trying again for a moment while its program is busy (`ETXTBSY`): a file
/// someone holds open for writing cannot be executed, and that lasts an instant (an agent CLI
/// that updates itself; a script just written, whose write handle a child forked meanwhile by
/// another thread carries until its own exec). Waits at most [`BUSY_PROGRAM_WAITS`] in all, on
/// the calling thread: a start is rare and this is rarer.
fn spawn_when_not_busy(command: &mut Command) -> std::io::Result<tokio::process::Child> {
    let mut waits = BUSY_PROGRAM_WAITS.iter();
    loop {
        match command.spawn() {
            Err(error) if error.raw_os_error() == Some(libc::ETXTBSY) => match waits.next() {
                Some(wait) => std::thread::sleep(*wait),
                None => return Err(error),
            },
            started => return started,
        }
    }
}

/// The pauses between starts of a busy program (about 0.6 s in all).
const BUSY_PROGRAM_WAITS: [std::time::Duration; 6] = [
    std::time::Duration::from_millis(10),
    std::time::Duration::from_millis(20),
    std::time::Duration::from_millis(40),
    std::time::Duration::from_millis(80),
    std::time::Duration::from_millis(160),
    std::time::Duration::from_millis(320),
];

/// Owns a long-lived agent's stdin: writes each line given, in order, with its newline. Ends
/// (closing stdin) when every sender is gone or the agent stops reading.
pub(crate) async fn write_lines(
    mut stdin: tokio::process::ChildStdin,
    mut lines: mpsc::UnboundedReceiver<String>,
) {
    use tokio::io::AsyncWriteExt;
    while let Some(mut line) = lines.recv().await {
        line.push('\n');
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
}

/// The first executable file called `program` in `PATH`.
pub(crate) fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

pub(crate) fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::SpawnSpec;

    /// A program held open for writing a moment longer (here by this process) is started once
    /// it is let go, not failed at once with "Text file busy".
    #[tokio::test]
    async fn a_program_busy_for_a_moment_is_started_when_it_is_free() {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("agent");
        let mut writing = std::fs::File::create(&script).unwrap();
        writing.write_all(b"#!/bin/sh\necho started\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let held = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(30));
            drop(writing);
        });
        let mut agent = super::spawn(&SpawnSpec::new(&script), super::StopControl::new())
            .expect("started once the program was free");
        held.join().unwrap();
        let line = agent.stdout.next_line().await.unwrap().expect("a line");
        assert_eq!(line.text, "started");
    }

    #[test]
    fn secret_flag_values_never_reach_the_display_form() {
        let spec = SpawnSpec::new("pi").args([
            "--api-key",
            "sk-one",
            "--auth-token=sk-two",
            "--model",
            "gpt",
            "prompt with key words",
        ]);
        assert_eq!(
            spec.display(),
            "pi --api-key [redacted] --auth-token=[redacted] --model gpt prompt with key words"
        );
    }

    #[test]
    fn the_prompt_is_shown_by_its_length_and_hash_only() {
        let prompt = "fix the login bug, my password is hunter2";
        let spec = SpawnSpec::new("gemini")
            .args(["--model", "m", &format!("--prompt={prompt}")])
            .unlogged(prompt);
        let shown = spec.display();
        assert!(!shown.contains("hunter2"), "{shown}");
        assert_eq!(
            shown,
            format!(
                "gemini --model m --prompt={}",
                super::redact::prompt_summary(prompt)
            )
        );
        assert!(shown.contains("[prompt: 41 chars #"), "{shown}");
    }
}
