//! Claude backend. (Being built: see the backend issue.)

pub mod mapper;

use crate::config::ProviderSettings;
use crate::process::SpawnSpec;
use crate::provider::{AttemptRequest, Backend, Mapper};

pub struct ClaudeBackend {
    settings: ProviderSettings,
}

impl ClaudeBackend {
    pub fn new(settings: ProviderSettings) -> Self {
        Self { settings }
    }
}

impl Backend for ClaudeBackend {
    fn name(&self) -> &'static str {
        "claude"
    }

    fn spawn_spec(&self, request: &AttemptRequest) -> SpawnSpec {
        let program = self
            .settings
            .command
            .clone()
            .unwrap_or_else(|| "claude".into());
        SpawnSpec::new(program)
            .args(self.settings.args.iter())
            .arg(&request.prompt)
    }

    fn mapper(&self, _request: &AttemptRequest) -> Box<dyn Mapper> {
        Box::new(mapper::ClaudeMapper)
    }
}
