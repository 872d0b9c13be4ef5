//! The real agents over the Agent Client Protocol, through agentty's binary as scripts drive it
//! (`agentty run --provider gemini|claude|codex --transport acp [--permissions allow|deny]`),
//! against the fake model servers of `support/` on 127.0.0.1. What is checked comes from two
//! sides: the shared stream agentty prints, and the request log of the fake server (what the
//! model saw).
//!
//! Opt-in: every test is `#[ignore]`d (`cargo test --test suite -- --ignored real_acp::` runs them),
//! and a missing CLI or adapter then fails the test. Installs (or the
//! variables that point elsewhere):
//! - `npm install --prefix /tmp/gemini-cli @google/gemini-cli@0.61.0` (`AGENTTY_GEMINI_BIN`)
//! - `npm install --prefix /tmp/claude-acp @zed-industries/claude-agent-acp@0.23.1`
//!   (`AGENTTY_CLAUDE_ACP_BIN`)
//! - `npm install --prefix /tmp/codex-acp @zed-industries/codex-acp@0.16.0`
//!   (`AGENTTY_CODEX_ACP_BIN`), and for its sandbox `bwrap`, which `@openai/codex` ships
//!   (`npm install --prefix /tmp/codex-cli @openai/codex@0.171.0`, found under
//!   `node_modules/@openai/codex-*/vendor/*/codex-resources/`; or `AGENTTY_BWRAP_DIR`, or
//!   `bwrap` on PATH).
//!
//! The adapters are given to agentty by the config (`acp_command` in `[providers.claude]` /
//! `[providers.codex]`, `--config FILE`), the CLIs' environment by the provider's `env` table.
//!
//! Which fake-server scenario makes each agent ask permission (measured with the versions
//! above): Gemini's shell tool running `touch` (and `sleep`; `echo` runs without asking);
//! Claude's Bash tool running `touch` (and `sleep`; `echo` runs without asking); Codex's shell
//! tool only with `sandbox_permissions: "require_escalated"` (`CodexScenario::EscalatedTool`:
//! sandboxed commands, `sleep` included, run without asking in the default read-only mode).
//!
//! Every test prints the time from the spawn of `agentty run` to the fake server's first
//! request (and to the first model request, the first assistant text and the exit).
//!
//! The rig (CLI, fake server, config, process probe) is `support/acp_rig.rs`, shared with the
//! chat tests of `tests/suite/real_acp_chat.rs`.

use crate::support::acp_rig;
use crate::support::fake_codex_server;
use crate::support::fake_gemini_server;
use crate::support::headless_run;
use crate::support::real_cli;

use std::time::{Duration, Instant};

use acp_rig::{prompt, rig, AcpRig, Cli, Plan, Server, RUN_LIMIT};
use headless_run::{concat, of_type, position, type_of, Finished};
use real_cli::{pids_running, survivors, test_name};
use serde_json::Value;

/// For each `<Cli> => <name>`, an opt-in test `<name>` that runs
/// `$scenario(Cli::<Cli>, "<name>")`.
macro_rules! per_cli {
    ($scenario:ident: $($cli:ident => $name:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp:: (README, Tests)"]
            async fn $name() {
                $scenario(Cli::$cli, stringify!($name)).await;
            }
        )+
    };
}

