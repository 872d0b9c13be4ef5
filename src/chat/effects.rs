//! Carrying out the effects the app's reducers return: orchestrator commands, the clipboard,
//! config writes, the prompt history, file listing, diffs, exports, the editor, `!commands`
//! and job control. Disk work runs off the loop (`spawn_blocking`) and comes back as an
//! [`AppEvent`], which is handed to the reducers here too.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use base64::Engine;

use crate::app::conversation_picker::WallClock;
use crate::app::state::{AppEffect, Copied};
use crate::app::transcript::NoticeLevel;
use crate::app::{export, history, mentions, resume};
use crate::config;
use crate::orchestrator::Command;
use crate::session_log::sessions_dir;
use crate::signals::JobControlEvent;
use crate::tui::{self, ChatTerminal};

use super::app_event::AppEvent;
use super::conversation::Conversation;
use super::event_loop::{ChatLoop, Exit};

impl ChatLoop {
    pub(super) fn apply(&mut self, effects: Vec<AppEffect>, terminal: &mut ChatTerminal) {
        for effect in effects {
            match effect {
                AppEffect::Command(command) => {
                    panic_if_asked_to_by_a_test(&command);
                    self.send(command, terminal);
                }
                AppEffect::Copy(text) => self.copy_to_clipboard(&text, terminal),
                AppEffect::SaveRetryPolicy(policy) => {
                    self.save_setting(config::Setting::RetryPolicy(policy))
                }
                AppEffect::SaveNotify(mode) => self.save_setting(config::Setting::Notify(mode)),
                AppEffect::SaveTheme(theme) => self.save_setting(config::Setting::Theme(theme)),
                AppEffect::SwitchProvider(name) => self.switch_provider(&name),
                AppEffect::ListConversations => self.list_conversations(),
                AppEffect::ResumeConversation(summary) => self.resume_conversation(summary),
                AppEffect::NewConversation => self.new_conversation(),
                AppEffect::ListFiles => self.list_files(),
                AppEffect::LoadDiff(request) => self.load_diff(request),
                AppEffect::SavePrompt(prompt) => save_prompt(prompt),
                AppEffect::Suspend => self.suspend(terminal),
                AppEffect::Export { markdown, file } => self.export(markdown, file),
                AppEffect::EditPrompt(text) => self.edit_prompt(&text, terminal),
                AppEffect::RunShell(request) => self.run_shell(request),
                AppEffect::AttachImage(request) => self.attach_image(request),
                AppEffect::AttachClipboardImage => self.attach_clipboard_image(),
                AppEffect::Leave => self.leave(Exit::QuitKey),
                AppEffect::Exit => self.exit = true,
            }
        }
    }

    fn send(&mut self, command: Command, terminal: &mut ChatTerminal) {
        if self.orchestrator.commands.send(command).is_err() {
            self.orchestrator_open = false;
            let effects = self.state.on_orchestrator_gone();
            self.apply(effects, terminal);
        }
    }

    pub(super) fn on_app_event(&mut self, event: AppEvent) {
        match event {
            AppEvent::ConfigSaved(what, result) => self.state.on_config_saved(what, result),
            AppEvent::LogNotSaved(message) => {
                self.state.show_notice(NoticeLevel::Warning, &message)
            }
            AppEvent::DiffLoaded(loaded) => self.state.show_diff(loaded),
            AppEvent::ConversationsListed(conversations) => {
                let listed = WallClock {
                    ms: crate::session_log::now_ms(),
                    at: Instant::now(),
                };
                self.state.show_conversations(
                    conversations,
                    Conversation::id(&self.conversation),
                    listed,
                )
            }
            AppEvent::ConversationReopened(reopened) => self.continue_reopened(*reopened),
            AppEvent::Exported(result) => self.state.on_exported(result),
            AppEvent::ShellDone(output) => self.state.on_shell_done(output),
            AppEvent::TerminalHungUp => self.on_terminal_lost("the terminal hung up"),
            AppEvent::ImageLoaded(result, fallback) => {
                self.state.on_image_loaded(result, &fallback)
            }
            AppEvent::FilesListed(listing) => {
                if let Some(found) = listing.cut_from {
                    self.state.on_file_list_cut(found);
                }
                // Refreshing the popup can only ask for another listing.
                for effect in self.state.on_files_listed(listing.files) {
                    if effect == AppEffect::ListFiles {
                        self.list_files();
                    }
                }
            }
        }
    }

