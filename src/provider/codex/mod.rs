//! Codex backend. (Being built: see the backend issue.)

pub mod mapper;

use crate::config::ProviderSettings;
use crate::process::SpawnSpec;
use crate::provider::{AttemptRequest, Backend, Mapper};

pub struct CodexBackend {
    settings: ProviderSettings,
}

impl CodexBackend {
    pub fn new(settings: ProviderSettings) -> Self {
        Self { settings }
    }
}

impl Backend for CodexBackend {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn spawn_spec(&self, request: &AttemptRequest) -> SpawnSpec {
        let program = self
            .settings
            .command
            .clone()
            .unwrap_or_else(|| "codex".into());
        SpawnSpec::new(program)
            .args(self.settings.args.iter())
            .arg(&request.prompt)
    }

    fn mapper(&self, _request: &AttemptRequest) -> Box<dyn Mapper> {
        Box::new(mapper::CodexMapper)
    }
}
