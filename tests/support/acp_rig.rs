//! The real agents over the Agent Client Protocol against the fake model servers of
//! `support/` on 127.0.0.1 ([`rig`]): a throwaway home and working directory per test, the
//! CLI's environment and an agentty config that points the provider at them (`command` /
//! `acp_command` and `env` in `[providers.gemini|claude|codex]`), what the model received
//! ([`Server::model_requests`]) and the processes of the run ([`AcpRig::probe`]). Shared by
//! `tests/suite/real_acp.rs` (headless `agentty run`) and `tests/suite/real_acp_chat.rs` (the full-screen
//! chat in tmux); the installs are listed in `tests/suite/real_acp.rs`.
//!
//! The test crate declares the modules this one uses: `fake_anthropic`, `fake_codex_server`,
//! `fake_gemini_server`, `headless_run` and `real_cli`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::fake_anthropic::{self, FakeAnthropic, Scenario as ClaudeScenario};
use super::fake_codex_server::shared::FakeServer;
use super::fake_codex_server::{self, CodexScenario};
use super::fake_gemini_server::{self, GeminiScenario, STREAM_PATH};
use super::headless_run::{Finished, HeadlessRun};
use super::real_cli::{real_cli, ProcessProbe};

pub const GEMINI_BIN: &str = "/tmp/gemini-cli/node_modules/.bin/gemini";
pub const CLAUDE_ACP_BIN: &str = "/tmp/claude-acp/node_modules/.bin/claude-agent-acp";
pub const CODEX_ACP_BIN: &str = "/tmp/codex-acp/node_modules/.bin/codex-acp";
/// Where `npm install --prefix /tmp/codex-cli @openai/codex` puts its platform packages.
const CODEX_CLI_MODULES: &str = "/tmp/codex-cli/node_modules/@openai";
/// The environment variable that marks every process of one test run.
pub const RUN_MARKER_VAR: &str = "AGENTTY_ACP_TEST_RUN";
/// How long one `agentty run` against a fake server may take.
pub const RUN_LIMIT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cli {
    Gemini,
    Claude,
    Codex,
}

impl Cli {
    pub fn name(self) -> &'static str {
        match self {
            Cli::Gemini => "gemini",
            Cli::Claude => "claude",
            Cli::Codex => "codex",
        }
    }
}

/// The fake model server of one CLI.
pub enum Server {
    Gemini(FakeServer),
    Claude(FakeAnthropic),
    Codex(FakeServer),
}

/// One request the model received (the turn's main requests only: side calls such as Gemini's
/// router or Claude's title request are left out).
#[derive(Debug)]
pub struct ModelRequest {
    pub at: Instant,
    pub user_texts: Vec<String>,
    /// What the tool calls the request carries back returned (tool results, function
    /// responses), as text.
    pub tool_results: Vec<String>,
    /// The number of messages in the request (Claude's fake server echoes it).
    pub message_count: usize,
}

impl Server {
    /// When the first request of any kind arrived.
    pub fn first_request_at(&self) -> Option<Instant> {
        match self {
            Server::Gemini(server) | Server::Codex(server) => server
                .requests()
                .iter()
                .map(|request| request.received_at)
                .min(),
            Server::Claude(server) => server
                .requests()
                .iter()
                .map(|request| request.received_at)
                .min(),
        }
    }

    /// When the first request of any kind at or after `since` arrived.
    pub fn first_request_after(&self, since: Instant) -> Option<Instant> {
        let times: Vec<Instant> = match self {
            Server::Gemini(server) | Server::Codex(server) => server
                .requests()
                .iter()
                .map(|request| request.received_at)
                .collect(),
            Server::Claude(server) => server
                .requests()
                .iter()
                .map(|request| request.received_at)
                .collect(),
        };
        times.into_iter().filter(|at| *at >= since).min()
    }