fn assert_started(cli: Cli, finished: &Finished) {
    let first = finished.messages.first().cloned().unwrap_or_default();
    assert_eq!(type_of(&first), "session.started", "{finished}");
    assert_eq!(first["provider"], cli.name(), "{finished}");
    assert!(
        first["session_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "the ACP session id is announced\n{finished}"
    );
}

// ---------------------------------------------------------------------------------------------
// (a) Live text.

async fn text_streams_and_completes(cli: Cli, test: &str) {
    let rig = rig(cli, test, Plan::Text).await;
    let prompt = prompt("say hello");
    let finished = rig.run(None, &prompt).await;
    finished.expect_terminal("terminal.completed");
    assert_started(cli, &finished);
    let requests = rig.server.model_requests();
    assert_eq!(requests.len(), 1, "one model request\n{finished}");
    assert_eq!(
        real_cli::occurrences(&requests[0].user_texts, &prompt),
        1,
        "the model received the prompt once: {requests:#?}"
    );
    let expected = match cli {
        Cli::Gemini => fake_gemini_server::TEXT_REPLY.to_owned(),
        Cli::Codex => fake_codex_server::TEXT_REPLY.to_owned(),
        Cli::Claude => format!(
            "Hello from the fake server. You said: '{prompt}'. messages={}.",
            requests[0].message_count
        ),
    };
    let text = concat(&finished.messages, "assistant", "delta");
    assert_eq!(
        text, expected,
        "the deltas concatenate to the answer\n{finished}"
    );
    let deltas = of_type(&finished.messages, "assistant").len();
    eprintln!("{test}: {deltas} assistant deltas: {text:?}");
    assert!(
        deltas > 1,
        "the text streams live, in several deltas\n{finished}"
    );
}

per_cli! {
    text_streams_and_completes:
    Gemini => gemini_acp_text_streams_and_completes,
    Claude => claude_acp_text_streams_and_completes,
    Codex => codex_acp_text_streams_and_completes,
}

// ---------------------------------------------------------------------------------------------
// (b) Thinking: streamed live (`assistant.thinking`) and released whole (`assistant.thought`).

async fn thinking_streams_and_is_released(cli: Cli, test: &str) {
    let rig = rig(cli, test, Plan::Thinking).await;
    let finished = rig.run(None, &prompt("think then say hello")).await;
    finished.expect_terminal("terminal.completed");
    // What the fake server reasons, and the words of it that must arrive whatever the agent
    // does to its formatting (Gemini rewrites the `**Subject**` header).
    let (reply, words): (&str, &[&str]) = match cli {
        Cli::Gemini => (
            fake_gemini_server::REASONING_REPLY,
            &["I should", "say hello."],
        ),
        Cli::Claude => (
            "After thinking: the answer is 42.",
            &["Let me think about this carefully."],
        ),
        Cli::Codex => (
            fake_codex_server::REASONING_REPLY,
            &[
                "Thinking about greeting",
                "I should say hello.",
                "raw chain of thought",
            ],
        ),
    };
    let text = concat(&finished.messages, "assistant", "delta");
    assert_eq!(text, reply, "no thinking leaks into the text\n{finished}");
    let thinking = concat(&finished.messages, "assistant.thinking", "delta");
    let thoughts: Vec<&str> = of_type(&finished.messages, "assistant.thought")
        .iter()
        .filter_map(|thought| thought["text"].as_str())
        .collect();
    eprintln!("{test}: thinking deltas {thinking:?}; thoughts {thoughts:?}");
    for word in words {
        assert!(
            thinking.contains(word),
            "assistant.thinking streams {word:?}\n{finished}"
        );
        assert!(
            thoughts.iter().any(|thought| thought.contains(word)),
            "an assistant.thought holds {word:?}\n{finished}"
        );
    }
    let first_thinking = position(&finished.messages, "assistant.thinking");
    let first_text = position(&finished.messages, "assistant");
    assert!(
        matches!((first_thinking, first_text), (Some(t), Some(a)) if t < a),
        "the thinking streams before the answer\n{finished}"
    );
}

per_cli! {
    thinking_streams_and_is_released:
    Gemini => gemini_acp_thinking_streams_and_is_released,
    Claude => claude_acp_thinking_streams_and_is_released,
    Codex => codex_acp_thinking_streams_and_is_released,
}

// ---------------------------------------------------------------------------------------------
// (c) A tool call that asks permission: run after `--permissions allow`, refused by the
// headless default (`deny`, here given explicitly).

/// The one `permission.request` and its `permission.resolved`, checked against the contract;
/// returns the request and the option id it was answered with.
fn permission_exchange<'m>(finished: &'m Finished, file: &str) -> (&'m Value, &'m str) {
    let requests = of_type(&finished.messages, "permission.request");
    assert_eq!(requests.len(), 1, "one permission.request\n{finished}");
    let request = requests[0];
    assert!(
        request["id"].as_str().is_some_and(|id| !id.is_empty()),
        "{request}"
    );
    assert!(
        request["title"]
            .as_str()
            .is_some_and(|title| title.contains(file)),
        "the request's title names the command\n{finished}"
    );
    let options = request["options"].as_array().cloned().unwrap_or_default();
    for kind in ["allow_once", "reject_once"] {
        assert!(
            options.iter().any(|option| option["kind"] == kind
                && option["id"].as_str().is_some_and(|id| !id.is_empty())
                && option["name"].as_str().is_some_and(|name| !name.is_empty())),
            "an option of kind {kind} with an id and a name\n{finished}"
        );
    }
    let resolved = of_type(&finished.messages, "permission.resolved");
    assert_eq!(resolved.len(), 1, "one permission.resolved\n{finished}");
    let resolved = resolved[0];
    assert_eq!(resolved["id"], request["id"], "{finished}");
    assert_eq!(
        resolved["by"], "policy",
        "headless runs answer by policy\n{finished}"
    );
    let outcome = resolved["outcome"].as_str().unwrap_or_default();
    assert!(
        position(&finished.messages, "permission.request")
            < position(&finished.messages, "permission.resolved"),
        "{finished}"
    );
    (request, outcome)
}

