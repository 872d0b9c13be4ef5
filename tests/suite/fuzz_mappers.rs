//! Structured fuzzing of every mapper with proptest: real capture streams, with lines mutated
//! (wrong types for known fields, missing fields, other event types, huge numbers, deep nesting,
//! cut lines, flipped bytes), dropped or repeated, run as one attempt each. Every attempt, its
//! terminal message included, must keep the shared stream's contract
//! (`support/replay.rs`, `attempt_violations`): exactly one terminal message, last; a session
//! header at most once and first; every tool call announced once and ended once, no update or
//! result for a call that is not open, no thought inside a tool call; a `terminal.failed` text
//! that is exactly the assistant deltas; every message's wire line one inert line that reads
//! back as the message. A failing case is shrunk to a small one. The checks' own tests below
//! show each of them failing on a broken stream.
//!
//! `AGENTTY_FUZZ_CASES` attempts per mapper (default 20,000: about 1.4 million mapped lines
//! over the five mappers, some 25–35 s for this file in a debug build on a shared 2-core
//! machine), from proptest's fixed seed per test file (`PROPTEST_RNG_SEED` to vary it).
//!
//! The text rule of `stream_violations` (no passage shown twice in a row) is not checked here:
//! a repeated line legitimately repeats its text. The fixture tests check it on the captures.

use crate::support::captures;
use crate::support::replay;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::Value;

use agentty::config::ProviderSettings;
use agentty::process::{ExitReport, Line};
use agentty::provider::runner::{AttemptMapping, EndedBy};
use agentty::provider::{build_backend, AttemptRequest};
use agentty::stream::{AgentMessage, StopStage};
use replay::{attempt_violations, wire_line_violations};

/// What happens to one line of a capture stream.
#[derive(Debug, Clone)]
enum Edit {
    Keep,
    Drop,
    Repeat,
    /// Cut the line at a point.
    Cut(Index),
    /// Overwrite a few bytes.
    Flip(Vec<(Index, u8)>),
    /// A deeply nested array instead of the line.
    Nest(usize),
    /// Replace one node of the JSON with a hostile value.
    Replace(Index, HostileValue),
    /// Remove one field.
    Remove(Index),
    /// Give the event another type (`None`: an unknown one).
    Retype(Option<Index>),
    /// Wrap one node in `{"wrapped": [node]}`.
    Wrap(Index),
}

#[derive(Debug, Clone, Copy)]
enum HostileValue {
    Null,
    Huge,
    Negative,
    MaxInt,
    LongDigits,
    Bool,
    EmptyArray,
    EmptyObject,
    Escapes,
    WrongPart,
}

impl HostileValue {
    fn value(self) -> Value {
        match self {
            HostileValue::Null => Value::Null,
            HostileValue::Huge => serde_json::json!(1e308),
            HostileValue::Negative => serde_json::json!(-1),
            HostileValue::MaxInt => serde_json::json!(u64::MAX),
            HostileValue::LongDigits => Value::String("9".repeat(400)),
            HostileValue::Bool => Value::Bool(true),
            HostileValue::EmptyArray => serde_json::json!([]),
            HostileValue::EmptyObject => serde_json::json!({}),
            HostileValue::Escapes => Value::String("\u{1b}[2J\u{0}\u{fffd}".into()),
            HostileValue::WrongPart => serde_json::json!({"type": "text", "text": 42}),
        }
    }
}

fn hostile_value() -> impl Strategy<Value = HostileValue> {
    prop_oneof![
        Just(HostileValue::Null),
        Just(HostileValue::Huge),
        Just(HostileValue::Negative),
        Just(HostileValue::MaxInt),
        Just(HostileValue::LongDigits),
        Just(HostileValue::Bool),
        Just(HostileValue::EmptyArray),
        Just(HostileValue::EmptyObject),
        Just(HostileValue::Escapes),
        Just(HostileValue::WrongPart),
    ]
}

