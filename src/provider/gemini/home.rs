//! A private Gemini CLI home with its own retries off, so one attempt is one model request.
//!
//! Why: with an HTTP 500 or 429, Gemini CLI 0.61 retries on its own up to 10 requests (about
//! 4 minutes, 211–242 s measured) before it reports the failure, and it resends a dropped stream
//! up to 4 times, printing the new answer after the partial one with no marker. The setting
//! `general.maxAttempts` bounds both loops (`streamWithRetries` runs `min(maxAttempts, 10)`
//! tries and retries mid-stream only while `attempt < maxAttempts - 1`); `1` leaves one request
//! per attempt, and agentty's orchestrator decides about retrying.
//!
//! How, without touching the user's files: Gemini CLI takes its home from `GEMINI_CLI_HOME`
//! (else the OS home) and keeps everything in `<home>/.gemini/`. We point it at
//! `<state dir>/gemini/home-<hash of the user's home>/`, whose `.gemini/` holds a symlink to
//! every entry of the user's `.gemini/` (credentials, `tmp/` with the sessions `--resume` reads,
//! extensions, ...), except `settings.json`: that one is the user's settings merged with
//! `{"general":{"maxAttempts":1}}`. The user's `~/.env` is linked too (Gemini CLI reads it from
//! the home). `tmp/` is created in the user's `.gemini/` when missing, as Gemini CLI would on
//! its first run, so sessions stay where the user's own `gemini --resume` finds them.
//!
//! Caveat, as with pi: a project's `.gemini/settings.json` is merged over the user's settings,
//! so a project that sets `general.maxAttempts` wins; the mapper still shows those retries.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::provider::checkpoint::{agent_env, agent_home};
use crate::provider::config_mirror;

/// The environment variable that names Gemini CLI's home.
pub(crate) const HOME_VAR: &str = "GEMINI_CLI_HOME";
const GEMINI_DIR: &str = ".gemini";
const SETTINGS_FILE: &str = "settings.json";
/// Where Gemini CLI keeps per-project chats (what `--resume` reads).
const SESSIONS_DIR: &str = "tmp";
/// Files of the home itself (not of `.gemini/`) that Gemini CLI reads.
const HOME_FILES: [&str; 1] = [".env"];

/// The settings that leave one model request per run.
fn retry_off() -> Value {
    json!({"general": {"maxAttempts": 1}})
}

/// The user's Gemini CLI home: `GEMINI_CLI_HOME` (the config's env first), else `HOME`.
pub(crate) fn user_home(config_env: &BTreeMap<String, String>) -> Option<PathBuf> {
    agent_env(config_env, HOME_VAR)
        .map(PathBuf::from)
        .or_else(|| agent_home(config_env))
        .filter(|home| home.is_absolute())
}

/// Creates or refreshes the private home for `user_home` under `state_dir` and returns it.
pub(crate) fn prepare_retry_off_home(user_home: &Path, state_dir: &Path) -> io::Result<PathBuf> {
    let Some(private) = config_mirror::mirror_path(user_home, state_dir, "gemini", "home")? else {
        return Ok(user_home.to_path_buf());
    };
    let user_gemini = user_home.join(GEMINI_DIR);
    let private_gemini = private.join(GEMINI_DIR);
    fs::create_dir_all(user_gemini.join(SESSIONS_DIR))?;
    fs::create_dir_all(&private_gemini)?;
    for name in HOME_FILES {
        let target = user_home.join(name);
        if target.exists() {
            config_mirror::link(&private.join(name), &target)?;
        } else {
            config_mirror::remove_if_present(&private.join(name))?;
        }
    }
    config_mirror::link_entries(&user_gemini, &private_gemini, |name| name == SETTINGS_FILE)?;
    // Gemini CLI's settings are JSON with comments: a file that is not plain JSON is kept as
    // far as it parses after stripping `//` comment lines.
    config_mirror::write_settings(
        &user_gemini.join(SETTINGS_FILE),
        &private_gemini.join(SETTINGS_FILE),
        parse_settings,
        retry_off(),
    )?;
    Ok(private)
}

fn parse_settings(text: &str) -> Option<Value> {
    let parsed = serde_json::from_str::<Value>(text).ok().or_else(|| {
        let without_comments: String = text
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        serde_json::from_str::<Value>(&without_comments).ok()
    })?;
    parsed.is_object().then_some(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_json(path: &Path) -> Value {
        serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn the_private_home_links_everything_but_settings_and_allows_one_attempt() {
        let user = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let gemini = user.path().join(".gemini");
        fs::create_dir_all(gemini.join("extensions")).unwrap();
        fs::write(gemini.join("oauth_creds.json"), "{}").unwrap();
        fs::write(user.path().join(".env"), "GEMINI_API_KEY=x\n").unwrap();
        fs::write(
            gemini.join("settings.json"),
            "{\n  // the user's comment\n  \"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}},\n  \"general\": {\"maxAttempts\": 5, \"vimMode\": true}\n}\n",
        )
        .unwrap();

        let home = prepare_retry_off_home(user.path(), state.path()).unwrap();
        assert!(home.starts_with(state.path()));
        for name in ["extensions", "oauth_creds.json", "tmp"] {
            assert_eq!(
                fs::read_link(home.join(".gemini").join(name)).unwrap(),
                gemini.join(name)
            );
        }
        assert_eq!(
            fs::read_link(home.join(".env")).unwrap(),
            user.path().join(".env")
        );
        assert_eq!(
            read_json(&home.join(".gemini/settings.json")),
            json!({"security": {"auth": {"selectedType": "gemini-api-key"}},
                   "general": {"maxAttempts": 1, "vimMode": true}})
        );
        // The user's own settings are untouched.
        assert!(fs::read_to_string(gemini.join("settings.json"))
            .unwrap()
            .contains("\"maxAttempts\": 5"));
        // Idempotent; follows the user's changes; a home is not mirrored again.
        fs::remove_file(gemini.join("oauth_creds.json")).unwrap();
        assert_eq!(
            prepare_retry_off_home(user.path(), state.path()).unwrap(),
            home
        );
        assert!(fs::symlink_metadata(home.join(".gemini/oauth_creds.json")).is_err());
        assert_eq!(prepare_retry_off_home(&home, state.path()).unwrap(), home);
    }

    #[test]
    fn a_fresh_machine_gets_a_home_with_only_the_override() {
        let user = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let home = prepare_retry_off_home(user.path(), state.path()).unwrap();
        assert_eq!(
            read_json(&home.join(".gemini/settings.json")),
            json!({"general": {"maxAttempts": 1}})
        );
        assert!(user.path().join(".gemini/tmp").is_dir());
    }

    #[test]
    fn the_user_home_is_gemini_cli_home_else_home() {
        let env: BTreeMap<String, String> = [("HOME".to_owned(), "/home/u".to_owned())].into();
        assert_eq!(user_home(&env).unwrap(), PathBuf::from("/home/u"));
        let mut env = env;
        env.insert(HOME_VAR.into(), "/srv/gemini-home".into());
        assert_eq!(user_home(&env).unwrap(), PathBuf::from("/srv/gemini-home"));
    }
}
