//! What the chat's screens say about the agent CLIs that are installed: the welcome offers
//! `npm install …` only for the others, and `/provider` marks those that are not installed.

use crate::support::chat;

use crossterm::event::KeyCode;

use chat::{startup, Chat};

const SIZE: (u16, u16) = (120, 40);

fn chat_with_installed(installed: &[&str]) -> Chat {
    let mut chat = Chat::with_startup(startup("pi", None, None));
    chat.state
        .on_agents_checked(installed.iter().map(|name| (*name).to_owned()).collect());
    chat
}

#[test]
fn the_welcome_offers_to_install_only_what_is_missing() {
    let mut chat = chat_with_installed(&["pi", "codex"]);
    let screen = chat.screen(SIZE.0, SIZE.1, 0);
    assert!(screen.contains("@anthropic-ai/claude-code"), "{screen}");
    assert!(screen.contains("@google/gemini-cli"), "{screen}");
    assert!(
        !screen.contains("@mariozechner/pi-coding-agent"),
        "{screen}"
    );
    assert!(!screen.contains("@openai/codex"), "{screen}");

    let mut all_there = chat_with_installed(&["pi", "claude", "codex", "gemini"]);
    let screen = all_there.screen(SIZE.0, SIZE.1, 0);
    assert!(!screen.contains("npm install"), "{screen}");
    assert!(!screen.contains("Real agents"), "{screen}");
}

#[test]
fn the_provider_picker_marks_what_is_not_installed() {
    let mut chat = chat_with_installed(&["pi", "codex"]);
    chat.type_text("/provider");
    chat.press(KeyCode::Enter);
    let screen = chat.screen(SIZE.0, SIZE.1, 0);
    let line_of = |name: &str| {
        screen
            .lines()
            .find(|line| {
                // The selected row is marked `›` in place of its first blank.
                (line.contains(&format!(" {name}")) || line.contains(&format!("›{name}")))
                    && line.contains('│')
            })
            .unwrap_or_else(|| panic!("no {name} in\n{screen}"))
            .to_owned()
    };
    assert!(line_of("claude").contains("(not installed)"), "{screen}");
    assert!(line_of("gemini").contains("(not installed)"), "{screen}");
    assert!(line_of("pi").contains("(current)"), "{screen}");
    assert!(!line_of("codex").contains("not installed"), "{screen}");
    assert!(!line_of("demo").contains("not installed"), "{screen}");
}

/// `--provider gemini --agent-bin PATH`: gemini runs (from PATH or not), so the welcome never
/// offers to install it, and says the others are other agents, not "real agents: install one".
#[test]
fn the_agent_running_is_never_offered_for_install() {
    let mut chat = Chat::with_startup(startup("gemini", None, None));
    chat.state.on_agents_checked(Vec::new());
    let screen = chat.screen(SIZE.0, SIZE.1, 0);
    assert!(!screen.contains("@google/gemini-cli"), "{screen}");
    assert!(!screen.contains("Real agents"), "{screen}");
    assert!(
        screen.contains("Other agents: install one, then /provider NAME"),
        "{screen}"
    );
    assert!(screen.contains("@anthropic-ai/claude-code"), "{screen}");
}
