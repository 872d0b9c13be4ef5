//! The demo agent as a real child process: `agentty demo-agent` must speak pi 0.73.1's
//! `--mode json` exactly as the captures in `protocols/pi/captures` show it, and behave like pi
//! on signals. Every test runs the real binary; event shapes are compared against the captures.

use crate::support::captures;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

const ATTEMPT_VAR: &str = "AGENTTY_DEMO_ATTEMPT";
const TIME_SCALE_VAR: &str = "AGENTTY_DEMO_TIME_SCALE";
const STATE_DIR_VAR: &str = "AGENTTY_DEMO_STATE_DIR";
/// Marks every process a test started (and their descendants), so nothing outlives the test.
const MARKER_VAR: &str = "AGENTTY_DEMO_TEST_MARKER";

/// Fast enough for tests, slow enough that timing still orders the events.
const FAST: f64 = 0.02;

/// Every scenario that runs to its end by itself in a moment at `FAST` (`sleep-tool` runs a real
/// 100 s `sleep`).
const SELF_ENDING: &[&str] = &[
    "hello",
    "thinking",
    "tool",
    "markdown",
    "slow",
    "ignore-sigint",
    "grandchild",
    "bad-lines",
    "crash",
    "rate-limit",
    "auth-error",
    "flaky",
    "legacy-replay",
];

const PI_EVENT_TYPES: &[&str] = &[
    "session",
    "agent_start",
    "agent_end",
    "turn_start",
    "turn_end",
    "message_start",
    "message_end",
    "message_update",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "auto_retry_start",
    "auto_retry_end",
    "queue_update",
    "compaction_start",
    "compaction_end",
];

// ---------------------------------------------------------------------------------------------
// Running the demo agent

/// Separate state, working directory and process marker for one test.
struct Setup {
    state: tempfile::TempDir,
    cwd: tempfile::TempDir,
    marker: String,
}

impl Setup {
    fn new() -> Self {
        Self {
            state: tempfile::tempdir().expect("temp dir"),
            cwd: tempfile::tempdir().expect("temp dir"),
            marker: uuid::Uuid::new_v4().to_string(),
        }
    }

    fn cwd(&self) -> String {
        self.cwd.path().display().to_string()
    }

    fn command(&self, args: &[&str], scale: f64) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_agentty"));
        command
            .arg("demo-agent")
            .args(args)
            .env(STATE_DIR_VAR, self.state.path())
            .env(TIME_SCALE_VAR, scale.to_string())
            .env(MARKER_VAR, &self.marker)
            .env_remove(ATTEMPT_VAR)
            .current_dir(self.cwd.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        command
    }

    fn run(&self, args: &[&str]) -> Played {
        self.run_with(self.command(args, FAST))
    }

    fn run_with(&self, mut command: Command) -> Played {
        let output = command.output().expect("demo agent runs");
        Played {
            status: output.status,
            stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    fn spawn_live(&self, args: &[&str], scale: f64) -> Live {
        let mut child = self
            .command(args, scale)
            .spawn()
            .expect("demo agent starts");
        let stdout = child.stdout.take().expect("stdout piped");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        Live {
            child,
            lines,
            seen: Vec::new(),
        }
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        kill_marked(&self.marker);
    }
}

#[derive(Debug)]
struct Played {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// A running demo agent whose stdout lines arrive as they are printed.
struct Live {
    child: Child,
    lines: Receiver<(Instant, String)>,
    seen: Vec<(Instant, String)>,
}

impl Live {
    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits for a line satisfying `wanted`; returns it with its arrival time.
    fn wait_for(&mut self, timeout: Duration, wanted: impl Fn(&str) -> bool) -> (Instant, String) {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((at, line)) => {
                    self.seen.push((at, line.clone()));
                    if wanted(&line) {
                        return (at, line);
                    }
                }
                Err(_) => panic!(
                    "no wanted line within {timeout:?}; seen {} lines",
                    self.seen.len()
                ),
            }
        }
    }

    /// Waits for the exit; returns the status and how long it took from `since`.
    fn wait_exit(&mut self, since: Instant, timeout: Duration) -> (ExitStatus, Duration) {
        let deadline = since + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return (status, since.elapsed());
            }
            assert!(
                Instant::now() < deadline,
                "agent still running after {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Every line printed so far and until stdout closes (or `timeout`).
    fn drain(&mut self, timeout: Duration) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        while let Ok(line) = self
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            self.seen.push(line);
        }
        self.seen.iter().map(|(_, line)| line.clone()).collect()
    }

    fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.pid()), signal).expect("signal the agent");
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One scenario's playback, computed by whichever test needs it first.
type PlayedOnce = Arc<OnceLock<Arc<Played>>>;

/// Each self-ending scenario played once (at `FAST`, in a fresh setup), shared by the tests.
fn played(scenario: &str) -> Arc<Played> {
    static CACHE: OnceLock<Mutex<HashMap<String, PlayedOnce>>> = OnceLock::new();
    let cell = CACHE
        .get_or_init(Default::default)
        .lock()
        .expect("cache")
        .entry(scenario.to_owned())
        .or_default()
        .clone();
    cell.get_or_init(|| {
        let setup = Setup::new();
        let prompt = format!("Demo prompt for the {scenario} scenario test.");
        Arc::new(setup.run(&["--mode", "json", "--scenario", scenario, &prompt]))
    })
    .clone()
}

// ---------------------------------------------------------------------------------------------
// /proc helpers

/// (state, process group, session) of a process.
fn proc_stat(pid: i32) -> Option<(char, i32, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &text[text.rfind(')')? + 2..];
    let mut fields = after_name.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _parent = fields.next()?;
    let group = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some((state, group, session))
}

fn is_alive(pid: i32) -> bool {
    matches!(proc_stat(pid), Some((state, ..)) if state != 'Z' && state != 'X')
}

