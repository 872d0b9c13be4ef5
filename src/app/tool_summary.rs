//! A tool call in the user's words, whatever agent made it: its name (an MCP tool as
//! `server · tool`) and one line saying what it does — the command it runs, the files an edit
//! or a patch changes with the lines it adds and removes (`notes.txt +2 −1`), the file it
//! writes, the pattern or query it searches for, the address it fetches. Never the raw JSON
//! of a shape it knows.

use serde_json::{Map, Value};

/// How a tool call's row names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolTitle {
    pub(crate) name: String,
    /// One line (cut to [`MAX_SUMMARY`] characters).
    pub(crate) summary: String,
    /// The call changes files and its output is a diff (shown coloured).
    pub(crate) patch: bool,
}

/// The most characters a summary keeps (it is cut again when drawn).
const MAX_SUMMARY: usize = 400;
/// The keys whose value says what a call is about, in the order they are looked for.
const SUBJECT_KEYS: [&str; 16] = [
    "command",
    "cmd",
    "file_path",
    "filePath",
    "absolute_path",
    "notebook_path",
    "path",
    "pattern",
    "query",
    "url",
    "description",
    "prompt",
    "subject",
    "title",
    "text",
    "content",
];

pub(crate) fn describe(name: &str, input: &Value) -> ToolTitle {
    let name = mcp_name(name).unwrap_or_else(|| name.to_owned());
    let (summary, patch) = match input {
        Value::Object(fields) => object_summary(fields),
        Value::String(text) => (text.clone(), false),
        Value::Null => (String::new(), false),
        other => (other.to_string(), false),
    };
    ToolTitle {
        name,
        summary: one_line(&summary),
        patch,
    }
}

/// `mcp__docs__search` (Claude Code's name for an MCP tool, and agentty's for Codex's) ->
/// `docs · search`.
fn mcp_name(name: &str) -> Option<String> {
    let (server, tool) = name.strip_prefix("mcp__")?.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then(|| format!("{server} · {tool}"))
}

fn object_summary(fields: &Map<String, Value>) -> (String, bool) {
    if fields.is_empty() {
        return (String::new(), false);
    }
    if let Some(changes) = fields.get("changes").and_then(Value::as_array) {
        return (changes_summary(changes), true);
    }
    let path = [
        "file_path",
        "filePath",
        "absolute_path",
        "path",
        "notebook_path",
    ]
    .iter()
    .find_map(|key| fields.get(*key).and_then(Value::as_str));
    if let Some(path) = path {
        if let Some((added, removed)) = edit_counts(fields) {
            return (
                format!("{} {}", file_name(path), counts(added, removed)),
                true,
            );
        }
        if let Some(content) = ["content", "new_source"]
            .iter()
            .find_map(|key| fields.get(*key).and_then(Value::as_str))
        {
            return (
                format!("{} {}", file_name(path), counts(line_count(content), 0)),
                true,
            );
        }
    }
    // A search names where it looks too: `TODO in src`.
    if let Some(pattern) = fields.get("pattern").and_then(Value::as_str) {
        let place = fields.get("path").and_then(Value::as_str);
        return match place {
            Some(place) => (format!("{pattern} in {place}"), false),
            None => (pattern.to_owned(), false),
        };
    }
    let subject = SUBJECT_KEYS
        .iter()
        .find_map(|key| fields.get(*key).and_then(crate::stream::argument_text));
    match subject {
        Some(subject) => (subject, false),
        // A shape nothing here knows: its fields as `key: value`, not JSON.
        None => (
            fields
                .iter()
                .map(|(key, value)| match value {
                    Value::String(text) => format!("{key}: {text}"),
                    other => format!("{key}: {other}"),
                })
                .collect::<Vec<_>>()
                .join(", "),
            false,
        ),
    }
}

/// The lines an edit adds and removes: `old_string`/`new_string` (Claude), `oldText`/`newText`
/// (pi), `old_str`/`new_str`, or Claude's `edits` list of those.
fn edit_counts(fields: &Map<String, Value>) -> Option<(usize, usize)> {
    const PAIRS: [(&str, &str); 3] = [
        ("old_string", "new_string"),
        ("oldText", "newText"),
        ("old_str", "new_str"),
    ];
    let pair = |fields: &Map<String, Value>| {
        PAIRS.iter().find_map(|(old, new)| {
            let new = fields.get(*new)?.as_str()?;
            let old = fields.get(*old).and_then(Value::as_str).unwrap_or_default();
            Some(diff_counts(old, new))
        })
    };
    if let Some(counts) = pair(fields) {
        return Some(counts);
    }
    let edits = fields.get("edits")?.as_array()?;
    let mut total = (0, 0);
    for edit in edits {
        let (added, removed) = pair(edit.as_object()?)?;
        total = (total.0 + added, total.1 + removed);
    }
    Some(total)
}

fn diff_counts(old: &str, new: &str) -> (usize, usize) {
    let diff = similar::TextDiff::from_lines(old, new);
    diff.iter_all_changes()
        .fold((0, 0), |(added, removed), change| match change.tag() {
            similar::ChangeTag::Insert => (added + 1, removed),
            similar::ChangeTag::Delete => (added, removed + 1),
            similar::ChangeTag::Equal => (added, removed),
        })
}

