//! End-to-end in tmux, through the chat pane helper: what the user chose holds across a plain
//! `--resume` (the transport, the model and the mode of an ACP conversation, with no flag
//! repeated; a flag given overrides and says so), the `/rewind` picker after a resume (each
//! prompt once however often it was retried, its real age, prompt numbers, only the choices
//! that can go back), the way back printed after a rewind to before the first prompt, and a
//! rate limit retried on the default settings with a countdown that Esc cancels. What the agent
//! received is read from the demo agent's request and settings logs.

use std::time::Duration;

use agentty::demo_agent::state::DemoRequest;

use crate::support::chat_pane::{ChatPane, StateDir};

/// A new conversation on the demo agent over ACP.
const ACP: &[&str] = &["--provider", "demo", "--transport", "acp"];

/// The chat on the demo agent in `work`, with the demo's state in the state dir.
fn launch(state: &StateDir, work: &std::path::Path, args: &[&str]) -> Option<ChatPane> {
    let prefix = format!(
        "AGENTTY_DEMO_STATE_DIR={}/demo AGENTTY_DEMO_TIME_SCALE=0.1",
        state.path().display()
    );
    let chat = ChatPane::launch(state, work, &prefix, args, (160, 40))?;
    chat.wait_for_text("Ask the agent anything");
    Some(chat)
}

