//! The full-screen chat in tmux against the real agents over the Agent Client Protocol
//! (`agentty --provider gemini|claude|codex --transport acp --config FILE`), with the fake model
//! servers and the rig of `support/acp_rig.rs` (the installs are listed in `tests/suite/real_acp.rs`).
//! Each CLI is checked for:
//! - the permission prompt: it renders at 160x50 with the command and the agent's options, `y`
//!   allows once, the tool runs and the transcript says so; the screens are printed
//!   (`=== SCREEN <cli> ... ===`);
//! - the long-lived agent process: a second turn in the same chat starts no new process, and the
//!   time from Enter to the fake server's first request of each turn is printed
//!   (`TIMING <cli> enter->first request: ...`);
//! - a stopped turn (Esc during a slow answer) and the next turn: that turn's visible answer is
//!   its own, and its model request carries its prompt (the Claude adapter answers one turn
//!   late after a cancel unless agentty starts it afresh);
//! - the end: quitting (Ctrl+C twice) leaves no process of the run, although the Claude and
//!   Codex adapters do not exit on stdin EOF.
//!
//! Opt-in like `tests/suite/real_acp.rs`: `#[ignore]`d (`cargo test --test suite -- --ignored real_acp_chat::`); a missing CLI, adapter or tmux then fails the test.
//!
//! Each model request gets the scenario its prompt asks for (`Plan::PerPrompt`): a prompt with
//! `create-file` makes the agent ask to run `touch` (Codex: the escalated shell call), one with
//! `slow-turn` gets a text streamed a word every 400 ms, any other prompt gets
//! "Answer to <token> done." where `<token>` is the prompt's `tok…` word.

use crate::support::acp_rig;
use crate::support::real_cli;
use crate::support::tmux;
use real_cli::test_name;

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::fake_gemini_server;
use acp_rig::{rig, shorten, AcpRig, Cli, Plan, Server};
use real_cli::is_alive;
use tmux::shell_quote;

/// How long a turn of a real agent against a fake server may take to show its answer.
const TURN_LIMIT: Duration = Duration::from_secs(90);
/// How long after the quit the run's processes may take to be gone.
const QUIT_LIMIT: Duration = Duration::from_secs(15);
/// The pause after each word of the slow turn.
const SLOW_PAUSE: Duration = Duration::from_millis(400);

/// A unique `tok…` word for a prompt, which the fake server's answer repeats.
fn token() -> String {
    format!("tok{}", &uuid::Uuid::new_v4().simple().to_string()[..10])
}

/// The prompt's `tok…` word (the last one), or "none".
fn token_in(text: &str) -> String {
    text.split_whitespace()
        .rev()
        .map(|word| word.trim_matches(|c: char| !c.is_ascii_alphanumeric()))
        .find(|word| word.starts_with("tok"))
        .unwrap_or("none")
        .to_owned()
}

fn answer_for(token: &str) -> String {
    format!("Answer to {token} done.")
}

fn slow_answer(token: &str) -> String {
    let words: Vec<String> = (1..=40).map(|n| format!("w{n}")).collect();
    format!("Slow answer for {token}: {}.", words.join(" "))
}

/// The scenario of each model request, chosen by its prompt (see the module's doc).
fn chat_plan(file: &str) -> Plan {
    let touch = format!("touch {file}");
    Plan::PerPrompt(Arc::new(move |text| {
        if text.contains("create-file") {
            Plan::AskingTool(touch.clone())
        } else if text.contains("slow-turn") {
            Plan::Say {
                text: slow_answer(&token_in(text)),
                pause: SLOW_PAUSE,
            }
        } else {
            Plan::Say {
                text: answer_for(&token_in(text)),
                pause: Duration::from_millis(30),
            }
        }
    }))
}

/// The chat of one rig in its own tmux server, at 160x50, in the rig's working directory with
/// the environment `agentty run` gets from the rig.
struct Chat<'r> {
    rig: &'r AcpRig,
    pane: tmux::Pane,
    /// agentty's pid (the pane runs it by `exec`).
    pid: i32,
}

