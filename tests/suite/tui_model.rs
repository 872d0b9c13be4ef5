//! The model and the thinking level in the user's hands: `/model` lists the models the agent
//! reports (current marked, type to filter), Enter asks the agent to switch, the switch is said
//! once the agent confirms it (or its refusal is shown); Shift+Tab steps the thinking level;
//! where the agent lists nothing, the picker and Shift+Tab say so. The status bar shows the model
//! and the level the agent reports.

use crossterm::event::{KeyCode, KeyModifiers};

use agentty::app::state::AppEffect;
use agentty::config::Transport;
use agentty::orchestrator::{Command, OrchestratorEvent};
use agentty::provider::AgentSetting;
use agentty::provider::{AgentStatus, ModeChoice, ModelChoice};

use crate::support::chat;

use chat::{assert_no_control_character, startup, Chat};

fn model(id: &str, name: &str, reasoning: bool) -> ModelChoice {
    ModelChoice {
        id: id.into(),
        name: name.into(),
        provider: Some("demo".into()),
        reasoning,
    }
}

fn levels() -> Vec<String> {
    ["off", "minimal", "low", "medium", "high"]
        .map(String::from)
        .to_vec()
}

/// pi over RPC on demo-1, offering demo-1 and demo-2.
fn pi_chat() -> Chat {
    let mut chat = Chat::with_startup(startup("pi", None, None));
    chat.state.agent_transport = Some(Transport::Rpc);
    chat.event(
        0,
        OrchestratorEvent::AgentStatusChanged(status("demo-1", None)),
    );
    chat
}

fn status(model_id: &str, level: Option<&str>) -> AgentStatus {
    AgentStatus {
        model: Some(model_id.into()),
        thinking_level: level.map(Into::into),
        models: vec![
            model("demo-1", "Demo One", false),
            model("demo-2", "Demo Two (thinks)", true),
        ],
        thinking_levels: if model_id == "demo-2" {
            levels()
        } else {
            Vec::new()
        },
        ..AgentStatus::default()
    }
}

fn change(setting: AgentSetting) -> Vec<AppEffect> {
    vec![AppEffect::Command(Command::ChangeSetting(setting))]
}

#[test]
fn slash_model_lists_the_agents_models_and_enter_switches_once_the_agent_confirms() {
    let mut chat = pi_chat();
    chat.type_text("/model");
    assert!(chat.press(KeyCode::Enter).is_empty());
    let screen = chat.screen(100, 24, 0);
    assert!(screen.contains("● Demo One  · demo"), "{screen}");
    assert!(
        screen.contains("  Demo Two (thinks)  · demo  · thinks"),
        "{screen}"
    );
    let status_bar = screen.lines().last().unwrap();
    // The model by the name the agent gives it, not its id.
    assert!(status_bar.contains("pi · Demo One"), "{status_bar}");
    // Typing narrows the list; Enter asks the agent for the model by its id.
    chat.type_text("two");
    let screen = chat.screen(100, 24, 0);
    let picker = screen.lines().rev().skip(1).collect::<Vec<_>>().join("\n");
    assert!(
        !picker.contains("Demo One"),
        "the status bar aside: {screen}"
    );
    assert_eq!(
        chat.press(KeyCode::Enter),
        change(AgentSetting::Model("demo-2".into()))
    );
    assert!(chat.state.overlay.is_none());
    // Nothing is said before the agent confirms; then once.
    assert!(!chat.screen(100, 24, 0).contains("Model: Demo Two"));
    chat.event(
        10,
        OrchestratorEvent::AgentStatusChanged(status("demo-2", Some("off"))),
    );
    let screen = chat.screen(100, 24, 10);
    assert!(
        screen.contains("Model: Demo Two (thinks) — from the agent's next request on"),
        "{screen}"
    );
    let status_bar = screen.lines().last().unwrap();
    assert!(
        status_bar.contains("pi · Demo Two (thinks) · thinking off"),
        "{status_bar}"
    );
    // Choosing the current model again asks nothing.
    chat.type_text("/model");
    chat.press(KeyCode::Enter);
    assert!(chat.press(KeyCode::Enter).is_empty());
}

#[test]
fn shift_tab_steps_the_thinking_level_where_the_model_has_levels() {
    let mut chat = pi_chat();
    // demo-1 has none: Shift+Tab says so and asks nothing.
    assert!(chat.key(KeyCode::BackTab, KeyModifiers::SHIFT).is_empty());
    assert!(chat
        .screen(100, 24, 0)
        .contains("The current model takes no thinking level: nothing to cycle."));
    chat.event(
        10,
        OrchestratorEvent::AgentStatusChanged(status("demo-2", Some("high"))),
    );
    assert_eq!(
        chat.key(KeyCode::BackTab, KeyModifiers::SHIFT),
        change(AgentSetting::ThinkingLevel("off".into())),
        "after the last level comes the first"
    );
    chat.event(
        20,
        OrchestratorEvent::AgentStatusChanged(status("demo-2", Some("off"))),
    );
    assert!(chat.screen(100, 24, 20).contains("Thinking level: off"));
    // In the picker too, and the picker stays open.
    chat.type_text("/model");
    chat.press(KeyCode::Enter);
    assert!(chat.screen(100, 24, 20).contains("Shift+Tab thinking: off"));
    assert_eq!(
        chat.key(KeyCode::BackTab, KeyModifiers::SHIFT),
        change(AgentSetting::ThinkingLevel("minimal".into()))
    );
    assert!(chat.state.overlay.is_some());
}

