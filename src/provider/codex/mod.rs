//! Codex backend: `codex exec --json --skip-git-repo-check [-C DIR] … PROMPT`, stdin closed.
//!
//! Codex waits for stdin EOF before it starts, so stdin is `/dev/null`; it stops promptly on
//! SIGINT to its process group (exit 1, nothing more printed). Later turns run
//! `codex exec … resume <thread id> PROMPT` (or `resume --last`).
//!
//! Codex retries by itself at two layers (per request, then per stream: up to 30 requests for
//! one HTTP 500). agentty's orchestrator is the only place that should retry, so both layers
//! are turned off with `-c model_providers.<id>.request_max_retries=0` and
//! `…stream_max_retries=0`, for the provider the run will use. Codex refuses any override of a
//! built-in provider (`openai`, `ollama`, `lmstudio`: "Built-in providers cannot be
//! overridden", and the whole config fails to load), and offers no other switch for them, so
//! the flags are only passed for a provider defined in the user's Codex config (or in the
//! configured extra arguments); with a built-in provider Codex keeps its own retries.

pub mod app_server;
mod items;
pub mod mapper;
pub(crate) mod usage;

use std::path::PathBuf;

use crate::config::ProviderSettings;
use crate::process::SpawnSpec;
use crate::provider::acp::adapter_transport;
use crate::provider::checkpoint::newest_file_named;
use crate::provider::{
    AttemptRequest, Backend, LiveTransport, Mapper, ProviderKind, Quirks, SessionRef, Transport,
};

/// The Codex ACP adapter's executable (`@zed-industries/codex-acp`).
pub(crate) const ACP_ADAPTER: &str = "codex-acp";

pub struct CodexBackend {
    settings: ProviderSettings,
    /// Each thread's running token total, across this backend's attempts.
    thread_totals: usage::ThreadTotals,
    /// Its ACP transport (through Zed's adapter), and the adapter to run when it is there.
    acp: (LiveTransport, Option<PathBuf>),
}

impl CodexBackend {
    pub fn new(settings: ProviderSettings) -> Self {
        let acp = adapter_transport(
            &settings,
            ProviderKind::Codex,
            ACP_ADAPTER,
            "@zed-industries/codex-acp",
        );
        Self {
            settings,
            thread_totals: usage::ThreadTotals::default(),
            acp,
        }
    }

    /// Zed's ACP adapter (`codex-acp`, or `acp_command`) with Codex's own retries off as for
    /// `exec`. Its sandbox needs `bwrap` on PATH, which the adapter does not ship: the one in
    /// the `@openai/codex` package is put on PATH when there is none.
    fn acp_spec(&self, request: &AttemptRequest) -> Option<SpawnSpec> {
        let program = self.acp.1.clone()?;
        let config_text = self.config_text();
        let mut args: Vec<String> = Vec::new();
        if let Some(model) = &self.settings.model {
            args.extend(["-c".into(), format!("model={model:?}")]);
        }
        if let Some(provider) = custom_model_provider(&self.settings.args, config_text.as_deref()) {
            for key in ["request_max_retries", "stream_max_retries"] {
                args.extend(["-c".into(), format!("model_providers.{provider}.{key}=0")]);
            }
        }
        Some(self.with_codex_env(SpawnSpec::new(program).args(args), request))
    }

    /// `codex app-server`, with Codex's own retries off as for `exec` (agentty retries) and
    /// the bundled `bwrap` on PATH for its sandbox, as for the ACP adapter.
    fn app_server_spec(&self, request: &AttemptRequest) -> SpawnSpec {
        let (program, config_text) = (self.program(), self.config_text());
        self.with_codex_env(
            SpawnSpec::new(program).args(app_server_args(&self.settings, config_text.as_deref())),
            request,
        )
    }

    /// The `codex` executable: the configured one, else the one on PATH.
    fn program(&self) -> PathBuf {
        self.settings
            .command
            .clone()
            .unwrap_or_else(|| "codex".into())
    }

    /// The Codex config file this run will read, if there is one.
    fn config_text(&self) -> Option<String> {
        self.codex_config_path()
            .and_then(|path| std::fs::read_to_string(path).ok())
    }

