//! A provider defined in the config (`[providers.NAME]` with `protocol = "acp"`, `command`,
//! `args`, `env`): any Agent Client Protocol agent, without code for it.

use crate::config::ProviderSettings;
use crate::process::SpawnSpec;
use crate::provider::acp::AcpMapper;
use crate::provider::{AttemptRequest, Backend, LiveTransport, Mapper, Transport};

pub(crate) struct ConfiguredAcpBackend {
    name: String,
    settings: ProviderSettings,
}

impl ConfiguredAcpBackend {
    /// `None` when the config gives no command to run.
    pub(crate) fn new(name: &str, settings: &ProviderSettings) -> Option<Self> {
        settings.command.as_ref()?;
        Some(Self {
            name: name.to_owned(),
            settings: settings.clone(),
        })
    }
}

impl Backend for ConfiguredAcpBackend {
    fn name(&self) -> &str {
        &self.name
    }

    /// The agent speaks only ACP: its one-shot form is the same process.
    fn spawn_spec(&self, request: &AttemptRequest) -> SpawnSpec {
        let program = self.settings.command.clone().unwrap_or_default();
        let mut spec = SpawnSpec::new(program).args(self.settings.args.iter());
        for (key, value) in &self.settings.env {
            spec = spec.env(key, value);
        }
        spec.cwd = request.cwd.clone();
        spec
    }

    fn live_transports(&self) -> Vec<LiveTransport> {
        vec![LiveTransport::ready(Transport::Acp)]
    }

    fn live_spawn_spec(&self, transport: Transport, request: &AttemptRequest) -> Option<SpawnSpec> {
        (transport == Transport::Acp).then(|| self.spawn_spec(request))
    }

    fn mapper(&self, _request: &AttemptRequest) -> Box<dyn Mapper> {
        Box::new(AcpMapper::new(None))
    }
}
