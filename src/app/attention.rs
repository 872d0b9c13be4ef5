//! What the chat tells the user outside its own screen: the terminal's title (agentty, the
//! agent, and whether it is working, waiting for the user or idle) and a call back when a turn
//! ends or a permission prompt starts waiting while the terminal is not focused.
//!
//! Pure: [`Attention::observe`] compares the chat's state with what it saw last and returns
//! what to write; the chat loop writes it (`crate::tui::attention`). The title is built only of
//! inert text, since the terminal would act on a control sequence inside it.

use super::state::AppState;
use crate::config::NotifyMode;
use crate::orchestrator::TurnOutcome;

/// The chat's state as the title names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChatState {
    /// A turn runs.
    Working,
    /// A permission prompt waits for the user's answer.
    WaitingForYou,
    /// No turn runs.
    Idle,
}

impl ChatState {
    pub(crate) fn of(state: &AppState) -> ChatState {
        if !state.is_turn_running() {
            ChatState::Idle
        } else if state.permission_prompt().is_some() {
            ChatState::WaitingForYou
        } else {
            ChatState::Working
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            ChatState::Working => "working",
            ChatState::WaitingForYou => "waiting for you",
            ChatState::Idle => "idle",
        }
    }
}

/// The terminal title for `state`: `agentty · <agent> · <state>`.
pub(crate) fn title(state: &AppState) -> String {
    format!(
        "agentty · {} · {}",
        inert_line(&state.provider),
        ChatState::of(state).label()
    )
}

/// What the chat loop writes to the terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AttentionEffect {
    /// Set the window title to this (inert) text.
    Title(String),
    /// Call the user back, by the given means, with this (inert) message.
    Notify(NotifyMode, String),
}

/// What the terminal was last told, and whether it has the focus.
#[derive(Debug, Clone)]
pub(crate) struct Attention {
    /// Assumed until the terminal says otherwise: one that reports no focus changes never
    /// calls the user back (it could not tell when that is wanted).
    focused: bool,
    shown_title: Option<String>,
    last: ChatState,
}

impl Default for Attention {
    fn default() -> Attention {
        Attention {
            focused: true,
            shown_title: None,
            last: ChatState::Idle,
        }
    }
}

impl Attention {
    /// The terminal gained (`true`) or lost the focus.
    pub(crate) fn on_focus(&mut self, focused: bool) {
        self.focused = focused;
    }

    /// The terminal's title was lost (the terminal was left and entered again): the next
    /// `observe` sets it anew.
    pub(crate) fn forget_title(&mut self) {
        self.shown_title = None;
    }

    /// What to write now that the chat is in `state`: the title when it changed, and a call
    /// back (by `state.notify`) when a turn just ended or a permission prompt just started
    /// waiting while the terminal is not focused.
    pub(crate) fn observe(&mut self, state: &AppState) -> Vec<AttentionEffect> {
        let mut effects = Vec::new();
        let title = title(state);
        if self.shown_title.as_ref() != Some(&title) {
            self.shown_title = Some(title.clone());
            effects.push(AttentionEffect::Title(title));
        }
        let now = ChatState::of(state);
        let before = std::mem::replace(&mut self.last, now);
        if before == now || self.focused || state.notify == NotifyMode::Off || state.quitting {
            return effects;
        }
        let agent = inert_line(&state.provider);
        let message = match now {
            ChatState::WaitingForYou => Some(format!("{agent} asks for your permission")),
            ChatState::Idle => Some(match &state.last_outcome {
                Some(TurnOutcome::Failed { .. }) => format!("{agent}'s turn failed"),
                Some(TurnOutcome::Cancelled) => format!("{agent}'s turn was stopped"),
                _ => format!("{agent} finished its turn"),
            }),
            // Back to work after an answer: nothing the user must come back for.
            ChatState::Working => None,
        };
        if let Some(message) = message {
            effects.push(AttentionEffect::Notify(state.notify, message));
        }
        effects
    }
}

