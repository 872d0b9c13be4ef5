//! The full-screen chat: app state, its reducers, and the event loop that drives them.
//!
//! `state` is a pure reducer over orchestrator events and keys (tested with hand-made event
//! sequences); `event_loop` owns the terminal, the orchestrator handle and the timers, and is
//! the only place that performs effects.

pub mod composer;
pub mod event_loop;
pub mod menu;
pub mod state;
pub mod transcript;

use std::path::{Path, PathBuf};

use crate::cli::{AgentArgs, Cli};
use crate::config::{Config, ProviderSettings};

/// Runs the chat until the user quits; returns the exit status.
pub fn run(cli: Cli) -> i32 {
    event_loop::run(cli)
}

/// The provider to use and its settings: `--provider`, else the configured default, else `pi`
/// when it is on PATH, else `demo` (so a fresh machine runs the demo). `--agent-bin`, `--model`
/// and `--provider-arg` override the configured settings. The name is not validated here:
/// `provider::build_provider` returns `None` for an unknown one.
pub fn resolve_provider(args: &AgentArgs, config: &Config) -> (String, ProviderSettings) {
    resolve_provider_with(args, config, || find_on_path("pi").is_some())
}

fn resolve_provider_with(
    args: &AgentArgs,
    config: &Config,
    pi_installed: impl FnOnce() -> bool,
) -> (String, ProviderSettings) {
    let name = args
        .provider
        .clone()
        .or_else(|| config.default_provider.clone())
        .unwrap_or_else(|| {
            if pi_installed() {
                "pi".to_owned()
            } else {
                "demo".to_owned()
            }
        });
    let mut settings = config.provider_settings(&name);
    if let Some(bin) = &args.agent_bin {
        settings.command = Some(bin.clone());
    }
    if let Some(model) = &args.model {
        settings.model = Some(model.clone());
    }
    settings.args.extend(args.provider_args.iter().cloned());
    (name, settings)
}

/// The first executable file called `name` in the directories of `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_beat_config_and_override_settings() {
        let mut config = Config {
            default_provider: Some("claude".into()),
            ..Config::default()
        };
        config.providers.insert(
            "codex".into(),
            ProviderSettings {
                args: vec!["--configured".into()],
                model: Some("configured-model".into()),
                ..ProviderSettings::default()
            },
        );
        let args = AgentArgs {
            provider: Some("codex".into()),
            agent_bin: Some("/opt/codex".into()),
            model: Some("flag-model".into()),
            provider_args: vec!["--extra".into()],
            ..AgentArgs::default()
        };
        let (name, settings) = resolve_provider(&args, &config);
        assert_eq!(name, "codex");
        assert_eq!(settings.command, Some(PathBuf::from("/opt/codex")));
        assert_eq!(settings.model.as_deref(), Some("flag-model"));
        assert_eq!(settings.args, vec!["--configured", "--extra"]);

        let (name, _) = resolve_provider(&AgentArgs::default(), &config);
        assert_eq!(name, "claude");
    }

    #[test]
    fn default_is_pi_when_installed_else_demo() {
        let none = AgentArgs::default();
        let (name, _) = resolve_provider_with(&none, &Config::default(), || true);
        assert_eq!(name, "pi");
        let (name, _) = resolve_provider_with(&none, &Config::default(), || false);
        assert_eq!(name, "demo");
        assert!(find_on_path("sh").is_some());
        assert!(find_on_path("definitely-not-a-real-binary-name").is_none());
    }
}
