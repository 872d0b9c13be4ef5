//! The agent's work on screen, end to end in tmux at 160x50 and 40x12, on the demo agent playing
//! each protocol as the real CLIs print it: Claude Code's task list and todo list and a
//! sub-agent with two nested calls (`--transport stream`), Codex's plan, a command it shows
//! double-quoted and a patch (`--transport app-server`), an ACP agent's plan and context usage
//! (`--transport acp`). The plan is pinned above the input while the turn runs and lands in
//! the transcript when it ends; no raw protocol text reaches the screen.

use crate::support::chat_pane;

use chat_pane::{ChatPane, StateDir};

const LARGE: (u16, u16) = (160, 50);
const SMALL: (u16, u16) = (40, 12);

/// A chat on the demo agent with its state and working directory (kept while it runs).
struct Run {
    chat: ChatPane,
    cwd: tempfile::TempDir,
    _state: StateDir,
}

/// The chat on the demo agent speaking `transport` at `size`, `prompt` sent.
fn start(transport: &str, size: (u16, u16), prompt: &str) -> Option<Run> {
    let state = StateDir::new();
    let cwd = tempfile::tempdir().unwrap();
    let chat = launch(&state, cwd.path(), transport, size)?;
    chat.prompt(prompt);
    Some(Run {
        chat,
        cwd,
        _state: state,
    })
}

/// The screen once the turn is over and `text` is on it.
fn after_turn(chat: &ChatPane, text: &str) -> String {
    chat.wait_for("the turn's end", |screen| {
        screen.contains(text) && screen.contains("│ idle")
    })
}

/// The chat on the demo agent speaking `transport`, at `size`, ready for a prompt.
fn launch(
    state: &StateDir,
    cwd: &std::path::Path,
    transport: &str,
    size: (u16, u16),
) -> Option<ChatPane> {
    let prefix = format!(
        "AGENTTY_DEMO_STATE_DIR={}/demo AGENTTY_DEMO_TIME_SCALE=1",
        state.path().display()
    );
    let chat = ChatPane::launch(
        state,
        cwd,
        &prefix,
        &["--provider", "demo", "--transport", transport],
        size,
    )?;
    // (At 40 columns the composer's hint is cut before "/ commands".)
    chat.wait_for_text("Ask the agent anything");
    Some(chat)
}

/// The rows of `screen` from the one containing `from` on.
fn rows_from<'s>(screen: &'s str, from: &str) -> Vec<&'s str> {
    screen
        .lines()
        .skip_while(|row| !row.contains(from))
        .collect()
}

#[test]
fn claudes_task_list_is_pinned_while_it_works_and_kept_after() {
    let Some(run) = start("stream", LARGE, "please do the tasks") else {
        return;
    };
    let chat = &run.chat;
    let pinned = chat.wait_for_text("≡ Plan · 1 of 2 done ─ Ctrl+P folds");
    eprintln!("Claude's task list while the turn runs, 160x50:\n{pinned}");
    let plan = rows_from(&pinned, "≡ Plan · 1 of 2 done");
    assert!(plan[1].contains("✔ Read the notes"), "{pinned}");
    assert!(plan[2].contains("Write the summary"), "{pinned}");
    assert!(
        plan[3].contains("Esc stops the turn"),
        "right above the input: {pinned}"
    );
    let done = after_turn(chat, "Both tasks are done.");
    eprintln!("after the turn, 160x50:\n{done}");
    let plan = rows_from(&done, "≡ Plan · 2 of 2 done");
    assert!(plan[1].contains("✔ Read the notes") && plan[2].contains("✔ Write the summary"));
    assert!(
        !done.contains("Ctrl+P folds"),
        "nothing pinned after the turn: {done}"
    );
    for raw in ["taskId", "TaskCreate", "TaskUpdate", "created successfully"] {
        assert!(!done.contains(raw), "{raw} on screen: {done}");
    }
    assert!(done.contains("✓ Bash · done"), "{done}");
    // The status bar names the model Claude's `init` reported, not the alias of its settings.
    assert!(
        done.contains(" demo · demo-claude-1[1m] · mode default"),
        "{done}"
    );
    chat.quit();
}

