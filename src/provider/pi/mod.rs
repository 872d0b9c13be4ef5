//! pi backend: `pi --mode json [--model M] [args] [session flags] PROMPT`.
//!
//! - stdin is `/dev/null`: in json mode pi reads a non-TTY stdin to EOF before it starts, so an
//!   open pipe would hang it. The prompt is one argument.
//! - The user's environment passes through, plus the configured `env`; `--agent-bin` is
//!   `settings.command`. The provider goes in `model` as `PROVIDER/ID` (pi splits it) or as
//!   `--provider P` in `args`.
//! - pi's own retries are turned off for the runs agentty starts (the orchestrator is the only
//!   place that retries): see [`agent_dir`]. If preparing that fails, pi runs with the user's
//!   config unchanged and a warning is logged; the spawn never fails because of it.

pub(crate) mod agent_dir;
pub mod mapper;
pub mod rpc;
mod rpc_take_back;
mod stopped_prompt;
mod wire;

use std::ffi::OsString;
use std::path::PathBuf;

use crate::config::ProviderSettings;
use crate::process::SpawnSpec;
use crate::provider::checkpoint::{agent_env, newest_file_named};
use crate::provider::config_mirror::MirrorRoot;
use crate::provider::{AttemptRequest, Backend, LiveTransport, Mapper, SessionRef, Transport};

pub(crate) use agent_dir::AGENT_DIR_VAR;

pub struct PiBackend {
    settings: ProviderSettings,
    /// Where the private config dirs live.
    mirrors: MirrorRoot,
}

impl PiBackend {
    pub fn new(settings: ProviderSettings) -> Self {
        Self {
            settings,
            mirrors: MirrorRoot::default(),
        }
    }

    /// Keeps the private config dirs under `dir` instead of agentty's state dir.
    pub fn with_state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.mirrors = MirrorRoot::at(dir.into());
        self
    }

    /// The `PI_CODING_AGENT_DIR` for the agent: the retry-off private dir, or `None` to leave
    /// pi's config as the user has it.
    fn private_agent_dir(&self, request: &AttemptRequest) -> Option<PathBuf> {
        let user_dir = agent_dir::user_agent_dir(&self.settings.env, request.cwd.as_deref())?;
        self.mirrors.prepare(
            "pi's private config dir",
            &user_dir,
            agent_dir::prepare_retry_off_dir,
        )
    }
}

/// pi's session flags for a request.
pub(crate) fn session_args(session: &SessionRef) -> Vec<String> {
    match session {
        SessionRef::New => Vec::new(),
        SessionRef::ContinueLatest => vec!["--continue".into()],
        SessionRef::Resume(id) => vec!["--session".into(), id.clone()],
    }
}

/// Where pi keeps session `id`: `--session` takes a file path as it is; an id is the file
/// `<ISO time>_<id>.jsonl` in a per-cwd folder of pi's sessions dir (`$PI_CODING_AGENT_SESSION_DIR`,
/// else `<agent dir>/sessions`), the newest if several match.
pub(crate) fn session_file(
    env: &std::collections::BTreeMap<String, String>,
    id: &str,
    cwd: Option<&std::path::Path>,
) -> Option<PathBuf> {
    if id.contains('/') {
        return Some(PathBuf::from(id));
    }
    let suffix = format!("_{id}.jsonl");
    let wanted = |name: &str| name.ends_with(&suffix);
    let own_dir = agent_env(env, "PI_CODING_AGENT_SESSION_DIR").map(PathBuf::from);
    let default_dir = agent_dir::user_agent_dir(env, cwd).map(|dir| dir.join("sessions"));
    [own_dir, default_dir]
        .into_iter()
        .flatten()
        .find_map(|root| newest_file_named(&root, 1, &wanted))
}

/// What pi 0.73.1 prints for a `--session <id>` that matches no stored session.
pub(crate) const LOST_SESSION_PHRASES: &[&str] = &["No session found matching"];

/// The prompt as pi's positional message. pi has no `--` separator: an argument starting with
/// `-` is read as a flag and one starting with `@` as a file to attach, so such a prompt gets a
/// leading space (which the model does not care about).
fn prompt_argument(prompt: &str) -> OsString {
    if prompt.starts_with(['-', '@']) {
        format!(" {prompt}").into()
    } else {
        prompt.into()
    }
}

