//! Steering a running turn from the chat (pi's RPC transport): Enter steers, Alt+Enter follows
//! up, the agent's own queue shows above the composer, the status bar shows the agent's model,
//! thinking level and session totals; a backend that cannot steer keeps the queue.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use agentty::app::state::{AppEffect, AppState, StartupInfo};
use agentty::config::RetryPolicy;
use agentty::orchestrator::{Command, OrchestratorEvent};
use agentty::provider::pi::rpc::{AgentQueue, AgentStatus};
use agentty::provider::Interjection;
use agentty::stream::AgentMessage;
use agentty::view::{self, ChatView};

struct Chat {
    state: AppState,
    view: ChatView,
    t0: Instant,
}

impl Chat {
    fn new(steers: bool) -> Self {
        let mut state = AppState::new(StartupInfo {
            provider: "pi".into(),
            model: None,
            retry_policy: RetryPolicy::default(),
            config_path: None,
            warnings: Vec::new(),
        });
        state.agent_steers = steers;
        Self {
            state,
            view: ChatView::default(),
            t0: Instant::now(),
        }
    }

    fn event(&mut self, ms: u64, event: OrchestratorEvent) {
        let now = self.t0 + Duration::from_millis(ms);
        self.state.on_orchestrator_event(event, now);
    }

    fn running_turn(&mut self) {
        self.event(
            0,
            OrchestratorEvent::TurnStarted {
                turn: 1,
                prompt: "Run sleep 3, then tell me about it.".into(),
            },
        );
        self.event(
            0,
            OrchestratorEvent::AttemptStarted {
                turn: 1,
                attempt: 1,
                max_attempts: 3,
            },
        );
        self.event(
            10,
            OrchestratorEvent::Message {
                turn: 1,
                attempt: 1,
                message: AgentMessage::ToolCall {
                    id: "call_1".into(),
                    name: "bash".into(),
                    input: serde_json::json!({"command": "sleep 3"}),
                },
            },
        );
    }

    fn type_and(&mut self, text: &str, modifiers: KeyModifiers) -> Vec<AppEffect> {
        for ch in text.chars() {
            self.state
                .on_key(KeyEvent::new(KeyCode::Char(ch), KeyModifiers::NONE));
        }
        self.state.on_key(KeyEvent::new(KeyCode::Enter, modifiers))
    }

    fn screen(&mut self, width: u16, height: u16, ms: u64) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        let now = self.t0 + Duration::from_millis(ms);
        terminal
            .draw(|frame| view::render(frame, &self.state, &mut self.view, now))
            .unwrap();
        terminal.backend().to_string()
    }
}

#[test]
fn enter_steers_and_alt_enter_follows_up_while_a_turn_runs() {
    let mut chat = Chat::new(true);
    chat.running_turn();
    assert_eq!(
        chat.type_and("use sleep 1 instead", KeyModifiers::NONE),
        [
            AppEffect::Command(Command::Interject(
                Interjection::Steer,
                "use sleep 1 instead".into()
            )),
            AppEffect::SavePrompt("use sleep 1 instead".into())
        ]
    );
    assert_eq!(
        chat.type_and("then list the files", KeyModifiers::ALT),
        [
            AppEffect::Command(Command::Interject(
                Interjection::FollowUp,
                "then list the files".into()
            )),
            AppEffect::SavePrompt("then list the files".into())
        ]
    );
    assert!(chat.state.composer.is_empty());
}

#[test]
fn without_a_running_turn_enter_sends_and_alt_enter_is_a_new_line() {
    let mut chat = Chat::new(true);
    assert!(chat.type_and("first line", KeyModifiers::ALT).is_empty());
    assert_eq!(
        chat.type_and("second", KeyModifiers::NONE),
        [
            AppEffect::Command(Command::Submit("first line\nsecond".into())),
            AppEffect::SavePrompt("first line\nsecond".into())
        ]
    );
}

#[test]
fn a_backend_that_cannot_steer_keeps_the_queue_and_alt_enter_is_a_new_line() {
    let mut chat = Chat::new(false);
    chat.running_turn();
    assert!(chat.type_and("more", KeyModifiers::ALT).is_empty());
    assert_eq!(
        chat.type_and("over", KeyModifiers::NONE),
        [
            AppEffect::Command(Command::Submit("more\nover".into())),
            AppEffect::SavePrompt("more\nover".into())
        ]
    );
}

#[test]
fn alt_up_pulls_the_last_queued_prompt_back_into_the_editor() {
    let mut chat = Chat::new(false);
    chat.running_turn();
    chat.event(
        20,
        OrchestratorEvent::QueueChanged {
            queued: vec!["one".into(), "two".into()],
        },
    );
    let effects = chat
        .state
        .on_key(KeyEvent::new(KeyCode::Up, KeyModifiers::ALT));
    assert_eq!(effects, [AppEffect::Command(Command::RemoveQueued(1))]);
    assert_eq!(chat.state.composer.text(), "two");
    assert_eq!(chat.state.queued, ["one"]);
}

#[test]
fn the_agents_queue_and_status_are_on_screen() {
    let mut chat = Chat::new(true);
    chat.event(
        0,
        OrchestratorEvent::AgentStatusChanged(AgentStatus {
            model: Some("plain".into()),
            thinking_level: Some("off".into()),
            cost_usd: Some(0.0123),
            tokens: Some(2580),
        }),
    );
    chat.running_turn();
    chat.event(
        30,
        OrchestratorEvent::AgentQueueChanged(AgentQueue {
            steering: vec!["use sleep 1 instead".into()],
            follow_up: vec!["then list the files".into()],
        }),
    );
    insta::assert_snapshot!(chat.screen(100, 12, 1_000));
}

#[test]
fn agent_queue_text_is_sanitised() {
    let mut chat = Chat::new(true);
    chat.running_turn();
    chat.event(
        30,
        OrchestratorEvent::AgentQueueChanged(AgentQueue {
            steering: vec!["evil \u{1b}[2J title".into()],
            follow_up: Vec::new(),
        }),
    );
    assert!(!chat.state.agent_queue.steering[0].contains('\u{1b}'));
    assert!(!chat.screen(72, 12, 1_000).contains('\u{1b}'));
}
