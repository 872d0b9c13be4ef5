//! Secrets taken out of an agent's command line before it is logged: logs are files users
//! attach to bug reports.
//!
//! What counts as a secret: the value of a flag whose name says so (`--api-key X`,
//! `--token=X`), a `key=value` setting whose key says so (`-c api_key=X`,
//! `--config=auth.token=X`), a header whose name says so (`--header "X-Api-Key: X"`), the
//! credential after `Bearer` or `Basic` (`Authorization: Bearer X`), and the password (or the
//! token standing alone) in a URL's user part (`https://user:X@host/`), a `NAME=value` inside
//! a longer argument whose name says so (`sh -c "OPENAI_API_KEY=X codex"`), and anything that
//! looks like a credential by itself, whatever flag it follows (`-k sk-ant-api03-…`): the
//! prefixes keys and tokens carry, or a long run of letters and digits that is not a UUID.
//! Redacting a harmless value now and then costs nothing; missing a key costs the user.
//!
//! The user's prompt is not a secret of that kind, but it is the user's own text: a command line
//! that carries it shows [`prompt_summary`] instead.

use std::borrow::Cow;

/// What stands in for a secret.
pub(crate) const REDACTED: &str = "[redacted]";

/// Whether a flag, key or header name says that its value is a secret.
pub(crate) fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "key",
        "token",
        "secret",
        "password",
        "passwd",
        "auth",
        "cookie",
        "credential",
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// What stands in for the user's prompt in a logged command line: its length and a short
/// hash, enough to tell two prompts apart in a bug report without showing either.
pub(crate) fn prompt_summary(prompt: &str) -> String {
    let hash = xxhash_rust::xxh3::xxh3_64(prompt.as_bytes());
    format!(
        "[prompt: {} chars #{:08x}]",
        prompt.chars().count(),
        hash >> 32
    )
}

/// The command line `program args...` for logs, with secrets replaced.
pub(crate) fn command_line<'a>(program: &str, args: impl Iterator<Item = Cow<'a, str>>) -> String {
    let mut parts = vec![program.to_owned()];
    let mut hide_next = false;
    for arg in args {
        if std::mem::take(&mut hide_next) {
            parts.push(REDACTED.into());
            continue;
        }
        if arg.starts_with('-') && !arg.contains('=') && is_secret_name(&arg) {
            hide_next = true;
        }
        parts.push(redact_arg(&arg).into_owned());
    }
    parts.join(" ")
}

/// One argument with the secrets it holds replaced.
pub(crate) fn redact_arg(arg: &str) -> Cow<'_, str> {
    if let Some((flag, value)) = arg.split_once('=') {
        if flag.starts_with('-') {
            if is_secret_name(flag) {
                return Cow::Owned(format!("{flag}={REDACTED}"));
            }
            // `--config=key=value`: the value is a setting of its own.
            return match redact_arg(value) {
                Cow::Borrowed(_) => Cow::Borrowed(arg),
                Cow::Owned(value) => Cow::Owned(format!("{flag}={value}")),
            };
        }
        // A whole `NAME=value` argument; several of them in one (`A=x B=y cmd`) are taken one
        // by one below.
        if is_setting_key(flag) && is_secret_name(flag) && !value.contains(char::is_whitespace) {
            return Cow::Owned(format!("{flag}={REDACTED}"));
        }
    }
    if let Some((name, _)) = arg.split_once(':') {
        if is_header_name(name) && is_secret_name(name) && !arg[name.len()..].starts_with("://") {
            let value = redact_credentials(&arg[name.len() + 1..]).into_owned();
            // `Authorization: Bearer X` keeps its scheme word; any other secret header goes
            // whole.
            let value = if value.contains(REDACTED) {
                value
            } else {
                format!(" {REDACTED}")
            };
            return Cow::Owned(format!("{name}:{value}"));
        }
    }
    redact_credentials(arg)
}

/// A key of a `key=value` setting: letters, digits and `_.-` (a dotted path).
fn is_setting_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '_' | '.' | '-'))
}

/// An HTTP header name: letters, digits and `-`.
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || ch == '-')
}

/// `Bearer X` / `Basic X`, URL user parts, secret `NAME=value` settings and credential-like
/// words, wherever they are in `text`.
fn redact_credentials(text: &str) -> Cow<'_, str> {
    let mut text = Cow::Borrowed(text);
    for pass in [
        redact_auth_schemes,
        redact_url_users,
        redact_secret_assignments,
        redact_credential_words,
    ] {
        if let Cow::Owned(changed) = pass(&text) {
            text = Cow::Owned(changed);
        }
    }
    text
}

