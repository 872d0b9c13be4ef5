//! pi backend: `pi --mode json`, stdin closed, the prompt as one argument.

pub mod mapper;

use crate::config::ProviderSettings;
use crate::process::SpawnSpec;
use crate::provider::{AttemptRequest, Backend, Mapper, SessionRef};

pub struct PiBackend {
    settings: ProviderSettings,
}

impl PiBackend {
    pub fn new(settings: ProviderSettings) -> Self {
        Self { settings }
    }
}

/// pi's session flags for a request.
pub fn session_args(session: &SessionRef) -> Vec<String> {
    match session {
        SessionRef::New => Vec::new(),
        SessionRef::ContinueLatest => vec!["--continue".into()],
        SessionRef::Resume(id) => vec!["--session".into(), id.clone()],
    }
}

impl Backend for PiBackend {
    fn name(&self) -> &'static str {
        "pi"
    }

    fn spawn_spec(&self, request: &AttemptRequest) -> SpawnSpec {
        let program = self.settings.command.clone().unwrap_or_else(|| "pi".into());
        let mut spec = SpawnSpec::new(program).args(["--mode", "json"]);
        if let Some(model) = &self.settings.model {
            spec = spec.args(["--model", model.as_str()]);
        }
        spec = spec
            .args(self.settings.args.iter())
            .args(session_args(&request.session));
        for (key, value) in &self.settings.env {
            spec = spec.env(key, value);
        }
        spec.arg(&request.prompt)
    }

    fn mapper(&self, request: &AttemptRequest) -> Box<dyn Mapper> {
        Box::new(mapper::PiMapper::new(
            "pi",
            request.session != SessionRef::New,
        ))
    }
}
