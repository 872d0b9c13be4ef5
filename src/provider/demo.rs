//! The demo provider: agentty's own scripted agent (`agentty demo-agent`), a real child process
//! that speaks pi's JSON mode, read through the real pi mapper. So the demo exercises the real
//! path, from spawn to render.

use std::path::PathBuf;

use crate::config::ProviderSettings;
use crate::demo_agent::acp::scenarios::LAG_AFTER_CANCEL;
use crate::demo_agent::state as demo_state;
use crate::process::SpawnSpec;
use crate::provider::checkpoint::agent_env;
use crate::provider::pi::{mapper::PiMapper, session_args};
use crate::provider::{
    AttemptRequest, Backend, LiveTransport, Mapper, Quirks, SessionRef, Transport,
};

pub(crate) use crate::demo_agent::ATTEMPT_VAR as DEMO_ATTEMPT_VAR;

pub(crate) struct DemoBackend {
    settings: ProviderSettings,
}

impl DemoBackend {
    pub(crate) fn new(settings: ProviderSettings) -> Self {
        Self { settings }
    }
}

impl Backend for DemoBackend {
    fn name(&self) -> &'static str {
        crate::provider::ProviderKind::Demo.name()
    }

    fn spawn_spec(&self, request: &AttemptRequest) -> SpawnSpec {
        self.spec_in_mode("json", request).arg(&request.prompt)
    }

    /// The demo agent speaks every long-lived transport: pi's RPC mode, Claude Code's
    /// stream-json mode with its control protocol, Codex's app-server (approvals, steering,
    /// `thread/revert`) and ACP (a scripted ACP agent: permission prompts, plans, ...).
    fn live_transports(&self) -> Vec<LiveTransport> {
        [
            Transport::Rpc,
            Transport::Stream,
            Transport::AppServer,
            Transport::Acp,
        ]
        .map(LiveTransport::ready)
        .to_vec()
    }

    fn live_spawn_spec(&self, transport: Transport, request: &AttemptRequest) -> Option<SpawnSpec> {
        let mode = match transport {
            Transport::Json => return None,
            Transport::Rpc => "rpc",
            Transport::Stream => "claude-stream",
            Transport::AppServer => crate::demo_agent::codex_app_server::MODE,
            Transport::Acp => "acp",
        };
        Some(self.spec_in_mode(mode, request))
    }

    /// `lag-after-cancel` plays the Claude adapter's answer-one-turn-late bug: it gets the
    /// same treatment.
    fn quirks(&self, _transport: Transport, request: &AttemptRequest) -> Quirks {
        Quirks {
            restart_after_cancel: request.scenario.as_deref() == Some(LAG_AFTER_CANCEL),
            ..Quirks::default()
        }
    }

    fn mapper(&self, request: &AttemptRequest) -> Box<dyn Mapper> {
        Box::new(PiMapper::new(
            crate::provider::ProviderKind::Demo.name(),
            request.session != SessionRef::New,
        ))
    }

    fn lost_session_phrases(&self) -> &'static [&'static str] {
        crate::provider::pi::LOST_SESSION_PHRASES
    }

    /// The demo agent's RPC mode writes a steer taken at a stop into its session as pi does.
    fn take_back_unanswered(
        &self,
        session_file: &std::path::Path,
        texts: &[String],
    ) -> std::io::Result<usize> {
        demo_state::take_back_unanswered(session_file, texts)
    }

    fn session_file(&self, session_id: &str, _request: &AttemptRequest) -> Option<PathBuf> {
        let state_dir =
            demo_state::state_dir_from(agent_env(&self.settings.env, demo_state::STATE_DIR_VAR));
        demo_state::session_file(&state_dir, session_id)
    }
}

impl DemoBackend {
    /// `agentty demo-agent --mode MODE [--scenario S] [args] [session flags]`.
    fn spec_in_mode(&self, mode: &str, request: &AttemptRequest) -> SpawnSpec {
        let mut spec = match &self.settings.command {
            // `--agent-bin` for demo: any executable that speaks pi's JSON mode.
            Some(program) => SpawnSpec::new(program),
            None => {
                let agentty = std::env::current_exe().unwrap_or_else(|_| "agentty".into());
                SpawnSpec::new(agentty).arg("demo-agent")
            }
        };
        spec = spec.args(["--mode", mode]);
        if let Some(scenario) = &request.scenario {
            spec = spec.args(["--scenario", scenario.as_str()]);
        }
        spec = spec.args(self.settings.args.iter());
        if mode != "acp" && mode != crate::demo_agent::codex_app_server::MODE {
            // ACP and app-server open their session in the protocol.
            spec = spec.args(session_args(&request.session));
        }
        spec = spec.env(DEMO_ATTEMPT_VAR, request.attempt.max(1).to_string());
        for (key, value) in &self.settings.env {
            spec = spec.env(key, value);
        }
        spec.cwd = request.cwd.clone();
        spec
    }
}
