//! Stop latency: from the stop request to `terminal.cancelled`, for an agent that honours
//! SIGINT (target p50 ≤ 50 ms) and one that ignores it (2 s grace + kill: ≤ 2.2 s). After each
//! stop the agent's processes are counted: the target is 0.
//!
//! `in_band/*`: the in-band stop (stage 0) of each long-lived transport, on the demo agent in
//! its four two-way modes (pi rpc, Claude stream, Codex app-server, ACP): a slow turn is
//! stopped at its first text, the time to `terminal.cancelled` is measured, the stage must be
//! the in-band one and the process must stay for the next turn (the same process serves every
//! iteration). The `elapsed_ms` the terminal message reports is printed beside it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use futures::StreamExt;

use agentty::config::{PermissionPolicy, ProviderSettings, Transport};
use agentty::process::SpawnSpec;
use agentty::provider::{
    build_provider_with, AgentOutcome, AttemptRequest, Backend, CliProvider, ExitFacts,
    LineVerdict, Mapper, Provider, SessionRef, StopControl,
};
use agentty::stream::{AgentMessage, StopStage};

struct ScriptBackend(PathBuf);

struct NoMapper;

impl Mapper for NoMapper {
    fn map_line(&mut self, _line: &str, _out: &mut Vec<AgentMessage>) -> LineVerdict {
        LineVerdict::Ignored
    }
    fn outcome_reported(&self) -> bool {
        false
    }
    fn finish(&mut self, _exit: ExitFacts, _out: &mut Vec<AgentMessage>) -> AgentOutcome {
        AgentOutcome::Unfinished
    }
}

impl Backend for ScriptBackend {
    fn name(&self) -> &'static str {
        "script"
    }
    fn spawn_spec(&self, _request: &AttemptRequest) -> SpawnSpec {
        SpawnSpec::new(&self.0)
    }
    fn mapper(&self, _request: &AttemptRequest) -> Box<dyn Mapper> {
        Box::new(NoMapper)
    }
}

fn write_script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            !stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// Starts the agent, waits until it wrote its PIDs (it and a setsid'd tool child), stops it,
/// and returns the stop latency; panics if any of its processes survived.
async fn one_stop(script: &Path, pid_file: &Path) -> Duration {
    let _ = std::fs::remove_file(pid_file);
    let provider = CliProvider::new(ScriptBackend(script.to_path_buf()));
    let stop = StopControl::new();
    let mut stream = provider.execute(AttemptRequest::default(), stop.clone());
    let pids: Vec<i32> = loop {
        if let Ok(text) = std::fs::read_to_string(pid_file) {
            if text.ends_with('\n') {
                break text
                    .split_whitespace()
                    .map(|pid| pid.parse().unwrap())
                    .collect();
            }
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    let started = Instant::now();
    stop.stop();
    let mut cancelled = false;
    while let Some(message) = stream.next().await {
        cancelled |= matches!(message, AgentMessage::Cancelled { .. });
    }
    let latency = started.elapsed();
    assert!(cancelled);
    let survivors = pids.iter().filter(|pid| alive(**pid)).count();
    if survivors > 0 {
        for pid in &pids {
            eprintln!(
                "pid {pid}: {:?}",
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
            );
        }
    }
    assert_eq!(survivors, 0, "processes left after the stop");
    latency
}

fn stop_latency(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let cooperative = write_script(
        dir.path(),
        "cooperative",
        &format!(
            "setsid sleep 300 &\necho \"$$ $!\" > '{}'\nexec sleep 300",
            pid_file.display()
        ),
    );
    let hostile = write_script(
        dir.path(),
        "hostile",
        &format!(
            "trap '' INT TERM\nsetsid sleep 300 &\necho \"$$ $!\" > '{}'\nwhile :; do sleep 0.05; done",
            pid_file.display()
        ),
    );
    let mut group = c.benchmark_group("stop_latency");
    group.sample_size(20);
    group.bench_function("honours_sigint", |b| {
        b.iter_custom(|iterations| {
            runtime.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    total += one_stop(&cooperative, &pid_file).await;
                }
                total
            })
        })
    });
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(25));
    group.bench_function("ignores_sigint_and_sigterm", |b| {
        b.iter_custom(|iterations| {
            runtime.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    total += one_stop(&hostile, &pid_file).await;
                }
                total
            })
        })
    });
    group.finish();
}

