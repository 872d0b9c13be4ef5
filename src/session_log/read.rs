//! Reading session logs back, whatever a crash or a disk left in them.
//!
//! A log is read line by line, and a line that cannot be read costs only itself: a torn line
//! (agentty killed mid-write), invalid UTF-8 or broken JSON is skipped and reading goes on; a
//! line longer than [`MAX_LOG_LINE`] is skipped without being held in memory. What can be saved
//! is: invalid UTF-8 inside a line is read as U+FFFD, an entry glued behind a torn fragment
//! (an older agentty appended to a torn log without ending the line) is found again, and a
//! header damaged beyond reading is replaced by its backup copy on the second line (as a file
//! system keeps a backup superblock), or, in a log written before the backup, gives what its
//! fields still say. Turn ids are taken from every line that
//! names one, even a damaged one, so a resumed conversation never numbers a turn twice.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use super::raw::INLINE_RAW_PREFIX;
use super::{LogEntry, LogHeader, Origin};
use crate::orchestrator::TurnId;
use crate::provider::{settings_overridden, AgentSetting};
use crate::stream::AgentMessage;

/// The longest log line read: eight of the longest agent lines (a message made of one is at
/// most that long, escaped). A longer line is skipped, not held.
pub(crate) const MAX_LOG_LINE: usize = 8 * crate::process::DEFAULT_MAX_LINE;

/// The longest header line read where only the header is wanted (its longest field is a path).
pub(crate) const MAX_HEADER_LINE: u64 = 64 * 1024;

/// How every entry's line starts: serde writes the enum tag first.
const ENTRY_START: &[u8] = br#"{"kind":""#;

/// What `--resume` and the conversation picker know of a conversation, from its log.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationSummary {
    pub(crate) path: PathBuf,
    pub id: String,
    pub provider: String,
    pub(crate) cwd: String,
    pub(crate) origin: Origin,
    pub(crate) started_at_ms: u64,
    /// When the log was last written.
    pub(crate) last_active_ms: u64,
    pub(crate) first_prompt: String,
    /// The prompts after the first (at most `MAX_SEARCHED_PROMPTS`), for `/resume`'s filter.
    pub(crate) later_prompts: Vec<String>,
    pub turns: usize,
    /// The highest turn id in the log, in any line that names one (a resumed conversation
    /// numbers its turns on from it).
    pub last_turn: TurnId,
    /// The agent session the next turn continues.
    pub session_id: Option<String>,
    /// The settings the conversation started with, and over them those the user chose in it
    /// (the last of each kind), to set again.
    pub(crate) settings: Vec<AgentSetting>,
    /// How agentty talked to the agent (logs written before it was kept: unknown).
    pub(crate) transport: Option<crate::config::Transport>,
    /// Turns that completed.
    pub(crate) completed_turns: usize,
    /// The last rewind took the agent's conversation back to before its first prompt (and no
    /// prompt was sent since).
    pub(crate) rewound_to_start: bool,
}

/// A conversation of `provider` with one completed turn, for tests.
#[cfg(test)]
pub(crate) fn tests_summary(provider: &str) -> ConversationSummary {
    ConversationSummary {
        path: PathBuf::from("/s/c.jsonl"),
        id: "c0ffee00-0000".into(),
        provider: provider.into(),
        cwd: "/p".into(),
        origin: Origin::Chat,
        started_at_ms: 0,
        last_active_ms: 0,
        first_prompt: "hello".into(),
        later_prompts: Vec::new(),
        turns: 1,
        last_turn: 1,
        session_id: None,
        settings: Vec::new(),
        transport: None,
        completed_turns: 1,
        rewound_to_start: false,
    }
}

/// Prompts of a conversation kept for `/resume`'s filter (a long conversation stays cheap).
const MAX_SEARCHED_PROMPTS: usize = 200;

impl ConversationSummary {
    /// Whether `query` names this conversation (a prefix of its id or of its file name).
    pub(crate) fn is_named(&self, query: &str) -> bool {
        let query = query.trim();
        !query.is_empty()
            && (self.id.starts_with(query)
                || self
                    .path
                    .file_stem()
                    .and_then(|stem| stem.to_str())
                    .is_some_and(|stem| stem.starts_with(query)))
    }
}

/// One line of a log as read.
#[derive(Debug, PartialEq)]
pub(crate) enum LogLine<'a> {
    /// A whole line, without its `\n` (the last line may lack one: torn).
    Line(&'a [u8]),
    /// A line longer than the limit, skipped.
    Oversized,
}

