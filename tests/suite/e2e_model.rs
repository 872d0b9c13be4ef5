//! End-to-end in tmux: `/model` on the demo agent over pi's RPC transport (the stand-in for pi).
//! The picker lists the two models the agent reports, Enter switches to the second, the status
//! bar shows it, Shift+Tab steps its thinking level, and the next prompt reaches the agent's
//! "model" as that model (its `requests.jsonl`). Over ACP, Shift+Tab steps the agent's modes. Without tmux these tests fail;
//! `AGENTTY_SKIP_TMUX_TESTS=1` skips them on purpose.

use crate::support::tmux;

use agentty::demo_agent::state::{requests_file, DemoRequest};
use tmux::tmux_available;

struct Session {
    pane: tmux::Pane,
    state: tempfile::TempDir,
    _work: tempfile::TempDir,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.pane.kill_server();
    }
}

fn start(width: u16, height: u16) -> Option<Session> {
    start_on("rpc", width, height)
}

fn start_on(transport: &str, width: u16, height: u16) -> Option<Session> {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let pane = launch(state.path(), work.path(), transport, "", width, height)?;
    Some(Session {
        pane,
        state,
        _work: work,
    })
}

/// A pane whose tmux server ends with it, a failed assertion included.
struct Killed(tmux::Pane);

impl Drop for Killed {
    fn drop(&mut self) {
        self.0.kill_server();
    }
}

impl std::ops::Deref for Killed {
    type Target = tmux::Pane;

    fn deref(&self) -> &tmux::Pane {
        &self.0
    }
}

/// agentty on the demo agent over `transport` in `work`, with its state in `state` and `args`.
fn launch(
    state: &std::path::Path,
    work: &std::path::Path,
    transport: &str,
    args: &str,
    width: u16,
    height: u16,
) -> Option<tmux::Pane> {
    if !tmux_available() {
        return None;
    }
    let command = format!(
        "cd {work} && AGENTTY_STATE_DIR={state} AGENTTY_DEMO_STATE_DIR={state}/demo \
         AGENTTY_DEMO_TIME_SCALE=0.1 exec {bin} --provider demo --transport {transport} {args}",
        work = work.display(),
        state = state.display(),
        bin = env!("CARGO_BIN_EXE_agentty"),
    );
    let pane = tmux::Pane::spawn(tmux::socket_name("agentty-model"), width, height, &command);
    pane.wait_for_text("Ask the agent anything");
    Some(pane)
}

#[test]
fn slash_model_switches_pi_to_its_second_model_for_the_next_request() {
    let Some(session) = start(100, 24) else {
        return;
    };
    let pane = &session.pane;
    // The agent starts ahead of the first prompt, so its models are known at once.
    pane.wait_for_text("demo · Demo One · thinking off");
    pane.prompt("/model");
    let picker = pane.wait_for_text("Demo Two (thinks)");
    eprintln!("the picker:\n{picker}");
    assert!(picker.contains("● Demo One  · demo"), "{picker}");
    pane.keys(&["Down", "Enter"]);
    let switched = pane.wait_for_text("Model: Demo Two (thinks)");
    assert!(
        switched.contains("demo · Demo Two (thinks) · thinking off"),
        "{switched}"
    );
    pane.keys(&["BTab"]);
    let stepped = pane.wait_for_text("demo · Demo Two (thinks) · thinking minimal");
    eprintln!("after /model and Shift+Tab:\n{stepped}");
    pane.prompt("hello there");
    pane.wait_for_text("Prompt 1 in session");
    let requests: Vec<DemoRequest> =
        std::fs::read_to_string(requests_file(&session.state.path().join("demo")))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
    eprintln!("the requests the agent received: {requests:?}");
    let last = requests.last().unwrap();
    assert_eq!(last.messages, ["hello there"]);
    assert_eq!(last.model.as_deref(), Some("demo-2"));
}

#[test]
fn shift_tab_steps_an_acp_agents_modes_and_the_agent_receives_set_mode() {
    let Some(session) = start_on("acp", 60, 18) else {
        return;
    };
    let pane = &session.pane;
    pane.wait_for_text("Demo ACP One · mode Default");
    pane.keys(&["BTab"]);
    pane.wait_for_text("Mode: Accept edits");
    // The status line names the new mode once the launch's snapshot no longer takes its room
    // ("reading the files" comes first at 60 columns).
    let switched = pane.wait_for_text("mode Accept edits │");
    eprintln!("after Shift+Tab at 60x18:\n{switched}");
    let logged = std::fs::read_to_string(session.state.path().join("demo/settings.jsonl")).unwrap();
    assert!(
        logged.contains(r#""method":"session/set_mode","value":"accept-edits""#),
        "{logged}"
    );
    pane.keys(&["BTab"]);
    pane.wait_for_text("· mode Default");
}

/// The mode the user chose holds across `--resume` (the demo agent keeps it with the session it
/// loads, as real agents do, so it need not be set again), and `mode` in the provider's config
/// sets where a new conversation starts.
#[test]
fn a_chosen_mode_holds_across_resume_and_the_config_sets_the_start() {
    if !tmux_available() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let pane = Killed(launch(state.path(), work.path(), "acp", "", 100, 20).unwrap());
    pane.wait_for_text("· mode Default");
    pane.keys(&["BTab"]);
    pane.wait_for_text("Mode: Accept edits");
    pane.prompt("hello");
    pane.wait_for_text("Hello from the demo ACP agent");
    pane.wait_for_text("│ idle");
    pane.keys(&["C-c", "C-c"]);
    pane.kill_server();

    let pane = Killed(launch(state.path(), work.path(), "acp", "--resume", 100, 20).unwrap());
    let resumed = pane.wait_for_text("· mode Accept edits");
    eprintln!("resumed:\n{resumed}");
    let logged = std::fs::read_to_string(state.path().join("demo/settings.jsonl")).unwrap();
    assert_eq!(
        logged
            .matches(r#""method":"session/set_mode","value":"accept-edits""#)
            .count(),
        1,
        "chosen once; the loaded session kept it: {logged}"
    );
    pane.kill_server();

    let config = state.path().join("config.toml");
    std::fs::write(&config, "[providers.demo]\nmode = \"accept-edits\"\n").unwrap();
    let fresh = tempfile::tempdir().unwrap();
    let args = format!("--config {}", config.display());
    let pane = Killed(launch(state.path(), fresh.path(), "acp", &args, 100, 20).unwrap());
    pane.wait_for_text("· mode Accept edits");
    pane.kill_server();
}