/// A provider running the demo agent over `transport`, with its state in `dir`.
fn demo_over(transport: Transport, name: &str, dir: &Path) -> std::sync::Arc<dyn Provider> {
    let launcher = write_script(
        dir,
        &format!("demo-{name}"),
        &format!("exec '{}' demo-agent \"$@\"", env!("CARGO_BIN_EXE_agentty")),
    );
    let settings = ProviderSettings {
        command: Some(launcher),
        permissions: Some(PermissionPolicy::Ask),
        env: [
            (
                agentty::demo_agent::state::STATE_DIR_VAR.to_owned(),
                dir.display().to_string(),
            ),
            (
                agentty::demo_agent::TIME_SCALE_VAR.to_owned(),
                "1".to_owned(),
            ),
        ]
        .into(),
        ..ProviderSettings::default()
    };
    build_provider_with("demo", &settings, transport).unwrap()
}

/// One in-band stop: a slow turn on `provider`'s live process, stopped at its first text.
/// Returns the time from the stop to the stream's end, and the `elapsed_ms` reported.
async fn one_in_band_stop(
    provider: &dyn Provider,
    cwd: &Path,
    session: &mut SessionRef,
) -> (Duration, u64) {
    let stop = StopControl::new();
    let request = AttemptRequest {
        prompt: "slow".into(),
        session: session.clone(),
        cwd: Some(cwd.to_path_buf()),
        attempt: 1,
        ..AttemptRequest::default()
    };
    let mut stream = provider.execute(request, stop.clone());
    while let Some(message) = stream.next().await {
        match message {
            AgentMessage::SessionStarted {
                session_id: Some(id),
                ..
            }
            | AgentMessage::SessionResumed { session_id: id, .. } => {
                *session = SessionRef::Resume(id)
            }
            AgentMessage::Assistant { .. } => break,
            other if other.is_terminal() => panic!("the slow turn ended first: {other:?}"),
            _ => {}
        }
    }
    let started = Instant::now();
    stop.stop();
    let mut reported = None;
    while let Some(message) = stream.next().await {
        if let AgentMessage::Cancelled {
            stop_stage,
            elapsed_ms,
        } = message
        {
            assert_eq!(stop_stage, StopStage::Cancel, "stopped in-band");
            reported = Some(elapsed_ms);
        }
    }
    (started.elapsed(), reported.expect("terminal.cancelled"))
}

fn in_band_stop(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("in_band");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    for (transport, name) in [
        (Transport::Rpc, "rpc"),
        (Transport::Stream, "stream"),
        (Transport::AppServer, "app-server"),
        (Transport::Acp, "acp"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let provider = demo_over(transport, name, dir.path());
        let mut session = SessionRef::New;
        let mut reported = Vec::new();
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                runtime.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iterations {
                        let (latency, elapsed_ms) =
                            one_in_band_stop(provider.as_ref(), dir.path(), &mut session).await;
                        total += latency;
                        reported.push(elapsed_ms);
                    }
                    total
                })
            })
        });
        reported.sort_unstable();
        if let Some(median) = reported.get(reported.len() / 2) {
            eprintln!(
                "in_band/{name}: reported elapsed_ms median {median} (min {}, max {}, {} stops)",
                reported[0],
                reported[reported.len() - 1],
                reported.len()
            );
        }
        runtime.block_on(async move { drop(provider) });
    }
    group.finish();
}

criterion_group!(benches, stop_latency, in_band_stop);
criterion_main!(benches);
