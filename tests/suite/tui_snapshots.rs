//! The chat's visible states, built from hand-made orchestrator event sequences and keys, drawn on
//! ratatui's `TestBackend` with an injected clock, and compared with reviewed insta snapshots.
//! Alongside: the effects keys produce (commands for the orchestrator), scrolling, and the
//! guarantee that no agent-controlled control character reaches the terminal.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;

use agentty::app::state::{AppEffect, ScrollAction, StartupInfo};
use agentty::config::RetryPolicy;
use agentty::orchestrator::verdict::FailureVerdict;
use agentty::orchestrator::{Command, OrchestratorEvent, TurnOutcome};
use agentty::provider::StopProgress;
use agentty::stream::{AgentMessage, Failure, StopStage, Usage};

use crate::support::chat;

use chat::{assert_no_control_character, startup, Chat};

/// This module's helpers on the suite's test chat (a trait: each module adds its own).
trait SnapshotsChat {
    fn new() -> Self;
}

impl SnapshotsChat for Chat {
    fn new() -> Self {
        Self::with_startup(startup(
            "demo",
            Some("scripted-1"),
            Some("/home/user/.config/agentty/config.toml"),
        ))
        .announcing_session("demo", "5f0c2a9e-7d1b-4c1e-9a57-1f2e3d4c5b6a")
    }
}

fn hello_stream(chat: &mut Chat) {
    chat.start_turn(0, "Say hello and explain what you are.");
    chat.delta(100, "Hello! I am the **demo agent**, a scripted");
    chat.delta(200, " program that speaks pi's JSON mode so that");
}

#[test]
fn streaming_text() {
    let mut chat = Chat::new();
    hello_stream(&mut chat);
    insta::assert_snapshot!(chat.screen(60, 12, 1_234));
}

const MARKDOWN_ANSWER: &str = "## Plan\n\nTwo steps, *then* done:\n\n1. Read `main.rs`\n2. Fix the bug\n\n> Quoted advice.\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\nDone.\n";

#[test]
fn markdown_with_code_block() {
    let mut chat = Chat::new();
    chat.start_turn(0, "Show me a plan with code");
    // Deltas split at awkward places, as they arrive in practice.
    for (index, piece) in MARKDOWN_ANSWER
        .as_bytes()
        .chunks(7)
        .map(|chunk| std::str::from_utf8(chunk).unwrap())
        .enumerate()
    {
        chat.delta(10 * index as u64, piece);
    }
    chat.complete(
        2_000,
        Some(Usage {
            input_tokens: Some(1_234),
            output_tokens: Some(56),
            cost_usd: Some(0.0123),
            ..Usage::default()
        }),
    );
    insta::assert_snapshot!(chat.screen(60, 26, 2_000));
}

#[test]
fn code_block_is_highlighted() {
    let mut chat = Chat::new();
    chat.start_turn(0, "code");
    chat.delta(10, "```rust\nfn main() { let answer = 42; }\n```\n");
    chat.complete(20, None);
    let terminal = chat.terminal(60, 10, 20);
    let buffer = terminal.backend().buffer();
    let row = (0..10)
        .find(|&y| {
            (0..60)
                .map(|x| buffer[(x, y)].symbol())
                .collect::<String>()
                .contains("fn main()")
        })
        .expect("the code line is on screen");
    let colours: std::collections::HashSet<_> = (0..40).map(|x| buffer[(x, row)].fg).collect();
    assert!(
        colours.len() >= 3,
        "syntax colours on the code line: {colours:?}"
    );
}

fn thinking_turn(chat: &mut Chat) {
    chat.start_turn(0, "What is 6 x 7?");
    chat.delta(100, "It is **42**.");
    chat.message(
        200,
        AgentMessage::Thought {
            text: "The user asks for a product. Six times seven is forty-two.".into(),
        },
    );
    chat.complete(300, None);
}

#[test]
fn thinking_collapsed() {
    let mut chat = Chat::new();
    thinking_turn(&mut chat);
    insta::assert_snapshot!(chat.screen(60, 10, 300));
}

#[test]
fn thinking_expanded() {
    let mut chat = Chat::new();
    thinking_turn(&mut chat);
    assert!(chat.ctrl('t').is_empty());
    insta::assert_snapshot!(chat.screen(60, 12, 300));
}

fn tool_call(chat: &mut Chat) {
    chat.start_turn(0, "List the files");
    chat.delta(50, "Let me look.");
    chat.message(
        100,
        AgentMessage::ToolCall {
            id: "call_1".into(),
            name: "bash".into(),
            input: json!({"command": "ls -la src", "timeout": 30}),
            parent_id: None,
        },
    );
}

