//! The light theme: chosen in `/settings` (the next frame draws in it, the config saves it), and
//! drawn in colours readable on a white background. A terminal with a white background cannot be
//! looked at through tmux, so the frames are checked in ratatui's buffer: the snapshots hold each
//! row's text and then its coloured runs (a text snapshot alone would pass in any theme).

use std::fmt::Write as _;

use crossterm::event::KeyCode;
use ratatui::backend::TestBackend;
use ratatui::style::{Color, Modifier, Style};
use ratatui::Terminal;
use serde_json::json;

use agentty::app::settings::SettingsField;
use agentty::app::state::AppEffect;
use agentty::config::{Background, Theme};
use agentty::stream::{
    AgentMessage, FileDiff, PermissionOption, PermissionOptionKind, PermissionRequest,
};

use crate::support::chat::{startup, Chat};

/// The 16-colour shades that most terminals' default palettes draw too pale to read on white.
const PALE_ON_WHITE: [Color; 10] = [
    Color::Yellow,
    Color::Cyan,
    Color::Gray,
    Color::White,
    Color::LightGreen,
    Color::LightBlue,
    Color::LightCyan,
    Color::LightMagenta,
    Color::LightYellow,
    Color::LightRed,
];

fn chat(theme: Theme) -> Chat {
    let mut chat = Chat::with_startup(startup(
        "demo",
        Some("scripted-1"),
        Some("/home/user/.config/agentty/config.toml"),
    ));
    chat.state.set_theme(theme, None);
    chat
}

const ANSWER: &str = "## Plan\n\nRead `main.rs`, then [the docs](https://example.com).\n\n- one\n> Quoted.\n\n```rust\nfn main() {}\n```\n";

/// A finished turn with markdown, a tool's output and a changed file, then a second turn
/// running.
fn busy_transcript(chat: &mut Chat) {
    chat.start_turn(0, "Plan the fix");
    chat.message(
        50,
        AgentMessage::ToolCall {
            id: "call_1".into(),
            name: "bash".into(),
            input: json!({"command": "ls src"}),
            parent_id: None,
        },
    );
    chat.message(
        80,
        AgentMessage::ToolCompleted {
            id: "call_1".into(),
            output: "main.rs\nlib.rs\n".into(),
        },
    );
    chat.delta(100, ANSWER);
    chat.complete(200, None);
    chat.start_turn(300, "And now?");
    chat.thinking(400, "Considering");
}

fn edit_request() -> PermissionRequest {
    let option = |id: &str, kind, name: &str| PermissionOption {
        id: id.into(),
        kind,
        name: name.into(),
    };
    PermissionRequest {
        id: "7".into(),
        tool_call_id: Some("call-7".into()),
        title: "Edit src/lib.rs".into(),
        kind: "edit".into(),
        options: vec![
            option("once", PermissionOptionKind::AllowOnce, "Allow"),
            option("no", PermissionOptionKind::RejectOnce, "Reject"),
        ],
        command: None,
        paths: vec!["src/lib.rs".into()],
        diffs: vec![FileDiff {
            path: "src/lib.rs".into(),
            old_text: Some("fn a() {}\nfn b() {}\n".into()),
            new_text: "fn a() {}\nfn b() { todo!() }\n".into(),
        }],
    }
}

fn asking(chat: &mut Chat) {
    chat.start_turn(0, "Fix b");
    chat.message(
        10,
        AgentMessage::ToolCall {
            id: "call-7".into(),
            name: "edit".into(),
            input: json!({"path": "src/lib.rs"}),
            parent_id: None,
        },
    );
    chat.message(
        20,
        AgentMessage::PermissionRequest(Box::new(edit_request())),
    );
}

/// A style as the snapshot says it: only what differs from the terminal's default.
fn describe(style: Style) -> String {
    let mut parts = Vec::new();
    if let Some(fg) = style.fg.filter(|fg| *fg != Color::Reset) {
        parts.push(format!("fg={fg:?}"));
    }
    if let Some(bg) = style.bg.filter(|bg| *bg != Color::Reset) {
        parts.push(format!("bg={bg:?}"));
    }
    let modifiers = style.add_modifier - style.sub_modifier;
    if !modifiers.is_empty() {
        parts.push(format!("{modifiers:?}"));
    }
    parts.join(" ")
}

/// Each row's text, then its runs of one non-default style (`col "text" style`).
fn styled_screen(terminal: &Terminal<TestBackend>) -> String {
    let buffer = terminal.backend().buffer();
    let area = buffer.area;
    let mut out = String::new();
    for y in 0..area.height {
        let mut text = String::new();
        let mut runs: Vec<(u16, String, String)> = Vec::new();
        for x in 0..area.width {
            let cell = &buffer[(x, y)];
            text.push_str(cell.symbol());
            let style = describe(cell.style());
            if style.is_empty() {
                continue;
            }
            match runs.last_mut() {
                Some((start, run, last))
                    if *last == style && *start as usize + run.chars().count() == x as usize =>
                {
                    run.push_str(cell.symbol());
                }
                _ => runs.push((x, cell.symbol().to_owned(), style)),
            }
        }
        let _ = writeln!(out, "{}", text.trim_end());
        for (x, run, style) in runs {
            if run.trim().is_empty() {
                continue;
            }
            let _ = writeln!(out, "    {x:>3} {:?} {style}", run.trim_end());
        }
    }
    out
}