impl Backend for PiBackend {
    fn name(&self) -> &'static str {
        crate::provider::ProviderKind::Pi.name()
    }

    fn spawn_spec(&self, request: &AttemptRequest) -> SpawnSpec {
        self.spec_in_mode("json", request)
            .arg(prompt_argument(&request.prompt))
    }

    fn live_transports(&self) -> Vec<LiveTransport> {
        vec![LiveTransport::ready(Transport::Rpc)]
    }

    fn live_spawn_spec(&self, transport: Transport, request: &AttemptRequest) -> Option<SpawnSpec> {
        (transport == Transport::Rpc).then(|| self.spec_in_mode("rpc", request))
    }

    fn mapper(&self, request: &AttemptRequest) -> Box<dyn Mapper> {
        Box::new(mapper::PiMapper::new(
            crate::provider::ProviderKind::Pi.name(),
            request.session != SessionRef::New,
        ))
    }

    fn lost_session_phrases(&self) -> &'static [&'static str] {
        LOST_SESSION_PHRASES
    }

    fn session_file(&self, session_id: &str, request: &AttemptRequest) -> Option<PathBuf> {
        session_file(&self.settings.env, session_id, request.cwd.as_deref())
    }

    fn take_back_unanswered(
        &self,
        session_file: &std::path::Path,
        texts: &[String],
    ) -> std::io::Result<usize> {
        rpc_take_back::take_back_unanswered(session_file, texts)
    }

    fn keep_stopped_prompt(&self, session_id: &str, request: &AttemptRequest) {
        // In a later turn pi has written the session and the prompt already.
        if request.session != SessionRef::New || self.session_file(session_id, request).is_some() {
            return;
        }
        let Some(cwd) = request
            .cwd
            .clone()
            .or_else(|| std::env::current_dir().ok())
            // pi records `process.cwd()`, which has the links resolved.
            .map(|cwd| cwd.canonicalize().unwrap_or(cwd))
        else {
            return;
        };
        let env = &self.settings.env;
        let dir = match agent_env(env, "PI_CODING_AGENT_SESSION_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => match agent_dir::user_agent_dir(env, Some(&cwd)) {
                Some(agent_dir) => stopped_prompt::default_session_dir(&agent_dir, &cwd),
                None => return,
            },
        };
        match stopped_prompt::write_session_with_prompt(
            &dir,
            &cwd,
            session_id,
            &request.prompt,
            time::OffsetDateTime::now_utc(),
        ) {
            Ok(path) => tracing::info!(
                session = %path.display(),
                "first turn stopped before pi wrote its session; wrote it with the prompt"
            ),
            Err(error) => {
                tracing::warn!(%error, "could not keep the stopped prompt in pi's session")
            }
        }
    }
}

impl PiBackend {
    /// `pi --mode MODE [--model M] [args] [session flags]`, with its environment and cwd.
    fn spec_in_mode(&self, mode: &str, request: &AttemptRequest) -> SpawnSpec {
        let program = self.settings.command.clone().unwrap_or_else(|| "pi".into());
        let mut spec = SpawnSpec::new(program).args(["--mode", mode]);
        if let Some(model) = &self.settings.model {
            spec = spec.args(["--model", model.as_str()]);
        }
        spec = spec
            .args(self.settings.args.iter())
            .args(session_args(&request.session));
        for (key, value) in &self.settings.env {
            spec = spec.env(key, value);
        }
        // Last, so that it wins over a PI_CODING_AGENT_DIR from the config (which it mirrors).
        if let Some(dir) = self.private_agent_dir(request) {
            spec = spec.env(AGENT_DIR_VAR, dir);
        }
        spec.cwd = request.cwd.clone();
        spec
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args_of(spec: &SpawnSpec) -> Vec<String> {
        spec.args
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect()
    }

    fn env_of(spec: &SpawnSpec, key: &str) -> Option<String> {
        spec.env
            .iter()
            .rev()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.to_string_lossy().into_owned())
    }

    #[test]
    fn argv_is_mode_model_args_session_then_the_prompt() {
        let state = tempfile::tempdir().unwrap();
        let user_dir = tempfile::tempdir().unwrap();
        let settings = ProviderSettings {
            command: Some("/opt/pi/bin/pi".into()),
            args: vec!["--provider".into(), "fake".into()],
            env: [(
                AGENT_DIR_VAR.to_owned(),
                user_dir.path().to_string_lossy().into_owned(),
            )]
            .into(),
            model: Some("plain".into()),
            ..ProviderSettings::default()
        };
        let backend = PiBackend::new(settings).with_state_dir(state.path());
        let request = AttemptRequest {
            prompt: "Please answer.".into(),
            session: SessionRef::Resume("01a228fb".into()),
            ..AttemptRequest::default()
        };
        let spec = backend.spawn_spec(&request);
        assert_eq!(spec.program, "/opt/pi/bin/pi");
        assert_eq!(
            args_of(&spec),
            [
                "--mode",
                "json",
                "--model",
                "plain",
                "--provider",
                "fake",
                "--session",
                "01a228fb",
                "Please answer."
            ]
        );
        assert_eq!(spec.stdin, crate::process::StdinMode::Null);
        let private = env_of(&spec, AGENT_DIR_VAR).unwrap();
        assert!(private.starts_with(&*state.path().to_string_lossy()));
        let settings: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(format!("{private}/settings.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(settings["retry"]["enabled"], false);
    }

    #[test]
    fn session_flags() {
        assert!(session_args(&SessionRef::New).is_empty());
        assert_eq!(session_args(&SessionRef::ContinueLatest), ["--continue"]);
        assert_eq!(
            session_args(&SessionRef::Resume("/s/x.jsonl".into())),
            ["--session", "/s/x.jsonl"]
        );
    }

    #[test]
    fn prompts_that_look_like_flags_or_files_stay_prompts() {
        assert_eq!(prompt_argument("-v please"), " -v please");
        assert_eq!(prompt_argument("@notes.md"), " @notes.md");
        assert_eq!(prompt_argument("plain"), "plain");
    }
}