    /// The directory of the `bwrap` the `@openai/codex` package ships
    /// (`node_modules/@openai/codex-<platform>/vendor/<target>/codex-resources/bwrap`), found
    /// from the `codex` executable.
    fn bundled_bwrap_dir(&self) -> Option<PathBuf> {
        let codex = match &self.settings.command {
            Some(command) if command.components().count() > 1 => command.clone(),
            Some(command) => crate::process::find_on_path(&command.to_string_lossy())?,
            None => crate::process::find_on_path("codex")?,
        };
        // .../node_modules/@openai/codex/bin/codex.js -> .../node_modules/@openai
        let scope = std::fs::canonicalize(codex)
            .ok()?
            .parent()?
            .parent()?
            .parent()?
            .to_path_buf();
        for package in std::fs::read_dir(&scope).ok()?.flatten() {
            let Ok(targets) = std::fs::read_dir(package.path().join("vendor")) else {
                continue;
            };
            for target in targets.flatten() {
                let resources = target.path().join("codex-resources");
                if crate::process::is_executable(&resources.join("bwrap")) {
                    return Some(resources);
                }
            }
        }
        None
    }

    /// `spec` with the configured environment, the bundled `bwrap` on PATH when there is none
    /// (Codex's sandbox needs it), and the request's directory.
    fn with_codex_env(&self, mut spec: SpawnSpec, request: &AttemptRequest) -> SpawnSpec {
        for (key, value) in &self.settings.env {
            spec = spec.env(key, value);
        }
        if crate::process::find_on_path("bwrap").is_none() {
            if let Some(bwrap_dir) = self.bundled_bwrap_dir() {
                let path = std::env::var("PATH").unwrap_or_default();
                spec = spec.env("PATH", format!("{}:{path}", bwrap_dir.display()));
            }
        }
        spec.cwd = request.cwd.clone();
        spec
    }

    /// The Codex home this run will use: `$CODEX_HOME` (the configured environment first),
    /// else `~/.codex`.
    fn codex_home(&self) -> Option<PathBuf> {
        self.settings
            .env
            .get("CODEX_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("CODEX_HOME").map(PathBuf::from))
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".codex")))
    }

    /// The Codex config file this run will read: `<Codex home>/config.toml`.
    fn codex_config_path(&self) -> Option<PathBuf> {
        Some(self.codex_home()?.join("config.toml"))
    }
}

impl Backend for CodexBackend {
    fn name(&self) -> &'static str {
        crate::provider::ProviderKind::Codex.name()
    }

    fn spawn_spec(&self, request: &AttemptRequest) -> SpawnSpec {
        let (program, config_text) = (self.program(), self.config_text());
        let mut spec = SpawnSpec::new(program).args(exec_args(
            &self.settings,
            request,
            config_text.as_deref(),
        ));
        for (key, value) in &self.settings.env {
            spec = spec.env(key, value);
        }
        if let (SessionRef::Resume(thread_id), Some(codex_home)) =
            (&request.session, self.codex_home())
        {
            // So that the turn's usage is its own even when the thread began in another launch.
            self.thread_totals.seed_from_rollout(&codex_home, thread_id);
        }
        spec.cwd = request.cwd.clone();
        spec
    }

    fn live_transports(&self) -> Vec<LiveTransport> {
        vec![
            LiveTransport::ready(Transport::AppServer),
            self.acp.0.clone(),
        ]
    }

    fn live_spawn_spec(&self, transport: Transport, request: &AttemptRequest) -> Option<SpawnSpec> {
        match transport {
            Transport::AppServer => Some(self.app_server_spec(request)),
            Transport::Acp => self.acp_spec(request),
            Transport::Json | Transport::Rpc | Transport::Stream => None,
        }
    }

    /// codex-acp passes Codex's errors on as they are worded.
    fn quirks(&self, transport: Transport, _request: &AttemptRequest) -> Quirks {
        Quirks {
            http_status_of: (transport == Transport::Acp).then_some(mapper::http_status_of as _),
            // Not `forgets_failed_prompt`: measured, the next prompt of the same codex-acp
            // process carries the failed one too; a failure needs the restored session file.
            ..Quirks::default()
        }
    }

    fn mapper(&self, request: &AttemptRequest) -> Box<dyn Mapper> {
        Box::new(mapper::CodexMapper::with_thread_totals(
            request.session != SessionRef::New,
            self.thread_totals.clone(),
        ))
    }

    /// Codex's thread-history projection, with its SQLite journal files: restored to the same
    /// moment as the rollout, its projected offsets match the rollout again (Codex is not
    /// running then, so the three files are a consistent snapshot).
    fn session_companions(&self, _request: &AttemptRequest) -> Vec<PathBuf> {
        let Some(codex_home) = self
            .codex_config_path()
            .and_then(|config| config.parent().map(PathBuf::from))
        else {
            return Vec::new();
        };
        [
            "thread_history_1.sqlite",
            "thread_history_1.sqlite-wal",
            "thread_history_1.sqlite-shm",
        ]
        .into_iter()
        .map(|name| codex_home.join(name))
        .collect()
    }

    fn lost_session_phrases(&self) -> &'static [&'static str] {
        // `exec resume <unknown thread>`: "thread/resume failed: no rollout found for thread id".
        &["no rollout found for thread id"]
    }

    /// Codex keeps a thread as `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`.
    ///
    /// The rollout is canonical: `exec resume` rebuilds the model's history from it, so
    /// restoring it undoes a failed attempt for the model (tests/suite/real_codex.rs). Codex 0.171 also
    /// projects it, by byte offset, into `$CODEX_HOME/thread_history_1.sqlite` (the turns and
    /// items its own thread views show); a restored, shorter rollout alone would leave that
    /// projection stale (measured: it kept the failed attempt and skipped what followed), so the
    /// database is a companion restored with it (see `session_companions`).
    fn session_file(&self, session_id: &str, _request: &AttemptRequest) -> Option<PathBuf> {
        let codex_home = self.codex_config_path()?.parent()?.to_path_buf();
        let suffix = format!("-{session_id}.jsonl");
        newest_file_named(&codex_home.join("sessions"), 3, &|file: &str| {
            file.starts_with("rollout-") && file.ends_with(&suffix)
        })
    }
}

