//! Fuzz of the log reader: logs of random conversations, with lines torn (and, as an older
//! agentty did, the next entry glued to the fragment), invalid UTF-8 put into lines, oversized
//! and garbage lines inserted, and the header damaged. Whatever is done to them, every line
//! left whole is read back in order, the summary agrees with the entries, no turn id read is
//! above the summary's last turn, and a header whose provider and working directory survived
//! is found (and any header at all when the backup copy follows it). `AGENTTY_FUZZ_CASES` sets the number of logs (default 3,000).

use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use super::read::{lines_of, read_entries, summarise};
use super::{LogEntry, LoggedOutcome};
use crate::orchestrator::TurnOutcome;
use crate::stream::AgentMessage;

/// The line limit in the fuzz: small, so that oversized lines cost nothing.
const MAX: usize = 400;

/// What is done to one line of the log.
#[derive(Debug, Clone)]
enum Damage {
    None,
    /// Cut at this fraction of its length; the next line is glued to the fragment (or, for
    /// the last line, the log ends there).
    Torn(f64),
    /// Bytes that are not UTF-8 put at this fraction of its length.
    InvalidUtf8(f64, Vec<u8>),
    /// An oversized line of this length (over the limit) inserted before it.
    OversizedBefore(usize),
    /// A line of random bytes inserted before it.
    GarbageBefore(Vec<u8>),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        6 => Just(Damage::None),
        1 => (0.0..1.0f64).prop_map(Damage::Torn),
        1 => (0.0..1.0f64, prop::collection::vec(0x80u8..=0xff, 1..4))
            .prop_map(|(at, bytes)| Damage::InvalidUtf8(at, bytes)),
        1 => (MAX + 1..3 * MAX).prop_map(Damage::OversizedBefore),
        1 => prop::collection::vec(any::<u8>().prop_filter("one line", |b| *b != b'\n'), 0..60)
            .prop_map(Damage::GarbageBefore),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,20}",
        "\\PC{0,12}",
        Just(r#"{"kind":"turn","turn":99}"#.to_owned()),
        Just("line\nbreak \"quoted\" \\".to_owned()),
    ]
}

/// The entries of a random conversation after its header.
fn conversation() -> impl Strategy<Value = Vec<LogEntry>> {
    prop::collection::vec(
        (
            text(),
            prop::collection::vec(text(), 0..3),
            0..4u8,
            any::<bool>(),
        ),
        1..7,
    )
    .prop_map(|turns| {
        let mut entries = Vec::new();
        for (index, (prompt, deltas, end, session)) in turns.into_iter().enumerate() {
            let turn = index as u64 + 1;
            entries.push(LogEntry::Turn {
                turn,
                prompt,
                at_ms: Some(turn * 100),
            });
            for delta in deltas {
                entries.push(LogEntry::Message {
                    turn,
                    attempt: 1,
                    message: AgentMessage::Assistant { delta },
                    at_ms: None,
                });
            }
            let outcome = match end {
                0 => None,
                1 => Some(TurnOutcome::Completed),
                2 => Some(TurnOutcome::Cancelled),
                _ => Some(TurnOutcome::Failed {
                    reason: crate::stream::FailureReason::AgentError,
                    message: "boom".into(),
                }),
            };
            if let Some(outcome) = outcome {
                entries.push(LogEntry::TurnEnded {
                    turn,
                    outcome: LoggedOutcome::Outcome(outcome),
                    at_ms: None,
                });
            }
            if session {
                entries.push(LogEntry::Session {
                    session_id: Some(format!("s-{turn}")),
                });
            }
        }
        entries
    })
}

fn header() -> LogEntry {
    LogEntry::Header(super::LogHeader {
        version: 2,
        provider: "demo".into(),
        started_at_ms: 7,
        cwd: "/p".into(),
        conversation_id: Some("abcdef12-0000".into()),
        origin: super::Origin::Chat,
        transport: Some(crate::config::Transport::Acp),
        settings: vec![crate::provider::AgentSetting::Model("m".into())],
    })
}

fn at(fraction: f64, len: usize) -> usize {
    ((fraction * len as f64) as usize).min(len)
}

