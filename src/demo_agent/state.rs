//! The demo agent's small on-disk state: sessions and the `flaky` scenario's first-failure marks.
//!
//! Everything lives in one directory, `$AGENTTY_DEMO_STATE_DIR` or else
//! `<temp dir>/agentty-demo`. State is a convenience: when it cannot be read or written the
//! agent still runs (a session is then simply new), it never fails because of it.
//!
//! Sessions (`sessions/<id>.jsonl`): line 1 is the `session` header exactly as printed, then one
//! JSON string per prompt played in it (and, written by `--mode acp` only, a
//! `{"type":"answer","text":...}` line after each completed prompt, which the pi modes skip). Like a real CLI, a prompt is stored when it is sent, so a
//! failed run leaves it in the session; the "request" each prompt makes (the session's earlier
//! prompts and this one, what a model would receive) is appended to `requests.jsonl`, so tests
//! can see what a retry or a resume really sends.
//!
//! Like pi, `--session ID` (an id or unique id prefix) and `--continue` (the most recently used
//! session of this cwd) print the stored header unchanged; an unknown `--session ID` fails as pi
//! 0.73.1 does (`No session found matching 'ID'`, exit 1); `--continue` with nothing to continue
//! starts a new one.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;

/// Overrides where the demo agent keeps its state.
pub const STATE_DIR_VAR: &str = "AGENTTY_DEMO_STATE_DIR";

pub(crate) fn state_dir() -> PathBuf {
    state_dir_from(std::env::var_os(STATE_DIR_VAR))
}

/// The state dir for a given `AGENTTY_DEMO_STATE_DIR` value (unset: the default).
pub(crate) fn state_dir_from(value: Option<std::ffi::OsString>) -> PathBuf {
    value
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("agentty-demo"))
}

/// Where the demo agent keeps session `id` in `state_dir`.
pub fn session_file(state_dir: &Path, id: &str) -> Option<PathBuf> {
    is_safe_file_stem(id).then(|| state_dir.join("sessions").join(format!("{id}.jsonl")))
}

/// The log of every request the demo agent "sent to its model" in `state_dir`.
pub fn requests_file(state_dir: &Path) -> PathBuf {
    state_dir.join("requests.jsonl")
}

/// The log of every setting a client changed (`--mode acp`'s `session/set_model` and
/// `session/set_mode`) in `state_dir`: `{"session_id","method","value"}` a line.
pub fn settings_file(state_dir: &Path) -> PathBuf {
    state_dir.join("settings.jsonl")
}

/// Appends a setting change to [`settings_file`] (best effort, as all the demo's state).
pub(crate) fn record_setting(session_id: &str, method: &str, value: &str) {
    let line = serde_json::json!({"session_id": session_id, "method": method, "value": value});
    append_line(&settings_file(&state_dir()), &line.to_string());
}

/// Appends `line` to the log `file`, creating it (best effort, as all the demo's state).
pub(crate) fn append_line(file: &Path, line: &str) {
    if let Ok(mut log) = fs::OpenOptions::new().create(true).append(true).open(file) {
        let _ = writeln!(log, "{line}");
    }
}

/// The value last logged for session `session_id` under `method` ([`settings_file`]).
pub(crate) fn recorded_setting(session_id: &str, method: &str) -> Option<String> {
    let log = fs::read_to_string(settings_file(&state_dir())).ok()?;
    log.lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|setting| setting["session_id"] == session_id && setting["method"] == method)
        .find_map(|setting| setting["value"].as_str().map(str::to_owned))
}

/// The model and mode last set for session `session_id` ([`settings_file`]), if any.
pub(crate) fn recorded_settings(session_id: &str) -> (Option<String>, Option<String>) {
    let Ok(log) = fs::read_to_string(settings_file(&state_dir())) else {
        return (None, None);
    };
    let mut found = (None, None);
    for line in log.lines() {
        let Ok(setting) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if setting["session_id"] != session_id {
            continue;
        }
        let value = setting["value"].as_str().map(str::to_owned);
        match setting["method"].as_str() {
            Some("session/set_model") => found.0 = value,
            Some("session/set_mode") => found.1 = value,
            _ => {}
        }
    }
    found
}

/// One line of `requests.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct DemoRequest {
    pub session_id: String,
    /// The user messages the model receives, oldest first: the session's and the new prompt.
    pub messages: Vec<String>,
    /// The model the request went to, when the agent was told one (`--mode rpc`'s
    /// `set_model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The effort the request asked for, when the agent was told one (`--mode claude-stream`'s
    /// `apply_flag_settings {effortLevel}`, which Claude Code sends as `output_config.effort`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
}

/// Milliseconds since the Unix epoch (pi's message `timestamp`).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as u64)
}

