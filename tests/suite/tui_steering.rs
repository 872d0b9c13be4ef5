//! Steering a running turn from the chat (pi's RPC transport): Enter steers, Alt+Enter follows
//! up, the agent's own queue shows above the composer, the status bar shows the agent's model,
//! thinking level and session totals; a backend that cannot steer keeps the queue.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use agentty::app::state::AppEffect;
use agentty::orchestrator::{Command, OrchestratorEvent};
use agentty::provider::Interjection;
use agentty::provider::{AgentQueue, AgentStatus};
use agentty::stream::AgentMessage;

use crate::support::chat;

use chat::{startup, Chat};

/// This module's helpers on the suite's test chat (a trait: each module adds its own).
trait SteeringChat {
    fn new(steers: bool) -> Self;
    fn running_turn(&mut self);
    fn type_and(&mut self, text: &str, modifiers: KeyModifiers) -> Vec<AppEffect>;
}

impl SteeringChat for Chat {
    fn new(steers: bool) -> Self {
        let mut chat = Self::with_startup(startup("pi", None, None));
        chat.state.agent_steers = steers;
        chat
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
                    parent_id: None,
                },
            },
        );
    }

    fn type_and(&mut self, text: &str, modifiers: KeyModifiers) -> Vec<AppEffect> {
        self.type_text(text);
        self.key(KeyCode::Enter, modifiers)
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
            ..AgentStatus::default()
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