fn all_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn live_group_members(group: i32) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|pid| matches!(proc_stat(*pid), Some((state, g, _)) if g == group && state != 'Z'))
        .collect()
}

fn kill_marked(marker: &str) {
    let needle = format!("{MARKER_VAR}={marker}");
    for pid in all_pids() {
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if environ
            .split(|byte| *byte == 0)
            .any(|entry| entry == needle.as_bytes())
        {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

fn wait_until(timeout: Duration, condition: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    condition()
}

// ---------------------------------------------------------------------------------------------
// The pi stream checker

/// One `agent_start … agent_end` as checked.
#[derive(Debug, Default)]
struct AgentRun {
    user_text: String,
    /// `message_end` of each assistant message.
    assistants: Vec<Value>,
    /// `tool_execution_end` events.
    tool_ends: Vec<Value>,
    tool_updates: usize,
    deltas: usize,
    updates_without_delta: usize,
    /// `assistantMessageEvent.type`s seen.
    update_types: BTreeSet<String>,
    ended: bool,
}

impl AgentRun {
    fn final_text(&self) -> String {
        self.assistants.last().map(message_text).unwrap_or_default()
    }
}

#[derive(Debug)]
struct Stream {
    header: Value,
    /// Every pi event after the header, in order.
    events: Vec<Value>,
    bad_lines: Vec<String>,
    runs: Vec<AgentRun>,
}

fn message_text(message: &Value) -> String {
    blocks_text(message, "text", "text")
}

fn blocks_text(message: &Value, block_type: &str, field: &str) -> String {
    message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|block| block["type"] == block_type)
        .filter_map(|block| block[field].as_str())
        .collect()
}

fn is_pi_event(value: &Value) -> bool {
    value
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|kind| PI_EVENT_TYPES.contains(&kind))
}

fn assert_header(header: &Value) {
    assert_eq!(header["type"], "session", "line 1 is the session header");
    let keys: BTreeSet<_> = header
        .as_object()
        .expect("object")
        .keys()
        .cloned()
        .collect();
    let expected: BTreeSet<_> = ["type", "version", "id", "timestamp", "cwd"]
        .map(String::from)
        .into();
    assert_eq!(keys, expected);
    assert_eq!(header["version"], 3);
    let id = uuid::Uuid::parse_str(header["id"].as_str().expect("id")).expect("id is a uuid");
    assert_eq!(id.get_version_num(), 7, "pi's session ids are UUIDv7");
    let timestamp = header["timestamp"].as_str().expect("timestamp");
    assert_eq!(timestamp.len(), 24, "{timestamp}");
    assert!(
        timestamp.ends_with('Z') && timestamp.as_bytes()[10] == b'T',
        "{timestamp}"
    );
    assert!(header["cwd"]
        .as_str()
        .is_some_and(|cwd| cwd.starts_with('/')));
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SS`, computed independently with `date`.
fn iso_seconds(seconds: u64) -> String {
    let output = Command::new("date")
        .args(["-u", "-d", &format!("@{seconds}"), "+%Y-%m-%dT%H:%M:%S"])
        .output()
        .expect("date runs");
    String::from_utf8(output.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

/// Checks a whole stdout against pi's event structure. A stream may stop early (crash,
/// signal): the last run is then not `ended`.
fn check_stream(stdout: &str) -> Stream {
    let mut lines = stdout.lines();
    let header: Value =
        serde_json::from_str(lines.next().expect("a first line")).expect("header is JSON");
    assert_header(&header);
    let mut events = Vec::new();
    let mut bad_lines = Vec::new();
    for line in lines {
        match serde_json::from_str::<Value>(line) {
            Ok(value) if is_pi_event(&value) => events.push(value),
            _ => bad_lines.push(line.to_owned()),
        }
    }
    let mut cursor = events.iter();
    let mut runs = Vec::new();
    while let Some(event) = cursor.next() {
        assert_eq!(
            event["type"], "agent_start",
            "a run starts with agent_start"
        );
        let run = check_run(&mut cursor);
        let ended = run.ended;
        runs.push(run);
        if !ended {
            assert!(cursor.next().is_none());
        }
    }
    Stream {
        header,
        events,
        bad_lines,
        runs,
    }
}

fn check_run<'a>(cursor: &mut impl Iterator<Item = &'a Value>) -> AgentRun {
    let mut run = AgentRun::default();
    macro_rules! next {
        ($kind:expr) => {
            match cursor.next() {
                Some(event) => {
                    assert_eq!(event["type"], $kind, "event order: {event}");
                    event
                }
                None => return run,
            }
        };
    }
    next!("turn_start");
    let user_start = next!("message_start");
    assert_eq!(user_start["message"]["role"], "user");
    let user_end = next!("message_end");
    assert_eq!(user_start["message"], user_end["message"]);
    let user = user_end["message"].clone();
    run.user_text = message_text(&user);
    assert!(user["timestamp"].is_u64());
    let mut messages = vec![user];
    loop {
        let start = next!("message_start");
        let started = &start["message"];
        assert_eq!(started["role"], "assistant");
        let final_message;
        if started["stopReason"] == "error" {
            // A failed request: only the finished message, twice.
            assert_eq!(started["content"], json!([]));
            assert!(started.get("responseId").is_none());
            let end = next!("message_end");
            assert_eq!(&end["message"], started);
            final_message = end["message"].clone();
        } else {
            assert_eq!(
                started["content"],
                json!([]),
                "message_start has no content yet"
            );
            assert_eq!(started["usage"]["totalTokens"], 0);
            let mut accumulated: BTreeMap<u64, String> = BTreeMap::new();
            let mut ended_blocks: Vec<u64> = Vec::new();
            let end = loop {
                let Some(event) = cursor.next() else {
                    return run;
                };
                if event["type"] == "message_end" {
                    break event;
                }
                assert_eq!(event["type"], "message_update", "inside a message: {event}");
                check_update(event, &mut accumulated, &mut ended_blocks, &mut run);
            };
            final_message = end["message"].clone();
            let error = final_message["stopReason"] == "error";
            assert_eq!(
                final_message["errorMessage"].is_string(),
                error,
                "errorMessage iff stopReason error"
            );
            let blocks = final_message["content"].as_array().expect("content");
            if error {
                assert!(
                    ended_blocks.is_empty(),
                    "a failed message has no *_end events"
                );
            } else {
                let order: Vec<u64> = (0..blocks.len() as u64).collect();
                assert_eq!(ended_blocks, order, "one *_end per block, in content order");
                let usage = &final_message["usage"];
                assert!(usage["output"].as_u64().is_some_and(|output| output > 0));
                assert_eq!(
                    usage["totalTokens"].as_u64(),
                    Some(usage["input"].as_u64().unwrap() + usage["output"].as_u64().unwrap())
                );
            }
            for (index, block) in blocks.iter().enumerate() {
                let text = block["text"].as_str().or(block["thinking"].as_str());
                if let (Some(text), Some(deltas)) = (text, accumulated.get(&(index as u64))) {
                    if run.updates_without_delta == 0 {
                        assert_eq!(deltas, text, "deltas concatenate to the final text");
                    }
                }
                if block["type"] == "toolCall" {
                    assert!(
                        block.get("partialArgs").is_none() && block.get("streamIndex").is_none()
                    );
                }
            }
        }
        let tool_calls: Vec<Value> = final_message["content"]
            .as_array()
            .expect("content")
            .iter()
            .filter(|block| block["type"] == "toolCall")
            .cloned()
            .collect();
        match final_message["stopReason"].as_str() {
            Some("toolUse") => assert!(!tool_calls.is_empty()),
            Some("stop") => assert!(tool_calls.is_empty()),
            Some("error") => {}
            other => panic!("unexpected stopReason {other:?}"),
        }
        run.assistants.push(final_message.clone());
        messages.push(final_message.clone());
        let mut tool_results = Vec::new();
        if final_message["stopReason"] == "toolUse" {
            let mut ends = Vec::new();
            for call in &tool_calls {
                let start = next!("tool_execution_start");
                assert_eq!(start["toolCallId"], call["id"]);
                assert_eq!(start["toolName"], call["name"]);
                assert_eq!(start["args"], call["arguments"]);
                let end = loop {
                    let Some(event) = cursor.next() else {
                        return run;
                    };
                    assert_eq!(event["toolCallId"], call["id"]);
                    if event["type"] == "tool_execution_end" {
                        break event;
                    }
                    assert_eq!(event["type"], "tool_execution_update");
                    assert_eq!(event["args"], call["arguments"]);
                    assert!(event["partialResult"]["content"].is_array());
                    run.tool_updates += 1;
                };
                assert!(end["isError"].is_boolean());
                run.tool_ends.push(end.clone());
                ends.push(end);
            }
            for (call, end) in tool_calls.iter().zip(&ends) {
                let start = next!("message_start");
                let result = &start["message"];
                assert_eq!(result["role"], "toolResult");
                assert_eq!(result["toolCallId"], call["id"]);
                assert_eq!(result["content"], end["result"]["content"]);
                assert_eq!(result["isError"], end["isError"]);
                let result_end = next!("message_end");
                assert_eq!(&result_end["message"], result);
                tool_results.push(result.clone());
            }
        }
        let turn_end = next!("turn_end");
        assert_eq!(turn_end["message"], final_message);
        assert_eq!(turn_end["toolResults"], Value::Array(tool_results.clone()));
        messages.extend(tool_results);
        if final_message["stopReason"] != "toolUse" {
            break;
        }
        next!("turn_start");
    }
    let agent_end = next!("agent_end");
    assert_eq!(agent_end["messages"], Value::Array(messages));
    run.ended = true;
    run
}

fn check_update(
    event: &Value,
    accumulated: &mut BTreeMap<u64, String>,
    ended_blocks: &mut Vec<u64>,
    run: &mut AgentRun,
) {
    let update = &event["assistantMessageEvent"];
    let message = &event["message"];
    assert_eq!(
        &update["partial"], message,
        "partial and message are the same snapshot"
    );
    assert_eq!(message["role"], "assistant");
    let kind = update["type"].as_str().expect("assistantMessageEvent.type");
    run.update_types.insert(kind.to_owned());
    let index = update["contentIndex"].as_u64().expect("contentIndex");
    let block = &message["content"][index as usize];
    let (family, phase) = kind.split_once('_').expect("kind_phase");
    let block_type = match family {
        "text" => "text",
        "thinking" => "thinking",
        "toolcall" => "toolCall",
        other => panic!("unknown update family {other}"),
    };
    assert_eq!(
        block["type"], block_type,
        "{kind} addresses a {block_type} block"
    );
    match phase {
        "start" => {
            assert_eq!(
                index as usize + 1,
                message["content"].as_array().unwrap().len()
            );
            assert!(
                accumulated.insert(index, String::new()).is_none(),
                "one start per block"
            );
            assert!(ended_blocks.is_empty());
        }
        "delta" => {
            assert!(
                ended_blocks.is_empty(),
                "all *_end events come after the deltas"
            );
            let so_far = accumulated.get_mut(&index).expect("delta after start");
            match update.get("delta").and_then(Value::as_str) {
                Some(delta) => {
                    run.deltas += 1;
                    so_far.push_str(delta);
                    let snapshot = match family {
                        "toolcall" => block["partialArgs"].as_str(),
                        "text" => block["text"].as_str(),
                        _ => block["thinking"].as_str(),
                    };
                    // pi's snapshots may run ahead of the deltas; the demo's never lag behind.
                    assert!(
                        snapshot.is_some_and(|snapshot| snapshot.starts_with(so_far.as_str())),
                        "snapshot {snapshot:?} vs deltas {so_far:?}"
                    );
                }
                None => run.updates_without_delta += 1,
            }
        }
        "end" => {
            ended_blocks.push(index);
            match family {
                "toolcall" => {
                    assert_eq!(&update["toolCall"], block);
                    assert!(block["arguments"].is_object());
                }
                "text" => assert_eq!(update["content"], block["text"]),
                _ => assert_eq!(update["content"], block["thinking"]),
            }
            assert_ne!(
                message["usage"]["output"], 0,
                "*_end snapshots carry the final usage"
            );
        }
        other => panic!("unknown update phase {other}"),
    }
    if phase != "end" {
        assert_eq!(
            message["usage"]["totalTokens"], 0,
            "usage is zero while streaming"
        );
        assert_eq!(message["stopReason"], "stop");
    }
}

// ---------------------------------------------------------------------------------------------
// Shapes: every object the demo prints must have a key set pi printed in the same place

fn value_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// (place, sorted `key:kind` list) for every object in `value`. A place is the path of keys
/// from the event, with each object's `type` or `role` in angle brackets.
fn collect_shapes(value: &Value, place: &str, shapes: &mut BTreeSet<(String, String)>) {
    match value {
        Value::Object(members) => {
            let tag = members
                .get("type")
                .or_else(|| members.get("role"))
                .and_then(Value::as_str);
            let place = match tag {
                Some(tag) => format!("{place}<{tag}>"),
                None => place.to_owned(),
            };
            let keys: Vec<String> = members
                .iter()
                .map(|(key, value)| format!("{key}:{}", value_kind(value)))
                .collect();
            shapes.insert((place.clone(), keys.join(",")));
            for (key, value) in members {
                collect_shapes(value, &format!("{place}.{key}"), shapes);
            }
        }
        Value::Array(items) => {
            for item in items {
                collect_shapes(item, &format!("{place}[]"), shapes);
            }
        }
        _ => {}
    }
}

fn capture_events() -> Vec<Value> {
    let events: Vec<Value> = captures::capture_names("pi")
        .iter()
        .flat_map(|name| captures::stdout_lines("pi", name))
        .filter_map(|line| serde_json::from_str::<Value>(&line).ok())
        .filter(is_pi_event)
        .collect();
    assert!(events.len() > 500, "captures found: {}", events.len());
    events
}

fn top_level_keys(events: &[Value]) -> BTreeMap<String, BTreeSet<String>> {
    let mut keys: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for event in events {
        let kind = event["type"].as_str().unwrap_or_default().to_owned();
        keys.entry(kind).or_default().extend(
            event
                .as_object()
                .into_iter()
                .flatten()
                .map(|(key, _)| key.clone()),
        );
    }
    keys
}

// ---------------------------------------------------------------------------------------------
// Tests: every scenario

#[test]
fn every_scenario_plays_a_well_formed_pi_stream() {
    for scenario in SELF_ENDING {
        let played = played(scenario);
        let stream = check_stream(&played.stdout);
        let expected_exit = if *scenario == "crash" { 1 } else { 0 };
        assert_eq!(
            played.status.code(),
            Some(expected_exit),
            "{scenario}: {}",
            played.stderr
        );
        assert_eq!(stream.runs.len(), 1, "{scenario}: one prompt, one run");
        let run = &stream.runs[0];
        assert_eq!(run.ended, *scenario != "crash", "{scenario}");
        assert_eq!(
            run.user_text,
            format!("Demo prompt for the {scenario} scenario test.")
        );
        if *scenario == "bad-lines" {
            assert!(stream.bad_lines.len() >= 4, "{:?}", stream.bad_lines);
        } else {
            assert_eq!(stream.bad_lines, Vec::<String>::new(), "{scenario}");
        }
        if *scenario != "crash" {
            assert!(played.stderr.is_empty(), "{scenario}: {}", played.stderr);
        }
        assert_eq!(
            stream.header["cwd"].as_str().map(|cwd| cwd.is_empty()),
            Some(false)
        );
    }
}

#[test]
fn event_shapes_match_the_pi_captures() {
    let captured = capture_events();
    let mut captured_shapes = BTreeSet::new();
    for event in &captured {
        collect_shapes(event, "", &mut captured_shapes);
    }
    let captured_keys = top_level_keys(&captured);
    let mut ours = Vec::new();
    for scenario in SELF_ENDING {
        let stream = check_stream(&played(scenario).stdout);
        ours.push(stream.header.clone());
        // legacy-replay leaves `delta` out on purpose (older pi); its other events must match.
        ours.extend(
            stream
                .events
                .into_iter()
                .filter(|event| *scenario != "legacy-replay" || event["type"] != "message_update"),
        );
    }
    let mut our_shapes = BTreeSet::new();
    for event in &ours {
        collect_shapes(event, "", &mut our_shapes);
    }
    let unseen: Vec<_> = our_shapes.difference(&captured_shapes).collect();
    assert!(unseen.is_empty(), "shapes pi never printed: {unseen:#?}");
    for (kind, keys) in top_level_keys(&ours) {
        assert_eq!(
            Some(&keys),
            captured_keys.get(&kind),
            "top-level keys of {kind}"
        );
    }
    // The comparison covers the whole vocabulary the demo speaks.
    let our_kinds: BTreeSet<String> = top_level_keys(&ours).into_keys().collect();
    for kind in [
        "session",
        "agent_start",
        "agent_end",
        "turn_start",
        "turn_end",
        "message_start",
        "message_update",
        "message_end",
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
    ] {
        assert!(our_kinds.contains(kind), "{kind} not exercised");
    }
    let update_kinds: BTreeSet<&str> = ours
        .iter()
        .filter_map(|event| event["assistantMessageEvent"]["type"].as_str())
        .collect();
    assert_eq!(update_kinds.len(), 9, "{update_kinds:?}");
}

#[test]
fn hello_streams_markdown_that_quotes_the_prompt() {
    let stream = check_stream(&played("hello").stdout);
    let run = &stream.runs[0];
    let text = run.final_text();
    assert!(
        text.contains("> Demo prompt for the hello scenario test."),
        "{text}"
    );
    assert!(text.contains("**agentty demo agent**"));
    assert!(run.deltas >= 10, "streamed in many deltas: {}", run.deltas);
    assert_eq!(run.assistants[0]["stopReason"], "stop");
    assert_eq!(run.assistants[0]["provider"], "demo");
}

#[test]
fn thinking_streams_a_thinking_block_before_the_answer() {
    let stream = check_stream(&played("thinking").stdout);
    let run = &stream.runs[0];
    let message = &run.assistants[0];
    assert_eq!(message["content"][0]["type"], "thinking");
    assert_eq!(
        message["content"][0]["thinkingSignature"],
        "reasoning_content"
    );
    assert_eq!(message["content"][1]["type"], "text");
    assert!(blocks_text(message, "thinking", "thinking").contains("Demo prompt for the thinking"));
    for kind in [
        "thinking_start",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_end",
    ] {
        assert!(run.update_types.contains(kind), "{kind}");
    }
    // As in pi's b_think capture: thinking_end comes after the last text delta.
    let kinds: Vec<&str> = stream
        .events
        .iter()
        .filter_map(|event| event["assistantMessageEvent"]["type"].as_str())
        .collect();
    let last_text_delta = kinds
        .iter()
        .rposition(|kind| *kind == "text_delta")
        .unwrap();
    let thinking_end = kinds
        .iter()
        .position(|kind| *kind == "thinking_end")
        .unwrap();
    assert!(thinking_end > last_text_delta);
}

#[test]
fn tool_runs_real_bash_and_answers_in_a_new_turn() {
    let setup = Setup::new();
    let played = setup.run(&["--scenario", "tool", "go"]);
    assert!(played.status.success());
    let stream = check_stream(&played.stdout);
    let run = &stream.runs[0];
    assert_eq!(
        run.assistants.len(),
        2,
        "a second assistant message after the tool"
    );
    assert_eq!(run.assistants[0]["stopReason"], "toolUse");
    let call = &run.assistants[0]["content"][1];
    assert_eq!(call["name"], "bash");
    assert!(call["arguments"]["command"]
        .as_str()
        .unwrap()
        .contains("ls -A"));
    let output = run.tool_ends[0]["result"]["content"][0]["text"]
        .as_str()
        .expect("tool output");
    assert!(
        output.starts_with(&format!("Working directory: {}\n", setup.cwd())),
        "{output}"
    );
    assert!(output.ends_with("(listing done)\n"), "{output}");
    assert_eq!(run.tool_ends[0]["isError"], false);
    // The first update is empty (as in pi), then the output as it grows.
    assert!(run.tool_updates >= 2, "{}", run.tool_updates);
    let second = message_text(&run.assistants[1]);
    assert!(second.contains(output.trim_end()), "{second}");
    assert!(second.contains("exited with code 0"));
    // No replay: the second message holds only new text.
    assert!(!second.contains("look around the working directory"));
}

#[test]
fn markdown_has_headings_lists_quotes_a_table_and_code() {
    let stream = check_stream(&played("markdown").stdout);
    let text = stream.runs[0].final_text();
    for needle in [
        "\n## ",
        "\n1. ",
        "\n- ",
        "\n> ",
        "\n|:---",
        "```rust\n",
        "```python\n",
        "```bash\n",
        "```json\n",
    ] {
        assert!(text.contains(needle), "missing {needle:?}");
    }
    assert!(text.matches("```").count() >= 12, "several fenced blocks");
    assert!(text.len() > 2000, "long: {}", text.len());
}

