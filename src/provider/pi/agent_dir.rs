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
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::provider::checkpoint::{agent_env, agent_home};
use crate::provider::config_mirror;

/// The environment variable that names pi's config dir.
pub(crate) const AGENT_DIR_VAR: &str = "PI_CODING_AGENT_DIR";
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
    let home = agent_home(config_env);
    let dir = match agent_env(config_env, AGENT_DIR_VAR) {
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
    let Some(private) = config_mirror::mirror_path(user_dir, state_dir, "pi", "agent")? else {
        return Ok(user_dir.to_path_buf());
    };
    fs::create_dir_all(user_dir.join(SESSIONS_DIR))?;
    config_mirror::link_entries(user_dir, &private, |name| {
        name == SETTINGS_FILE || name.to_string_lossy().ends_with(".lock")
    })?;
    config_mirror::write_settings(
        &user_dir.join(SETTINGS_FILE),
        &private.join(SETTINGS_FILE),
        |text| serde_json::from_str(text).ok(),
        retry_off(),
    )?;
    Ok(private)
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
