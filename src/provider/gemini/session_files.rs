//! Where Gemini CLI keeps a session, and how to let a new process load it whole.
//!
//! Gemini CLI 0.61 keeps a session as `~/.gemini/tmp/<project>/chats/session-<minute>-<first 8
//! of the id>.jsonl`, `<minute>` being the UTC minute the file was created
//! (`2026-12-01T21-06`). The file is append-only: records, and `$set` patches replayed on load.
//!
//! Every process that opens a session, a loading one too, first writes a header and a
//! `$set` of the messages (its startup context alone) to `session-<its start minute>-<id>`,
//! and only then reads the session. Measured with a bare ACP client: when that name is the
//! session's own file (a reload in the minute the session was created), the `$set` wipes the
//! conversation before it is read, and `session/load` answers "No previous sessions found for
//! this project"; in any later minute the header goes to a stub file of its own, which Gemini
//! ignores (it holds no message), and the session loads whole.
//!
//! So before a new process loads a session, [`make_loadable`] moves a session file named by
//! the current minute to an earlier minute's name: the new process's header then always lands
//! in a stub, whatever the clock says. Gemini finds a session by the id inside the file, not by
//! the name's minute, and goes on writing to the file it loaded.

use std::fs;
use std::path::{Path, PathBuf};

use time::OffsetDateTime;

const PREFIX: &str = "session-";
const SUFFIX: &str = ".jsonl";
/// `2026-12-01T21-06`: the length of the minute in a file name.
const MINUTE_LEN: usize = 16;

/// The file that holds session `session_id` under `chats_root` (`~/.gemini/tmp`): of the files
/// named for it, the most recently written one that holds a message (stubs hold none).
pub(crate) fn session_file(chats_root: &Path, session_id: &str) -> Option<PathBuf> {
    let short = session_id.get(..8)?;
    let suffix = format!("-{short}{SUFFIX}");
    let mut candidates: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    let Ok(projects) = fs::read_dir(chats_root) else {
        return None;
    };
    for project in projects.flatten() {
        let Ok(files) = fs::read_dir(project.path().join("chats")) else {
            continue;
        };
        for file in files.flatten() {
            let name = file.file_name();
            let named = name
                .to_str()
                .is_some_and(|name| name.starts_with(PREFIX) && name.ends_with(&suffix));
            if !named {
                continue;
            }
            // `metadata` follows links: the private home links the user's directories.
            let modified = fs::metadata(file.path())
                .and_then(|meta| meta.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            candidates.push((modified, file.path()));
        }
    }
    // Two files written in the same tick of the clock (a rewind and its undo, back to back):
    // the one whose conversation was updated last.
    let mut candidates: Vec<(std::time::SystemTime, String, PathBuf)> = candidates
        .into_iter()
        .map(|(modified, path)| (modified, last_updated(&path), path))
        .collect();
    candidates.sort_by(|a, b| (b.0, &b.1).cmp(&(a.0, &a.1)));
    let candidates: Vec<(std::time::SystemTime, PathBuf)> = candidates
        .into_iter()
        .map(|(modified, _, path)| (modified, path))
        .collect();
    let newest = candidates.first().map(|(_, path)| path.clone());
    candidates
        .into_iter()
        .map(|(_, path)| path)
        .find(|path| holds_a_message(path))
        .or(newest)
}

/// The last `lastUpdated` the file records (an ISO time: its text sorts as the time does);
/// empty when it has none.
fn last_updated(path: &Path) -> String {
    const KEY: &str = "\"lastUpdated\":\"";
    let text = fs::read_to_string(path).unwrap_or_default();
    text.rmatch_indices(KEY)
        .next()
        .and_then(|(at, _)| text[at + KEY.len()..].split('"').next())
        .unwrap_or_default()
        .to_owned()
}

/// A message record is a line of its own (`{"id":…,"type":"user",…}`); headers and `$set`
/// patches are not.
fn holds_a_message(path: &Path) -> bool {
    fs::read(path).is_ok_and(|bytes| {
        bytes
            .split(|byte| *byte == b'\n')
            .any(|line| line.starts_with(b"{\"id\":"))
    })
}

/// Readies session `session_id` for a process about to load it: the file that holds it
/// ([`session_file`]) stays the only file of the session that holds messages (a copy left
/// behind by a rename before a restore put the session back is removed), and it moves out of
/// the current minute ([`make_loadable`]).
pub(crate) fn prepare_load(chats_root: &Path, session_id: &str) -> std::io::Result<()> {
    let Some(current) = session_file(chats_root, session_id) else {
        return Ok(());
    };
    if holds_a_message(&current) {
        remove_stubs(chats_root, session_id)?;
    }
    let Some(short) = session_id.get(..8) else {
        return Ok(());
    };
    let suffix = format!("-{short}{SUFFIX}");
    if let Some(chats) = current.parent() {
        for file in fs::read_dir(chats)?.flatten() {
            let path = file.path();
            let named = file
                .file_name()
                .to_str()
                .is_some_and(|name| name.starts_with(PREFIX) && name.ends_with(&suffix));
            if named && path != current && holds_a_message(&path) {
                tracing::info!(stale = %path.display(), session = %current.display(), "removing an outdated copy of the Gemini session");
                fs::remove_file(&path)?;
            }
        }
    }
    make_loadable(&current).map(drop)
}

/// Removes the stubs of session `session_id` under `chats_root`: files named for it that hold
/// no message (the header a loading process writes before it reads the session). Gemini CLI
/// 0.61's session cleanup, at every launch, deletes a file with nothing to resume *and every
/// file named for the same session*: a stub left behind would take the session with it.
pub(crate) fn remove_stubs(chats_root: &Path, session_id: &str) -> std::io::Result<()> {
    let Some(short) = session_id.get(..8) else {
        return Ok(());
    };
    let suffix = format!("-{short}{SUFFIX}");
    let Ok(projects) = fs::read_dir(chats_root) else {
        return Ok(());
    };
    for project in projects.flatten() {
        let Ok(files) = fs::read_dir(project.path().join("chats")) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            let named = file
                .file_name()
                .to_str()
                .is_some_and(|name| name.starts_with(PREFIX) && name.ends_with(&suffix));
            if named && !holds_a_message(&path) {
                tracing::info!(stub = %path.display(), "removing a stub of the Gemini session");
                fs::remove_file(&path)?;
            }
        }
    }
    Ok(())
}