/// The argument vector after the program name. `codex_config` is the text of the Codex config
/// file, if there is one (it tells which model provider is active).
pub(crate) fn exec_args(
    settings: &ProviderSettings,
    request: &AttemptRequest,
    codex_config: Option<&str>,
) -> Vec<String> {
    let mut args: Vec<String> = ["exec", "--json", "--skip-git-repo-check"]
        .map(String::from)
        .into();
    if let Some(cwd) = &request.cwd {
        args.push("-C".into());
        args.push(cwd.to_string_lossy().into_owned());
    }
    if let Some(model) = &settings.model {
        args.push("-m".into());
        args.push(model.clone());
    }
    if let Some(provider) = custom_model_provider(&settings.args, codex_config) {
        // Before the configured arguments, so that a user's own retry setting wins.
        for key in ["request_max_retries", "stream_max_retries"] {
            args.push("-c".into());
            args.push(format!("model_providers.{provider}.{key}=0"));
        }
    }
    args.extend(settings.args.iter().cloned());
    match &request.session {
        SessionRef::New => {}
        SessionRef::ContinueLatest => args.extend(["resume".into(), "--last".into()]),
        SessionRef::Resume(id) => args.extend(["resume".into(), id.clone()]),
    }
    // `--` keeps a prompt that starts with `-` from being read as an option.
    args.push("--".into());
    args.push(request.prompt.clone());
    args
}

/// `app-server` and its options: the model, Codex's retries off for a user-defined model
/// provider (as for `exec`), then the configured arguments.
pub(crate) fn app_server_args(
    settings: &ProviderSettings,
    codex_config: Option<&str>,
) -> Vec<String> {
    let mut args = vec!["app-server".to_owned()];
    if let Some(model) = &settings.model {
        args.extend(["-c".into(), format!("model={model:?}")]);
    }
    if let Some(provider) = custom_model_provider(&settings.args, codex_config) {
        for key in ["request_max_retries", "stream_max_retries"] {
            args.extend(["-c".into(), format!("model_providers.{provider}.{key}=0")]);
        }
    }
    args.extend(settings.args.iter().cloned());
    args
}

/// The id of the model provider a run will use, when it is one the user defined (and so one
/// whose retry settings may be overridden); `None` for a built-in provider.
///
/// The active id comes from `-c model_provider=…` in the extra arguments, else from the
/// config's top-level `model_provider`; without either Codex uses the built-in `openai`. A
/// provider counts as user-defined when the config has a `[model_providers.<id>]` table or
/// the extra arguments set one of its keys. (Profiles are not followed.)
pub(crate) fn custom_model_provider(
    extra_args: &[String],
    codex_config: Option<&str>,
) -> Option<String> {
    let config: Option<toml::Table> = codex_config.and_then(|text| text.parse().ok());
    let overrides = config_overrides(extra_args);
    let active = overrides
        .iter()
        .rev()
        .find_map(|(key, value)| (*key == "model_provider").then(|| toml_string(value)))
        .or_else(|| {
            config
                .as_ref()?
                .get("model_provider")?
                .as_str()
                .map(str::to_owned)
        })?;
    let defined_in_config = config
        .as_ref()
        .and_then(|config| config.get("model_providers")?.as_table()?.get(&active))
        .is_some();
    let prefix = format!("model_providers.{active}.");
    let defined_in_args = overrides.iter().any(|(key, _)| key.starts_with(&prefix));
    (defined_in_config || defined_in_args).then_some(active)
}

