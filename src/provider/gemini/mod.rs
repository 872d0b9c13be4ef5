//! Gemini CLI backend: `gemini --output-format stream-json [-m MODEL] [--resume ID] [extra
//! args] --prompt=PROMPT`, stdin closed, `GEMINI_CLI_NO_RELAUNCH=true`.
//!
//! - The prompt is passed as `--prompt=…` (the same as `-p …`): `-p` followed by a prompt that
//!   starts with `-` is rejected by the CLI's argument parser ("Not enough arguments").
//! - Without `GEMINI_CLI_NO_RELAUNCH` the CLI re-spawns itself as a second Node process whose
//!   launcher ignores SIGINT; with it, SIGINT to the process group ends the run at once
//!   (exit 0 and no `result` line, which the mapper reads as unfinished).
//! - Tools and trust are the user's choice, through the configured extra arguments and
//!   environment: headless runs offer the shell tool only with `--yolo`, and an untrusted
//!   folder needs `--skip-trust` or `GEMINI_CLI_TRUST_WORKSPACE=true` (else exit 55).
//! - Gemini CLI retries HTTP 5xx/429 by itself (10 attempts, about 4 minutes) and resends
//!   dropped streams, visible only on stderr or not at all. The runs agentty starts have that
//!   off (`general.maxAttempts: 1` in a private home, see [`home`]), so one attempt is one
//!   request and the orchestrator decides; retries that still happen (a project's settings
//!   turning them on) show as notices. If the private home cannot be prepared, the CLI runs with
//!   the user's home and a warning is logged; the spawn never fails because of it.
//! - stream-json has no thinking: Gemini CLI drops `thought` parts from it (its ACP mode
//!   streams them), so this backend never produces `assistant.thought`.

pub(crate) mod home;
pub mod mapper;
mod replay;
mod session_files;

use std::path::PathBuf;

use crate::config::ProviderSettings;
use crate::process::SpawnSpec;
use crate::provider::checkpoint::agent_home;
use crate::provider::config_mirror::MirrorRoot;
use crate::provider::{
    AttemptRequest, Backend, LiveTransport, Mapper, Quirks, SessionRef, Transport,
};

/// Keeps Gemini CLI in one process, so that signals reach the process doing the work.
pub(crate) const NO_RELAUNCH_VAR: &str = "GEMINI_CLI_NO_RELAUNCH";

pub struct GeminiBackend {
    settings: ProviderSettings,
    /// Where the private homes live.
    mirrors: MirrorRoot,
}

impl GeminiBackend {
    pub fn new(settings: ProviderSettings) -> Self {
        Self {
            settings,
            mirrors: MirrorRoot::default(),
        }
    }

    /// Keeps the private homes under `dir` instead of agentty's state dir.
    pub fn with_state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.mirrors = MirrorRoot::at(dir.into());
        self
    }

    /// The `GEMINI_CLI_HOME` for the agent: the retry-off private home, or `None` to leave the
    /// user's home as it is.
    fn private_home(&self) -> Option<PathBuf> {
        let user_home = home::user_home(&self.settings.env)?;
        self.mirrors.prepare(
            "Gemini CLI's private home",
            &user_home,
            home::prepare_retry_off_home,
        )
    }

    /// The CLI with `args`, the configured environment and the retry-off home.
    fn spec_with_args(&self, args: Vec<String>, request: &AttemptRequest) -> SpawnSpec {
        let program = self
            .settings
            .command
            .clone()
            .unwrap_or_else(|| "gemini".into());
        let mut spec = SpawnSpec::new(program)
            .args(args)
            .env(NO_RELAUNCH_VAR, "true");
        for (key, value) in &self.settings.env {
            spec = spec.env(key, value);
        }
        // Last, so that it wins over a GEMINI_CLI_HOME from the config (which it mirrors).
        if let Some(home) = self.private_home() {
            spec = spec.env(home::HOME_VAR, home);
        }
        spec.cwd = request.cwd.clone();
        spec
    }
}