/// `2026-11-29T20:22:55.996Z`, as JavaScript's `Date.toISOString`.
pub(crate) fn iso_timestamp(ms: u64) -> String {
    let seconds = ms / 1000;
    let (year, month, day) = civil_from_days((seconds / 86_400) as i64);
    let of_day = seconds % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        ms % 1000
    )
}

/// Days since 1970-01-01 to a (year, month, day) date, after Howard Hinnant's algorithm.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// A UUIDv7 (48-bit millisecond timestamp, version 7, random rest), as pi's session ids.
pub(crate) fn uuid_v7(ms: u64) -> String {
    let mut bytes = *uuid::Uuid::new_v4().as_bytes();
    bytes[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    bytes[6] = 0x70 | (bytes[6] & 0x0f);
    bytes[8] = 0x80 | (bytes[8] & 0x3f);
    uuid::Uuid::from_bytes(bytes).hyphenated().to_string()
}

/// The fields of pi's `session` header.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct SessionHeader {
    pub(crate) id: String,
    pub(crate) timestamp: String,
    pub(crate) cwd: String,
}

impl SessionHeader {
    fn fresh(id: String, cwd: &str) -> Self {
        Self {
            id,
            timestamp: iso_timestamp(now_ms()),
            cwd: cwd.to_owned(),
        }
    }
}

/// Which session a run asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SessionChoice {
    New,
    ContinueLatest,
    Resume(String),
}

/// A session opened for this run.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) header: SessionHeader,
    /// The prompts earlier runs played in it, oldest first.
    pub(crate) history: Vec<String>,
    file: PathBuf,
    /// The model the next prompt goes to, once the client chose one (recorded with it).
    pub(crate) model: Option<String>,
    /// The effort the next prompt asks for, once the client chose one (recorded with it).
    pub(crate) effort: Option<String>,
}

impl Session {
    /// Opens (or starts) the session `choice` names for the working directory `cwd`; `Err` is
    /// pi's message for a session id it does not know.
    pub(crate) fn open(choice: &SessionChoice, cwd: &str) -> Result<Self, String> {
        let dir = state_dir().join("sessions");
        let found = match choice {
            SessionChoice::New => None,
            SessionChoice::ContinueLatest => latest_session(&dir, |header| header.cwd == cwd),
            SessionChoice::Resume(id) => {
                latest_session(&dir, |header| header.id.starts_with(id.as_str()))
            }
        };
        if let Some(session) = found {
            return Ok(session);
        }
        if let SessionChoice::Resume(id) = choice {
            return Err(format!("No session found matching '{id}'"));
        }
        let id = uuid_v7(now_ms());
        let header = SessionHeader::fresh(id, cwd);
        let file = dir.join(format!("{}.jsonl", header.id));
        let session = Self {
            header,
            history: Vec::new(),
            file,
            model: None,
            effort: None,
        };
        let _ = fs::create_dir_all(&dir);
        let _ = fs::write(&session.file, format!("{}\n", session.header_line()));
        Ok(session)
    }

    /// The session file.
    pub(crate) fn file(&self) -> &Path {
        &self.file
    }

    /// The `session` event line.
    pub(crate) fn header_line(&self) -> String {
        let header = &self.header;
        serde_json::to_string(&super::wire::Event::Session {
            version: 3,
            id: &header.id,
            timestamp: &header.timestamp,
            cwd: &header.cwd,
        })
        .unwrap_or_default()
    }

    /// Records a prompt as sent: the request goes to `requests.jsonl` and the prompt into the
    /// session, which also makes this the most recently used session.
    pub(crate) fn record_prompt(&mut self, prompt: &str) {
        let mut messages = self.history.clone();
        messages.push(prompt.to_owned());
        log_request(&DemoRequest {
            session_id: self.header.id.clone(),
            messages,
            model: self.model.clone(),
            effort: self.effort.clone(),
        });
        self.history.push(prompt.to_owned());
        let Ok(mut file) = fs::OpenOptions::new().append(true).open(&self.file) else {
            return;
        };
        let line = serde_json::to_string(prompt).unwrap_or_default();
        let _ = writeln!(file, "{line}");
    }
}

impl Session {
    /// Records a message the agent took into the session without making a request with it:
    /// pi's steer taken off its queue at an `abort`, whose request is aborted before it is made
    /// (the next request carries it).
    pub(crate) fn record_unanswered(&mut self, text: &str) {
        self.history.push(text.to_owned());
        let Ok(mut file) = fs::OpenOptions::new().append(true).open(&self.file) else {
            return;
        };
        let line = serde_json::to_string(text).unwrap_or_default();
        let _ = writeln!(file, "{line}");
    }