/// `text` as one inert line: no control character at all (not even a line break, which a
/// title cannot hold), so it can sit inside an escape sequence.
fn inert_line(text: &str) -> String {
    crate::sanitize::untrusted(text)
        .split('\n')
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::app::state::StartupInfo;
    use crate::orchestrator::OrchestratorEvent;
    use crate::stream::{AgentMessage, FailureReason, PermissionRequest};

    struct Chat {
        state: AppState,
        t0: Instant,
    }

    impl Chat {
        fn new(provider: &str) -> Chat {
            Chat {
                state: AppState::new(StartupInfo {
                    provider: provider.into(),
                    model: None,
                    retry_policy: Default::default(),
                    config_path: None,
                    warnings: Vec::new(),
                }),
                t0: Instant::now(),
            }
        }

        fn event(&mut self, ms: u64, event: OrchestratorEvent) {
            let now = self.t0 + Duration::from_millis(ms);
            self.state.on_orchestrator_event(event, now);
        }

        fn start_turn(&mut self, ms: u64) {
            let prompt = "fix it".into();
            self.event(ms, OrchestratorEvent::TurnStarted { turn: 1, prompt });
            self.event(
                ms,
                OrchestratorEvent::AttemptStarted {
                    turn: 1,
                    attempt: 1,
                    max_attempts: 1,
                },
            );
        }

        fn ask_permission(&mut self, ms: u64) {
            let request = PermissionRequest {
                id: "p1".into(),
                title: "Run \x1b]0;pwned\x07 ls".into(),
                kind: "execute".into(),
                ..PermissionRequest::default()
            };
            let message = AgentMessage::PermissionRequest(Box::new(request));
            self.event(
                ms,
                OrchestratorEvent::Message {
                    turn: 1,
                    attempt: 1,
                    message,
                },
            );
        }

        fn end_turn(&mut self, ms: u64, outcome: TurnOutcome) {
            self.event(ms, OrchestratorEvent::TurnEnded { turn: 1, outcome });
        }
    }

    fn titles(effects: &[AttentionEffect]) -> Vec<&str> {
        effects
            .iter()
            .filter_map(|effect| match effect {
                AttentionEffect::Title(title) => Some(title.as_str()),
                AttentionEffect::Notify(..) => None,
            })
            .collect()
    }

    fn notices(effects: &[AttentionEffect]) -> Vec<(NotifyMode, &str)> {
        effects
            .iter()
            .filter_map(|effect| match effect {
                AttentionEffect::Notify(mode, message) => Some((*mode, message.as_str())),
                AttentionEffect::Title(_) => None,
            })
            .collect()
    }

    #[test]
    fn the_title_names_agentty_the_agent_and_the_state_and_changes_only_with_them() {
        let mut chat = Chat::new("pi");
        let mut attention = Attention::default();
        assert_eq!(
            titles(&attention.observe(&chat.state)),
            ["agentty · pi · idle"]
        );
        // Nothing changed: nothing is written again.
        assert!(attention.observe(&chat.state).is_empty());
        chat.start_turn(0);
        assert_eq!(
            titles(&attention.observe(&chat.state)),
            ["agentty · pi · working"]
        );
        chat.ask_permission(100);
        assert_eq!(
            titles(&attention.observe(&chat.state)),
            ["agentty · pi · waiting for you"]
        );
        chat.end_turn(200, TurnOutcome::Completed);
        assert_eq!(
            titles(&attention.observe(&chat.state)),
            ["agentty · pi · idle"]
        );
        // After the terminal was left and entered again (Ctrl+Z), the title is set anew.
        attention.forget_title();
        assert_eq!(
            titles(&attention.observe(&chat.state)),
            ["agentty · pi · idle"]
        );
    }

    #[test]
    fn the_title_is_inert_whatever_the_agent_is_called() {
        let chat = Chat::new("evil\x1b]0;pwned\x07\nname\u{9b}2J");
        let title = title(&chat.state);
        assert!(
            !title.chars().any(char::is_control),
            "a control character in {title:?}"
        );
        assert!(
            title.starts_with("agentty · evil␛]0;pwned␇ name"),
            "{title}"
        );
    }

    #[test]
    fn an_unfocused_terminal_is_called_back_when_a_turn_ends_or_a_permission_waits() {
        let mut chat = Chat::new("pi");
        let mut attention = Attention::default();
        attention.observe(&chat.state);
        attention.on_focus(false);
        chat.start_turn(0);
        assert!(notices(&attention.observe(&chat.state)).is_empty());
        chat.ask_permission(100);
        assert_eq!(
            notices(&attention.observe(&chat.state)),
            [(NotifyMode::Osc, "pi asks for your permission")]
        );
        chat.end_turn(200, TurnOutcome::Completed);
        assert_eq!(
            notices(&attention.observe(&chat.state)),
            [(NotifyMode::Osc, "pi finished its turn")]
        );
        chat.start_turn(300);
        attention.observe(&chat.state);
        chat.end_turn(
            400,
            TurnOutcome::Failed {
                reason: FailureReason::AgentError,
                message: "boom".into(),
            },
        );
        assert_eq!(
            notices(&attention.observe(&chat.state)),
            [(NotifyMode::Osc, "pi's turn failed")]
        );
    }

    #[test]
    fn a_focused_terminal_or_notify_off_is_never_called_back() {
        for (focused, mode) in [(true, NotifyMode::Bell), (false, NotifyMode::Off)] {
            let mut chat = Chat::new("claude");
            chat.state.notify = mode;
            let mut attention = Attention::default();
            attention.on_focus(focused);
            attention.observe(&chat.state);
            chat.start_turn(0);
            chat.ask_permission(50);
            assert!(notices(&attention.observe(&chat.state)).is_empty());
            chat.end_turn(100, TurnOutcome::Cancelled);
            let effects = attention.observe(&chat.state);
            assert!(notices(&effects).is_empty(), "{focused} {mode:?}");
            assert_eq!(titles(&effects), ["agentty · claude · idle"]);
        }
        // Focus lost and gained again before the turn ends: no call back.
        let mut chat = Chat::new("pi");
        chat.state.notify = NotifyMode::Bell;
        let mut attention = Attention::default();
        chat.start_turn(0);
        attention.observe(&chat.state);
        attention.on_focus(false);
        attention.on_focus(true);
        chat.end_turn(100, TurnOutcome::Completed);
        assert!(notices(&attention.observe(&chat.state)).is_empty());
    }
}
