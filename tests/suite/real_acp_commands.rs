//! The real Qwen Code (`qwen --acp`, 0.24.4 from npm: `npm install --prefix /tmp/qwen-cli
//! @qwen-code/qwen-code`) as a config-defined ACP agent in the full-screen chat, against the fake
//! OpenAI server: the commands it announces (`available_commands_update`, about 50) are offered
//! in the `/` popup after agentty's own, marked as Qwen's, and its `/compress` sent from the
//! popup compresses its context (its summary request reaches the model).
//!
//! Opt-in: `cargo test --test suite -- --ignored real_acp_commands::` (a missing CLI or tmux
//! fails the test).

use crate::support::chat_pane;
use crate::support::fake_openai::FakeOpenAi;
use crate::support::real_cli::{real_cli, test_name};

use chat_pane::{ChatPane, StateDir};

const DEFAULT_BIN: &str = "/tmp/qwen-cli/node_modules/.bin/qwen";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Qwen Code and tmux: cargo test --test suite -- --ignored real_acp_commands::"]
async fn qwens_commands_are_offered_after_agenttys_and_compress_runs_from_the_popup() {
    let test = &test_name();
    let bin = real_cli(test, "AGENTTY_QWEN_BIN", DEFAULT_BIN);
    let server = FakeOpenAi::start().await;
    let state = StateDir::new();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // Qwen Code reads its auth type from its settings; the key, server and model from the env
    // (`plain`: the fake server's plain text answer).
    std::fs::create_dir_all(home.path().join(".qwen")).unwrap();
    std::fs::write(
        home.path().join(".qwen/settings.json"),
        r#"{"security":{"auth":{"selectedType":"openai"}},"model":{"name":"plain"}}"#,
    )
    .unwrap();
    let config = format!(
        "[providers.qwen]\nprotocol = \"acp\"\ncommand = {command:?}\nargs = [\"--acp\"]\n\
         env = {{ HOME = {home:?}, OPENAI_BASE_URL = {url:?}, OPENAI_API_KEY = \"sk-fake\", \
         OPENAI_MODEL = \"plain\" }}\n",
        command = bin.display().to_string(),
        home = home.path().display().to_string(),
        url = server.base_url(),
    );
    std::fs::write(state.path().join("config.toml"), config).unwrap();
    let Some(chat) = ChatPane::launch(&state, work.path(), "", &["--provider", "qwen"], (160, 50))
    else {
        panic!("tmux is missing");
    };
    let pane = &chat.pane;
    pane.wait_for_text("Ask the agent anything");
    pane.prompt("hello there");
    pane.wait_for_text("The quick brown fox");
    pane.wait_for_text("│ idle");
    pane.type_text("/co");
    let popup = pane.wait_for_text("/compress");
    eprintln!("=== SCREEN qwen / popup ===\n{popup}");
    let row = |text: &str| popup.lines().position(|line| line.contains(text));
    assert!(
        row("/compact").expect("agentty's /compact") < row("/compress").unwrap(),
        "{popup}"
    );
    assert!(
        popup.contains("qwen's · Compresses the context by replacing it with a summary."),
        "{popup}"
    );
    let before = server.completion_requests().len();
    pane.type_text("mpress");
    pane.keys(&["Enter"]);
    let done = pane.wait_for_text("Context compressed");
    eprintln!("=== SCREEN qwen /compress ===\n{done}");
    let summary_asked = server.completion_requests()[before..]
        .iter()
        .any(|request| {
            request.json().is_some_and(|body| {
                body["messages"][0]["content"]
                    .to_string()
                    .contains("summar")
            })
        });
    assert!(summary_asked, "Qwen asked the model for a summary");
    // agentty's own /compact uses Qwen's announced command.
    let before = server.completion_requests().len();
    pane.prompt("/compact");
    let compacted = pane.wait_for_text("Conversation compacted (/compress)");
    eprintln!("=== SCREEN qwen /compact ===\n{compacted}");
    assert!(
        server.completion_requests().len() > before,
        "Qwen compressed again"
    );
    chat.quit();
}
