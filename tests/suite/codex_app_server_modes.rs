//! Codex's approval presets in the user's hands: over the app-server, Shift+Tab cycles the
//! modes the agent lists (read only -> auto -> full access -> read only), the change is said once
//! the agent's status confirms it, and the status bar shows the model and the mode. In the
//! `/model` picker Shift+Tab still steps the reasoning effort.

use crossterm::event::{KeyCode, KeyModifiers};

use agentty::app::state::AppEffect;
use agentty::config::Transport;
use agentty::orchestrator::{Command, OrchestratorEvent};
use agentty::provider::AgentSetting;
use agentty::provider::{AgentStatus, ModeChoice, ModelChoice};

use crate::support::chat;

use chat::{startup, Chat};

fn status(mode: &str, effort: &str) -> AgentStatus {
    AgentStatus {
        model: Some("gpt-6.2-sol".into()),
        thinking_level: Some(effort.into()),
        models: vec![ModelChoice {
            id: "gpt-6.2-sol".into(),
            name: "GPT-6.2-Sol".into(),
            provider: None,
            reasoning: true,
        }],
        thinking_levels: ["low", "medium", "high"].map(String::from).to_vec(),
        mode: Some(mode.into()),
        modes: [
            ("read-only", "read only"),
            ("auto", "auto"),
            ("full-access", "full access"),
        ]
        .map(|(id, name)| ModeChoice {
            id: id.into(),
            name: name.into(),
        })
        .to_vec(),
        ..AgentStatus::default()
    }
}

fn codex_chat() -> Chat {
    let mut chat = Chat::with_startup(startup("codex", None, None));
    chat.state.agent_transport = Some(Transport::AppServer);
    chat.event(
        0,
        OrchestratorEvent::AgentStatusChanged(status("read-only", "low")),
    );
    chat
}

fn change(setting: AgentSetting) -> Vec<AppEffect> {
    vec![AppEffect::Command(Command::ChangeSetting(setting))]
}

#[test]
fn shift_tab_cycles_codexs_approval_presets_and_the_status_bar_shows_the_mode() {
    let mut chat = codex_chat();
    let screen = chat.screen(140, 24, 0);
    let bar = screen.lines().last().unwrap();
    assert!(
        bar.contains("codex · gpt-6.2-sol · thinking low · mode read only"),
        "{bar}"
    );
    assert!(bar.contains("app-server"), "{bar}");
    assert_eq!(
        chat.key(KeyCode::BackTab, KeyModifiers::SHIFT),
        change(AgentSetting::Mode("auto".into()))
    );
    // Said once the agent's status has it.
    assert!(!chat.screen(140, 24, 0).contains("Mode: auto"));
    chat.event(
        10,
        OrchestratorEvent::AgentStatusChanged(status("auto", "low")),
    );
    let screen = chat.screen(140, 24, 10);
    assert!(screen.contains("Mode: auto"), "{screen}");
    assert!(
        screen.lines().last().unwrap().contains("· mode auto"),
        "{screen}"
    );
    chat.event(
        20,
        OrchestratorEvent::AgentStatusChanged(status("full-access", "low")),
    );
    assert_eq!(
        chat.key(KeyCode::BackTab, KeyModifiers::SHIFT),
        change(AgentSetting::Mode("read-only".into())),
        "after the last preset comes the first"
    );
}

#[test]
fn in_the_model_picker_shift_tab_still_steps_the_effort() {
    let mut chat = codex_chat();
    chat.type_text("/model");
    chat.press(KeyCode::Enter);
    assert_eq!(
        chat.key(KeyCode::BackTab, KeyModifiers::SHIFT),
        change(AgentSetting::ThinkingLevel("medium".into()))
    );
    assert!(chat.state.overlay.is_some());
}
