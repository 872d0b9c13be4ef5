//! Leaving the chat for a moment, the user's way: Ctrl+G edits the prompt in `$VISUAL` /
//! `$EDITOR`, and `!command` runs a shell command in the working directory and shows its output
//! in the transcript (`!!command` puts the output into the prompt instead, for the user to send
//! to the agent with a question). The reducers here ask for the work (`AppEffect::EditPrompt`,
//! `AppEffect::RunShell`) and take its result; `crate::chat::external` does it.

use super::{AppEffect, AppState};
use crate::app::transcript::{CellBody, DetailSection, InertText, NoticeCell, NoticeLevel};
use crate::sanitize::untrusted_owned;

/// What starts a shell command in the prompt (Claude Code's and pi's convention as well).
pub(crate) const SHELL_PREFIX: &str = "!";
/// What starts a shell command whose output goes into the prompt.
pub(crate) const SHELL_TO_PROMPT_PREFIX: &str = "!!";
/// Lines of a command's output shown in the transcript (the rest is counted, not shown).
pub(crate) const MAX_SHELL_LINES: usize = 400;

/// A shell command the user typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellRequest {
    pub command: String,
    /// `!!command`: the output goes into the prompt rather than the transcript.
    pub to_prompt: bool,
}

impl ShellRequest {
    /// The command in a prompt that starts with `!` (or `!!`); None for anything else, or a
    /// bare `!`.
    pub(crate) fn parse(prompt: &str) -> Option<Self> {
        let (rest, to_prompt) = match prompt.strip_prefix(SHELL_TO_PROMPT_PREFIX) {
            Some(rest) => (rest, true),
            None => (prompt.strip_prefix(SHELL_PREFIX)?, false),
        };
        let command = rest.trim();
        (!command.is_empty()).then(|| Self {
            command: command.to_owned(),
            to_prompt,
        })
    }
}

/// How a shell command ended, and what it wrote (stdout and stderr together, bounded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellOutput {
    pub request: ShellRequest,
    /// How it ended, in words: `exit 0`, `exit 2`, `killed after 30s`, `could not start: …`.
    pub ended: String,
    pub success: bool,
    pub text: String,
    /// The output was longer than what was kept.
    pub truncated: bool,
}

impl AppState {
    /// Ctrl+G: the prompt (folded pastes expanded) goes to the user's editor.
    pub(super) fn edit_prompt_in_editor(&mut self) -> Vec<AppEffect> {
        self.popup = None;
        vec![AppEffect::EditPrompt(self.composer.expanded_text())]
    }

    /// The editor closed: its text replaces the prompt, or (it failed, or none is set) a notice
    /// says why and the prompt stays as it was.
    pub fn on_prompt_edited(&mut self, result: Result<String, String>) {
        match result {
            Ok(text) => {
                // Editors end a file with a newline; the prompt does not want it.
                let text = untrusted_owned(text.trim_end_matches(['\n', '\r']));
                self.composer.set_text(&text);
                self.popup = None;
                self.popup_dismissed_for = Some(self.composer.text());
            }
            Err(why) => {
                self.notice(
                    NoticeLevel::Warning,
                    format!("Ctrl+G: {why}; the prompt is as it was"),
                );
            }
        }
    }

    /// A shell command finished: its output in the transcript (inert, bounded, folded like a
    /// tool's), or with `!!` in the prompt. Here the output enters the app: it is made inert
    /// once, and its lines and the notice are built from the inert text.
    pub fn on_shell_done(&mut self, output: ShellOutput) {
        let command = InertText::new(&output.request.command);
        let text = InertText::new(&output.text);
        let lines: Vec<InertText> = text.inert_lines().collect();
        let more = if output.truncated { " (cut short)" } else { "" };
        let mut message = InertText::from("$ ");
        message.push(&command);
        message.push_str(&format!(" · {}", output.ended));
        if output.request.to_prompt && output.success {
            let block = format!(
                "Output of `{command}` ({}){more}:\n```\n{}\n```\n",
                output.ended,
                text.trim_end()
            );
            self.composer.paste(&block);
            self.popup = None;
            self.popup_dismissed_for = Some(self.composer.text());
            message.push_str(": its output is in the prompt");
            self.notice(NoticeLevel::Info, message);
            return;
        }
        let level = if output.success {
            NoticeLevel::Info
        } else {
            NoticeLevel::Warning
        };
        let count = lines.len();
        let mut shown: Vec<InertText> = lines.into_iter().take(MAX_SHELL_LINES).collect();
        if count > MAX_SHELL_LINES {
            shown.push(format!("… {} more lines", count - MAX_SHELL_LINES).into());
        }
        let summary = match count {
            0 => "no output".to_owned(),
            1 => "1 line".to_owned(),
            count => format!("{count} lines{more}"),
        };
        let mut cell = NoticeCell::new(level, message);
        if !shown.is_empty() {
            cell.details_summary = summary.into();
            cell.details_label = "output";
            cell.details = vec![DetailSection {
                title: "output".into(),
                lines: shown,
            }];
            // Short output is shown at once; long output folds like a tool's.
            cell.expanded = count <= 12;
        }
        self.transcript.push(CellBody::Notice(cell.into()));
    }
}
