//! The one-line error a failed agent gives, found in the places its CLI puts it.
//!
//! A failure's headline must name the cause, not the last thing a process printed: Node CLIs end
//! a crash with `Node.js v20.x` under a stack trace, Codex with a Rust backtrace of `<unknown>`
//! frames, and the cause sits above them on the `Error:` line. The diagnostics themselves are
//! never changed here (the whole stderr tail still travels in `terminal.failed.stderr`); these
//! functions only pick the line that explains them.

/// The explaining line of an agent's stderr: Node's or Codex's `…Error: …` line above the stack,
/// else the thrown value of a Node `throw` of a non-Error, else the last line that is not part
/// of a stack trace or a runtime banner. `None` when stderr holds nothing but noise.
pub(crate) fn stderr_headline(stderr: &str) -> Option<String> {
    let lines: Vec<&str> = stderr.lines().map(str::trim_end).collect();
    if let Some(line) = lines.iter().rev().find(|line| is_error_line(line)) {
        return Some(strip_error_prefix(line.trim()).to_owned());
    }
    if let Some(thrown) = thrown_value(&lines) {
        return Some(thrown);
    }
    lines
        .iter()
        .rev()
        .map(|line| line.trim())
        .find(|line| !line.is_empty() && !is_noise(line))
        .map(str::to_owned)
}

/// `TypeError: …`, `Error: …`, `Error [ERR_X]: …`, `error: …` at the start of a line.
fn is_error_line(line: &str) -> bool {
    if line.starts_with(char::is_whitespace) {
        return false;
    }
    let Some((name, message)) = line.split_once(':') else {
        return false;
    };
    if message.trim().is_empty() {
        return false;
    }
    let name = name.split_once(" [").map_or(name, |(name, _)| name);
    let identifier = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    identifier && (name.ends_with("Error") || name.ends_with("Exception") || name == "error")
}

/// "Error: x" and "error: x" say nothing that "x" does not; "TypeError: x" keeps its kind.
fn strip_error_prefix(line: &str) -> &str {
    for prefix in ["Error: ", "error: "] {
        if let Some(rest) = line.strip_prefix(prefix) {
            return rest.trim();
        }
    }
    line
}

/// Node's report of `throw "text"`: the source line, a caret line, then the value itself.
fn thrown_value(lines: &[&str]) -> Option<String> {
    let caret = lines
        .iter()
        .rposition(|line| !line.trim().is_empty() && line.trim().chars().all(|c| c == '^'))?;
    lines[caret + 1..]
        .iter()
        .map(|line| line.trim())
        .find(|line| !line.is_empty())
        .filter(|line| !is_noise(line))
        .map(|line| format!("uncaught exception: {line}"))
}

/// Lines that never explain a failure: stack frames, runtime banners, Node's hints.
fn is_noise(line: &str) -> bool {
    let line = line.trim();
    line.starts_with("at ")
        || line.starts_with("Node.js v")
        || line.starts_with("(Use `node --trace")
        || line == "Stack backtrace:"
        || line.ends_with(": <unknown>")
        || line.starts_with("WARNING: proceeding")
        || line.chars().all(|c| c == '^' || c.is_whitespace())
}

/// Error texts that mean the connection to the model broke off mid-reply.
const DROPPED_CONNECTION: [&str; 9] = [
    "terminated",
    // Node's fetch (undici) when the server closes the socket mid-reply.
    "und_err_socket",
    "other side closed",
    "socket hang up",
    "econnreset",
    "connection reset",
    "stream disconnected",
    "stream ended without",
    "connection to the api was lost",
];

/// The error text means that the connection to the model broke off mid-reply (the orchestrator's
/// classifier asks this too: such a failure is worth a retry).
pub(crate) fn is_dropped_connection(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    DROPPED_CONNECTION
        .iter()
        .any(|pattern| lower.contains(pattern))
}

/// The agent's error text, said plainly when it means the model's connection dropped (pi reports
/// a dropped stream as the single word `terminated`).
pub(crate) fn describe_agent_error(message: &str) -> String {
    if is_dropped_connection(message) {
        format!("the connection to the model dropped mid-reply ({message})")
    } else {
        message.to_owned()
    }
}

