//! End-to-end in tmux: the chat on the demo agent over the Agent Client Protocol. The agent asks
//! before it runs a command; the prompt renders over the transcript with the agent's options,
//! one key answers it, and the tool runs (or does not) accordingly; Esc rejects. Without tmux
//! these tests fail; `AGENTTY_SKIP_TMUX_TESTS=1` skips them on purpose.

use crate::support::tmux;

use tmux::tmux_available;

struct Pane {
    pane: tmux::Pane,
    state: tempfile::TempDir,
    work: tempfile::TempDir,
}

impl Pane {
    fn start(name: &str, width: u16, height: u16) -> Option<Pane> {
        Self::start_at_pace(name, width, height, "0.1")
    }

    /// With the demo agent's script time scaled by `time_scale`.
    fn start_at_pace(name: &str, width: u16, height: u16, time_scale: &str) -> Option<Pane> {
        if !tmux_available() {
            return None;
        }
        let state = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let socket = format!("agentty-perm-{}-{name}", std::process::id());
        let command = format!(
            "cd {work} && AGENTTY_STATE_DIR={state} AGENTTY_DEMO_STATE_DIR={state}/demo \
             AGENTTY_DEMO_TIME_SCALE={time_scale} exec {bin} --provider demo --transport acp",
            work = work.path().display(),
            state = state.path().display(),
            bin = env!("CARGO_BIN_EXE_agentty"),
        );
        let pane = Pane {
            pane: tmux::Pane::spawn(socket, width, height, &command),
            state,
            work,
        };
        pane.pane.wait_for_text("Ask the agent anything");
        Some(pane)
    }

    fn created(&self) -> bool {
        self.work.path().join("agentty-demo.txt").exists()
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        self.pane.kill_server();
        let _ = &self.state;
    }
}

#[test]
fn the_prompt_renders_and_one_key_allows_the_command() {
    let Some(pane) = Pane::start("allow", 160, 50) else {
        return;
    };
    pane.pane.prompt("please ask permission to create the file");
    let asked = pane.pane.wait_for_text("Permission needed");
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
    assert!(!pane.created(), "nothing ran before the answer");
    // The prompt arms after a pause with no key.
    pane.pane.wait_for_text("press a key to answer");
    pane.pane.keys(&["y"]);
    let after = pane.pane.wait_for_text("allowed once (you)");
    pane.pane.wait_for_text("Done.");
    assert!(pane.created(), "the command ran after approval");
    assert!(
        !after.contains("Permission needed"),
        "the prompt closed:\n{after}"
    );
}

#[test]
fn esc_rejects_and_the_command_never_runs_at_a_small_size() {
    let Some(pane) = Pane::start("esc", 40, 12) else {
        return;
    };
    pane.pane.prompt("permission please");
    pane.pane.wait_for_text("Reject");
    let asked = pane.pane.wait_for_text("press a key to answer");
    eprintln!("the prompt at 40x12:\n{asked}");
    pane.pane.keys(&["Escape"]);
    pane.pane.wait_for_text("refused");
    assert!(!pane.created());
    // The turn was not stopped: the agent finished it and the chat is idle again.
    pane.pane.wait_for_text("idle");
}