/// The damaged log, and the entries of the lines left whole (in order).
fn build(entries: &[LogEntry], damages: &[Damage]) -> (Vec<u8>, Vec<LogEntry>) {
    let mut log = Vec::new();
    let mut whole = Vec::new();
    let mut glue_next = false;
    for (entry, damage) in entries.iter().zip(damages.iter().cycle()) {
        let line = serde_json::to_vec(entry).unwrap();
        let glued = std::mem::take(&mut glue_next);
        match damage {
            Damage::OversizedBefore(len) if !glued => {
                log.extend(std::iter::repeat_n(b'x', *len));
                log.push(b'\n');
            }
            Damage::GarbageBefore(bytes) if !glued => {
                log.extend_from_slice(bytes);
                log.push(b'\n');
            }
            _ => {}
        }
        match damage {
            Damage::Torn(fraction) => {
                log.extend_from_slice(&line[..at(*fraction, line.len())]);
                glue_next = true;
            }
            Damage::InvalidUtf8(fraction, bytes) => {
                let cut = at(*fraction, line.len());
                log.extend_from_slice(&line[..cut]);
                log.extend_from_slice(bytes);
                log.extend_from_slice(&line[cut..]);
                log.push(b'\n');
            }
            _ => {
                log.extend_from_slice(&line);
                log.push(b'\n');
                whole.push(entry.clone());
            }
        }
    }
    (log, whole)
}

fn is_subsequence(wanted: &[LogEntry], read: &[LogEntry]) -> bool {
    let mut read = read.iter();
    wanted
        .iter()
        .all(|entry| read.any(|candidate| candidate == entry))
}

fn check(
    entries: Vec<LogEntry>,
    damages: Vec<Damage>,
    header_damage: Option<(f64, u8)>,
    with_backup: bool,
) -> Result<(), TestCaseError> {
    let mut header_line = serde_json::to_vec(&header()).unwrap();
    if let Some((fraction, byte)) = header_damage {
        let index = at(fraction, header_line.len() - 1);
        header_line[index] = byte;
    }
    let header_text = String::from_utf8_lossy(&header_line).into_owned();
    let header_kept = header_text.contains(r#""provider":"demo""#)
        && header_text.contains(r#""cwd":"/p""#)
        && (header_text.starts_with(r#"{"kind":"#) || header_text.contains(r#""header""#));
    // A damage that leaves valid JSON saying something else cannot be told from a header.
    let changed_but_whole = serde_json::from_slice::<LogEntry>(&header_line)
        .is_ok_and(|read| matches!(read, LogEntry::Header(_)) && read != header());
    let header_found = header_kept || (with_backup && !changed_but_whole);
    let backup_line = if with_backup {
        [serde_json::to_vec(&header()).unwrap().as_slice(), b"\n"].concat()
    } else {
        Vec::new()
    };
    let (body, whole) = build(&entries, &damages);
    let log = [
        header_line.as_slice(),
        b"\n",
        backup_line.as_slice(),
        body.as_slice(),
    ]
    .concat();

    let read = read_entries(lines_of(&log, MAX)).unwrap();
    let body_read: Vec<LogEntry> = read
        .iter()
        .filter(|entry| !matches!(entry, LogEntry::Header(_)))
        .cloned()
        .collect();
    prop_assert!(
        is_subsequence(&whole, &body_read),
        "a whole line was lost\nwhole: {whole:#?}\nread: {body_read:#?}"
    );
    let summary = summarise(lines_of(&log, MAX), Path::new("/s/7-abcdef12.jsonl"), 0);
    let turns_read = body_read
        .iter()
        .filter(|entry| matches!(entry, LogEntry::Turn { .. }))
        .count();
    if header_found && turns_read > 0 {
        let summary = summary.as_ref().expect("a summary");
        prop_assert_eq!(&summary.provider, "demo");
        prop_assert_eq!(&summary.cwd, "/p");
    }
    if let Some(summary) = summary {
        prop_assert_eq!(summary.turns, turns_read);
        let highest = body_read
            .iter()
            .filter_map(super::read::turn_of)
            .max()
            .unwrap_or(0);
        prop_assert!(
            summary.last_turn >= highest,
            "turn {highest} read, but the next turn would be {}",
            summary.last_turn + 1
        );
    }
    Ok(())
}

#[test]
fn the_log_reader_keeps_every_whole_line_of_a_damaged_log() {
    let cases: u32 = std::env::var("AGENTTY_FUZZ_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(3_000);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (
        conversation(),
        prop::collection::vec(damage(), 1..12),
        prop::option::weighted(
            0.3,
            (
                0.0..1.0f64,
                any::<u8>().prop_filter("one line", |b| *b != b'\n'),
            ),
        ),
        any::<bool>(),
    );
    if let Err(failure) = runner.run(
        &strategy,
        |(entries, damages, header_damage, with_backup)| {
            check(entries, damages, header_damage, with_backup)
        },
    ) {
        panic!("{failure}");
    }
}