    /// The user messages of each model request, in order.
    pub fn user_texts_per_request(&self) -> Vec<Vec<String>> {
        self.model_requests()
            .into_iter()
            .map(|request| request.user_texts)
            .collect()
    }

    pub fn model_requests(&self) -> Vec<ModelRequest> {
        match self {
            Server::Gemini(server) => server
                .requests()
                .iter()
                .filter(|request| request.path.contains(STREAM_PATH))
                .map(|request| ModelRequest {
                    at: request.received_at,
                    user_texts: fake_gemini_server::user_texts(request),
                    tool_results: fake_gemini_server::function_responses(request),
                    message_count: 0,
                })
                .collect(),
            Server::Codex(server) => server
                .requests()
                .iter()
                .filter(|request| request.path.contains("/responses"))
                .map(|request| ModelRequest {
                    at: request.received_at,
                    user_texts: fake_codex_server::user_texts(request),
                    tool_results: fake_codex_server::tool_outputs(request),
                    message_count: 0,
                })
                .collect(),
            Server::Claude(server) => server
                .message_requests()
                .iter()
                .filter(|request| request.main)
                .map(|request| ModelRequest {
                    at: request.received_at,
                    user_texts: request.user_texts(),
                    tool_results: request.tool_results(),
                    message_count: request.body["messages"].as_array().map_or(0, Vec::len),
                })
                .collect(),
        }
    }
}

/// One CLI over ACP against its fake server, with a throwaway home and working directory and
/// an agentty config that points the provider at them.
pub struct AcpRig {
    pub cli: Cli,
    pub test: String,
    pub server: Server,
    pub home: TempDir,
    pub work: TempDir,
    pub config: PathBuf,
    pub probe: ProcessProbe,
    /// Directories put in front of PATH for agentty (and so for the agent).
    pub path_prefix: Vec<PathBuf>,
}

/// A fake-server scenario in each CLI's terms.
pub enum Plan {
    Text,
    Thinking,
    /// A shell tool call of this command, made so that the agent asks permission first.
    AskingTool(String),
    /// A plain shell tool call of this command (Codex runs it in its sandbox without asking).
    Tool(String),
    /// This text, streamed a word at a time with `pause` after each word (a slow turn when
    /// the pause is long).
    Say {
        text: String,
        pause: Duration,
    },
    /// Streamed, this text's first `words` words and then the connection drops (Claude; Gemini
    /// drops after a few parts).
    Cut {
        text: String,
        words: usize,
    },
    /// Chosen per model request from the text of the request's last user message (several
    /// turns of one conversation, each with its own scenario). The choice must not itself be
    /// `PerPrompt`.
    PerPrompt(Arc<dyn Fn(&str) -> Plan + Send + Sync>),
    /// Every turn request answered with HTTP 500 (and the CLI's own retries left to agentty:
    /// the rig turns none off itself).
    Http500,
    /// Text, except that a turn request for which this says so (given the text of its last
    /// user message) is answered with HTTP 500.
    Failing(Arc<dyn Fn(&str) -> bool + Send + Sync>),
}

impl Plan {
    fn gemini(self) -> GeminiScenario {
        match self {
            Plan::Text => GeminiScenario::Text,
            Plan::Thinking => GeminiScenario::Reasoning,
            Plan::AskingTool(command) | Plan::Tool(command) => GeminiScenario::Tool(command),
            Plan::Say { text, pause } => GeminiScenario::Say { text, pause },
            Plan::Cut { .. } => GeminiScenario::Drop,
            Plan::Http500 | Plan::Failing(_) => GeminiScenario::Text,
            Plan::PerPrompt(_) => panic!("a per-prompt plan chose another per-prompt plan"),
        }
    }

    fn claude(self) -> ClaudeScenario {
        match self {
            Plan::Text => ClaudeScenario::Text,
            Plan::Thinking => ClaudeScenario::Thinking,
            Plan::AskingTool(command) | Plan::Tool(command) => ClaudeScenario::Tool { command },
            Plan::Say { text, pause } => ClaudeScenario::Say { text, pause },
            Plan::Cut { text, words } => ClaudeScenario::Cut { text, words },
            Plan::Http500 | Plan::Failing(_) => ClaudeScenario::Text,
            Plan::PerPrompt(_) => panic!("a per-prompt plan chose another per-prompt plan"),
        }
    }