/// Splits a log into lines of at most `max` bytes; a longer line is passed over without being
/// kept, so memory stays at one line of the limit whatever the file holds.
pub(crate) struct LogLines<R> {
    reader: R,
    max: usize,
    line: Vec<u8>,
}

impl<R: BufRead> LogLines<R> {
    pub(crate) fn new(reader: R, max: usize) -> Self {
        Self {
            reader,
            max,
            line: Vec::new(),
        }
    }

    pub(crate) fn next_line(&mut self) -> std::io::Result<Option<LogLine<'_>>> {
        self.line.clear();
        let mut oversized = false;
        let mut read_any = false;
        loop {
            let buffer = match self.reader.fill_buf() {
                Ok(buffer) => buffer,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            if buffer.is_empty() {
                break;
            }
            read_any = true;
            let (chunk, ends_line) = match memchr::memchr(b'\n', buffer) {
                Some(at) => (&buffer[..at], true),
                None => (buffer, false),
            };
            if !oversized {
                if self.line.len() + chunk.len() > self.max {
                    oversized = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            let used = chunk.len() + usize::from(ends_line);
            self.reader.consume(used);
            if ends_line {
                break;
            }
        }
        Ok(match (read_any, oversized) {
            (false, _) => None,
            (true, true) => Some(LogLine::Oversized),
            (true, false) => Some(LogLine::Line(&self.line)),
        })
    }
}

/// Opens a log for reading: a regular file only (a FIFO named like a log must not block).
fn open_log(path: &Path) -> std::io::Result<LogLines<BufReader<File>>> {
    let file = crate::files::open_regular(path)?;
    Ok(LogLines::new(BufReader::new(file), MAX_LOG_LINE))
}

/// Whether a log line is an agent's raw line, inline as logs written before the sidecar hold
/// them (large, and not needed to summarise or resume): skipped unparsed.
fn is_raw_line(line: &[u8]) -> bool {
    line.starts_with(INLINE_RAW_PREFIX)
}

/// The entry a line holds, saving what can be saved (see the module's doc).
pub(crate) fn parse_entry(line: &[u8]) -> Option<LogEntry> {
    if let Some(entry) = parse_whole(line) {
        return Some(entry);
    }
    // A fragment with an entry glued behind it: the entry starts where a tag does (inside a
    // JSON string the quotes would be escaped, so this is an entry's start).
    memchr::memmem::find_iter(line, ENTRY_START)
        .filter(|at| *at > 0)
        .find_map(|at| parse_whole(&line[at..]))
}

fn parse_whole(line: &[u8]) -> Option<LogEntry> {
    match serde_json::from_slice(line) {
        Ok(entry) => Some(entry),
        Err(_) if std::str::from_utf8(line).is_err() => {
            serde_json::from_str(&String::from_utf8_lossy(line)).ok()
        }
        Err(_) => None,
    }
}

/// The turn id a line names, even a line too damaged to parse (`"turn":N`).
fn turn_named_in(line: &[u8]) -> Option<TurnId> {
    const KEY: &[u8] = br#""turn":"#;
    memchr::memmem::find_iter(line, KEY)
        .filter_map(|at| {
            let digits: Vec<u8> = line[at + KEY.len()..]
                .iter()
                .take_while(|byte| byte.is_ascii_digit())
                .copied()
                .collect();
            std::str::from_utf8(&digits).ok()?.parse().ok()
        })
        .max()
}

pub(super) fn turn_of(entry: &LogEntry) -> Option<TurnId> {
    match entry {
        LogEntry::Turn { turn, .. }
        | LogEntry::Images { turn, .. }
        | LogEntry::Message { turn, .. }
        | LogEntry::Raw { turn, .. }
        | LogEntry::TurnEnded { turn, .. }
        | LogEntry::Undone { turn, .. }
        | LogEntry::TurnCheckpointed { turn, .. }
        | LogEntry::Compaction { turn, .. } => Some(*turn),
        LogEntry::Rewound { rewind, .. } => Some(rewind.turn),
        LogEntry::Header(_) | LogEntry::Session { .. } | LogEntry::Setting { .. } => None,
    }
}

/// Reads the header from a log's first line. A damaged one (a flipped byte, invalid UTF-8)
/// gives what its fields still say, each read on its own; without a provider and a working
/// directory it is not a session log (a conversation is resumed only under both).
pub(crate) fn parse_header(line: &[u8], path: &Path) -> Option<LogHeader> {
    if let Some(header) = parse_whole(line).and_then(as_header) {
        return Some(header);
    }
    let text = String::from_utf8_lossy(line);
    // Some trace of a log entry, so that a raw agent log is not taken for a damaged one.
    if !(text.starts_with(r#"{"kind":"#) || text.contains(r#""header""#)) {
        return None;
    }
    let field = |name: &str| -> Option<serde_json::Value> {
        let key = format!("\"{name}\":");
        let at = text.find(&key)? + key.len();
        serde_json::Deserializer::from_str(&text[at..])
            .into_iter::<serde_json::Value>()
            .next()?
            .ok()
    };
    let text_field = |name: &str| field(name)?.as_str().map(str::to_owned);
    let provider = text_field("provider")?;
    let cwd = text_field("cwd")?;
    let conversation_id = text_field("conversation_id");
    let started_at_ms = field("started_at_ms")
        .and_then(|value| value.as_u64())
        .or_else(|| started_at_from_name(path))
        .unwrap_or(0);
    let version = field("version")
        .and_then(|value| value.as_u64())
        .map(|version| version as u32)
        // Conversation ids came with version 2.
        .unwrap_or(if conversation_id.is_some() { 2 } else { 1 });
    let origin = field("origin")
        .and_then(|value| serde_json::from_value(value).ok())
        .unwrap_or_default();
    let transport = field("transport").and_then(|value| serde_json::from_value(value).ok());
    let settings = field("settings")
        .and_then(|value| serde_json::from_value(value).ok())
        .unwrap_or_default();
    tracing::warn!(log = %path.display(), "session log header damaged; read field by field");
    Some(LogHeader {
        version,
        provider,
        started_at_ms,
        cwd,
        conversation_id,
        origin,
        transport,
        settings,
    })
}

/// A log's header, from its first line or from the backup on its second, and the second line
/// when it was read but is not the backup (a log written before the backup), for the caller
/// to read as an entry.
struct HeaderRead {
    header: Option<LogHeader>,
    held_line: Option<Vec<u8>>,
}

fn as_header(entry: LogEntry) -> Option<LogHeader> {
    match entry {
        LogEntry::Header(header) => Some(header),
        _ => None,
    }
}

fn read_header<R: BufRead>(lines: &mut LogLines<R>, path: &Path) -> std::io::Result<HeaderRead> {
    let first = match lines.next_line()? {
        None => {
            return Ok(HeaderRead {
                header: None,
                held_line: None,
            })
        }
        Some(LogLine::Line(line)) => {
            // Read as it is, not with damaged bytes replaced: those are what the backup is for.
            if let Some(header) = serde_json::from_slice(line).ok().and_then(as_header) {
                return Ok(HeaderRead {
                    header: Some(header),
                    held_line: None,
                });
            }
            Some(line.to_vec())
        }
        Some(LogLine::Oversized) => None,
    };
    let held_line = match lines.next_line()? {
        Some(LogLine::Line(line)) => {
            if let Some(header) = parse_whole(line).and_then(as_header) {
                tracing::warn!(log = %path.display(), "session log header damaged; read its backup");
                return Ok(HeaderRead {
                    header: Some(header),
                    held_line: None,
                });
            }
            Some(line.to_vec())
        }
        _ => None,
    };
    Ok(HeaderRead {
        header: first.and_then(|line| parse_header(&line, path)),
        held_line,
    })
}

/// `<start ms>-<id>.jsonl`: the start time a log's name carries.
fn started_at_from_name(path: &Path) -> Option<u64> {
    path.file_stem()?.to_str()?.split('-').next()?.parse().ok()
}

/// Summarises one log; `None` when it is not a session log or holds no prompt.
pub fn read_summary(path: &Path) -> Option<ConversationSummary> {
    let lines = open_log(path).ok()?;
    let last_active_ms = std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |elapsed| elapsed.as_millis() as u64);
    summarise(lines, path, last_active_ms)
}

/// [`read_summary`] of the log `path` read through `lines`.
pub(crate) fn summarise<R: BufRead>(
    mut lines: LogLines<R>,
    path: &Path,
    last_active_ms: u64,
) -> Option<ConversationSummary> {
    let HeaderRead { header, held_line } = read_header(&mut lines, path).ok()?;
    let header = header?;
    let mut summary = ConversationSummary {
        id: header.conversation_id.unwrap_or_else(|| {
            path.file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
        path: path.to_path_buf(),
        provider: header.provider,
        cwd: header.cwd,
        origin: header.origin,
        started_at_ms: header.started_at_ms,
        last_active_ms,
        first_prompt: String::new(),
        later_prompts: Vec::new(),
        turns: 0,
        last_turn: 0,
        session_id: None,
        settings: header.settings,
        transport: header.transport,
        completed_turns: 0,
        rewound_to_start: false,
    };
    let mut first_turn = None;
    let mut tracker = SessionTracker::new(header.version);
    let mut see_line = |line: &[u8]| {
        if is_raw_line(line) {
            summary.last_turn = summary.last_turn.max(turn_named_in(line).unwrap_or(0));
            return;
        }
        let Some(entry) = parse_entry(line) else {
            summary.last_turn = summary.last_turn.max(turn_named_in(line).unwrap_or(0));
            return;
        };
        match &entry {
            LogEntry::Turn { prompt, turn, .. } => {
                if summary.turns == 0 {
                    summary.first_prompt = prompt.clone();
                } else if summary.later_prompts.len() < MAX_SEARCHED_PROMPTS {
                    summary.later_prompts.push(prompt.clone());
                }
                summary.turns += 1;
                first_turn.get_or_insert(*turn);
                summary.rewound_to_start = false;
            }
            LogEntry::TurnEnded { outcome, .. }
                if outcome.outcome() == crate::orchestrator::TurnOutcome::Completed =>
            {
                summary.completed_turns += 1;
            }
            LogEntry::Rewound { rewind, .. } if matches!(rewind.conversation, Some(Ok(()))) => {
                summary.rewound_to_start =
                    !rewind.undone && first_turn.is_some_and(|first| rewind.turn <= first);
            }
            _ => {}
        }
        summary.last_turn = summary.last_turn.max(turn_of(&entry).unwrap_or(0));
        if let LogEntry::Setting { setting, .. } = &entry {
            summary.settings =
                settings_overridden(std::mem::take(&mut summary.settings), [setting.clone()]);
        }
        tracker.see(&entry);
    };
    if let Some(line) = held_line {
        see_line(&line);
    }
    // A read error part-way (a bad sector) ends the summary with what was read.
    while let Ok(Some(line)) = lines.next_line() {
        if let LogLine::Line(line) = line {
            see_line(line);
        }
    }
    summary.session_id = tracker.session_id;
    (summary.turns > 0).then_some(summary)
}

/// Every conversation in `dir`, the most recently active first.
pub fn list_conversations(dir: &Path) -> Vec<ConversationSummary> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<ConversationSummary> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "jsonl")
        })
        .filter_map(|path| read_summary(&path))
        .collect();
    found.sort_by(|a, b| (b.last_active_ms, &b.path).cmp(&(a.last_active_ms, &a.path)));
    found
}