/// Every colour (foreground or background of text) the frame uses.
fn colours(terminal: &Terminal<TestBackend>) -> Vec<Color> {
    let mut found: Vec<Color> = Vec::new();
    for cell in terminal.backend().buffer().content() {
        for colour in [cell.fg, cell.bg] {
            if !found.contains(&colour) {
                found.push(colour);
            }
        }
    }
    found
}

fn pale(terminal: &Terminal<TestBackend>) -> Vec<Color> {
    colours(terminal)
        .into_iter()
        .filter(|colour| PALE_ON_WHITE.contains(colour))
        .collect()
}

#[test]
fn light_transcript_screen() {
    let mut chat = chat(Theme::Light);
    busy_transcript(&mut chat);
    let terminal = chat.terminal(64, 26, 1_500);
    insta::assert_snapshot!(styled_screen(&terminal));
}

#[test]
fn light_permission_prompt_with_its_diff() {
    let mut chat = chat(Theme::Light);
    asking(&mut chat);
    let terminal = chat.terminal(64, 20, 1_000);
    insta::assert_snapshot!(styled_screen(&terminal));
}

#[test]
fn light_is_chosen_in_the_settings_applied_to_the_next_frame_and_saved() {
    let mut chat = chat(Theme::Dark);
    busy_transcript(&mut chat);
    chat.complete(500, None);
    let dark = chat.terminal(64, 26, 1_000);
    assert!(
        !pale(&dark).is_empty(),
        "the dark theme uses the ANSI shades: {:?}",
        colours(&dark)
    );

    chat.type_text("/settings");
    chat.press(KeyCode::Enter);
    while let Some(agentty::app::menu::Overlay::Settings(draft)) = &chat.state.overlay {
        if draft.field == SettingsField::Theme {
            break;
        }
        chat.press(KeyCode::Down);
    }
    chat.press(KeyCode::Right); // dark -> light
    let effects = chat.press(KeyCode::Enter);
    assert_eq!(effects, vec![AppEffect::SaveTheme(Theme::Light)]);
    assert_eq!(chat.state.theme, Theme::Light);
    assert_eq!(chat.state.background(), Background::Light);
    // The cells drawn (and cached) in the dark theme are drawn again in the light one.
    let light = chat.terminal(64, 26, 1_000);
    assert_eq!(
        pale(&light),
        Vec::<Color>::new(),
        "{}",
        styled_screen(&light)
    );
    let screen = styled_screen(&light);
    assert!(screen.contains("Colours: light"), "{screen}");

    chat.type_text("/settings");
    chat.press(KeyCode::Enter);
    let settings = chat.terminal(64, 26, 1_000);
    insta::assert_snapshot!("light_settings_overlay", styled_screen(&settings));
}

#[test]
fn light_frames_use_no_shade_that_is_pale_on_white() {
    for (name, setup, size) in [
        ("transcript", busy_transcript as fn(&mut Chat), (64, 26)),
        ("permission", asking, (64, 20)),
    ] {
        let mut dark = chat(Theme::Dark);
        setup(&mut dark);
        let dark = dark.terminal(size.0, size.1, 1_000);
        assert!(!pale(&dark).is_empty(), "{name}: the check can fail");

        let mut light = chat(Theme::Light);
        setup(&mut light);
        let light = light.terminal(size.0, size.1, 1_000);
        assert_eq!(pale(&light), Vec::<Color>::new(), "{name}");
        // Dimmed text is a readable grey, not the terminal's faint blend.
        assert!(
            light
                .backend()
                .buffer()
                .content()
                .iter()
                .all(|cell| !cell.modifier.contains(Modifier::DIM)),
            "{name}: {}",
            styled_screen(&light)
        );
        // The status bar (the last row) has a light background with dark text.
        let buffer = light.backend().buffer();
        let status = &buffer[(0, size.1 - 1)];
        assert_eq!(status.bg, Color::Indexed(254), "{name}");
        assert_eq!(status.fg, Color::Indexed(16), "{name}");
        let dark_status = &dark.backend().buffer()[(0, size.1 - 1)];
        assert_eq!(dark_status.bg, Color::DarkGray, "{name}");
    }
}

#[test]
fn auto_follows_what_the_terminal_says_about_its_background() {
    let mut chat = chat(Theme::Auto);
    assert_eq!(chat.state.background(), Background::Dark);
    chat.state.set_theme(Theme::Auto, Some(Background::Light));
    assert_eq!(chat.state.background(), Background::Light);
    busy_transcript(&mut chat);
    let terminal = chat.terminal(64, 26, 1_000);
    assert_eq!(pale(&terminal), Vec::<Color>::new());
}