    fn codex(self) -> CodexScenario {
        match self {
            Plan::Text => CodexScenario::Text,
            Plan::Thinking => CodexScenario::StreamedReasoning,
            Plan::AskingTool(command) => CodexScenario::EscalatedTool(command),
            Plan::Tool(command) => CodexScenario::Tool(command),
            Plan::Say { text, pause } => CodexScenario::Say { text, pause },
            Plan::Cut { .. } => panic!("the fake Codex server has no cut stream"),
            Plan::Http500 => CodexScenario::Http500,
            Plan::Failing(_) => CodexScenario::Text,
            Plan::PerPrompt(_) => panic!("a per-prompt plan chose another per-prompt plan"),
        }
    }
}

pub async fn rig(cli: Cli, test: &str, plan: Plan) -> AcpRig {
    let home = TempDir::new().expect("temp home");
    let work = TempDir::new().expect("temp working directory");
    let home_path = home.path().to_string_lossy().into_owned();
    let mut path_prefix = Vec::new();
    let mut provider = toml::Table::new();
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    let server = match cli {
        Cli::Gemini => {
            let bin = real_cli(test, "AGENTTY_GEMINI_BIN", GEMINI_BIN);
            let failing = matches!(plan, Plan::Http500);
            let server = match plan {
                Plan::PerPrompt(choose) => {
                    fake_gemini_server::start_choosing(move |text| choose(text).gemini())
                }
                Plan::Http500 => fake_gemini_server::start_failing(GeminiScenario::Text, |_| true),
                Plan::Failing(fail) => {
                    fake_gemini_server::start_failing(GeminiScenario::Text, move |text| fail(text))
                }
                plan => fake_gemini_server::start(plan.gemini()),
            };
            // Gemini CLI's own retries off in the user's settings, except where the test is
            // that agentty turns them off.
            fake_gemini_server::write_cli_settings(home.path(), (!failing).then_some(1));
            provider.insert("command".into(), path_value(&bin));
            // A pinned model skips the router's side call before each turn.
            provider.insert("model".into(), "gemini-2.5-pro".into());
            for (key, value) in [
                ("HOME", home_path.clone()),
                ("GEMINI_API_KEY", "dummy-key".to_owned()),
                (
                    "GOOGLE_GEMINI_BASE_URL",
                    format!("http://127.0.0.1:{}", server.port),
                ),
                ("GEMINI_CLI_TRUST_WORKSPACE", "true".to_owned()),
            ] {
                env.insert(key.into(), value);
            }
            Server::Gemini(server)
        }
        Cli::Claude => {
            let adapter = real_cli(test, "AGENTTY_CLAUDE_ACP_BIN", CLAUDE_ACP_BIN);
            let server = match plan {
                Plan::PerPrompt(choose) => {
                    FakeAnthropic::start_choosing(move |text| choose(text).claude()).await
                }
                Plan::Http500 => FakeAnthropic::start_failing(ClaudeScenario::Text, |_| true).await,
                Plan::Failing(fail) => {
                    FakeAnthropic::start_failing(ClaudeScenario::Text, move |text| fail(text)).await
                }
                plan => FakeAnthropic::start(plan.claude()).await,
            };
            provider.insert("acp_command".into(), path_value(&adapter));
            // Not `IS_SANDBOX=1`, which the SDK's Claude Code needs as root (else session/new
            // fails: "Query closed before response received"): the provider sets it itself,
            // and this checks that it does.
            env = fake_anthropic::cli_env(&server.base_url, home.path());
            Server::Claude(server)
        }
        Cli::Codex => {
            let adapter = real_cli(test, "AGENTTY_CODEX_ACP_BIN", CODEX_ACP_BIN);
            path_prefix.push(bwrap_dir());
            let server = match plan {
                Plan::PerPrompt(choose) => {
                    fake_codex_server::start_choosing(move |text| choose(text).codex())
                }
                Plan::Failing(fail) => {
                    fake_codex_server::start_failing(CodexScenario::Text, move |text| fail(text))
                }
                plan => fake_codex_server::start(plan.codex()),
            };
            let codex_home = home.path().join("codex_home");
            std::fs::create_dir_all(&codex_home).expect("create CODEX_HOME");
            fake_codex_server::write_codex_config(&codex_home, server.port, "gpt-5.4-mini");
            provider.insert("acp_command".into(), path_value(&adapter));
            for (key, value) in [
                ("CODEX_HOME", codex_home.to_string_lossy().into_owned()),
                ("HOME", home_path.clone()),
                ("FAKE_API_KEY", "dummy-key".to_owned()),
            ] {
                env.insert(key.into(), value);
            }
            Server::Codex(server)
        }
    };
    provider.insert(
        "env".into(),
        toml::Value::Table(env.into_iter().map(|(k, v)| (k, v.into())).collect()),
    );
    let mut providers = toml::Table::new();
    providers.insert(cli.name().into(), toml::Value::Table(provider));
    let mut config = toml::Table::new();
    config.insert("providers".into(), toml::Value::Table(providers));
    let config_path = home.path().join("agentty-config.toml");
    let config_text = toml::to_string(&config).expect("config as TOML");
    std::fs::write(&config_path, &config_text).expect("write the agentty config");
    eprintln!(
        "=== {test}: config {}:\n{config_text}",
        config_path.display()
    );
    AcpRig {
        cli,
        test: test.to_owned(),
        server,
        home,
        work,
        config: config_path,
        probe: ProcessProbe::new(RUN_MARKER_VAR),
        path_prefix,
    }
}