fn requests(state: &StateDir) -> Vec<DemoRequest> {
    std::fs::read_to_string(state.path().join("demo/requests.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Esc Esc as a person presses it (two Escs in one write read as one key).
fn esc_esc(chat: &ChatPane) {
    chat.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(150));
    chat.keys(&["Escape"]);
}

fn settings_log(state: &StateDir) -> String {
    std::fs::read_to_string(state.path().join("demo/settings.jsonl")).unwrap_or_default()
}

/// Leaves the chat once its turn is over: the screen it left (the way back printed).
fn leave(chat: &ChatPane) -> String {
    chat.wait_for("the turn to end", |screen| screen.contains("│ idle"));
    chat.quit();
    chat.wait_for_text("agentty exited 0")
}

#[test]
fn a_plain_resume_of_an_acp_conversation_keeps_its_transport_model_and_mode() {
    let (state, work) = (StateDir::new(), tempfile::tempdir().unwrap());
    let Some(chat) = launch(&state, work.path(), ACP) else {
        return;
    };
    chat.prompt("/model");
    chat.wait_for_text("Demo ACP Two");
    chat.keys(&["Down", "Enter"]);
    chat.wait_for_text("Model: Demo ACP Two");
    chat.keys(&["BTab"]);
    chat.wait_for_text("Mode: Accept edits");
    chat.prompt("hello");
    chat.wait_for_text("Hello from the demo ACP agent");
    let left = leave(&chat);
    assert!(left.contains("agentty --resume "), "{left}");
    drop(chat);

    // No --provider, no --transport, no --model: all from the conversation's log.
    let Some(chat) = launch(&state, work.path(), &["--resume"]) else {
        return;
    };
    let resumed = chat.wait_for("the model and mode", |screen| {
        screen.contains("Demo ACP Two") && screen.contains("mode Accept edits")
    });
    eprintln!("a plain --resume:\n{resumed}");
    let bar = resumed.lines().rev().find(|line| !line.trim().is_empty());
    assert!(
        bar.is_some_and(|bar| bar.contains("demo · Demo ACP Two · mode Accept edits")),
        "{resumed}"
    );
    assert!(resumed.contains("· acp"), "over ACP again:\n{resumed}");
    // At 50 columns the bar keeps the model and the mode (less useful words go first).
    chat.tmux(&["resize-window", "-t", chat.target, "-x", "50"]);
    let narrow = chat.wait_for("the bar at 50 columns", |screen| {
        screen
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .is_some_and(|bar| {
                bar.chars().count() <= 50
                    && bar.contains("Demo ACP Two")
                    && bar.contains("Accept edits")
            })
    });
    eprintln!("the resumed chat at 50 columns:\n{narrow}");
    chat.tmux(&["resize-window", "-t", chat.target, "-x", "160"]);
    chat.prompt("and again");
    chat.wait_for("the second answer", |screen| {
        screen.matches("Hello from the demo ACP agent").count() == 2
    });
    let sent = requests(&state);
    let last = sent.last().unwrap();
    assert_eq!(last.messages, ["hello", "and again"]);
    assert_eq!(last.model.as_deref(), Some("demo-acp-2"));
    // The loaded session kept both: neither was asked for again.
    let logged = settings_log(&state);
    assert_eq!(
        logged.matches(r#""session/set_model""#).count(),
        1,
        "{logged}"
    );
    assert_eq!(
        logged.matches(r#""session/set_mode""#).count(),
        1,
        "{logged}"
    );
    leave(&chat);
    drop(chat);

    // A flag given overrides the log, and a notice says what changed.
    let Some(chat) = launch(&state, work.path(), &["--resume", "--transport", "json"]) else {
        return;
    };
    let overridden = chat.wait_for_text("--transport json: this conversation ran over acp");
    eprintln!("--resume --transport json:\n{overridden}");
}

#[test]
fn after_a_resume_the_rewind_picker_lists_each_prompt_once_with_its_real_age() {
    let (state, work) = (StateDir::new(), tempfile::tempdir().unwrap());
    let Some(chat) = launch(&state, work.path(), ACP) else {
        return;
    };
    chat.prompt("first question");
    chat.wait_for_text("Hello from the demo ACP agent");
    chat.wait_for("idle", |screen| screen.contains("│ idle"));
    // `flaky-twice` fails twice per prompt text: on the default settings the first failure is
    // retried after a countdown, which Esc cancels; `/retry` then sends it again (a turn of its
    // own), its failure is retried, and the third attempt answers.
    chat.prompt("flaky-twice please");
    let counting = chat.wait_for_text("retrying in");
    eprintln!("the countdown:\n{counting}");
    assert!(counting.contains("Esc cancels"), "{counting}");
    chat.keys(&["Escape"]);
    chat.wait_for("the retry cancelled", |screen| screen.contains("│ idle"));
    chat.prompt("/retry");
    chat.wait_for("the retried prompt answered", |screen| {
        screen.contains("Answered on try 3") && screen.contains("│ idle")
    });
    chat.prompt("third question");
    chat.wait_for("the third answer", |screen| {
        screen.matches("Hello from the demo ACP agent").count() >= 2 && screen.contains("│ idle")
    });
    let left = leave(&chat);
    assert!(left.contains("agentty --resume "), "{left}");
    drop(chat);
    std::thread::sleep(Duration::from_secs(3));

    let Some(chat) = launch(&state, work.path(), &["--resume"]) else {
        return;
    };
    chat.wait_for_text("Resumed conversation");
    esc_esc(&chat);
    let picker = chat.wait_for_text("Rewind to before");
    eprintln!("/rewind after --resume:\n{picker}");
    let rows: Vec<&str> = picker
        .lines()
        .filter(|line| line.contains(" ago · "))
        .collect();
    assert_eq!(
        rows.len(),
        3,
        "one row per prompt, not per retry:\n{picker}"
    );
    for (row, prompt) in rows
        .iter()
        .zip(["third question", "flaky-twice please", "first"])
    {
        assert!(row.contains(prompt), "{row}");
        // Sent three seconds and more ago (the pause between the launches), not "0 s ago".
        assert!(!row.contains("0 s ago"), "{row}");
        assert!(
            !row.contains(" 1 s ago") && !row.contains("›1 s ago"),
            "{row}"
        );
    }
    // The newest prompt changed no file: only the conversation is offered.
    chat.keys(&["Enter"]);
    let choices = chat.wait_for_text("Rewind: take back what?");
    eprintln!("the choices:\n{choices}");
    assert!(choices.contains("Rewind the conversation"), "{choices}");
    assert!(
        choices.contains("│›Cancel"),
        "selected, and marked:\n{choices}"
    );
    assert!(!choices.contains("Conversation and files"), "{choices}");
    assert!(!choices.contains("Files only"), "{choices}");
    chat.keys(&["Up", "Enter"]);
    // Prompts are counted, not turns (the retry made a turn of its own).
    chat.wait_for_text("Rewound to before prompt 3");
    // Back to before the first prompt: the way back is still printed.
    chat.keys(&["C-u"]);
    esc_esc(&chat);
    chat.wait_for_text("Rewind to before");
    chat.keys(&["End", "Enter"]);
    chat.wait_for_text("Rewind: take back what?");
    chat.keys(&["Up", "Enter"]);
    chat.wait_for_text("Rewound to before prompt 1");
    chat.keys(&["C-u"]);
    chat.quit();
    let left = chat.wait_for_text("agentty exited 0");
    eprintln!("leaving after rewinding everything:\n{left}");
    assert!(left.contains("agentty --resume "), "{left}");
    drop(chat);

    let Some(chat) = launch(&state, work.path(), &["--resume"]) else {
        return;
    };
    let resumed = chat.wait_for_text("Resumed conversation");
    assert!(
        resumed.contains("rewound to before its first prompt"),
        "{resumed}"
    );
    assert!(!resumed.contains("none was completed"), "{resumed}");
}

#[test]
fn a_rate_limit_is_retried_on_the_default_settings() {
    let state = StateDir::new();
    let work = tempfile::tempdir().unwrap();
    let Some(chat) = launch(
        &state,
        work.path(),
        &["--provider", "demo", "--scenario", "flaky"],
    ) else {
        return;
    };
    chat.prompt("hello");
    // pi's 429 says "try again in 2s": the wait asked for is the countdown's.
    let counting = chat.wait_for_text("retrying in");
    eprintln!("a 429 on the defaults:\n{counting}");
    assert!(counting.contains("(attempt 2 of 3)") || counting.contains("attempt 2 of 3"));
    let answered = chat.wait_for_text("Second time lucky");
    eprintln!("retried:\n{answered}");
    assert!(!answered.contains("automatic retry is off"), "{answered}");
}