/// Renames `file` when its name carries the current UTC minute (or a later one) to the name
/// of the newest earlier minute that is free, so that a process started now cannot write its
/// startup header into it (see the module doc). Returns the file's path afterwards.
pub(crate) fn make_loadable(file: &Path) -> std::io::Result<PathBuf> {
    make_loadable_at(file, OffsetDateTime::now_utc())
}

fn make_loadable_at(file: &Path, now: OffsetDateTime) -> std::io::Result<PathBuf> {
    let Some((minute, rest)) = split_name(file) else {
        return Ok(file.to_path_buf());
    };
    let current = minute_of(now);
    // The names sort as the minutes do.
    if minute.as_str() < current.as_str() {
        return Ok(file.to_path_buf());
    }
    let dir = file.parent().unwrap_or(Path::new("."));
    for back in 1..=60 {
        let earlier = minute_of(now - time::Duration::minutes(back));
        let target = dir.join(format!("{PREFIX}{earlier}{rest}"));
        if !target.exists() {
            fs::rename(file, &target)?;
            tracing::info!(from = %file.display(), to = %target.display(), "Gemini session file renamed so that a reload in this minute keeps it whole");
            return Ok(target);
        }
    }
    Ok(file.to_path_buf())
}

/// `session-2026-12-01T21-06-4b08a8de.jsonl` -> (`2026-12-01T21-06`, `-4b08a8de.jsonl`).
fn split_name(file: &Path) -> Option<(String, String)> {
    let name = file.file_name()?.to_str()?;
    let after = name.strip_prefix(PREFIX)?;
    let minute = after.get(..MINUTE_LEN)?;
    let rest = after.get(MINUTE_LEN..)?;
    let shaped = minute.len() == MINUTE_LEN
        && minute.chars().enumerate().all(|(at, c)| match at {
            4 | 7 | 13 => c == '-',
            10 => c == 'T',
            _ => c.is_ascii_digit(),
        });
    (shaped && rest.starts_with('-')).then(|| (minute.to_owned(), rest.to_owned()))
}

