//! The demo's bash tool, run like pi's: `bash -c COMMAND` in its own session (so a Ctrl+C on
//! the terminal or a signal to the agent's group does not reach it), stdout and stderr merged
//! into one stream, output reported as it arrives.

use std::io::{self, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};

use super::signals::{self, TerminationDeferred, ToolGroup};

/// How a bash tool run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BashOutcome {
    /// Everything the command printed, stdout and stderr interleaved.
    pub(crate) output: String,
    /// The exit code; for a death by signal, 128 + the signal, as a shell reports it.
    pub(crate) exit_code: i32,
}

impl BashOutcome {
    /// The outcome of a command that ended with `status`, having printed `output`.
    pub(crate) fn finished(status: std::process::ExitStatus, output: &[u8]) -> Self {
        let exit_code = status
            .code()
            .or_else(|| status.signal().map(|signal| 128 + signal))
            .unwrap_or(1);
        Self {
            output: String::from_utf8_lossy(output).into_owned(),
            exit_code,
        }
    }

    /// The tool call status this run gives, in ACP's words.
    pub(crate) fn tool_status(&self) -> &'static str {
        if self.exit_code == 0 {
            "completed"
        } else {
            "failed"
        }
    }

    /// The tool result text as pi's bash tool words it.
    pub(crate) fn result_text(&self) -> String {
        let output = if self.output.is_empty() {
            "(no output)"
        } else {
            self.output.as_str()
        };
        if self.exit_code == 0 {
            output.to_owned()
        } else {
            format!("{output}\n\nCommand exited with code {}", self.exit_code)
        }
    }
}

/// `bash -c command` as pi's bash tool starts it: stdin closed, stdout and stderr into one pipe
/// (returned), in a session of its own.
pub(crate) fn tool_command(command: &str) -> io::Result<(io::PipeReader, Command)> {
    let (reader, writer) = io::pipe()?;
    let mut bash = Command::new("bash");
    bash.arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer);
    // SAFETY: `detach_in_child` only makes async-signal-safe calls.
    unsafe { bash.pre_exec(signals::detach_in_child) };
    Ok((reader, bash))
}

/// Starts `command` as a tool (in `cwd` when given), registered with the termination handler
/// until the returned [`ToolGroup`] drops. A thread of its own hands each piece of output to
/// `forward`, then `None` once the output closes; it stops early when `forward` says `false`.
pub(crate) fn spawn_streamed(
    command: &str,
    cwd: Option<&std::path::Path>,
    mut forward: impl FnMut(Option<Vec<u8>>) -> bool + Send + 'static,
) -> io::Result<(Child, ToolGroup)> {
    let (mut reader, mut bash) = tool_command(command)?;
    if let Some(cwd) = cwd {
        bash.current_dir(cwd);
    }
    let (child, group) = {
        // A SIGTERM between spawn and registration would leave the tool running.
        let _deferred = TerminationDeferred::new();
        let child = bash.spawn()?;
        let group = ToolGroup::register(child.id() as i32);
        (child, group)
    };
    // Our copies of the pipe's write end must close, or the reader never sees EOF.
    drop(bash);
    std::thread::spawn(move || {
        let mut buffer = [0u8; 8192];
        loop {
            match reader.read(&mut buffer) {
                Ok(0) => break,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
                Ok(read) => {
                    if !forward(Some(buffer[..read].to_vec())) {
                        return;
                    }
                }
            }
        }
        forward(None);
    });
    Ok((child, group))
}

/// Ends a tool that a stop cut short: kills its process group and reaps it, unless the
/// leave-tools knob says to leave it running (as Codex's app-server leaves it).
pub(crate) fn stop_cut_short(child: &mut Child) {
    if !super::knobs::leaves_tools() {
        // SAFETY: kill(2) on the tool's own process group (it leads its own session).
        unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
        let _ = child.wait();
    }
}

/// Runs `command`, calling `on_output` with the accumulated output after each read.
pub(crate) fn run(
    command: &str,
    mut on_output: impl FnMut(&str) -> io::Result<()>,
) -> io::Result<BashOutcome> {
    let (mut reader, mut bash) = tool_command(command)?;
    let (mut child, _group) = {
        // A SIGTERM between spawn and registration would leave the tool running.
        let _deferred = TerminationDeferred::new();
        let child = bash.spawn()?;
        let group = ToolGroup::register(child.id() as i32);
        (child, group)
    };
    // Our copies of the pipe's write end must close, or the read below never sees EOF.
    drop(bash);
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        let read = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        bytes.extend_from_slice(&buffer[..read]);
        on_output(&String::from_utf8_lossy(&bytes))?;
    }
    Ok(BashOutcome::finished(child.wait()?, &bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_streams_merged_and_failure_is_worded_like_pi() {
        let mut updates = Vec::new();
        let outcome = run("echo out; echo err >&2; exit 3", |so_far| {
            updates.push(so_far.to_owned());
            Ok(())
        })
        .expect("bash runs");
        assert_eq!(outcome.output, "out\nerr\n");
        assert_eq!(outcome.exit_code, 3);
        assert_eq!(updates.last().map(String::as_str), Some("out\nerr\n"));
        assert_eq!(
            outcome.result_text(),
            "out\nerr\n\n\nCommand exited with code 3"
        );
    }

    #[test]
    fn the_command_runs_in_its_own_session() {
        // Field 6 of /proc/PID/stat is the session id (the command name has no spaces here).
        let outcome = run("cut -d' ' -f6 /proc/$$/stat; echo $$", |_| Ok(())).expect("bash runs");
        let mut lines = outcome.output.lines().map(str::trim);
        let session = lines.next().expect("sid");
        let pid = lines.next().expect("pid");
        assert_eq!(session, pid, "bash leads its own session");
    }

    #[test]
    fn empty_output_is_reported_as_no_output() {
        let outcome = run("true", |_| Ok(())).expect("bash runs");
        assert_eq!(outcome.result_text(), "(no output)");
    }
}
