//! The user's configuration: `agentty/config.toml` in the platform's config dir.
//!
//! Loading never stops the app: a broken file or value gives a clear message naming the key and
//! the file, and the defaults apply instead. The retry section is judged on its own: a bad retry
//! value costs only the retry settings (they fall back to the defaults), never the rest of the
//! file. Saving the retry policy edits the file in place (toml_edit), so the user's comments,
//! layout and unrelated keys survive.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml_edit::{DocumentMut, Item, TableLike};

mod lenient;

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
    /// The model, where the CLI takes one (`--model`); on an agent that lists its models (ACP),
    /// the one a conversation starts on.
    pub model: Option<String>,
    /// The mode a conversation starts in, by the agent's id for it, where the agent lists modes
    /// (an ACP session mode such as `plan`; Claude Code's permission mode `default`,
    /// `acceptEdits`, `plan`, passed as `--permission-mode`; Codex's approval preset).
    pub mode: Option<String>,
    /// How to talk to the CLI (`json`, `rpc` or `acp`); `None`: the best it has for the chat,
    /// the one-shot JSON mode for `agentty run`.
    pub transport: Option<Transport>,
    /// What a provider defined in the config speaks (`acp`: any Agent Client Protocol agent,
    /// started with `command`, `args` and `env`).
    pub protocol: Option<Transport>,
    /// The ACP adapter to run for claude or codex instead of the one found on PATH
    /// (`claude-agent-acp`, `codex-acp`).
    pub acp_command: Option<PathBuf>,
    /// What to do when the agent asks before acting: `ask` (the chat's default), `allow` or
    /// `deny` (headless runs never ask: `deny` unless `--permissions allow`).
    pub permissions: Option<PermissionPolicy>,
}

impl ProviderSettings {
    /// The transport asked for: `transport`, else what a configured provider speaks.
    pub(crate) fn chosen_transport(&self) -> Option<Transport> {
        self.transport.or(self.protocol)
    }
}

/// How permission requests of an agent are answered.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum PermissionPolicy {
    /// Ask the user (the chat).
    Ask,
    /// Allow once, every time.
    Allow,
    /// Reject once, every time.
    Deny,
}

/// How a backend talks to its CLI (DESIGN.md "Transports").
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// One process per attempt (`--mode json`).
    Json,
    /// One long-lived process per conversation, commands on stdin (`--mode rpc`).
    Rpc,
    /// One long-lived process per conversation speaking the Agent Client Protocol.
    Acp,
    /// One long-lived Codex `app-server` per conversation (JSON-RPC over stdio).
    #[serde(rename = "app-server")]
    #[value(name = "app-server")]
    AppServer,
    /// One long-lived process per conversation in Claude Code's stream-json mode with its
    /// control protocol.
    Stream,
}

impl Transport {
    /// The `--transport` value.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Transport::Json => "json",
            Transport::Rpc => "rpc",
            Transport::Acp => "acp",
            Transport::AppServer => "app-server",
            Transport::Stream => "stream",
        }
    }

    /// What it means for the user, in a few words.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Transport::Json => "one process per turn (JSON mode)",
            Transport::Rpc => "one long-lived process (RPC mode)",
            Transport::Acp => "one long-lived process (Agent Client Protocol)",
            Transport::AppServer => "one long-lived process (Codex app-server)",
            Transport::Stream => "one long-lived process (stream-json control protocol)",
        }
    }
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

impl Backoff {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Backoff::Fixed => "fixed",
            Backoff::Exponential => "exponential",
        }
    }
}

/// The table name of the retry policy in the config file.
pub(crate) const RETRY_SECTION: &str = "provider_error_auto_retry";
/// More attempts than this per turn is a typo, not a policy.
pub(crate) const MAX_ATTEMPTS_LIMIT: u32 = 20;
/// Longer waits than this (10 minutes) between attempts are a typo, not a policy.
pub(crate) const MAX_DELAY_LIMIT_MS: u64 = 600_000;

/// The keys of `[provider_error_auto_retry]`: each key's name, how it is read from the config
/// file and how it is written back, in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RetryKey {
    Enabled,
    MaxAttempts,
    RetryDelayMs,
    Backoff,
    MaxDelayMs,
}

impl RetryKey {
    pub(crate) const ALL: [RetryKey; 5] = [
        RetryKey::Enabled,
        RetryKey::MaxAttempts,
        RetryKey::RetryDelayMs,
        RetryKey::Backoff,
        RetryKey::MaxDelayMs,
    ];

