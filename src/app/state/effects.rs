//! What the event loop must do after a state change: the effects the reducers return, for the
//! loop to carry out (the state itself does no IO).

#[cfg(doc)]
use super::AppState;
use super::{ImageRequest, ShellRequest};
use crate::app::review::DiffRequest;
use crate::config::RetryPolicy;
use crate::orchestrator::Command;
use crate::session_log::ConversationSummary;

/// What the event loop must do after a state change.
#[derive(Debug, Clone, PartialEq)]
pub enum AppEffect {
    Command(Command),
    /// Put this text on the clipboard (OSC 52).
    Copy(String),
    /// Write the retry policy to the config file.
    SaveRetryPolicy(RetryPolicy),
    /// Write how agentty calls the user back (`notify`) to the config file.
    SaveNotify(crate::config::NotifyMode),
    /// Write the colours chosen (`theme`) to the config file.
    SaveTheme(crate::config::Theme),
    /// Replace the orchestrator with one for this provider.
    SwitchProvider(String),
    /// List this directory's conversations for the `/resume` picker.
    ListConversations,
    /// Reopen this conversation: its transcript, provider and agent session.
    ResumeConversation(ConversationSummary),
    /// Start a new conversation (a new log, a new agent session, an empty transcript).
    NewConversation,
    /// List the files under the working directory for `@` mentions (`on_files_listed`).
    ListFiles,
    /// Read the diffs `/diff` shows (`show_diff`).
    LoadDiff(DiffRequest),
    /// Append this prompt to the history file of the working directory.
    SavePrompt(String),
    /// Suspend agentty and its agents (Ctrl+Z); the terminal is restored until `fg`.
    Suspend,
    /// `/export [FILE]`: write the conversation, as Markdown, to FILE (else the default name
    /// in the working directory), never over an existing file (`on_exported`).
    Export {
        markdown: String,
        file: Option<String>,
    },
    /// Edit this prompt in the user's editor (Ctrl+G); the result goes to `on_prompt_edited`.
    EditPrompt(String),
    /// Run a shell command (`!command`); the result goes to `on_shell_done`.
    RunShell(ShellRequest),
    /// Read the image the user named; the result goes to `on_image_loaded`.
    AttachImage(ImageRequest),
    /// Read the image on the system clipboard (or the image file whose path it holds); the
    /// result goes to `on_image_loaded`.
    AttachClipboardImage,
    /// The user asks to leave (Ctrl+C twice, Ctrl+D, `/quit`; asked again while leaving: do
    /// not wait for the agent any longer). The chat leaves through its one way out, as for a
    /// signal or a lost terminal, which calls [`AppState::begin_quit`].
    Leave,
    /// Leave the event loop now (the orchestrator has shut down, or never ran).
    Exit,
}
