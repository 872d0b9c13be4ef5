//! One turn without a UI, for `agentty run`: the same machine, policy and classifier as the
//! chat, with every shared message handed to a callback.
//!
//! The callback sees every message of every attempt in order (each attempt ends with its own
//! terminal message), and between attempts a synthesised `retry.scheduled` (and the
//! orchestrator's notices, such as a fresh session after a lost one). The outcome is the
//! final attempt's. A [`StopControl`] the caller keeps is the stop hook: its first `stop()` (on
//! SIGINT, say) starts the three-stage stop, or cancels a pending retry; a second skips to the
//! kill. The caller's `StopControl` also mirrors the stop's progress.

use super::driver::{spawn_orchestrator, OrchestratorHandle, OrchestratorOptions};
use super::{Command, OrchestratorEvent, TurnOutcome};
use crate::provider::StopControl;
use crate::stream::{AgentMessage, FailureReason};

/// Runs `prompt` as one turn (with automatic retries as `options.policy` allows) and returns how
/// it ended. Must be called within a tokio runtime.
pub async fn run_headless_turn(
    options: OrchestratorOptions,
    prompt: String,
    stop: StopControl,
    mut on_message: impl FnMut(&AgentMessage),
) -> TurnOutcome {
    if prompt.trim().is_empty() {
        return TurnOutcome::Failed {
            reason: FailureReason::StartFailed,
            message: "the prompt is empty".into(),
        };
    }
    let OrchestratorHandle {
        commands,
        mut events,
    } = spawn_orchestrator(options);
    // The orchestrator outlives neither this function nor its receiver, so a failed send only
    // means it has already ended; the loop below then sees the channel close.
    let _ = commands.send(Command::Submit(prompt));
    let mut outcome = None;
    // An attempt's terminal message waits for what follows it: the turn's file changes, which
    // are known only once the turn ended, go before it, so that the stream still ends with it.
    let mut held_terminal: Option<AgentMessage> = None;
    let mut turn_ended = false;
    let mut stop_forwarded = false;
    let mut kill_forwarded = false;
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Some(event @ (OrchestratorEvent::Message { .. }
                | OrchestratorEvent::RetryScheduled { .. }
                | OrchestratorEvent::Notice { .. }
                | OrchestratorEvent::TurnChanges { .. })) => {
                    if let Some((_, _, message)) = event.as_stream_message() {
                        let message = message.into_owned();
                        // Before the turn ended, what follows a terminal message is the next
                        // attempt's (a retry): the terminal goes first. After, it is the turn's
                        // closing report (its file changes), which goes before the terminal.
                        if !turn_ended {
                            if let Some(terminal) = held_terminal.take() {
                                on_message(&terminal);
                            }
                        }
                        if message.is_terminal() {
                            held_terminal = Some(message);
                        } else {
                            on_message(&message);
                        }
                    }
                }
                Some(OrchestratorEvent::StopProgress { progress, .. }) => stop.set_progress(progress),
                Some(OrchestratorEvent::TurnEnded { outcome: ended, .. }) => {
                    turn_ended = true;
                    outcome = Some(ended);
                    let _ = commands.send(Command::Shutdown);
                }
                Some(OrchestratorEvent::ShutDown) | None => {
                    if let Some(terminal) = held_terminal.take() {
                        on_message(&terminal);
                    }
                    break;
                }
                Some(_) => {}
            },
            () = stop.stop_token().cancelled(), if !stop_forwarded => {
                stop_forwarded = true;
                let _ = commands.send(Command::Stop);
            }
            () = stop.kill_token().cancelled(), if !kill_forwarded => {
                kill_forwarded = true;
                // The machine escalates a repeated stop to the kill.
                let _ = commands.send(Command::Stop);
            }
        }
    }
    outcome.unwrap_or_else(|| TurnOutcome::Failed {
        reason: FailureReason::NoCompletion,
        message: "the orchestrator ended before the turn did".into(),
    })
}
