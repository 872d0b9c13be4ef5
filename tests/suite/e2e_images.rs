//! End-to-end (issue 28): the real `agentty` binary in tmux at 60x18 on the demo agent's pi RPC
//! mode: a bracketed paste of an image file's path becomes a chip, the prompt goes with the
//! image (the demo agent says what it received), the transcript shows the chip, and an `@`
//! mention of the image attaches it again, Backspace taking it whole.

use crate::support::tmux;

use tmux::{shell_quote, socket_name, tmux_available, Pane};

const READY: &str = "/ commands · @ files";

/// Ends the tmux server however the test ends.
struct Server(Pane);

impl Drop for Server {
    fn drop(&mut self) {
        self.0.kill_server();
    }
}

#[test]
fn a_pasted_image_path_is_sent_as_an_image_and_shown_as_a_chip() {
    if !tmux_available() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.resize(1500, 0x42);
    let shot = work.path().join("shot.png");
    std::fs::write(&shot, &png).unwrap();
    std::fs::write(state.path().join("config.toml"), "").unwrap();
    let command = format!(
        "cd {work} && AGENTTY_STATE_DIR={state} {bin} --config {config} --provider demo \
         --transport rpc",
        work = shell_quote(&work.path().display().to_string()),
        state = shell_quote(&state.path().display().to_string()),
        bin = shell_quote(env!("CARGO_BIN_EXE_agentty")),
        config = shell_quote(&state.path().join("config.toml").display().to_string()),
    );
    let server = Server(Pane::spawn(socket_name("agentty-images"), 60, 18, &command));
    let pane = &server.0;
    pane.wait_for_text(READY);
    pane.type_text("describe ");
    // A terminal's drag and drop: the path, quoted, as one bracketed paste.
    pane.tmux(&[
        "set-buffer",
        "-b",
        "shot",
        &shell_quote(&shot.display().to_string()),
    ]);
    pane.tmux(&["paste-buffer", "-p", "-b", "shot", "-t", pane.target]);
    pane.wait_for_text("describe [image: shot.png 1 KB]");
    pane.type_text("please");
    pane.keys(&["Enter"]);
    let screen = pane.wait_for_text("I see an image (png, 1500 bytes).");
    assert!(
        screen.contains("› describe [image: shot.png 1 KB] please"),
        "{screen}"
    );
    pane.wait_for_text("│ idle");
    pane.type_text("again @shot");
    pane.wait_for_text("shot.png");
    pane.keys(&["Tab"]);
    pane.wait_for_text("again [image: shot.png 1 KB]");
    pane.keys(&["BSpace", "BSpace"]);
    pane.wait_for("the chip gone in one Backspace", |screen| {
        screen.lines().any(|line| line.trim_end() == "again")
    });
}
