//! Keeping a prompt stopped in a new session's first turn.
//!
//! pi (0.73.1) holds a new session's entries in memory until the model's first answer and only
//! then creates the session file; from there on every entry is appended as it happens. So a
//! prompt stopped in a later turn stays in the session (the next request carries it, unanswered),
//! but a first turn stopped before the answer leaves no file: the next turn's `--session <id>`
//! finds nothing and the stopped prompt is gone from the conversation. This writes what pi would
//! have written by then: the session header and the user message, where `--session <id>` finds
//! them.
//!
//! pi takes such a file as its own. Because it holds no answer yet, pi writes its entries again
//! when the next answer arrives (the header and the stopped prompt appear twice in the file,
//! with the same ids); pi reads that back as one path, and the model receives the stopped
//! prompt once (checked against pi 0.73.1 and a fake model server: `tests/suite/real_pi.rs`).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::json;
use time::OffsetDateTime;

/// pi's session file format version (`CURRENT_SESSION_VERSION` in pi 0.73.1).
const SESSION_VERSION: u32 = 3;

/// Where pi creates a new session's file for `cwd` when no session dir is configured:
/// `<agent dir>/sessions/--<cwd, separators as dashes>--/` (pi's `getDefaultSessionDir`).
pub(crate) fn default_session_dir(agent_dir: &Path, cwd: &Path) -> PathBuf {
    let cwd = cwd.to_string_lossy();
    let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(&cwd);
    let safe: String = trimmed
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    agent_dir.join("sessions").join(format!("--{safe}--"))
}

/// Writes the session `session_id` of `cwd` in `dir` holding only `prompt`, named as pi names
/// its files (`<ISO time, ':' and '.' as '-'>_<id>.jsonl`). Never replaces a file.
pub(crate) fn write_session_with_prompt(
    dir: &Path,
    cwd: &Path,
    session_id: &str,
    prompt: &str,
    now: OffsetDateTime,
) -> io::Result<PathBuf> {
    let timestamp = iso_millis(now);
    let unix_ms = (now.unix_timestamp_nanos() / 1_000_000) as i64;
    let header = json!({
        "type": "session",
        "version": SESSION_VERSION,
        "id": session_id,
        "timestamp": timestamp,
        "cwd": cwd.to_string_lossy(),
    });
    let message = json!({
        "type": "message",
        "id": &uuid::Uuid::new_v4().simple().to_string()[..8],
        "parentId": null,
        "timestamp": timestamp,
        "message": {
            "role": "user",
            "content": [{"type": "text", "text": prompt}],
            "timestamp": unix_ms,
        },
    });
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!(
        "{}_{session_id}.jsonl",
        timestamp.replace([':', '.'], "-")
    ));
    let mut file = crate::files::no_follow()
        .write(true)
        .create_new(true)
        .open(&path)?;
    file.write_all(format!("{header}\n{message}\n").as_bytes())?;
    Ok(path)
}

/// `2026-12-02T00:50:00.123Z`, as JavaScript's `toISOString` writes it.
fn iso_millis(now: OffsetDateTime) -> String {
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        now.millisecond()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_dir_encodes_the_cwd_as_pi_does() {
        assert_eq!(
            default_session_dir(
                Path::new("/a/.pi/agent"),
                Path::new("/home/user/pi-capture/work")
            ),
            Path::new("/a/.pi/agent/sessions/--home-user-pi-capture-work--")
        );
    }

    #[test]
    fn the_file_holds_the_header_then_the_prompt_under_pis_name() {
        let dir = tempfile::tempdir().unwrap();
        let now = OffsetDateTime::from_unix_timestamp_nanos(1_795_983_931_643_000_000).unwrap();
        let path =
            write_session_with_prompt(dir.path(), Path::new("/w"), "01a2-id", "go \"on\"", now)
                .unwrap();
        assert_eq!(
            path.file_name().unwrap(),
            "2026-11-29T20-25-31-643Z_01a2-id.jsonl"
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["type"], "session");
        assert_eq!(lines[0]["id"], "01a2-id");
        assert_eq!(lines[0]["cwd"], "/w");
        assert_eq!(lines[0]["timestamp"], "2026-11-29T20:25:31.643Z");
        assert_eq!(lines[1]["message"]["role"], "user");
        assert_eq!(lines[1]["message"]["content"][0]["text"], "go \"on\"");
        assert_eq!(lines[1]["message"]["timestamp"], 1_795_983_931_643_i64);
        // A second write never replaces the first.
        assert!(
            write_session_with_prompt(dir.path(), Path::new("/w"), "01a2-id", "x", now).is_err()
        );
    }
}
