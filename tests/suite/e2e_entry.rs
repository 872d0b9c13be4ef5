//! Coming into and leaving the chat, end to end: the real `agentty` in tmux. A prompt on the
//! command line is sent as the chat opens; leaving a conversation that has turns prints the
//! way back to it; an agent CLI that is not installed is said at once, with its install command.

use crate::support::chat_pane;
use crate::support::tmux;

use agentty::session_log::read_summary;
use chat_pane::{ChatPane, StateDir};

const SIZE: (u16, u16) = (100, 30);
const SMALL: (u16, u16) = (60, 18);

#[test]
fn a_prompt_on_the_command_line_is_sent_as_the_chat_opens() {
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    let Some(chat) = ChatPane::launch(
        &state,
        cwd.path(),
        "",
        &["--provider", "demo", "fix the tests please"],
        SIZE,
    ) else {
        return;
    };
    // The demo agent quotes the prompt it was sent: it went to the agent, not the composer.
    let screen = chat.wait_for("the first answer", |screen| {
        screen.contains("Prompt 1 in session") && screen.contains("│ idle")
    });
    assert!(screen.contains("fix the tests please"), "{screen}");
    chat.quit();
    let logs = state.logs();
    assert_eq!(logs.len(), 1);
    let text = std::fs::read_to_string(&logs[0]).unwrap();
    assert!(text.contains("fix the tests please"), "{text}");
}

#[test]
fn leaving_a_conversation_with_turns_prints_how_to_come_back() {
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    let Some(chat) = ChatPane::launch(&state, cwd.path(), "", &["--provider", "demo"], SMALL)
    else {
        return;
    };
    chat.wait_until_ready();
    chat.prompt("remember the word kestrel");
    chat.wait_for("the answer", |screen| {
        screen.contains("Prompt 1 in") && screen.contains("idle")
    });
    chat.quit();
    chat.assert_exited_restored("0");
    let screen = chat.screen();
    let log = &state.logs()[0];
    let id = read_summary(log).unwrap().id;
    // The hint may wrap at 60 columns: compare it joined.
    let joined: String = screen.lines().map(str::trim_end).collect();
    assert!(
        joined.contains(&format!(
            "To continue this conversation: agentty --resume {id}"
        )),
        "{screen}"
    );
    drop(chat);

    // The printed command does come back to it.
    let Some(again) = ChatPane::launch(&state, cwd.path(), "", &["--resume", &id], SIZE) else {
        return;
    };
    let screen = again.wait_for_text("Resumed conversation");
    assert!(screen.contains("remember the word kestrel"), "{screen}");
    again.quit();
}

#[test]
fn leaving_a_chat_without_turns_prints_no_hint() {
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    let Some(chat) = ChatPane::launch(&state, cwd.path(), "", &["--provider", "demo"], SIZE) else {
        return;
    };
    chat.wait_until_ready();
    chat.quit();
    chat.assert_exited_restored("0");
    let screen = chat.screen();
    assert!(!screen.contains("--resume"), "{screen}");
}

#[test]
fn an_agent_cli_that_is_not_installed_is_said_at_once() {
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    // A PATH without any agent CLI on it.
    let empty_bin = tempfile::tempdir().unwrap();
    let prefix = format!(
        "PATH={}:/usr/bin:/bin;",
        tmux::shell_quote(empty_bin.path().to_str().unwrap())
    );
    let Some(chat) = ChatPane::launch(&state, cwd.path(), &prefix, &["--provider", "claude"], SIZE)
    else {
        return;
    };
    if std::path::Path::new("/usr/bin/claude").exists() {
        return;
    }
    let screen = chat.wait_for_text("claude is not installed");
    let joined: String = screen
        .lines()
        .map(|line| line.trim().trim_start_matches('│').trim())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        joined.contains("npm install -g @anthropic-ai/claude-code"),
        "{screen}"
    );
    // Before any prompt was sent.
    assert!(!screen.contains("Retry"), "{screen}");
    chat.quit();
}

#[test]
fn export_writes_the_conversation_as_markdown_and_never_overwrites() {
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    let Some(chat) = ChatPane::launch(&state, cwd.path(), "", &["--provider", "demo"], SIZE) else {
        return;
    };
    chat.wait_until_ready();
    chat.prompt("a thinking question");
    chat.wait_for("the first answer", |screen| screen.contains("│ idle"));
    chat.prompt("now use a tool");
    chat.wait_for("the tool turn", |screen| {
        screen.contains("Prompt 2 in")
            || (screen.contains("│ idle") && screen.contains("now use a tool"))
    });
    chat.wait_for("the second turn to end", |screen| screen.contains("│ idle"));
    chat.prompt("/export");
    let screen = chat.wait_for_text("Exported the conversation to");
    let id = read_summary(&state.logs()[0]).unwrap().id;
    let path = cwd.path().join(format!("agentty-{}.md", &id[..8]));
    let markdown = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}\n{screen}", path.display()));
    assert!(
        markdown.starts_with("# Conversation with demo\n"),
        "{markdown}"
    );
    assert!(
        markdown.contains("## Prompt 1\n\n> a thinking question\n"),
        "{markdown}"
    );
    assert!(
        markdown.contains("## Prompt 2\n\n> now use a tool\n"),
        "{markdown}"
    );
    assert!(
        markdown.contains("<details><summary>Thinking</summary>"),
        "{markdown}"
    );
    assert!(markdown.contains("<details><summary>Tool: "), "{markdown}");
    assert!(!markdown.contains('\u{1b}'), "{markdown}");
    // Again: the file is there, and stays as it is.
    chat.prompt("/export");
    chat.wait_for_text("already exists");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), markdown);
    // A name of one's own.
    chat.prompt("/export notes.md");
    chat.wait_for_text("notes.md");
    assert_eq!(
        std::fs::read_to_string(cwd.path().join("notes.md")).unwrap(),
        markdown
    );
    chat.quit();
}