#[test]
fn a_prompt_that_opens_mid_sentence_takes_none_of_it_and_enter_then_allows_once() {
    let Some(pane) = Pane::start_at_pace("typing", 160, 50, "1") else {
        return;
    };
    // The agent asks 2 s after its first words, with "Always Allow" as its first option.
    pane.pane.prompt("permission-delayed please");
    pane.pane.wait_for_text("Let me look around");
    // Capitals, digits and the answer letters, one key every 50 ms: a run of typing.
    let sentence =
        "Any news? yes: 1 or 2 files, Never mind, and then say hi to everyone in the room";
    let mut opened_mid_sentence = None;
    for (index, ch) in sentence.char_indices() {
        pane.pane.type_text(&ch.to_string());
        std::thread::sleep(std::time::Duration::from_millis(50));
        if opened_mid_sentence.is_none() && index % 8 == 7 {
            let screen = pane.pane.screen();
            if screen.contains("Permission needed") {
                opened_mid_sentence = Some((index + 1, screen));
            }
        }
    }
    let (typed, screen) = opened_mid_sentence.unwrap_or_else(|| {
        panic!(
            "the prompt did not open while the sentence was typed:\n{}",
            pane.pane.screen()
        )
    });
    eprintln!("the prompt open after {typed} characters of the sentence:\n{screen}");
    assert!(typed < sentence.len(), "{screen}");
    assert!(
        screen.contains("keep typing — the prompt arms when you pause"),
        "{screen}"
    );
    // The whole sentence is in the composer; nobody answered the prompt.
    let typed_out = pane.pane.wait_for_text(sentence);
    assert!(typed_out.contains("Permission needed"), "{typed_out}");
    assert!(
        !typed_out.contains("allowed") && !typed_out.contains("refused"),
        "{typed_out}"
    );
    assert!(!pane.created(), "nothing ran");
    assert!(
        typed_out.contains("? touch agentty-demo.txt · waiting for you"),
        "the call waits for the user, it is not running:\n{typed_out}"
    );
    // After the pause it says it is armed, and stays unanswered until a key.
    let armed = pane.pane.wait_for_text("press a key to answer");
    eprintln!("armed after the pause:\n{armed}");
    assert!(
        armed.contains(" › 1 y  Allow"),
        "allow once is selected:\n{armed}"
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(!pane.created());
    assert!(pane.pane.screen().contains("press a key to answer"));
    // Enter on the fresh prompt allows once, though the agent listed "Always Allow" first.
    pane.pane.keys(&["Enter"]);
    let answered = pane.pane.wait_for_text("Done.");
    eprintln!("after Enter:\n{answered}");
    assert!(answered.contains("allowed once (you)"), "{answered}");
    assert!(!answered.contains("allowed always"), "{answered}");
    assert!(pane.created(), "the command ran after approval");
    assert!(
        answered.contains(sentence),
        "the sentence is still in the composer:\n{answered}"
    );
}

#[test]
fn r_rejects_with_a_note_that_reaches_the_agent_as_the_next_prompt() {
    let Some(pane) = Pane::start("note", 100, 30) else {
        return;
    };
    pane.pane.prompt("permission-delayed please");
    pane.pane.wait_for_text("press a key to answer");
    pane.pane.keys(&["r"]);
    pane.pane.wait_for_text("What should the agent do instead?");
    pane.pane.type_text("say hello instead");
    pane.pane.wait_for_text("› say hello instead");
    pane.pane.keys(&["Enter"]);
    // The demo agent ends the turn at the rejection (as the Claude and Codex adapters do); the
    // note then goes as the next prompt, and the agent answers it.
    let after = pane.pane.wait_for_text("Hello from the demo ACP agent");
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
fn allow_always_takes_its_capital_and_slash_permissions_lists_it() {
    let Some(pane) = Pane::start("always", 120, 30) else {
        return;
    };
    pane.pane.prompt("please ask permission to create the file");
    pane.pane.wait_for_text("press a key to answer");
    // A lower-case `a` is not "always": it is typed, and the prompt waits for the next pause.
    pane.pane.keys(&["a"]);
    pane.pane.wait_for_text("keep typing");
    pane.pane.wait_for_text("press a key to answer");
    assert!(!pane.created());
    pane.pane.keys(&["A"]);
    pane.pane.wait_for_text("Done.");
    assert!(pane.created());
    // The `a` waits in the composer; the command follows it.
    pane.pane.keys(&["BSpace"]);
    pane.pane.prompt("/permissions");
    let listed = pane
        .pane
        .wait_for_text("Answered always in this conversation");
    eprintln!("/permissions:\n{listed}");
    assert!(
        listed.contains("✓ Allow execute: touch agentty-demo.txt — Always allow (you)"),
        "{listed}"
    );
    assert!(
        listed.contains("Start a new conversation (/new)"),
        "{listed}"
    );
}
