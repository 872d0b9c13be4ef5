//! The factory: from a provider's name (a built-in [`ProviderKind`] or an ACP agent defined in
//! the config) and a transport to the backend and the provider that runs it, with the checks of
//! what is installed and what each transport can do. Only the layers above the providers use
//! it; no backend imports it.

use std::sync::Arc;

use super::capabilities::LiveTransport;
use super::contract::{Backend, Provider, ProviderKind, PROVIDER_NAMES};
use super::live::LiveProvider;
use super::runner::CliProvider;
use super::{acp, claude, codex, configured, demo, gemini, pi};
use crate::config::{ProviderSettings, Transport};

impl ProviderKind {
    pub(crate) fn built_backend(self, settings: &ProviderSettings) -> Arc<dyn Backend> {
        let settings = settings.clone();
        match self {
            ProviderKind::Pi => Arc::new(pi::PiBackend::new(settings)),
            ProviderKind::Demo => Arc::new(demo::DemoBackend::new(settings)),
            ProviderKind::Claude => Arc::new(claude::ClaudeBackend::new(settings)),
            ProviderKind::Codex => Arc::new(codex::CodexBackend::new(settings)),
            ProviderKind::Gemini => Arc::new(gemini::GeminiBackend::new(settings)),
        }
    }
}

/// Builds the backend for `name` from its settings: a built-in one, or an ACP agent defined
/// in the config.
pub fn build_backend(name: &str, settings: &ProviderSettings) -> Option<Arc<dyn Backend>> {
    if let Some(kind) = ProviderKind::from_name(name) {
        return Some(kind.built_backend(settings));
    }
    if settings.protocol == Some(Transport::Acp) {
        return configured::ConfiguredAcpBackend::new(name, settings)
            .map(|backend| Arc::new(backend) as Arc<dyn Backend>);
    }
    None
}

/// Builds the provider for `name` from its settings, with the one-shot transport.
pub fn build_provider(name: &str, settings: &ProviderSettings) -> Option<Arc<dyn Provider>> {
    let backend = build_backend(name, settings)?;
    Some(Arc::new(CliProvider::from_arc(backend)))
}

/// Builds the provider for `name` with `transport`; `Err` says why that transport is not
/// available (the backend has no RPC mode).
pub fn build_provider_with(
    name: &str,
    settings: &ProviderSettings,
    transport: Transport,
) -> Result<Arc<dyn Provider>, String> {
    let backend = build_backend(name, settings).ok_or_else(|| match &settings.protocol {
        None if settings.command.is_some() => format!(
            "the provider `{name}` in the config needs `protocol = \"acp\"` (agentty runs \
             any Agent Client Protocol agent; other protocols need a built-in backend)"
        ),
        _ => format!(
            "unknown provider `{name}` (choose one of {}, or define it in the config)",
            PROVIDER_NAMES.join(", ")
        ),
    })?;
    if ProviderKind::from_name(name).is_none() && transport != Transport::Acp {
        return Err(format!(
            "the provider `{name}` speaks only ACP (use --transport acp, or none)"
        ));
    }
    let policy = settings
        .permissions
        .unwrap_or(crate::config::PermissionPolicy::Ask);
    provider_on(backend, transport, policy)
}

/// The provider that runs `backend` over `transport` (`policy`: how a two-way transport
/// answers permission requests); `Err` says why the backend cannot use that transport (it
/// does not declare it, or it declares it not ready).
pub fn provider_on(
    backend: Arc<dyn Backend>,
    transport: Transport,
    policy: crate::config::PermissionPolicy,
) -> Result<Arc<dyn Provider>, String> {
    if transport == Transport::Json {
        return Ok(Arc::new(CliProvider::from_arc(backend)));
    }
    let declared = backend
        .live_transports()
        .into_iter()
        .find(|declared| declared.transport == transport);
    match declared.map(|declared| declared.ready) {
        Some(Ok(())) => {}
        Some(Err(why)) => return Err(why),
        None => {
            return Err(format!(
                "the {} provider has no {} transport (--transport {}: {}); use --transport json",
                backend.name(),
                transport.name().to_uppercase(),
                transport.name(),
                transport.describe()
            ))
        }
    }
    Ok(match transport {
        Transport::Json => Arc::new(CliProvider::from_arc(backend)),
        Transport::Rpc => Arc::new(LiveProvider::new(
            pi::rpc::RpcProtocol::new(backend),
            policy,
        )),
        Transport::Acp => Arc::new(LiveProvider::new(acp::AcpProtocol::new(backend), policy)),
        Transport::AppServer => Arc::new(LiveProvider::new(
            codex::app_server::AppServerProtocol::new(backend),
            policy,
        )),
        Transport::Stream => Arc::new(LiveProvider::new(
            claude::stream::StreamProtocol::new(backend),
            policy,
        )),
    })
}