const LONG_OUTPUT: &str = "total 48\ndrwxr-xr-x app\ndrwxr-xr-x orchestrator\n-rw-r--r-- cli.rs\n-rw-r--r-- config.rs\n-rw-r--r-- lib.rs\n-rw-r--r-- main.rs\n-rw-r--r-- stream.rs\n";

#[test]
fn tool_running() {
    let mut chat = Chat::new();
    tool_call(&mut chat);
    chat.message(
        600,
        AgentMessage::ToolUpdate {
            id: "call_1".into(),
            output: "total 48\ndrwxr-xr-x app\n".into(),
        },
    );
    insta::assert_snapshot!(chat.screen(60, 12, 3_100));
}

#[test]
fn tool_done_collapsed_then_expanded() {
    let mut chat = Chat::new();
    tool_call(&mut chat);
    chat.message(
        500,
        AgentMessage::ToolCompleted {
            id: "call_1".into(),
            output: LONG_OUTPUT.into(),
        },
    );
    chat.delta(600, "There are eight entries.");
    chat.complete(700, None);
    insta::assert_snapshot!("tool_done_collapsed", chat.screen(60, 16, 700));
    chat.ctrl('o');
    insta::assert_snapshot!("tool_done_expanded", chat.screen(60, 20, 700));
}

#[test]
fn tool_failed() {
    let mut chat = Chat::new();
    tool_call(&mut chat);
    chat.message(
        1_500,
        AgentMessage::ToolFailed {
            id: "call_1".into(),
            error: "ls: cannot access 'src': No such file or directory".into(),
        },
    );
    insta::assert_snapshot!(chat.screen(60, 12, 1_600));
}

#[test]
fn stopping_at_each_stage() {
    let mut chat = Chat::new();
    hello_stream(&mut chat);
    let effects = chat.key(KeyCode::Esc, KeyModifiers::NONE);
    assert_eq!(effects, vec![AppEffect::Command(Command::Stop)]);
    let status = |chat: &mut Chat, ms| {
        let screen = chat.screen(60, 12, ms);
        screen.lines().last().unwrap().to_owned()
    };
    assert!(status(&mut chat, 1_000).contains("stopping: requested"));
    for (ms, progress) in [
        (1_010, StopProgress::Interrupting),
        (1_020, StopProgress::Waiting),
    ] {
        chat.event(ms, OrchestratorEvent::StopProgress { turn: 1, progress });
    }
    insta::assert_snapshot!("stopping_waiting", chat.screen(60, 12, 2_420));
    // A second Esc asks again: the orchestrator skips to the kill.
    assert_eq!(
        chat.key(KeyCode::Esc, KeyModifiers::NONE),
        vec![AppEffect::Command(Command::Stop)]
    );
    chat.event(
        2_510,
        OrchestratorEvent::StopProgress {
            turn: 1,
            progress: StopProgress::Killing,
        },
    );
    assert!(status(&mut chat, 2_600).contains("stopping: killing"));
    chat.message(
        2_700,
        AgentMessage::Cancelled {
            stop_stage: StopStage::Kill,
            elapsed_ms: 1_700,
        },
    );
    chat.end(2_700, TurnOutcome::Cancelled);
    insta::assert_snapshot!("stopped_notice", chat.screen(60, 12, 2_700));
}

#[test]
fn stopping_interrupting_status() {
    let mut chat = Chat::new();
    hello_stream(&mut chat);
    chat.key(KeyCode::Esc, KeyModifiers::NONE);
    chat.event(
        1_010,
        OrchestratorEvent::StopProgress {
            turn: 1,
            progress: StopProgress::Interrupting,
        },
    );
    insta::assert_snapshot!(chat.screen(60, 6, 1_100));
}

/// Attempt 1 of turn 1 fails with `failure`, judged as the orchestrator judges it with
/// automatic retry off.
fn fail_attempt(chat: &mut Chat, ms: u64, failure: Failure) {
    let off = RetryPolicy {
        enabled: false,
        ..RetryPolicy::default()
    };
    let verdict = FailureVerdict::judge(&off, 1, &failure, false);
    chat.message(ms, AgentMessage::Failed(failure));
    chat.event(
        ms,
        OrchestratorEvent::FailureJudged {
            turn: 1,
            attempt: 1,
            verdict,
        },
    );
}

fn failed_turn(chat: &mut Chat) {
    chat.start_turn(0, "Do the thing");
    chat.delta(100, "Working on it");
    fail_attempt(
        chat,
        900,
        Failure {
            reason: agentty::stream::FailureReason::ExitNonzero,
            message: "the agent exited with status 1".into(),
            exit_code: Some(1),
            text: "Working on it".into(),
            stderr: "Error: connection reset\n    at fetch (net.js:42)\n".into(),
            invalid_output_lines: vec!["not json at all".into()],
            ..Failure::default()
        },
    );
    chat.end(
        900,
        TurnOutcome::Failed {
            reason: agentty::stream::FailureReason::ExitNonzero,
            message: "the agent exited with status 1".into(),
        },
    );
}