/// The id of the option of `kind` in a `permission.request`.
fn option_id<'m>(request: &'m Value, kind: &str) -> &'m str {
    request["options"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|option| option["kind"] == kind)
        .and_then(|option| option["id"].as_str())
        .unwrap_or_default()
}

async fn allowed_tool_runs(cli: Cli, test: &str) {
    let file = format!("allowed-{}.txt", std::process::id());
    let rig = rig(cli, test, Plan::AskingTool(format!("touch {file}"))).await;
    let finished = rig.run(Some("allow"), &prompt("create the file")).await;
    finished.expect_terminal("terminal.completed");
    let (request, outcome) = permission_exchange(&finished, &file);
    assert_eq!(
        outcome,
        option_id(request, "allow_once"),
        "allowed once\n{finished}"
    );
    assert!(
        rig.work.path().join(&file).exists(),
        "the allowed command ran: {file} exists\n{finished}"
    );
    // The tool call is announced and completes under the id the request named.
    let call_id = request["tool_call_id"].as_str().unwrap_or_default();
    assert!(
        !call_id.is_empty(),
        "the request names its tool call\n{finished}"
    );
    assert!(
        of_type(&finished.messages, "tool.call")
            .iter()
            .any(|call| call["id"] == call_id),
        "a tool.call {call_id}\n{finished}"
    );
    assert!(
        of_type(&finished.messages, "tool.completed")
            .iter()
            .any(|done| done["id"] == call_id),
        "the tool call {call_id} completed\n{finished}"
    );
    // What the model saw: a second request carrying the tool's result.
    let requests = rig.server.model_requests();
    assert_eq!(
        requests.len(),
        2,
        "the result went back to the model\n{finished}"
    );
    assert_eq!(requests[1].tool_results.len(), 1, "{requests:#?}");
    eprintln!(
        "{test}: the model received the tool result {:?}",
        requests[1].tool_results[0]
    );
    let expected = match cli {
        Cli::Gemini => format!(
            "{}{}",
            fake_gemini_server::TOOL_PREAMBLE,
            fake_gemini_server::TOOL_REPLY
        ),
        Cli::Codex => fake_codex_server::TOOL_REPLY.to_owned(),
        Cli::Claude => format!(
            "I'll run a command.The command printed: {}. Done.",
            requests[1].tool_results[0].trim()
        ),
    };
    assert_eq!(
        concat(&finished.messages, "assistant", "delta"),
        expected,
        "{finished}"
    );
}

per_cli! {
    allowed_tool_runs:
    Gemini => gemini_acp_allowed_tool_runs,
    Claude => claude_acp_allowed_tool_runs,
    Codex => codex_acp_allowed_tool_runs,
}