/// Most lines pass unchanged, as in a real stream with a few bad lines.
fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        12 => Just(Edit::Keep),
        1 => Just(Edit::Drop),
        1 => Just(Edit::Repeat),
        1 => any::<Index>().prop_map(Edit::Cut),
        1 => prop::collection::vec((any::<Index>(), any::<u8>()), 1..4).prop_map(Edit::Flip),
        1 => (1usize..5000).prop_map(Edit::Nest),
        2 => (any::<Index>(), hostile_value()).prop_map(|(at, value)| Edit::Replace(at, value)),
        1 => any::<Index>().prop_map(Edit::Remove),
        1 => prop::option::weighted(0.8, any::<Index>()).prop_map(Edit::Retype),
        1 => any::<Index>().prop_map(Edit::Wrap),
    ]
}

/// How the agent process ended.
fn ending() -> impl Strategy<Value = (ExitReport, EndedBy)> {
    let exit = (
        prop_oneof![Just(Some(0)), Just(Some(1)), Just(Some(143)), Just(None)],
        prop_oneof![Just(None), Just(Some(9))],
    )
        .prop_map(|(exit_code, signal)| ExitReport {
            exit_code,
            signal,
            ..ExitReport::default()
        });
    let ended_by = prop_oneof![
        2 => Just(EndedBy::Exit),
        1 => Just(EndedBy::UserStop {
            stage: StopStage::Grace,
            elapsed_ms: 5,
        }),
        1 => Just(EndedBy::StoppedForLingering),
    ];
    (exit, ended_by)
}

/// Every node of a JSON value, as a path of keys and indexes.
fn paths(value: &Value, prefix: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    out.push(prefix.clone());
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                prefix.push(PathStep::Key(key.clone()));
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                prefix.push(PathStep::Index(index));
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone)]
enum PathStep {
    Key(String),
    Index(usize),
}

fn node_mut<'a>(value: &'a mut Value, path: &[PathStep]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |node, step| match step {
        PathStep::Key(key) => node.get_mut(key.as_str()),
        PathStep::Index(index) => node.get_mut(*index),
    })
}

/// The lines `edit` makes of `line` (none when it is dropped).
fn apply(edit: &Edit, line: &str, types: &[String]) -> Vec<String> {
    let json_edit = |change: &dyn Fn(&mut Value, &[Vec<PathStep>])| -> Vec<String> {
        let Ok(mut value) = serde_json::from_str::<Value>(line) else {
            return vec![line.to_owned()];
        };
        let mut all = Vec::new();
        paths(&value, &mut Vec::new(), &mut all);
        change(&mut value, &all);
        vec![value.to_string()]
    };
    match edit {
        Edit::Keep => vec![line.to_owned()],
        Edit::Drop => Vec::new(),
        Edit::Repeat => vec![line.to_owned(), line.to_owned()],
        Edit::Cut(at) => {
            let mut cut = at.index(line.len() + 1);
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            vec![line[..cut].to_owned()]
        }
        Edit::Flip(flips) => {
            let mut bytes = line.as_bytes().to_vec();
            for (at, byte) in flips {
                if !bytes.is_empty() {
                    let index = at.index(bytes.len());
                    bytes[index] = *byte;
                }
            }
            vec![String::from_utf8_lossy(&bytes).into_owned()]
        }
        Edit::Nest(depth) => vec![format!("{}{}", "[".repeat(*depth), "]".repeat(depth % 3))],
        Edit::Replace(at, hostile) => json_edit(&|value, all| {
            if let Some(node) = node_mut(value, &all[at.index(all.len())]) {
                *node = hostile.value();
            }
        }),
        Edit::Remove(at) => json_edit(&|value, all| {
            if let Some((PathStep::Key(key), parent)) = all[at.index(all.len())].split_last() {
                if let Some(Value::Object(map)) = node_mut(value, parent) {
                    map.remove(key);
                }
            }
        }),
        Edit::Retype(other) => json_edit(&|value, _| {
            let replacement = match other {
                Some(at) if !types.is_empty() => types[at.index(types.len())].clone(),
                _ => "no_such_type".to_owned(),
            };
            // An ACP update's kind, else a CLI event's type.
            if let Some(kind) = value.pointer_mut(ACP_UPDATE_KIND) {
                *kind = Value::String(replacement);
            } else if let Value::Object(map) = value {
                map.insert("type".into(), Value::String(replacement));
            }
        }),
        Edit::Wrap(at) => json_edit(&|value, all| {
            if let Some(node) = node_mut(value, &all[at.index(all.len())]) {
                let inner = std::mem::take(node);
                *node = serde_json::json!({"wrapped": [inner]});
            }
        }),
    }
}