/// The API's own words in an error an agent passes on with the API's JSON body in it
/// (Gemini's `{"error":{"code":500,"message":…}}`, Anthropic's `API Error: 429
/// {"type":"error","error":{"type":…,"message":…}}`): the innermost `error.message` (or
/// `message`), found in the first JSON object of the text. Any other text as it is.
pub(crate) fn api_error_words(text: &str) -> String {
    let mut words = text.trim().to_owned();
    // An API message may itself hold a JSON body (Gemini wraps the upstream's): two levels.
    for _ in 0..2 {
        match json_message(&words) {
            Some(inner) if !inner.trim().is_empty() => words = inner.trim().to_owned(),
            _ => break,
        }
    }
    words
}

fn json_message(text: &str) -> Option<String> {
    let start = text.find('{')?;
    let value: serde_json::Value = serde_json::Deserializer::from_str(&text[start..])
        .into_iter()
        .next()?
        .ok()?;
    let error = &value["error"];
    let found = [&error["message"], &value["message"], error]
        .into_iter()
        .find_map(|candidate| candidate.as_str().map(str::to_owned));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_api_error_body_is_said_in_the_apis_words() {
        assert_eq!(
            api_error_words(
                r#"{"error":{"code":500,"message":"fake internal error","status":"INTERNAL"}}"#
            ),
            "fake internal error"
        );
        assert_eq!(
            api_error_words(
                r#"API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"rate limit exceeded"}}"#
            ),
            "rate limit exceeded"
        );
        // Gemini's message wrapping the upstream's body.
        assert_eq!(
            api_error_words(r#"{"error":{"message":"{\"error\":{\"message\":\"quota\"}}"}}"#),
            "quota"
        );
        assert_eq!(
            api_error_words("plain words {not json"),
            "plain words {not json"
        );
        assert_eq!(api_error_words(" spaced "), "spaced");
    }

    /// `node crash.mjs` (Node 20.20.2) where a method throws a TypeError.
    const NODE_TYPE_ERROR: &str = include_str!("../../tests/fixtures/stderr/node_crash.txt");

    /// `codex exec --json resume <unknown id> hi` (codex-cli 0.x, recorded for this issue).
    const CODEX_MISSING_THREAD: &str =
        include_str!("../../tests/fixtures/stderr/codex_missing_thread.txt");

    #[test]
    fn a_node_crash_is_named_by_its_error_line_not_the_node_banner() {
        assert_eq!(
            stderr_headline(NODE_TYPE_ERROR).as_deref(),
            Some("TypeError: Cannot read properties of undefined (reading 'content')")
        );
    }

    #[test]
    fn a_plain_node_error_loses_only_its_redundant_prefix() {
        let stderr = "/tmp/w14/crash2.js:1\nasync function main(){ throw new Error(\"No API key found for provider openai\"); }\n                             ^\n\nError: No API key found for provider openai\n    at main (/tmp/w14/crash2.js:1:30)\n\nNode.js v20.20.2\n";
        assert_eq!(
            stderr_headline(stderr).as_deref(),
            Some("No API key found for provider openai")
        );
    }

    #[test]
    fn a_thrown_string_is_named_by_its_value() {
        let stderr = "/tmp/t.js:1\nthrow \"boom: disk full\";\n^\nboom: disk full\n(Use `node --trace-uncaught ...` to show where the exception was thrown)\n\nNode.js v20.20.2\n";
        assert_eq!(
            stderr_headline(stderr).as_deref(),
            Some("uncaught exception: boom: disk full")
        );
    }

    #[test]
    fn codex_resuming_a_missing_thread_names_the_missing_rollout() {
        assert_eq!(
            stderr_headline(CODEX_MISSING_THREAD).as_deref(),
            Some("thread/resume: thread/resume failed: no rollout found for thread id 0199a213-81c0-7800-8aa1-bbab2a035a53 (code -32600)")
        );
    }

    #[test]
    fn without_an_error_line_the_last_meaningful_line_is_kept() {
        assert_eq!(
            stderr_headline("loading\ndisk quota exceeded\n\n").as_deref(),
            Some("disk quota exceeded")
        );
        assert_eq!(stderr_headline("   0: <unknown>\nNode.js v20.1.0\n"), None);
        assert_eq!(stderr_headline(""), None);
    }

    #[test]
    fn a_dropped_stream_says_so() {
        assert_eq!(
            describe_agent_error("terminated"),
            "the connection to the model dropped mid-reply (terminated)"
        );
        assert_eq!(
            describe_agent_error("500 fake internal server error"),
            "500 fake internal server error"
        );
    }
}