/// `notes.txt +2 −1, new.rs added +10`: each changed file with its lines.
fn changes_summary(changes: &[Value]) -> String {
    changes
        .iter()
        .map(|change| {
            let path = change["path"].as_str().unwrap_or("a file");
            let mut text = file_name(path).to_owned();
            match change["kind"].as_str() {
                Some("add") => text.push_str(" (new)"),
                Some("delete") => text.push_str(" (deleted)"),
                _ => {}
            }
            if let Some(diff) = change["diff"].as_str() {
                let (added, removed) = unified_counts(diff);
                text.push(' ');
                text.push_str(&counts(added, removed));
            }
            text
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Added and removed lines of a unified diff (its `+++`/`---` headers are not lines).
pub(crate) fn unified_counts(diff: &str) -> (usize, usize) {
    diff.lines().fold((0, 0), |(added, removed), line| {
        if line.starts_with("+++") || line.starts_with("---") {
            (added, removed)
        } else if line.starts_with('+') {
            (added + 1, removed)
        } else if line.starts_with('-') {
            (added, removed + 1)
        } else {
            (added, removed)
        }
    })
}

fn counts(added: usize, removed: usize) -> String {
    match (added, removed) {
        (added, 0) => format!("+{added}"),
        (0, removed) => format!("−{removed}"),
        (added, removed) => format!("+{added} −{removed}"),
    }
}

fn line_count(text: &str) -> usize {
    text.lines().count()
}

/// The file's name, the last part of its path (the row has no room for the rest; the
/// expanded output and the permission prompt show it whole).
fn file_name(path: &str) -> &str {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|name| !name.is_empty())
        .unwrap_or(path)
}

/// The first line (a `…` says more followed), bounded.
fn one_line(summary: &str) -> String {
    let mut lines = summary.lines();
    let first = lines.next().unwrap_or("").trim();
    let first = if lines.next().is_some() {
        format!("{first} …")
    } else {
        first.to_owned()
    };
    first.chars().take(MAX_SUMMARY).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn summary(name: &str, input: Value) -> String {
        describe(name, &input).summary
    }

    #[test]
    fn commands_are_shown_as_they_run() {
        assert_eq!(summary("Bash", json!({"command": "make"})), "make");
        // The Codex adapter's argument vector: the command the shell wrapper runs.
        assert_eq!(
            summary(
                "shell",
                json!({"call_id": "c", "command": ["/bin/bash", "-lc", "touch x"]})
            ),
            "touch x"
        );
        assert_eq!(
            summary("shell", json!({"command": ["ls", "-la"]})),
            "ls -la"
        );
        assert_eq!(
            summary("exec", json!({"cmd": "printf 'v1\\n'"})),
            "printf 'v1\\n'"
        );
        assert_eq!(summary("Bash", json!({"command": "a\nb"})), "a …");
        assert_eq!(summary("x", json!({})), "");
    }

    #[test]
    fn edits_and_patches_name_their_files_with_the_lines_they_change() {
        let patch = describe(
            "apply_patch",
            &json!({"changes": [
                {"path": "/w/notes.txt", "kind": "update", "diff": "@@ -1 +1,2 @@\n-v1\n+v2\n+v3\n"},
                {"path": "/w/new.rs", "kind": "add", "diff": "+fn main() {}\n"},
                {"path": "gone.txt", "kind": "delete"},
            ]}),
        );
        assert_eq!(
            patch.summary,
            "notes.txt +2 −1, new.rs (new) +1, gone.txt (deleted)"
        );
        assert!(patch.patch);
        let edit = describe(
            "Edit",
            &json!({"file_path": "/w/src/a.rs", "old_string": "a\nb\n", "new_string": "a\nc\nd\n"}),
        );
        assert_eq!(edit.summary, "a.rs +2 −1");
        assert_eq!(
            summary(
                "edit",
                json!({"path": "b.rs", "oldText": "x", "newText": "y"})
            ),
            "b.rs +1 −1"
        );
        assert_eq!(
            summary(
                "MultiEdit",
                json!({"file_path": "c.rs", "edits": [
                {"old_string": "1", "new_string": "2"}, {"old_string": "3", "new_string": "4\n5"}]})
            ),
            "c.rs +3 −2"
        );
        assert_eq!(
            summary(
                "Write",
                json!({"file_path": "/w/n.md", "content": "# T\n\nbody\n"})
            ),
            "n.md +3"
        );
    }

    #[test]
    fn searches_fetches_and_mcp_tools_say_what_they_look_for() {
        assert_eq!(
            summary("Grep", json!({"pattern": "TODO", "path": "src"})),
            "TODO in src"
        );
        assert_eq!(summary("WebSearch", json!({"query": "ratatui"})), "ratatui");
        assert_eq!(
            summary(
                "WebFetch",
                json!({"url": "https://example.com", "prompt": "title?"})
            ),
            "https://example.com"
        );
        let mcp = describe("mcp__docs__search", &json!({"q": "serde", "limit": 3}));
        assert_eq!(mcp.name, "docs · search");
        assert_eq!(mcp.summary, "q: serde, limit: 3");
        assert_eq!(describe("mcp__bad", &json!({})).name, "mcp__bad");
    }
}