    pub(crate) const fn name(self) -> &'static str {
        match self {
            RetryKey::Enabled => "enabled",
            RetryKey::MaxAttempts => "max_attempts",
            RetryKey::RetryDelayMs => "retry_delay_ms",
            RetryKey::Backoff => "backoff",
            RetryKey::MaxDelayMs => "max_delay_ms",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<RetryKey> {
        RetryKey::ALL.into_iter().find(|key| key.name() == name)
    }

    /// Sets this key of `policy` from a config value (types only; ranges are `validate`'s).
    fn read(self, value: &toml::Value, policy: &mut RetryPolicy) -> Result<(), String> {
        match self {
            RetryKey::Enabled => value
                .as_bool()
                .map(|enabled| policy.enabled = enabled)
                .ok_or_else(|| format!("`{value}` is not true or false")),
            RetryKey::MaxAttempts => unsigned(value).and_then(|attempts| {
                u32::try_from(attempts)
                    .map(|attempts| policy.max_attempts = attempts)
                    .map_err(|_| format!("{attempts} is out of range"))
            }),
            RetryKey::RetryDelayMs => unsigned(value).map(|delay| policy.retry_delay_ms = delay),
            RetryKey::MaxDelayMs => unsigned(value).map(|delay| policy.max_delay_ms = delay),
            RetryKey::Backoff => match value.as_str() {
                Some("fixed") => {
                    policy.backoff = Backoff::Fixed;
                    Ok(())
                }
                Some("exponential") => {
                    policy.backoff = Backoff::Exponential;
                    Ok(())
                }
                _ => Err(format!(
                    "`{value}` is not a backoff: use \"fixed\" or \"exponential\""
                )),
            },
        }
    }

    /// This key's value in `policy`, as written to the config file.
    fn written(self, policy: &RetryPolicy) -> toml_edit::Value {
        match self {
            RetryKey::Enabled => policy.enabled.into(),
            RetryKey::MaxAttempts => i64::from(policy.max_attempts).into(),
            RetryKey::RetryDelayMs => clamp_to_i64(policy.retry_delay_ms).into(),
            RetryKey::Backoff => policy.backoff.as_str().into(),
            RetryKey::MaxDelayMs => clamp_to_i64(policy.max_delay_ms).into(),
        }
    }
}

/// One thing wrong with a retry policy: the key and what is wrong with its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PolicyProblem {
    pub(crate) key: String,
    pub(crate) problem: String,
}

impl std::fmt::Display for PolicyProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{RETRY_SECTION}.{}: {}", self.key, self.problem)
    }
}

impl RetryPolicy {
    /// Checks the ranges (the types are already right in a `RetryPolicy`).
    pub(crate) fn validate(&self) -> Result<(), Vec<PolicyProblem>> {
        let mut problems = Vec::new();
        if !(1..=MAX_ATTEMPTS_LIMIT).contains(&self.max_attempts) {
            problems.push(PolicyProblem::new(
                RetryKey::MaxAttempts.name(),
                format!(
                    "{} is out of range: it must be between 1 and {MAX_ATTEMPTS_LIMIT}",
                    self.max_attempts
                ),
            ));
        }
        for (key, value) in [
            (RetryKey::RetryDelayMs, self.retry_delay_ms),
            (RetryKey::MaxDelayMs, self.max_delay_ms),
        ] {
            if value > MAX_DELAY_LIMIT_MS {
                problems.push(PolicyProblem::new(
                    key.name(),
                    format!(
                        "{value} is too long: it must be at most {MAX_DELAY_LIMIT_MS} (10 minutes)"
                    ),
                ));
            }
        }
        let delays_in_range =
            self.retry_delay_ms <= MAX_DELAY_LIMIT_MS && self.max_delay_ms <= MAX_DELAY_LIMIT_MS;
        if delays_in_range && self.max_delay_ms < self.retry_delay_ms {
            problems.push(PolicyProblem::new(
                RetryKey::MaxDelayMs.name(),
                format!(
                    "{} is shorter than retry_delay_ms ({}): the cap must not be below the first delay",
                    self.max_delay_ms, self.retry_delay_ms
                ),
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }

    /// How long to wait after the failed attempt `failed_attempt` (1-based) before the next.
    pub(crate) fn delay_after_attempt_ms(&self, failed_attempt: u32) -> u64 {
        let delay = match self.backoff {
            Backoff::Fixed => self.retry_delay_ms,
            Backoff::Exponential => {
                let doublings = failed_attempt.saturating_sub(1).min(63);
                self.retry_delay_ms.saturating_mul(1u64 << doublings)
            }
        };
        delay.min(self.max_delay_ms)
    }

    /// Attempts a turn may make under this policy (1 when automatic retry is off).
    pub(crate) fn attempts_per_turn(&self) -> u32 {
        if self.enabled {
            self.max_attempts.max(1)
        } else {
            1
        }
    }

    /// Reads the `[provider_error_auto_retry]` table, reporting every bad key.
    pub(crate) fn from_toml(value: &toml::Value) -> Result<RetryPolicy, Vec<PolicyProblem>> {
        let Some(table) = value.as_table() else {
            return Err(vec![PolicyProblem::new(
                "",
                format!("must be a table, not `{value}`"),
            )]);
        };
        let mut policy = RetryPolicy::default();
        let mut problems = Vec::new();
        for (key, value) in table {
            let parsed = match RetryKey::from_name(key) {
                Some(known) => known.read(value, &mut policy),
                None => Err(format!(
                    "unknown key (known keys: {})",
                    RetryKey::ALL.map(RetryKey::name).join(", ")
                )),
            };
            if let Err(problem) = parsed {
                problems.push(PolicyProblem::new(key, problem));
            }
        }
        if let Err(range_problems) = policy.validate() {
            problems.extend(range_problems);
        }
        if problems.is_empty() {
            Ok(policy)
        } else {
            Err(problems)
        }
    }
}

impl PolicyProblem {
    fn new(key: &str, problem: impl Into<String>) -> Self {
        Self {
            key: key.to_owned(),
            problem: problem.into(),
        }
    }
}

fn unsigned(value: &toml::Value) -> Result<u64, String> {
    match value.as_integer() {
        Some(number) if number < 0 => Err(format!("{number} is negative")),
        Some(number) => Ok(number.unsigned_abs()),
        None => Err(format!("`{value}` is not a whole number")),
    }
}

/// On by default: a transient failure (a rate limit, a 5xx, a dropped connection) is retried a
/// few times, as the CLIs would on their own (agentty turns their own retries off).
#[cfg(test)]
impl RetryPolicy {
    /// The default policy with automatic retry turned off (for tests).
    pub(crate) fn off() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            enabled: true,
            max_attempts: 3,
            retry_delay_ms: 2000,
            backoff: Backoff::Exponential,
            max_delay_ms: 30_000,
        }
    }
}

/// `[session_logs]`: how long session logs are kept (`crate::retention` applies it), so that
/// they never fill a disk. 0 turns a limit off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct SessionLogRetention {
    /// Conversations last written longer ago than this many days are deleted.
    pub(crate) max_age_days: u64,
    /// Beyond this many megabytes of logs in all, the oldest conversations are deleted.
    pub(crate) max_total_mb: u64,
}

