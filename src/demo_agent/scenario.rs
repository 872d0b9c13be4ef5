//! Scenario data: the TOML files in `assets/scenarios/`, embedded so the binary is
//! self-contained. The format is described in `assets/scenarios/README.md`.
//!
//! Invariant: every embedded scenario parses (a unit test checks), so `load` failing means a
//! broken build, and is reported rather than panicking.

use serde::Deserialize;

/// Every scenario, by name. The name is the file name.
const SCENARIOS: &[(&str, &str)] = &[
    ("hello", include_str!("../../assets/scenarios/hello.toml")),
    (
        "flaky-twice",
        include_str!("../../assets/scenarios/flaky-twice.toml"),
    ),
    (
        "thinking",
        include_str!("../../assets/scenarios/thinking.toml"),
    ),
    ("tool", include_str!("../../assets/scenarios/tool.toml")),
    ("edit", include_str!("../../assets/scenarios/edit.toml")),
    (
        "sleep-tool",
        include_str!("../../assets/scenarios/sleep-tool.toml"),
    ),
    (
        "markdown",
        include_str!("../../assets/scenarios/markdown.toml"),
    ),
    ("slow", include_str!("../../assets/scenarios/slow.toml")),
    (
        "ignore-sigint",
        include_str!("../../assets/scenarios/ignore-sigint.toml"),
    ),
    (
        "grandchild",
        include_str!("../../assets/scenarios/grandchild.toml"),
    ),
    (
        "bad-lines",
        include_str!("../../assets/scenarios/bad-lines.toml"),
    ),
    ("crash", include_str!("../../assets/scenarios/crash.toml")),
    (
        "rate-limit",
        include_str!("../../assets/scenarios/rate-limit.toml"),
    ),
    (
        "auth-error",
        include_str!("../../assets/scenarios/auth-error.toml"),
    ),
    ("flaky", include_str!("../../assets/scenarios/flaky.toml")),
    (
        "legacy-replay",
        include_str!("../../assets/scenarios/legacy-replay.toml"),
    ),
];

/// The scenario played when neither `--scenario` nor a keyword in the prompt picks one.
pub(crate) const DEFAULT_SCENARIO: &str = "hello";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Scenario {
    pub(crate) description: String,
    #[serde(default = "default_token_delay_ms")]
    pub(crate) token_delay_ms: u64,
    #[serde(default = "default_first_token_delay_ms")]
    pub(crate) first_token_delay_ms: u64,
    #[serde(default = "default_words_per_token")]
    pub(crate) words_per_token: usize,
    #[serde(default)]
    pub(crate) legacy_snapshots: bool,
    #[serde(default)]
    pub(crate) ignore_termination: bool,
    #[serde(default)]
    pub(crate) spawn_grandchildren: bool,
    /// The error message of a failing first attempt.
    #[serde(default)]
    pub(crate) fail_first_attempt: Option<String>,
    /// How many attempts fail with `fail_first_attempt` before one succeeds.
    #[serde(default = "one_u32")]
    pub(crate) failing_attempts: u32,
    #[serde(rename = "response")]
    pub(crate) responses: Vec<Response>,
}

/// One LLM call: one assistant message.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Response {
    /// Ends the message as a provider error with this `errorMessage`, and the run with it.
    #[serde(default)]
    pub(crate) error: Option<String>,
    /// Legacy pi: the message restarts with the previous assistant message's text.
    #[serde(default)]
    pub(crate) replay_previous_text: bool,
    #[serde(default, rename = "step")]
    pub(crate) steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Step {
    Text {
        text: String,
        #[serde(default = "one")]
        repeat: usize,
    },
    Thinking {
        text: String,
    },
    Bash {
        command: String,
    },
    RawLine {
        line: String,
    },
    Pause {
        ms: u64,
    },
    Crash {
        stderr: String,
        exit_code: i32,
    },
}

fn default_token_delay_ms() -> u64 {
    30
}

fn default_first_token_delay_ms() -> u64 {
    120
}

fn default_words_per_token() -> usize {
    2
}

fn one() -> usize {
    1
}

fn one_u32() -> u32 {
    1
}

/// The names of all scenarios, in listing order.
pub(crate) fn names() -> impl Iterator<Item = &'static str> {
    SCENARIOS.iter().map(|(name, _)| *name)
}

/// Parses the scenario called `name`; `None` if there is none by that name.
pub(crate) fn load(name: &str) -> Option<Result<Scenario, toml::de::Error>> {
    SCENARIOS
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, source)| toml::from_str(source))
}

/// The scenario a prompt asks for: the scenario name that appears earliest in the prompt as a
/// whole word (case-insensitive), the longest one when several start at the same place.
pub(crate) fn for_prompt(prompt: &str) -> &'static str {
    first_named(prompt, names()).unwrap_or(DEFAULT_SCENARIO)
}

