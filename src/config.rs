//! The user's configuration: `agentty/config.toml` in the platform's config dir.
//!
//! Loading never stops the app: a broken file or value gives a clear message naming the key and
//! the file, and the defaults apply instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How one agent CLI is started.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderSettings {
    /// The executable; `None` means the CLI's usual name on PATH (or agentty itself for `demo`).
    pub command: Option<PathBuf>,
    /// Extra arguments, passed before the prompt.
    pub args: Vec<String>,
    /// Extra environment for the agent.
    pub env: BTreeMap<String, String>,
    /// The model, where the CLI takes one (`--model`).
    pub model: Option<String>,
}

/// `[provider_error_auto_retry]`: the orchestrator's retry policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryPolicy {
    pub enabled: bool,
    pub max_attempts: u32,
    pub retry_delay_ms: u64,
    pub backoff: Backoff,
    pub max_delay_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backoff {
    Fixed,
    Exponential,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            enabled: false,
            max_attempts: 3,
            retry_delay_ms: 2000,
            backoff: Backoff::Exponential,
            max_delay_ms: 30_000,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The provider used when `--provider` is not given.
    pub default_provider: Option<String>,
    pub providers: BTreeMap<String, ProviderSettings>,
    pub provider_error_auto_retry: RetryPolicy,
    pub theme: Option<String>,
}

impl Config {
    pub fn provider_settings(&self, name: &str) -> ProviderSettings {
        self.providers.get(name).cloned().unwrap_or_default()
    }
}

/// The default config file path (`<config dir>/agentty/config.toml`).
pub fn default_config_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "agentty")
        .map(|dirs| dirs.config_dir().join("config.toml"))
}

/// A loaded config plus the problems found on the way (shown to the user, never fatal).
#[derive(Debug, Clone, Default)]
pub struct LoadedConfig {
    pub config: Config,
    pub path: Option<PathBuf>,
    pub warnings: Vec<String>,
}

/// Loads `path` (or the default path). A missing file is not a problem; anything else that is
/// wrong becomes a warning and the defaults apply.
pub fn load(path: Option<&Path>) -> LoadedConfig {
    let path = path.map(Path::to_path_buf).or_else(default_config_path);
    let Some(path) = path else {
        return LoadedConfig::default();
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return LoadedConfig {
                path: Some(path),
                ..LoadedConfig::default()
            }
        }
        Err(error) => {
            return LoadedConfig {
                warnings: vec![format!(
                    "cannot read {}: {error}; using defaults",
                    path.display()
                )],
                path: Some(path),
                ..LoadedConfig::default()
            }
        }
    };
    let (config, warnings) = parse(&text, &path);
    LoadedConfig {
        config,
        path: Some(path),
        warnings,
    }
}

/// Parses config text; `origin` names the file in messages.
pub fn parse(text: &str, origin: &Path) -> (Config, Vec<String>) {
    match toml::from_str::<Config>(text) {
        Ok(config) => (config, Vec::new()),
        Err(error) => (
            Config::default(),
            vec![format!(
                "{}: {}; using defaults",
                origin.display(),
                error.message()
            )],
        ),
    }
}