#[test]
fn failed_with_diagnostics() {
    let mut chat = Chat::new();
    failed_turn(&mut chat);
    insta::assert_snapshot!("failed_collapsed", chat.screen(70, 12, 1_000));
    chat.ctrl('o');
    insta::assert_snapshot!("failed_expanded", chat.screen(70, 16, 1_000));
}

#[test]
fn retry_countdown_then_next_attempt() {
    let mut chat = Chat::new();
    chat.start_turn(0, "Hello");
    chat.event(
        0,
        OrchestratorEvent::AttemptStarted {
            turn: 1,
            attempt: 1,
            max_attempts: 3,
        },
    );
    chat.delta(100, "Partial ans");
    chat.message(
        200,
        AgentMessage::Failed(Failure {
            reason: agentty::stream::FailureReason::AgentError,
            message: "429 Too Many Requests".into(),
            http_status: Some(429),
            ..Failure::default()
        }),
    );
    chat.event(
        200,
        OrchestratorEvent::RetryScheduled {
            turn: 1,
            attempt: 2,
            max_attempts: 3,
            delay_ms: 4_000,
            reason: "rate limited (HTTP 429)".into(),
        },
    );
    insta::assert_snapshot!("retry_countdown", chat.screen(70, 12, 1_300));
    chat.event(
        4_200,
        OrchestratorEvent::AttemptStarted {
            turn: 1,
            attempt: 2,
            max_attempts: 3,
        },
    );
    chat.delta(4_300, "The full answer.");
    chat.complete(4_400, None);
    insta::assert_snapshot!("retry_succeeded", chat.screen(70, 14, 4_400));
}

#[test]
fn menu_open_after_a_failed_turn() {
    let mut chat = Chat::new();
    failed_turn(&mut chat);
    assert!(chat.ctrl('x').is_empty());
    insta::assert_snapshot!(chat.screen(70, 18, 1_000));
    // The first item is "Retry last turn", enabled after a failure.
    assert_eq!(
        chat.press(KeyCode::Enter),
        vec![AppEffect::Command(Command::RetryLastTurn)]
    );
    assert!(chat.state.overlay.is_none());
}

#[test]
fn help_overlay() {
    let mut chat = Chat::new();
    chat.press(KeyCode::F(1));
    insta::assert_snapshot!(chat.screen(80, 24, 0));
    chat.press(KeyCode::Esc);
    assert!(chat.state.overlay.is_none());
}

#[test]
fn settings_overlay_edits_and_saves_the_retry_policy() {
    let mut chat = Chat::new();
    chat.type_text("/settings");
    chat.press(KeyCode::Enter);
    chat.press(KeyCode::Right); // enabled: on (the default) -> off
    chat.press(KeyCode::Down);
    chat.press(KeyCode::Right); // 3 -> 4 attempts
    insta::assert_snapshot!(chat.screen(70, 14, 0));
    let effects = chat.press(KeyCode::Enter);
    let expected = RetryPolicy {
        enabled: false,
        max_attempts: 4,
        ..RetryPolicy::default()
    };
    assert_eq!(
        effects,
        vec![
            AppEffect::Command(Command::SetRetryPolicy(expected.clone())),
            AppEffect::SaveRetryPolicy(expected.clone()),
        ]
    );
    assert_eq!(chat.state.retry_policy, expected);
}

#[test]
fn queued_prompt() {
    let mut chat = Chat::new();
    hello_stream(&mut chat);
    chat.type_text("and then list files");
    assert_eq!(
        chat.press(KeyCode::Enter),
        vec![
            AppEffect::Command(Command::Submit("and then list files".into())),
            AppEffect::SavePrompt("and then list files".into())
        ]
    );
    chat.event(
        300,
        OrchestratorEvent::QueueChanged {
            queued: vec!["and then list files".into()],
        },
    );
    insta::assert_snapshot!(chat.screen(60, 12, 500));
}

const HOSTILE: &str =
    "clear\x1b[2J title\x1b]0;pwned\x07 clip\x1b]52;c;aGk=\x07 csi\u{9b}31m bell\x07 cr\rover";