async fn denied_tool_is_refused_by_policy(cli: Cli, test: &str) {
    let file = format!("denied-{}.txt", std::process::id());
    let rig = rig(cli, test, Plan::AskingTool(format!("touch {file}"))).await;
    let finished = rig.run(Some("deny"), &prompt("create the file")).await;
    let terminal = finished.terminal();
    let kind = type_of(terminal);
    assert_eq!(
        finished.status.code(),
        Some(headless_run::exit_code_for(kind)),
        "{finished}"
    );
    let (request, outcome) = permission_exchange(&finished, &file);
    assert_eq!(
        outcome,
        option_id(request, "reject_once"),
        "rejected once\n{finished}"
    );
    assert!(
        !rig.work.path().join(&file).exists(),
        "the refused command did not run: {file} is absent\n{finished}"
    );
    // The notice may come before or after the `permission.resolved`.
    let asked_at = position(&finished.messages, "permission.request").unwrap_or_default();
    let notices: Vec<&Value> = finished.messages[asked_at..]
        .iter()
        .filter(|message| type_of(message) == "notice")
        .collect();
    assert!(!notices.is_empty(), "the refusal is a notice\n{finished}");
    eprintln!("{test}: ended {kind}; notices {notices:?}");
    let requests = rig.server.model_requests();
    match cli {
        // Codex ends the whole turn on a rejection (stopReason cancelled): the model hears
        // nothing more. The user did not stop anything, so it is no failure.
        Cli::Codex => {
            assert_eq!(requests.len(), 1, "{requests:#?}\n{finished}");
            assert_ne!(kind, "terminal.failed", "{finished}");
        }
        // Gemini and Claude tell the model that the call was refused, and the turn goes on.
        Cli::Gemini | Cli::Claude => {
            assert_eq!(
                requests.len(),
                2,
                "the refusal went back to the model\n{finished}"
            );
            assert_eq!(requests[1].tool_results.len(), 1, "{requests:#?}");
            eprintln!(
                "{test}: the model received {:?}",
                requests[1].tool_results[0]
            );
            finished.expect_terminal("terminal.completed");
            assert!(
                !of_type(&finished.messages, "tool.completed")
                    .iter()
                    .any(|done| done["id"] == request["tool_call_id"]),
                "a refused call does not complete\n{finished}"
            );
        }
    }
}

per_cli! {
    denied_tool_is_refused_by_policy:
    Gemini => gemini_acp_denied_tool_is_refused_by_policy,
    Claude => claude_acp_denied_tool_is_refused_by_policy,
    Codex => codex_acp_denied_tool_is_refused_by_policy,
}

// ---------------------------------------------------------------------------------------------
// (d) SIGINT to `agentty run` while a `sleep 100` tool runs.

async fn sigint_mid_tool_cancels_and_leaves_no_process(cli: Cli, test: &str) {
    // `sleep 100.<digits>`: a hundred seconds, and a command line no other test has.
    let sleep = format!("sleep 100.{:06}", std::process::id() % 1_000_000);
    // Gemini and Claude ask before running it (allowed here); Codex runs it in its sandbox.
    let rig = rig(cli, test, Plan::Tool(sleep.clone())).await;
    let run = rig.spawn(Some("allow"), &prompt("sleep for the stop test"));
    let spawned_at = run.spawned_at;
    let sleepers = real_cli::wait_for_process(&sleep, RUN_LIMIT).await;
    if sleepers.is_empty() {
        let finished = run.finish(Duration::from_secs(5)).await;
        rig.report(spawned_at, &finished);
        panic!("the `{sleep}` tool never started\n{finished}");
    }
    let before_stop = rig.probe.live();
    eprintln!("{test}: processes of the run before the stop: {before_stop:#?}");
    let interrupted_at = Instant::now();
    run.interrupt();
    let finished = run.finish(Duration::from_secs(20)).await;
    let stop_took = interrupted_at.elapsed();
    rig.report(spawned_at, &finished);
    eprintln!("{test}: SIGINT -> exit {} ms", stop_took.as_millis());
    let terminal = finished.expect_terminal("terminal.cancelled");
    eprintln!(
        "{test}: stop_stage {}, elapsed_ms {}",
        terminal["stop_stage"], terminal["elapsed_ms"]
    );
    assert!(
        ["cancel", "interrupt", "grace", "kill"]
            .contains(&terminal["stop_stage"].as_str().unwrap_or("")),
        "{finished}"
    );
    // Nothing of the run survives: neither the tool nor the agent (nor its sandbox).
    let left = survivors(sleepers.clone(), Duration::from_secs(5)).await;
    let still_sleeping = pids_running(&sleep);
    assert!(
        left.is_empty() && still_sleeping.is_empty(),
        "`{sleep}` still runs after the stop: {left:?} {still_sleeping:?}"
    );
    let pids: Vec<i32> = before_stop.iter().map(|(pid, _)| *pid).collect();
    let alive: Vec<(i32, String)> = survivors(pids, Duration::from_secs(5))
        .await
        .into_iter()
        .map(|pid| (pid, real_cli::command_line(pid)))
        .collect();
    assert!(alive.is_empty(), "processes of the run left: {alive:#?}");
    let marked = rig.probe.live();
    assert!(marked.is_empty(), "processes of the run left: {marked:#?}");
}

