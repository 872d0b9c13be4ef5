//! A private mirror of pi's config dir with pi's own retries turned off.
//!
//! Why: one attempt must be one model request; the orchestrator is the only place that retries.
//! By default pi retries 5xx / 429 / dropped streams three times (2/4/8 s) inside one process,
//! and the OpenAI SDK under it retries 5xx twice more per try (12 requests for one HTTP 500).
//!
//! How, without touching the user's pi files: pi reads its config from `PI_CODING_AGENT_DIR`
//! (default `~/.pi/agent`). We point it at `<state dir>/pi/agent-<hash of the user's dir>/`,
//! where every entry of the user's dir is a symlink to the original (`models.json`,
//! `auth.json`, extensions, ...), except `settings.json`: that one is the user's settings
//! merged with [`retry_off`]. pi writes `auth.json` and sessions with `writeFileSync` /
//! `appendFileSync`, which follow the links into the user's files. Entries ending in `.lock`
//! (proper-lockfile's lock dirs) are not linked: a link to another process's lock dir would
//! break pi's locking of our own `settings.json`.
//!
//! Sessions must stay where the user's pi finds them, or `--continue` breaks. pi 0.73.1 picks
//! the sessions dir as: `--session-dir`, else `$PI_CODING_AGENT_SESSION_DIR`, else
//! `settings.sessionDir`, else `<agent dir>/sessions/--<cwd>--/`; `--session <id>` also searches
//! every `<agent dir>/sessions/*/`. The first three pass through unchanged (the environment is
//! inherited, `sessionDir` survives the merge). For the default, `sessions` is symlinked like
//! every other entry, after creating it in the user's dir when missing (as pi would on its
//! first run), so pi keeps its own per-cwd layout and lookups. Passing `--session-dir` instead
//! would either flatten that layout or re-implement pi's cwd encoding.
//!
//! The sync runs at every spawn: it is small (one directory listing, one small file), idempotent,
//! and safe against a concurrent agentty (links that already exist are fine, `settings.json` is
//! replaced by rename). Caveat: a project's `.pi/settings.json` is merged over these settings by
//! pi, so a project that turns retries on wins; the mapper still shows such retries.

use std::collections::BTreeMap;
use std::collections::HashSet;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

/// The environment variable that names pi's config dir.
pub const AGENT_DIR_VAR: &str = "PI_CODING_AGENT_DIR";
const SETTINGS_FILE: &str = "settings.json";
const SESSIONS_DIR: &str = "sessions";

/// The settings that turn pi's retries off: pi's auto-retry, and the provider SDK's.
fn retry_off() -> Value {
    json!({"retry": {"enabled": false, "provider": {"maxRetries": 0}}})
}

/// The user's pi config dir, resolved the way pi resolves it (`~` expanded, a relative path
/// taken from the agent's working directory). `None` when there is no home to resolve it from.
pub(crate) fn user_agent_dir(
    config_env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
) -> Option<PathBuf> {
    let from_env = |key: &str| -> Option<OsString> {
        config_env
            .get(key)
            .map(OsString::from)
            .or_else(|| std::env::var_os(key))
            .filter(|value| !value.is_empty())
    };
    let home = from_env("HOME").map(PathBuf::from);
    let dir = match from_env(AGENT_DIR_VAR) {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            match dir.strip_prefix("~") {
                Ok(rest) => home?.join(rest),
                Err(_) => dir,
            }
        }
        None => home?.join(".pi").join("agent"),
    };
    if dir.is_absolute() {
        return Some(dir);
    }
    let base = match cwd {
        Some(cwd) => cwd.to_path_buf(),
        None => std::env::current_dir().ok()?,
    };
    Some(base.join(dir))
}

/// Creates or refreshes the private mirror of `user_dir` under `state_dir` and returns it.
pub(crate) fn prepare_retry_off_dir(user_dir: &Path, state_dir: &Path) -> io::Result<PathBuf> {
    let root = state_dir.join("pi");
    fs::create_dir_all(&root)?;
    if is_inside(user_dir, &root) {
        // Already one of our mirrors (agentty started from inside an agent it runs).
        return Ok(user_dir.to_path_buf());
    }
    let private = root.join(format!(
        "agent-{:016x}",
        fnv1a(user_dir.as_os_str().as_encoded_bytes())
    ));
    fs::create_dir_all(&private)?;
    fs::create_dir_all(user_dir.join(SESSIONS_DIR))?;

    let mut linked: HashSet<OsString> = HashSet::new();
    for entry in fs::read_dir(user_dir)? {
        let name = entry?.file_name();
        if name == SETTINGS_FILE || name.to_string_lossy().ends_with(".lock") {
            continue;
        }
        link(&private.join(&name), &user_dir.join(&name))?;
        linked.insert(name);
    }
    for entry in fs::read_dir(&private)? {
        let entry = entry?;
        let stale = entry.file_type()?.is_symlink() && !linked.contains(&entry.file_name());
        if stale {
            remove_if_present(&entry.path())?;
        }
    }
    write_if_changed(
        &private.join(SETTINGS_FILE),
        &merged_settings(&user_dir.join(SETTINGS_FILE)),
    )?;
    Ok(private)
}

