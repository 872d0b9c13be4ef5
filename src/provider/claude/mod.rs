//! Claude Code backend: `claude -p --output-format stream-json --verbose
//! --include-partial-messages -- PROMPT`, stdin closed.
//!
//! - `--verbose` is not optional: without it the CLI refuses stream-json output in `-p` mode.
//! - Stdin stays closed: with a pipe, `-p` waits for EOF and appends stdin to the prompt.
//! - The prompt comes last, after `--`, so that neither a prompt starting with `-` nor a
//!   variadic flag in the user's arguments (`--allowedTools Bash`) can swallow or misread it.
//! - `CLAUDE_CODE_MAX_RETRIES=0`: the CLI would otherwise retry every API error (even 401) ten
//!   times over about three minutes; retrying is the orchestrator's job. Likewise
//!   `CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK=1`: when a stream is cut mid-answer, the CLI
//!   would ask the model again without streaming and put that answer in its history, while the
//!   ACP adapter never shows it (the model would have said something the user never saw). The
//!   user's configured environment is applied after both and may override them.
//! - Sessions: a new session gets a fresh id from agentty (`--session-id`), a later turn
//!   `--resume <id>`, the CLI's latest session `--continue`; `system/init` reports the id.
//! - Stop: SIGINT (the process layer's first stage) makes the CLI abort the turn, kill its tool
//!   processes and still print its `result`.

pub mod mapper;
mod permission;
pub(crate) mod stream;
mod sub_agent;
mod tasks;
mod wire;

use std::path::PathBuf;

use crate::config::ProviderSettings;
use crate::process::SpawnSpec;
use crate::provider::acp::adapter_transport;
use crate::provider::checkpoint::{agent_env, agent_home, newest_file_named};
use crate::provider::{
    AttemptRequest, Backend, LiveTransport, Mapper, ProviderKind, Quirks, SessionRef, Transport,
};

/// The CLI's own retry count; agentty sets it to 0.
pub(crate) const MAX_RETRIES_VAR: &str = "CLAUDE_CODE_MAX_RETRIES";
/// Turns off the CLI's non-streaming re-request of a cut stream (a hidden retry).
pub(crate) const NONSTREAMING_FALLBACK_OFF_VAR: &str = "CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK";

/// `spec` with the CLI's own retries turned off (see the module's doc).
pub(crate) fn retries_off(spec: SpawnSpec) -> SpawnSpec {
    spec.env(MAX_RETRIES_VAR, "0")
        .env(NONSTREAMING_FALLBACK_OFF_VAR, "1")
}

/// Tells Claude Code that running as root is deliberate (a sandbox).
const SANDBOX_VAR: &str = "IS_SANDBOX";
/// The Claude Code ACP adapter's executable (`@zed-industries/claude-agent-acp`).
pub(crate) const ACP_ADAPTER: &str = "claude-agent-acp";

/// Claude Code's long-lived stream-json mode with its control protocol on stdio.
pub(crate) const STREAM_ARGS: [&str; 10] = [
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
    "--include-partial-messages",
    "--replay-user-messages",
    "--permission-prompt-tool",
    "stdio",
];

pub struct ClaudeBackend {
    settings: ProviderSettings,
    /// Its ACP transport (through Zed's adapter), and the adapter to run when it is there.
    acp: (LiveTransport, Option<PathBuf>),
}

impl ClaudeBackend {
    pub fn new(settings: ProviderSettings) -> Self {
        let acp = adapter_transport(
            &settings,
            ProviderKind::Claude,
            ACP_ADAPTER,
            "@zed-industries/claude-agent-acp",
        );
        Self { settings, acp }
    }

    /// `claude` in `mode_args`' mode with the configured model, permission mode, session
    /// flags and arguments, its own retries turned off by `retries_off`, then the configured
    /// environment (which may override that), in the request's directory.
    fn cli_spec(
        &self,
        mode_args: &[&str],
        retries_off: fn(SpawnSpec) -> SpawnSpec,
        request: &AttemptRequest,
    ) -> SpawnSpec {
        let program = self
            .settings
            .command
            .clone()
            .unwrap_or_else(|| "claude".into());
        let mut spec = SpawnSpec::new(program).args(mode_args);
        if let Some(model) = &self.settings.model {
            spec = spec.args(["--model", model.as_str()]);
        }
        if let Some(mode) = &self.settings.mode {
            spec = spec.args(["--permission-mode", mode.as_str()]);
        }
        spec = retries_off(
            spec.args(session_args(&request.session))
                .args(self.settings.args.iter()),
        );
        for (key, value) in &self.settings.env {
            spec = spec.env(key, value);
        }
        spec.cwd = request.cwd.clone();
        spec
    }

