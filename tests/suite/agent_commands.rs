//! The agent's own slash commands in the `/` popup, end to end in tmux on the demo agent: over
//! ACP (its `available_commands_update`) and Claude's stream (its `initialize`), at 160x50 and
//! 60x20. They follow agentty's own commands, marked as the agent's; one is sent to the agent
//! as a prompt that starts with `/name` (Enter on one that takes nothing sends it; Tab
//! completes one that takes more, with a space).

use crate::support::chat_pane;

use agentty::demo_agent::state::{requests_file, DemoRequest};
use chat_pane::{ChatPane, StateDir};

struct Run {
    chat: ChatPane,
    state: StateDir,
    _cwd: tempfile::TempDir,
}

fn launch(transport: &str, size: (u16, u16)) -> Option<Run> {
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    let prefix = format!(
        "AGENTTY_DEMO_STATE_DIR={}/demo AGENTTY_DEMO_TIME_SCALE=0.1",
        state.path().display()
    );
    let chat = ChatPane::launch(
        &state,
        cwd.path(),
        &prefix,
        &["--provider", "demo", "--transport", transport],
        size,
    )?;
    chat.pane.wait_for_text("Ask the agent anything");
    Some(Run {
        chat,
        state,
        _cwd: cwd,
    })
}

impl Run {
    /// The prompts the demo agent's model received, the last request's.
    fn last_request(&self) -> Vec<String> {
        let log = std::fs::read_to_string(requests_file(&self.state.path().join("demo")))
            .unwrap_or_default();
        log.lines()
            .last()
            .map(|line| serde_json::from_str::<DemoRequest>(line).unwrap().messages)
            .unwrap_or_default()
    }
}

/// The row of `screen` that holds `text`.
fn row_of(screen: &str, text: &str) -> Option<usize> {
    screen.lines().position(|row| row.contains(text))
}

#[test]
fn the_acp_agents_commands_follow_agenttys_and_one_is_sent_as_a_prompt() {
    let Some(run) = launch("acp", (160, 50)) else {
        return;
    };
    let pane = &run.chat.pane;
    // The agent announces its commands once its session is open.
    pane.wait_for_text("· acp");
    pane.type_text("/");
    let popup = pane.wait_for_text("/compress");
    eprintln!("the / popup at 160x50:\n{popup}");
    let quit = row_of(&popup, "/quit").expect("agentty's own commands");
    let compress = row_of(&popup, "/compress").unwrap();
    assert!(quit < compress, "the agent's after agentty's:\n{popup}");
    assert!(
        popup.contains("demo's · Compresses the context by replacing it with a summary."),
        "{popup}"
    );
    assert!(
        popup.contains("demo's · Review the changes so far <focus>"),
        "{popup}"
    );
    // `/in`: only the agent's `/init`; Enter sends it.
    pane.type_text("in");
    pane.wait_for("only /init", |screen| {
        screen.contains("/init ") && !screen.contains("/compress")
    });
    pane.keys(&["Enter"]);
    pane.wait_for_text("› /init");
    pane.wait_for_text("│ idle");
    assert_eq!(run.last_request().last().map(String::as_str), Some("/init"));
    // `/rev` Tab: `/review ` to say what to review, then Enter sends it all.
    pane.type_text("/rev");
    pane.wait_for_text("/review");
    pane.keys(&["Tab"]);
    pane.type_text("the tests");
    pane.keys(&["Enter"]);
    pane.wait_for_text("› /review the tests");
    pane.wait_for("the turn's end", |screen| {
        screen.matches("Hello from the demo ACP agent").count() == 2 && screen.contains("│ idle")
    });
    assert_eq!(
        run.last_request().last().map(String::as_str),
        Some("/review the tests")
    );
}

#[test]
fn the_agents_commands_fit_a_small_screen() {
    let Some(run) = launch("acp", (60, 20)) else {
        return;
    };
    let pane = &run.chat.pane;
    // Typed before the agent announced its commands or after: the popup shows them.
    pane.type_text("/re");
    let popup = pane.wait_for_text("/review");
    eprintln!("the /re popup at 60x20:\n{popup}");
    let retry = row_of(&popup, "/retry").expect("agentty's /retry");
    let review = row_of(&popup, "/review").unwrap();
    assert!(retry < review, "{popup}");
    assert!(popup.contains("demo's"), "{popup}");
}

#[test]
fn claudes_commands_from_initialize_are_offered_and_sent_as_its_user_line() {
    let Some(run) = launch("stream", (160, 50)) else {
        return;
    };
    let pane = &run.chat.pane;
    pane.wait_for_text("· stream");
    pane.type_text("/si");
    let popup = pane.wait_for_text("/simplify");
    eprintln!("the /si popup at 160x50:\n{popup}");
    assert!(
        popup.contains("demo's · Review the changed code and simplify it [<target>]"),
        "{popup}"
    );
    pane.keys(&["Tab"]);
    pane.type_text("the parser");
    pane.keys(&["Enter"]);
    let done = pane.wait_for_text("heard: '/simplify the parser'");
    assert!(!done.contains("Unknown command"), "{done}");
}
