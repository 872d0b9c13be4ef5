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
            ("read-only", "read only", None),
            ("auto", "auto", None),
            ("full-access", "full access", Some(FULL_ACCESS)),
        ]
        .map(|(id, name, permissive)| ModeChoice {
            id: id.into(),
            name: name.into(),
            most_permissive: permissive.map(str::to_owned),
        })
        .to_vec(),
        ..AgentStatus::default()
    }
}

/// What full access allows, as the provider says it.
const FULL_ACCESS: &str = "Codex runs every command without asking";

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
        bar.contains("codex · GPT-6.2-Sol · thinking low · mode read only"),
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
    // Full access is never a step of the cycle: after auto comes read only.
    assert_eq!(
        chat.key(KeyCode::BackTab, KeyModifiers::SHIFT),
        change(AgentSetting::Mode("read-only".into())),
        "full access is skipped"
    );
    // Where a session starts in it (the config chose it), Shift+Tab leaves it for a mode that
    // asks, and the status bar marks it meanwhile.
    chat.event(
        20,
        OrchestratorEvent::AgentStatusChanged(status("full-access", "low")),
    );
    let bar = chat.screen(140, 24, 20).lines().last().unwrap().to_owned();
    assert!(bar.contains("· mode ⚠ full access"), "{bar}");
    assert_eq!(
        chat.key(KeyCode::BackTab, KeyModifiers::SHIFT),
        change(AgentSetting::Mode("read-only".into())),
        "after the most permissive mode comes the first that asks"
    );
}

#[test]
fn full_access_takes_slash_permissions_and_an_explicit_yes_naming_what_it_allows() {
    let mut chat = codex_chat();
    chat.type_text("/permissions");
    assert!(chat.press(KeyCode::Enter).is_empty());
    let picker = chat.screen(100, 24, 0);
    eprintln!("/permissions:\n{picker}");
    assert!(picker.contains("● read only"), "{picker}");
    assert!(
        picker.contains("full access  ⚠ most permissive: asks first"),
        "{picker}"
    );
    chat.press(KeyCode::End);
    // Enter asks; it does not switch.
    assert!(chat.press(KeyCode::Enter).is_empty());
    let asked = chat.screen(100, 24, 0);
    eprintln!("the question:\n{asked}");
    assert!(asked.contains("Switch to full access?"), "{asked}");
    assert!(asked.contains(FULL_ACCESS), "{asked}");
    // Enter again is no; so is Esc.
    assert!(chat.press(KeyCode::Enter).is_empty());
    assert!(chat.state.overlay.is_some());
    chat.press(KeyCode::Enter);
    assert_eq!(
        chat.key(KeyCode::Char('y'), KeyModifiers::NONE),
        change(AgentSetting::Mode("full-access".into()))
    );
    chat.event(
        10,
        OrchestratorEvent::AgentStatusChanged(status("full-access", "low")),
    );
    let screen = chat.screen(100, 24, 10);
    assert!(
        screen.contains(&format!("Mode: full access — {FULL_ACCESS}")),
        "{screen}"
    );
    // At 40 columns the bar still names the model and the marked mode.
    let bar = chat.screen(40, 12, 10).lines().last().unwrap().to_owned();
    eprintln!("the bar at 40 columns: {bar}");
    assert!(bar.contains("⚠ full access"), "{bar}");
    assert!(bar.contains("GPT-6.2"), "{bar}");
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
