//! From Enter to the model request, turns 1–3, side by side in one run: agentty's chat on pi's
//! RPC transport, agentty's chat on pi's one-shot JSON mode, and pi's own TUI, all in tmux
//! against one fake OpenAI-compatible server on 127.0.0.1 (issue 16's target: from turn 2 on,
//! agentty reaches the model in ≤ 10 ms, as pi's TUI does).
//!
//! Enter goes through a tmux control-mode client (no process start in the measured path); the
//! clock stops when the fake server has read the request. Each client runs `runs()` fresh
//! conversations of three turns; the table shows the median and the range per turn.
//!
//! Not a criterion bench: it drives real binaries in a real terminal and prints a table.
//! Run: `cargo bench --bench enter_to_request` (needs tmux and pi 0.73.1: `AGENTTY_PI_BIN`,
//! else /tmp/pi-cli/node_modules/.bin/pi).
//!
//! With `AGENTTY_BENCH_TREE=checkout` the working directory is a copy of agentty's own checkout
//! (the files git tracks) and the clients are agentty over RPC with its working-tree snapshots
//! on (the default) and off (`[snapshots] enabled = false`): what a snapshot before each turn
//! costs at Enter (issue 29).
//!
//! With `AGENTTY_BENCH_TREE=big` the working directory is the generated 50,000-file / 600 MB
//! tree of `support/big_tree.rs` (issue 37), the same two clients, and each next prompt is sent
//! the moment the status bar says `idle` (the turn's "after" snapshot is done then): what a
//! prompt sent right at idle waits for, if anything.

#[path = "support/big_tree.rs"]
mod big_tree;
#[path = "../tests/support/http.rs"]
mod http;
#[path = "support/tmux.rs"]
mod tmux;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{FakeHttpServer, HttpRequest, HttpResponse, SseEvent};
use serde_json::{json, Value};
use tmux::{Control, Tmux};

const TMUX: Tmux = Tmux {
    socket: "agentty-bench-enter",
};
/// Conversations per client: 5, or `AGENTTY_BENCH_RUNS` (more runs narrow the median on a
/// noisy machine).
fn runs() -> usize {
    std::env::var("AGENTTY_BENCH_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .filter(|runs| *runs > 0)
        .unwrap_or(5)
}
const TURNS: usize = 3;

fn wait_for_screen(needle: &str, limit: Duration) -> bool {
    TMUX.wait_for_screen(needle, limit, Duration::from_millis(5))
        .is_some()
}

/// The fake model: answers "Reply N." (N = user messages in the request) and notes when each
/// request had been read.
struct FakeModel {
    server: FakeHttpServer,
    arrivals: Arc<Mutex<Vec<Instant>>>,
}

impl FakeModel {
    async fn start() -> FakeModel {
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let log = arrivals.clone();
        let server = FakeHttpServer::start(move |request: &HttpRequest| {
            if request.method != "POST" {
                return HttpResponse::json(200, &json!({"object": "list", "data": []}));
            }
            log.lock().unwrap().push(Instant::now());
            let body = request.json().unwrap_or(Value::Null);
            let users = body["messages"]
                .as_array()
                .map(|messages| messages.iter().filter(|m| m["role"] == "user").count())
                .unwrap_or(0);
            let chunk = |delta: Value, finish: Value| {
                json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
                       "model": "session",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
                .to_string()
            };
            HttpResponse::sse(vec![
                SseEvent::data(chunk(
                    json!({"role": "assistant", "content": ""}),
                    Value::Null,
                )),
                SseEvent::data(chunk(
                    json!({"content": format!("Reply {users}.")}),
                    Value::Null,
                )),
                SseEvent::data(chunk(json!({}), json!("stop"))),
                SseEvent::data(
                    json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk",
                           "created": 0, "model": "session", "choices": [],
                           "usage": {"prompt_tokens": 100, "completion_tokens": 3,
                                     "total_tokens": 103}})
                    .to_string(),
                ),
                SseEvent::data("[DONE]"),
            ])
        })
        .await
        .expect("bind the fake server");
        FakeModel { server, arrivals }
    }

    fn arrivals(&self) -> usize {
        self.arrivals.lock().unwrap().len()
    }

    fn wait_arrival(&self, index: usize, limit: Duration) -> Option<Instant> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(at) = self.arrivals.lock().unwrap().get(index) {
                return Some(*at);
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        None
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Client {
    AgenttyRpc,
    AgenttyJson,
    PiTui,
    /// Over RPC, with the working tree's snapshots turned off.
    AgenttyRpcNoSnapshots,
}

impl Client {
    fn label(self) -> &'static str {
        match self {
            Client::AgenttyRpc => "agentty, pi over RPC",
            Client::AgenttyJson => "agentty, pi --mode json",
            Client::PiTui => "pi's own TUI",
            Client::AgenttyRpcNoSnapshots => "agentty, RPC, no snapshots",
        }
    }

    fn ready_marker(self) -> &'static str {
        match self {
            Client::AgenttyRpc | Client::AgenttyJson | Client::AgenttyRpcNoSnapshots => {
                "Ask the agent anything"
            }
            Client::PiTui => "(auto)",
        }
    }
}