/// `NAME=value` anywhere in `text` (`env OPENAI_API_KEY=X codex`) where NAME says the value is
/// a secret: the value goes, up to the next white space or quote.
fn redact_secret_assignments(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0;
    for (equals, _) in text.match_indices('=') {
        if equals < copied {
            continue;
        }
        let name_start = text[..equals]
            .rfind(|ch: char| !(ch.is_ascii_alphanumeric() || matches!(ch, '_' | '.' | '-')))
            .map_or(0, |at| at + 1);
        let name = &text[name_start..equals];
        if name.starts_with('-') || !is_setting_key(name) || !is_secret_name(name) {
            continue;
        }
        // A quoted value goes to its closing quote, a bare one to the next space or quote.
        let quote = text[equals + 1..]
            .chars()
            .next()
            .filter(|ch| matches!(ch, '"' | '\''));
        let value_start = equals + 1 + quote.map_or(0, char::len_utf8);
        let value_end = text[value_start..]
            .find(|ch: char| match quote {
                Some(quote) => ch == quote,
                None => ch.is_whitespace() || matches!(ch, '"' | '\''),
            })
            .map_or(text.len(), |end| value_start + end);
        if value_end == value_start || text[value_start..value_end] == *REDACTED {
            continue;
        }
        out.push_str(&text[copied..value_start]);
        out.push_str(REDACTED);
        copied = value_end;
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// Every run of letters, digits, `_` and `-` in `text` that looks like a credential by itself.
fn redact_credential_words(text: &str) -> Cow<'_, str> {
    let is_word_char = |ch: char| ch.is_ascii_alphanumeric() || matches!(ch, '_' | '-');
    let mut out = String::new();
    let mut copied = 0;
    let mut rest = 0;
    while let Some(start) = text[rest..].find(is_word_char).map(|at| rest + at) {
        let end = text[start..]
            .find(|ch: char| !is_word_char(ch))
            .map_or(text.len(), |at| start + at);
        if looks_like_a_credential(&text[start..end]) {
            out.push_str(&text[copied..start]);
            out.push_str(REDACTED);
            copied = end;
        }
        rest = end;
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// The prefixes API keys and tokens carry (Anthropic and OpenAI `sk-`, GitHub, GitLab, Slack,
/// Google `AIza`, AWS access keys, Hugging Face, npm, PyPI, a JWT's encoded header).
const CREDENTIAL_PREFIXES: &[&str] = &[
    "sk-",
    "sk_",
    "rk_",
    "pk_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xapp-",
    "AIza",
    "AKIA",
    "ASIA",
    "hf_",
    "npm_",
    "pypi-",
    "eyJ",
];

/// A word that is a credential whatever names it: a known prefix followed by at least 12 more
/// characters, or 32 characters or more with letters and digits that are not a UUID (session
/// ids are UUIDs, and worth keeping in a log).
fn looks_like_a_credential(word: &str) -> bool {
    let prefixed = CREDENTIAL_PREFIXES
        .iter()
        .any(|prefix| word.starts_with(prefix) && word.len() >= prefix.len() + 12);
    let long_mixed = word.len() >= 32
        && word.chars().any(|ch| ch.is_ascii_digit())
        && word.chars().any(|ch| ch.is_ascii_alphabetic())
        && !is_uuid(word);
    prefixed || long_mixed
}

/// `8-4-4-4-12` hex digits.
fn is_uuid(word: &str) -> bool {
    let groups: Vec<&str> = word.split('-').collect();
    groups.len() == 5
        && groups.iter().zip([8, 4, 4, 4, 12]).all(|(group, len)| {
            group.len() == len && group.chars().all(|ch| ch.is_ascii_hexdigit())
        })
}

/// The word after `Bearer` or `Basic` (any case).
fn redact_auth_schemes(text: &str) -> Cow<'_, str> {
    let lower = text.to_ascii_lowercase();
    let mut out = String::new();
    let mut copied = 0;
    let mut search = 0;
    while let Some(found) = ["bearer ", "basic "]
        .iter()
        .filter_map(|scheme| {
            lower[search..]
                .find(scheme)
                .map(|at| (search + at, scheme.len()))
        })
        .min()
    {
        let (at, len) = found;
        let starts_word = at == 0 || !lower.as_bytes()[at - 1].is_ascii_alphanumeric();
        let credential_start = at + len;
        let credential_end = text[credential_start..]
            .find(char::is_whitespace)
            .map_or(text.len(), |end| credential_start + end);
        if starts_word && credential_end > credential_start {
            out.push_str(&text[copied..credential_start]);
            out.push_str(REDACTED);
            copied = credential_end;
        }
        search = credential_end.max(at + 1);
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// `scheme://user:password@host` -> `scheme://user:[redacted]@host`; a user part without a
/// password is a token by itself (`https://TOKEN@host`) and goes whole.
fn redact_url_users(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0;
    let mut search = 0;
    while let Some(at) = text[search..].find("://") {
        let authority_start = search + at + 3;
        let authority_end = text[authority_start..]
            .find(|ch: char| matches!(ch, '/' | '?' | '#') || ch.is_whitespace())
            .map_or(text.len(), |end| authority_start + end);
        let authority = &text[authority_start..authority_end];
        if let Some(user_end) = authority.rfind('@') {
            let user = &authority[..user_end];
            let secret_start = match user.find(':') {
                Some(colon) => authority_start + colon + 1,
                None => authority_start,
            };
            out.push_str(&text[copied..secret_start]);
            out.push_str(REDACTED);
            copied = authority_start + user_end;
        }
        search = authority_end;
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(args: &[&str]) -> String {
        command_line("agent", args.iter().map(|arg| Cow::Borrowed(*arg)))
    }

    #[test]
    fn secret_flags_keep_their_name_and_lose_their_value() {
        assert_eq!(
            line(&[
                "--api-key",
                "sk-one",
                "--auth-token=sk-two",
                "--model",
                "gpt"
            ]),
            "agent --api-key [redacted] --auth-token=[redacted] --model gpt"
        );
    }

    #[test]
    fn bearer_and_secret_headers_are_redacted() {
        assert_eq!(
            line(&[
                "--header",
                "Authorization: Bearer sk-abc",
                "-H",
                "X-Api-Key: k-1"
            ]),
            "agent --header Authorization: Bearer [redacted] -H X-Api-Key: [redacted]"
        );
        assert_eq!(
            line(&["--header=Authorization: Basic dXNlcjpwYXNz"]),
            "agent --header=Authorization: Basic [redacted]"
        );
        assert_eq!(
            redact_arg("curl -H 'authorization: bearer tok' x"),
            "curl -H 'authorization: bearer [redacted] x"
        );
        assert_eq!(
            line(&["-H", "Accept: text/plain"]),
            "agent -H Accept: text/plain"
        );
    }

    #[test]
    fn secret_settings_in_key_value_arguments_are_redacted() {
        assert_eq!(
            line(&[
                "-c",
                "api_key=sk-1",
                "-c",
                "model=o3",
                "--config",
                "auth.token=t-2"
            ]),
            "agent -c api_key=[redacted] -c model=o3 --config auth.token=[redacted]"
        );
        assert_eq!(
            line(&[
                "--config=model_providers.x.api_key=sk-3",
                "--config=model=o3"
            ]),
            "agent --config=model_providers.x.api_key=[redacted] --config=model=o3"
        );
    }

    #[test]
    fn url_credentials_are_redacted_wherever_the_url_is() {
        assert_eq!(
            line(&["--base-url", "https://user:sk-pass@example.com/v1?x=1"]),
            "agent --base-url https://user:[redacted]@example.com/v1?x=1"
        );
        assert_eq!(
            line(&["--base-url=https://ghp_token@github.com/o/r.git"]),
            "agent --base-url=https://[redacted]@github.com/o/r.git"
        );
        assert_eq!(
            redact_arg("clone https://a:b@h/x and http://c:d@e"),
            "clone https://a:[redacted]@h/x and http://c:[redacted]@e"
        );
        assert_eq!(
            redact_arg("see https://example.com/a@b"),
            "see https://example.com/a@b"
        );
    }

    #[test]
    fn a_key_after_any_flag_or_none_is_redacted() {
        assert_eq!(
            line(&[
                "-k",
                "sk-ant-api03-AbCdEf0123456789xyz",
                "--model",
                "claude-opus-4-8"
            ]),
            "agent -k [redacted] --model claude-opus-4-8"
        );
        assert_eq!(
            line(&["-H", "X-Goog: AIzaSyA1234567890abcdefghijklmno"]),
            "agent -H X-Goog: [redacted]"
        );
        assert_eq!(
            line(&["--opt", "q1w2e3r4t5y6u7i8o9p0a1s2d3f4g5h6j7k8"]),
            "agent --opt [redacted]"
        );
        assert_eq!(
            line(&["--session", "01a228f9-98fb-76ae-b8f6-b0c38dd67462"]),
            "agent --session 01a228f9-98fb-76ae-b8f6-b0c38dd67462",
            "a session id is no secret"
        );
    }

    #[test]
    fn secret_assignments_inside_an_argument_are_redacted() {
        assert_eq!(
            line(&["-c", "OPENAI_API_KEY=abc123 GH_TOKEN='t0k' MODEL=o3 codex"]),
            "agent -c OPENAI_API_KEY=[redacted] GH_TOKEN='[redacted]' MODEL=o3 codex"
        );
    }

    #[test]
    fn a_prompt_summary_tells_prompts_apart_without_showing_them() {
        let one = prompt_summary("first prompt");
        assert!(one.starts_with("[prompt: 12 chars #"), "{one}");
        assert_ne!(one, prompt_summary("second prompt"));
        assert_eq!(one, prompt_summary("first prompt"));
    }

    #[test]
    fn ordinary_arguments_are_borrowed_as_they_are() {
        for arg in [
            "prompt with key words",
            "--model=gpt-5",
            "a=b",
            "Summary: fine",
            "https://example.com",
            "basically fine",
        ] {
            assert!(matches!(redact_arg(arg), Cow::Borrowed(_)), "{arg}");
        }
    }
}
