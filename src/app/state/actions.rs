//! Menu actions and `/` commands (both run `perform`), sending a prompt, stopping and leaving.

use super::{plural, AppEffect, AppState, Copied};
use crate::app::action::{parse_slash, Action};
use crate::app::activity::UsageBook;
use crate::app::completion::agent_command_of;
use crate::app::help::KeyHelp;
use crate::app::mentions;
use crate::app::menu::Overlay;
use crate::app::permission_record::standing_answers_notice;
use crate::app::provider_picker::ProviderPicker;
use crate::app::settings::SettingsDraft;
use crate::app::transcript::{CellBody, NoticeLevel};
use crate::orchestrator::Command;
use crate::provider::Interjection;
use crate::provider::PROVIDER_NAMES;

impl AppState {
    pub(super) fn request_stop(&mut self) -> Vec<AppEffect> {
        if let Some(turn) = self.turn.as_mut() {
            turn.stop_requested = true;
        } else if let Some(stop) = self.prompt_in_flight.as_mut() {
            // The orchestrator takes the stop after the prompt it has not started yet.
            *stop = true;
        }
        vec![AppEffect::Command(Command::Stop)]
    }

    /// Starts leaving: the orchestrator stops the agent and shuts down, then the loop exits.
    /// Called by the chat's one way out, whatever asked to leave (`AppEffect::Leave`, a signal,
    /// a lost terminal).
    pub fn begin_quit(&mut self) -> Vec<AppEffect> {
        self.overlay = None;
        if !self.orchestrator_alive {
            self.quitting = true;
            return vec![AppEffect::Exit];
        }
        if self.quitting {
            return Vec::new();
        }
        self.quitting = true;
        vec![AppEffect::Command(Command::Shutdown)]
    }

    pub(super) fn open_overlay(&mut self, overlay: Overlay) -> Vec<AppEffect> {
        self.overlay = Some(overlay);
        Vec::new()
    }

    pub(super) fn submit(&mut self) -> Vec<AppEffect> {
        self.submit_as(None)
    }

    /// Sends the composer's text: as a prompt, or handed to the running turn (`interjection`).
    pub(super) fn submit_as(&mut self, interjection: Option<Interjection>) -> Vec<AppEffect> {
        let text = self.composer.text();
        if text.trim().is_empty() {
            // Nothing to send; the blanks must not prefix the next prompt either.
            self.composer.take();
            return Vec::new();
        }
        if text.starts_with('/') && !text.contains('\n') {
            match parse_slash(&text) {
                Some((action, argument)) => {
                    self.composer.take();
                    return self.perform(action, argument);
                }
                // The agent's own command: a prompt for the agent.
                None if agent_command_of(&text, &self.agent_status.commands).is_some() => {}
                // Enter again on the same text: the user means it as a message.
                None if self.composer.confirm_unknown_command(&text) => {}
                None => {
                    // Nothing is thrown away: the text stays, and Up / Ctrl+R find it.
                    self.composer.remember(&text);
                    let commands: Vec<&str> =
                        Action::ALL.iter().map(|action| action.slash()).collect();
                    self.notice(
                        NoticeLevel::Warning,
                        format!(
                            "Unknown command {}: Enter again sends it as a message; commands: {}",
                            text.split_whitespace().next().unwrap_or(""),
                            commands.join(" ")
                        ),
                    );
                    return Vec::new();
                }
            }
        }
        if let Some(request) = super::ShellRequest::parse(&text) {
            // A shell command is the user's own: it runs here, whether or not an agent does.
            let text = self.composer.take();
            self.composer.remember(&text);
            return vec![AppEffect::RunShell(request), AppEffect::SavePrompt(text)];
        }
        if !self.orchestrator_alive {
            self.notice(
                NoticeLevel::Error,
                "The agent runner is not running; the prompt was not sent.",
            );
            return Vec::new();
        }
        let images = self.composer.attached_images();
        if !images.is_empty() {
            if let Some(why) = self.images_refused(interjection.is_some()) {
                // Nothing is lost: the prompt and its images stay in the composer.
                self.notice(NoticeLevel::Warning, why);
                return Vec::new();
            }
        }
        // Folded pastes go out whole.
        let text = self.composer.take();
        self.composer.remember(&text);
        let prompt = mentions::resolve_mentions(&text, self.files.files());
        let command = match interjection {
            _ if !images.is_empty() => Command::SubmitWithImages(prompt, images),
            Some(kind) => Command::Interject(kind, prompt),
            None => Command::Submit(prompt),
        };
        if interjection.is_none() && !self.is_turn_running() {
            self.prompt_in_flight = Some(false);
        }
        vec![AppEffect::Command(command), AppEffect::SavePrompt(text)]
    }