struct World {
    root: tempfile::TempDir,
    pi: PathBuf,
}

impl World {
    fn new(pi: PathBuf, base_url: &str) -> World {
        let root = tempfile::tempdir().unwrap();
        let agent_dir = root.path().join("home/.pi/agent");
        std::fs::create_dir_all(&agent_dir).unwrap();
        std::fs::create_dir_all(root.path().join("work")).unwrap();
        std::fs::write(
            root.path().join("no-snapshots.toml"),
            "[snapshots]\nenabled = false\n",
        )
        .unwrap();
        if checkout_tree() {
            copy_checkout(&root.path().join("work"));
        }
        let models = json!({"providers": {"fake": {
            "baseUrl": format!("{base_url}/v1"), "api": "openai-completions", "apiKey": "fake-key",
            "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false,
                       "supportsStore": false},
            "models": [{"id": "session"}]}}});
        std::fs::write(agent_dir.join("models.json"), models.to_string()).unwrap();
        World { root, pi }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    /// The last lines of agentty's log in this world (none for pi's own TUI).
    fn log_tail(&self) -> String {
        let logs = std::fs::read_dir(self.path("state/logs"))
            .map(|entries| {
                entries
                    .flatten()
                    .map(|entry| entry.path())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        logs.iter()
            .filter_map(|log| std::fs::read_to_string(log).ok())
            .flat_map(|text| {
                let lines: Vec<String> = text.lines().map(str::to_owned).collect();
                lines[lines.len().saturating_sub(15)..].to_vec()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn command(&self, client: Client) -> String {
        let env = format!(
            "HOME={home} PI_CODING_AGENT_DIR={home}/.pi/agent PI_OFFLINE=1 \
             PI_SKIP_VERSION_CHECK=1 PI_TELEMETRY=0 AGENTTY_STATE_DIR={state}",
            home = self.path("home").display(),
            state = self.path("state").display(),
        );
        let work = if big_tree() {
            big_tree::tree_dir()
        } else {
            self.path("work")
        };
        let program = match client {
            Client::PiTui => format!("{} --provider fake --model session", self.pi.display()),
            Client::AgenttyRpc | Client::AgenttyJson | Client::AgenttyRpcNoSnapshots => format!(
                "{} --provider pi --agent-bin {} --model fake/session --transport {}{}",
                env!("CARGO_BIN_EXE_agentty"),
                self.pi.display(),
                if client == Client::AgenttyJson {
                    "json"
                } else {
                    "rpc"
                },
                if client == Client::AgenttyRpcNoSnapshots {
                    format!(" --config {}", self.path("no-snapshots.toml").display())
                } else {
                    String::new()
                }
            ),
        };
        format!("cd {} && {env} exec {program}", work.display())
    }
}

/// One fresh conversation of `TURNS` turns; returns Enter → request per turn, or what went
/// wrong with the screen it left and the end of agentty's log (a client that hangs fails its
/// run, not the whole bench).
fn conversation(world: &World, model: &FakeModel, client: Client) -> Result<Vec<Duration>, String> {
    TMUX.start_pane((120, 40), None, &world.command(client));
    let times = turns(model, client)
        .map_err(|failure| format!("{failure}\nthe end of agentty's log:\n{}", world.log_tail()));
    TMUX.kill_server();
    std::thread::sleep(Duration::from_millis(300));
    times
}

fn turns(model: &FakeModel, client: Client) -> Result<Vec<Duration>, String> {
    let failed = |what: String| Err(format!("{} {what}:\n{}", client.label(), TMUX.screen()));
    if !wait_for_screen(client.ready_marker(), Duration::from_secs(30)) {
        return failed("did not come up".into());
    }
    // Let start-up work settle, as a user would take a moment to type.
    std::thread::sleep(Duration::from_millis(1500));
    // A tmux control-mode client, so that Enter is one write, not a tmux process start; its
    // notifications are drained so that it never blocks.
    let mut control = Control::attach(&TMUX, "120x40", |_| true);
    let mut times = Vec::new();
    for turn in 1..=TURNS {
        let before = model.arrivals();
        control.send(&format!("send-keys -t bench -l 'Question {turn}?'"));
        std::thread::sleep(Duration::from_millis(if big_tree() { 30 } else { 300 }));
        let entered = Instant::now();
        control.send("send-keys -t bench Enter");
        let Some(arrived) = model.wait_arrival(before, Duration::from_secs(30)) else {
            return failed(format!("sent no request for turn {turn}"));
        };
        times.push(arrived.saturating_duration_since(entered));
        if !wait_for_screen(&format!("Reply {turn}."), Duration::from_secs(30)) {
            return failed(format!("did not show the answer to turn {turn}"));
        }
        if big_tree() {
            // Right at idle: the turn's "after" snapshot is done once the status says so.
            if !wait_for_screen(" idle", Duration::from_secs(120)) {
                return failed(format!("did not come back to idle after turn {turn}"));
            }
            continue;
        }
        // The turn's bookkeeping (session stats, file writes) finishes before the next Enter.
        std::thread::sleep(Duration::from_millis(700));
    }
    drop(control);
    Ok(times)
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn pi_bin() -> Option<PathBuf> {
    let path = std::env::var_os("AGENTTY_PI_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/pi-cli/node_modules/.bin/pi"));
    Path::new(&path).is_file().then_some(path)
}

/// `AGENTTY_BENCH_TREE=checkout`: the working directory holds agentty's checkout.
fn checkout_tree() -> bool {
    std::env::var("AGENTTY_BENCH_TREE").as_deref() == Ok("checkout")
}

/// `AGENTTY_BENCH_TREE=big`: the working directory is the generated big tree.
fn big_tree() -> bool {
    std::env::var("AGENTTY_BENCH_TREE").as_deref() == Ok("big")
}

/// Copies the files git tracks in agentty's checkout into `work`.
fn copy_checkout(work: &Path) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let listed = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(repo)
        .output()
        .expect("git ls-files");
    for name in listed.stdout.split(|byte| *byte == 0) {
        let Ok(name) = std::str::from_utf8(name) else {
            continue;
        };
        let from = repo.join(name);
        let is_file = std::fs::symlink_metadata(&from).is_ok_and(|meta| meta.is_file());
        if name.is_empty() || !is_file {
            continue;
        }
        let to = work.join(name);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap();
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this with no such flag.
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let Some(pi) = pi_bin() else {
        eprintln!("enter_to_request: pi not found (set AGENTTY_PI_BIN); skipped");
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let model = runtime.block_on(FakeModel::start());
    let base_url = model.server.base_url();
    if big_tree() {
        let (tree, files, bytes) = big_tree::ensure();
        eprintln!(
            "tree: {} — {files} files, {:.0} MB",
            tree.display(),
            bytes as f64 / 1e6
        );
    }
    let clients: &[Client] = if checkout_tree() || big_tree() {
        &[Client::AgenttyRpc, Client::AgenttyRpcNoSnapshots]
    } else {
        &[Client::AgenttyRpc, Client::PiTui, Client::AgenttyJson]
    };
    let mut results: Vec<(Client, Vec<Vec<Duration>>)> =
        clients.iter().map(|client| (*client, Vec::new())).collect();
    // Interleaved, so that a noisy moment on the shared machine hits every client alike.
    let conversations = runs();
    for run in 0..conversations {
        for (client, runs) in &mut results {
            let world = World::new(pi.clone(), &base_url);
            match conversation(&world, &model, *client) {
                Ok(times) => {
                    eprintln!(
                        "run {}: {:<24} {}",
                        run + 1,
                        client.label(),
                        times
                            .iter()
                            .map(|time| format!("{:8.1} ms", ms(*time)))
                            .collect::<Vec<_>>()
                            .join(" ")
                    );
                    runs.push(times);
                }
                Err(failure) => eprintln!("run {}: FAILED: {failure}", run + 1),
            }
        }
    }
    println!();
    println!(
        "Enter -> first request at the fake server (median [min-max] of {conversations} conversations)"
    );
    println!("{:<26}{:>24}{:>24}{:>24}", "", "turn 1", "turn 2", "turn 3");
    for (client, runs) in &results {
        let mut row = format!("{:<26}", client.label());
        if runs.is_empty() {
            println!("{row}no conversation completed");
            continue;
        }
        for turn in 0..TURNS {
            let mut values: Vec<f64> = runs.iter().map(|times| ms(times[turn])).collect();
            values.sort_by(f64::total_cmp);
            let median = values[values.len() / 2];
            row.push_str(&format!(
                "{:>24}",
                format!(
                    "{median:.1} [{:.1}-{:.1}]",
                    values[0],
                    values[values.len() - 1]
                )
            ));
        }
        if runs.len() < conversations {
            row.push_str(&format!(
                "  ({} of {conversations} failed)",
                conversations - runs.len()
            ));
        }
        println!("{row}");
    }
    drop(model);
}
