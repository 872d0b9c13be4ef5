//! The real CLI captures in `tests/fixtures/captures/<cli>`, for fixture and fuzz tests.
//!
//! A capture is `<name>.stdout.jsonl`, usually `<name>.stderr.txt`, and `<name>.meta.txt`, the
//! harness's notes on the run. [`RecordedRun`] reads all three into what the runner would
//! have seen: the output lines in arrival order and how the CLI ended. Each CLI's captures
//! were recorded by its own harness, so the meta files differ in how they write a stop; the
//! one parser here knows all of them (see [`RecordedRun::parse`]).

use std::path::{Path, PathBuf};

use agentty::provider::ExitFacts;
use serde_json::Value;

/// The captures of one CLI, kept in the repository (`tests/fixtures/captures/<cli>`).
pub fn captures_dir(cli: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/captures")
        .join(cli)
}

/// Names of the captures that have a stdout stream, sorted.
pub fn capture_names(cli: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(captures_dir(cli))
        .unwrap_or_else(|error| panic!("no captures for {cli}: {error}"))
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".stdout.jsonl").map(str::to_owned)
        })
        .collect();
    names.sort();
    names
}

/// The stdout lines of one capture.
pub fn stdout_lines(cli: &str, name: &str) -> Vec<String> {
    let path = captures_dir(cli).join(format!("{name}.stdout.jsonl"));
    let bytes = std::fs::read(&path).unwrap_or_else(|error| panic!("{path:?}: {error}"));
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// Which output a recorded line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Stdout,
    Stderr,
}

/// A run recorded by a capture harness: its output lines in arrival order and how it ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordedRun {
    /// The command line, as the harness wrote it.
    pub command: String,
    pub lines: Vec<(Channel, String)>,
    pub exit: ExitFacts,
}

impl RecordedRun {
    /// Reads capture `name` of `cli`; a capture without a stderr file had no stderr.
    pub fn read(cli: &str, name: &str) -> RecordedRun {
        let dir = captures_dir(cli);
        let read = |extension: &str| {
            let path = dir.join(format!("{name}.{extension}"));
            std::fs::read_to_string(&path)
                .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()))
        };
        let stderr = if dir.join(format!("{name}.stderr.txt")).exists() {
            read("stderr.txt")
        } else {
            String::new()
        };
        let run = RecordedRun::parse(&read("stdout.jsonl"), &stderr, &read("meta.txt"));
        assert!(!run.command.is_empty(), "{cli}/{name}: meta has no command");
        run
    }

    /// Builds a run from the three files of one capture.
    ///
    /// The Codex and Gemini harnesses' output timeline (after `-- output timeline`) gives the
    /// order in which stdout and stderr lines arrived (each entry names its channel; its text
    /// may be cut short); lines the timeline does not account for follow at the end, stdout
    /// first. The exit is `exit code: N` (`exit_code: N` from the Claude harness), where `-N
    /// (killed by signal …)` and `killed by signal N …` mean death by signal N; a meta file
    /// without an exit is not a capture. Whether the harness stopped the CLI (as agentty's
    /// stop would) is [`stopped_by_harness`].
    pub fn parse(stdout: &str, stderr: &str, meta: &str) -> RecordedRun {
        let mut stdout_lines = stdout.lines();
        let mut stderr_lines = stderr.lines();
        let mut lines = Vec::new();
        let timeline = meta
            .split_once("-- output timeline")
            .map_or("", |(_, timeline)| timeline);
        for entry in timeline.lines() {
            let mut fields = entry.split_whitespace();
            let channel = match (fields.next(), fields.next()) {
                (Some(time), Some("out")) if time.parse::<f64>().is_ok() => Channel::Stdout,
                (Some(time), Some("err")) if time.parse::<f64>().is_ok() => Channel::Stderr,
                _ => continue,
            };
            let next = match channel {
                Channel::Stdout => stdout_lines.next(),
                Channel::Stderr => stderr_lines.next(),
            };
            if let Some(line) = next {
                lines.push((channel, line.to_owned()));
            }
        }
        lines.extend(stdout_lines.map(|line| (Channel::Stdout, line.to_owned())));
        lines.extend(stderr_lines.map(|line| (Channel::Stderr, line.to_owned())));

        let status = meta_field(meta, "exit code:")
            .or_else(|| meta_field(meta, "exit_code:"))
            .expect("the meta file has an exit code");
        let number = status
            .trim_start_matches(|c: char| !c.is_ascii_digit() && c != '-')
            .split(|c: char| !c.is_ascii_digit() && c != '-')
            .next()
            .and_then(|digits| digits.parse::<i32>().ok())
            .unwrap_or_else(|| panic!("exit code {status:?} is not a number"));
        let (exit_code, signal) = match number {
            code if status.starts_with("killed by signal") => (None, Some(code)),
            code if code < 0 => (None, Some(-code)),
            code => (Some(code), None),
        };
        RecordedRun {
            command: meta_field(meta, "command:").unwrap_or_default().to_owned(),
            lines,
            exit: ExitFacts {
                exit_code,
                signal,
                stopped_by_us: stopped_by_harness(meta),
            },
        }
    }

    /// The stdout lines, in order.
    pub fn stdout(&self) -> impl Iterator<Item = &str> {
        self.lines
            .iter()
            .filter(|(channel, _)| *channel == Channel::Stdout)
            .map(|(_, line)| line.as_str())
    }

    /// The same run with `stdout` as its only output: for a stream derived from a capture.
    pub fn with_stdout(&self, stdout: impl IntoIterator<Item = String>) -> RecordedRun {
        RecordedRun {
            command: self.command.clone(),
            lines: stdout
                .into_iter()
                .map(|line| (Channel::Stdout, line))
                .collect(),
            exit: self.exit,
        }
    }
}

/// The trimmed rest of the first meta line that starts with `name`.
fn meta_field<'m>(meta: &'m str, name: &str) -> Option<&'m str> {
    meta.lines()
        .find_map(|line| line.strip_prefix(name))
        .map(str::trim)
}

/// Whether the harness stopped the CLI, as each harness writes it down: a `cancel:` line
/// (Codex, Gemini); a signal sent or the Ctrl+C byte written among the actions (pi: `sent
/// SIGINT …`, `write '03'`); or a `steps:` list with a signal, the Ctrl+C byte or an
/// interrupt control request (Claude).
pub fn stopped_by_harness(meta: &str) -> bool {
    let claude_stopped = meta_field(meta, "steps:").is_some_and(|steps| {
        let steps: Vec<Value> = serde_json::from_str(steps).expect("steps are JSON");
        steps.iter().any(|step| {
            step.get("signal").is_some()
                || step.get("write_hex").and_then(Value::as_str) == Some("03")
                || step
                    .get("write")
                    .and_then(Value::as_str)
                    .is_some_and(|text| text.contains("\"interrupt\""))
        })
    });
    meta_field(meta, "cancel:").is_some()
        || meta.contains("sent SIG")
        || meta.contains("write '03'")
        || claude_stopped
}