    /// Runs a menu action or `/` command.
    pub(crate) fn perform(&mut self, action: Action, argument: Option<String>) -> Vec<AppEffect> {
        self.overlay = None;
        if !self.is_action_enabled(action) {
            let why = match action {
                Action::RetryLastTurn => "Retry is available after a failed or stopped turn.",
                Action::Stop => "No turn is running.",
                Action::CopyLastAnswer => "There is no answer to copy yet.",
                Action::Diff => "No turn has changed files yet: nothing to review.",
                Action::Undo if self.is_turn_running() => {
                    "Wait for the turn to end (or stop it with Esc) before undoing."
                }
                Action::Undo => "No turn's file changes are left to undo.",
                Action::Rewind if self.is_turn_running() => {
                    "Wait for the turn to end (or stop it with Esc) before rewinding."
                }
                Action::Rewind => "No prompt has been sent yet: nothing to rewind.",
                Action::Export => "No prompt has been sent yet: nothing to export.",
                Action::Compact => {
                    "Wait for the turn to end (or stop it with Esc) before compacting."
                }
                Action::ReopenLastSession | Action::NewSession => {
                    "Stop the running turn (Esc) before leaving this conversation."
                }
                _ => "Not available now.",
            };
            self.notice(NoticeLevel::Info, why);
            return Vec::new();
        }
        match action {
            Action::RetryLastTurn => {
                self.retry_asked = true;
                vec![AppEffect::Command(Command::RetryLastTurn)]
            }
            Action::Stop => self.request_stop(),
            Action::NewSession => vec![AppEffect::NewConversation],
            Action::ReopenLastSession => vec![AppEffect::ListConversations],
            Action::SwitchProvider => match argument {
                Some(name) => self.switch_provider(&name),
                None => {
                    self.open_overlay(Overlay::ProviderPicker(ProviderPicker::new(&self.provider)))
                }
            },
            Action::ToggleThinking => {
                self.expand_thinking = !self.expand_thinking;
                let expand = self.expand_thinking;
                let changed = self.transcript.update_all(|body| match body {
                    CellBody::Thought(thought) if thought.expanded != expand => {
                        thought.expanded = expand;
                        true
                    }
                    _ => false,
                });
                if changed == 0 {
                    self.say_nothing_to_fold("thinking blocks", expand);
                }
                Vec::new()
            }
            Action::TogglePlan => self.toggle_plan(),
            Action::ToggleToolOutput => {
                self.expand_tools = !self.expand_tools;
                let expand = self.expand_tools;
                let changed = self.transcript.update_all(|body| match body {
                    CellBody::Tool(tool) if tool.expanded != expand => {
                        tool.expanded = expand;
                        true
                    }
                    CellBody::Notice(notice)
                        if !notice.details.is_empty() && notice.expanded != expand =>
                    {
                        notice.expanded = expand;
                        true
                    }
                    CellBody::Permission(permission)
                        if permission.has_details() && permission.expanded != expand =>
                    {
                        permission.expanded = expand;
                        true
                    }
                    CellBody::Changes(changes) if changes.expanded != expand => {
                        changes.expanded = expand;
                        true
                    }
                    _ => false,
                });
                if changed == 0 {
                    self.say_nothing_to_fold("tool outputs", expand);
                }
                Vec::new()
            }
            Action::Diff => self.request_diff(),
            Action::Undo => self.request_undo(),
            Action::Rewind => self.open_rewind(),
            // Said once the chat has tried (`on_copied`): how it went is known only then.
            Action::CopyLastAnswer => vec![AppEffect::Copy(self.last_answer().unwrap_or_default())],
            Action::ChooseModel => self.open_model_picker(),
            Action::StandingPermissions => {
                let message = standing_answers_notice(
                    self.transcript.bodies().filter_map(|body| match body {
                        CellBody::Permission(permission) => Some(&**permission),
                        _ => None,
                    }),
                    self.agent_capabilities.revoking_always,
                );
                self.notice(NoticeLevel::Info, message);
                // Where the agent has modes, they are chosen here: the most permissive ones
                // only here, after an explicit yes.
                if self.agent_status.modes.is_empty() {
                    Vec::new()
                } else {
                    self.open_mode_picker()
                }
            }
            Action::Settings => self.open_overlay(Overlay::Settings(
                SettingsDraft::new(self.retry_policy.clone())
                    .with_notify(self.notify)
                    .with_theme(self.theme),
            )),
            Action::ShowLogPath => {
                let path = crate::logging::current_log_file();
                self.notice(NoticeLevel::Info, format!("Log file: {}", path.display()));
                Vec::new()
            }
            Action::Export => vec![AppEffect::Export {
                markdown: crate::app::export::conversation_markdown(
                    &self.transcript,
                    &self.provider,
                ),
                file: argument,
            }],
            // Whether the agent can, and has a conversation to compact, the orchestrator says.
            Action::Compact => vec![AppEffect::Command(Command::Compact(argument))],
            Action::Help => self.open_overlay(Overlay::Help(KeyHelp::default())),
            Action::Quit => vec![AppEffect::Leave],
        }
    }

