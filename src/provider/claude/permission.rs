//! Claude Code's `can_use_tool` control request as a shared `permission.request`, and the
//! `control_response` answers to it (shapes recorded in tests/fixtures/claude_stream/).
//!
//! The request: `{"subtype":"can_use_tool","tool_name","display_name","input","description",
//! "permission_suggestions":[{"type":"addRules","rules":[{toolName,ruleContent}],"behavior",
//! "destination"}, ...],"blocked_path","tool_use_id"}`. The answers: `{"behavior":"allow",
//! "updatedInput":<input>[,"updatedPermissions":[...]]}` or `{"behavior":"deny","message"}`
//! (the model reads the message as the tool's result).
//!
//! Options offered: allow once, allow always (only when the CLI suggests rules; they are added
//! for this session only, never written to the user's settings files), each session-wide mode
//! the CLI suggests (`{"type":"setMode","mode":"acceptEdits","destination":"session"}`, which
//! Claude Code 2.1.197 suggests for a Write or an Edit and for a command that creates a file:
//! "Allow all edits this session"; answered with that suggestion in `updatedPermissions`, the
//! CLI switches its mode and says so in a `system/status` line), reject (with the user's note
//! as the message). A mode that would grant every permission (`bypassPermissions`) is never
//! offered this way.

use serde_json::{json, Value};

use crate::stream::{
    FileDiff, PermissionOption, PermissionOptionKind, PermissionRequest, PermissionResolver,
};

pub(crate) const ALLOW_ONCE: &str = "allow";
pub(crate) const ALLOW_ALWAYS: &str = "allow_always";
pub(crate) const REJECT: &str = "reject";
/// The option of a session-wide mode the CLI suggests: this prefix and the mode's id.
const ALLOW_IN_MODE: &str = "allow_in_mode:";
/// A mode never taken from a suggestion: it would allow everything unasked.
const BYPASS_MODE: &str = "bypassPermissions";

/// A `can_use_tool` request waiting for its answer.
#[derive(Debug, Clone)]
pub(crate) struct ClaudePermission {
    pub(crate) request: PermissionRequest,
    /// The tool's input, sent back unchanged with an allow.
    input: Value,
    /// The CLI's suggested rules (`addRules`), for "always".
    rules: Vec<Value>,
    /// The CLI's suggested session-wide modes (`setMode`), each an option of its own.
    modes: Vec<Value>,
}

impl ClaudePermission {
    /// The answer that allows the tool call (and, `always`, the suggested rules for the session).
    pub(crate) fn allow(&self, always: bool) -> Value {
        let updates = if always {
            self.rules.clone()
        } else {
            Vec::new()
        };
        self.allow_with(updates)
    }

    /// The answer to the option `id` the user chose among the allowing ones; `None` for an
    /// option this request did not offer.
    pub(crate) fn allow_option(&self, id: &str) -> Option<Value> {
        match id {
            ALLOW_ONCE => Some(self.allow(false)),
            ALLOW_ALWAYS if !self.rules.is_empty() => Some(self.allow(true)),
            _ => {
                let mode = id.strip_prefix(ALLOW_IN_MODE)?;
                let suggestion = self
                    .modes
                    .iter()
                    .find(|suggestion| suggestion["mode"] == mode)?;
                Some(self.allow_with(vec![suggestion.clone()]))
            }
        }
    }

    fn allow_with(&self, updates: Vec<Value>) -> Value {
        let mut answer = json!({"behavior": "allow", "updatedInput": self.input});
        if !updates.is_empty() {
            answer["updatedPermissions"] = Value::Array(updates);
        }
        answer
    }

    /// The answer that refuses it, with what the model reads as the tool's result.
    pub(crate) fn deny(&self, note: Option<&str>, by: PermissionResolver) -> Value {
        let message = match (note.map(str::trim).filter(|note| !note.is_empty()), by) {
            (Some(note), PermissionResolver::User) => {
                format!("The user rejected this tool use and said: {note}")
            }
            (Some(note), PermissionResolver::Policy) => note.to_owned(),
            (None, PermissionResolver::User) => "The user rejected this tool use.".to_owned(),
            (None, PermissionResolver::Policy) => {
                "agentty's permission policy refused this tool use without asking.".to_owned()
            }
        };
        json!({"behavior": "deny", "message": message})
    }
}

