//! The three-stage stop, run by the supervisor task that owns the agent process.
//!
//! 1. Interrupt: the Ctrl+C byte on stdin when it is an open pipe, and SIGINT to the group.
//! 2. Grace: up to 2 s (from the interrupt) for the agent to exit on its own.
//! 3. Kill: SIGKILL the whole tree, then up to 5 s to confirm it is gone.
//!
//! The durations are in `super::timings`.
//!
//! A second stop request skips the rest of the grace. Whatever ended the agent, the tree is
//! killed afterwards, so nothing it started survives it.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin};
use tokio::sync::oneshot;

use super::control::{StopControl, StopProgress};
use super::timings::TREE_KILL_DEADLINE;
use super::tree::{self, TreeIdentity};
use super::ExitReport;
use crate::stream::StopStage;

use super::timings::{INTERRUPT_WINDOW, KILL_CONFIRM, STOP_GRACE};
/// The Ctrl+C byte.
const INTERRUPT_BYTE: u8 = 0x03;

/// Kills the tree if the supervisor is dropped before it finished (runtime shutdown, panic).
struct TreeGuard {
    tree: TreeIdentity,
    armed: bool,
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        if self.armed {
            tree::kill_tree(&self.tree, Instant::now() + TREE_KILL_DEADLINE);
            tree::unregister(&self.tree);
        }
    }
}

pub(crate) async fn supervise(
    mut child: Child,
    stdin: Option<ChildStdin>,
    tree: TreeIdentity,
    stop: StopControl,
    exit_tx: oneshot::Sender<ExitReport>,
) {
    let mut guard = TreeGuard {
        tree: tree.clone(),
        armed: true,
    };
    let (status, stopped) = tokio::select! {
        status = child.wait() => (status.ok(), None),
        _ = stop.stop_token().cancelled() => {
            let started = Instant::now();
            let (status, stage) = three_stage_stop(&mut child, stdin, &tree, &stop).await;
            (status, Some((stage, started.elapsed().as_millis() as u64)))
        }
    };
    // Whatever ended the agent, descendants it left behind go too.
    let leftovers = tree.clone();
    let survivors = tokio::task::spawn_blocking(move || {
        tree::kill_tree(&leftovers, Instant::now() + KILL_CONFIRM)
    })
    .await
    .unwrap_or(0);
    tree::unregister(&tree);
    guard.armed = false;
    if stopped.is_some() {
        stop.set_progress(StopProgress::Stopped);
    }
    if survivors > 0 {
        tracing::error!(
            root = tree.root,
            survivors,
            "agent processes survived the kill"
        );
    }
    let _ = exit_tx.send(ExitReport {
        exit_code: status.and_then(|status| status.code()),
        signal: status.and_then(exit_signal),
        stopped,
        survivors,
    });
}

async fn three_stage_stop(
    child: &mut Child,
    stdin: Option<ChildStdin>,
    tree: &TreeIdentity,
    stop: &StopControl,
) -> (Option<ExitStatus>, StopStage) {
    let started = Instant::now();
    stop.set_progress(StopProgress::Interrupting);
    // Keep stdin open after the byte: closing it is a different request to some agents.
    let _stdin = match stdin {
        Some(mut stdin) => {
            let write = async {
                stdin.write_all(&[INTERRUPT_BYTE]).await?;
                stdin.flush().await
            };
            // A full pipe (an agent that does not read) must not hold up the stop.
            let _ = tokio::time::timeout(Duration::from_millis(50), write).await;
            Some(stdin)
        }
        None => None,
    };
    tree::signal_group(tree, Signal::SIGINT);

    if let Some(status) = wait_exit(child, stop, started + INTERRUPT_WINDOW).await {
        return (status, StopStage::Interrupt);
    }
    stop.set_progress(StopProgress::Waiting);
    if let Some(status) = wait_exit(child, stop, started + STOP_GRACE).await {
        return (status, StopStage::Grace);
    }

    stop.set_progress(StopProgress::Killing);
    let doomed = tree.clone();
    let kill = tokio::task::spawn_blocking(move || {
        tree::kill_tree(&doomed, Instant::now() + KILL_CONFIRM)
    });
    let status = tokio::time::timeout(KILL_CONFIRM, child.wait())
        .await
        .ok()
        .and_then(Result::ok);
    let _ = kill.await;
    (status, StopStage::Kill)
}

/// Waits for the agent to exit until `deadline`; `None` when it is still running then, or when
/// a second stop request asks for the kill right away.
async fn wait_exit(
    child: &mut Child,
    stop: &StopControl,
    deadline: Instant,
) -> Option<Option<ExitStatus>> {
    tokio::select! {
        status = child.wait() => Some(status.ok()),
        _ = tokio::time::sleep_until(deadline.into()) => None,
        _ = stop.kill_token().cancelled() => {
            // The agent may have exited in the same instant: check before escalating.
            child.try_wait().ok().flatten().map(Some)
        }
    }
}

fn exit_signal(status: ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}