#[test]
fn bad_lines_are_interleaved_and_the_run_still_completes() {
    let played = played("bad-lines");
    let lines: Vec<&str> = played.stdout.lines().collect();
    let stream = check_stream(&played.stdout);
    assert!(stream.runs[0].ended);
    assert!(stream
        .bad_lines
        .iter()
        .any(|line| serde_json::from_str::<Value>(line).is_err()));
    assert!(stream.bad_lines.iter().any(|line| {
        serde_json::from_str::<Value>(line)
            .is_ok_and(|value| value.is_object() && value.get("type").is_none())
    }));
    // Interleaved: a bad line sits between two message_update events.
    let is_update = |line: &str| line.starts_with(r#"{"type":"message_update""#);
    let sandwiched = lines.windows(3).any(|window| {
        is_update(window[0])
            && stream.bad_lines.iter().any(|bad| bad == window[1])
            && is_update(window[2])
    });
    assert!(sandwiched);
    assert!(stream.runs[0].final_text().ends_with("completes normally."));
}

#[test]
fn crash_exits_1_mid_stream_with_a_message_on_stderr() {
    let played = played("crash");
    assert_eq!(played.status.code(), Some(1));
    assert!(
        played.stderr.contains("simulated crash"),
        "{}",
        played.stderr
    );
    let stream = check_stream(&played.stdout);
    let run = &stream.runs[0];
    assert!(!run.ended);
    assert!(
        run.assistants.is_empty(),
        "no message_end: the stream stops mid-message"
    );
    assert!(run.deltas >= 2);
    let last = stream.events.last().expect("events");
    assert_eq!(last["assistantMessageEvent"]["type"], "text_delta");
}

#[test]
fn provider_errors_follow_pis_shape_and_exit_0() {
    let captured_kinds: Vec<String> = captures::stdout_lines("pi", "e_http401")
        .iter()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["type"].to_string())
        .collect();
    for (scenario, error) in [
        ("rate-limit", "429 rate limit exceeded"),
        ("auth-error", "401 Incorrect API key provided: demo-key"),
    ] {
        let played = played(scenario);
        assert_eq!(played.status.code(), Some(0), "{scenario}");
        assert!(
            played.stderr.is_empty(),
            "pi prints LLM errors on stdout only"
        );
        let kinds: Vec<String> = played
            .stdout
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap()["type"].to_string())
            .collect();
        assert_eq!(
            kinds, captured_kinds,
            "{scenario}: same event sequence as e_http401"
        );
        let stream = check_stream(&played.stdout);
        let message = &stream.runs[0].assistants[0];
        assert_eq!(message["stopReason"], "error");
        assert!(
            message["errorMessage"].as_str().unwrap().starts_with(error),
            "{message}"
        );
        assert_eq!(message["content"], json!([]));
    }
}