    /// `/thinking` or `/tools` changed nothing on screen: says so, and what comes next.
    fn say_nothing_to_fold(&mut self, what: &str, expand: bool) {
        let (state, verb) = if expand {
            ("expanded", "expand")
        } else {
            ("collapsed", "collapse")
        };
        self.notice(
            NoticeLevel::Info,
            format!("No {what} to {verb} now; new ones start {state}."),
        );
    }

    pub(super) fn switch_provider(&mut self, name: &str) -> Vec<AppEffect> {
        if !PROVIDER_NAMES.contains(&name) {
            self.notice(
                NoticeLevel::Warning,
                format!(
                    "Unknown provider {}; choose one of {}",
                    name,
                    PROVIDER_NAMES.join(", ")
                ),
            );
            return Vec::new();
        }
        if self.is_turn_running() {
            self.notice(
                NoticeLevel::Info,
                "Stop the running turn before switching provider.",
            );
            return Vec::new();
        }
        self.provider = name.to_owned();
        self.session_id = None;
        self.usage_book = UsageBook::default();
        self.queued.clear();
        self.last_outcome = None;
        self.notice(
            NoticeLevel::Info,
            format!("Switched to {name}: the next prompt starts a new session"),
        );
        vec![AppEffect::SwitchProvider(name.to_owned())]
    }
}

impl AppState {
    /// Sends `prompt` as though typed and sent with Enter: the chat's first prompt
    /// (`agentty "fix the tests"`).
    pub(crate) fn submit_first_prompt(&mut self, prompt: &str) -> Vec<AppEffect> {
        self.composer.set_text(prompt);
        self.submit()
    }

    /// Which real agent CLIs are installed (checked by the chat as it starts).
    pub fn on_agents_checked(&mut self, installed: Vec<String>) {
        self.installed_agents = Some(installed);
    }

    /// `/copy` put `chars` characters somewhere, or could not: said as it is (a terminal's
    /// clipboard never confirms).
    pub(crate) fn on_copied(&mut self, chars: usize, copied: Copied) {
        let what = format!("the last answer ({})", plural(chars, "character"));
        let (level, message) = match copied {
            Copied::ByTool(tool) => (
                NoticeLevel::Info,
                format!("Copied {what} to the clipboard ({tool})"),
            ),
            Copied::ToTerminal { why } => (
                NoticeLevel::Info,
                format!(
                    "Sent {what} to the terminal's clipboard (OSC 52), since {why}; the terminal \
                     does not say whether it took it (some ignore it, tmux needs set-clipboard on)"
                ),
            ),
            Copied::Failed(why) => (NoticeLevel::Warning, format!("Not copied: {why}")),
        };
        self.notice(level, message);
    }

    /// `/export` wrote the conversation (the path), or could not (why).
    pub(crate) fn on_exported(&mut self, result: Result<std::path::PathBuf, String>) {
        let (level, message) = match result {
            Ok(path) => (
                NoticeLevel::Info,
                format!("Exported the conversation to {}", path.display()),
            ),
            Err(why) => (NoticeLevel::Warning, format!("Not exported: {why}")),
        };
        self.notice(level, message);
    }

    /// A new orchestrator runs the agent (at startup, or after `/provider`, `/new` or
    /// `/resume`): what the chat shows of it is that agent's, and nothing the previous one
    /// reported of itself carries over.
    pub fn on_agent_started(
        &mut self,
        capabilities: crate::provider::Capabilities,
        model: Option<String>,
    ) {
        self.agent_steers = capabilities.steers();
        self.agent_transport = Some(capabilities.transport);
        self.agent_capabilities = capabilities;
        self.model = model;
        self.agent_queue = Default::default();
        self.agent_status = Default::default();
        self.orchestrator_alive = true;
    }
}