impl Default for SessionLogRetention {
    fn default() -> Self {
        Self {
            max_age_days: 30,
            max_total_mb: 1024,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The provider used when `--provider` is not given.
    pub(crate) default_provider: Option<String>,
    pub providers: BTreeMap<String, ProviderSettings>,
    pub(crate) provider_error_auto_retry: RetryPolicy,
    /// The colours: for a dark or a light terminal background, or as the terminal says.
    pub(crate) theme: Option<Theme>,
    pub(crate) session_logs: SessionLogRetention,
    /// `[snapshots]`: the working tree's snapshot before each turn (`/diff`, `/undo`).
    pub(crate) snapshots: crate::snapshot::SnapshotLimits,
    /// `notify`: how agentty calls the user back when a turn ends or a permission prompt
    /// waits while the terminal is not focused.
    pub(crate) notify: Option<NotifyMode>,
    /// `image_max_bytes`: the largest image a prompt may carry (default 5 MiB).
    pub(crate) image_max_bytes: Option<u64>,
}

/// `notify`: the call back when agentty needs the user and its terminal is not focused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NotifyMode {
    /// Nothing.
    Off,
    /// The terminal bell (BEL) only.
    Bell,
    /// The bell, plus a desktop notification (OSC 9 or OSC 777) where the terminal is known to
    /// show one.
    #[default]
    Osc,
}

/// `theme`: the terminal's background, which every colour agentty draws with must stay readable
/// on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Theme {
    /// As the terminal says (`COLORFGBG`), dark when it says nothing.
    #[default]
    Auto,
    Dark,
    Light,
}

/// A terminal background, as a theme is drawn for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Background {
    #[default]
    Dark,
    Light,
}

impl Theme {
    pub(crate) const ALL: [Theme; 3] = [Theme::Auto, Theme::Dark, Theme::Light];

    /// Its name in the config file.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Theme::Auto => "auto",
            Theme::Dark => "dark",
            Theme::Light => "light",
        }
    }

    /// The background to draw for, given what the terminal said about its own (`terminal`).
    pub(crate) fn background(self, terminal: Option<Background>) -> Background {
        match self {
            Theme::Auto => terminal.unwrap_or_default(),
            Theme::Dark => Background::Dark,
            Theme::Light => Background::Light,
        }
    }
}

/// The background a terminal announces in `COLORFGBG` (`"15;0"`, `"0;default;15"`: the last
/// field is the background's ANSI colour; rxvt, Konsole, iTerm2 and others set it). ANSI 7 and
/// 9-15 are light; 0-6 and 8 dark; anything else says nothing.
pub(crate) fn background_from_colorfgbg(value: &str) -> Option<Background> {
    let colour: u8 = value.rsplit(';').next()?.trim().parse().ok()?;
    match colour {
        0..=6 | 8 => Some(Background::Dark),
        7 | 9..=15 => Some(Background::Light),
        _ => None,
    }
}

impl Config {
    pub(crate) fn provider_settings(&self, name: &str) -> ProviderSettings {
        self.providers.get(name).cloned().unwrap_or_default()
    }
}

/// The default config file path (`<config dir>/agentty/config.toml`).
pub(crate) fn default_config_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "agentty")
        .map(|dirs| dirs.config_dir().join("config.toml"))
}

/// A loaded config plus the problems found on the way (shown to the user, never fatal).
#[derive(Debug, Clone, Default)]
pub struct LoadedConfig {
    pub config: Config,
    pub(crate) path: Option<PathBuf>,
    pub(crate) warnings: Vec<String>,
}

/// The largest config file read: a config is a few hundred bytes, and a path such as
/// `/dev/zero` or a FIFO must not be read for ever (only regular files are read at all).
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Reads a config file: a regular file, at most [`MAX_CONFIG_BYTES`], UTF-8.
fn read_config(path: &Path) -> std::io::Result<String> {
    crate::files::read_text_limited(path, MAX_CONFIG_BYTES)
}

/// Loads `path` (or the default path). A missing file is not a problem; anything else that is
/// wrong becomes a warning and the defaults apply.
pub fn load(path: Option<&Path>) -> LoadedConfig {
    let path = path.map(Path::to_path_buf).or_else(default_config_path);
    let Some(path) = path else {
        return LoadedConfig::default();
    };
    let read = read_config(&path);
    loaded_from(path, read)
}