/// Where an ACP `session/update` names its kind.
const ACP_UPDATE_KIND: &str = "/params/update/sessionUpdate";

/// One attempt: a capture's stream with its lines edited, mapped as the runner maps it.
fn run_case(
    provider: &str,
    settings: &ProviderSettings,
    stream: &[String],
    edits: &[Edit],
    types: &[String],
    (report, ended_by): (ExitReport, EndedBy),
) -> Result<usize, TestCaseError> {
    let backend = build_backend(provider, settings).unwrap();
    let mut mapping = AttemptMapping::new(backend.mapper(&AttemptRequest::default()));
    let mut out = Vec::new();
    let mut mapped = 0;
    for (index, original) in stream.iter().enumerate() {
        let edit = edits.get(index).unwrap_or(&Edit::Keep);
        for text in apply(edit, original, types) {
            let line = Line {
                original_len: text.len(),
                text,
                truncated: false,
            };
            mapping.map_line(&line, &mut out);
            mapped += 1;
        }
    }
    let stopped = matches!(ended_by, EndedBy::UserStop { .. });
    let terminal = mapping.finish(&report, ended_by, String::new(), &mut out);
    // A stop is never reported as anything but a stop, whatever the agent printed.
    prop_assert!(
        !stopped || matches!(terminal, AgentMessage::Cancelled { .. }),
        "{provider}: a stopped attempt ended {terminal:?}"
    );
    out.push(terminal);
    let violations = attempt_violations(&out);
    prop_assert!(
        violations.is_empty(),
        "{provider}: the attempt breaks the shared stream's contract: {violations:#?}\nstream: {out:#?}"
    );
    Ok(mapped)
}

fn fuzz_mapper(provider: &str, cli: &str) {
    let streams: Vec<Vec<String>> = captures::capture_names(cli)
        .iter()
        .map(|name| captures::stdout_lines(cli, name))
        .filter(|lines| !lines.is_empty())
        .collect();
    fuzz_streams(provider, &ProviderSettings::default(), &streams);
}