/// Reads a `can_use_tool` request (`request` is its `request` object); `None` without a
/// tool name.
pub(crate) fn request_of(request_id: &str, request: &Value) -> Option<ClaudePermission> {
    let tool = request["tool_name"].as_str()?;
    let input = request.get("input").cloned().unwrap_or(json!({}));
    let rules: Vec<Value> = request["permission_suggestions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|suggestion| suggestion["type"] == "addRules")
        .map(|suggestion| {
            let mut suggestion = suggestion.clone();
            suggestion["destination"] = Value::String("session".into());
            suggestion
        })
        .collect();
    let modes: Vec<Value> = request["permission_suggestions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|suggestion| {
            suggestion["type"] == "setMode"
                && suggestion["destination"] == "session"
                && suggestion["mode"]
                    .as_str()
                    .is_some_and(|mode| !mode.is_empty() && mode != BYPASS_MODE)
        })
        .cloned()
        .collect();
    let command = input["command"].as_str().map(str::to_owned);
    let path = ["file_path", "notebook_path", "path"]
        .iter()
        .find_map(|key| input[*key].as_str())
        .or_else(|| request["blocked_path"].as_str())
        .map(str::to_owned);
    let diffs = diff_of(tool, &input, path.as_deref());
    let title = match (&command, &path) {
        (Some(command), _) => format!("{tool}: {command}"),
        (None, Some(path)) => format!("{tool} {path}"),
        (None, None) => request["description"]
            .as_str()
            .map(|description| format!("{tool}: {description}"))
            .unwrap_or_else(|| tool.to_owned()),
    };
    let mut options = vec![PermissionOption {
        id: ALLOW_ONCE.into(),
        kind: PermissionOptionKind::AllowOnce,
        name: "Allow once".into(),
    }];
    if !rules.is_empty() {
        options.push(PermissionOption {
            id: ALLOW_ALWAYS.into(),
            kind: PermissionOptionKind::AllowAlways,
            name: format!("Always allow in this session ({})", rule_names(&rules)),
        });
    }
    for suggestion in &modes {
        let mode = suggestion["mode"].as_str().unwrap_or_default();
        options.push(PermissionOption {
            id: format!("{ALLOW_IN_MODE}{mode}"),
            kind: PermissionOptionKind::AllowAlways,
            name: mode_option_name(mode),
        });
    }
    options.push(PermissionOption {
        id: REJECT.into(),
        kind: PermissionOptionKind::RejectOnce,
        name: "Reject".into(),
    });
    Some(ClaudePermission {
        request: PermissionRequest {
            id: request_id.to_owned(),
            tool_call_id: request["tool_use_id"].as_str().map(str::to_owned),
            title,
            kind: kind_of(tool).to_owned(),
            options,
            command,
            paths: path.into_iter().collect(),
            diffs,
        },
        input,
        rules,
        modes,
    })
}

/// What choosing a suggested session-wide mode means, in the words of Claude Code's own prompt.
fn mode_option_name(mode: &str) -> String {
    match mode {
        "acceptEdits" => "Allow all edits this session".to_owned(),
        other => format!("Allow, and switch to {other} mode for this session"),
    }
}

/// The shared tool kind of a Claude Code tool.
fn kind_of(tool: &str) -> &'static str {
    match tool {
        "Bash" | "BashOutput" | "KillShell" => "execute",
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => "edit",
        "Read" | "Glob" | "Grep" | "LS" => "read",
        "WebFetch" | "WebSearch" => "fetch",
        _ => "other",
    }
}