/// The minute as Gemini writes it in a file name (`toISOString().slice(0, 16)`, `:` -> `-`).
fn minute_of(at: OffsetDateTime) -> String {
    format!(
        "{:04}-{:02}-{:02}T{:02}-{:02}",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> OffsetDateTime {
        OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).unwrap()
    }

    #[test]
    fn a_file_of_this_minute_moves_to_the_newest_free_earlier_minute() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("session-2026-12-01T00-00-4b08a8de.jsonl");
        fs::write(&file, "x\n").unwrap();
        // A stub of the minute before is left as it is: the next earlier name is taken.
        let stub = dir.path().join("session-2026-11-30T23-59-4b08a8de.jsonl");
        fs::write(&stub, "stub\n").unwrap();
        let moved = make_loadable_at(&file, at("2026-12-01T00:00:30Z")).unwrap();
        assert_eq!(
            moved,
            dir.path().join("session-2026-11-30T23-58-4b08a8de.jsonl")
        );
        assert_eq!(fs::read_to_string(&moved).unwrap(), "x\n");
        assert!(!file.exists());
        assert_eq!(fs::read_to_string(&stub).unwrap(), "stub\n");
    }

    #[test]
    fn a_file_of_an_earlier_minute_or_another_shape_stays() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("session-2026-12-01T21-05-4b08a8de.jsonl");
        let odd = dir.path().join("session-latest-4b08a8de.jsonl");
        for file in [&old, &odd] {
            fs::write(file, "x\n").unwrap();
            assert_eq!(
                make_loadable_at(file, at("2026-12-01T21:06:59Z")).unwrap(),
                *file
            );
            assert!(file.exists());
        }
    }

    #[test]
    fn the_session_is_the_newest_file_that_holds_a_message() {
        let root = tempfile::tempdir().unwrap();
        let chats = root.path().join("project/chats");
        fs::create_dir_all(&chats).unwrap();
        let id = "4b08a8de-de84-4a97-9d56-468b3493a45d";
        let content = chats.join("session-2026-12-01T21-05-4b08a8de.jsonl");
        fs::write(
            &content,
            "{\"sessionId\":\"4b08a8de\"}\n{\"id\":\"1\",\"type\":\"user\"}\n",
        )
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        // A later process's stub: a header and a `$set`, no message of its own.
        fs::write(
            chats.join("session-2026-12-01T21-06-4b08a8de.jsonl"),
            "{\"sessionId\":\"4b08a8de\"}\n{\"$set\":{\"messages\":[{\"id\":\"0\"}]}}\n",
        )
        .unwrap();
        fs::write(
            chats.join("session-2026-12-01T21-06-ffffffff.jsonl"),
            "{\"id\":\"2\"}\n",
        )
        .unwrap();
        assert_eq!(session_file(root.path(), id), Some(content));
        assert_eq!(session_file(root.path(), "short"), None);
    }
}

#[cfg(test)]
mod stub_tests {
    use super::*;

    /// A stub left behind makes Gemini's cleanup delete the whole session at its next launch.
    #[test]
    fn the_stubs_of_a_session_go_and_its_file_and_other_sessions_stay() {
        let root = tempfile::tempdir().unwrap();
        let chats = root.path().join("project/chats");
        fs::create_dir_all(&chats).unwrap();
        let id = "4b08a8de-de84-4a97-9d56-468b3493a45d";
        let session = chats.join("session-2026-12-01T21-05-4b08a8de.jsonl");
        fs::write(
            &session,
            "{\"sessionId\":\"x\"}\n{\"id\":\"1\",\"type\":\"user\"}\n",
        )
        .unwrap();
        let stub = chats.join("session-2026-12-01T21-06-4b08a8de.jsonl");
        fs::write(
            &stub,
            "{\"sessionId\":\"x\"}\n{\"$set\":{\"messages\":[]}}\n",
        )
        .unwrap();
        let other = chats.join("session-2026-12-01T21-06-ffffffff.jsonl");
        fs::write(&other, "{\"sessionId\":\"y\"}\n").unwrap();
        remove_stubs(root.path(), id).unwrap();
        assert!(session.exists());
        assert!(!stub.exists());
        assert!(
            other.exists(),
            "another session's file is not ours to touch"
        );
    }
}