/// The most recent session log in `dir` (by name, which starts with the start time).
pub fn latest_session_log(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "jsonl")
        })
        .max()
}

/// Reads back what a session log shows: every entry but the agent's raw lines, which a log
/// written before the sidecar holds inline and which are skipped by their first bytes without
/// being parsed, so memory follows the transcript, not the raw log (`session_log::raw` reads
/// them). Lines that cannot be read are skipped (see the module's doc).
pub fn read_session_log(path: &Path) -> std::io::Result<Vec<LogEntry>> {
    read_entries(open_log(path)?)
}

pub(crate) fn read_entries<R: BufRead>(mut lines: LogLines<R>) -> std::io::Result<Vec<LogEntry>> {
    let HeaderRead { header, held_line } = read_header(&mut lines, Path::new(""))?;
    let mut entries: Vec<LogEntry> = header.map(LogEntry::Header).into_iter().collect();
    let mut read_line = |line: &[u8]| {
        if is_raw_line(line) {
            return;
        }
        match parse_entry(line) {
            // The header's backup, or a stray copy: the header was read above.
            Some(LogEntry::Raw { .. } | LogEntry::Header(_)) | None => {}
            Some(entry) => entries.push(entry),
        }
    };
    if let Some(line) = held_line {
        read_line(&line);
    }
    while let Some(line) = lines.next_line()? {
        if let LogLine::Line(line) = line {
            read_line(line);
        }
    }
    Ok(entries)
}