/// The config that `read` (the file at `path`, read) gives.
fn loaded_from(path: PathBuf, read: std::io::Result<String>) -> LoadedConfig {
    let text = match read {
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

/// Like [`load`], but a file named with `--config` must exist: a mistyped path must not fall
/// back to the defaults without a word. The default path may be absent (a fresh machine). A
/// named file that cannot be read (a FIFO, a device, a directory, too large, not UTF-8) is
/// refused the same way, at once.
pub(crate) fn load_checked(explicit: Option<&Path>) -> Result<LoadedConfig, String> {
    let Some(path) = explicit else {
        return Ok(load(None));
    };
    match read_config(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "--config {}: no such file (create it, see assets/config.example.toml, or leave out --config to use {})",
            path.display(),
            default_config_path()
                .map_or_else(|| "the defaults".to_owned(), |path| path.display().to_string())
        )),
        Err(error) => Err(format!(
            "--config {}: {error}; give a TOML file (see assets/config.example.toml)",
            path.display()
        )),
        read => Ok(loaded_from(path.to_path_buf(), read)),
    }
}

/// Parses config text; `origin` names the file in messages.
///
/// The retry section is validated separately from the rest, so that a bad retry value falls back
/// to the default policy while the providers, theme and default provider still apply (and the
/// other way round).
pub(crate) fn parse(text: &str, origin: &Path) -> (Config, Vec<String>) {
    let file = origin.display();
    let mut table = match toml::from_str::<toml::Table>(text) {
        Ok(table) => table,
        Err(error) => {
            let line = error
                .span()
                .map(|span| format!(", line {}", line_of(text, span.start)))
                .unwrap_or_default();
            return (
                Config::default(),
                vec![format!(
                    "{file}{line}: {}; using defaults",
                    error.message().trim()
                )],
            );
        }
    };
    let retry_section = table.remove(RETRY_SECTION);
    let mut warnings: Vec<String> = lenient::drop_bad_keys(&mut table, text)
        .into_iter()
        .map(|dropped| {
            let line = dropped
                .line
                .map(|line| format!(", line {line}"))
                .unwrap_or_default();
            format!(
                "{file}{line}: `{}`: {}; ignored, the rest of the config applies",
                dropped.path, dropped.problem
            )
        })
        .collect();
    let mut config = match toml::Value::Table(table).try_into::<Config>() {
        Ok(config) => config,
        Err(error) => {
            warnings.push(format!(
                "{file}: {}; using the default providers, theme and default provider",
                error.message().trim()
            ));
            Config::default()
        }
    };
    if let Some(section) = retry_section {
        match RetryPolicy::from_toml(&section) {
            Ok(policy) => config.provider_error_auto_retry = policy,
            Err(problems) => warnings.extend(
                problems
                    .iter()
                    .map(|problem| format!("{file}: {problem}; using the default retry policy")),
            ),
        }
    }
    (config, warnings)
}

fn line_of(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset]
        .iter()
        .filter(|&&byte| byte == b'\n')
        .count()
        + 1
}

/// Why a setting could not be saved.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SaveError {
    #[error("cannot save an invalid retry policy: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    InvalidPolicy(Vec<PolicyProblem>),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not valid TOML ({message}); not overwriting it")]
    NotToml { path: PathBuf, message: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A setting the user changed in the chat, written into the config file so the next launch
/// starts with it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Setting {
    RetryPolicy(RetryPolicy),
    Notify(NotifyMode),
    Theme(Theme),
}

impl Setting {
    /// Its key (or section) in the config file.
    fn key(&self) -> &'static str {
        match self {
            Setting::RetryPolicy(_) => RETRY_SECTION,
            Setting::Notify(_) => "notify",
            Setting::Theme(_) => "theme",
        }
    }

    /// What the setting is, in the user's words.
    pub(crate) fn what(&self) -> &'static str {
        match self {
            Setting::RetryPolicy(_) => "Retry policy",
            Setting::Notify(_) => "Notification setting",
            Setting::Theme(_) => "Colours",
        }
    }
}

/// The commented example config: a config file agentty creates starts as it, so that the user
/// who opens it finds every key explained.
const CONFIG_TEMPLATE: &str = include_str!("../assets/config.example.toml");

