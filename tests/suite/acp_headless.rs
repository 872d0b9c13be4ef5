//! `agentty run` over the Agent Client Protocol as scripts use it: any ACP agent defined in the
//! config (`[providers.NAME] protocol = "acp"`), `--permissions allow|deny` (a headless run never
//! waits for an answer), and clear usage errors for a transport a provider does not have. The
//! agent is the demo agent's ACP mode, a real child process.

use crate::support::agent_stream;

use std::path::Path;
use std::process::{Command, Output};

use agent_stream::resolutions;
use agentty::stream::{AgentMessage, NoticeKind, PermissionResolver};

struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A config that defines `mine`, an ACP agent started by its command line.
    fn config_with_acp_agent(&self) -> std::path::PathBuf {
        let config = self.path().join("agentty.toml");
        std::fs::write(
            &config,
            format!(
                "[providers.mine]\nprotocol = \"acp\"\ncommand = \"{}\"\n\
                 args = [\"demo-agent\", \"--mode\", \"acp\"]\n\
                 env = {{ AGENTTY_DEMO_TIME_SCALE = \"0\", AGENTTY_DEMO_STATE_DIR = \"{}\" }}\n",
                env!("CARGO_BIN_EXE_agentty"),
                self.path().join("demo").display()
            ),
        )
        .unwrap();
        config
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_agentty"))
            .arg("run")
            .args(args)
            .current_dir(self.path())
            .env("AGENTTY_STATE_DIR", self.path().join("state"))
            .env("XDG_CONFIG_HOME", self.path().join("config"))
            .env("AGENTTY_DEMO_STATE_DIR", self.path().join("demo"))
            .env("AGENTTY_DEMO_TIME_SCALE", "0")
            .output()
            .unwrap()
    }
}

fn stream(output: &Output) -> Vec<AgentMessage> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| AgentMessage::from_json_line(line).unwrap())
        .collect()
}

#[test]
fn an_acp_agent_defined_in_the_config_runs_with_its_name() {
    let scratch = Scratch::new();
    let config = scratch.config_with_acp_agent();
    let output = scratch.run(&[
        "--config",
        config.to_str().unwrap(),
        "--provider",
        "mine",
        "hello",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    let messages = stream(&output);
    assert!(
        matches!(&messages[0], AgentMessage::SessionStarted { provider, .. } if provider == "mine"),
        "{messages:?}"
    );
    assert!(!agentty::stream::assistant_text(&messages).is_empty());
    assert!(
        matches!(messages.last(), Some(AgentMessage::Completed { .. })),
        "{messages:#?}"
    );
}

#[test]
fn headless_denies_by_default_and_says_how_to_allow() {
    let scratch = Scratch::new();
    let output = scratch.run(&[
        "--provider",
        "demo",
        "--transport",
        "acp",
        "--scenario",
        "permission",
        "make the file",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let messages = stream(&output);
    assert_eq!(
        resolutions(&messages),
        [("reject_once".to_owned(), PermissionResolver::Policy)]
    );
    assert!(messages.iter().any(|message| matches!(
        message,
        AgentMessage::Notice { kind, message } if *kind == NoticeKind::PermissionRefused
            && message.contains("--permissions allow")
    )));
    assert!(!scratch.path().join("agentty-demo.txt").exists());
}

#[test]
fn permissions_allow_lets_the_tool_run() {
    let scratch = Scratch::new();
    let output = scratch.run(&[
        "--provider",
        "demo",
        "--transport",
        "acp",
        "--permissions",
        "allow",
        "--scenario",
        "permission",
        "make the file",
    ]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        resolutions(&stream(&output)),
        [("allow_once".to_owned(), PermissionResolver::Policy)]
    );
    assert!(scratch.path().join("agentty-demo.txt").exists());
}

#[test]
fn a_transport_the_provider_lacks_is_a_usage_error_naming_the_fix() {
    let scratch = Scratch::new();
    // No adapter on PATH and none configured.
    let claude = Command::new(env!("CARGO_BIN_EXE_agentty"))
        .args(["run", "--provider", "claude", "--transport", "acp", "hi"])
        .env("PATH", "/nonexistent")
        .env("AGENTTY_STATE_DIR", scratch.path().join("state"))
        .env("XDG_CONFIG_HOME", scratch.path().join("config"))
        .output()
        .unwrap();
    assert_eq!(claude.status.code(), Some(2));
    let said = String::from_utf8_lossy(&claude.stderr);
    assert!(
        said.contains("claude-agent-acp") && said.contains("--transport json"),
        "{said}"
    );
    let pi = scratch.run(&["--provider", "pi", "--transport", "acp", "hi"]);
    assert_eq!(pi.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&pi.stderr).contains("no ACP transport"));
    // An ACP agent from the config speaks only ACP.
    let config = scratch.config_with_acp_agent();
    let json = scratch.run(&[
        "--config",
        config.to_str().unwrap(),
        "--provider",
        "mine",
        "--transport",
        "json",
        "hi",
    ]);
    assert_eq!(json.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&json.stderr).contains("speaks only ACP"));
}