/// The lines of a log held in memory (tests), read through a small buffer so that lines
/// cross buffer ends.
#[cfg(test)]
pub(crate) fn lines_of(bytes: &[u8], max: usize) -> LogLines<BufReader<&[u8]>> {
    LogLines::new(BufReader::with_capacity(64, bytes), max)
}

/// Follows which agent session a log's next turn continues.
pub(super) struct SessionTracker {
    version: u32,
    pub(super) session_id: Option<String>,
}

impl SessionTracker {
    pub(super) fn new(version: u32) -> Self {
        Self {
            version,
            session_id: None,
        }
    }

    pub(super) fn see(&mut self, entry: &LogEntry) {
        match entry {
            // Since version 2 the orchestrator logs the session to continue only once an
            // attempt completed or was stopped: a failed attempt's session is never continued.
            LogEntry::Session { session_id } => self.session_id = session_id.clone(),
            LogEntry::Message {
                message: AgentMessage::SessionStarted { session_id, .. },
                ..
            } if self.version < 2 => self.session_id = session_id.clone(),
            LogEntry::Message {
                message: AgentMessage::SessionResumed { session_id, .. },
                ..
            } if self.version < 2 => self.session_id = Some(session_id.clone()),
            _ => {}
        }
    }
}

/// The agent session to continue from a log's entries.
#[cfg(test)]
pub(crate) fn last_session_id(entries: &[LogEntry]) -> Option<String> {
    let version = match entries.first() {
        Some(LogEntry::Header(header)) => header.version,
        _ => 1,
    };
    let mut tracker = SessionTracker::new(version);
    for entry in entries {
        tracker.see(entry);
    }
    tracker.session_id
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_lines(bytes: &[u8], max: usize) -> Vec<Option<Vec<u8>>> {
        let mut lines = lines_of(bytes, max);
        let mut out = Vec::new();
        while let Some(line) = lines.next_line().unwrap() {
            out.push(match line {
                LogLine::Line(line) => Some(line.to_vec()),
                LogLine::Oversized => None,
            });
        }
        out
    }

    #[test]
    fn lines_are_split_and_an_oversized_one_is_skipped_whole() {
        let long = "x".repeat(300);
        let text = format!("one\n{long}\ntwo\nlast-without-newline");
        assert_eq!(
            all_lines(text.as_bytes(), 100),
            [
                Some(b"one".to_vec()),
                None,
                Some(b"two".to_vec()),
                Some(b"last-without-newline".to_vec())
            ]
        );
        assert_eq!(all_lines(b"", 100), Vec::<Option<Vec<u8>>>::new());
        assert_eq!(all_lines(b"\n\n", 100), [Some(vec![]), Some(vec![])]);
    }

    #[test]
    fn an_entry_glued_behind_a_torn_fragment_is_found_again() {
        let line = br#"{"kind":"turn_ended","turn":3,"outcome":{"ki{"kind":"turn","turn":4,"prompt":"next"}"#;
        assert!(matches!(
            parse_entry(line),
            Some(LogEntry::Turn { turn: 4, prompt, .. }) if prompt == "next"
        ));
        assert_eq!(turn_named_in(line), Some(4));
        assert_eq!(turn_named_in(br#"{"kind":"turn","turn":17,"pro"#), Some(17));
        assert_eq!(parse_entry(b"{\"kind\":\"tu"), None);
    }

    #[test]
    fn invalid_utf8_inside_a_line_is_read_as_replacement_characters() {
        let mut line = br#"{"kind":"turn","turn":2,"prompt":"caf"#.to_vec();
        line.extend_from_slice(&[0xc3, 0x28, 0xff]);
        line.extend_from_slice(br#""}"#);
        let Some(LogEntry::Turn {
            turn: 2, prompt, ..
        }) = parse_entry(&line)
        else {
            panic!("not read");
        };
        assert!(prompt.starts_with("caf\u{fffd}"), "{prompt:?}");
    }

    #[test]
    fn a_damaged_header_gives_what_its_fields_still_say() {
        let path = Path::new("/s/000001764000000-abcdef12.jsonl");
        // One byte flipped: the JSON no longer parses.
        let line = br#"{"kind":"header","version":2,"provider":"demo","started_at_ms":5,"cwd":"/p","conversation_id":"abcdef12-0000","origin":"chat"x}"#;
        let header = parse_header(line, path).unwrap();
        assert_eq!(header.provider, "demo");
        assert_eq!(header.cwd, "/p");
        assert_eq!(header.conversation_id.as_deref(), Some("abcdef12-0000"));
        assert_eq!((header.version, header.started_at_ms), (2, 5));
        // The start time lost: the file name has it.
        let line =
            br#"{"kind":"header","version":2,"provider":"demo","started_at_ms":?,"cwd":"/p"}"#;
        assert_eq!(
            parse_header(line, path).unwrap().started_at_ms,
            1_764_000_000
        );
        // No provider: not a conversation that can be resumed.
        assert_eq!(parse_header(br#"{"kind":"header","cwd":"/p""#, path), None);
    }
}
