//! End-to-end in tmux: the chat on the demo agent over the Agent Client Protocol. The agent asks
//! before it runs a command; the prompt renders over the transcript with the agent's options and
//! takes no key until Tab gives it the keys (typing with pauses goes on into the composer, and
//! Enter sends the draft); then one key answers it, and the tool runs (or does not) accordingly;
//! Esc rejects; an "always" answer takes a confirming Enter. Without tmux these tests fail;
//! `AGENTTY_SKIP_TMUX_TESTS=1` skips them on purpose.

use std::time::Duration;

use agentty::demo_agent::state::DemoRequest;

use crate::support::chat_pane::{ChatPane, StateDir};

struct Pane {
    chat: ChatPane,
    state: StateDir,
    work: tempfile::TempDir,
}

impl Pane {
    fn start(width: u16, height: u16) -> Option<Pane> {
        Self::start_at_pace(width, height, "0.1")
    }

    /// With the demo agent's script time scaled by `time_scale`.
    fn start_at_pace(width: u16, height: u16, time_scale: &str) -> Option<Pane> {
        let state = StateDir::new();
        let work = tempfile::tempdir().unwrap();
        let prefix = format!(
            "AGENTTY_DEMO_STATE_DIR={}/demo AGENTTY_DEMO_TIME_SCALE={time_scale}",
            state.path().display()
        );
        let chat = ChatPane::launch(
            &state,
            work.path(),
            &prefix,
            &["--provider", "demo", "--transport", "acp"],
            (width, height),
        )?;
        chat.wait_for_text("Ask the agent anything");
        Some(Pane { chat, state, work })
    }

    fn created(&self) -> bool {
        self.work.path().join("agentty-demo.txt").exists()
    }

    /// The prompt is open; Tab gives it the keys.
    fn focus_prompt(&self) -> String {
        self.chat.wait_for_text("Tab to answer");
        self.chat.keys(&["Tab"]);
        self.chat.wait_for_text("answer with a key")
    }

    /// What the demo agent received, prompt by prompt (its request log).
    fn requests(&self) -> Vec<Vec<String>> {
        let log = std::fs::read_to_string(self.state.path().join("demo/requests.jsonl"))
            .unwrap_or_default();
        log.lines()
            .map(|line| {
                let request: DemoRequest = serde_json::from_str(line).unwrap();
                request.messages
            })
            .collect()
    }
}

#[test]
fn the_prompt_renders_and_tab_then_one_key_allows_the_command() {
    let Some(pane) = Pane::start(160, 50) else {
        return;
    };
    pane.chat.prompt("please ask permission to create the file");
    let asked = pane.chat.wait_for_text("Permission needed");
    eprintln!("the prompt at 160x50:\n{asked}");
    assert!(
        asked.contains("Allow execute: touch agentty-demo.txt?"),
        "{asked}"
    );
    for option in [
        "1 y  Allow",
        "  A  Always allow",
        "2 n  Reject",
        "  N  Never",
    ] {
        assert!(asked.contains(option), "{option} missing:\n{asked}");
    }
    assert!(
        asked.contains("waiting for your answer"),
        "the status says so:\n{asked}"
    );
    // A long quiet gives the prompt nothing: only Tab does.
    std::thread::sleep(Duration::from_millis(1500));
    pane.chat.keys(&["y"]);
    let typed = pane.chat.wait_for_text("Tab to answer");
    assert!(!pane.created(), "nothing ran before the answer:\n{typed}");
    pane.chat.keys(&["BSpace"]);
    pane.focus_prompt();
    pane.chat.keys(&["y"]);
    let after = pane.chat.wait_for_text("allowed once (you)");
    pane.chat.wait_for_text("Done.");
    assert!(pane.created(), "the command ran after approval");
    assert!(
        !after.contains("Permission needed"),
        "the prompt closed:\n{after}"
    );
}

#[test]
fn esc_rejects_and_the_command_never_runs_at_a_small_size() {
    let Some(pane) = Pane::start(40, 12) else {
        return;
    };
    pane.chat.prompt("permission please");
    let asked = pane.focus_prompt();
    eprintln!("the prompt at 40x12:\n{asked}");
    pane.chat.keys(&["Escape"]);
    pane.chat.wait_for_text("refused");
    assert!(!pane.created());
    // The turn was not stopped: the agent finished it and the chat is idle again.
    pane.chat.wait_for_text("idle");
}