/// Writes `setting` into the config file at `path`, which starts as the commented example when
/// it does not exist yet; the one way every setting is saved.
///
/// Only the setting's own keys change: comments, formatting and every other key stay as they
/// were (unknown keys inside the retry section are dropped, since they would make the section
/// invalid on the next load). The file is replaced atomically.
pub(crate) fn save_setting(path: &Path, setting: &Setting) -> Result<(), SaveError> {
    if let Setting::RetryPolicy(policy) = setting {
        policy.validate().map_err(SaveError::InvalidPolicy)?;
    }
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => CONFIG_TEMPLATE.to_owned(),
        Err(source) => {
            return Err(SaveError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let text = match setting {
        Setting::Notify(_) | Setting::Theme(_) => uncomment_example(text, setting.key()),
        Setting::RetryPolicy(_) => text,
    };
    let mut document = text
        .parse::<DocumentMut>()
        .map_err(|error| SaveError::NotToml {
            path: path.to_path_buf(),
            message: error.message().trim().to_owned(),
        })?;
    match setting {
        Setting::RetryPolicy(policy) => {
            let section = document
                .entry(RETRY_SECTION)
                .or_insert_with(toml_edit::table);
            if section.as_table_like().is_none() {
                *section = toml_edit::table();
            }
            if let Some(table) = section.as_table_like_mut() {
                write_policy(table, policy);
            }
        }
        Setting::Notify(mode) => {
            let name = match mode {
                NotifyMode::Off => "off",
                NotifyMode::Bell => "bell",
                NotifyMode::Osc => "osc",
            };
            write_top_level(&mut document, setting.key(), name);
        }
        Setting::Theme(theme) => write_top_level(&mut document, setting.key(), theme.name()),
    }
    write_atomically(path, document.to_string().as_bytes()).map_err(|source| SaveError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// The config text with its commented example of the top-level `key` (`# theme = "auto"`, as
/// the template has it) made a live line, when the key is not set yet: the value written next
/// then stands under its own documentation, not above the file's header.
fn uncomment_example(text: String, key: &str) -> String {
    let before_tables = text
        .lines()
        .take_while(|line| !line.trim_start().starts_with('['));
    let mut set = false;
    let mut example = None;
    for line in before_tables {
        let live = line.trim_start();
        if live
            .split('=')
            .next()
            .is_some_and(|name| name.trim() == key)
        {
            set = true;
        }
        let commented = live.strip_prefix('#').map(str::trim_start);
        if example.is_none()
            && commented.is_some_and(|rest| {
                rest.split('=')
                    .next()
                    .is_some_and(|name| name.trim() == key)
            })
        {
            example = Some(line);
        }
    }
    match example {
        Some(line) if !set => {
            let live = line.trim_start().trim_start_matches('#').trim_start();
            let uncommented = text.replacen(line, live, 1);
            // An example that is not TOML once live is left as the comment it was.
            if uncommented.parse::<DocumentMut>().is_ok() {
                uncommented
            } else {
                text
            }
        }
        _ => text,
    }
}

/// Sets `key = "<value>"` at the top of `document`, keeping its comment and spacing.
fn write_top_level(document: &mut DocumentMut, key: &str, name: &str) {
    let mut value = toml_edit::Value::from(name);
    match document.get_mut(key).and_then(Item::as_value_mut) {
        Some(existing) => {
            *value.decor_mut() = existing.decor().clone();
            *existing = value;
        }
        None => {
            document.insert(key, Item::Value(value));
        }
    }
}

fn write_policy(table: &mut dyn TableLike, policy: &RetryPolicy) {
    let unknown: Vec<String> = table
        .iter()
        .map(|(key, _)| key.to_owned())
        .filter(|key| RetryKey::from_name(key).is_none())
        .collect();
    for key in unknown {
        table.remove(&key);
    }
    for key in RetryKey::ALL {
        let mut value = key.written(policy);
        let key = key.name();
        match table.get_mut(key).and_then(Item::as_value_mut) {
            Some(existing) => {
                // Keep `key = value  # comment` comments and spacing.
                *value.decor_mut() = existing.decor().clone();
                *existing = value;
            }
            None => {
                table.insert(key, Item::Value(value));
            }
        }
    }
}

fn clamp_to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // A config file symlinked into a dotfiles repository must stay a symlink.
    let resolved = std::fs::canonicalize(path).ok();
    let path = resolved.as_deref().unwrap_or(path);
    if let Some(parent) = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent)?;
    }
    // The user's own permissions stay (a config may hold keys); a new one is theirs only.
    let mode = std::fs::metadata(path)
        .map(|metadata| std::os::unix::fs::PermissionsExt::mode(&metadata.permissions()) & 0o7777)
        .unwrap_or(0o600);
    crate::files::write_atomically(path, bytes, mode, crate::files::Durability::Synced)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGIN: &str = "/home/user/.config/agentty/config.toml";

    fn parse_text(text: &str) -> (Config, Vec<String>) {
        parse(text, Path::new(ORIGIN))
    }

    fn policy(
        enabled: bool,
        max_attempts: u32,
        delay: u64,
        backoff: Backoff,
        cap: u64,
    ) -> RetryPolicy {
        RetryPolicy {
            enabled,
            max_attempts,
            retry_delay_ms: delay,
            backoff,
            max_delay_ms: cap,
        }
    }

    #[test]
    fn a_new_config_file_starts_as_the_commented_template() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agentty/config.toml");
        let policy = RetryPolicy {
            enabled: true,
            max_attempts: 7,
            ..RetryPolicy::default()
        };
        save_setting(&path, &Setting::RetryPolicy(policy.clone())).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# agentty configuration"), "{text}");
        assert!(text.contains("# How each agent CLI is started."), "{text}");
        let loaded = load(Some(&path));
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert_eq!(loaded.config.provider_error_auto_retry, policy);
    }

    #[test]
    fn a_theme_saved_into_a_new_file_stands_under_its_own_documentation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agentty/config.toml");
        save_setting(&path, &Setting::Theme(Theme::Light)).unwrap();
        save_setting(&path, &Setting::Notify(NotifyMode::Bell)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# agentty configuration"), "{text}");
        let theme = text.find("\ntheme = \"light\"").expect("theme saved");
        let notify = text.find("\nnotify = \"bell\"").expect("notify saved");
        assert!(
            text[..theme].ends_with("# default_provider = \"pi\"\n"),
            "{text}"
        );
        assert!(text[..notify].contains("desktop notification"), "{text}");
        assert!(!text.contains("# theme ="), "one theme line: {text}");
        let loaded = load(Some(&path));
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert_eq!(loaded.config.theme, Some(Theme::Light));
        assert_eq!(loaded.config.notify, Some(NotifyMode::Bell));
    }

    #[test]
    fn a_commented_line_that_is_not_toml_once_live_stays_a_comment() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "# theme = my own words, not toml\n").unwrap();
        save_setting(&path, &Setting::Theme(Theme::Dark)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("# theme = my own words, not toml"), "{text}");
        assert_eq!(load(Some(&path)).config.theme, Some(Theme::Dark));
    }

    #[test]
    fn absent_retry_section_gives_the_documented_defaults() {
        let (config, warnings) = parse_text("theme = \"dark\"\n");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            config.provider_error_auto_retry,
            policy(true, 3, 2000, Backoff::Exponential, 30_000)
        );
        assert_eq!(config.theme, Some(Theme::Dark));
    }

    #[test]
    fn a_complete_retry_section_is_read() {
        let (config, warnings) = parse_text(
            "[provider_error_auto_retry]\nenabled = true\nmax_attempts = 5\nretry_delay_ms = 100\n\
             backoff = \"fixed\"\nmax_delay_ms = 1000\n",
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            config.provider_error_auto_retry,
            policy(true, 5, 100, Backoff::Fixed, 1000)
        );
    }

    #[test]
    fn a_partial_retry_section_fills_in_defaults() {
        let (config, warnings) = parse_text("[provider_error_auto_retry]\nenabled = true\n");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            config.provider_error_auto_retry,
            RetryPolicy {
                enabled: true,
                ..RetryPolicy::default()
            }
        );
    }

    /// Each bad value names its key and the file, costs only the retry section, and keeps the
    /// rest of the config.
    #[test]
    fn invalid_retry_values_name_key_and_file_and_keep_the_rest() {
        let cases = [
            (
                "max_attempts = 0",
                "provider_error_auto_retry.max_attempts",
                "between 1 and 20",
            ),
            (
                "max_attempts = 1000",
                "provider_error_auto_retry.max_attempts",
                "between 1 and 20",
            ),
            (
                "max_attempts = 99999999999",
                "provider_error_auto_retry.max_attempts",
                "out of range",
            ),
            (
                "retry_delay_ms = -5",
                "provider_error_auto_retry.retry_delay_ms",
                "-5 is negative",
            ),
            (
                "retry_delay_ms = 86400000",
                "provider_error_auto_retry.retry_delay_ms",
                "too long",
            ),
            (
                "max_delay_ms = 86400000",
                "provider_error_auto_retry.max_delay_ms",
                "too long",
            ),
            (
                "max_delay_ms = -1",
                "provider_error_auto_retry.max_delay_ms",
                "negative",
            ),
            (
                "max_delay_ms = 100",
                "provider_error_auto_retry.max_delay_ms",
                "shorter than retry_delay_ms",
            ),
            (
                "retry_delay_ms = 2.5",
                "provider_error_auto_retry.retry_delay_ms",
                "not a whole number",
            ),
            (
                "enabled = \"yes\"",
                "provider_error_auto_retry.enabled",
                "not true or false",
            ),
            (
                "backoff = \"linear\"",
                "provider_error_auto_retry.backoff",
                "\"fixed\" or \"exponential\"",
            ),
            (
                "max_attempt = 3",
                "provider_error_auto_retry.max_attempt",
                "unknown key",
            ),
        ];
        for (line, key, problem) in cases {
            // A valid key beside the bad one must not survive either.
            let valid = if line.starts_with("enabled") {
                "max_attempts = 4"
            } else {
                "enabled = true"
            };
            let text = format!(
                "theme = \"light\"\ndefault_provider = \"claude\"\n\
                 [provider_error_auto_retry]\n{valid}\n{line}\n"
            );
            let (config, warnings) = parse_text(&text);
            assert_eq!(
                config.provider_error_auto_retry,
                RetryPolicy::default(),
                "{line}: the whole retry section falls back"
            );
            assert_eq!(config.theme, Some(Theme::Light), "{line}");
            assert_eq!(config.default_provider.as_deref(), Some("claude"), "{line}");
            assert_eq!(warnings.len(), 1, "{line}: {warnings:?}");
            let warning = &warnings[0];
            assert!(warning.starts_with(ORIGIN), "{warning}");
            assert!(warning.contains(key), "{line}: {warning}");
            assert!(warning.contains(problem), "{line}: {warning}");
            assert!(
                warning.ends_with("using the default retry policy"),
                "{warning}"
            );
        }
    }

    #[test]
    fn every_bad_retry_key_is_reported() {
        let (_, warnings) =
            parse_text("[provider_error_auto_retry]\nmax_attempts = 0\nbackoff = 3\nextra = 1\n");
        assert_eq!(warnings.len(), 3, "{warnings:?}");
    }

    #[test]
    fn a_retry_section_that_is_not_a_table_is_reported() {
        let (config, warnings) = parse_text("provider_error_auto_retry = true\n");
        assert_eq!(config.provider_error_auto_retry, RetryPolicy::default());
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("must be a table"), "{warnings:?}");
    }

    #[test]
    fn a_bad_key_elsewhere_keeps_a_valid_retry_policy() {
        let (config, warnings) =
            parse_text("colour = \"red\"\n[provider_error_auto_retry]\nenabled = true\n");
        assert!(config.provider_error_auto_retry.enabled);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("colour"), "{warnings:?}");
        assert!(warnings[0].starts_with(ORIGIN), "{warnings:?}");
    }

    #[test]
    fn an_unknown_key_costs_only_itself_and_is_named_with_its_line() {
        let text = "default_provider = \"claude\"\ncolour = \"red\"\n\n[providers.pi]\ncommand = \"/opt/pi\"\ncomand = \"/typo\"\nenv = { PI_HOME = \"/x\" }\n\n[providers.claude]\nargs = [\"--verbose\"]\nmodel = 7\n";
        let (config, warnings) = parse_text(text);
        assert_eq!(config.default_provider.as_deref(), Some("claude"));
        let pi = config.provider_settings("pi");
        assert_eq!(pi.command, Some(PathBuf::from("/opt/pi")));
        assert_eq!(pi.env.get("PI_HOME").map(String::as_str), Some("/x"));
        assert_eq!(config.provider_settings("claude").args, ["--verbose"]);
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(
            warnings[0].starts_with(&format!("{ORIGIN}, line 2: `colour`: unknown key")),
            "{warnings:?}"
        );
        assert!(
            warnings[1].starts_with(&format!("{ORIGIN}, line 6: `providers.pi.comand`: unknown key (known keys: acp_command, args, command, env, mode, model")),
            "{warnings:?}"
        );
        assert!(
            warnings[2].starts_with(&format!(
                "{ORIGIN}, line 11: `providers.claude.model`: invalid type"
            )),
            "{warnings:?}"
        );
    }

    #[test]
    fn broken_toml_names_the_file_and_line() {
        let (config, warnings) = parse_text("theme = \"dark\"\n[provider_error_auto_retry\n");
        assert_eq!(config, Config::default());
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with(&format!("{ORIGIN}, line 2:")),
            "{warnings:?}"
        );
    }

    #[test]
    fn the_example_config_is_valid() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/config.example.toml");
        let loaded = load(Some(&path));
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert_eq!(
            loaded.config.provider_error_auto_retry,
            RetryPolicy::default()
        );
    }

    #[test]
    fn validate_accepts_the_defaults_and_zero_delay() {
        assert_eq!(RetryPolicy::default().validate(), Ok(()));
        assert_eq!(policy(true, 1, 0, Backoff::Fixed, 0).validate(), Ok(()));
        let problems = policy(true, 0, 700_000, Backoff::Fixed, 800_000)
            .validate()
            .unwrap_err();
        let keys: Vec<&str> = problems
            .iter()
            .map(|problem| problem.key.as_str())
            .collect();
        assert_eq!(keys, ["max_attempts", "retry_delay_ms", "max_delay_ms"]);
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let exponential = policy(true, 10, 2000, Backoff::Exponential, 30_000);
        let delays: Vec<u64> = (1..=6)
            .map(|attempt| exponential.delay_after_attempt_ms(attempt))
            .collect();
        assert_eq!(delays, [2000, 4000, 8000, 16_000, 30_000, 30_000]);
        assert_eq!(
            exponential.delay_after_attempt_ms(200),
            30_000,
            "no overflow"
        );
        let fixed = policy(true, 10, 2000, Backoff::Fixed, 30_000);
        assert_eq!(fixed.delay_after_attempt_ms(5), 2000);
        let capped = policy(true, 10, 2000, Backoff::Fixed, 2000);
        assert_eq!(capped.delay_after_attempt_ms(1), 2000);
    }

    #[test]
    fn attempts_per_turn_is_one_when_disabled() {
        assert_eq!(
            policy(false, 5, 0, Backoff::Fixed, 0).attempts_per_turn(),
            1
        );
        assert_eq!(policy(true, 5, 0, Backoff::Fixed, 0).attempts_per_turn(), 5);
    }

    const COMMENTED: &str = r#"# agentty settings (mine)