per_cli! {
    sigint_mid_tool_cancels_and_leaves_no_process:
    Gemini => gemini_acp_sigint_mid_tool_cancels_and_leaves_no_process,
    Claude => claude_acp_sigint_mid_tool_cancels_and_leaves_no_process,
    Codex => codex_acp_sigint_mid_tool_cancels_and_leaves_no_process,
}

// ---------------------------------------------------------------------------------------------
// (e) The agents' own retries stay off over ACP: an HTTP 500 is one model request and one
// `terminal.failed` naming the status, for agentty's orchestrator to classify (and retry).

async fn http_500_is_one_request(cli: Cli, test: &str) {
    let rig = rig(cli, test, Plan::Http500).await;
    automatic_retry_off(&rig);
    let finished = rig.run(None, &prompt("fail please")).await;
    let terminal = finished.expect_terminal("terminal.failed");
    let requests = rig.server.model_requests();
    assert_eq!(
        requests.len(),
        1,
        "the agent did not retry on its own: {requests:#?}\n{finished}"
    );
    assert_eq!(
        terminal["http_status"], 500,
        "the failure names the status\n{finished}"
    );
}

/// agentty's own retry off in the rig's config (it is on by default), so that one run is one
/// attempt and what the server saw is the agent's doing alone.
fn automatic_retry_off(rig: &AcpRig) {
    let mut config = std::fs::read_to_string(&rig.config).unwrap();
    config.push_str("\n[provider_error_auto_retry]\nenabled = false\n");
    std::fs::write(&rig.config, config).unwrap();
}

per_cli! {
    http_500_is_one_request:
    Gemini => gemini_acp_http_500_is_one_request,
    Claude => claude_acp_http_500_is_one_request,
    Codex => codex_acp_http_500_is_one_request,
}

/// A stream cut mid-answer is a failed attempt for agentty to classify and retry: Claude Code's
/// hidden non-streaming re-request (its "fallback") is off, so what the model answered on a
/// second request never reaches the model's history without reaching the screen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp:: (README, Tests)"]
async fn claude_acp_a_cut_stream_fails_without_a_hidden_refetch() {
    let test = &test_name();
    let plan = Plan::Cut {
        text: "Partial words before the cut and the rest after it".into(),
        words: 3,
    };
    let rig = rig(Cli::Claude, test, plan).await;
    automatic_retry_off(&rig);
    let finished = rig.run(None, &prompt("cut please")).await;
    let failed = finished.expect_terminal("terminal.failed");
    eprintln!("{test}: {failed}");
    let Server::Claude(server) = &rig.server else {
        unreachable!("a Claude rig");
    };
    let main: Vec<_> = server
        .message_requests()
        .into_iter()
        .filter(|request| request.main)
        .collect();
    assert!(!main.is_empty(), "{finished}");
    assert!(
        main.iter().all(|request| request.stream),
        "no non-streaming re-request: {:#?}\n{finished}",
        main.iter()
            .map(|request| request.stream)
            .collect::<Vec<_>>()
    );
}

// ---------------------------------------------------------------------------------------------
// (f) A conversation survives failed attempts on the long-lived process: turn A fails twice
// then succeeds, B continues, C fails twice then succeeds, D continues (through the real
// orchestrator, retries 10 ms apart, so all in one minute); what the model received, from the
// fake server's log. (Gemini's run of the same is `real_gemini`'s
// `gemini_acp_two_retried_turns_keep_the_conversation`, with its private home in the test's.)

