//! What Codex's items say, in the user's words, for both of its transports (`exec --json` and
//! the app-server): the command a login-shell wrapper runs, a patch's files with the lines it
//! adds and removes, an MCP tool by its server, and the plan (`update_plan`) as plan entries.
//! Shapes: tests/fixtures/agent_work/codex_plan.jsonl, tests/fixtures/codex_app_server/.

use serde_json::{json, Value};

use crate::stream::PlanEntry;

/// Codex's plan steps carry no priority; the entries say the middle one.
const PRIORITY: &str = "medium";

/// `/bin/bash -lc "printf 'v1\\n' > notes.txt"` -> `printf 'v1\n' > notes.txt`: Codex runs
/// every command through a login shell, and shows it quoted for that shell; the user reads the
/// command itself, its quoting undone as the shell undoes it. Anything else is kept as it is.
pub(crate) fn unwrap_shell(command: &str) -> String {
    match shlex::split(command).as_deref() {
        Some([shell, flag, inner])
            if is_shell(shell) && flag.starts_with('-') && flag.ends_with('c') =>
        {
            inner.clone()
        }
        _ => command.to_owned(),
    }
}

fn is_shell(program: &str) -> bool {
    let name = program.rsplit('/').next().unwrap_or(program);
    matches!(name, "bash" | "sh" | "zsh" | "dash")
}

/// The MCP tool `tool` of server `server`, named as Claude Code names its MCP tools (the chat
/// shows `server · tool`).
pub(crate) fn mcp_tool_name(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
}

/// An MCP result's text blocks joined, or the result as JSON when it has no text.
pub(crate) fn mcp_result_text(result: &Value) -> String {
    let texts: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    if texts.is_empty() {
        result.to_string()
    } else {
        texts.join("\n")
    }
}

/// A `fileChange` change as a tool's input shows it: its path, its kind and the unified diff
/// Codex gives (`diff`, when it gives one; an added or deleted file's text as one).
pub(crate) fn change_json(change: &Value) -> Value {
    let path = change["path"].as_str().unwrap_or_default();
    let kind = change["kind"]["type"]
        .as_str()
        .or_else(|| change["kind"].as_str())
        .unwrap_or("update");
    let mut shown = json!({ "path": path, "kind": kind });
    if let Some(diff) = change["diff"].as_str() {
        let diff = match kind {
            // An added or deleted file's `diff` is its whole text.
            "add" => prefixed(diff, '+'),
            "delete" => prefixed(diff, '-'),
            _ => diff.to_owned(),
        };
        shown["diff"] = Value::String(diff);
    }
    shown
}

fn prefixed(text: &str, mark: char) -> String {
    text.lines().map(|line| format!("{mark}{line}\n")).collect()
}

/// A patch's output: each file's header and diff (`+++ notes.txt` then the hunks), so the
/// pane shows the change itself.
pub(crate) fn patch_text(changes: &[Value]) -> String {
    changes
        .iter()
        .map(|change| {
            let path = change["path"].as_str().unwrap_or_default();
            let header = match change["kind"].as_str().unwrap_or_default() {
                "add" => format!("added {path}"),
                "delete" => format!("deleted {path}"),
                _ => format!("updated {path}"),
            };
            match change["diff"].as_str() {
                Some(diff) => format!("{header}\n{}", diff.trim_end_matches('\n')),
                None => header,
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `update_plan`'s steps (`[{step, status}]`, status `pending`, `inProgress`/`in_progress` or
/// `completed`) as plan entries.
pub(crate) fn plan_entries(steps: &[Value]) -> Vec<PlanEntry> {
    steps
        .iter()
        .map(|step| PlanEntry {
            content: step["step"]
                .as_str()
                .or_else(|| step["text"].as_str())
                .unwrap_or_default()
                .to_owned(),
            status: match step["status"].as_str().unwrap_or("pending") {
                "inProgress" | "in_progress" => "in_progress".to_owned(),
                other => other.to_owned(),
            },
            priority: PRIORITY.to_owned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_login_shell_wrapper_is_taken_off_and_its_quoting_undone() {
        // As Codex 0.171 shows commands (tests/fixtures/agent_work/codex_plan.jsonl).
        assert_eq!(
            unwrap_shell(r#"/bin/bash -lc "printf 'v1\\n' > notes.txt""#),
            r"printf 'v1\n' > notes.txt"
        );
        assert_eq!(unwrap_shell("/bin/bash -lc 'touch a'"), "touch a");
        assert_eq!(unwrap_shell(r"bash -lc 'echo '\''hi'\'''"), "echo 'hi'");
        assert_eq!(unwrap_shell("/bin/zsh -c ls"), "ls");
        // Not a wrapper, or not one command: as it is.
        assert_eq!(unwrap_shell("ls -la"), "ls -la");
        assert_eq!(unwrap_shell("python -c 'print(1)'"), "python -c 'print(1)'");
        assert_eq!(unwrap_shell("bash -lc 'unclosed"), "bash -lc 'unclosed");
    }

    #[test]
    fn a_change_keeps_its_path_kind_and_diff() {
        let change = json!({"path": "/w/notes.txt", "kind": {"type": "update"}, "diff": "@@ -1 +1 @@\n-v1\n+v2\n"});
        assert_eq!(
            change_json(&change),
            json!({"path": "/w/notes.txt", "kind": "update", "diff": "@@ -1 +1 @@\n-v1\n+v2\n"})
        );
        // `codex exec` names the kind alone, with no diff.
        assert_eq!(
            change_json(&json!({"path": "a.rs", "kind": "add"})),
            json!({"path": "a.rs", "kind": "add"})
        );
        let added = json!({"path": "/else/new.txt", "kind": {"type": "add"}, "diff": "a\nb\n"});
        let shown = change_json(&added);
        assert_eq!(shown["path"], "/else/new.txt");
        assert_eq!(shown["diff"], "+a\n+b\n");
        assert_eq!(patch_text(&[shown]), "added /else/new.txt\n+a\n+b");
    }

    #[test]
    fn plan_steps_become_entries() {
        let entries = plan_entries(&[
            json!({"step": "Write", "status": "inProgress"}),
            json!({"step": "Check", "status": "pending"}),
        ]);
        assert_eq!(entries[0].status, "in_progress");
        assert_eq!(entries[1].content, "Check");
    }
}