    /// Reads the snapshots `/diff` shows, off the loop.
    fn load_diff(&mut self, request: crate::app::review::DiffRequest) {
        let events = self.app_events.clone();
        let dir = self.snapshot_dir.clone();
        tokio::task::spawn_blocking(move || {
            let loaded = match dir {
                Some(dir) => crate::snapshot::load_diffs(&dir, &request.turns, request.last).map(
                    |(conversation, last_turn)| crate::app::review::LoadedDiff {
                        conversation,
                        last_turn,
                        turns: request.turns.len(),
                        last: request.last,
                    },
                ),
                None => Err(
                    "this conversation keeps no snapshots (its log could not be created)"
                        .to_owned(),
                ),
            };
            let _ = events.send(AppEvent::DiffLoaded(loaded));
        });
    }

    /// Writes `/export`'s Markdown, off the loop.
    fn export(&mut self, markdown: String, file: Option<String>) {
        let events = self.app_events.clone();
        let conversation = Conversation::id(&self.conversation);
        tokio::task::spawn_blocking(move || {
            let cwd = std::env::current_dir().unwrap_or_default();
            let path = export::export_path(&cwd, file.as_deref(), conversation.as_deref());
            let _ = events.send(AppEvent::Exported(export::write_export(&path, &markdown)));
        });
    }

    /// Walks the working directory for `@` mentions, off the loop.
    fn list_files(&mut self) {
        let events = self.app_events.clone();
        tokio::task::spawn_blocking(move || {
            let files = std::env::current_dir()
                .map(|cwd| mentions::list_files(&cwd, mentions::MAX_FILES))
                .unwrap_or_default();
            let _ = events.send(AppEvent::FilesListed(files));
        });
    }

    /// Ctrl+G: the terminal is the editor's until it closes (the agent goes on meanwhile);
    /// then the screen is drawn whole again.
    fn edit_prompt(&mut self, text: &str, terminal: &mut ChatTerminal) {
        let editor = super::external::chosen_editor();
        if editor.is_none() {
            // Nothing to hand the terminal to.
            self.state
                .on_prompt_edited(super::external::edit_text(None, text));
            return;
        }
        tui::restore_terminal();
        let result = super::external::edit_text(editor, text);
        if let Err(error) = tui::reenter_terminal() {
            self.on_terminal_lost(&error.to_string());
            return;
        }
        if let Err(error) = terminal.clear() {
            tracing::warn!(%error, "clearing the screen after the editor failed");
        }
        self.state.on_prompt_edited(result);
    }

    /// Reads the image the user named (a paste, Ctrl+V, an `@` mention), off the loop.
    fn attach_image(&mut self, request: crate::app::state::ImageRequest) {
        let path = request.path;
        self.load_image(request.fallback, move |lookup| {
            let resolved = crate::attachment::resolve(&path, &lookup.cwd, lookup.home.as_deref());
            crate::attachment::load(&resolved, lookup.max_bytes)
        });
    }

    /// Ctrl+V with no path typed: the clipboard's image, off the loop.
    fn attach_clipboard_image(&mut self) {
        self.load_image(String::new(), |lookup| {
            let path_var = std::env::var_os("PATH").unwrap_or_default();
            let save_dir = crate::logging::state_dir().join("images");
            super::clipboard::clipboard_image(
                &path_var,
                &save_dir,
                &lookup.cwd,
                lookup.home.as_deref(),
                lookup.max_bytes,
            )
        });
    }

    /// Runs `load` off the loop and hands its image back as an app event, with `fallback`,
    /// what goes back into the composer if it fails.
    fn load_image(
        &self,
        fallback: String,
        load: impl FnOnce(&ImageLookup) -> Result<crate::attachment::ImageAttachment, String>
            + Send
            + 'static,
    ) {
        let events = self.app_events.clone();
        let max_bytes = self
            .launch
            .config
            .image_max_bytes
            .unwrap_or(crate::attachment::DEFAULT_MAX_BYTES);
        tokio::task::spawn_blocking(move || {
            let lookup = ImageLookup {
                cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
                home: std::env::var_os("HOME").map(PathBuf::from),
                max_bytes,
            };
            let _ = events.send(AppEvent::ImageLoaded(load(&lookup), fallback));
        });
    }

