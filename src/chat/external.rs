//! The work behind Ctrl+G and `!command` (the reducers are in `app::state::external`): running
//! the user's editor on the prompt, and a shell command in the working directory with bounded
//! output and time.

use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::app::state::{ShellOutput, ShellRequest};

/// The longest a `!command` may run before it (its whole process group) is killed.
pub(crate) const SHELL_LIMIT: Duration = Duration::from_secs(30);
/// Output of a `!command` kept (the rest is read and dropped, so the command never blocks).
const SHELL_OUTPUT_BYTES: usize = 256 * 1024;
/// The largest file read back from the editor.
const EDITED_BYTES: u64 = 16 * 1024 * 1024;

/// The editor the user chose: `$VISUAL`, else `$EDITOR` (either may carry arguments, as in
/// `code --wait`).
pub(crate) fn chosen_editor() -> Option<String> {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|value| !value.trim().is_empty())
}

/// Runs `editor` on `text` in a private temporary file and returns the file's text afterwards.
/// The terminal must be the editor's meanwhile (the caller leaves full-screen mode). Every
/// failure is a sentence for a notice; the file is removed either way.
pub(crate) fn edit_text(editor: Option<String>, text: &str) -> Result<String, String> {
    let Some(editor) = editor else {
        return Err("no editor is set (set $VISUAL or $EDITOR)".to_owned());
    };
    let path = private_temp_file(text).map_err(|error| format!("no temporary file: {error}"))?;
    let result = run_editor(&editor, &path);
    let _ = std::fs::remove_file(&path);
    result
}

fn run_editor(editor: &str, path: &Path) -> Result<String, String> {
    // Through the shell, so that an editor with arguments works as it does in git.
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(path)
        .status()
        .map_err(|error| format!("the editor `{editor}` could not start: {error}"))?;
    if !status.success() {
        return Err(match status.code() {
            Some(127) => format!("the editor `{editor}` was not found"),
            _ => format!("the editor `{editor}` ended with {status}"),
        });
    }
    crate::files::read_text_limited(path, EDITED_BYTES)
        .map_err(|error| format!("the edited prompt could not be read: {error}"))
}

/// A new file only the user can read, holding `text`.
fn private_temp_file(text: &str) -> io::Result<PathBuf> {
    use std::io::Write;
    let dir = std::env::temp_dir();
    for attempt in 0..100u32 {
        let path = dir.join(format!(
            "agentty-prompt-{}-{}-{attempt}.md",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| since.subsec_nanos())
        ));
        match crate::files::no_follow()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => {
                file.write_all(text.as_bytes())?;
                return Ok(path);
            }
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(error),
        }
    }
    Err(io::Error::other("every temporary name was taken"))
}

/// Runs `request` with `sh -c` in `cwd`, stdin closed, stdout and stderr together; killed
/// (with its process group) after `limit`. Blocking: call it off the event loop.
pub(crate) fn run_shell(request: ShellRequest, cwd: &Path, limit: Duration) -> ShellOutput {
    let failed = |ended: String| ShellOutput {
        request: request.clone(),
        ended,
        success: false,
        text: String::new(),
        truncated: false,
    };
    let (reader, writer) = match io::pipe() {
        Ok(pipe) => pipe,
        Err(error) => return failed(format!("could not start: {error}")),
    };
    let spawned = writer.try_clone().and_then(|stderr| {
        Command::new("sh")
            .arg("-c")
            .arg(&request.command)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(stderr)
            // Its own group: a timeout kills what it started too.
            .process_group(0)
            .spawn()
    });
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) => return failed(format!("could not start: {error}")),
    };
    let kept = Arc::new(Mutex::new((Vec::new(), false)));
    let reading = {
        let kept = Arc::clone(&kept);
        std::thread::spawn(move || read_bounded(reader, &kept))
    };
    let started = Instant::now();
    let ended = loop {
        match child.try_wait() {
            Ok(Some(status)) => break (status.success(), describe_status(status)),
            Ok(None) if started.elapsed() >= limit => {
                let group = nix::unistd::Pid::from_raw(child.id() as i32);
                let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
                let _ = child.wait();
                break (false, format!("killed after {limit:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(error) => break (false, format!("lost: {error}")),
        }
    };
    // Something it started in the background may hold the pipe open: wait a little, then go
    // on with what was read.
    let waited = Instant::now();
    while !reading.is_finished() && waited.elapsed() < Duration::from_millis(500) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let (bytes, truncated) = kept
        .lock()
        .map(|kept| kept.clone())
        .unwrap_or((Vec::new(), true));
    ShellOutput {
        request,
        success: ended.0,
        ended: ended.1,
        text: String::from_utf8_lossy(&bytes).into_owned(),
        truncated,
    }
}

/// Reads `reader` to its end, keeping the first `SHELL_OUTPUT_BYTES` in `kept` (and whether
/// more came).
fn read_bounded(mut reader: impl Read, kept: &Mutex<(Vec<u8>, bool)>) {
    let mut chunk = [0u8; 8192];
    while let Ok(read @ 1..) = reader.read(&mut chunk) {
        let Ok(mut kept) = kept.lock() else {
            return;
        };
        let room = SHELL_OUTPUT_BYTES.saturating_sub(kept.0.len());
        kept.0.extend_from_slice(&chunk[..read.min(room)]);
        if read > room {
            kept.1 = true;
        }
    }
}

fn describe_status(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => status.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(command: &str, limit: Duration) -> ShellOutput {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("here.txt"), "").unwrap();
        run_shell(
            ShellRequest {
                command: command.to_owned(),
                to_prompt: false,
            },
            dir.path(),
            limit,
        )
    }

    #[test]
    fn a_command_runs_in_the_working_dir_with_stderr_and_its_exit_status() {
        let output = shell("ls; echo oops >&2; exit 3", SHELL_LIMIT);
        assert_eq!(output.ended, "exit 3");
        assert!(!output.success);
        assert_eq!(output.text, "here.txt\noops\n");
        let output = shell("true", SHELL_LIMIT);
        assert!(output.success && output.text.is_empty(), "{output:?}");
    }

    #[test]
    fn a_command_past_its_time_is_killed_with_what_it_started() {
        let started = Instant::now();
        let output = shell(
            "echo before; sleep 30 & sleep 30",
            Duration::from_millis(300),
        );
        assert_eq!(output.ended, "killed after 300ms");
        assert_eq!(output.text, "before\n");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn output_is_bounded() {
        let output = shell("yes | head -c 1000000", SHELL_LIMIT);
        assert!(output.success);
        assert!(output.truncated);
        assert_eq!(output.text.len(), SHELL_OUTPUT_BYTES);
    }

    #[test]
    fn the_editor_edits_the_prompt_and_a_failing_or_missing_one_is_a_sentence() {
        let edited = edit_text(Some("sed -i 's/draft/final/'".into()), "my draft\n").unwrap();
        assert_eq!(edited, "my final\n");
        let missing = edit_text(None, "x").unwrap_err();
        assert!(missing.contains("$VISUAL or $EDITOR"), "{missing}");
        let failing = edit_text(Some("false".into()), "x").unwrap_err();
        assert!(failing.contains("ended with"), "{failing}");
        let absent = edit_text(Some("no-such-editor-anywhere".into()), "x").unwrap_err();
        assert!(absent.contains("was not found"), "{absent}");
    }
}