#[test]
fn legacy_replay_sends_snapshots_without_deltas_and_replays_the_earlier_text() {
    let stream = check_stream(&played("legacy-replay").stdout);
    let run = &stream.runs[0];
    assert_eq!(run.deltas, 0, "no update carries a delta");
    assert!(run.updates_without_delta > 5);
    let updates = stream
        .events
        .iter()
        .filter(|event| event["type"] == "message_update");
    for update in updates {
        assert!(update["assistantMessageEvent"].get("delta").is_none());
    }
    assert_eq!(run.assistants.len(), 2);
    let first = message_text(&run.assistants[0]);
    let second = message_text(&run.assistants[1]);
    assert!(
        second.starts_with(&first),
        "the second message replays the first: {second}"
    );
    assert!(second.len() > first.len() + 20);
    assert!(
        second.contains(" UTC here"),
        "the tool output follows: {second}"
    );
    // The second message's snapshots restart from the first message's opening words.
    let second_start = stream
        .events
        .iter()
        .rposition(|event| {
            event["type"] == "message_start" && event["message"]["role"] == "assistant"
        })
        .unwrap();
    let first_snapshot = &stream.events[second_start + 1]["message"];
    let opening = message_text(first_snapshot);
    assert!(
        first.starts_with(&opening) && !opening.is_empty(),
        "{opening}"
    );
}