#[test]
fn escape_sequences_neutralised() {
    let mut chat = Chat::new();
    chat.start_turn(0, "print escapes");
    chat.message(
        10,
        AgentMessage::Thought {
            text: format!("thinking {HOSTILE}"),
        },
    );
    chat.delta(20, &format!("text {HOSTILE}\n"));
    chat.message(
        30,
        AgentMessage::ToolCall {
            id: "t".into(),
            name: "bash\x1b[31m".into(),
            input: json!({"command": format!("echo {HOSTILE}")}),
            parent_id: None,
        },
    );
    chat.message(
        40,
        AgentMessage::ToolCompleted {
            id: "t".into(),
            output: format!("out {HOSTILE}"),
        },
    );
    fail_attempt(
        &mut chat,
        50,
        Failure {
            reason: agentty::stream::FailureReason::ExitNonzero,
            message: format!("msg {HOSTILE}"),
            stderr: format!("err {HOSTILE}"),
            invalid_output_lines: vec![format!("bad {HOSTILE}")],
            ..Failure::default()
        },
    );
    chat.message(
        60,
        AgentMessage::Notice {
            kind: "warning".into(),
            message: format!("note {HOSTILE}"),
        },
    );
    chat.end(
        60,
        TurnOutcome::Failed {
            reason: agentty::stream::FailureReason::ExitNonzero,
            message: String::new(),
        },
    );
    chat.ctrl('t');
    chat.ctrl('o');
    let terminal = chat.terminal(100, 40, 100);
    assert_no_control_character(&terminal);
    insta::assert_snapshot!(terminal.backend().to_string());
}

#[test]
fn the_status_bar_names_the_model_from_the_session_start_while_the_turn_runs() {
    let mut chat = Chat::new();
    chat.start_turn(0, "hi");
    chat.message(
        5,
        AgentMessage::SessionStarted {
            provider: "claude".into(),
            session_id: Some("11111111-2222-4333-8444-555555555555".into()),
            model: Some("claude-opus-4-8".into()),
        },
    );
    chat.delta(10, "still writing");
    let screen = chat.screen(160, 8, 20);
    let status = screen.lines().last().unwrap();
    assert!(status.contains("· claude-opus-4-8"), "{screen}");
}

#[test]
fn escape_sequences_in_the_model_name_are_neutralised() {
    let mut chat = Chat::new();
    chat.start_turn(0, "which model?");
    chat.delta(10, "this one\n");
    chat.complete(
        20,
        Some(Usage {
            model: Some(format!("model {HOSTILE}")),
            ..Usage::default()
        }),
    );
    let terminal = chat.terminal(160, 10, 20);
    assert_no_control_character(&terminal);
    assert!(
        terminal.backend().to_string().contains("model clear␛[2J"),
        "the model is shown, inert: {}",
        terminal.backend()
    );
}

#[test]
fn agent_retry_marks_partial_text_superseded() {
    let mut chat = Chat::new();
    chat.start_turn(0, "Hi");
    chat.delta(10, "First try that will be");
    chat.message(
        20,
        AgentMessage::Notice {
            kind: "agent_retry".into(),
            message: "overloaded, retrying (attempt 2)".into(),
        },
    );
    chat.delta(30, "Second try, complete.");
    chat.complete(40, None);
    insta::assert_snapshot!(chat.screen(60, 12, 40));
    assert_eq!(
        chat.state.last_answer().as_deref(),
        Some("Second try, complete.")
    );
}

fn long_transcript(chat: &mut Chat, turns: usize) {
    for index in 0..turns {
        chat.start_turn(0, &format!("question {index}"));
        chat.delta(1, &format!("answer {index}"));
        chat.complete(2, None);
    }
}

#[test]
fn follows_the_stream_at_the_bottom() {
    let mut chat = Chat::new();
    long_transcript(&mut chat, 20);
    chat.start_turn(0, "last question");
    chat.delta(1, "streaming tail");
    let screen = chat.screen(40, 10, 10);
    assert!(screen.contains("streaming tail"), "{screen}");
    chat.delta(2, " grows");
    let screen = chat.screen(40, 10, 10);
    assert!(screen.contains("streaming tail grows"), "{screen}");
}

