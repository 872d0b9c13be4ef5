//! The chat on ratatui's `TestBackend`: an [`AppState`] and its [`ChatView`] driven by hand-made
//! orchestrator events and keys with an injected clock (milliseconds after `t0`), drawn to a
//! string for insta snapshots.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use agentty::app::state::{AppEffect, AppState, ScrollAction, StartupInfo};
use agentty::config::RetryPolicy;
use agentty::orchestrator::{OrchestratorEvent, TurnOutcome};
use agentty::stream::{AgentMessage, Usage};
use agentty::view::{self, ChatView};

pub struct Chat {
    pub state: AppState,
    pub view: ChatView,
    pub t0: Instant,
    /// The turn the events are for.
    pub turn: u64,
    /// Whether `start_turn` numbers the turns 1, 2, ... (otherwise every turn is turn 1).
    pub count_turns: bool,
    /// The `SessionStarted` (provider, session id) that `start_turn` reports, if any.
    pub session: Option<(String, String)>,
}

/// A startup with the default retry policy and no warnings.
pub fn startup(provider: &str, model: Option<&str>, config_path: Option<&str>) -> StartupInfo {
    StartupInfo {
        provider: provider.into(),
        model: model.map(Into::into),
        retry_policy: RetryPolicy::default(),
        config_path: config_path.map(Into::into),
        warnings: Vec::new(),
    }
}

/// What a provider over `transport` declares it can do (the demo backend speaks them all).
pub fn capabilities_of(transport: agentty::config::Transport) -> agentty::provider::Capabilities {
    let settings = agentty::config::ProviderSettings::default();
    agentty::provider::build_provider_with("demo", &settings, transport)
        .expect("the demo backend speaks every transport")
        .capabilities()
}

impl Chat {
    pub fn with_startup(startup: StartupInfo) -> Self {
        Self {
            state: AppState::new(startup),
            view: ChatView::default(),
            t0: Instant::now(),
            turn: 0,
            count_turns: true,
            session: None,
        }
    }

    /// `start_turn` also reports the agent's session start.
    pub fn announcing_session(mut self, provider: &str, session_id: &str) -> Self {
        self.session = Some((provider.into(), session_id.into()));
        self
    }

    /// Every turn is turn 1.
    pub fn always_turn_one(mut self) -> Self {
        self.count_turns = false;
        self.turn = 1;
        self
    }

    pub fn at(&self, ms: u64) -> Instant {
        self.t0 + Duration::from_millis(ms)
    }

    pub fn event(&mut self, ms: u64, event: OrchestratorEvent) -> Vec<AppEffect> {
        let now = self.at(ms);
        self.state.on_orchestrator_event(event, now)
    }

    /// The turn and its first attempt start (and the session, if one is announced).
    pub fn start_turn(&mut self, ms: u64, prompt: &str) {
        if self.count_turns {
            self.turn += 1;
        }
        let turn = self.turn;
        self.event(
            ms,
            OrchestratorEvent::TurnStarted {
                turn,
                prompt: prompt.into(),
            },
        );
        self.event(
            ms,
            OrchestratorEvent::AttemptStarted {
                turn,
                attempt: 1,
                max_attempts: 1,
            },
        );
        if let Some((provider, session_id)) = self.session.clone() {
            self.message(
                ms,
                AgentMessage::SessionStarted {
                    provider,
                    session_id: Some(session_id),
                    model: None,
                },
            );
        }
    }

    pub fn message(&mut self, ms: u64, message: AgentMessage) {
        let turn = self.turn;
        self.event(
            ms,
            OrchestratorEvent::Message {
                turn,
                attempt: 1,
                message,
            },
        );
    }

    pub fn delta(&mut self, ms: u64, text: &str) {
        self.message(ms, AgentMessage::Assistant { delta: text.into() });
    }

    pub fn thinking(&mut self, ms: u64, delta: &str) {
        self.message(
            ms,
            AgentMessage::Thinking {
                delta: delta.into(),
            },
        );
    }

    pub fn complete(&mut self, ms: u64, usage: Option<Usage>) {
        self.message(
            ms,
            AgentMessage::Completed {
                stop_reason: "stop".into(),
                usage,
            },
        );
        self.end(ms, TurnOutcome::Completed);
    }

    pub fn end(&mut self, ms: u64, outcome: TurnOutcome) -> Vec<AppEffect> {
        let turn = self.turn;
        self.event(ms, OrchestratorEvent::TurnEnded { turn, outcome })
    }

    pub fn key(&mut self, code: KeyCode, modifiers: KeyModifiers) -> Vec<AppEffect> {
        self.state.on_key(KeyEvent::new(code, modifiers))
    }

    pub fn press(&mut self, code: KeyCode) -> Vec<AppEffect> {
        self.key(code, KeyModifiers::NONE)
    }

    pub fn ctrl(&mut self, ch: char) -> Vec<AppEffect> {
        self.key(KeyCode::Char(ch), KeyModifiers::CONTROL)
    }

    /// Types `text` a character at a time; the effects of all the keys.
    pub fn type_text(&mut self, text: &str) -> Vec<AppEffect> {
        let mut effects = Vec::new();
        for ch in text.chars() {
            effects.extend(self.press(KeyCode::Char(ch)));
        }
        effects
    }

    pub fn scroll(&mut self, action: ScrollAction, _ms: u64) {
        self.state.scroll_transcript(action);
    }

    pub fn terminal(&mut self, width: u16, height: u16, ms: u64) -> Terminal<TestBackend> {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        let now = self.at(ms);
        let area = terminal
            .draw(|frame| view::render(frame, &self.state, &mut self.view, now))
            .unwrap()
            .area;
        // As the chat does after each frame.
        self.state
            .on_drawn(view::drawn(&self.state, &self.view, area));
        terminal
    }

    pub fn screen(&mut self, width: u16, height: u16, ms: u64) -> String {
        self.terminal(width, height, ms).backend().to_string()
    }
}

/// Fails when a C0 or C1 control character reached a cell. ratatui drops most of them itself,
/// so a test of agentty's own neutralising also looks for their visible forms (`␛`).
pub fn assert_no_control_character(terminal: &Terminal<TestBackend>) {
    for cell in terminal.backend().buffer().content() {
        assert!(
            !cell
                .symbol()
                .chars()
                .any(|ch| ch.is_control() || ('\u{80}'..='\u{9f}').contains(&ch)),
            "control character reached the terminal: {:?}",
            cell.symbol()
        );
    }
}
