//! The ACP agent's own slash commands: `available_commands_update` (a `session/update` the
//! agent may send at any time, between turns too) lists them as `{name, description, input:
//! {hint} | null}`; each list replaces the one before. The chat offers them in its `/` popup
//! after its own, and sends one as a prompt that starts with `/name`, as the protocol says.
//! Qwen Code 0.24.4 announces about 50 (`compress`, `init`, `review`, ...), opencode 3.

use serde_json::Value;

use super::settings::AcpShared;
use crate::provider::live::Compaction;
use crate::provider::AgentCommand;

/// The names of an agent's own compaction command, in the order one is chosen (Qwen Code and
/// Gemini CLI call it `compress`).
const COMPACTION_COMMANDS: [&str; 2] = ["compact", "compress"];

/// `/compact` on an ACP agent: its own compaction command where it announced one.
pub(super) fn compaction(shared: &AcpShared) -> Compaction {
    let status = shared.status.borrow();
    COMPACTION_COMMANDS
        .iter()
        .find(|name| status.commands.iter().any(|command| command.name == **name))
        .map_or(Compaction::Unavailable, |name| {
            Compaction::AgentCommand((*name).to_owned())
        })
}

/// Follows `line` (any line the agent prints; the others are let go at a glance): an
/// `available_commands_update` becomes the status's commands.
pub(super) fn follow(shared: &AcpShared, line: &str) {
    if memchr::memmem::find(line.as_bytes(), b"\"available_commands_update\"").is_none() {
        return;
    }
    let Some(commands) = commands_of(line) else {
        return;
    };
    shared.status.send_if_modified(|status| {
        let changed = status.commands != commands;
        status.commands = commands;
        changed
    });
}

/// The commands an `available_commands_update` line lists (`None`: not one).
fn commands_of(line: &str) -> Option<Vec<AgentCommand>> {
    let value: Value = serde_json::from_str(line).ok()?;
    if value["method"] != "session/update" {
        return None;
    }
    let update = &value["params"]["update"];
    if update["sessionUpdate"] != "available_commands_update" {
        return None;
    }
    let listed = update["availableCommands"].as_array()?;
    Some(
        listed
            .iter()
            .filter_map(|command| {
                AgentCommand::new(
                    command["name"].as_str()?,
                    command["description"].as_str().unwrap_or_default(),
                    command["input"]["hint"].as_str(),
                )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_available_commands_update_is_the_agents_commands() {
        // As Qwen Code 0.24.4 sends it (cut to three of its 51 commands).
        let line = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"compress","description":"Compresses the context by replacing it with a summary.","input":null,"_meta":{"source":"builtin-command"}},{"name":"bug","description":"submit a bug report","input":{"hint":"<description>"}},{"name":"status","description":"show version info","input":{"hint":""}}]}}}"#;
        let shared = AcpShared::new();
        follow(&shared, line);
        let commands = shared.status().borrow().commands.clone();
        let shown: Vec<(&str, Option<&str>)> = commands
            .iter()
            .map(|command| (command.name.as_str(), command.hint.as_deref()))
            .collect();
        assert_eq!(
            shown,
            [
                ("compress", None),
                ("bug", Some("<description>")),
                ("status", None)
            ]
        );
        // A later list replaces it; a text that only mentions the update changes nothing.
        follow(
            &shared,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"available_commands_update"}}}}"#,
        );
        assert_eq!(shared.status().borrow().commands.len(), 3);
        follow(
            &shared,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"available_commands_update","availableCommands":[]}}}"#,
        );
        assert!(shared.status().borrow().commands.is_empty());
        assert!(matches!(compaction(&shared), Compaction::Unavailable));
        follow(&shared, line);
        assert!(
            matches!(compaction(&shared), Compaction::AgentCommand(name) if name == "compress")
        );
    }
}