/// What a file tool would write: the new content (Write) or the replaced text (Edit).
fn diff_of(tool: &str, input: &Value, path: Option<&str>) -> Vec<FileDiff> {
    let Some(path) = path else {
        return Vec::new();
    };
    match tool {
        "Write" => input["content"]
            .as_str()
            .map(|content| FileDiff {
                path: path.to_owned(),
                old_text: None,
                new_text: content.to_owned(),
            })
            .into_iter()
            .collect(),
        "Edit" => match (input["old_string"].as_str(), input["new_string"].as_str()) {
            (Some(old), Some(new)) => vec![FileDiff {
                path: path.to_owned(),
                old_text: Some(old.to_owned()),
                new_text: new.to_owned(),
            }],
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// The suggested rules, as Claude Code writes them (`Bash(touch marker.txt)`).
fn rule_names(suggestions: &[Value]) -> String {
    suggestions
        .iter()
        .flat_map(|suggestion| suggestion["rules"].as_array().into_iter().flatten())
        .map(|rule| {
            let tool = rule["toolName"].as_str().unwrap_or("tool");
            match rule["ruleContent"].as_str() {
                Some(content) => format!("{tool}({content})"),
                None => tool.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch_request() -> Value {
        json!({
            "subtype": "can_use_tool", "tool_name": "Bash", "display_name": "Bash",
            "input": {"command": "touch marker.txt", "description": "fake tool call"},
            "description": "fake tool call",
            "permission_suggestions": [
                {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "touch marker.txt"}],
                 "behavior": "allow", "destination": "localSettings"},
                {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
            ],
            "blocked_path": "/work/marker.txt",
            "tool_use_id": "toolu_1"
        })
    }

    #[test]
    fn a_bash_request_names_its_command_and_offers_once_always_and_reject() {
        let permission = request_of("req-1", &touch_request()).expect("a permission");
        let request = &permission.request;
        assert_eq!(request.title, "Bash: touch marker.txt");
        assert_eq!(request.kind, "execute");
        assert_eq!(request.command.as_deref(), Some("touch marker.txt"));
        assert_eq!(request.tool_call_id.as_deref(), Some("toolu_1"));
        let ids: Vec<&str> = request.options.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                ALLOW_ONCE,
                ALLOW_ALWAYS,
                "allow_in_mode:acceptEdits",
                REJECT
            ]
        );
        assert_eq!(
            request.options[1].name,
            "Always allow in this session (Bash(touch marker.txt))"
        );
        assert_eq!(request.options[2].name, "Allow all edits this session");
        assert_eq!(request.options[2].kind, PermissionOptionKind::AllowAlways);
    }

    #[test]
    fn a_write_offers_all_edits_this_session_and_its_answer_carries_the_mode() {
        // As Claude Code 2.1.197 asks for a Write (tests/fixtures/claude_stream/
        // permission_accept_edits.jsonl): the mode change is its only suggestion.
        let request = json!({
            "subtype": "can_use_tool", "tool_name": "Write",
            "input": {"file_path": "/w/notes.txt", "content": "hello\n"},
            "permission_suggestions": [
                {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
                {"type": "setMode", "mode": "bypassPermissions", "destination": "session"},
                {"type": "setMode", "mode": "plan", "destination": "localSettings"}
            ],
            "tool_use_id": "toolu_2"
        });
        let permission = request_of("r", &request).unwrap();
        let options: Vec<(&str, &str)> = permission
            .request
            .options
            .iter()
            .map(|option| (option.id.as_str(), option.name.as_str()))
            .collect();
        assert_eq!(
            options,
            [
                (ALLOW_ONCE, "Allow once"),
                ("allow_in_mode:acceptEdits", "Allow all edits this session"),
                (REJECT, "Reject"),
            ],
            "never bypassPermissions, never beyond the session"
        );
        assert_eq!(
            permission.allow_option("allow_in_mode:acceptEdits"),
            Some(json!({"behavior": "allow",
                "updatedInput": {"file_path": "/w/notes.txt", "content": "hello\n"},
                "updatedPermissions": [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]}))
        );
        assert_eq!(
            permission.allow_option("allow_in_mode:bypassPermissions"),
            None
        );
        assert_eq!(
            permission.allow_option(ALLOW_ALWAYS),
            None,
            "no rules suggested"
        );
        assert_eq!(
            permission.allow_option(ALLOW_ONCE),
            Some(permission.allow(false))
        );
    }

    #[test]
    fn always_adds_the_suggested_rules_for_the_session_only() {
        let permission = request_of("req-1", &touch_request()).unwrap();
        assert_eq!(
            permission.allow(false),
            json!({"behavior": "allow", "updatedInput": {"command": "touch marker.txt", "description": "fake tool call"}})
        );
        let always = permission.allow(true);
        let updates = always["updatedPermissions"].as_array().unwrap();
        assert_eq!(updates.len(), 1, "only addRules, not the mode change");
        assert_eq!(updates[0]["destination"], "session");
        assert_eq!(updates[0]["rules"][0]["ruleContent"], "touch marker.txt");
    }

    #[test]
    fn a_rejection_carries_the_users_note() {
        let permission = request_of("req-1", &touch_request()).unwrap();
        assert_eq!(
            permission.deny(Some("use mkdir instead"), PermissionResolver::User),
            json!({"behavior": "deny", "message": "The user rejected this tool use and said: use mkdir instead"})
        );
        assert_eq!(
            permission.deny(None, PermissionResolver::User)["message"],
            "The user rejected this tool use."
        );
    }

    #[test]
    fn a_write_shows_its_path_and_content_and_no_rules_means_no_always() {
        let request = json!({
            "subtype": "can_use_tool", "tool_name": "Write",
            "input": {"file_path": "/w/a.txt", "content": "hello\n"}
        });
        let permission = request_of("r", &request).unwrap();
        assert_eq!(permission.request.title, "Write /w/a.txt");
        assert_eq!(permission.request.kind, "edit");
        assert_eq!(permission.request.paths, ["/w/a.txt"]);
        assert_eq!(permission.request.diffs[0].new_text, "hello\n");
        assert!(permission
            .request
            .option_of(PermissionOptionKind::AllowAlways)
            .is_none());
        assert!(request_of("r", &json!({"subtype": "can_use_tool"})).is_none());
    }
}