/// The one of `names` that appears earliest in `prompt` as a whole word (case-insensitive), the
/// longest one when several start at the same place.
pub(crate) fn first_named<'a>(
    prompt: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = prompt.to_lowercase();
    let mut best: Option<(usize, &'a str)> = None;
    for name in names {
        for (start, _) in lower.match_indices(name) {
            let end = start + name.len();
            let whole_word = !lower[..start].chars().next_back().is_some_and(is_word_char)
                && !lower[end..].chars().next().is_some_and(is_word_char);
            if !whole_word {
                continue;
            }
            let better = match best {
                None => true,
                Some((best_start, best_name)) => {
                    start < best_start || (start == best_start && name.len() > best_name.len())
                }
            };
            if better {
                best = Some((start, name));
            }
            break;
        }
    }
    best.map(|(_, name)| name)
}

/// Scenario names contain `-`, so a hyphen joins words: `tool-call` is not the word `tool`.
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Splits text into streamed tokens of `words_per_token` words each. A word is its leading
/// whitespace plus a run of non-whitespace, so the tokens concatenate back to `text` exactly.
pub(crate) fn tokens(text: &str, words_per_token: usize) -> Vec<&str> {
    let words_per_token = words_per_token.max(1);
    let mut tokens = Vec::new();
    let mut token_start = 0;
    let mut words = 0;
    let mut previous_was_space = true;
    for (index, c) in text.char_indices() {
        let is_space = c.is_whitespace();
        // A word ends where whitespace follows non-whitespace.
        if is_space && !previous_was_space {
            words += 1;
            if words == words_per_token {
                tokens.push(&text[token_start..index]);
                token_start = index;
                words = 0;
            }
        }
        previous_was_space = is_space;
    }
    if token_start < text.len() {
        tokens.push(&text[token_start..]);
    }
    tokens
}

/// Values for the `{name}` placeholders in scenario text.
#[derive(Debug, Default, Clone)]
pub(crate) struct Placeholders {
    values: Vec<(&'static str, String)>,
}

impl Placeholders {
    pub(crate) fn set(&mut self, name: &'static str, value: impl Into<String>) {
        let value = value.into();
        match self.values.iter_mut().find(|(known, _)| *known == name) {
            Some(slot) => slot.1 = value,
            None => self.values.push((name, value)),
        }
    }

    /// `text` with every known `{name}` replaced; unknown braces stay as they are.
    pub(crate) fn fill(&self, text: &str) -> String {
        let mut filled = text.to_owned();
        for (name, value) in &self.values {
            let placeholder = format!("{{{name}}}");
            if filled.contains(&placeholder) {
                filled = filled.replace(&placeholder, value);
            }
        }
        filled
    }
}

/// `text` as a markdown block quote, line by line.
pub(crate) fn block_quote(text: &str) -> String {
    text.lines()
        .map(|line| {
            if line.is_empty() {
                ">".to_owned()
            } else {
                format!("> {line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_scenario_parses_and_ends_its_tool_turns() {
        for name in names() {
            let scenario = load(name).expect("listed").unwrap_or_else(|error| {
                panic!("scenario {name} does not parse: {error}");
            });
            assert!(!scenario.responses.is_empty(), "{name}: no response");
            let last = scenario.responses.len() - 1;
            for (index, response) in scenario.responses.iter().enumerate() {
                let has_tool = response
                    .steps
                    .iter()
                    .any(|step| matches!(step, Step::Bash { .. }));
                let ends_run = response.error.is_some()
                    || response
                        .steps
                        .iter()
                        .any(|step| matches!(step, Step::Crash { .. }));
                // pi calls the model again only after tool calls, so only they lead on.
                assert_eq!(
                    has_tool && !ends_run,
                    index < last,
                    "{name}: response {index} of {}",
                    last + 1
                );
            }
        }
    }

    #[test]
    fn tokens_concatenate_to_the_text() {
        let text = "  Hello brave\n\nnew  world!\n```rust\nfn x() {}\n```\n ";
        for words in 1..5 {
            let tokens = tokens(text, words);
            assert_eq!(tokens.concat(), text, "{words} words per token");
            assert!(tokens.iter().all(|token| !token.is_empty()));
        }
        assert_eq!(tokens("a b c d e", 2), vec!["a b", " c d", " e"]);
        assert_eq!(tokens("", 2), Vec::<&str>::new());
    }

    #[test]
    fn prompt_keywords_pick_the_earliest_whole_word_scenario() {
        assert_eq!(for_prompt("please think"), "hello");
        assert_eq!(for_prompt("Use a TOOL, then go slow"), "tool");
        assert_eq!(for_prompt("go slow with a tool"), "slow");
        assert_eq!(for_prompt("a tool-call please"), "hello");
        assert_eq!(for_prompt("simulate a rate-limit"), "rate-limit");
        assert_eq!(for_prompt("the sleep-tool now"), "sleep-tool");
        assert_eq!(for_prompt("thinking."), "thinking");
        assert_eq!(for_prompt(""), "hello");
    }

    #[test]
    fn placeholders_fill_known_names_only() {
        let mut placeholders = Placeholders::default();
        placeholders.set("prompt", "hi");
        placeholders.set("prompt", "there");
        assert_eq!(placeholders.fill("{prompt} {other} {}"), "there {other} {}");
        assert_eq!(block_quote("a\n\nb"), "> a\n>\n> b");
    }
}
