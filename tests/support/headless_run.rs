//! `agentty run` as scripts drive it, for tests of the whole binary: a child process whose
//! stdout is read as the shared stream's JSON lines (each with the moment it arrived), whose
//! stderr is kept, which can be sent SIGINT, and whose end is awaited with a limit. The
//! messages stay `serde_json::Value`s: the field names of DESIGN.md's table are the contract
//! checked here, not the crate's own types.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The message types that end an attempt.
pub const TERMINALS: [&str; 3] = [
    "terminal.completed",
    "terminal.failed",
    "terminal.cancelled",
];

/// A running `agentty run`.
pub struct HeadlessRun {
    child: Child,
    /// When the process was spawned.
    pub spawned_at: Instant,
    lines: Arc<Mutex<Vec<(Instant, Value)>>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
}

/// How a run ended.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    /// The stdout lines, parsed; a line that is not JSON is kept as
    /// `{"type": "<not json>", "line": ...}`.
    pub messages: Vec<Value>,
    /// When each message arrived, from the spawn.
    pub arrivals: Vec<Duration>,
    pub stderr: String,
    /// From the spawn to the exit.
    pub elapsed: Duration,
}

impl HeadlessRun {
    /// Spawns `command` (an `agentty run ...`) with stdin closed and stdout/stderr piped.
    pub fn spawn(mut command: Command) -> HeadlessRun {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let spawned_at = Instant::now();
        let mut child = command
            .spawn()
            .unwrap_or_else(|error| panic!("spawn {command:?}: {error}"));
        let lines: Arc<Mutex<Vec<(Instant, Value)>>> = Arc::default();
        let stderr: Arc<Mutex<String>> = Arc::default();
        let stdout_pipe = child.stdout.take().expect("stdout piped");
        let stderr_pipe = child.stderr.take().expect("stderr piped");
        let out = {
            let lines = lines.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout_pipe).lines() {
                    let Ok(line) = line else { break };
                    let value = serde_json::from_str::<Value>(&line).unwrap_or_else(
                        |_| serde_json::json!({"type": "<not json>", "line": line}),
                    );
                    eprintln!("  | {line}");
                    lines.lock().unwrap().push((Instant::now(), value));
                }
            })
        };
        let err = {
            let stderr = stderr.clone();
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = BufReader::new(stderr_pipe).read_to_string(&mut text);
                *stderr.lock().unwrap() = text;
            })
        };
        HeadlessRun {
            child,
            spawned_at,
            lines,
            stderr,
            readers: vec![out, err],
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The messages so far.
    pub fn messages(&self) -> Vec<Value> {
        let lines = self.lines.lock().unwrap();
        lines.iter().map(|(_, value)| value.clone()).collect()
    }

    /// SIGINT to agentty (what Ctrl-C in a terminal does), which starts the three-stage stop.
    pub fn interrupt(&self) {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.pid()),
            nix::sys::signal::Signal::SIGINT,
        )
        .expect("SIGINT to agentty");
    }

    /// Waits up to `limit` for agentty to exit and its output to be read; on timeout kills it
    /// and fails the test with what it printed.
    pub async fn finish(mut self, limit: Duration) -> Finished {
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait for agentty") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let messages = self.messages();
                let stderr = self.stderr.lock().unwrap().clone();
                panic!(
                    "agentty run did not exit within {limit:?} (killed); stdout: {messages:#?}\nstderr: {stderr}"
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let elapsed = self.spawned_at.elapsed();
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        let lines = self.lines.lock().unwrap().clone();
        let stderr = self.stderr.lock().unwrap().clone();
        Finished {
            status,
            arrivals: lines
                .iter()
                .map(|(at, _)| at.saturating_duration_since(self.spawned_at))
                .collect(),
            messages: lines.into_iter().map(|(_, value)| value).collect(),
            stderr,
            elapsed,
        }
    }
}

impl Finished {
    /// The one terminal message, checked to be the last line, with nothing unparsed before
    /// it; fails the test (printing the run) otherwise.
    pub fn terminal(&self) -> &Value {
        let bad: Vec<&Value> = of_type(&self.messages, "<not json>");
        assert!(
            bad.is_empty(),
            "stdout lines that are not JSON: {bad:#?}\n{self}"
        );
        let terminals = self
            .messages
            .iter()
            .filter(|message| TERMINALS.contains(&type_of(message)))
            .count();
        assert_eq!(terminals, 1, "exactly one terminal message\n{self}");
        let last = self.messages.last().expect("some output");
        assert!(
            TERMINALS.contains(&type_of(last)),
            "the terminal message is last\n{self}"
        );
        last
    }

    /// The terminal message, checked to be of type `kind` (e.g. `terminal.completed`), and the
    /// exit status, checked to be the one the command line contract gives it.
    pub fn expect_terminal(&self, kind: &str) -> &Value {
        let terminal = self.terminal();
        assert_eq!(type_of(terminal), kind, "{self}");
        assert_eq!(self.status.code(), Some(exit_code_for(kind)), "{self}");
        terminal
    }

    /// When the first message of type `kind` arrived, from the spawn.
    pub fn first_arrival(&self, kind: &str) -> Option<Duration> {
        self.messages
            .iter()
            .zip(&self.arrivals)
            .find(|(message, _)| type_of(message) == kind)
            .map(|(_, at)| *at)
    }
}

impl std::fmt::Display for Finished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "--- agentty run: {} after {:?}",
            self.status, self.elapsed
        )?;
        for message in &self.messages {
            writeln!(f, "  {message}")?;
        }
        let tail: String = {
            let chars: Vec<char> = self.stderr.chars().collect();
            chars[chars.len().saturating_sub(4000)..].iter().collect()
        };
        write!(f, "--- stderr (tail):\n{tail}")
    }
}

/// `agentty run`'s exit status for a terminal message of type `kind` (DESIGN.md).
pub fn exit_code_for(kind: &str) -> i32 {
    match kind {
        "terminal.completed" => 0,
        "terminal.cancelled" => 130,
        _ => 1,
    }
}

/// A message's `type`.
pub fn type_of(message: &Value) -> &str {
    message["type"].as_str().unwrap_or_default()
}

/// The messages of type `kind`.
pub fn of_type<'m>(messages: &'m [Value], kind: &str) -> Vec<&'m Value> {
    messages
        .iter()
        .filter(|message| type_of(message) == kind)
        .collect()
}

/// The string field `field` of every message of type `kind`, concatenated (every `assistant`
/// `delta`, every `assistant.thinking` `delta`, ...).
pub fn concat(messages: &[Value], kind: &str, field: &str) -> String {
    of_type(messages, kind)
        .iter()
        .filter_map(|message| message[field].as_str())
        .collect()
}

/// The position of the first message of type `kind`.
pub fn position(messages: &[Value], kind: &str) -> Option<usize> {
    messages.iter().position(|message| type_of(message) == kind)
}