    /// Compacts the session as an agent does: the summarisation request (the session's
    /// prompts and the instruction to summarise) goes to `requests.jsonl`, and the session's
    /// prompts are replaced by one summary, which later requests carry instead of them.
    /// Returns the summary; `Err` when there is nothing to compact (pi's words).
    pub(crate) fn compact(&mut self, instructions: Option<&str>) -> Result<String, String> {
        if self.history.is_empty() {
            return Err("Nothing to compact (session too small)".to_owned());
        }
        if self.history.len() == 1 && self.history[0].starts_with(SUMMARY_PREFIX) {
            return Err("Already compacted".to_owned());
        }
        let mut messages = self.history.clone();
        messages.push(match instructions {
            Some(text) => format!("{COMPACTION_REQUEST} Focus: {text}"),
            None => COMPACTION_REQUEST.to_owned(),
        });
        log_request(&DemoRequest {
            session_id: self.header.id.clone(),
            messages,
            model: self.model.clone(),
            effort: self.effort.clone(),
        });
        let summary = format!(
            "{SUMMARY_PREFIX} {} earlier prompts: {}",
            self.history.len(),
            self.history.join(" | ")
        );
        self.history = vec![summary.clone()];
        let line = serde_json::to_string(&summary).unwrap_or_default();
        let _ = fs::write(
            &self.file,
            format!(
                "{}
{line}
",
                self.header_line()
            ),
        );
        Ok(summary)
    }
}

/// The last message of a compaction's request in `requests.jsonl`.
pub const COMPACTION_REQUEST: &str = "Summarise the conversation so far.";
/// How the summary that replaces a compacted session's prompts begins.
pub const SUMMARY_PREFIX: &str = "[compacted] Summary of";

/// Takes the prompts `texts` (each counted once) out of the end of session file `file`, the
/// lines a stopped turn left unanswered; returns how many it took out. The demo's side of
/// `Backend::take_back_unanswered`.
pub(crate) fn take_back_unanswered(file: &Path, texts: &[String]) -> std::io::Result<usize> {
    let contents = fs::read_to_string(file)?;
    let mut lines: Vec<&str> = contents.lines().collect();
    let mut wanted: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut taken = 0;
    // Line 1 is the header, never a prompt.
    while lines.len() > 1 {
        let Some(prompt) = lines
            .last()
            .and_then(|line| serde_json::from_str::<String>(line).ok())
        else {
            break;
        };
        let Some(index) = wanted.iter().position(|text| *text == prompt) else {
            break;
        };
        wanted.remove(index);
        lines.pop();
        taken += 1;
    }
    if taken > 0 {
        let kept: String = lines.iter().map(|line| format!("{line}\n")).collect();
        fs::write(file, kept)?;
    }
    Ok(taken)
}

/// Appends `request` to `requests.jsonl` (what the model would receive).
pub(crate) fn log_request(request: &DemoRequest) {
    let dir = state_dir();
    let _ = fs::create_dir_all(&dir);
    let line = serde_json::to_string(request).unwrap_or_default();
    append_line(&requests_file(&dir), &line);
}

/// One line of a session file after its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    /// A prompt as sent (a JSON string line).
    Prompt(String),
    /// The answer a completed prompt got (a `{"type":"answer","text":...}` line; the ACP mode
    /// writes them, the pi modes skip them).
    Answer(String),
}

impl Session {
    /// Session `id` exactly (no prefix match) with its entries; `None` when it is not stored.
    pub(crate) fn load(id: &str) -> Option<(Self, Vec<Entry>)> {
        let file = session_file(&state_dir(), id)?;
        let text = fs::read_to_string(&file).ok()?;
        let mut lines = text.lines();
        let header = serde_json::from_str::<SessionHeader>(lines.next()?).ok()?;
        if header.id != id {
            return None;
        }
        let entries: Vec<Entry> = lines
            .filter_map(|line| {
                if let Ok(prompt) = serde_json::from_str::<String>(line) {
                    return Some(Entry::Prompt(prompt));
                }
                let value = serde_json::from_str::<serde_json::Value>(line).ok()?;
                (value["type"] == "answer")
                    .then(|| Entry::Answer(value["text"].as_str().unwrap_or_default().to_owned()))
            })
            .collect();
        let history = entries
            .iter()
            .filter_map(|entry| match entry {
                Entry::Prompt(prompt) => Some(prompt.clone()),
                Entry::Answer(_) => None,
            })
            .collect();
        Some((
            Self {
                header,
                history,
                file,
                model: None,
                effort: None,
            },
            entries,
        ))
    }

    /// Appends the answer the last prompt got.
    pub(crate) fn record_answer(&self, text: &str) {
        let Ok(mut file) = fs::OpenOptions::new().append(true).open(&self.file) else {
            return;
        };
        let line = serde_json::json!({"type": "answer", "text": text});
        let _ = writeln!(file, "{line}");
    }
}