    /// `!command`: run off the loop, in the working directory; the output comes back as an
    /// app event.
    fn run_shell(&mut self, request: crate::app::state::ShellRequest) {
        let events = self.app_events.clone();
        tokio::task::spawn_blocking(move || {
            let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
            let output = super::external::run_shell(request, &cwd, super::external::SHELL_LIMIT);
            let _ = events.send(AppEvent::ShellDone(output));
        });
    }

    /// Ctrl+Z: the terminal is restored, the agents and agentty stop; on `fg` everything comes
    /// back and the screen is drawn whole again.
    pub(super) fn suspend(&mut self, terminal: &mut ChatTerminal) {
        JobControlEvent::Stop.act(tui::restore_terminal);
        if let Err(error) = tui::reenter_terminal() {
            self.on_terminal_lost(&error.to_string());
            return;
        }
        self.attention.forget_title();
        if let Err(error) = terminal.clear().and_then(|()| terminal.hide_cursor()) {
            tracing::warn!(%error, "clearing the screen after a resume failed");
        }
    }

    /// OSC 52, written by agentty itself (agent text can never produce it: it is sanitised).
    /// The system clipboard through its tool when one is installed (which says it worked);
    /// else the terminal's (OSC 52), which may ignore it and never says: the notice tells which.
    fn copy_to_clipboard(&mut self, text: &str, terminal: &mut ChatTerminal) {
        let path_var = std::env::var_os("PATH").unwrap_or_default();
        let copied = match super::clipboard::copy_text(&path_var, text) {
            Ok(tool) => Copied::ByTool(tool),
            Err(why) => {
                let encoded = base64::engine::general_purpose::STANDARD.encode(text);
                let backend = terminal.backend_mut();
                let written =
                    write!(backend, "\x1b]52;c;{encoded}\x07").and_then(|_| backend.flush());
                match written {
                    Ok(()) => Copied::ToTerminal { why },
                    Err(error) => Copied::Failed(format!("{why}; the terminal: {error}")),
                }
            }
        };
        self.state.on_copied(text.chars().count(), copied);
    }

    /// Writes a setting the user changed into the config file, off the loop; the chat says
    /// where it was saved, or why it was not (it is in use either way).
    fn save_setting(&mut self, setting: config::Setting) {
        let what = setting.what();
        let Some(path) = self.state.config_path.clone() else {
            self.state
                .on_config_saved(what, Err("no config file location is known".to_owned()));
            return;
        };
        let events = self.app_events.clone();
        tokio::task::spawn_blocking(move || {
            let result = config::save_setting(&path, &setting)
                .map(|()| path)
                .map_err(|error| error.to_string());
            let _ = events.send(AppEvent::ConfigSaved(what, result));
        });
    }

    /// Reads this directory's conversations for the `/resume` picker, off the loop.
    fn list_conversations(&mut self) {
        let events = self.app_events.clone();
        tokio::task::spawn_blocking(move || {
            let cwd = std::env::current_dir().unwrap_or_default();
            let conversations = resume::conversations_here(&sessions_dir(), &cwd);
            let _ = events.send(AppEvent::ConversationsListed(conversations));
        });
    }
}

/// Debug builds only: submitting the prompt named by `AGENTTY_TEST_PANIC_ON_PROMPT` panics, so
/// that the end-to-end tests can check what a crash leaves behind (terminal, agents, log).
fn panic_if_asked_to_by_a_test(command: &Command) {
    #[cfg(debug_assertions)]
    if let Command::Submit(prompt) = command {
        if std::env::var("AGENTTY_TEST_PANIC_ON_PROMPT").as_deref() == Ok(prompt.as_str()) {
            panic!("test panic on prompt {prompt:?}");
        }
    }
    #[cfg(not(debug_assertions))]
    let _ = command;
}

/// The prompt history file of this working directory.
pub(super) fn history_path() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_default();
    history::history_file(&crate::logging::state_dir(), &cwd)
}

/// Appends a sent prompt to the history file, off the loop.
pub(super) fn save_prompt(prompt: String) {
    let path = history_path();
    tokio::task::spawn_blocking(move || {
        if let Err(error) = history::append(&path, &prompt) {
            tracing::warn!(%error, path = %path.display(), "saving the prompt history failed");
        }
    });
}

/// What reading an image the user asked for needs: where a relative or `~/` path starts, and
/// how large an image may be.
struct ImageLookup {
    cwd: PathBuf,
    home: Option<PathBuf>,
    max_bytes: u64,
}