/// The `key=value` pairs of `-c`/`--config` options in `args`.
fn config_overrides(args: &[String]) -> Vec<(&str, &str)> {
    let mut pairs = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let assignment = match arg.as_str() {
            "-c" | "--config" => iter.next().map(String::as_str),
            other => other
                .strip_prefix("--config=")
                .or_else(|| other.strip_prefix("-c").filter(|rest| !rest.is_empty())),
        };
        if let Some((key, value)) = assignment.and_then(|text| text.split_once('=')) {
            pairs.push((key.trim(), value.trim()));
        }
    }
    pairs
}

/// A `-c` value is TOML when it parses as TOML, else a literal string (Codex's own rule).
fn toml_string(value: &str) -> String {
    format!("v = {value}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|table| table.get("v")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAKE_CONFIG: &str = r#"
model = "fake-model"
model_provider = "fake"
[model_providers.fake]
name = "Fake local"
base_url = "http://127.0.0.1:9/v1"
"#;

    fn args_of(
        settings: &ProviderSettings,
        request: &AttemptRequest,
        config: Option<&str>,
    ) -> String {
        exec_args(settings, request, config).join(" ")
    }

    #[test]
    fn a_new_turn_runs_exec_json_with_the_prompt_last() {
        let request = AttemptRequest {
            prompt: "-say hello".into(),
            cwd: Some("/work/dir".into()),
            ..AttemptRequest::default()
        };
        let settings = ProviderSettings {
            model: Some("gpt-x".into()),
            args: vec!["--dangerously-bypass-approvals-and-sandbox".into()],
            ..ProviderSettings::default()
        };
        assert_eq!(
            args_of(&settings, &request, None),
            "exec --json --skip-git-repo-check -C /work/dir -m gpt-x \
             --dangerously-bypass-approvals-and-sandbox -- -say hello"
        );
    }

    #[test]
    fn later_turns_resume_the_thread() {
        let settings = ProviderSettings::default();
        let resume = AttemptRequest {
            prompt: "again".into(),
            session: SessionRef::Resume("01a2".into()),
            ..AttemptRequest::default()
        };
        assert_eq!(
            args_of(&settings, &resume, None),
            "exec --json --skip-git-repo-check resume 01a2 -- again"
        );
        let latest = AttemptRequest {
            prompt: "again".into(),
            session: SessionRef::ContinueLatest,
            ..AttemptRequest::default()
        };
        assert_eq!(
            args_of(&settings, &latest, None),
            "exec --json --skip-git-repo-check resume --last -- again"
        );
    }

    #[test]
    fn retries_are_turned_off_for_a_user_defined_provider_only() {
        let settings = ProviderSettings::default();
        let request = AttemptRequest {
            prompt: "hi".into(),
            ..AttemptRequest::default()
        };
        assert_eq!(
            args_of(&settings, &request, Some(FAKE_CONFIG)),
            "exec --json --skip-git-repo-check \
             -c model_providers.fake.request_max_retries=0 \
             -c model_providers.fake.stream_max_retries=0 -- hi"
        );
        // The built-in provider (no model_provider key) cannot be overridden.
        assert_eq!(
            args_of(&settings, &request, Some("model = \"o3\"\n")),
            "exec --json --skip-git-repo-check -- hi"
        );
        assert_eq!(
            args_of(&settings, &request, None),
            "exec --json --skip-git-repo-check -- hi"
        );
    }

    #[test]
    fn the_active_provider_follows_the_extra_arguments() {
        // Switched to a built-in provider on the command line: no override.
        let to_builtin = vec!["-c".to_owned(), "model_provider=\"openai\"".to_owned()];
        assert_eq!(custom_model_provider(&to_builtin, Some(FAKE_CONFIG)), None);
        // Defined entirely on the command line.
        let defined = vec![
            "--config=model_provider=local".to_owned(),
            "-c".to_owned(),
            "model_providers.local.name=\"Local\"".to_owned(),
        ];
        assert_eq!(
            custom_model_provider(&defined, None).as_deref(),
            Some("local")
        );
        // Selected but defined nowhere: Codex would reject an override, so none is added.
        let undefined = vec!["-c".to_owned(), "model_provider=ghost".to_owned()];
        assert_eq!(custom_model_provider(&undefined, Some(FAKE_CONFIG)), None);
        // A broken config file is no reason to fail.
        assert_eq!(custom_model_provider(&[], Some("model_provider = ")), None);
    }
}
