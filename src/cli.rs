//! The command line (a contract, like the message fields: see DESIGN.md).

use std::io::Read;
use std::path::PathBuf;

use std::ffi::OsStr;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand};

use crate::demo_agent::DemoAgentArgs;
use crate::provider::PROVIDER_NAMES;

#[derive(Debug, Parser)]
#[command(
    name = "agentty",
    version,
    about = "A full-screen terminal chat client for coding-agent CLIs"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<CliCommand>,
    #[command(flatten)]
    pub agent: AgentArgs,
    /// Continue the agent CLI's own most recent session.
    #[arg(long = "continue", conflicts_with_all = ["session", "resume"])]
    pub(crate) continue_latest: bool,
    /// Continue the given agent session.
    #[arg(long, conflicts_with = "resume")]
    pub(crate) session: Option<String>,
    /// Reopen a conversation and continue its agent session: the last one of this directory,
    /// or the one whose id starts with ID. The word after --resume is an ID only when it looks
    /// like one (hex digits and hyphens, with a digit) and names a conversation; any other word
    /// starts the PROMPT, sent to the last conversation (`agentty --resume "fix the tests"`). An
    /// ID-like word that names none is refused; `--resume -- PROMPT` always reads a prompt.
    #[arg(long, value_name = "ID", num_args = 0..=1)]
    pub(crate) resume: Option<Option<String>>,
    /// A first prompt, sent as the chat opens (`agentty "fix the tests"`).
    #[arg(value_name = "PROMPT")]
    pub(crate) prompt: Vec<String>,
}

impl Cli {
    /// The prompt the chat sends as it opens, if one was given.
    pub(crate) fn first_prompt(&self) -> Option<String> {
        let prompt = self.prompt.join(" ");
        (!prompt.trim().is_empty()).then_some(prompt)
    }

    /// Settles what the word after `--resume` is ([`resume_word`]), given whether a word names
    /// an existing conversation: an ID stays, the start of a prompt moves to `prompt` (and the
    /// last conversation resumes).
    pub(crate) fn settle_resume_word(&mut self, names_a_conversation: impl Fn(&str) -> bool) {
        let Some(Some(word)) = &self.resume else {
            return;
        };
        if resume_word(word, names_a_conversation(word)) == ResumeWord::Prompt {
            let word = word.clone();
            self.prompt.insert(0, word);
            self.resume = Some(None);
        }
    }
}

/// What the word after `--resume` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResumeWord {
    /// The id of a conversation, or the start of one.
    Conversation,
    /// The start of the first prompt.
    Prompt,
}

/// The word after `--resume`: a conversation's id (or its start) when it has an id's shape
/// (hex digits and hyphens, with a digit or eight characters long: `01a23569`, `01a2`, the
/// log's `0001733…-01a23569`; not words such as `add` or `cafe`) and names a conversation
/// (`names_a_conversation`); also when it has that shape, six characters or more and a digit
/// but names none (a mistyped id is refused, never sent to the agent: no one writes a prompt
/// like `0b1e7c`). Anything else, `fix the tests` or `add`, is a prompt.
pub(crate) fn resume_word(word: &str, names_a_conversation: bool) -> ResumeWord {
    let length = word.chars().count();
    let digit = word.chars().any(|ch| ch.is_ascii_digit());
    let id_shaped =
        word.chars().all(|ch| ch.is_ascii_hexdigit() || ch == '-') && (digit || length >= 8);
    let surely_an_id = id_shaped && length >= 6 && digit;
    if id_shaped && (names_a_conversation || surely_an_id) {
        ResumeWord::Conversation
    } else {
        ResumeWord::Prompt
    }
}