/// The issue's sequence at 100x30: `permission test` Enter, then at once `Also fix the bug. `,
/// a 1.2 s pause, `Now run the tests`: the prompt stays unanswered, every character is in the
/// composer; Enter queues the draft (and says so) without answering; the agent never ran the
/// command and received only the first prompt.
#[test]
fn typing_with_pauses_leaves_the_prompt_unanswered_and_enter_queues_the_draft() {
    let Some(pane) = Pane::start_at_pace(100, 30, "1") else {
        return;
    };
    pane.chat.prompt("permission test");
    pane.chat.type_text("Also fix the bug. ");
    std::thread::sleep(Duration::from_millis(1200));
    pane.chat.type_text("Now run the tests");
    let screen = pane
        .chat
        .wait_for("the prompt and the whole draft", |screen| {
            screen.contains("Permission needed")
                && screen.contains("Also fix the bug. Now run the tests")
        });
    // Well past any pause: still unanswered, everything typed in the composer.
    std::thread::sleep(Duration::from_millis(1500));
    let screen_later = pane.chat.screen();
    eprintln!("after typing with a 1.2 s pause:\n{screen_later}");
    for screen in [&screen, &screen_later] {
        assert!(
            screen.contains("Tab to answer — typing stays in the composer"),
            "{screen}"
        );
        assert!(
            !screen.contains("allowed") && !screen.contains("rejected"),
            "{screen}"
        );
    }
    assert!(!pane.created(), "nothing ran");
    // Enter sends the draft: queued behind the running turn, shown as queued.
    pane.chat.keys(&["Enter"]);
    let queued = pane
        .chat
        .wait_for_text("↳ queued 1: Also fix the bug. Now run the tests");
    eprintln!("after Enter:\n{queued}");
    assert!(queued.contains("Permission needed"), "{queued}");
    assert!(!pane.created());
    assert_eq!(pane.requests(), [vec!["permission test".to_owned()]]);
    // Tab, then Enter on the fresh prompt allows once.
    pane.focus_prompt();
    pane.chat.keys(&["Enter"]);
    let answered = pane.chat.wait_for("the queued prompt answered", |screen| {
        screen.contains("allowed once (you)") && screen.contains("│ idle")
    });
    assert!(pane.created(), "the command ran after approval");
    let requests = pane.requests();
    assert_eq!(
        requests.last().unwrap().last().unwrap(),
        "Also fix the bug. Now run the tests",
        "{answered}"
    );
}

#[test]
fn r_rejects_with_a_note_that_reaches_the_agent_as_the_next_prompt() {
    let Some(pane) = Pane::start(100, 30) else {
        return;
    };
    pane.chat.prompt("permission-delayed please");
    pane.focus_prompt();
    pane.chat.keys(&["r"]);
    pane.chat.wait_for_text("What should the agent do instead?");
    pane.chat.type_text("say hello instead");
    pane.chat.wait_for_text("› say hello instead");
    pane.chat.keys(&["Enter"]);
    // The demo agent ends the turn at the rejection (as the Claude and Codex adapters do); the
    // note then goes as the next prompt, and the agent answers it.
    let after = pane.chat.wait_for_text("Hello from the demo ACP agent");
    eprintln!("after rejecting with a note:\n{after}");
    for said in [
        "rejected (you) · instead: say hello instead",
        "as the next prompt: say hello instead",
        "The agent ended the turn at the rejection (Allow execute: touch agentty-demo.txt).",
        "› say hello instead",
    ] {
        assert!(after.contains(said), "{said:?} missing:\n{after}");
    }
    assert!(!pane.created(), "the rejected command never ran");
}

#[test]
fn allow_always_takes_its_capital_then_enter_and_slash_permissions_lists_it() {
    let Some(pane) = Pane::start(120, 30) else {
        return;
    };
    pane.chat.prompt("please ask permission to create the file");
    pane.focus_prompt();
    // `A` only highlights "always": the footer asks for Enter, and nothing is answered.
    pane.chat.keys(&["A"]);
    let highlighted = pane.chat.wait_for_text("Enter confirms: Always allow");
    eprintln!("A pressed:\n{highlighted}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!pane.created());
    assert!(!pane.chat.screen().contains("allowed always"));
    pane.chat.keys(&["Enter"]);
    pane.chat.wait_for_text("Done.");
    assert!(pane.created());
    // `/permissions` lists the agent's modes over the transcript; Esc leaves the list of the
    // answers given always in sight.
    pane.chat.prompt("/permissions");
    pane.chat.wait_for_text("┌ Permission mode");
    pane.chat.keys(&["Escape"]);
    let listed = pane
        .chat
        .wait_for_text("Answered always in this conversation");
    eprintln!("/permissions:\n{listed}");
    assert!(
        listed.contains("✓ Allow execute: touch agentty-demo.txt — Always allow (you)"),
        "{listed}"
    );
}