#[test]
fn claudes_todo_list_fits_a_small_screen_and_folds() {
    let Some(run) = start("stream", SMALL, "the todos please") else {
        return;
    };
    let chat = &run.chat;
    let pinned = chat.wait_for_text("◐ Read the notes");
    eprintln!("TodoWrite's plan while the turn runs, 40x12:\n{pinned}");
    assert!(pinned.contains("── ≡ Plan · 0 of 2 done"), "{pinned}");
    assert!(pinned.contains("□ Write the summary"), "{pinned}");
    chat.keys(&["C-p"]);
    let folded = chat.wait_for_text("◐ Read the");
    assert!(
        !folded.contains("□ Write the summary"),
        "folded to its header: {folded}"
    );
    let done = after_turn(chat, "≡ Plan · 2 of 2 done");
    eprintln!("after the turn, 40x12:\n{done}");
    assert!(!done.contains("todos\":"), "{done}");
    chat.quit();
}

#[test]
fn a_claude_sub_agents_calls_nest_under_its_call() {
    let Some(run) = start("stream", LARGE, "ask a helper") else {
        return;
    };
    let chat = &run.chat;
    let running = chat.wait_for_text("├ ✓ Bash · done");
    eprintln!("the sub-agent at work, 160x50:\n{running}");
    assert!(running.contains("⋯ Agent · running"), "{running}");
    let done = after_turn(chat, "The helper ran both commands.");
    eprintln!("after the turn, 160x50:\n{done}");
    let agent = rows_from(&done, "✓ Agent · done");
    assert!(agent[0].contains("Run two commands"), "{done}");
    assert!(
        agent[1].contains("├ ✓ Bash · done") && agent[1].contains("echo one"),
        "{done}"
    );
    assert!(
        agent[2].contains("├ ✓ Bash · done") && agent[2].contains("echo two"),
        "{done}"
    );
    assert!(agent[3].contains("│ Done: one and two."), "{done}");
    for raw in ["agentId", "SendMessage", "<usage>", "subagent_tokens"] {
        assert!(!done.contains(raw), "{raw} on screen: {done}");
    }
    chat.quit();
}

#[test]
fn codexs_plan_command_and_patch_read_as_written() {
    for size in [LARGE, SMALL] {
        let Some(run) = start("app-server", size, "make a plan") else {
            return;
        };
        let chat = &run.chat;
        let pinned = chat.wait_for_text("◐ Write the notes");
        eprintln!("Codex's plan while the turn runs, {size:?}:\n{pinned}");
        let done = chat.wait_for("the turn's end", |screen| {
            screen.contains("│ idle") && screen.contains("2 of 2 done")
        });
        eprintln!("after the turn, {size:?}:\n{done}");
        if size == LARGE {
            assert!(done.contains("✓ shell · done"), "{done}");
            assert!(done.contains(r"· printf 'v1\n' > notes.txt"), "{done}");
            assert!(done.contains("✓ apply_patch · done"), "{done}");
            assert!(done.contains("· notes.txt +2 −1"), "{done}");
            assert!(done.contains("│ +v3"), "the diff in the pane: {done}");
        }
        for raw in ["-lc", "\\\\n", "\"changes\"", "\"kind\""] {
            assert!(!done.contains(raw), "{raw} on screen: {done}");
        }
        assert_eq!(
            std::fs::read_to_string(run.cwd.path().join("notes.txt")).unwrap(),
            "v2\nv3\n"
        );
        chat.quit();
    }
}

#[test]
fn an_acp_agents_plan_is_pinned_and_its_context_use_shown() {
    let Some(run) = start("acp", LARGE, "make a plan please") else {
        return;
    };
    let chat = &run.chat;
    let pinned = chat.wait_for_text("── ≡ Plan · 0 of 3 done ─ Ctrl+P folds");
    eprintln!("an ACP agent's plan while the turn runs, 160x50:\n{pinned}");
    assert!(pinned.contains("◐ Read the request (high)"), "{pinned}");
    let done = after_turn(chat, "All three steps are done.");
    eprintln!("after the turn, 160x50:\n{done}");
    assert!(done.contains("≡ Plan · 3 of 3 done"), "{done}");
    // The agent's `usage_update`: 53,000 of 200,000 tokens.
    assert!(done.contains("│ ctx 27% "), "{done}");
    chat.quit();
}