impl<'r> Chat<'r> {
    fn start(rig: &'r AcpRig) -> Chat<'r> {
        Self::start_on(rig, "acp")
    }

    /// The chat over `transport` (`acp`, or Codex's `app-server`).
    fn start_on(rig: &'r AcpRig, transport: &str) -> Chat<'r> {
        let args = format!("--provider {} --transport {transport}", rig.cli.name());
        Self::start_with(rig, &args)
    }

    /// The chat with these arguments (shell text) besides `--config`.
    fn start_with(rig: &'r AcpRig, args: &str) -> Chat<'r> {
        let socket = tmux::socket_name(&format!("agentty-acp-chat-{}", rig.cli.name()));
        let env: Vec<String> = rig
            .agentty_env()
            .into_iter()
            .map(|(key, value)| shell_quote(&format!("{key}={}", value.to_string_lossy())))
            .collect();
        let command = format!(
            "cd {work} && exec env {env} {bin} {args} --config {config}",
            work = shell_quote(&rig.work.path().to_string_lossy()),
            env = env.join(" "),
            bin = shell_quote(env!("CARGO_BIN_EXE_agentty")),
            config = shell_quote(&rig.config.to_string_lossy()),
        );
        eprintln!("=== {}: tmux runs: {command}", rig.test);
        let pane = tmux::Pane::spawn(socket, 160, 50, &command);
        let pid: i32 = pane
            .pane_flag("#{pane_pid}")
            .parse()
            .expect("the pane's pid");
        let chat = Chat { rig, pane, pid };
        chat.wait_for("the chat to start", |screen| {
            screen.contains("Ask the agent anything")
        });
        chat
    }

    /// Waits up to [`TURN_LIMIT`] for the screen to satisfy `predicate`; fails with the screen.
    fn wait_for(&self, what: &str, predicate: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let screen = self.pane.screen();
            if predicate(&screen) {
                return screen;
            }
            if started.elapsed() > TURN_LIMIT {
                self.print_requests();
                panic!(
                    "{}: timed out waiting for {what}; the screen:\n{screen}",
                    self.rig.test
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for `text` on the screen with the chat idle again.
    fn wait_idle_with(&self, text: &str) -> String {
        self.wait_for(&format!("{text:?} and idle"), |screen| {
            screen.contains(text) && status_line(screen).contains("idle")
        })
    }

    /// Types `text` and presses Enter; returns the moments just before the Enter was sent
    /// and when tmux's send-keys returned.
    fn send(&self, text: &str) -> (Instant, Instant) {
        self.pane.type_text(text);
        // Let the composer take the text before the Enter.
        std::thread::sleep(Duration::from_millis(100));
        let before = Instant::now();
        self.pane.keys(&["Enter"]);
        (before, Instant::now())
    }

    fn print_screen(&self, label: &str, screen: &str) {
        eprintln!(
            "=== SCREEN {} {label} ===\n{screen}\n=== END SCREEN {} {label} ===",
            self.rig.cli.name(),
            self.rig.cli.name()
        );
    }

    fn print_requests(&self) {
        let requests = self.rig.server.model_requests();
        eprintln!("=== {}: {} model request(s)", self.rig.test, requests.len());
        for (number, request) in requests.iter().enumerate() {
            eprintln!(
                "  #{}: {} user text(s), the last ending {:?}; tool results {:?}",
                number + 1,
                request.user_texts.len(),
                request.user_texts.last().map(|text| tail(text, 60)),
                request
                    .tool_results
                    .iter()
                    .map(|t| shorten(t))
                    .collect::<Vec<_>>(),
            );
        }
    }

    /// The processes agentty started directly (the agent), by pid.
    fn agent_processes(&self) -> BTreeSet<i32> {
        self.rig
            .probe
            .live()
            .into_iter()
            .map(|(pid, _)| pid)
            .filter(|pid| parent_of(*pid) == Some(self.pid))
            .collect()
    }

    /// Quits with Ctrl+C twice and checks that no process of the run is left.
    fn quit_leaves_no_process(&self) {
        let before = self.rig.probe.live();
        eprintln!(
            "{}: processes of the run before the quit: {before:#?}",
            self.rig.test
        );
        assert!(
            before.iter().any(|(pid, _)| *pid == self.pid),
            "agentty ({}) is among the run's processes: {before:#?}",
            self.pid
        );
        self.pane.keys(&["C-c"]);
        std::thread::sleep(Duration::from_millis(300));
        self.pane.keys(&["C-c"]);
        let quit_at = Instant::now();
        let deadline = quit_at + QUIT_LIMIT;
        loop {
            let left: Vec<&(i32, String)> =
                before.iter().filter(|(pid, _)| is_alive(*pid)).collect();
            let marked = self.rig.probe.live();
            if left.is_empty() && marked.is_empty() {
                break;
            }
            if Instant::now() > deadline {
                let screen = self.pane.screen();
                panic!(
                    "{}: {} s after the quit, processes of the run are left: {left:#?}; marked: \
                     {marked:#?}; the screen:\n{screen}",
                    self.rig.test,
                    QUIT_LIMIT.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!(
            "{}: quit -> every process of the run gone in {} ms",
            self.rig.test,
            quit_at.elapsed().as_millis()
        );
    }
}

impl Drop for Chat<'_> {
    fn drop(&mut self) {
        self.pane.kill_server();
        // Whatever of the run a failed test left behind (only processes carrying this run's
        // marker, which this test started).
        for (pid, _) in self.rig.probe.live() {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    }
}

/// The last `count` characters of `text`.
fn tail(text: &str, count: usize) -> String {
    let chars: Vec<char> = text.trim_end().chars().collect();
    chars[chars.len().saturating_sub(count)..].iter().collect()
}

/// The bottom rows of the screen, where the status bar is.
fn status_line(screen: &str) -> String {
    let lines: Vec<&str> = screen.trim_end().lines().collect();
    lines[lines.len().saturating_sub(2)..].join("\n")
}

fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The option row of the prompt answered by `key` (`1 y  Allow once`, ...).
fn option_row(screen: &str, key: char) -> Option<&str> {
    screen
        .lines()
        .find(|line| (1..=9).any(|number| line.contains(&format!("{number} {key}  "))))
}

/// The screen from the last row holding `needle` down.
fn after_last<'s>(screen: &'s str, needle: &str) -> &'s str {
    screen.rfind(needle).map_or("", |at| &screen[at..])
}

/// Waits up to `limit` for `path` to exist.
fn wait_for_file(path: &std::path::Path, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while !path.exists() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

fn require_tmux() {
    assert!(
        tmux::tmux_available(),
        "AGENTTY_SKIP_TMUX_TESTS=1: the real chat tests need tmux"
    );
}

// ---------------------------------------------------------------------------------------------
// (1) The permission prompt, `y`, and (2) a second turn on the same agent process; (4) the quit.

async fn permission_then_second_turn(cli: Cli, test: &str) {
    let file = format!("chat-{}-{}.txt", cli.name(), std::process::id());
    let rig = rig(cli, test, chat_plan(&file)).await;
    require_tmux();
    let started_at = Instant::now();
    let chat = Chat::start(&rig);
    let name = cli.name();
    // Whether the agent is already up (started with the chat) when the first prompt is sent.
    let agents0 = chat.agent_processes();
    eprintln!(
        "{test}: {} ms after the spawn the chat is ready; agent process(es) before turn 1: \
         {agents0:?}",
        started_at.elapsed().as_millis()
    );

    // Turn 1: the agent asks to run `touch`.
    let (before_enter1, entered1) = chat.send(&format!("create-file please {}", token()));
    // The whole prompt, down to its bottom line (a capture can land mid-draw).
    let asked = chat.wait_for("\"Permission needed\"", |screen| {
        screen
            .lines()
            .skip_while(|line| !line.contains("Permission needed"))
            .any(|line| line.starts_with('└'))
    });
    chat.print_screen("permission prompt", &asked);
    assert!(
        asked.contains(&file),
        "the prompt shows the command (touch {file}):\n{asked}"
    );
    let allow = option_row(&asked, 'y');
    let reject = option_row(&asked, 'n');
    eprintln!("{test}: allow row {allow:?}; reject row {reject:?}");
    assert!(
        allow.is_some() && reject.is_some(),
        "the prompt lists the agent's options, allow once (y) and reject (n):\n{asked}"
    );
    assert!(
        asked.contains("waiting for your answer"),
        "the status says the chat waits for the answer:\n{asked}"
    );
    assert!(
        !rig.work.path().join(&file).exists(),
        "nothing ran before the answer"
    );
    // The prompt takes keys once Tab gives it them (it says so).
    chat.pane.keys(&["Tab"]);
    chat.wait_for("the prompt to have the keys", |screen| {
        screen.contains("answer with a key")
    });
    chat.pane.keys(&["y"]);
    assert!(
        wait_for_file(&rig.work.path().join(&file), TURN_LIMIT),
        "the allowed command ran: {file} exists; the screen:\n{}",
        chat.pane.screen()
    );
    let closing = match cli {
        Cli::Claude => "The command printed:",
        Cli::Gemini | Cli::Codex => "The command printed hi.",
    };
    let approved = chat.wait_idle_with(closing);
    chat.print_screen("after approval", &approved);
    assert!(
        approved.contains("allowed once (you)"),
        "the transcript says who allowed it:\n{approved}"
    );
    assert!(
        approved
            .lines()
            .any(|line| line.contains("✓ ") && line.contains("· done ")),
        "the tool is shown done:\n{approved}"
    );
    assert!(
        !approved.contains("Permission needed"),
        "the prompt closed:\n{approved}"
    );
    let agents1 = chat.agent_processes();
    let marked1: BTreeSet<i32> = rig.probe.live().into_iter().map(|(pid, _)| pid).collect();
    eprintln!(
        "{test}: after turn 1: agent process(es) {agents1:?}; the run's processes {:#?}",
        rig.probe.live()
    );
    assert!(
        !agents1.is_empty(),
        "agentty ({}) runs the agent after turn 1",
        chat.pid
    );

    // Turn 2: plain text, on the same agent process.
    let token2 = token();
    let (before_enter2, entered2) = chat.send(&format!("reply-turn {token2}"));
    let second = chat.wait_idle_with(&answer_for(&token2));
    let first_request = |before: Instant, entered: Instant| {
        rig.server
            .first_request_after(before)
            .map(|at| at.saturating_duration_since(entered).as_millis())
    };
    let timing1 = first_request(before_enter1, entered1).expect("turn 1 reached the server");
    // The first request after turn 2's Enter (turn 1 ended before it).
    let timing2 = first_request(before_enter2, entered2).expect("turn 2 reached the server");
    eprintln!("TIMING {name} enter->first request: turn1 {timing1} ms, turn2 {timing2} ms");
    let agents2 = chat.agent_processes();
    let live2 = rig.probe.live();
    let new: Vec<&(i32, String)> = live2
        .iter()
        .filter(|(pid, _)| !marked1.contains(pid))
        .collect();
    eprintln!("{test}: after turn 2: agent process(es) {agents2:?}; new processes {new:#?}");
    assert_eq!(
        agents1, agents2,
        "turn 2 ran on the same agent process\n{second}"
    );
    assert!(
        new.is_empty(),
        "turn 2 started no process: {new:#?}\n{second}"
    );
    let requests = rig.server.model_requests();
    let last = requests.last().expect("model requests");
    assert!(
        last.user_texts
            .last()
            .is_some_and(|text| text.contains(&token2)),
        "turn 2's model request carries its prompt: {last:#?}"
    );

    chat.quit_leaves_no_process();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp_chat:: (README, Tests)"]
async fn gemini_chat_permission_then_second_turn() {
    permission_then_second_turn(Cli::Gemini, &test_name()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp_chat:: (README, Tests)"]
async fn claude_chat_permission_then_second_turn() {
    permission_then_second_turn(Cli::Claude, &test_name()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp_chat:: (README, Tests)"]
async fn codex_chat_permission_then_second_turn() {
    permission_then_second_turn(Cli::Codex, &test_name()).await;
}

// ---------------------------------------------------------------------------------------------
// Shift+Tab steps through the agent's modes but never to the most permissive one (Gemini's
// YOLO, Codex's full access), which `/permissions` offers with its question.

/// The mode the status bar names (after "mode ").
fn mode_in(screen: &str) -> String {
    let bar = status_line(screen);
    bar.split("mode ")
        .nth(1)
        .map(|rest| rest.split(" · ").next().unwrap_or(rest))
        .map(|rest| rest.split(" │").next().unwrap_or(rest).trim().to_owned())
        .unwrap_or_default()
}

async fn shift_tab_never_reaches_the_most_permissive_mode(
    cli: Cli,
    transport: &str,
    test: &str,
    permissive: &str,
) {
    require_tmux();
    let rig = rig(cli, test, Plan::Text).await;
    if transport == "app-server" {
        // Codex's own app-server: the real CLI, with the rig's CODEX_HOME and fake server.
        let bin = real_cli::real_cli(test, "AGENTTY_CODEX_BIN", CODEX_BIN);
        let mut config: toml::Table =
            toml::from_str(&std::fs::read_to_string(&rig.config).unwrap()).unwrap();
        config["providers"]["codex"]
            .as_table_mut()
            .unwrap()
            .insert("command".into(), acp_rig::path_value(&bin));
        std::fs::write(&rig.config, toml::to_string(&config).unwrap()).unwrap();
    }
    let chat = Chat::start_on(&rig, transport);
    let first = chat.wait_for("the agent's mode", |screen| !mode_in(screen).is_empty());
    chat.print_screen(&format!("{transport} start"), &first);
    let mut seen = vec![mode_in(&first)];
    for step in 1..=4 {
        chat.pane.keys(&["BTab"]);
        let before = seen.last().unwrap().clone();
        let screen = chat.wait_for("the next mode", |screen| {
            let now = mode_in(screen);
            !now.is_empty() && now != before
        });
        let mode = mode_in(&screen);
        chat.print_screen(
            &format!("{transport} after Shift+Tab {step}: {mode}"),
            &screen,
        );
        seen.push(mode);
    }
    eprintln!("=== {test}: Shift+Tab went through {seen:?}");
    assert!(
        seen.iter()
            .all(|mode| !mode.to_lowercase().contains(permissive)),
        "{permissive} is never a step: {seen:?}"
    );
    assert!(
        seen[1..].contains(&seen[0]),
        "the cycle comes back to where it began: {seen:?}"
    );
    // `/permissions` lists it, marked, and asks before switching to it.
    chat.send("/permissions");
    let picker = chat.wait_for("the mode picker", |screen| {
        screen.contains("┌ Permission mode")
    });
    chat.print_screen("/permissions", &picker);
    assert!(
        picker
            .lines()
            .any(|line| line.to_lowercase().contains(permissive)
                && line.contains("⚠ most permissive: asks first")),
        "{picker}"
    );
    chat.pane.keys(&["Escape"]);
    chat.quit_leaves_no_process();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp_chat:: (README, Tests)"]
async fn gemini_shift_tab_never_reaches_yolo() {
    shift_tab_never_reaches_the_most_permissive_mode(Cli::Gemini, "acp", &test_name(), "yolo")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp_chat:: (README, Tests)"]
async fn codex_app_server_shift_tab_never_reaches_full_access() {
    shift_tab_never_reaches_the_most_permissive_mode(
        Cli::Codex,
        "app-server",
        &test_name(),
        "full access",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp_chat:: (README, Tests)"]
async fn codex_acp_shift_tab_never_reaches_full_access() {
    shift_tab_never_reaches_the_most_permissive_mode(
        Cli::Codex,
        "acp",
        &test_name(),
        "full access",
    )
    .await;
}

/// The real Codex CLI.
const CODEX_BIN: &str = "/tmp/codex-cli/node_modules/.bin/codex";

/// A Gemini conversation over ACP with a model and a mode chosen, then a plain `--resume` (no
/// `--provider`, no `--transport`): it goes on over ACP with that model and mode, and the next
/// request reaches the fake server for that model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp_chat:: (README, Tests)"]
async fn gemini_a_plain_resume_keeps_the_transport_model_and_mode() {
    require_tmux();
    let test = &test_name();
    let rig = rig(Cli::Gemini, test, chat_plan("unused.txt")).await;
    let chat = Chat::start_on(&rig, "acp");
    chat.wait_for("the agent's mode", |screen| !mode_in(screen).is_empty());
    chat.send("/model");
    let picker = chat.wait_for("the models", |screen| screen.contains("┌ Model"));
    chat.print_screen("/model", &picker);
    // The second model the agent lists.
    chat.pane.keys(&["Down", "Enter"]);
    let chosen = chat.wait_for("the model switched", |screen| screen.contains("Model: "));
    let model = chosen
        .lines()
        .find_map(|line| line.split("Model: ").nth(1))
        .map(|rest| rest.split(" — ").next().unwrap_or(rest).trim().to_owned())
        .unwrap();
    chat.pane.keys(&["BTab"]);
    chat.wait_for("Auto Edit", |screen| mode_in(screen) == "Auto Edit");
    let first = token();
    chat.send(&format!("first {first}"));
    chat.wait_idle_with(&answer_for(&first));
    chat.quit_leaves_no_process();
    drop(chat);

    let chat = Chat::start_with(&rig, "--resume");
    let resumed = chat.wait_for("the model and mode", |screen| {
        mode_in(screen) == "Auto Edit" && status_line(screen).contains("· acp")
    });
    chat.print_screen("a plain --resume", &resumed);
    let bar = status_line(&resumed);
    eprintln!("=== {test}: chose the model {model:?}; the bar after --resume: {bar}");
    let before = rig.server.model_requests().len();
    let second = token();
    chat.send(&format!("second {second}"));
    chat.wait_idle_with(&answer_for(&second));
    let Server::Gemini(server) = &rig.server else {
        unreachable!()
    };
    let paths: Vec<String> = server
        .requests()
        .iter()
        .filter(|request| request.path.contains(fake_gemini_server::STREAM_PATH))
        .map(|request| request.path.clone())
        .collect();
    eprintln!("=== {test}: model request paths: {paths:#?}");
    assert!(rig.server.model_requests().len() > before);
    let last = paths.last().unwrap();
    assert!(
        paths[..before].iter().any(|path| path == last),
        "the resumed request goes to the model chosen before: {paths:#?}"
    );
    chat.quit_leaves_no_process();
}

// ---------------------------------------------------------------------------------------------
// (3) Esc during a slow answer, then the next turn gets its own answer; (4) the quit.

async fn stop_then_next_turn(cli: Cli, test: &str) {
    let file = format!("chat-stop-{}-{}.txt", cli.name(), std::process::id());
    let rig = rig(cli, test, chat_plan(&file)).await;
    require_tmux();
    let chat = Chat::start(&rig);

    let slow_token = token();
    let slow_prompt = format!("slow-turn {slow_token}");
    chat.send(&slow_prompt);
    let streaming = chat.wait_for("the slow answer to stream", |screen| {
        screen.contains(&format!("Slow answer for {slow_token}")) && screen.contains("w2")
    });
    chat.print_screen("slow turn streaming", &streaming);
    let pressed = Instant::now();
    chat.pane.keys(&["Escape"]);
    let stopped = chat.wait_for("the turn to be stopped", |screen| {
        screen.contains("Stopped") && status_line(screen).contains("idle")
    });
    eprintln!(
        "{test}: Esc -> stopped and idle in {} ms",
        pressed.elapsed().as_millis()
    );
    chat.print_screen("after stop", &stopped);
    assert!(
        !stopped.contains("w40."),
        "the slow answer did not run to its end:\n{stopped}"
    );
    let agents_after_stop = chat.agent_processes();

    let next_token = token();
    let next_prompt = format!("reply-turn {next_token}");
    let (before_enter, _) = chat.send(&next_prompt);
    let next = chat.wait_idle_with(&answer_for(&next_token));
    chat.print_screen("turn after the stop", &next);
    let own = after_last(&next, &next_prompt);
    assert!(
        own.contains(&answer_for(&next_token)),
        "the turn after the stop shows its own answer below its prompt:\n{next}"
    );
    assert!(
        !own.contains("Slow answer") && !own.contains(&slow_token),
        "nothing of the stopped turn's answer shows as the next turn's:\n{next}"
    );
    let requests = rig.server.model_requests();
    chat.print_requests();
    let of_turn: Vec<_> = requests
        .iter()
        .filter(|request| request.at >= before_enter)
        .collect();
    assert!(
        !of_turn.is_empty(),
        "the turn after the stop reached the model"
    );
    for request in &of_turn {
        let last = request.user_texts.last().cloned().unwrap_or_default();
        assert!(
            last.contains(&next_token),
            "the model request of the turn after the stop carries its prompt, not the stopped \
             one's: {request:#?}"
        );
    }
    eprintln!(
        "{test}: agent process(es) after the stop {agents_after_stop:?}, after the next turn {:?}",
        chat.agent_processes()
    );

    chat.quit_leaves_no_process();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp_chat:: (README, Tests)"]
async fn gemini_chat_stop_then_next_turn() {
    stop_then_next_turn(Cli::Gemini, &test_name()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp_chat:: (README, Tests)"]
async fn claude_chat_stop_then_next_turn() {
    stop_then_next_turn(Cli::Claude, &test_name()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp_chat:: (README, Tests)"]
async fn codex_chat_stop_then_next_turn() {
    stop_then_next_turn(Cli::Codex, &test_name()).await;
}