#[test]
fn a_refusal_is_shown_as_the_agent_worded_it() {
    let mut chat = pi_chat();
    chat.type_text("/model");
    chat.press(KeyCode::Enter);
    chat.press(KeyCode::Down);
    chat.press(KeyCode::Enter);
    let mut refused = status("demo-1", None);
    refused.refusals = 1;
    refused.refusal = Some("model demo-2: Model not found: demo/demo-2".into());
    chat.event(10, OrchestratorEvent::AgentStatusChanged(refused));
    let screen = chat.screen(100, 24, 10);
    assert!(
        screen.contains("The agent did not change it: model demo-2: Model not found: demo/demo-2"),
        "{screen}"
    );
    assert!(screen.lines().last().unwrap().contains("pi · Demo One"));
}

#[test]
fn an_agent_that_lists_no_models_says_so_in_the_picker_and_on_shift_tab() {
    let mut chat = Chat::with_startup(startup("claude", Some("opus"), None));
    chat.state.agent_transport = Some(Transport::Json);
    chat.type_text("/model");
    chat.press(KeyCode::Enter);
    let screen = chat.screen(80, 24, 0);
    assert!(
        screen.contains("The claude agent reports no models it can switch to over json"),
        "{screen}"
    );
    assert!(screen.contains("--model"), "{screen}");
    assert!(chat.press(KeyCode::Enter).is_empty());
    chat.press(KeyCode::Esc);
    assert!(chat.key(KeyCode::BackTab, KeyModifiers::SHIFT).is_empty());
    assert!(chat
        .screen(80, 24, 0)
        .contains("The claude agent reports no modes or thinking levels here"));
}

#[test]
fn model_names_reach_the_terminal_inert_and_ids_go_back_unchanged() {
    let mut chat = pi_chat();
    let mut hostile = status("demo-1", None);
    hostile
        .models
        .push(model("evil\x1b[2J", "Evil\x1b]0;pwned\x07", false));
    chat.event(5, OrchestratorEvent::AgentStatusChanged(hostile));
    chat.type_text("/model");
    chat.press(KeyCode::Enter);
    let terminal = chat.terminal(100, 24, 5);
    assert_no_control_character(&terminal);
    assert!(chat.screen(100, 24, 5).contains("Evil␛]0;pwned"));
    chat.type_text("evil");
    assert_eq!(
        chat.press(KeyCode::Enter),
        change(AgentSetting::Model("evil\x1b[2J".into()))
    );
}

#[test]
fn thinking_levels_and_mode_ids_go_back_as_the_agent_wrote_them_and_show_inert() {
    let mut chat = pi_chat();
    let evil = "evil\x1b[2J";
    let (low, high) = ("low\x1b]0;pwned\x07", "high\x1b[5m");
    let mut hostile = status("demo-1", None);
    hostile.models.push(model(evil, "Evil", true));
    hostile.model = Some(evil.into());
    hostile.thinking_levels = vec![low.into(), high.into()];
    hostile.thinking_level = Some(low.into());
    chat.event(5, OrchestratorEvent::AgentStatusChanged(hostile.clone()));
    // The current model is found by the agent's own id: marked in the picker, named on the bar.
    chat.type_text("/model");
    chat.press(KeyCode::Enter);
    assert_no_control_character(&chat.terminal(100, 24, 5));
    let screen = chat.screen(100, 24, 5);
    assert!(screen.contains("● Evil"), "{screen}");
    let status_bar = screen.lines().last().unwrap();
    assert!(
        status_bar.contains("pi · Evil · thinking low␛]0;pwned␇"),
        "{status_bar}"
    );
    // Shift+Tab asks for the next level as the agent wrote it; its confirmation is said inert.
    assert_eq!(
        chat.key(KeyCode::BackTab, KeyModifiers::SHIFT),
        change(AgentSetting::ThinkingLevel(high.into()))
    );
    hostile.thinking_level = Some(high.into());
    chat.event(6, OrchestratorEvent::AgentStatusChanged(hostile.clone()));
    assert_no_control_character(&chat.terminal(100, 24, 6));
    assert!(chat.screen(100, 24, 6).contains("Thinking level: high␛[5m"));
    chat.press(KeyCode::Esc);

    // Modes: the current one is found by its raw id, the next one asked for by its raw id.
    let (default, plan) = ("default\x1b[1m", "plan\x07");
    hostile.modes = vec![
        ModeChoice {
            id: default.into(),
            name: "Default".into(),
            most_permissive: None,
        },
        ModeChoice {
            id: plan.into(),
            name: "Plan\x1b[3m".into(),
            most_permissive: None,
        },
    ];
    hostile.mode = Some(default.into());
    chat.event(7, OrchestratorEvent::AgentStatusChanged(hostile.clone()));
    assert_eq!(
        chat.key(KeyCode::BackTab, KeyModifiers::SHIFT),
        change(AgentSetting::Mode(plan.into()))
    );
    hostile.mode = Some(plan.into());
    chat.event(8, OrchestratorEvent::AgentStatusChanged(hostile));
    assert_no_control_character(&chat.terminal(100, 24, 8));
    let screen = chat.screen(100, 24, 8);
    assert!(screen.contains("Mode: Plan␛[3m"), "{screen}");
    assert!(
        screen.lines().last().unwrap().contains("mode Plan␛[3m"),
        "{screen}"
    );
}
