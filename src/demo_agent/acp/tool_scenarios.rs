//! The ACP scenarios that use tools: a command asked for in each agent's way (announced or
//! not, with four, Claude's or Gemini's options, right away or after a pause), an edit with its
//! diff, opencode's tool calls refined by updates, and a real `sleep` a cancel kills.

use std::fs;

use serde_json::json;

use super::turn::{Decision, Halt, Turn};
use super::wire;

const TOUCH: &str = "touch agentty-demo.txt";

/// How long `permission-delayed` waits before it asks (script time).
const ASK_DELAY_MS: u64 = 2_000;

pub(super) fn permission(turn: &mut Turn) -> Result<(), Halt> {
    turn.say("I'll create agentty-demo.txt.")?;
    let (id, tool_call) = announce_touch(turn)?;
    match turn.ask_permission(tool_call, wire::four_options())? {
        Decision::Allowed => run_touch(turn, &id),
        Decision::Rejected => {
            turn.refuse_tool_call(&id, "command")?;
            turn.say("I did not run the command: permission was refused.")
        }
    }
}

pub(super) fn permission_delayed(turn: &mut Turn) -> Result<(), Halt> {
    turn.say("Let me look around before I create agentty-demo.txt.")?;
    turn.wait(ASK_DELAY_MS)?;
    let (id, tool_call) = announce_touch(turn)?;
    match turn.ask_permission(tool_call, wire::claude_options())? {
        Decision::Allowed => run_touch(turn, &id),
        // The turn ends here, with nothing more said.
        Decision::Rejected => Ok(turn.refuse_tool_call(&id, "command")?),
    }
}

/// Announces the `touch` call (`tool_call` pending); its id and the call for the request.
fn announce_touch(turn: &mut Turn) -> Result<(String, serde_json::Value), Halt> {
    let id = turn.tool_call_id();
    let tool_call = json!({
        "toolCallId": id,
        "title": TOUCH,
        "kind": "execute",
        "status": "pending",
        "rawInput": {"command": TOUCH},
        "content": [],
        "locations": [],
    });
    let mut announced = tool_call.clone();
    announced["sessionUpdate"] = json!("tool_call");
    turn.update(announced)?;
    Ok((id, tool_call))
}

/// Runs the allowed `touch` call and reports it.
fn run_touch(turn: &mut Turn, id: &str) -> Result<(), Halt> {
    let outcome = turn.run_command(id, TOUCH, true)?;
    turn.update(json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": id,
        "status": outcome.tool_status(),
        "content": [wire::text_content(&outcome.result_text())],
        "rawOutput": {"output": outcome.output, "exitCode": outcome.exit_code},
    }))?;
    turn.say("Done.")
}

pub(super) fn permission_unannounced(turn: &mut Turn) -> Result<(), Halt> {
    turn.say("I'll create agentty-demo.txt.")?;
    let id = turn.tool_call_id();
    let note = format!(
        "[current working directory {}] (create the demo file)",
        turn.cwd.display()
    );
    let tool_call = json!({
        "toolCallId": id,
        "status": "pending",
        "title": TOUCH,
        "content": [wire::text_content(&note)],
        "locations": [],
        "kind": "execute",
    });
    match turn.ask_permission(tool_call, wire::gemini_options())? {
        Decision::Allowed => {
            let outcome = turn.run_command(&id, TOUCH, false)?;
            turn.update(json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": id,
                "status": outcome.tool_status(),
                "title": TOUCH,
                "content": [],
                "locations": [],
                "kind": "execute",
            }))?;
            turn.say("Done.")
        }
        Decision::Rejected => turn.say("I did not run the command: it was canceled by the user."),
    }
}

/// `rewrite`'s change: 40 numbered lines for a new file, else the 5th and 30th lines marked
/// edited and a line added at the end (a diff whose hunks are far apart).
pub(super) fn rewritten(old: Option<&str>) -> String {
    let Some(old) = old else {
        return (1..=40).map(|number| format!("line {number}\n")).collect();
    };
    let mut text: String = old
        .lines()
        .enumerate()
        .map(|(index, line)| match index + 1 {
            5 | 30 => format!("{line} (edited)\n"),
            _ => format!("{line}\n"),
        })
        .collect();
    text.push_str("Rewritten by the demo ACP agent.\n");
    text
}