fn fuzz_streams(provider: &str, settings: &ProviderSettings, streams: &[Vec<String>]) {
    let cases: u32 = std::env::var("AGENTTY_FUZZ_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(20_000);
    let longest = streams.iter().map(Vec::len).max().unwrap_or(0);
    let types: Vec<String> = streams
        .iter()
        .flatten()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|value| {
            value
                .pointer(ACP_UPDATE_KIND)
                .or_else(|| value.get("type"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let mapped = std::cell::Cell::new(0usize);
    let strategy = (
        0..streams.len(),
        prop::collection::vec(edit(), longest),
        ending(),
    );
    let result = runner.run(&strategy, |(stream, edits, ending)| {
        let lines = run_case(provider, settings, &streams[stream], &edits, &types, ending)?;
        mapped.set(mapped.get() + lines);
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{provider}: {failure}");
    }
    eprintln!(
        "{provider}: {cases} mutated attempts, {} lines mapped",
        mapped.get()
    );
}

#[test]
fn the_pi_mapper_keeps_the_stream_rules_on_mutated_captures() {
    fuzz_mapper("pi", "pi");
}

#[test]
fn the_claude_mapper_keeps_the_stream_rules_on_mutated_captures() {
    fuzz_mapper("claude", "claude");
}

#[test]
fn the_codex_mapper_keeps_the_stream_rules_on_mutated_captures() {
    fuzz_mapper("codex", "codex");
}

#[test]
fn the_gemini_mapper_keeps_the_stream_rules_on_mutated_captures() {
    fuzz_mapper("gemini", "gemini");
}

/// The ACP mapper (any ACP agent: here a configured one) on what `gemini --acp` printed
/// (`tests/fixtures/acp/`).
#[test]
fn the_acp_mapper_keeps_the_stream_rules_on_mutated_captures() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp");
    let mut names: Vec<_> = std::fs::read_dir(&fixtures)
        .expect("the ACP fixtures")
        .flatten()
        .map(|entry| entry.path())
        .collect();
    names.sort();
    let streams: Vec<Vec<String>> = names
        .iter()
        .map(|path| {
            std::fs::read_to_string(path)
                .expect("an ACP fixture")
                .lines()
                .filter(|line| !line.trim().is_empty())
                .map(str::to_owned)
                .collect()
        })
        .collect();
    assert!(streams.len() >= 4, "{names:?}");
    let settings = ProviderSettings {
        protocol: Some(agentty::config::Transport::Acp),
        command: Some("/acp/agent".into()),
        ..ProviderSettings::default()
    };
    fuzz_streams("any-acp-agent", &settings, &streams);
}

// ---- The checks fail on broken attempts ----

fn completed() -> AgentMessage {
    AgentMessage::Completed {
        stop_reason: "stop".into(),
        usage: None,
    }
}

fn delta(text: &str) -> AgentMessage {
    AgentMessage::Assistant { delta: text.into() }
}

fn failed(text: &str) -> AgentMessage {
    AgentMessage::Failed(agentty::stream::Failure {
        text: text.into(),
        ..agentty::stream::Failure::default()
    })
}

#[test]
fn a_sound_attempt_passes_the_checks() {
    let tool = AgentMessage::ToolCall {
        id: "t1".into(),
        name: "bash".into(),
        input: serde_json::json!({"command": "printf '\\033[2J'"}),
        parent_id: None,
    };
    let done = AgentMessage::ToolCompleted {
        id: "t1".into(),
        output: "\u{1b}[2J\u{7}".into(),
    };
    let attempt = [
        delta("a\u{1b}]0;x\u{7}"),
        tool,
        done,
        delta("b"),
        failed("a\u{1b}]0;x\u{7}b"),
    ];
    assert_eq!(attempt_violations(&attempt), Vec::<String>::new());
}

#[test]
fn an_attempt_without_a_terminal_message_fails_the_checks() {
    assert_eq!(attempt_violations(&[delta("a")]), ["no terminal message"]);
}

#[test]
fn a_terminal_message_that_is_not_last_fails_the_checks() {
    assert_eq!(
        attempt_violations(&[completed(), delta("a")]),
        ["terminal message at position 0 of 2, not last"]
    );
}

#[test]
fn two_terminal_messages_fail_the_checks() {
    assert_eq!(
        attempt_violations(&[delta("a"), completed(), completed()]),
        ["2 terminal messages: [1, 2]"]
    );
}

#[test]
fn a_failure_text_other_than_the_deltas_fails_the_checks() {
    assert_eq!(
        attempt_violations(&[delta("one "), delta("two"), failed("one")]),
        ["terminal.failed text \"one\" is not the assistant deltas \"one two\""]
    );
}

#[test]
fn a_structure_break_before_the_terminal_fails_the_checks() {
    let update = AgentMessage::ToolUpdate {
        id: "t9".into(),
        output: "x".into(),
    };
    assert_eq!(
        attempt_violations(&[update, completed()]),
        ["update of tool call t9, which is not open"]
    );
}

#[test]
fn a_wire_line_with_raw_control_bytes_or_another_message_fails_the_checks() {
    let message = delta("\u{1b}[2J");
    assert_eq!(
        wire_line_violations(&message.to_json_line(), &message),
        Vec::<String>::new()
    );
    let raw = "{\"type\":\"assistant\",\"delta\":\"\u{1b}[2J\"}";
    let violations = wire_line_violations(raw, &message);
    assert_eq!(
        violations[0],
        format!("raw control character '\\u{{1b}}' in the wire line {raw:?}")
    );
    // JSON does not allow it either.
    assert!(
        violations[1].contains("does not read back"),
        "{violations:?}"
    );
    assert_eq!(violations.len(), 2);
    let other = r#"{"type":"assistant","delta":"[2J"}"#;
    assert_eq!(
        wire_line_violations(other, &message),
        [format!(
            "the wire line {other:?} reads back as {:?}",
            delta("[2J")
        )]
    );
}
