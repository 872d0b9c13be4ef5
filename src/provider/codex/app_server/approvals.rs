//! Codex's approval requests (commands, file changes) as shared `permission.request`s, with
//! Codex's own decisions as the options, and the decision each option sends back.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::provider::codex::items::unwrap_shell;
use crate::provider::json_rpc::id_key;
use crate::stream::{FileDiff, PermissionOption, PermissionOptionKind, PermissionRequest};

/// The agent's requests that ask the user before acting.
pub(crate) const COMMAND_APPROVAL: &str = "item/commandExecution/requestApproval";
pub(crate) const FILE_CHANGE_APPROVAL: &str = "item/fileChange/requestApproval";

/// An approval request: the permission request it is, options from Codex's own decisions.
pub(super) fn approval(
    id: &Value,
    method: &str,
    params: &Value,
    items: &HashMap<String, Value>,
) -> PermissionRequest {
    let item_id = params["itemId"].as_str().map(str::to_owned);
    let item = item_id.as_ref().and_then(|id| items.get(id));
    let reason = params["reason"].as_str();
    if method == FILE_CHANGE_APPROVAL {
        let changes = item
            .and_then(|item| item["changes"].as_array().cloned())
            .unwrap_or_default();
        let paths: Vec<String> = changes
            .iter()
            .filter_map(|change| change["path"].as_str().map(str::to_owned))
            .collect();
        let diffs = changes.iter().filter_map(file_diff).collect();
        let title = match (paths.as_slice(), reason) {
            ([], Some(reason)) => format!("files — {reason}"),
            ([], None) => "files".to_owned(),
            (paths, Some(reason)) => format!("{} — {reason}", paths.join(", ")),
            (paths, None) => paths.join(", "),
        };
        return PermissionRequest {
            id: id_key(id),
            tool_call_id: item_id,
            title,
            kind: "edit".to_owned(),
            options: decisions(params, false),
            command: None,
            paths,
            diffs,
        };
    }
    let command = params["command"]
        .as_str()
        .or_else(|| item.and_then(|item| item["command"].as_str()))
        .map(unwrap_shell);
    let title = match (&command, reason) {
        (Some(command), Some(reason)) => format!("{command} — {reason}"),
        (Some(command), None) => command.clone(),
        (None, Some(reason)) => format!("a command — {reason}"),
        (None, None) => "a command".to_owned(),
    };
    PermissionRequest {
        id: id_key(id),
        tool_call_id: item_id,
        title,
        kind: "execute".to_owned(),
        options: decisions(params, true),
        command,
        paths: params["cwd"]
            .as_str()
            .map(|cwd| vec![cwd.to_owned()])
            .unwrap_or_default(),
        diffs: Vec::new(),
    }
}

/// The answers Codex offers for an approval (`availableDecisions`, else the protocol's set),
/// as options whose id is the decision's name. "decline" (the turn goes on without it) is
/// always offered before "cancel" (the turn ends), so a refusal by policy lets the turn go on.
fn decisions(params: &Value, command: bool) -> Vec<PermissionOption> {
    let offered: Vec<Value> = params["availableDecisions"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| {
            ["accept", "acceptForSession", "decline", "cancel"]
                .map(Value::from)
                .to_vec()
        });
    let mut options: Vec<PermissionOption> = offered
        .iter()
        .filter_map(|decision| decision_option(decision, command))
        .collect();
    if !options.iter().any(|option| option.id == "decline") {
        let at = options
            .iter()
            .position(|option| option.id == "cancel")
            .unwrap_or(options.len());
        options.insert(
            at,
            decision_option(&json!("decline"), command).expect("known"),
        );
    }
    options
}

fn decision_option(decision: &Value, command: bool) -> Option<PermissionOption> {
    let (id, kind, name) = match decision {
        Value::String(name) => match name.as_str() {
            "accept" => (
                "accept",
                PermissionOptionKind::AllowOnce,
                "Yes, proceed".to_owned(),
            ),
            "acceptForSession" => (
                "acceptForSession",
                PermissionOptionKind::AllowAlways,
                if command {
                    "Yes, and don't ask again this session".to_owned()
                } else {
                    "Yes, and don't ask again for these files".to_owned()
                },
            ),
            "decline" => (
                "decline",
                PermissionOptionKind::RejectOnce,
                "No, and let Codex go on without it".to_owned(),
            ),
            "cancel" => (
                "cancel",
                PermissionOptionKind::RejectOnce,
                "No, and stop the turn (tell Codex what to do differently)".to_owned(),
            ),
            _ => return None,
        },
        Value::Object(map) => {
            let amendment = map.get("acceptWithExecpolicyAmendment")?;
            let prefix = amendment["execpolicy_amendment"]
                .as_array()
                .map(|words| {
                    words
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            (
                "acceptWithExecpolicyAmendment",
                PermissionOptionKind::AllowAlways,
                format!("Yes, and don't ask again for commands that start with `{prefix}`"),
            )
        }
        _ => return None,
    };
    Some(PermissionOption {
        id: id.to_owned(),
        kind,
        name,
    })
}

/// The decision to send back for option `option_id` of request `params` (`None`: not offered).
pub(crate) fn decision_value(params: &Value, option_id: &str) -> Option<Value> {
    if option_id == "acceptWithExecpolicyAmendment" {
        return params["availableDecisions"]
            .as_array()?
            .iter()
            .find(|decision| decision.get(option_id).is_some())
            .cloned();
    }
    matches!(
        option_id,
        "accept" | "acceptForSession" | "decline" | "cancel"
    )
    .then(|| Value::from(option_id))
}

/// A `fileChange` change as the prompt shows it: an added file's text, a deleted file's, or
/// the old and new lines of an update's hunks (Codex gives a unified diff).
fn file_diff(change: &Value) -> Option<FileDiff> {
    let path = change["path"].as_str()?.to_owned();
    let diff = change["diff"].as_str()?;
    let (old_text, new_text) = match change["kind"]["type"].as_str() {
        Some("add") => (None, diff.to_owned()),
        Some("delete") => (Some(diff.to_owned()), String::new()),
        _ => {
            let (mut old, mut new) = (String::new(), String::new());
            for line in diff.split_inclusive('\n') {
                if line.starts_with("---") || line.starts_with("+++") || line.starts_with("@@") {
                    continue;
                }
                match line.split_at_checked(1) {
                    Some(("-", rest)) => old.push_str(rest),
                    Some(("+", rest)) => new.push_str(rest),
                    Some((" ", rest)) => {
                        old.push_str(rest);
                        new.push_str(rest);
                    }
                    _ => {}
                }
            }
            (Some(old), new)
        }
    };
    Some(FileDiff {
        path,
        old_text,
        new_text,
    })
}