// ---------------------------------------------------------------------------------------------
// Tests: selection, invocation, sessions, retries

#[test]
fn a_keyword_in_the_prompt_selects_the_scenario() {
    let setup = Setup::new();
    let played = setup.run(&["please simulate a crash now"]);
    assert_eq!(played.status.code(), Some(1));
    let played = setup.run(&["what happens on a rate-limit?"]);
    let stream = check_stream(&played.stdout);
    assert_eq!(stream.runs[0].assistants[0]["stopReason"], "error");
    let played = setup.run(&["Use a tool, then think"]);
    assert_eq!(check_stream(&played.stdout).runs[0].tool_ends.len(), 1);
    let played = setup.run(&["tool-less greetings"]);
    let stream = check_stream(&played.stdout);
    assert!(stream.runs[0].tool_ends.is_empty());
    assert!(stream.runs[0]
        .final_text()
        .contains("> tool-less greetings"));
    // --scenario wins over keywords.
    let played = setup.run(&["--scenario", "auth-error", "use a tool"]);
    let stream = check_stream(&played.stdout);
    assert!(stream.runs[0].assistants[0]["errorMessage"]
        .as_str()
        .unwrap()
        .starts_with("401 "));
}

#[test]
fn an_unknown_scenario_or_mode_is_rejected_with_exit_1() {
    let setup = Setup::new();
    let played = setup.run(&["--scenario", "nosuch", "hi"]);
    assert_eq!(played.status.code(), Some(1));
    assert!(played.stdout.is_empty());
    assert!(
        played.stderr.contains("Unknown scenario \"nosuch\""),
        "{}",
        played.stderr
    );
    assert!(played.stderr.contains("legacy-replay"));
    let played = setup.run(&["--mode", "bogus", "hi"]);
    assert_eq!(played.status.code(), Some(1));
    assert!(played.stdout.is_empty());
}