async fn two_retried_turns_keep_the_conversation(cli: Cli, test: &str) {
    let prompts = real_cli::four_prompts(cli.name());
    let fail = std::sync::Arc::new(real_cli::fail_a_and_c_twice(&prompts));
    let rig = rig(cli, test, Plan::Failing(fail)).await;
    real_cli::two_retried_turns_keep_the_conversation(
        cli.name(),
        test,
        rig.provider(),
        rig.work.path(),
        &prompts,
        || rig.server.user_texts_per_request(),
    )
    .await;
}

per_cli! {
    two_retried_turns_keep_the_conversation:
    Claude => claude_acp_two_retried_turns_keep_the_conversation,
    Codex => codex_acp_two_retried_turns_keep_the_conversation,
}

/// `cli` over ACP against a server that fails `flaky` twice.
async fn flaky_on(cli: Cli, test: &str, flaky: &str) -> real_cli::Flaky {
    let fail = real_cli::FailFirst::new(2, flaky);
    let rig = rig(
        cli,
        test,
        Plan::Failing(std::sync::Arc::new(move |text: &str| fail.take(text))),
    )
    .await;
    let (provider, work) = (rig.provider(), rig.work.path().to_path_buf());
    real_cli::Flaky::new(provider, work, rig, |rig| {
        rig.server.user_texts_per_request()
    })
}

async fn flaky_claude(test: &str, flaky: &str) -> real_cli::Flaky {
    flaky_on(Cli::Claude, test, flaky).await
}

async fn flaky_codex(test: &str, flaky: &str) -> real_cli::Flaky {
    flaky_on(Cli::Codex, test, flaky).await
}

crate::retry_sends_the_prompt_once!(claude_acp_retry: "claude (acp)", super::flaky_claude, "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp:: (README, Tests)");
crate::retry_sends_the_prompt_once!(codex_acp_retry: "codex (acp)", super::flaky_codex, "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp:: (README, Tests)");

// ---------------------------------------------------------------------------------------------
// (g) Esc, then /retry, then the next prompt, on the long-lived process: each prompt once, and
// what the recovery costs before the model is asked again.

async fn a_stop_then_retry_keep_the_conversation(cli: Cli, test: &str) {
    let prompts = real_cli::stop_prompts(cli.name());
    let slow = prompts[1].clone();
    let plan = Plan::PerPrompt(std::sync::Arc::new(move |text: &str| {
        if text.contains(&slow) {
            Plan::Say {
                text: "one two three four five six seven eight nine ten".into(),
                pause: Duration::from_millis(500),
            }
        } else {
            Plan::Text
        }
    }));
    let rig = rig(cli, test, plan).await;
    real_cli::a_stop_then_retry_keep_the_conversation(
        cli.name(),
        test,
        rig.provider(),
        rig.work.path(),
        &prompts,
        || rig.server.user_texts_per_request(),
        || {
            rig.server
                .model_requests()
                .into_iter()
                .map(|request| tokio::time::Instant::from_std(request.at))
                .collect()
        },
    )
    .await;
}

per_cli! {
    a_stop_then_retry_keep_the_conversation:
    Gemini => gemini_acp_a_stop_then_retry_keep_the_conversation,
    Claude => claude_acp_a_stop_then_retry_keep_the_conversation,
    Codex => codex_acp_a_stop_then_retry_keep_the_conversation,
}

// ---------------------------------------------------------------------------------------------
// (h) /rewind of the conversation to a finished turn on the long-lived process (the adapter's
// session file put back, the session loaded again), and its undo: what the model received.

async fn a_rewind_takes_the_later_prompts_away_from_the_model(cli: Cli, test: &str) {
    let rig = rig(cli, test, Plan::Text).await;
    real_cli::after_a_rewind_the_next_request_no_longer_carries_the_rewound_prompts(
        test,
        rig.provider(),
        rig.work.path(),
        || rig.server.user_texts_per_request(),
    )
    .await;
}