default_provider = "pi"  # the one I use

[providers.pi]
command = "/opt/pi/bin/pi"   # pinned
args = ["--thinking", "high"]

# Retry when the API is flaky.
[provider_error_auto_retry]
enabled = false    # off while I test
max_attempts = 3
# how long to wait first
retry_delay_ms = 2000
mystery = 1

[providers.claude]
model = "opus"
"#;

    #[test]
    fn saving_keeps_comments_and_unrelated_keys_and_reads_back_identically() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("config.toml");
        std::fs::write(&path, COMMENTED).unwrap();
        let wanted = policy(true, 5, 250, Backoff::Fixed, 4000);

        save_setting(&path, &Setting::RetryPolicy(wanted.clone())).unwrap();

        let saved = std::fs::read_to_string(&path).unwrap();
        // The policy's section edited in place; every other line, comment and spacing kept.
        let expected = COMMENTED
            .replace("enabled = false", "enabled = true")
            .replace("max_attempts = 3", "max_attempts = 5")
            .replace(
                "retry_delay_ms = 2000\nmystery = 1\n",
                "retry_delay_ms = 250\nbackoff = \"fixed\"\nmax_delay_ms = 4000\n",
            );
        assert_eq!(saved, expected);
        let loaded = load(Some(&path));
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert_eq!(loaded.config.provider_error_auto_retry, wanted);
        assert_eq!(loaded.config.default_provider.as_deref(), Some("pi"));
        assert_eq!(
            loaded.config.provider_settings("claude").model.as_deref(),
            Some("opus")
        );

        // Saving the same policy again changes nothing.
        save_setting(&path, &Setting::RetryPolicy(wanted.clone())).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
    }

    #[test]
    fn saving_adds_the_section_to_a_file_without_one() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("config.toml");
        std::fs::write(&path, "# my theme\ntheme = \"dark\"\n").unwrap();
        let wanted = policy(true, 4, 10, Backoff::Exponential, 80);
        save_setting(&path, &Setting::RetryPolicy(wanted.clone())).unwrap();
        let saved = std::fs::read_to_string(&path).unwrap();
        assert!(
            saved.starts_with("# my theme\ntheme = \"dark\"\n"),
            "{saved}"
        );
        let loaded = load(Some(&path));
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert_eq!(loaded.config.provider_error_auto_retry, wanted);
        assert_eq!(loaded.config.theme, Some(Theme::Dark));
    }

    #[test]
    fn saving_creates_a_missing_file_and_folder() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("agentty").join("config.toml");
        let wanted = policy(true, 2, 0, Backoff::Fixed, 0);
        save_setting(&path, &Setting::RetryPolicy(wanted.clone())).unwrap();
        assert_eq!(load(Some(&path)).config.provider_error_auto_retry, wanted);
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, [std::ffi::OsString::from("config.toml")]);
    }

    #[test]
    fn saving_into_an_inline_table_keeps_it_inline() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("config.toml");
        std::fs::write(&path, "provider_error_auto_retry = { enabled = false }\n").unwrap();
        let wanted = policy(true, 3, 2000, Backoff::Exponential, 30_000);
        save_setting(&path, &Setting::RetryPolicy(wanted.clone())).unwrap();
        let saved = std::fs::read_to_string(&path).unwrap();
        assert!(
            saved.starts_with("provider_error_auto_retry = {"),
            "{saved}"
        );
        assert_eq!(load(Some(&path)).config.provider_error_auto_retry, wanted);
    }

    #[test]
    fn saving_refuses_invalid_policies_and_broken_files() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("config.toml");
        let invalid = policy(true, 0, 10, Backoff::Fixed, 10);
        assert!(matches!(
            save_setting(&path, &Setting::RetryPolicy(invalid.clone())),
            Err(SaveError::InvalidPolicy(_))
        ));
        assert!(!path.exists());
        std::fs::write(&path, "theme = [unclosed\n").unwrap();
        let error = save_setting(&path, &Setting::RetryPolicy(RetryPolicy::default())).unwrap_err();
        assert!(matches!(error, SaveError::NotToml { .. }), "{error}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "theme = [unclosed\n"
        );
    }

    #[test]
    fn saving_through_a_symlink_keeps_the_symlink() {
        let folder = tempfile::tempdir().unwrap();
        let target = folder.path().join("dotfiles.toml");
        let link = folder.path().join("config.toml");
        std::fs::write(&target, "theme = \"dark\"\n").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let wanted = policy(true, 2, 5, Backoff::Fixed, 5);
        save_setting(&link, &Setting::RetryPolicy(wanted.clone())).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(load(Some(&target)).config.provider_error_auto_retry, wanted);
    }

    #[test]
    fn notify_is_read_and_saved_beside_the_other_keys() {
        let (config, warnings) = parse_text("notify = \"bell\"\n");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(config.notify, Some(NotifyMode::Bell));
        let (config, warnings) = parse_text("notify = \"loud\"\ntheme = \"light\"\n");
        assert_eq!(config.notify, None);
        assert_eq!(config.theme, Some(Theme::Light), "the rest still applies");
        assert_eq!(warnings.len(), 1, "{warnings:?}");

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(
            &path,
            "# mine\ntheme = \"dark\"\n\n[provider_error_auto_retry]\nenabled = true\n",
        )
        .unwrap();
        save_setting(&path, &Setting::Notify(NotifyMode::Off)).unwrap();
        save_setting(&path, &Setting::Notify(NotifyMode::Bell)).unwrap();
        let saved = std::fs::read_to_string(&path).unwrap();
        assert!(saved.starts_with("# mine\ntheme = \"dark\"\n"), "{saved}");
        assert_eq!(saved.matches("notify").count(), 1, "{saved}");
        let loaded = load(Some(&path));
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert_eq!(loaded.config.notify, Some(NotifyMode::Bell));
        assert!(loaded.config.provider_error_auto_retry.enabled);
    }

    #[test]
    fn theme_is_auto_dark_or_light_and_saved_beside_the_other_keys() {
        for (line, theme) in [
            ("theme = \"auto\"\n", Theme::Auto),
            ("theme = \"dark\"\n", Theme::Dark),
            ("theme = \"light\"\n", Theme::Light),
        ] {
            let (config, warnings) = parse_text(line);
            assert!(warnings.is_empty(), "{warnings:?}");
            assert_eq!(config.theme, Some(theme), "{line}");
        }
        let (config, warnings) = parse_text("theme = \"solarized\"\nnotify = \"bell\"\n");
        assert_eq!(config.theme, None);
        assert_eq!(
            config.notify,
            Some(NotifyMode::Bell),
            "the rest still applies"
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(
            &path,
            "# mine\ntheme = \"dark\"  # for my terminal\nnotify = \"bell\"\n",
        )
        .unwrap();
        save_setting(&path, &Setting::Theme(Theme::Light)).unwrap();
        let saved = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            saved,
            "# mine\ntheme = \"light\"  # for my terminal\nnotify = \"bell\"\n"
        );
        let fresh = dir.path().join("new.toml");
        save_setting(&fresh, &Setting::Theme(Theme::Auto)).unwrap();
        assert_eq!(load(Some(&fresh)).config.theme, Some(Theme::Auto));
    }

    #[test]
    fn auto_follows_colorfgbg_and_is_dark_when_the_terminal_says_nothing() {
        assert_eq!(background_from_colorfgbg("0;15"), Some(Background::Light));
        assert_eq!(
            background_from_colorfgbg("0;default;7"),
            Some(Background::Light)
        );
        assert_eq!(background_from_colorfgbg("15;0"), Some(Background::Dark));
        assert_eq!(background_from_colorfgbg("7;8"), Some(Background::Dark));
        assert_eq!(background_from_colorfgbg("15;default"), None);
        assert_eq!(background_from_colorfgbg(""), None);
        assert_eq!(background_from_colorfgbg("0;200"), None);
        let light = Some(Background::Light);
        assert_eq!(Theme::Auto.background(light), Background::Light);
        assert_eq!(Theme::Auto.background(None), Background::Dark);
        assert_eq!(Theme::Dark.background(light), Background::Dark);
        assert_eq!(Theme::Light.background(None), Background::Light);
    }
}
