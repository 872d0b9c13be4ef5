//! Structured fuzzing of every mapper: real capture lines, mutated (wrong types for known
//! fields, missing fields, unknown types, huge numbers, deep nesting, cut lines, flipped bytes,
//! shuffled order), must never panic or hang, and the attempt must still end with exactly one
//! terminal message.
//!
//! Runs `AGENTTY_FUZZ_CASES` cases per mapper (default 100,000; the long run in the closing
//! note used 1,000,000), from a fixed seed so a failure is reproducible (`AGENTTY_FUZZ_SEED`).

#[path = "support/captures.rs"]
mod captures;

use agentty::config::ProviderSettings;
use agentty::process::{ExitReport, Line};
use agentty::provider::runner::{AttemptMapping, EndedBy};
use agentty::provider::{build_backend, AttemptRequest};
use agentty::stream::StopStage;
use serde_json::Value;

/// xorshift64*: small, fast, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }
}

fn hostile_value(rng: &mut Rng) -> Value {
    match rng.below(10) {
        0 => Value::Null,
        1 => serde_json::json!(1e308),
        2 => serde_json::json!(-1),
        3 => serde_json::json!(u64::MAX),
        4 => Value::String("9".repeat(400)),
        5 => Value::Bool(true),
        6 => serde_json::json!([]),
        7 => serde_json::json!({}),
        8 => Value::String("\u{1b}[2J\u{0}\u{fffd}".into()),
        _ => serde_json::json!({"type": "text", "text": 42}),
    }
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

fn mutate_line(line: &str, types: &[String], rng: &mut Rng) -> String {
    match rng.below(8) {
        0 => {
            // Cut the line anywhere (on a char boundary).
            let mut cut = rng.below(line.len() + 1);
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line[..cut].to_owned()
        }
        1 => {
            let mut bytes = line.as_bytes().to_vec();
            for _ in 0..=rng.below(4) {
                let index = rng.below(bytes.len());
                if let Some(byte) = bytes.get_mut(index) {
                    *byte = (rng.next() & 0xff) as u8;
                }
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
        2 => format!(
            "{}{}",
            "[".repeat(1 + rng.below(5000)),
            "]".repeat(rng.below(3))
        ),
        _ => {
            let Ok(mut value) = serde_json::from_str::<Value>(line) else {
                return line.to_owned();
            };
            let mut all = Vec::new();
            paths(&value, &mut Vec::new(), &mut all);
            let path = all[rng.below(all.len())].clone();
            match rng.below(4) {
                0 => {
                    if let Some(node) = node_mut(&mut value, &path) {
                        *node = hostile_value(rng);
                    }
                }
                1 => {
                    // Remove a field.
                    if let Some((PathStep::Key(key), parent)) = path.split_last() {
                        if let Some(Value::Object(map)) = node_mut(&mut value, parent) {
                            map.remove(key);
                        }
                    }
                }
                2 => {
                    // Type confusion: another event type, same body.
                    if let Value::Object(map) = &mut value {
                        let replacement = if rng.below(5) == 0 {
                            "no_such_type".to_owned()
                        } else {
                            types[rng.below(types.len())].clone()
                        };
                        map.insert("type".into(), Value::String(replacement));
                    }
                }
                _ => {
                    if let Some(node) = node_mut(&mut value, &path) {
                        let inner = std::mem::take(node);
                        *node = serde_json::json!({"wrapped": [inner]});
                    }
                }
            }
            value.to_string()
        }
    }
}

fn fuzz_mapper(provider: &str, cli: &str) {
    let cases: usize = std::env::var("AGENTTY_FUZZ_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(100_000);
    let seed: u64 = std::env::var("AGENTTY_FUZZ_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or(0x5eed_1234_abcd_0001);
    let backend = build_backend(provider, &ProviderSettings::default()).unwrap();
    let streams: Vec<Vec<String>> = captures::capture_names(cli)
        .iter()
        .map(|name| captures::stdout_lines(cli, name))
        .filter(|lines| !lines.is_empty())
        .collect();
    let types: Vec<String> = streams
        .iter()
        .flatten()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|value| value.get("type").and_then(Value::as_str).map(str::to_owned))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    let mut lines_mapped = 0usize;
    // Each case is one attempt: a capture's stream with some lines mutated, dropped, repeated.
    let mut case = 0;
    while case < cases {
        let stream = &streams[rng.below(streams.len())];
        let mut mapping = AttemptMapping::new(backend.mapper(&AttemptRequest::default()));
        for original in stream {
            let roll = rng.below(10);
            let text = match roll {
                0 => continue,
                1..=3 => {
                    case += 1;
                    mutate_line(original, &types, &mut rng)
                }
                _ => original.clone(),
            };
            let repeats = if rng.below(20) == 0 { 2 } else { 1 };
            for _ in 0..repeats {
                let line = Line {
                    original_len: text.len(),
                    text: text.clone(),
                    truncated: false,
                };
                mapping.map_line(&line, &mut out);
                lines_mapped += 1;
            }
        }
        let report = ExitReport {
            exit_code: [Some(0), Some(1), Some(143), None][rng.below(4)],
            signal: [None, None, Some(9)][rng.below(3)],
            ..ExitReport::default()
        };
        let ended_by = match rng.below(4) {
            0 => EndedBy::UserStop {
                stage: StopStage::Grace,
                elapsed_ms: 5,
            },
            1 => EndedBy::StoppedForLingering,
            _ => EndedBy::Exit,
        };
        let terminal = mapping.finish(&report, ended_by, String::new(), &mut out);
        assert!(terminal.is_terminal());
        assert!(
            out.iter().all(|message| !message.is_terminal()),
            "{provider}: a mapper produced a terminal message"
        );
        out.clear();
    }
    eprintln!("{provider}: {cases} mutated lines in {lines_mapped} mapped lines");
}

#[test]
fn the_pi_mapper_survives_mutated_captures() {
    fuzz_mapper("pi", "pi");
}

#[test]
fn the_claude_mapper_survives_mutated_captures() {
    fuzz_mapper("claude", "claude");
}

#[test]
fn the_codex_mapper_survives_mutated_captures() {
    fuzz_mapper("codex", "codex");
}

#[test]
fn the_gemini_mapper_survives_mutated_captures() {
    fuzz_mapper("gemini", "gemini");
}