/// Which agent to run and how; the chat's, `run`'s and `replay`'s (not `demo-agent`'s, which is
/// the agent itself). Given before `run` or `replay` (`agentty --provider demo run hi`), they
/// still count ([`AgentArgs::or`]).
#[derive(Debug, Clone, Default, Args)]
pub struct AgentArgs {
    /// The agent to run, or a provider defined in the config (`[providers.NAME]`). Default: the
    /// configured one, else pi when it is on PATH, else demo.
    #[arg(long, value_parser = ProviderNameParser)]
    pub(crate) provider: Option<String>,
    /// The executable to run for that provider instead of the one on PATH.
    #[arg(long)]
    pub(crate) agent_bin: Option<PathBuf>,
    /// The config file (default: agentty/config.toml in the platform's config dir).
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// The demo agent's scenario (hello, thinking, tool, markdown, slow, ...).
    #[arg(long)]
    pub(crate) scenario: Option<String>,
    /// The model, for CLIs that take one.
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// An extra argument for the agent CLI (repeatable).
    #[arg(long = "provider-arg", allow_hyphen_values = true)]
    pub(crate) provider_args: Vec<String>,
    /// How to talk to the agent CLI: `json` (one process per attempt), `rpc` (one long-lived
    /// process per conversation; pi), `app-server` (Codex's own long-lived JSON-RPC mode) or
    /// `acp` (the Agent Client Protocol, one long-lived process: gemini, and claude or codex
    /// through their ACP adapters). Default: `transport` in the provider's config, else in the
    /// chat rpc for pi, acp for gemini (and for claude when its adapter is installed),
    /// app-server for codex (acp when its `acp_command` is configured), json otherwise; for
    /// `agentty run` app-server for codex, json otherwise.
    #[arg(long, value_enum)]
    pub(crate) transport: Option<crate::config::Transport>,
}