    /// Claude Code's own long-lived mode (`--transport stream`): stream-json in and out, the
    /// control protocol on stdio (`--permission-prompt-tool stdio`), each user line echoed when
    /// the CLI takes it (`--replay-user-messages`, how steering is seen delivered).
    fn stream_spec(&self, request: &AttemptRequest) -> SpawnSpec {
        self.cli_spec(&STREAM_ARGS, |spec| spec.env(MAX_RETRIES_VAR, "0"), request)
    }

    /// Zed's ACP adapter (`claude-agent-acp`, or `acp_command`), which runs Claude Code
    /// through the Claude Agent SDK: the same environment (its own retries off), and as root
    /// `IS_SANDBOX=1`, without which the SDK's Claude Code refuses to start.
    fn acp_spec(&self, request: &AttemptRequest) -> Option<SpawnSpec> {
        let program = self.acp.1.clone()?;
        let mut spec = retries_off(SpawnSpec::new(program));
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            spec = spec.env(SANDBOX_VAR, "1");
        }
        for (key, value) in &self.settings.env {
            spec = spec.env(key, value);
        }
        spec.cwd = request.cwd.clone();
        Some(spec)
    }
}

/// Claude Code's session flags for a request; a new session gets a fresh id.
pub(crate) fn session_args(session: &SessionRef) -> Vec<String> {
    match session {
        SessionRef::New => vec![
            "--session-id".into(),
            uuid::Uuid::new_v4().hyphenated().to_string(),
        ],
        SessionRef::ContinueLatest => vec!["--continue".into()],
        SessionRef::Resume(id) => vec!["--resume".into(), id.clone()],
    }
}