pub fn path_value(path: &Path) -> toml::Value {
    path.to_string_lossy().into_owned().into()
}

/// The directory holding the `bwrap` that codex-acp's sandbox needs on PATH: `AGENTTY_BWRAP_DIR`,
/// else the one `@openai/codex` ships, else one on PATH; a failure when there is none.
pub fn bwrap_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AGENTTY_BWRAP_DIR") {
        return PathBuf::from(dir);
    }
    let shipped = std::fs::read_dir(CODEX_CLI_MODULES)
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|package| {
            std::fs::read_dir(package.path().join("vendor"))
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|target| target.path().join("codex-resources"))
        .find(|dir| dir.join("bwrap").is_file());
    let on_path = || {
        std::env::split_paths(&std::env::var_os("PATH")?).find(|dir| dir.join("bwrap").is_file())
    };
    shipped.or_else(on_path).unwrap_or_else(|| {
        panic!(
            "no bwrap for codex-acp's sandbox: install @openai/codex into \
             /tmp/codex-cli (it ships one in vendor/*/codex-resources/), or set AGENTTY_BWRAP_DIR"
        )
    })
}

impl AcpRig {
    /// `agentty run --provider CLI --transport acp --config FILE [--permissions P] PROMPT` in
    /// the rig's working directory.
    pub fn command(&self, permissions: Option<&str>, prompt: &str) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_agentty"));
        command
            .args(["run", "--provider", self.cli.name(), "--transport", "acp"])
            .arg("--config")
            .arg(&self.config);
        if let Some(permissions) = permissions {
            command.args(["--permissions", permissions]);
        }
        command
            .arg(prompt)
            .current_dir(self.work.path())
            .envs(self.agentty_env());
        command
    }

    /// The variables agentty runs with on top of the test's own environment: its state
    /// directory (in the throwaway home), the run's marker, and PATH with the rig's
    /// directories in front.
    pub fn agentty_env(&self) -> Vec<(String, OsString)> {
        let mut env = vec![
            (
                "AGENTTY_STATE_DIR".to_owned(),
                self.state_dir().into_os_string(),
            ),
            (self.probe.var.to_owned(), self.probe.marker.clone().into()),
        ];
        if !self.path_prefix.is_empty() {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let dirs = self
                .path_prefix
                .iter()
                .cloned()
                .chain(std::env::split_paths(&path));
            env.push(("PATH".to_owned(), std::env::join_paths(dirs).expect("PATH")));
        }
        env
    }

    /// The rig's provider over ACP in this process (for the orchestrator), configured as
    /// `agentty run` would be: the rig's config, `PATH` with the rig's prefix.
    pub fn provider(&self) -> std::sync::Arc<dyn agentty::provider::Provider> {
        let loaded = agentty::config::load(Some(&self.config));
        let mut settings = loaded
            .config
            .providers
            .get(self.cli.name())
            .cloned()
            .unwrap_or_default();
        settings.permissions = Some(agentty::config::PermissionPolicy::Deny);
        for (key, value) in self.agentty_env() {
            if key == "PATH" {
                settings
                    .env
                    .insert(key, value.to_string_lossy().into_owned());
            }
        }
        agentty::provider::build_provider_with(
            self.cli.name(),
            &settings,
            agentty::provider::Transport::Acp,
        )
        .expect("the CLI runs over ACP")
    }

    /// agentty's state directory (`AGENTTY_STATE_DIR`).
    pub fn state_dir(&self) -> PathBuf {
        self.home.path().join("agentty-state")
    }

    pub fn spawn(&self, permissions: Option<&str>, prompt: &str) -> HeadlessRun {
        HeadlessRun::spawn(self.command(permissions, prompt))
    }

    /// Runs `agentty run` to its exit; prints the run and its timings.
    pub async fn run(&self, permissions: Option<&str>, prompt: &str) -> Finished {
        let run = self.spawn(permissions, prompt);
        let spawned_at = run.spawned_at;
        let finished = run.finish(RUN_LIMIT).await;
        self.report(spawned_at, &finished);
        finished
    }

    /// Prints the run, what the model received, and the timings from the spawn.
    pub fn report(&self, spawned_at: Instant, finished: &Finished) {
        eprintln!("{finished}");
        let requests = self.server.model_requests();
        eprintln!("=== {}: {} model request(s)", self.test, requests.len());
        for (number, request) in requests.iter().enumerate() {
            eprintln!(
                "  #{} at {} ms: user texts {:?}, tool results {:?}",
                number + 1,
                request.at.saturating_duration_since(spawned_at).as_millis(),
                request
                    .user_texts
                    .iter()
                    .map(|t| shorten(t))
                    .collect::<Vec<_>>(),
                request
                    .tool_results
                    .iter()
                    .map(|t| shorten(t))
                    .collect::<Vec<_>>(),
            );
        }
        let ms =
            |at: Option<Duration>| at.map_or("-".to_owned(), |at| format!("{} ms", at.as_millis()));
        eprintln!(
            "TIMING {} {}: spawn -> first request to the fake server {}; -> first model request {}; \
             -> session.started {}; -> first assistant delta {}; -> exit {} ms",
            self.cli.name(),
            self.test,
            ms(self
                .server
                .first_request_at()
                .map(|at| at.saturating_duration_since(spawned_at))),
            ms(requests.first().map(|r| r.at.saturating_duration_since(spawned_at))),
            ms(finished.first_arrival("session.started")),
            ms(finished.first_arrival("assistant")),
            finished.elapsed.as_millis(),
        );
    }
}

pub fn shorten(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() <= 100 {
        return text.to_owned();
    }
    let head: String = text.chars().take(100).collect();
    format!("{head}…({} chars)", text.chars().count())
}

/// A prompt unique to this run.
pub fn prompt(label: &str) -> String {
    format!("{label} {}", uuid::Uuid::new_v4().simple())
}
