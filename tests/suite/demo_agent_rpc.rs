//! `agentty demo-agent --mode rpc` against pi 0.73.1's RPC captures (protocols/pi/captures/j_rpc_*):
//! the same responses, the same event sequences after `abort`, the same refusal texts.

use crate::support::captures;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

struct Demo {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    raw: mpsc::Receiver<String>,
    _state: tempfile::TempDir,
}

impl Demo {
    fn start(time_scale: &str) -> Demo {
        let state = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentty"))
            .args(["demo-agent", "--mode", "rpc"])
            .env("AGENTTY_DEMO_STATE_DIR", state.path())
            .env("AGENTTY_DEMO_TIME_SCALE", time_scale)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        let (raw_tx, raw) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value = serde_json::from_str(&line).expect("every stdout line is JSON");
                let _ = raw_tx.send(line);
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Demo {
            stdin: child.stdin.take(),
            child,
            lines,
            raw,
            _state: state,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn next(&self) -> Value {
        self.lines
            .recv_timeout(Duration::from_secs(20))
            .expect("a line in time")
    }

    /// Lines up to and including the first that `wanted` accepts.
    fn until(&self, wanted: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let line = self.next();
            let done = wanted(&line);
            seen.push(line);
            if done {
                return seen;
            }
        }
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `type` plus what tells events apart in a capture's timeline: role, stop reason, response
/// command.
fn shape(line: &Value) -> String {
    let kind = line["type"].as_str().unwrap_or("?");
    match kind {
        "response" => format!("response {}", line["command"].as_str().unwrap_or("?")),
        "message_start" | "message_end" => format!(
            "{kind} {} {}",
            line["message"]["role"].as_str().unwrap_or("?"),
            line["message"]["stopReason"].as_str().unwrap_or("")
        ),
        "turn_end" => format!(
            "turn_end {}",
            line["message"]["stopReason"].as_str().unwrap_or("")
        ),
        other => other.to_owned(),
    }
}

fn capture(name: &str) -> Vec<Value> {
    captures::stdout_lines("pi", name)
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn shapes_from(lines: &[Value], first: &str) -> Vec<String> {
    let start = lines
        .iter()
        .position(|line| line["type"] == first)
        .expect("the first event");
    lines[start..]
        .iter()
        .filter(|line| line["type"] != "message_update" && line["type"] != "tool_execution_update")
        .map(shape)
        .collect()
}

#[test]
fn a_prompt_is_acknowledged_then_played_like_j_rpc_basic() {
    let mut demo = Demo::start("0");
    demo.send(r#"{"id":"s1","type":"get_state"}"#);
    let state = demo.next();
    assert_eq!(state["id"], "s1");
    assert_eq!(state["command"], "get_state");
    assert_eq!(state["success"], true);
    assert!(state["data"]["sessionId"].is_string());
    assert!(state["data"]["sessionFile"].is_string());
    assert_eq!(state["data"]["isStreaming"], false);

    demo.send(r#"{"id":"req-1","type":"prompt","message":"Please answer."}"#);
    let played = demo.until(|line| line["type"] == "agent_end");
    let expected = capture("j_rpc_basic");
    let expected: Vec<String> = expected
        .iter()
        .skip_while(|line| line["command"] != "prompt")
        .take_while(|line| line["type"] != "agent_end")
        .filter(|line| line["type"] != "message_update")
        .map(shape)
        .chain(["agent_end".to_owned()])
        .collect();
    let got: Vec<String> = played
        .iter()
        .filter(|line| line["type"] != "message_update")
        .map(shape)
        .collect();
    assert_eq!(got, expected);

    demo.send(r#"{"id":"x1","type":"no_such_command"}"#);
    let unknown = demo.next();
    assert_eq!(
        unknown.get("id"),
        None,
        "pi answers an unknown command without id"
    );
    assert_eq!(unknown["error"], "Unknown command: no_such_command");
    // Byte for byte as pi prints them (field order included).
    let raw: Vec<String> = demo.raw.try_iter().collect();
    assert!(raw.iter().any(|line| line
        .starts_with(r#"{"id":"req-1","type":"response","command":"prompt","success":true}"#)));
    assert!(raw.iter().any(|line| line
        == r#"{"type":"response","command":"no_such_command","success":false,"error":"Unknown command: no_such_command"}"#));
    demo.send("this is not json");
    let parse = demo.next();
    assert_eq!(parse["command"], "parse");
    assert_eq!(parse["success"], false);
    assert!(parse["error"]
        .as_str()
        .unwrap()
        .starts_with("Failed to parse command: "));
}

#[test]
fn abort_during_a_tool_ends_like_j_rpc_abort_tool_and_kills_the_tool() {
    let mut demo = Demo::start("0");
    demo.send(r#"{"id":"req-1","type":"prompt","message":"run the sleep-tool"}"#);
    let before = demo.until(|line| {
        line["type"] == "tool_execution_update"
            && line["partialResult"]["content"][0]["text"]
                .as_str()
                .is_some_and(|text| text.starts_with("pid "))
    });
    let tool_pid: i32 = before.last().unwrap()["partialResult"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .trim()
        .strip_prefix("pid ")
        .unwrap()
        .parse()
        .unwrap();
    demo.send(r#"{"id":"ab1","type":"abort"}"#);
    let after = demo.until(|line| line["type"] == "response");
    let expected = shapes_from(&capture("j_rpc_abort_tool"), "tool_execution_end");
    let got = shapes_from(&after, "tool_execution_end");
    assert_eq!(got, expected);
    let end = after
        .iter()
        .find(|line| line["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["isError"], true);
    assert_eq!(end["result"]["content"][0]["text"], "Command aborted");
    assert_eq!(after.last().unwrap()["id"], "ab1");
    // The tool's process group is gone (bash in its own session, like pi's).
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(tool_pid), None).is_err(),
        "the tool's bash {tool_pid} is gone"
    );
}

#[test]
fn a_prompt_while_streaming_needs_a_streaming_behavior_and_queues_like_j_rpc_abort() {
    let mut demo = Demo::start("0.5");
    demo.send(r#"{"id":"req-1","type":"prompt","message":"be slow"}"#);
    demo.until(|line| line["assistantMessageEvent"]["type"] == "text_delta");
    demo.send(r#"{"id":"p2","type":"prompt","message":"while streaming, no streamingBehavior"}"#);
    demo.send(
        r#"{"id":"p3","type":"prompt","message":"queued follow-up","streamingBehavior":"followUp"}"#,
    );
    demo.send(r#"{"id":"p4","type":"steer","message":"a steering message"}"#);
    let replies = demo.until(|line| line["id"] == "p4");
    let replies: Vec<&Value> = replies
        .iter()
        .filter(|line| line["type"] != "message_update")
        .collect();
    let expected = capture("j_rpc_abort");
    let refusal = expected.iter().find(|line| line["id"] == "p2").unwrap();
    assert_eq!(*replies[0], *refusal);
    let queue_updates: Vec<&Value> = expected
        .iter()
        .filter(|line| line["type"] == "queue_update")
        .collect();
    let got_updates: Vec<&&Value> = replies
        .iter()
        .filter(|line| line["type"] == "queue_update")
        .collect();
    assert_eq!(got_updates.len(), queue_updates.len());
    let raw: Vec<String> = demo.raw.try_iter().collect();
    let first_update = captures::stdout_lines("pi", "j_rpc_abort")
        .into_iter()
        .find(|line| line.contains("\"queue_update\""))
        .unwrap();
    assert!(raw.contains(&first_update), "{first_update} in {raw:#?}");
    assert_eq!(*got_updates[1], queue_updates[1]);
    demo.send(r#"{"id":"ab1","type":"abort"}"#);
    let aborted = demo.until(|line| line["id"] == "ab1");
    let message_end = aborted
        .iter()
        .find(|line| line["type"] == "message_end")
        .unwrap();
    assert_eq!(message_end["message"]["stopReason"], "aborted");
    assert_eq!(
        message_end["message"]["errorMessage"],
        "Request was aborted"
    );
    assert_eq!(aborted[aborted.len() - 2]["type"], "agent_end");
}

#[test]
fn stdin_closed_ends_the_agent_with_status_0_even_mid_turn() {
    let mut demo = Demo::start("0.5");
    demo.send(r#"{"id":"req-1","type":"prompt","message":"be slow"}"#);
    demo.until(|line| line["assistantMessageEvent"]["type"] == "text_delta");
    demo.stdin.take();
    let status = demo.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}
