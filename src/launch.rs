//! Which provider to run, and with what settings: command line over config over defaults.

use crate::process::find_on_path;

use crate::cli::AgentArgs;
use crate::config::{Config, ProviderSettings};
use crate::provider::PROVIDER_NAMES;

/// The provider name and its effective settings.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProviderChoice {
    pub(crate) name: String,
    pub(crate) settings: ProviderSettings,
}

/// `--provider`, else the configured default, else `pi` when it is on PATH, else `demo` (so a
/// fresh machine runs with no agent installed). Flags override the config's settings.
pub(crate) fn resolve_provider(
    agent: &AgentArgs,
    config: &Config,
) -> Result<ProviderChoice, String> {
    resolve_provider_with(agent, config, || find_on_path("pi").is_some())
}

fn resolve_provider_with(
    agent: &AgentArgs,
    config: &Config,
    pi_installed: impl FnOnce() -> bool,
) -> Result<ProviderChoice, String> {
    let name = agent
        .provider
        .clone()
        .or_else(|| config.default_provider.clone())
        .unwrap_or_else(|| {
            if pi_installed() {
                "pi".to_owned()
            } else {
                "demo".to_owned()
            }
        });
    if !PROVIDER_NAMES.contains(&name.as_str()) && !config.providers.contains_key(&name) {
        let configured: Vec<&str> = config
            .providers
            .keys()
            .map(String::as_str)
            .filter(|configured| !PROVIDER_NAMES.contains(configured))
            .collect();
        let configured = if configured.is_empty() {
            String::new()
        } else {
            format!(", or one defined in the config: {}", configured.join(", "))
        };
        return Err(format!(
            "unknown provider `{name}` (expected one of: {}{configured})",
            PROVIDER_NAMES.join(", ")
        ));
    }
    let mut settings = config.provider_settings(&name);
    if let Some(agent_bin) = &agent.agent_bin {
        settings.command = Some(agent_bin.clone());
    }
    if let Some(model) = &agent.model {
        settings.model = Some(model.clone());
    }
    settings.args.extend(agent.provider_args.iter().cloned());
    if agent.transport.is_some() {
        settings.transport = agent.transport;
    }
    Ok(ProviderChoice { name, settings })
}

/// Why `resolve_provider` picks the provider it picks, in words that follow "because" on the
/// first-start screen.
pub(crate) fn choice_reason(agent: &AgentArgs, config: &Config) -> String {
    if let Some(name) = &agent.provider {
        return format!("--provider {name} was given");
    }
    if let Some(name) = &config.default_provider {
        return format!("the config names {name} as the default provider");
    }
    match find_on_path("pi") {
        Some(path) => format!("pi is on PATH ({})", path.display()),
        None => "no provider was chosen and pi is not on PATH".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn the_reason_names_what_decided() {
        let config = Config {
            default_provider: Some("codex".into()),
            ..Config::default()
        };
        let flag = AgentArgs {
            provider: Some("claude".into()),
            ..AgentArgs::default()
        };
        assert_eq!(choice_reason(&flag, &config), "--provider claude was given");
        assert_eq!(
            choice_reason(&AgentArgs::default(), &config),
            "the config names codex as the default provider"
        );
    }

    #[test]
    fn flags_win_over_config_and_unknown_names_are_refused() {
        let mut config = Config {
            default_provider: Some("claude".into()),
            ..Config::default()
        };
        config.providers.insert(
            "claude".into(),
            ProviderSettings {
                args: vec!["--permission-mode".into(), "plan".into()],
                ..ProviderSettings::default()
            },
        );
        let agent = AgentArgs {
            agent_bin: Some("/opt/claude".into()),
            provider_args: vec!["--verbose".into()],
            ..AgentArgs::default()
        };
        let choice = resolve_provider(&agent, &config).unwrap();
        assert_eq!(choice.name, "claude");
        assert_eq!(choice.settings.command, Some(PathBuf::from("/opt/claude")));
        assert_eq!(
            choice.settings.args,
            ["--permission-mode", "plan", "--verbose"]
        );

        let unknown = AgentArgs {
            provider: Some("nope".into()),
            ..AgentArgs::default()
        };
        assert!(resolve_provider(&unknown, &config)
            .unwrap_err()
            .contains("unknown provider `nope`"));
    }

    #[test]
    fn a_provider_defined_in_the_config_is_accepted_and_named_in_the_error() {
        let mut config = Config::default();
        config
            .providers
            .insert("my-acp".into(), ProviderSettings::default());
        let custom = AgentArgs {
            provider: Some("my-acp".into()),
            ..AgentArgs::default()
        };
        assert_eq!(resolve_provider(&custom, &config).unwrap().name, "my-acp");
        let unknown = AgentArgs {
            provider: Some("nope".into()),
            ..AgentArgs::default()
        };
        assert!(resolve_provider(&unknown, &config)
            .unwrap_err()
            .ends_with("or one defined in the config: my-acp)"));
    }
}
