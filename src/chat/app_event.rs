//! What background work sends back to the loop (the loop's own inbox): results of the effects
//! carried out off the loop, and a session log's write failures.

use std::path::PathBuf;

use crate::app::resume;
use crate::session_log::ConversationSummary;

/// Results of background work, sent back to the loop.
#[derive(Debug)]
pub(super) enum AppEvent {
    ConfigSaved(&'static str, Result<PathBuf, String>),
    FilesListed(crate::app::mentions::FileListing),
    /// A part of a conversation's log cannot be written (told once per part).
    LogNotSaved(String),
    /// The diffs `/diff` asked for.
    DiffLoaded(Result<crate::app::review::LoadedDiff, String>),
    /// Where `/export` wrote the conversation, or why it could not.
    Exported(Result<PathBuf, String>),
    /// This directory's conversations, for the `/resume` picker.
    ConversationsListed(Vec<ConversationSummary>),
    /// The conversation `/resume` picked, read from its log.
    ConversationReopened(Box<Result<(resume::ResumedConversation, resume::Access), String>>),
    /// A `!command` ended.
    ShellDone(crate::app::state::ShellOutput),
    /// The image the user named was read (or why not), and the text to put back if not.
    ImageLoaded(Result<crate::attachment::ImageAttachment, String>, String),
    /// The terminal hung up (`tui::watch_for_hangup`): no key will ever come again.
    TerminalHungUp,
}