impl Backend for GeminiBackend {
    fn name(&self) -> &'static str {
        crate::provider::ProviderKind::Gemini.name()
    }

    fn spawn_spec(&self, request: &AttemptRequest) -> SpawnSpec {
        self.spec_with_args(gemini_args(&self.settings, request), request)
    }

    fn live_transports(&self) -> Vec<LiveTransport> {
        vec![LiveTransport::ready(Transport::Acp)]
    }

    /// `gemini --acp`: the same CLI and environment (its own retries off), speaking ACP.
    fn live_spawn_spec(&self, transport: Transport, request: &AttemptRequest) -> Option<SpawnSpec> {
        if transport != Transport::Acp {
            return None;
        }
        let mut args: Vec<String> = vec!["--acp".into()];
        if let Some(model) = &self.settings.model {
            args.push("-m".into());
            args.push(model.clone());
        }
        args.extend(self.settings.args.iter().cloned());
        Some(self.spec_with_args(args, request))
    }

    fn quirks(&self, _transport: Transport, _request: &AttemptRequest) -> Quirks {
        Quirks {
            // Measured with gemini 0.61 --acp: after a prompt failed with HTTP 500, the next
            // prompt of the same process reaches the model without the failed one.
            forgets_failed_prompt: true,
            // Measured: after a stop and a rollback, session/load in the same process reads
            // the restored file, and the retry reaches the model with the prompt once.
            reloads_in_process: true,
            ..Default::default()
        }
    }

    fn mapper(&self, request: &AttemptRequest) -> Box<dyn Mapper> {
        Box::new(mapper::GeminiMapper::new(
            request.session != SessionRef::New,
        ))
    }

    fn lost_session_phrases(&self) -> &'static [&'static str] {
        // Gemini CLI 0.61's `--resume` errors (it also deletes session files it cannot load).
        &["Invalid session identifier", "Error resuming session"]
    }

    /// Gemini keeps a session as `~/.gemini/tmp/<project>/chats/session-<minute>-<first 8 of
    /// the id>.jsonl` ([`session_files`]). Gemini CLI 0.61's file is append-only: records and
    /// `$set` patches, replayed on load (it drops a prompt that failed with an API error itself,
    /// by a `$set` of the messages).
    fn session_file(&self, session_id: &str, _request: &AttemptRequest) -> Option<PathBuf> {
        session_files::session_file(&self.chats_root()?, session_id)
    }

    /// A process that loads a session in the minute its file was named for wipes it (see
    /// [`session_files`]): the file moves to an earlier minute's name first.
    fn prepare_session_load(&self, session_id: &str, _request: &AttemptRequest) {
        let Some(root) = self.chats_root() else {
            return;
        };
        if let Err(error) = session_files::prepare_load(&root, session_id) {
            tracing::warn!(%error, session_id, "cannot ready the Gemini session file for a reload");
        }
    }

    /// Loading a session leaves a stub named for it (see [`session_files`]); Gemini CLI's
    /// session cleanup at its next launch deletes a stub and every file of its session with
    /// it, so the stub goes now.
    fn session_loaded(&self, session_id: &str, _request: &AttemptRequest) {
        let Some(root) = self.chats_root() else {
            return;
        };
        if let Err(error) = session_files::remove_stubs(&root, session_id) {
            tracing::warn!(%error, session_id, "cannot remove the Gemini session's stubs");
        }
    }
}

impl GeminiBackend {
    /// `~/.gemini/tmp` as the agent sees it.
    fn chats_root(&self) -> Option<PathBuf> {
        Some(agent_home(&self.settings.env)?.join(".gemini").join("tmp"))
    }
}

/// The argument vector after the program name.
pub(crate) fn gemini_args(settings: &ProviderSettings, request: &AttemptRequest) -> Vec<String> {
    let mut args: Vec<String> = vec!["--output-format".into(), "stream-json".into()];
    if let Some(model) = &settings.model {
        args.push("-m".into());
        args.push(model.clone());
    }
    match &request.session {
        SessionRef::New => {}
        SessionRef::ContinueLatest => args.extend(["--resume".into(), "latest".into()]),
        SessionRef::Resume(id) => args.extend(["--resume".into(), id.clone()]),
    }
    args.extend(settings.args.iter().cloned());
    args.push(format!("--prompt={}", request.prompt));
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_new_turn_streams_json_with_the_prompt_as_one_argument() {
        let settings = ProviderSettings {
            model: Some("gemini-2.5-pro".into()),
            args: vec!["--yolo".into()],
            ..ProviderSettings::default()
        };
        let request = AttemptRequest {
            prompt: "-p looks like a flag".into(),
            ..AttemptRequest::default()
        };
        assert_eq!(
            gemini_args(&settings, &request),
            [
                "--output-format",
                "stream-json",
                "-m",
                "gemini-2.5-pro",
                "--yolo",
                "--prompt=-p looks like a flag"
            ]
        );
    }

    #[test]
    fn later_turns_resume_the_session() {
        let settings = ProviderSettings::default();
        let by_id = AttemptRequest {
            prompt: "again".into(),
            session: SessionRef::Resume("7d3c".into()),
            ..AttemptRequest::default()
        };
        assert_eq!(
            gemini_args(&settings, &by_id).join(" "),
            "--output-format stream-json --resume 7d3c --prompt=again"
        );
        let latest = AttemptRequest {
            session: SessionRef::ContinueLatest,
            ..by_id
        };
        assert_eq!(
            gemini_args(&settings, &latest).join(" "),
            "--output-format stream-json --resume latest --prompt=again"
        );
    }

    #[test]
    fn the_cli_runs_in_one_process_with_the_configured_environment() {
        let mut settings = ProviderSettings {
            command: Some("/opt/gemini".into()),
            ..ProviderSettings::default()
        };
        settings
            .env
            .insert("GEMINI_API_KEY".into(), "from-config".into());
        let user_home = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        settings.env.insert(
            home::HOME_VAR.into(),
            user_home.path().to_string_lossy().into(),
        );
        let request = AttemptRequest {
            cwd: Some("/project".into()),
            ..AttemptRequest::default()
        };
        let spec = GeminiBackend::new(settings)
            .with_state_dir(state.path())
            .spawn_spec(&request);
        assert_eq!(spec.program, "/opt/gemini");
        assert_eq!(spec.cwd.as_deref(), Some(std::path::Path::new("/project")));
        let env: Vec<(String, String)> = spec
            .env
            .iter()
            .map(|(k, v)| (k.to_string_lossy().into(), v.to_string_lossy().into()))
            .collect();
        let private_home = state.path().join("gemini");
        assert_eq!(env.len(), 4, "{env:?}");
        assert_eq!(env[0], ("GEMINI_CLI_NO_RELAUNCH".into(), "true".into()));
        assert_eq!(env[1], ("GEMINI_API_KEY".into(), "from-config".into()));
        // The private home, set last, wins over the configured one it mirrors.
        assert_eq!(env[3].0, home::HOME_VAR);
        assert!(Path::new(&env[3].1).starts_with(&private_home), "{env:?}");
    }
}