/// Makes `path` a symlink to `target`. Whatever pi created there itself (while the user had no
/// such entry) gives way to the user's entry.
pub(crate) fn link(path: &Path, target: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            if fs::read_link(path)? == target {
                return Ok(());
            }
            remove_if_present(path)?;
        }
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path)?,
        Ok(_) => remove_if_present(path)?,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    match std::os::unix::fs::symlink(target, path) {
        // A concurrent agentty made the same link.
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        result => result,
    }
}

pub(crate) fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        result => result,
    }
}

/// The user's settings with retries off. A missing or unreadable file counts as `{}` (pi too
/// falls back to its defaults then).
fn merged_settings(user_settings: &Path) -> String {
    let mut settings = match fs::read_to_string(user_settings) {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => Value::Object(map),
            _ => {
                tracing::warn!(path = %user_settings.display(), "pi settings are not a JSON object; using only the retry override");
                Value::Object(Map::new())
            }
        },
        Err(_) => Value::Object(Map::new()),
    };
    merge(&mut settings, retry_off());
    // Pretty JSON of a Value cannot fail.
    serde_json::to_string_pretty(&settings).unwrap_or_default()
}

/// Deep-merges `overlay` into `base` (objects key by key, anything else replaced).
pub(crate) fn merge(base: &mut Value, overlay: Value) {
    match (base, overlay) {
        (Value::Object(base), Value::Object(overlay)) => {
            for (key, value) in overlay {
                merge(base.entry(key).or_insert(Value::Null), value);
            }
        }
        (base, overlay) => *base = overlay,
    }
}

pub(crate) fn write_if_changed(path: &Path, contents: &str) -> io::Result<()> {
    if fs::read_to_string(path).is_ok_and(|current| current == contents) {
        return Ok(());
    }
    let temp = path.with_extension(format!("tmp-{}", std::process::id()));
    fs::write(&temp, contents)?;
    fs::rename(&temp, path)
}

pub(crate) fn is_inside(path: &Path, dir: &Path) -> bool {
    match (path.canonicalize(), dir.canonicalize()) {
        (Ok(path), Ok(dir)) => path.starts_with(dir),
        _ => path.starts_with(dir),
    }
}

/// A stable name for the user's dir (std's hasher may change between Rust versions).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_json(path: &Path) -> Value {
        serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn mirror_links_everything_but_settings_and_turns_retries_off() {
        let user = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        fs::write(user.path().join("models.json"), "{}").unwrap();
        fs::create_dir(user.path().join("extensions")).unwrap();
        fs::create_dir(user.path().join("settings.json.lock")).unwrap();
        fs::write(
            user.path().join("settings.json"),
            r#"{"defaultModel":"m","retry":{"maxRetries":7,"enabled":true},"sessionDir":"~/s"}"#,
        )
        .unwrap();

        let private = prepare_retry_off_dir(user.path(), state.path()).unwrap();
        assert!(private.starts_with(state.path()));
        for name in ["models.json", "extensions", "sessions"] {
            assert_eq!(
                fs::read_link(private.join(name)).unwrap(),
                user.path().join(name)
            );
        }
        assert!(user.path().join("sessions").is_dir());
        assert!(!private.join("settings.json.lock").exists());
        let settings = read_json(&private.join("settings.json"));
        assert_eq!(
            settings,
            json!({"defaultModel":"m","sessionDir":"~/s",
                   "retry":{"maxRetries":7,"enabled":false,"provider":{"maxRetries":0}}})
        );
        // The user's own settings are untouched.
        assert_eq!(
            read_json(&user.path().join("settings.json"))["retry"]["enabled"],
            true
        );

        // Idempotent, and it follows the user's changes.
        fs::remove_file(user.path().join("models.json")).unwrap();
        fs::write(user.path().join("auth.json"), "{}").unwrap();
        fs::write(private.join("bin"), "made by pi").unwrap();
        fs::create_dir(user.path().join("bin")).unwrap();
        assert_eq!(
            prepare_retry_off_dir(user.path(), state.path()).unwrap(),
            private
        );
        assert!(fs::symlink_metadata(private.join("models.json")).is_err());
        assert_eq!(
            fs::read_link(private.join("auth.json")).unwrap(),
            user.path().join("auth.json")
        );
        assert_eq!(
            fs::read_link(private.join("bin")).unwrap(),
            user.path().join("bin")
        );
    }

    #[test]
    fn a_mirror_is_not_mirrored_again() {
        let user = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let private = prepare_retry_off_dir(user.path(), state.path()).unwrap();
        assert_eq!(
            prepare_retry_off_dir(&private, state.path()).unwrap(),
            private
        );
    }

    #[test]
    fn user_dir_resolution_follows_pi() {
        let env: BTreeMap<String, String> = [("HOME".to_owned(), "/home/u".to_owned())].into();
        assert_eq!(
            user_agent_dir(&env, None).unwrap(),
            PathBuf::from("/home/u/.pi/agent")
        );
        let mut env = env;
        env.insert(AGENT_DIR_VAR.into(), "~/pi-config".into());
        assert_eq!(
            user_agent_dir(&env, None).unwrap(),
            PathBuf::from("/home/u/pi-config")
        );
        env.insert(AGENT_DIR_VAR.into(), "rel/dir".into());
        assert_eq!(
            user_agent_dir(&env, Some(Path::new("/work"))).unwrap(),
            PathBuf::from("/work/rel/dir")
        );
    }
}
