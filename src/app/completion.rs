//! The popups above the input while typing: `/` commands (filtered as you type, with each
//! command's key and description: agentty's own, then the agent's own, marked as the agent's)
//! and `@` file mentions. Tab completes the selected item;
//! Enter runs the command or completes the mention; Esc hides the popup until the text changes.
//!
//! The popup is recomputed after every edit (not every frame), so a streaming transcript does
//! not re-rank files 60 times a second.

use super::action::Action;
use super::agent_status::ShownCommand;
use super::list::ListSelection;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PopupKind {
    Slash,
    Mention,
}

/// One suggestion: what it inserts, and how it is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PopupItem {
    pub(crate) completion: String,
    pub label: String,
    pub(crate) key: String,
    pub(crate) detail: String,
    pub(crate) action: Option<Action>,
    /// One of the agent's own commands: sent to the agent as a prompt.
    pub(crate) agent: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Popup {
    pub(crate) kind: PopupKind,
    pub items: Vec<PopupItem>,
    pub(crate) selection: ListSelection,
    /// Characters before the cursor that a completion replaces.
    pub(crate) replaces: usize,
    /// Shown when there is no item (still listing files, nothing matches).
    pub(crate) empty_note: &'static str,
}

/// The `/` commands matching what was typed (a prefix of the command).
pub(crate) fn slash_items(typed: &str) -> Vec<PopupItem> {
    Action::ALL
        .iter()
        .filter(|action| action.slash().starts_with(typed))
        .map(|action| PopupItem {
            completion: match action {
                Action::SwitchProvider => format!("{} ", action.slash()),
                _ => action.slash().to_owned(),
            },
            label: action.slash().to_owned(),
            key: super::keymap::key_hint(*action).to_owned(),
            detail: action.label().to_owned(),
            action: Some(*action),
            agent: false,
        })
        .collect()
}

/// The agent's own commands matching what was typed, marked with the agent's name; one that
/// has the name of one of agentty's is left out (agentty's own runs). A command that takes
/// something after its name completes with a space, ready for it.
pub(crate) fn agent_slash_items(
    typed: &str,
    commands: &[ShownCommand],
    agent: &str,
) -> Vec<PopupItem> {
    commands
        .iter()
        .filter(|command| !is_agenttys(&command.name))
        .filter(|command| format!("/{}", command.name).starts_with(typed))
        .map(|command| {
            let label = format!("/{}", command.name);
            let detail = match &command.hint {
                Some(hint) => format!("{agent}'s · {} {hint}", command.description),
                None => format!("{agent}'s · {}", command.description),
            };
            PopupItem {
                completion: match command.hint {
                    Some(_) => format!("{label} "),
                    None => label.clone(),
                },
                label,
                key: String::new(),
                detail: detail.trim_end().to_owned(),
                action: None,
                agent: true,
            }
        })
        .collect()
}

/// Whether `name` (without its slash) is one of agentty's own commands.
fn is_agenttys(name: &str) -> bool {
    Action::ALL
        .iter()
        .any(|action| action.slash().strip_prefix('/') == Some(name))
}

/// The agent's command `text` starts with (`/name` or `/name args`), if it is one of the
/// agent's and not one of agentty's.
pub(crate) fn agent_command_of<'c>(
    text: &str,
    commands: &'c [ShownCommand],
) -> Option<&'c ShownCommand> {
    let name = text.strip_prefix('/')?.split_whitespace().next()?;
    if is_agenttys(name) {
        return None;
    }
    commands.iter().find(|command| command.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_items_filter_by_prefix() {
        let items = slash_items("/re");
        let labels: Vec<&str> = items.iter().map(|item| item.label.as_str()).collect();
        assert_eq!(labels, ["/retry", "/resume", "/rewind"]);
        assert_eq!(slash_items("/").len(), Action::ALL.len());
        assert!(slash_items("/zz").is_empty());
    }

    fn command(name: &str, hint: Option<&str>) -> ShownCommand {
        ShownCommand::from(
            crate::provider::AgentCommand::new(name, &format!("does {name}"), hint).unwrap(),
        )
    }

    #[test]
    fn the_agents_commands_follow_agenttys_marked_and_never_shadow_them() {
        let commands = [
            command("compress", None),
            command("compact", None),
            command("bug", Some("<description>")),
        ];
        let items = agent_slash_items("/", &commands, "qwen");
        let shown: Vec<(&str, &str, &str)> = items
            .iter()
            .map(|item| {
                (
                    item.label.as_str(),
                    item.completion.as_str(),
                    item.detail.as_str(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("/compress", "/compress", "qwen's · does compress"),
                ("/bug", "/bug ", "qwen's · does bug <description>"),
            ],
            "agentty's /compact runs, not the agent's"
        );
        assert!(items.iter().all(|item| item.agent && item.action.is_none()));
        assert_eq!(agent_slash_items("/co", &commands, "qwen").len(), 1);
        assert_eq!(
            agent_command_of("/bug it crashed", &commands).map(|c| c.name.as_str()),
            Some("bug")
        );
        assert!(agent_command_of("/compact", &commands).is_none());
        assert!(agent_command_of("/nothing", &commands).is_none());
        assert!(agent_command_of("compress", &commands).is_none());
    }
}