#[test]
fn scrolled_up_stays_put_and_shows_new_output_indicator() {
    let mut chat = Chat::new();
    long_transcript(&mut chat, 20);
    chat.screen(40, 10, 10);
    chat.scroll(ScrollAction::PageUp, 10);
    chat.scroll(ScrollAction::PageUp, 10);
    let before = chat.screen(40, 10, 10);
    assert!(!before.contains("answer 19"), "{before}");
    assert!(!before.contains("new output"), "{before}");
    chat.start_turn(20, "another");
    chat.delta(30, "new text arriving");
    let after = chat.screen(40, 10, 40);
    insta::assert_snapshot!(after);
    // The same transcript rows stay on screen (the top six rows are unchanged).
    let top = |screen: &str| {
        screen
            .lines()
            .take(6)
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(top(&before), top(&after));
    // End follows again.
    chat.scroll(ScrollAction::Bottom, 50);
    let bottom = chat.screen(40, 10, 50);
    assert!(bottom.contains("new text arriving") && !bottom.contains("new output"));
}

#[test]
fn scrolling_down_to_the_end_resumes_following() {
    let mut chat = Chat::new();
    long_transcript(&mut chat, 10);
    chat.screen(40, 10, 0);
    chat.scroll(ScrollAction::Lines(-6), 0);
    assert!(!chat.state.transcript_scroll.follows());
    chat.scroll(ScrollAction::Lines(6), 0);
    assert!(chat.state.transcript_scroll.follows());
    chat.scroll(ScrollAction::Top, 0);
    let top = chat.screen(40, 10, 0);
    assert!(top.contains("question 0"), "{top}");
}

#[test]
fn click_toggles_one_thinking_block() {
    let mut chat = Chat::new();
    thinking_turn(&mut chat);
    let screen = chat.screen(60, 10, 300);
    let row = screen
        .lines()
        .position(|line| line.contains("Thinking"))
        .unwrap() as u16;
    let cell = chat
        .view
        .transcript
        .cell_at(3, row)
        .expect("a cell under the click");
    assert!(chat.state.toggle_cell(cell));
    assert!(chat.screen(60, 10, 300).contains("forty-two"));
}

#[test]
fn keys_drive_the_orchestrator() {
    let mut chat = Chat::new();
    // Idle: Esc does nothing, an empty Enter sends nothing.
    assert!(chat.press(KeyCode::Esc).is_empty());
    assert!(chat.press(KeyCode::Enter).is_empty());
    // Multi-line input: Alt+Enter and Shift+Enter insert newlines.
    chat.type_text("one");
    chat.key(KeyCode::Enter, KeyModifiers::ALT);
    chat.type_text("two");
    chat.key(KeyCode::Enter, KeyModifiers::SHIFT);
    chat.type_text("three");
    assert_eq!(
        chat.press(KeyCode::Enter),
        vec![
            AppEffect::Command(Command::Submit("one\ntwo\nthree".into())),
            AppEffect::SavePrompt("one\ntwo\nthree".into())
        ]
    );
    // Up on an empty input recalls it.
    chat.press(KeyCode::Up);
    assert_eq!(chat.state.composer.text(), "one\ntwo\nthree");
    chat.press(KeyCode::Down);
    assert_eq!(chat.state.composer.text(), "");
    // Ctrl+C while a turn runs stops it; a second one more than a second later only arms the
    // quit (the turn is over), and the next one quits.
    let ctrl_c_at = |chat: &mut Chat, ms: u64| {
        let now = chat.at(ms);
        chat.state.on_key_at(
            KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
            now,
        )
    };
    chat.start_turn(0, "x");
    assert_eq!(
        ctrl_c_at(&mut chat, 100),
        vec![AppEffect::Command(Command::Stop)]
    );
    chat.end(200, TurnOutcome::Cancelled);
    chat.state.on_clock(chat.at(1_200));
    assert!(ctrl_c_at(&mut chat, 1_300).is_empty());
    assert!(chat.screen(60, 8, 1_300).contains("Ctrl+C again to quit"));
    assert_eq!(ctrl_c_at(&mut chat, 1_500), vec![AppEffect::Leave]);
    // The chat's way out (the same for a signal or a lost terminal) asks for the shutdown.
    assert_eq!(
        chat.state.begin_quit(),
        vec![AppEffect::Command(Command::Shutdown)]
    );
    assert!(chat.state.quitting);
    // The orchestrator's ShutDown ends the loop.
    assert_eq!(
        chat.event(20, OrchestratorEvent::ShutDown),
        vec![AppEffect::Exit]
    );
}

#[test]
fn another_key_disarms_the_quit() {
    let mut chat = Chat::new();
    chat.ctrl('c');
    chat.press(KeyCode::Char('x'));
    assert!(chat.ctrl('c').is_empty());
    assert!(!chat.state.quitting);
}

#[test]
fn slash_commands_run_menu_actions() {
    let mut chat = Chat::new();
    chat.type_text("/retry");
    assert!(
        chat.press(KeyCode::Enter).is_empty(),
        "nothing to retry yet"
    );
    failed_turn(&mut chat);
    chat.type_text("/retry");
    assert_eq!(
        chat.press(KeyCode::Enter),
        vec![AppEffect::Command(Command::RetryLastTurn)]
    );
    chat.type_text("/new");
    assert_eq!(chat.press(KeyCode::Enter), vec![AppEffect::NewConversation]);
    chat.type_text("/resume");
    assert_eq!(
        chat.press(KeyCode::Enter),
        vec![AppEffect::ListConversations]
    );
    chat.type_text("/provider claude");
    assert_eq!(
        chat.press(KeyCode::Enter),
        vec![AppEffect::SwitchProvider("claude".into())]
    );
    assert_eq!(chat.state.provider, "claude");
    chat.type_text("/bogus");
    assert!(chat.press(KeyCode::Enter).is_empty());
    assert!(chat.screen(80, 20, 0).contains("Unknown command /bogus"));
}

#[test]
fn copy_last_answer_uses_the_clipboard_effect() {
    let mut chat = Chat::new();
    thinking_turn(&mut chat);
    chat.type_text("/copy");
    assert_eq!(
        chat.press(KeyCode::Enter),
        vec![AppEffect::Copy("It is **42**.".into())]
    );
}

#[test]
fn orchestrator_gone_is_shown_and_quit_exits_at_once() {
    let mut chat = Chat::new();
    assert!(chat.state.on_orchestrator_gone().is_empty());
    chat.type_text("hello");
    assert!(chat.press(KeyCode::Enter).is_empty());
    let screen = chat.screen(80, 12, 0);
    assert!(screen.contains("agent runner"), "{screen}");
    // The unsent prompt is cleared first (and stays recallable), then Ctrl+C twice quits.
    assert!(chat.ctrl('c').is_empty());
    assert_eq!(chat.state.composer.text(), "");
    chat.ctrl('c');
    assert_eq!(chat.ctrl('c'), vec![AppEffect::Leave]);
    // With no orchestrator to wait for, the way out ends the loop at once.
    assert_eq!(chat.state.begin_quit(), vec![AppEffect::Exit]);
}

#[test]
fn startup_warnings_are_shown() {
    let mut chat = Chat::with_startup(StartupInfo {
        provider: "pi".into(),
        warnings: vec!["config.toml: unknown field `colour`; using defaults".into()],
        ..StartupInfo::default()
    });
    insta::assert_snapshot!(chat.screen(70, 8, 0));
}

#[test]
fn ctrl_c_while_quitting_leaves_at_once() {
    let mut chat = Chat::new();
    chat.start_turn(0, "long job");
    chat.type_text("/quit");
    assert_eq!(chat.press(KeyCode::Enter), vec![AppEffect::Leave]);
    assert_eq!(
        chat.state.begin_quit(),
        vec![AppEffect::Command(Command::Shutdown)]
    );
    assert!(chat
        .screen(60, 6, 100)
        .contains("quitting: stopping the agent"));
    // Impatient: the way out is asked again, and stops waiting (killing whatever is left).
    assert_eq!(chat.ctrl('c'), vec![AppEffect::Leave]);
}

// ---- the transcript never splits a live block ----

#[test]
fn a_notice_while_an_answer_streams_does_not_cut_it_in_two() {
    let mut chat = Chat::new();
    chat.start_turn(0, "show code");
    chat.delta(10, "Here:\n\n```rust\nfn main() {\n");
    chat.type_text("/log");
    chat.press(KeyCode::Enter);
    chat.delta(20, "\tprintln!(\"hi\");\n}\n```\n\nDone.");
    chat.complete(30, None);
    chat.end(40, TurnOutcome::Completed);
    let answers = chat
        .state
        .transcript
        .cells()
        .iter()
        .filter(|cell| matches!(cell.body, agentty::app::transcript::CellBody::Assistant(_)))
        .count();
    assert_eq!(answers, 1, "one answer block");
    let screen = chat.screen(80, 20, 50);
    // The whole answer first, fences paired, then the notice below it.
    let at = |text: &str| {
        screen
            .find(text)
            .unwrap_or_else(|| panic!("{text:?} not on screen:\n{screen}"))
    };
    assert!(at("```rust") < at("println!") && at("println!") < at("Done."));
    assert!(at("Done.") < at("Log file:"), "{screen}");
    assert_eq!(screen.matches("```").count(), 2, "{screen}");
    // The copy is the whole source, tab included.
    chat.type_text("/copy");
    assert_eq!(
        chat.press(KeyCode::Enter),
        vec![AppEffect::Copy(
            "Here:\n\n```rust\nfn main() {\n\tprintln!(\"hi\");\n}\n```\n\nDone.".into()
        )]
    );
}

#[test]
fn copy_takes_every_answer_block_of_the_last_turn() {
    let mut chat = Chat::new();
    chat.start_turn(0, "look around");
    chat.delta(10, "First I look.");
    chat.message(
        20,
        AgentMessage::ToolCall {
            id: "t1".into(),
            name: "bash".into(),
            input: serde_json::json!({"command": "ls"}),
            parent_id: None,
        },
    );
    chat.message(
        30,
        AgentMessage::ToolCompleted {
            id: "t1".into(),
            output: "a\nb".into(),
        },
    );
    chat.delta(40, "Then I answer.");
    chat.complete(50, None);
    chat.end(60, TurnOutcome::Completed);
    assert_eq!(
        chat.state.last_answer().as_deref(),
        Some("First I look.\n\nThen I answer.")
    );
}

#[test]
fn a_failed_tool_keeps_the_output_it_had_shown() {
    let mut chat = Chat::new();
    chat.start_turn(0, "run it");
    chat.message(
        10,
        AgentMessage::ToolCall {
            id: "t1".into(),
            name: "bash".into(),
            input: serde_json::json!({"command": "make"}),
            parent_id: None,
        },
    );
    chat.message(
        20,
        AgentMessage::ToolUpdate {
            id: "t1".into(),
            output: "compiling 1/3\ncompiling 2/3".into(),
        },
    );
    chat.message(
        2520,
        AgentMessage::ToolFailed {
            id: "t1".into(),
            error: "Command aborted".into(),
        },
    );
    let tool = chat
        .state
        .transcript
        .cells()
        .iter()
        .find_map(|cell| match &cell.body {
            agentty::app::transcript::CellBody::Tool(tool) => Some(tool.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(tool.output, "compiling 1/3\ncompiling 2/3\nCommand aborted");
    assert!(matches!(
        tool.status,
        agentty::app::transcript::ToolStatus::Failed { elapsed } if elapsed == Duration::from_millis(2510)
    ));
}

#[test]
fn a_retried_prompt_is_marked_as_a_retry() {
    let mut chat = Chat::new();
    failed_turn(&mut chat);
    chat.type_text("/retry");
    assert_eq!(
        chat.press(KeyCode::Enter),
        vec![AppEffect::Command(Command::RetryLastTurn)]
    );
    chat.start_turn(1_000, "Do the thing");
    chat.delta(1_100, "Done this time.");
    chat.complete(1_200, None);
    chat.end(1_200, TurnOutcome::Completed);
    // A new prompt after it is an ordinary one again.
    chat.start_turn(2_000, "Next thing");
    let screen = chat.screen(80, 40, 2_100);
    assert_eq!(screen.matches("› Do the thing").count(), 1, "{screen}");
    assert_eq!(screen.matches("↻ Do the thing").count(), 1, "{screen}");
    assert!(screen.contains("› Next thing"), "{screen}");
}

#[test]
fn graphemes_wrap_whole_at_odd_widths() {
    let mut chat = Chat::new();
    chat.start_turn(0, "unicode");
    chat.delta(
        10,
        "Cafe\u{301} re\u{301}sume\u{301} 👨\u{200d}👩\u{200d}👧\u{200d}👦 family 漢字かな交じり文です\n\nflags 🇫🇷🇩🇪 and na\u{303}o",
    );
    chat.complete(20, None);
    chat.end(20, TurnOutcome::Completed);
    insta::assert_snapshot!(chat.screen(21, 16, 30));
}

#[test]
fn help_shows_the_whole_session_id_the_status_bar_may_shorten() {
    let mut chat = Chat::new();
    chat.start_turn(0, "hi");
    chat.complete(10, None);
    chat.end(10, TurnOutcome::Completed);
    chat.press(KeyCode::F(1));
    let screen = chat.screen(100, 30, 20);
    assert!(
        screen.contains("Session 5f0c2a9e-7d1b-4c1e-9a57-1f2e3d4c5b6a"),
        "{screen}"
    );
    // At 40 columns the agent's line and the id wrap, nothing cut at the border: the rows'
    // text, read without the wrapping's blanks, holds the whole id.
    let narrow = chat.screen(40, 12, 20);
    eprintln!("F1 at 40x12:\n{narrow}");
    assert!(narrow.contains("│ Agent demo "), "{narrow}");
    let text: String = narrow
        .chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '│' | '"' | '↑' | '↓'))
        .collect();
    assert!(
        text.contains("Session5f0c2a9e-7d1b-4c1e-9a57-1f2e3d4c5b6a"),
        "{narrow}"
    );
}

#[test]
fn settings_choose_how_an_unfocused_terminal_is_called_back() {
    use agentty::config::NotifyMode;
    let mut chat = Chat::new();
    assert_eq!(chat.state.notify, NotifyMode::Osc, "the default");
    chat.type_text("/settings");
    chat.press(KeyCode::Enter);
    chat.press(KeyCode::End);
    chat.press(KeyCode::Left); // bell + desktop -> bell
    let screen = chat.screen(70, 16, 0);
    assert!(
        screen.contains("Call me back when unfocused") && screen.contains("bell "),
        "{screen}"
    );
    assert!(screen.contains("Not saved yet"), "{screen}");
    let effects = chat.press(KeyCode::Enter);
    // Only what changed is saved: the retry policy is left as it was.
    assert_eq!(effects, vec![AppEffect::SaveNotify(NotifyMode::Bell)]);
    assert_eq!(chat.state.notify, NotifyMode::Bell);
    assert_eq!(chat.state.retry_policy, RetryPolicy::default());
    // Opened again, the settings start from the mode in use.
    chat.type_text("/settings");
    chat.press(KeyCode::Enter);
    chat.press(KeyCode::End);
    chat.press(KeyCode::Left); // bell -> off
    chat.press(KeyCode::Enter);
    assert_eq!(chat.state.notify, NotifyMode::Off);
}

#[test]
fn a_hostile_session_id_reaches_the_status_bar_visible_and_inert() {
    let mut chat = Chat::new();
    chat.event(
        0,
        OrchestratorEvent::SessionChanged {
            session_id: Some("s\u{1b}[2J\u{202e}".into()),
        },
    );
    let terminal = chat.terminal(160, 8, 10);
    // ratatui drops a raw ESC by itself: the picture shows that agentty neutralised it, and
    // that the id is on screen at all.
    let screen = terminal.backend().to_string();
    assert!(screen.contains("session s\u{241b}[2J"), "{screen}");
    assert!(!screen.contains('\u{202e}'), "{screen}");
    assert_no_control_character(&terminal);
}

/// Ctrl+C twice within a second quits whatever the first did: it stopped a turn, cleared a
/// draft, or closed an overlay; a single Ctrl+C keeps its meaning.
#[test]
fn ctrl_c_twice_within_a_second_quits_from_any_state() {
    let ctrl_c_at = |chat: &mut Chat, ms: u64| {
        let now = chat.at(ms);
        chat.state.on_key_at(
            KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
            now,
        )
    };
    // A running turn: the first stops it, the second quits.
    let mut chat = Chat::new();
    chat.start_turn(0, "x");
    assert_eq!(
        ctrl_c_at(&mut chat, 100),
        [AppEffect::Command(Command::Stop)]
    );
    assert!(chat.screen(80, 8, 300).contains("Ctrl+C again to quit"));
    assert_eq!(ctrl_c_at(&mut chat, 900), [AppEffect::Leave]);
    // A draft: the first clears it (Up brings it back), the second quits.
    let mut chat = Chat::new();
    chat.type_text("half a thought");
    assert!(ctrl_c_at(&mut chat, 100).is_empty());
    assert!(chat.state.composer.is_empty());
    assert_eq!(ctrl_c_at(&mut chat, 1_050), [AppEffect::Leave]);
    // An overlay open: the first closes it, the second quits.
    let mut chat = Chat::new();
    chat.press(KeyCode::F(1));
    assert!(chat.state.overlay.is_some());
    assert!(ctrl_c_at(&mut chat, 100).is_empty());
    assert!(chat.state.overlay.is_none());
    assert_eq!(ctrl_c_at(&mut chat, 200), [AppEffect::Leave]);
    // More than a second apart, after a draft was cleared: the second is a single Ctrl+C
    // again (on an idle chat it arms the quit).
    let mut chat = Chat::new();
    chat.type_text("draft");
    assert!(ctrl_c_at(&mut chat, 100).is_empty());
    chat.state.on_clock(chat.at(1_200));
    assert!(!chat.state.quit_armed);
    assert!(ctrl_c_at(&mut chat, 1_300).is_empty());
    assert!(chat.state.quit_armed);
    // Another key between the two: not twice.
    let mut chat = Chat::new();
    chat.start_turn(0, "x");
    ctrl_c_at(&mut chat, 100);
    chat.type_text("a");
    assert!(ctrl_c_at(&mut chat, 300).is_empty(), "clears the `a`");
}

/// A selection never shows by colour or attributes alone: the selected row of a list is marked
/// `›` in the text itself (what `NO_COLOR` and a plain text capture still show).
#[test]
fn the_selected_row_of_every_list_is_marked_in_its_text() {
    let mut chat = Chat::new();
    chat.press(KeyCode::F(2));
    let menu = chat.screen(80, 30, 0);
    assert!(menu.contains("│›Retry last turn"), "{menu}");
    chat.press(KeyCode::Down);
    assert!(chat.screen(80, 30, 0).contains("│›Stop the running turn"));
    chat.press(KeyCode::Esc);
    chat.type_text("/re");
    let popup = chat.screen(80, 30, 0);
    assert!(popup.contains("│›/retry"), "{popup}");
}

/// `/thinking` and `/tools` with nothing to fold say so, and what the next ones will do.
#[test]
fn folding_all_with_nothing_to_fold_says_so() {
    let mut chat = Chat::new();
    chat.type_text("/thinking");
    chat.press(KeyCode::Enter);
    chat.type_text("/tools");
    chat.press(KeyCode::Enter);
    let screen = chat.screen(100, 20, 0);
    assert!(
        screen.contains("No thinking blocks to expand now; new ones start expanded."),
        "{screen}"
    );
    assert!(
        screen.contains("No tool outputs to expand now; new ones start expanded."),
        "{screen}"
    );
}