#[test]
fn no_prompt_prints_only_the_session_header() {
    let setup = Setup::new();
    let played = setup.run(&["--mode", "json"]);
    assert!(played.status.success());
    let lines: Vec<&str> = played.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_header(&serde_json::from_str(lines[0]).unwrap());
    assert_eq!(
        serde_json::from_str::<Value>(lines[0]).unwrap()["cwd"],
        setup.cwd()
    );
}

#[test]
fn piped_stdin_is_glued_in_front_of_the_prompt_like_pi() {
    let setup = Setup::new();
    let mut command = setup.command(&["--scenario", "hello", "world"], FAST);
    command.stdin(Stdio::piped());
    let mut child = command.spawn().expect("starts");
    let mut stdin = child.stdin.take().unwrap();
    // Like pi, nothing is printed before stdin is closed.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(child.try_wait().unwrap(), None);
    stdin.write_all(b"hello ").unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let stream = check_stream(&String::from_utf8(output.stdout).unwrap());
    assert_eq!(stream.runs[0].user_text, "hello world");
}

#[test]
fn two_prompts_are_two_runs_under_one_header() {
    let setup = Setup::new();
    let played = setup.run(&["--scenario", "thinking", "first", "second"]);
    let stream = check_stream(&played.stdout);
    assert_eq!(stream.runs.len(), 2);
    assert_eq!(stream.runs[0].user_text, "first");
    assert_eq!(stream.runs[1].user_text, "second");
    assert!(stream.runs.iter().all(|run| run.ended));
    assert_eq!(played.stdout.matches(r#"{"type":"session""#).count(), 1);
}

#[test]
fn sessions_new_continue_and_by_id_print_headers_like_pi() {
    let setup = Setup::new();
    let header = |played: &Played| check_stream(&played.stdout).header;
    let first = header(&setup.run(&["--scenario", "hello", "one"]));
    let second = header(&setup.run(&["--scenario", "hello", "two"]));
    assert_ne!(first["id"], second["id"], "a new session each time");
    for new in [&first, &second] {
        // A new session's UUIDv7 time and header time are the same instant.
        let id = uuid::Uuid::parse_str(new["id"].as_str().unwrap()).unwrap();
        let (seconds, _) = id.get_timestamp().expect("v7 timestamp").to_unix();
        let timestamp = new["timestamp"].as_str().unwrap();
        assert!(
            timestamp.starts_with(&iso_seconds(seconds)),
            "{timestamp} vs {id}"
        );
        assert_eq!(new["cwd"], setup.cwd());
    }
    // --continue: the most recent session of this cwd, header unchanged.
    let continued = setup.run(&["--continue", "--scenario", "hello", "three"]);
    assert_eq!(header(&continued), second);
    assert!(check_stream(&continued.stdout).runs[0]
        .final_text()
        .contains("_Prompt 2 in session"));
    // --session by id prefix: that session's header unchanged, and it becomes the latest.
    let prefix = &first["id"].as_str().unwrap()[..13];
    let resumed = setup.run(&["--session", prefix, "--scenario", "hello", "four"]);
    assert_eq!(header(&resumed), first);
    std::thread::sleep(Duration::from_millis(20));
    let continued = setup.run(&["-c", "--scenario", "hello", "five"]);
    assert_eq!(header(&continued), first);
    assert!(check_stream(&continued.stdout).runs[0]
        .final_text()
        .contains("_Prompt 3 in session"));
    // An unknown id fails as pi's does: a message on stderr, exit 1, nothing on stdout.
    let unknown_id = "01a228fb-f8fa-72c2-b06b-c6550b2b460c";
    let refused = setup.run(&["--session", unknown_id, "--scenario", "hello", "six"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(refused.stdout.is_empty());
    assert!(refused
        .stderr
        .contains(&format!("No session found matching '{unknown_id}'")));
    // --continue elsewhere does not pick this cwd's sessions.
    let other = Setup::new();
    let mut command = other.command(&["-c", "--scenario", "hello", "seven"], FAST);
    command.env(STATE_DIR_VAR, setup.state.path());
    let elsewhere = header(&other.run_with(command));
    assert!(elsewhere["id"] != first["id"] && elsewhere["id"] != second["id"]);
}

#[test]
fn flaky_fails_the_first_attempt_and_succeeds_on_an_automatic_retry() {
    let setup = Setup::new();
    let mut first = setup.command(&["--scenario", "flaky", "auto retry"], FAST);
    first.env(ATTEMPT_VAR, "1");
    let failed = check_stream(&setup.run_with(first).stdout);
    let message = &failed.runs[0].assistants[0];
    assert_eq!(message["stopReason"], "error");
    assert!(message["errorMessage"]
        .as_str()
        .unwrap()
        .starts_with("429 "));
    let mut retry = setup.command(&["--scenario", "flaky", "auto retry"], FAST);
    retry.env(ATTEMPT_VAR, "2");
    let played = setup.run_with(retry);
    assert!(played.status.success());
    let succeeded = check_stream(&played.stdout);
    assert_eq!(succeeded.runs[0].assistants[0]["stopReason"], "stop");
    assert!(succeeded.runs[0].final_text().contains("attempt 2"));
}

#[test]
fn flaky_manual_retries_alternate_between_failure_and_success() {
    let setup = Setup::new();
    let outcome = |prompt: &str| {
        let mut command = setup.command(&["--scenario", "flaky", prompt], FAST);
        command.env(ATTEMPT_VAR, "1");
        let stream = check_stream(&setup.run_with(command).stdout);
        let stop_reason = stream.runs[0].assistants[0]["stopReason"]
            .as_str()
            .unwrap()
            .to_owned();
        (stop_reason, stream.runs[0].final_text())
    };
    assert_eq!(outcome("manual").0, "error");
    let (stop_reason, text) = outcome("manual");
    assert_eq!(stop_reason, "stop", "the user's retry succeeds");
    assert!(text.contains("this is attempt 2"), "{text}");
    assert_eq!(outcome("manual").0, "error", "the mark was used up");
    assert_eq!(outcome("another prompt").0, "error", "marks are per prompt");
}

// ---------------------------------------------------------------------------------------------
// Tests: signals and processes (real time)

fn is_text_delta(line: &str) -> bool {
    line.contains(r#""assistantMessageEvent":{"type":"text_delta""#)
}

#[test]
fn slow_streams_a_token_every_300_ms_and_sigterm_exits_143() {
    let setup = Setup::new();
    let mut live = setup.spawn_live(&["--scenario", "slow", "go"], 1.0);
    let first = live.wait_for(Duration::from_secs(5), is_text_delta).0;
    let mut last = first;
    for _ in 0..4 {
        last = live.wait_for(Duration::from_secs(2), is_text_delta).0;
    }
    let mean = (last - first) / 4;
    assert!(
        (Duration::from_millis(250)..Duration::from_millis(450)).contains(&mean),
        "{mean:?} per token"
    );
    let signalled = Instant::now();
    live.signal(Signal::SIGTERM);
    let (status, took) = live.wait_exit(signalled, Duration::from_secs(2));
    assert_eq!(status.code(), Some(143));
    assert!(took < Duration::from_millis(500), "{took:?}");
    let lines = live.drain(Duration::from_secs(1));
    // Nothing torn, and no final events: the stream just stops.
    for line in &lines {
        serde_json::from_str::<Value>(line).expect("whole JSON lines only");
    }
    assert!(!lines
        .iter()
        .any(|line| line.contains(r#"{"type":"agent_end""#)));
}

#[test]
fn sigint_kills_the_agent_at_once() {
    let setup = Setup::new();
    let mut live = setup.spawn_live(&["--scenario", "slow", "go"], 1.0);
    live.wait_for(Duration::from_secs(5), is_text_delta);
    let signalled = Instant::now();
    live.signal(Signal::SIGINT);
    let (status, took) = live.wait_exit(signalled, Duration::from_secs(2));
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}");
    assert!(took < Duration::from_millis(500), "{took:?}");
    let lines = live.drain(Duration::from_secs(1));
    assert!(!lines
        .iter()
        .any(|line| line.contains(r#"{"type":"message_end""#)
            && line.contains(r#""role":"assistant""#)));
}

#[test]
fn sighup_exits_129() {
    let setup = Setup::new();
    let mut live = setup.spawn_live(&["--scenario", "slow", "go"], 1.0);
    live.wait_for(Duration::from_secs(5), is_text_delta);
    let signalled = Instant::now();
    live.signal(Signal::SIGHUP);
    let (status, _) = live.wait_exit(signalled, Duration::from_secs(2));
    assert_eq!(status.code(), Some(129));
}

/// Starts `sleep-tool` and returns the bash tool's PID, read from its first output.
fn start_sleep_tool(setup: &Setup) -> (Live, i32) {
    let mut live = setup.spawn_live(&["--scenario", "sleep-tool", "go"], 1.0);
    let (_, update) = live.wait_for(Duration::from_secs(5), |line| {
        line.starts_with(r#"{"type":"tool_execution_update""#) && line.contains(r#""text":"pid "#)
    });
    let update: Value = serde_json::from_str(&update).unwrap();
    let text = update["partialResult"]["content"][0]["text"]
        .as_str()
        .unwrap();
    let pid = text
        .trim()
        .trim_start_matches("pid ")
        .parse()
        .expect("a pid");
    (live, pid)
}

#[test]
fn sigterm_during_a_tool_kills_its_process_group_and_exits_143() {
    let setup = Setup::new();
    let (mut live, tool) = start_sleep_tool(&setup);
    let (_, group, session) = proc_stat(tool).expect("tool running");
    assert_eq!(
        (group, session),
        (tool, tool),
        "the tool leads its own session"
    );
    assert_ne!(group, live.pid(), "not in the agent's group");
    assert!(
        wait_until(Duration::from_secs(2), || live_group_members(tool).len()
            >= 2),
        "bash and its sleep"
    );
    let signalled = Instant::now();
    live.signal(Signal::SIGTERM);
    let (status, _) = live.wait_exit(signalled, Duration::from_secs(2));
    assert_eq!(status.code(), Some(143));
    assert!(
        wait_until(Duration::from_secs(2), || live_group_members(tool)
            .is_empty()),
        "tool group survived: {:?}",
        live_group_members(tool)
    );
}

#[test]
fn sigint_during_a_tool_leaves_the_tool_running_like_pi() {
    let setup = Setup::new();
    let (mut live, tool) = start_sleep_tool(&setup);
    let signalled = Instant::now();
    live.signal(Signal::SIGINT);
    let (status, _) = live.wait_exit(signalled, Duration::from_secs(2));
    assert_eq!(status.signal(), Some(libc::SIGINT));
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        is_alive(tool),
        "pi's bash tool survives SIGINT (g_sleep_sigint)"
    );
    let _ = killpg(Pid::from_raw(tool), Signal::SIGKILL);
}

#[test]
fn ignore_sigint_shrugs_off_sigint_and_sigterm() {
    let setup = Setup::new();
    let mut live = setup.spawn_live(&["--scenario", "ignore-sigint", "go"], 1.0);
    live.wait_for(Duration::from_secs(5), is_text_delta);
    live.signal(Signal::SIGINT);
    live.signal(Signal::SIGTERM);
    let (after, _) = live.wait_for(Duration::from_secs(2), is_text_delta);
    live.wait_for(Duration::from_secs(2), is_text_delta);
    assert!(after.elapsed() < Duration::from_secs(2));
    assert_eq!(live.child.try_wait().unwrap(), None, "still running");
    live.signal(Signal::SIGKILL);
    let (status, _) = live.wait_exit(Instant::now(), Duration::from_secs(2));
    assert_eq!(status.signal(), Some(libc::SIGKILL));
}

#[test]
fn grandchild_starts_sleepers_in_its_own_group_and_in_the_agents() {
    let setup = Setup::new();
    let mut live = setup.spawn_live(&["--scenario", "grandchild", "go"], 0.1);
    let agent = live.pid();
    let pid_after = |text: &str, marker: &str| -> i32 {
        let start = text.find(marker).expect(marker) + marker.len();
        let digits: String = text[start..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().expect("a pid")
    };
    let (_, line) = live.wait_for(Duration::from_secs(30), |line| {
        line.contains("Streaming slowly")
    });
    let update: Value = serde_json::from_str(&line).unwrap();
    let text = update["message"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    let own_group = pid_after(&text, "with PID ");
    let same_group = pid_after(&text, "and `sleep 300` with PID ");
    assert_eq!(pid_after(&text, "(I am PID "), agent);
    assert_eq!(proc_stat(own_group).map(|stat| stat.1), Some(own_group));
    assert_eq!(proc_stat(same_group).map(|stat| stat.1), Some(agent));
    live.signal(Signal::SIGTERM);
    let (status, _) = live.wait_exit(Instant::now(), Duration::from_secs(2));
    assert_eq!(status.code(), Some(143));
    // They are not tool children: the agent leaves them behind for its client to clean up.
    assert!(is_alive(own_group) && is_alive(same_group));
    kill_marked(&setup.marker);
    assert!(wait_until(Duration::from_secs(2), || !is_alive(own_group)
        && !is_alive(same_group)));
}