impl Backend for ClaudeBackend {
    fn name(&self) -> &'static str {
        ProviderKind::Claude.name()
    }

    fn spawn_spec(&self, request: &AttemptRequest) -> SpawnSpec {
        let one_shot = [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
        ];
        self.cli_spec(&one_shot, retries_off, request)
            .arg("--")
            .arg(&request.prompt)
    }

    fn live_transports(&self) -> Vec<LiveTransport> {
        vec![LiveTransport::ready(Transport::Stream), self.acp.0.clone()]
    }

    fn live_spawn_spec(&self, transport: Transport, request: &AttemptRequest) -> Option<SpawnSpec> {
        match transport {
            Transport::Stream => Some(self.stream_spec(request)),
            Transport::Acp => self.acp_spec(request),
            Transport::Json | Transport::Rpc | Transport::AppServer => None,
        }
    }

    /// After a `session/cancel` the ACP adapter answers the next prompt at once with nothing
    /// and gives its answer during the prompt after that (0.23.1).
    fn quirks(&self, transport: Transport, _request: &AttemptRequest) -> Quirks {
        Quirks {
            // Not `forgets_failed_prompt`: measured, after a prompt failed with HTTP 500 the
            // adapter answers the next prompt of the same process at once with no text (one
            // turn late, as after a cancel), so a failure too needs a fresh process.
            restart_after_cancel: transport == Transport::Acp,
            ..Quirks::default()
        }
    }

    fn mapper(&self, request: &AttemptRequest) -> Box<dyn Mapper> {
        Box::new(mapper::ClaudeMapper::new(
            request.session != SessionRef::New,
        ))
    }

    fn lost_session_phrases(&self) -> &'static [&'static str] {
        // `result.errors` and stderr of `--resume <unknown id>` (capture resume_6_bad_id).
        &["No conversation found with session ID"]
    }

    /// Claude Code queues its transcript and writes it every 100 ms, after the turn's `result`.
    fn writes_session_after_turn(&self) -> bool {
        true
    }

    /// Claude keeps a session as `<config dir>/projects/<cwd, / as ->/<id>.jsonl`, the config dir
    /// being `$CLAUDE_CONFIG_DIR` or `~/.claude`.
    fn session_file(&self, session_id: &str, _request: &AttemptRequest) -> Option<PathBuf> {
        let config_dir = agent_env(&self.settings.env, "CLAUDE_CONFIG_DIR")
            .map(PathBuf::from)
            .or_else(|| agent_home(&self.settings.env).map(|home| home.join(".claude")))?;
        let name = format!("{session_id}.jsonl");
        newest_file_named(&config_dir.join("projects"), 1, &|file: &str| file == name)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::ffi::OsString;

    use super::*;
    use crate::process::StdinMode;

    fn argv(spec: &SpawnSpec) -> Vec<String> {
        spec.args
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect()
    }

    fn request(session: SessionRef) -> AttemptRequest {
        AttemptRequest {
            prompt: "--looks like a flag".into(),
            session,
            ..AttemptRequest::default()
        }
    }

    #[test]
    fn argv_has_the_stream_flags_user_flags_and_the_prompt_last() {
        let backend = ClaudeBackend::new(ProviderSettings {
            command: Some("/opt/claude".into()),
            args: vec!["--allowedTools".into(), "Bash".into()],
            model: Some("opus".into()),
            ..ProviderSettings::default()
        });
        let spec = backend.spawn_spec(&request(SessionRef::Resume("abc".into())));
        assert_eq!(spec.program, OsString::from("/opt/claude"));
        assert_eq!(
            argv(&spec),
            [
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages",
                "--model",
                "opus",
                "--resume",
                "abc",
                "--allowedTools",
                "Bash",
                "--",
                "--looks like a flag"
            ]
        );
        assert_eq!(spec.stdin, StdinMode::Null);
    }

    #[test]
    fn the_configured_mode_is_the_permission_mode_at_the_start() {
        let backend = ClaudeBackend::new(ProviderSettings {
            mode: Some("acceptEdits".into()),
            ..ProviderSettings::default()
        });
        for spec in [
            backend.spawn_spec(&request(SessionRef::New)),
            backend
                .live_spawn_spec(Transport::Stream, &request(SessionRef::New))
                .unwrap(),
        ] {
            let args = argv(&spec);
            let at = args
                .iter()
                .position(|arg| arg == "--permission-mode")
                .unwrap();
            assert_eq!(args[at + 1], "acceptEdits");
        }
    }

    #[test]
    fn the_stream_mode_takes_prompts_on_stdin_and_asks_over_stdio() {
        let backend = ClaudeBackend::new(ProviderSettings {
            args: vec!["--permission-mode".into(), "plan".into()],
            ..ProviderSettings::default()
        });
        let spec = backend
            .live_spawn_spec(
                Transport::Stream,
                &request(SessionRef::Resume("abc".into())),
            )
            .expect("a stream mode");
        let args = argv(&spec);
        assert_eq!(args[..STREAM_ARGS.len()], STREAM_ARGS);
        assert_eq!(
            args[STREAM_ARGS.len()..],
            ["--resume", "abc", "--permission-mode", "plan"]
        );
        assert!(
            !args.iter().any(|arg| arg.contains("looks like a flag")),
            "the prompt goes on stdin, not in argv"
        );
        assert!(spec
            .env
            .iter()
            .any(|(key, value)| key == MAX_RETRIES_VAR && value == "0"));
    }

    #[test]
    fn a_new_session_gets_a_fresh_uuid_and_continue_maps_to_continue() {
        let backend = ClaudeBackend::new(ProviderSettings::default());
        let first = argv(&backend.spawn_spec(&request(SessionRef::New)));
        let second = argv(&backend.spawn_spec(&request(SessionRef::New)));
        let id_after = |args: &[String]| {
            let at = args.iter().position(|arg| arg == "--session-id").unwrap();
            args[at + 1].clone()
        };
        let id = id_after(&first);
        assert_eq!(uuid::Uuid::parse_str(&id).unwrap().to_string(), id);
        assert_ne!(id, id_after(&second));
        let continued = argv(&backend.spawn_spec(&request(SessionRef::ContinueLatest)));
        assert!(continued.contains(&"--continue".to_owned()));
        assert!(!continued.contains(&"--session-id".to_owned()));
        assert_eq!(
            backend.spawn_spec(&request(SessionRef::New)).program,
            "claude"
        );
    }

    #[test]
    fn retries_are_off_unless_the_user_configures_them() {
        let env_of = |env: BTreeMap<String, String>| {
            let spec = ClaudeBackend::new(ProviderSettings {
                env,
                ..ProviderSettings::default()
            })
            .spawn_spec(&request(SessionRef::New));
            // Later entries win when the process is spawned.
            spec.env
                .iter()
                .rev()
                .find(|(key, _)| key == MAX_RETRIES_VAR)
                .map(|(_, value)| value.to_string_lossy().into_owned())
        };
        assert_eq!(env_of(BTreeMap::new()).as_deref(), Some("0"));
        let spec =
            ClaudeBackend::new(ProviderSettings::default()).spawn_spec(&request(SessionRef::New));
        assert!(spec
            .env
            .iter()
            .any(|(key, value)| key == NONSTREAMING_FALLBACK_OFF_VAR && value == "1"));
        let configured = BTreeMap::from([(MAX_RETRIES_VAR.to_owned(), "2".to_owned())]);
        assert_eq!(env_of(configured).as_deref(), Some("2"));
    }
}