per_cli! {
    a_rewind_takes_the_later_prompts_away_from_the_model:
    Gemini => gemini_acp_a_rewind_takes_the_later_prompts_away_from_the_model,
    Claude => claude_acp_a_rewind_takes_the_later_prompts_away_from_the_model,
    Codex => codex_acp_a_rewind_takes_the_later_prompts_away_from_the_model,
}

// ---------------------------------------------------------------------------------------------
// (i) Two turns, a turn that fails every attempt and its /retry, a new turn, quit, --resume, a
// new turn: the conversation is whole in every request (the sequence of `real_acp_any`).

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp:: (README, Tests)"]
async fn gemini_acp_a_failure_a_retry_and_a_resume_keep_the_conversation() {
    use crate::real_acp_any::{a_failure_a_retry_and_a_resume_keep_the_conversation, FIVE_PROMPTS};
    // Gamma fails all three attempts of its turn; its /retry gets through.
    let fail = real_cli::FailFirst::new(3, FIVE_PROMPTS[2]);
    let rig = rig(
        Cli::Gemini,
        "gemini_acp_a_failure_a_retry_and_a_resume_keep_the_conversation",
        Plan::Failing(std::sync::Arc::new(move |text: &str| fail.take(text))),
    )
    .await;
    a_failure_a_retry_and_a_resume_keep_the_conversation(
        "gemini",
        || rig.provider(),
        rig.work.path(),
        3,
        || rig.server.user_texts_per_request(),
        || {},
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp:: (README, Tests)"]
async fn gemini_acp_a_rewind_a_prompt_a_quit_and_a_resume_keep_the_conversation() {
    let rig = rig(
        Cli::Gemini,
        "gemini_acp_a_rewind_a_prompt_a_quit_and_a_resume_keep_the_conversation",
        Plan::Text,
    )
    .await;
    crate::real_acp_any::a_rewind_a_prompt_a_quit_and_a_resume_keep_the_conversation(
        "gemini",
        || rig.provider(),
        rig.work.path(),
        || rig.server.user_texts_per_request(),
    )
    .await;
}

/// One `agentty run` per turn, each continuing with `--session ID --max-attempts 3` (the
/// issue's script): A fails twice then succeeds, B continues, C fails twice, D continues. D's
/// request carries A and B (and C at most once) besides D.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real CLI and a fake model server: cargo test --test suite -- --ignored real_acp:: (README, Tests)"]
async fn gemini_acp_headless_turns_with_failures_keep_the_conversation() {
    let prompts = real_cli::four_prompts("gemini-acp-run");
    let fail = std::sync::Arc::new(real_cli::fail_a_and_c_twice(&prompts));
    let rig = rig(
        Cli::Gemini,
        "gemini_acp_headless_turns_with_failures_keep_the_conversation",
        Plan::Failing(fail),
    )
    .await;
    let mut session: Option<String> = None;
    for prompt in &prompts {
        let mut command = rig.command(None, prompt);
        command.args(["--max-attempts", "3"]);
        if let Some(id) = &session {
            command.args(["--session", id]);
        }
        let finished = headless_run::HeadlessRun::spawn(command)
            .finish(RUN_LIMIT)
            .await;
        let terminals: Vec<&Value> = finished
            .messages
            .iter()
            .filter(|message| type_of(message).starts_with("terminal."))
            .collect();
        eprintln!("{prompt}: {terminals:?}");
        // The session of the attempt that ended the turn (a failed first turn's retry runs in
        // a session of its own).
        let started = finished
            .messages
            .iter()
            .rev()
            .find(|message| {
                let kind = type_of(message);
                kind == "session.started" || kind == "session.resumed"
            })
            .and_then(|message| message["session_id"].as_str().map(str::to_owned));
        session = started.or(session);
        eprintln!(
            "after {prompt}: {:#?}",
            rig.server.user_texts_per_request().last()
        );
    }
    let requests = rig.server.user_texts_per_request();
    let last = requests.last().unwrap();
    real_cli::assert_carries(
        last,
        &[(&prompts[0], 1), (&prompts[1], 1), (&prompts[3], 1)],
    );
}