impl AgentArgs {
    /// These arguments, each one not given taken from `earlier` (those given before the
    /// subcommand).
    pub fn or(self, earlier: AgentArgs) -> AgentArgs {
        let mut provider_args = earlier.provider_args;
        provider_args.extend(self.provider_args);
        AgentArgs {
            provider: self.provider.or(earlier.provider),
            agent_bin: self.agent_bin.or(earlier.agent_bin),
            config: self.config.or(earlier.config),
            scenario: self.scenario.or(earlier.scenario),
            model: self.model.or(earlier.model),
            provider_args,
            transport: self.transport.or(earlier.transport),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum CliCommand {
    /// Headless: print the shared stream as JSON lines on stdout.
    Run(RunArgs),
    /// The built-in scripted agent: pi's JSON and RPC modes, ACP, Codex's app-server and Claude
    /// Code's stream-json (--mode json|rpc|acp|codex-app-server|claude-stream).
    #[command(after_help = crate::demo_agent::scenarios_help())]
    DemoAgent(DemoAgentArgs),
    /// Map a saved raw agent log again, printing the shared stream.
    Replay(ReplayArgs),
    /// Print a shell completion script (`agentty completions bash > ...`).
    Completions(CompletionsArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell the script is for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Prints the completion script for `shell` on stdout.
pub fn print_completions(shell: clap_complete::Shell) {
    use clap::CommandFactory;
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "agentty", &mut std::io::stdout());
}

/// How `agentty run` prints the turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum RunFormat {
    /// The shared stream, one JSON message a line (DESIGN.md's table).
    #[default]
    Json,
    /// The answer as plain text; notices, retries and errors on stderr.
    Text,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub agent: AgentArgs,
    /// Attempts for this run (1: no retry); overrides the configured retry policy.
    #[arg(long)]
    pub(crate) max_attempts: Option<u32>,
    /// Continue this agent session.
    #[arg(long)]
    pub(crate) session: Option<String>,
    /// Continue the agent CLI's most recent session.
    #[arg(long = "continue", conflicts_with = "session")]
    pub(crate) continue_latest: bool,
    /// What to answer when the agent asks before acting (ACP): a headless run never waits for
    /// anyone. Default: deny, unless the provider's config says `permissions = "allow"`.
    #[arg(long, value_enum)]
    pub(crate) permissions: Option<HeadlessPermissions>,
    /// Take no snapshot of the working tree (no `turn.changes`; as `[snapshots] enabled =
    /// false` in the config): nothing is walked, read or stored.
    #[arg(long)]
    pub(crate) no_snapshots: bool,
    /// How the turn is printed on stdout.
    #[arg(long, value_enum, default_value_t = RunFormat::Json)]
    pub(crate) format: RunFormat,
    /// The prompt; `-` reads it from stdin.
    #[arg(required = true)]
    pub(crate) prompt: Vec<String>,
}

/// `agentty run --permissions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum HeadlessPermissions {
    /// Allow once, each time the agent asks.
    Allow,
    /// Reject, each time; every refusal is a notice.
    Deny,
}

impl HeadlessPermissions {
    /// The policy of a headless run: the flag, else the configured `allow`, else deny (an
    /// `ask` policy cannot ask anyone here).
    pub(crate) fn policy(
        flag: Option<HeadlessPermissions>,
        configured: Option<crate::config::PermissionPolicy>,
    ) -> crate::config::PermissionPolicy {
        use crate::config::PermissionPolicy;
        match (flag, configured) {
            (Some(HeadlessPermissions::Allow), _) => PermissionPolicy::Allow,
            (Some(HeadlessPermissions::Deny), _) => PermissionPolicy::Deny,
            (None, Some(PermissionPolicy::Allow)) => PermissionPolicy::Allow,
            (None, _) => PermissionPolicy::Deny,
        }
    }
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub agent: AgentArgs,
    /// A file of raw agent stdout lines (or an agentty session log).
    pub(crate) file: PathBuf,
}

/// `--provider`: the built-in names are clap's possible values (listed in `--help`, suggested on
/// a typo); any other well-formed name is passed on, since the config may define it
/// (`[providers.NAME]`), and is checked against the config once that is loaded.
#[derive(Debug, Clone, Copy)]
struct ProviderNameParser;

impl TypedValueParser for ProviderNameParser {
    type Value = String;

    fn parse_ref(
        &self,
        command: &clap::Command,
        argument: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        let well_formed = value.to_str().filter(|name| {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        });
        match well_formed {
            Some(name) => Ok(name.to_owned()),
            None => {
                let mut error = clap::Error::new(ErrorKind::InvalidValue).with_cmd(command);
                error.insert(
                    clap::error::ContextKind::InvalidArg,
                    clap::error::ContextValue::String(
                        argument.map_or_else(|| "--provider".to_owned(), ToString::to_string),
                    ),
                );
                error.insert(
                    clap::error::ContextKind::InvalidValue,
                    clap::error::ContextValue::String(value.to_string_lossy().into_owned()),
                );
                error.insert(
                    clap::error::ContextKind::ValidValue,
                    clap::error::ContextValue::Strings(
                        PROVIDER_NAMES
                            .iter()
                            .map(|name| (*name).to_owned())
                            .collect(),
                    ),
                );
                Err(error)
            }
        }
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(PROVIDER_NAMES.iter().map(PossibleValue::new)))
    }
}

/// The prompt of `agentty run` (`-`: all of `stdin`), or the usage error for one that says
/// nothing.
pub(crate) fn run_prompt(words: &[String], stdin: impl std::io::Read) -> Result<String, String> {
    let prompt = if words == ["-"] {
        let mut text = String::new();
        std::io::BufReader::new(stdin)
            .read_to_string(&mut text)
            .map_err(|error| format!("cannot read the prompt from stdin (`-`): {error}"))?;
        text
    } else {
        words.join(" ")
    };
    if prompt.trim().is_empty() {
        return Err(
            "empty prompt: say what the agent should do, e.g. `agentty run \"list the files\"`"
                .to_owned(),
        );
    }
    Ok(prompt)
}

/// `--scenario` belongs to the demo provider and must name one of its scenarios.
/// `--scenario` names one of the demo agent's scenarios: its ACP ones when it speaks ACP
/// (`transport`).
pub(crate) fn check_scenario(
    scenario: Option<&str>,
    provider: &str,
    transport: Option<crate::config::Transport>,
) -> Result<(), String> {
    let Some(scenario) = scenario else {
        return Ok(());
    };
    if provider != "demo" {
        return Err(format!(
            "--scenario only applies to the demo agent (add `--provider demo`); the provider is `{provider}`"
        ));
    }
    if transport == Some(crate::config::Transport::Stream) {
        return Err(
            "the demo agent's stream mode (Claude Code's protocol) has no scenarios: \
                    it acts on words in the prompt (`write [NAME.txt]`, `slow`, `fail`)"
                .to_owned(),
        );
    }
    let known = if transport == Some(crate::config::Transport::Acp) {
        crate::demo_agent::acp_scenario_names()
    } else if transport == Some(crate::config::Transport::AppServer) {
        crate::demo_agent::codex_app_server::SCENARIOS.to_vec()
    } else {
        crate::demo_agent::scenario_names()
    };
    if known.contains(&scenario) {
        Ok(())
    } else {
        Err(format!(
            "unknown scenario `{scenario}`; the scenarios are: {}",
            known.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::HeadlessPermissions;
    use crate::config::PermissionPolicy;

    #[test]
    fn a_headless_run_never_asks() {
        let policy = HeadlessPermissions::policy;
        assert_eq!(policy(None, None), PermissionPolicy::Deny);
        assert_eq!(
            policy(None, Some(PermissionPolicy::Ask)),
            PermissionPolicy::Deny
        );
        assert_eq!(
            policy(None, Some(PermissionPolicy::Allow)),
            PermissionPolicy::Allow
        );
        assert_eq!(
            policy(
                Some(HeadlessPermissions::Deny),
                Some(PermissionPolicy::Allow)
            ),
            PermissionPolicy::Deny
        );
        assert_eq!(
            policy(
                Some(HeadlessPermissions::Allow),
                Some(PermissionPolicy::Deny)
            ),
            PermissionPolicy::Allow
        );
    }

    #[test]
    fn the_word_after_resume_is_an_id_only_when_it_looks_like_one() {
        use super::{resume_word, Cli, ResumeWord};
        use clap::Parser;
        for (word, exists, expected) in [
            ("01a23569", true, ResumeWord::Conversation),
            ("01a2", true, ResumeWord::Conversation),
            ("01a23569-5c3e-4f00", true, ResumeWord::Conversation),
            ("0001764658000123-01a23569", true, ResumeWord::Conversation),
            ("abcdefab", true, ResumeWord::Conversation),
            ("add", true, ResumeWord::Prompt),
            ("", true, ResumeWord::Prompt),
            // A mistyped id is refused (as an id that names nothing), never sent as a prompt.
            ("0b1e7c", false, ResumeWord::Conversation),
            ("add", false, ResumeWord::Prompt),
            ("cafe", false, ResumeWord::Prompt),
            ("fix the tests", true, ResumeWord::Prompt),
            ("fix", false, ResumeWord::Prompt),
            ("zzzzzz", false, ResumeWord::Prompt),
            ("01a2 explain", true, ResumeWord::Prompt),
        ] {
            assert_eq!(resume_word(word, exists), expected, "{word:?} {exists}");
        }
        let settled = |args: &[&str], exists: bool| {
            let mut cli = Cli::try_parse_from(args).unwrap();
            cli.settle_resume_word(|_| exists);
            (cli.resume.clone(), cli.first_prompt())
        };
        assert_eq!(
            settled(&["agentty", "--resume", "fix the tests"], false),
            (Some(None), Some("fix the tests".to_owned()))
        );
        assert_eq!(
            settled(&["agentty", "--resume", "fix", "the", "tests"], false),
            (Some(None), Some("fix the tests".to_owned()))
        );
        assert_eq!(
            settled(&["agentty", "--resume", "01a23569", "go", "on"], true),
            (Some(Some("01a23569".to_owned())), Some("go on".to_owned()))
        );
        assert_eq!(
            settled(&["agentty", "--resume", "--", "01a23569"], true),
            (Some(None), Some("01a23569".to_owned()))
        );
        assert_eq!(settled(&["agentty", "--resume"], true), (Some(None), None));
        assert_eq!(
            settled(&["agentty", "hi"], true),
            (None, Some("hi".to_owned()))
        );
    }
}