/// The transport the chat uses for `name` unless told otherwise: the best the backend has.
/// pi's RPC mode and ACP are long-lived and two-way (no cold start per turn, in-band stop;
/// steering for pi, permission prompts for ACP): Gemini speaks ACP itself, Claude Code and
/// Codex through their ACP adapters when one is installed; the rest run one-shot.
pub(crate) fn default_chat_transport(name: &str, settings: &ProviderSettings) -> Transport {
    if let Some(protocol) = settings.protocol {
        return protocol;
    }
    match ProviderKind::from_name(name) {
        Some(ProviderKind::Pi) => Transport::Rpc,
        Some(ProviderKind::Gemini) => Transport::Acp,
        // Codex's own two-way mode; its ACP adapter where the user configured one.
        Some(ProviderKind::Codex) if settings.acp_command.is_none() => Transport::AppServer,
        // Claude Code's own two-way mode, unless the user configured its ACP adapter.
        Some(ProviderKind::Claude) if settings.acp_command.is_none() => Transport::Stream,
        Some(ProviderKind::Claude | ProviderKind::Codex) => {
            let has_adapter = build_backend(name, settings).is_some_and(|backend| {
                backend
                    .live_transports()
                    .contains(&LiveTransport::ready(Transport::Acp))
            });
            if has_adapter {
                Transport::Acp
            } else {
                Transport::Json
            }
        }
        Some(ProviderKind::Demo) | None => Transport::Json,
    }
}

/// The transport `agentty run` uses for `name` unless told otherwise: one that can honour
/// `--permissions` where the CLI has one (Claude Code's stream-json mode, Codex's app-server:
/// their one-shot modes cannot ask), else the one-shot JSON mode (a single prompt gains nothing
/// from a long-lived process).
pub(crate) fn default_run_transport(name: &str, settings: &ProviderSettings) -> Transport {
    if let Some(transport) = settings.chosen_transport() {
        return transport;
    }
    match ProviderKind::from_name(name) {
        Some(ProviderKind::Claude | ProviderKind::Codex) => default_chat_transport(name, settings),
        _ => Transport::Json,
    }
}

/// Why `--permissions` cannot be honoured on `transport` for `name` (a one-shot mode of a CLI
/// that has permission prompts and cannot ask agentty), when the user gave it; `None`: fine.
pub(crate) fn permissions_not_honoured(
    name: &str,
    transport: Transport,
    permissions_given: bool,
) -> Option<String> {
    let claude_one_shot =
        ProviderKind::from_name(name) == Some(ProviderKind::Claude) && transport == Transport::Json;
    (permissions_given && claude_one_shot).then(|| {
        "--permissions cannot be honoured with --transport json: Claude Code's one-shot mode \
         cannot ask agentty, it refuses every tool that needs permission. Use --transport stream \
         (the default for claude), or allow tools with Claude Code's own flags in \
         [providers.claude] args (for example --allowedTools or --permission-mode acceptEdits)."
            .to_owned()
    })
}

/// How each real agent CLI is installed, by its `--provider` name (from
/// [`ProviderKind::install_command`], for the chat's welcome and `/provider`).
pub(crate) const INSTALL_COMMANDS: [(&str, &str); 4] = {
    let mut commands = [("", ""); 4];
    let mut index = 0;
    let mut kinds = 0;
    while kinds < ProviderKind::ALL.len() {
        let kind = ProviderKind::ALL[kinds];
        if let Some(install) = kind.install_command() {
            commands[index] = (kind.name(), install);
            index += 1;
        }
        kinds += 1;
    }
    commands
};