/// Asks to change `name` in the session's cwd to `change(<its text, if it exists>)`, with the
/// diff in the tool call and the permission request, as Claude's adapter asks for an edit.
pub(super) fn edit(
    turn: &mut Turn,
    name: &str,
    change: fn(Option<&str>) -> String,
) -> Result<(), Halt> {
    turn.say(&format!("I'll edit {name}."))?;
    let id = turn.tool_call_id();
    let path = turn.cwd.join(name);
    let path_text = path.display().to_string();
    let old_text = fs::read_to_string(&path).ok();
    let new_text = change(old_text.as_deref());
    let diff = json!({"type": "diff", "path": path_text, "oldText": old_text, "newText": new_text});
    let tool_call = json!({
        "toolCallId": id,
        "title": format!("Edit {name}"),
        "kind": "edit",
        "status": "pending",
        "rawInput": {"file_path": path_text, "new_string": new_text},
        "content": [diff],
        "locations": [{"path": path_text}],
    });
    let mut announced = tool_call.clone();
    announced["sessionUpdate"] = json!("tool_call");
    turn.update(announced)?;
    match turn.ask_permission(tool_call, wire::claude_options())? {
        Decision::Allowed => {
            let (status, said) = match fs::write(&path, &new_text) {
                Ok(()) => ("completed", format!("Edited {name}.")),
                Err(error) => ("failed", format!("Could not write {name}: {error}")),
            };
            turn.update(json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": id,
                "status": status,
                "content": [diff],
                "locations": [{"path": path_text}],
            }))?;
            turn.say(&said)
        }
        Decision::Rejected => {
            turn.refuse_tool_call(&id, "edit")?;
            turn.say("I did not edit the file: permission was refused.")
        }
    }
}

/// The file the `refined-tool` scenario writes.
pub(crate) const REFINED_WRITE: &str = "agentty-demo-write.txt";

/// opencode's way with tool calls: announced with nothing but where they run, given their
/// title and input by an update.
pub(super) fn refined_tool(turn: &mut Turn) -> Result<(), Halt> {
    const COMMAND: &str = "echo refined";
    let cwd = turn.cwd.display().to_string();
    let id = turn.tool_call_id();
    turn.update(json!({
        "sessionUpdate": "tool_call", "toolCallId": id, "title": "bash", "kind": "execute",
        "status": "pending", "rawInput": {"cwd": cwd}, "content": [], "locations": [],
    }))?;
    turn.update(json!({
        "sessionUpdate": "tool_call_update", "toolCallId": id, "status": "in_progress",
        "title": COMMAND, "kind": "execute", "rawInput": {"command": COMMAND, "cwd": cwd},
    }))?;
    let outcome = turn.run_command(&id, COMMAND, false)?;
    turn.update(json!({
        "sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": outcome.output}}],
    }))?;
    let path = turn.cwd.join(REFINED_WRITE);
    let content = "written by the demo ACP agent\n";
    let id = turn.tool_call_id();
    turn.update(json!({
        "sessionUpdate": "tool_call", "toolCallId": id, "title": "write", "kind": "edit",
        "status": "pending", "rawInput": {}, "content": [], "locations": [],
    }))?;
    turn.update(json!({
        "sessionUpdate": "tool_call_update", "toolCallId": id, "status": "in_progress",
        "locations": [{"path": path}],
        "rawInput": {"filePath": path, "content": content},
    }))?;
    let written = fs::write(&path, content);
    turn.update(json!({
        "sessionUpdate": "tool_call_update", "toolCallId": id,
        "status": if written.is_ok() { "completed" } else { "failed" },
        "content": [{"type": "content", "content": {"type": "text", "text": "Wrote file successfully."}}],
    }))?;
    turn.say("Done.")
}

pub(super) fn sleep(turn: &mut Turn) -> Result<(), Halt> {
    const SLEEP: &str = "sleep 100";
    turn.say("Sleeping for a while.")?;
    let id = turn.tool_call_id();
    turn.update(json!({
        "sessionUpdate": "tool_call",
        "toolCallId": id,
        "title": SLEEP,
        "kind": "execute",
        "status": "in_progress",
        "rawInput": {"command": SLEEP},
        "content": [],
        "locations": [],
    }))?;
    let outcome = turn.run_command(&id, SLEEP, true)?;
    turn.update(json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": id,
        "status": outcome.tool_status(),
        "content": [wire::text_content(&outcome.result_text())],
    }))?;
    turn.say("Done sleeping.")
}