/// The most recently modified stored session whose header satisfies `wanted`.
fn latest_session(dir: &Path, wanted: impl Fn(&SessionHeader) -> bool) -> Option<Session> {
    let mut best: Option<(SystemTime, Session)> = None;
    for entry in fs::read_dir(dir).ok()?.flatten() {
        let file = entry.path();
        let Ok(text) = fs::read_to_string(&file) else {
            continue;
        };
        let mut lines = text.lines();
        let Some(header) = lines
            .next()
            .and_then(|line| serde_json::from_str::<SessionHeader>(line).ok())
        else {
            continue;
        };
        if !wanted(&header) {
            continue;
        }
        let modified = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .unwrap_or(UNIX_EPOCH);
        if best.as_ref().is_some_and(|(newest, _)| *newest >= modified) {
            continue;
        }
        let session = Session {
            header,
            history: lines
                .filter_map(|line| serde_json::from_str::<String>(line).ok())
                .collect(),
            file,
            model: None,
            effort: None,
        };
        best = Some((modified, session));
    }
    best.map(|(_, session)| session)
}

/// A session id used as a file name must not climb out of the sessions directory.
pub(crate) fn is_safe_file_stem(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// One try of a `flaky` scenario's prompt.
pub(crate) struct FlakyTry {
    /// Which try of the prompt this is, counting the user's retries too.
    pub(crate) number: u32,
    pub(crate) fails: bool,
}

/// Whether a `flaky` scenario (the first `failing` tries fail) fails this time, and which try
/// this is.
///
/// A retry by agentty's orchestrator says so in `attempt`: past `failing`, it succeeds. A manual
/// retry by the user comes as attempt 1 again, so each failure is counted in a mark keyed by
/// the parent process and the prompt; once `failing` failures are counted, the mark is removed
/// and the try succeeds.
pub(crate) fn flaky_try(attempt: u32, prompt: &str, failing: u32) -> FlakyTry {
    let dir = state_dir().join("flaky");
    let mark = dir.join(format!(
        "{}-{:016x}",
        std::os::unix::process::parent_id(),
        fnv1a(prompt.as_bytes())
    ));
    let failed_so_far: u32 = fs::read_to_string(&mark)
        .ok()
        .and_then(|text| text.lines().next()?.trim().parse().ok())
        .unwrap_or(0);
    let number = attempt.max(failed_so_far + 1);
    if attempt > failing || failed_so_far >= failing {
        let _ = fs::remove_file(&mark);
        return FlakyTry {
            number,
            fails: false,
        };
    }
    let _ = fs::create_dir_all(&dir);
    let _ = fs::write(&mark, format!("{}\n{prompt}", failed_so_far + 1));
    FlakyTry {
        number,
        fails: true,
    }
}

/// A hash that is the same in every build (std's `DefaultHasher` promises no such thing).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_timestamps_match_javascript() {
        // Values from the pi captures' header timestamps and session ids.
        assert_eq!(iso_timestamp(1_795_983_775_996), "2026-11-29T20:22:55.996Z");
        assert_eq!(iso_timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_timestamp(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn uuid_v7_carries_the_timestamp_version_and_variant() {
        // pi's header id 01a228f9-98fb-76ae-... was made at 1795983776000 ms or so.
        let id = uuid_v7(0x01a2_28f9_98fb);
        assert!(id.starts_with("01a228f9-98fb-7"), "{id}");
        let parsed = uuid::Uuid::parse_str(&id).expect("a uuid");
        assert_eq!(parsed.get_version_num(), 7);
        assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122);
        assert_ne!(uuid_v7(1), uuid_v7(1));
    }

    #[test]
    fn unanswered_prompts_are_taken_from_the_end_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.jsonl");
        fs::write(
            &file,
            "{\"type\":\"session\"}\n\"hi\"\n\"steer\"\n\"steer\"\n",
        )
        .unwrap();
        let texts = |items: &[&str]| {
            items
                .iter()
                .map(|item| (*item).to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(take_back_unanswered(&file, &texts(&["steer"])).unwrap(), 1);
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            "{\"type\":\"session\"}\n\"hi\"\n\"steer\"\n"
        );
        // "hi" is not at the end: nothing changes.
        assert_eq!(take_back_unanswered(&file, &texts(&["hi"])).unwrap(), 0);
        assert_eq!(
            take_back_unanswered(&file, &texts(&["steer", "hi"])).unwrap(),
            2
        );
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            "{\"type\":\"session\"}\n"
        );
    }

    #[test]
    fn session_ids_that_are_paths_are_not_file_stems() {
        assert!(is_safe_file_stem("01a228fb-f8fa-72c2"));
        assert!(!is_safe_file_stem("../etc/passwd"));
        assert!(!is_safe_file_stem(""));
    }
}