/// Why the built-in agent CLI `name` cannot run, and how to install it, when the program its
/// settings start (`command`, else the CLI's own name) is neither on PATH nor an executable
/// file; `None` when it is there (or `name` is not one of the real CLIs).
pub(crate) fn not_installed(name: &str, settings: &ProviderSettings) -> Option<String> {
    let kind = ProviderKind::from_name(name)?;
    let install = kind.install_command()?;
    // Each real CLI installs a program named as its provider.
    let program = settings
        .command
        .clone()
        .unwrap_or_else(|| kind.name().into());
    let path = std::path::Path::new(&program);
    let found = if path.components().count() > 1 {
        crate::process::is_executable(path)
    } else {
        crate::process::find_on_path(&program.to_string_lossy()).is_some()
    };
    (!found).then(|| {
        format!(
            "{name} is not installed: `{}` is not on PATH. Install it with `{install}`, then \
             restart agentty or pick it again with /provider; /provider switches to another agent",
            program.to_string_lossy()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_acp_command(command: &str) -> ProviderSettings {
        ProviderSettings {
            acp_command: Some(command.into()),
            ..ProviderSettings::default()
        }
    }

    #[test]
    fn the_chat_talks_to_each_agent_the_best_way_it_has() {
        let none = ProviderSettings::default();
        assert_eq!(default_chat_transport("pi", &none), Transport::Rpc);
        assert_eq!(default_chat_transport("gemini", &none), Transport::Acp);
        assert_eq!(default_chat_transport("demo", &none), Transport::Json);
        assert_eq!(default_chat_transport("codex", &none), Transport::AppServer);
        assert_eq!(default_run_transport("codex", &none), Transport::AppServer);
        assert_eq!(default_run_transport("pi", &none), Transport::Json);
        // Claude Code's own two-way mode, in the chat and in `agentty run`.
        assert_eq!(default_chat_transport("claude", &none), Transport::Stream);
        assert_eq!(default_run_transport("claude", &none), Transport::Stream);
        assert!(permissions_not_honoured("claude", Transport::Json, true).is_some());
        assert!(permissions_not_honoured("claude", Transport::Json, false).is_none());
        assert!(permissions_not_honoured("claude", Transport::Stream, true).is_none());
        assert!(permissions_not_honoured("pi", Transport::Json, true).is_none());
        // Claude Code and Codex over their ACP adapters when one is configured (or on PATH).
        for name in ["claude", "codex"] {
            assert_eq!(
                default_chat_transport(name, &with_acp_command("/opt/adapter")),
                Transport::Acp,
                "{name}"
            );
        }
        // A provider defined in the config speaks what it says.
        let configured = ProviderSettings {
            protocol: Some(Transport::Acp),
            command: Some("/opt/agent".into()),
            ..ProviderSettings::default()
        };
        assert_eq!(default_chat_transport("mine", &configured), Transport::Acp);
        assert!(build_provider_with("mine", &configured, Transport::Acp).is_ok());
        assert!(build_provider_with("mine", &configured, Transport::Json).is_err());
        let unknown = build_provider_with("nope", &none, Transport::Json);
        assert!(unknown.is_err_and(|message| message.contains("unknown provider `nope`")));
    }

    /// The registry imports every backend, so a backend that used it would close a circle:
    /// no file of `provider/` but the registry and the module root names it or what it builds.
    #[test]
    fn no_backend_reaches_for_the_registry() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/provider");
        let exempt = [root.join("mod.rs"), root.join("registry.rs")];
        let registry_names = [
            "registry::",
            "build_backend(",
            "build_provider(",
            "build_provider_with(",
            "provider_on(",
            "default_chat_transport(",
            "default_run_transport(",
            "permissions_not_honoured(",
            ".built_backend(",
        ];
        let mut checked = 0;
        for entry in ignore::WalkBuilder::new(&root).build().flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|ext| ext != "rs") || exempt.contains(&path.to_owned()) {
                continue;
            }
            let text = std::fs::read_to_string(path).unwrap();
            for name in registry_names {
                assert!(
                    !text.contains(name),
                    "{} uses the registry ({name})",
                    path.display()
                );
            }
            checked += 1;
        }
        assert!(checked > 20, "only {checked} files were read");
    }
}
