//! What the user can ask of the chat: every item of the action menu and every `/` command names
//! an [`Action`]; the menu and the `/` command of an action run the same code in
//! `AppState::perform`.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    RetryLastTurn,
    Stop,
    NewSession,
    ReopenLastSession,
    SwitchProvider,
    ChooseModel,
    ToggleThinking,
    ToggleToolOutput,
    TogglePlan,
    CopyLastAnswer,
    Diff,
    Undo,
    Rewind,
    Compact,
    Settings,
    StandingPermissions,
    Export,
    ShowLogPath,
    Help,
    Quit,
}

impl Action {
    pub(crate) const ALL: [Action; 20] = [
        Action::RetryLastTurn,
        Action::Stop,
        Action::NewSession,
        Action::ReopenLastSession,
        Action::SwitchProvider,
        Action::ChooseModel,
        Action::ToggleThinking,
        Action::ToggleToolOutput,
        Action::TogglePlan,
        Action::CopyLastAnswer,
        Action::Diff,
        Action::Undo,
        Action::Rewind,
        Action::Compact,
        Action::Settings,
        Action::StandingPermissions,
        Action::Export,
        Action::ShowLogPath,
        Action::Help,
        Action::Quit,
    ];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Action::RetryLastTurn => "Retry last turn",
            Action::Stop => "Stop the running turn",
            Action::NewSession => "New conversation",
            Action::ReopenLastSession => "Resume a conversation",
            Action::SwitchProvider => "Switch provider",
            Action::ChooseModel => "Choose the model",
            Action::ToggleThinking => "Expand/collapse all thinking",
            Action::ToggleToolOutput => "Expand/collapse all tool output",
            Action::TogglePlan => "Show/fold the plan's steps",
            Action::CopyLastAnswer => "Copy last answer",
            Action::Diff => "Review the agent's changes (diff)",
            Action::Undo => "Undo the last turn's file changes",
            Action::Rewind => "Rewind to an earlier prompt",
            Action::Compact => "Compact the agent's conversation",
            Action::Settings => "Settings (retry policy)",
            Action::StandingPermissions => "Permission mode, and answers given always",
            Action::Export => "Export the conversation (Markdown)",
            Action::ShowLogPath => "Show log file path",
            Action::Help => "Help: every command and key",
            Action::Quit => "Quit",
        }
    }

    /// The `/` command that runs this action.
    pub(crate) fn slash(self) -> &'static str {
        match self {
            Action::RetryLastTurn => "/retry",
            Action::Stop => "/stop",
            Action::NewSession => "/new",
            Action::ReopenLastSession => "/resume",
            Action::SwitchProvider => "/provider",
            Action::ChooseModel => "/model",
            Action::ToggleThinking => "/thinking",
            Action::ToggleToolOutput => "/tools",
            Action::TogglePlan => "/plan",
            Action::CopyLastAnswer => "/copy",
            Action::Diff => "/diff",
            Action::Undo => "/undo",
            Action::Rewind => "/rewind",
            Action::Compact => "/compact",
            Action::Settings => "/settings",
            Action::StandingPermissions => "/permissions",
            Action::Export => "/export",
            Action::ShowLogPath => "/log",
            Action::Help => "/help",
            Action::Quit => "/quit",
        }
    }
}

impl Action {
    /// How the `/` command is written, with its argument where it takes one.
    pub(crate) fn usage(self) -> &'static str {
        match self {
            Action::SwitchProvider => "/provider [NAME]",
            Action::Compact => "/compact [instructions]",
            Action::Export => "/export [FILE]",
            Action::Quit => "/quit (or /exit)",
            other => other.slash(),
        }
    }
}

/// A parsed `/` command: the action and its argument (`/provider claude`).
pub(crate) fn parse_slash(input: &str) -> Option<(Action, Option<String>)> {
    let input = input.trim();
    let mut words = input.splitn(2, char::is_whitespace);
    let command = words.next()?;
    let argument = words
        .next()
        .map(str::trim)
        .filter(|argument| !argument.is_empty())
        .map(str::to_owned);
    let action = Action::ALL.into_iter().find(|action| {
        action.slash() == command || (command == "/exit" && *action == Action::Quit)
    })?;
    Some((action, argument))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_commands_name_actions() {
        assert_eq!(parse_slash("/retry"), Some((Action::RetryLastTurn, None)));
        assert_eq!(
            parse_slash("/provider  claude "),
            Some((Action::SwitchProvider, Some("claude".into())))
        );
        assert_eq!(parse_slash("/exit"), Some((Action::Quit, None)));
        assert_eq!(parse_slash("/nope"), None);
        for action in Action::ALL {
            assert_eq!(parse_slash(action.slash()).map(|(a, _)| a), Some(action));
        }
    }
}
