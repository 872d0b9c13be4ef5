//! The staged stop of one turn on a live process. Stage 0 is in-band: when the user stops the
//! attempt ([`InBandStop::requested`]) the protocol sends its cancel and the driver says so
//! ([`InBandStop::sent`]); from then on a task watches: if the turn has not ended `grace`
//! later, the process layer's signal stages run on the agent's tree, a second stop kills at
//! once, and the stages' progress is reported as the attempt's. The task ends with the turn.
//!
//! The time a stop took ([`InBandStop::elapsed_ms`]) runs from the moment the stop began to the
//! moment the turn's terminal message goes out: closing a process that cannot serve the next
//! turn is part of what the user waited for, on every transport.

use std::time::Duration;

use tokio::time::Instant;

use crate::process::{ExitReport, StopControl, StopProgress};
use crate::provider::runner::EndedBy;
use crate::stream::{AgentMessage, StopStage};

/// How a turn on a live process ended.
pub(crate) enum TurnEnd {
    /// The agent said the turn is over: the process stays.
    Answered,
    /// The process died (by itself, or by the signal stages of a stop).
    Exited(ExitReport),
}

pub(crate) struct InBandStop {
    attempt: StopControl,
    process: StopControl,
    sent: Option<Instant>,
    escalation: Option<tokio::task::JoinHandle<()>>,
}

impl InBandStop {
    pub(crate) fn new(attempt: StopControl, process: StopControl) -> Self {
        Self {
            attempt,
            process,
            sent: None,
            escalation: None,
        }
    }

    /// Resolves once the user asks to stop the attempt (select on it while `!is_sent()`).
    pub(crate) fn requested(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.attempt.stop_token().clone().cancelled_owned()
    }

    /// The stop began now (the protocol sent its in-band cancel, if it has one): the signal
    /// stages run if the turn has not ended `grace` later.
    pub(crate) fn sent(&mut self, grace: Duration) {
        self.attempt.set_progress(StopProgress::Interrupting);
        self.sent = Some(Instant::now());
        self.escalation = Some(tokio::spawn(escalate(
            self.attempt.clone(),
            self.process.clone(),
            grace,
        )));
    }

    pub(crate) fn is_sent(&self) -> bool {
        self.sent.is_some()
    }

    /// How `end` ended the attempt: the exit report to compose the terminal message from, who
    /// ended it, and whether the process may serve the next attempt.
    pub(crate) fn outcome(&mut self, end: TurnEnd) -> (ExitReport, EndedBy, bool) {
        // The turn is over: a process that stays must not be stopped by a late escalation.
        if let Some(escalation) = self.escalation.take() {
            escalation.abort();
        }
        if self.sent.is_some() {
            self.attempt.set_progress(StopProgress::Stopped);
        }
        let elapsed_ms = self.elapsed_ms();
        match end {
            TurnEnd::Answered => {
                let report = ExitReport {
                    exit_code: Some(0),
                    ..ExitReport::default()
                };
                let ended_by = match self.sent {
                    Some(_) => EndedBy::UserStop {
                        stage: StopStage::Cancel,
                        elapsed_ms,
                    },
                    None => EndedBy::Exit,
                };
                (report, ended_by, true)
            }
            TurnEnd::Exited(report) => {
                let ended_by = match (self.sent, report.stopped) {
                    (Some(_), Some((stage, _))) => EndedBy::UserStop { stage, elapsed_ms },
                    (Some(_), None) => EndedBy::UserStop {
                        stage: StopStage::Grace,
                        elapsed_ms,
                    },
                    (None, _) => EndedBy::Exit,
                };
                (report, ended_by, false)
            }
        }
    }

    /// Milliseconds since the stop began (0 without a stop).
    fn elapsed_ms(&self) -> u64 {
        self.sent
            .map_or(0, |sent| sent.elapsed().as_millis() as u64)
    }

    /// `terminal` as it goes out now: a stop's time counts up to this moment.
    pub(crate) fn stamp(&self, terminal: &mut AgentMessage) {
        if let (AgentMessage::Cancelled { elapsed_ms, .. }, Some(_)) = (terminal, self.sent) {
            *elapsed_ms = self.elapsed_ms();
        }
    }
}

impl Drop for InBandStop {
    fn drop(&mut self) {
        if let Some(escalation) = self.escalation.take() {
            escalation.abort();
        }
    }
}

/// After an in-band cancel: the signal stages when `grace` runs out (or at once on a second
/// stop), their progress passed on as the attempt's.
async fn escalate(attempt: StopControl, process: StopControl, grace: Duration) {
    let mut progress = process.subscribe();
    tokio::select! {
        _ = tokio::time::sleep(grace) => {
            tracing::warn!("the agent did not end the turn in-band; stopping the process");
            process.stop();
        }
        _ = attempt.kill_token().cancelled() => process.kill_now(),
    }
    loop {
        tokio::select! {
            changed = progress.changed() => {
                if changed.is_err() {
                    return;
                }
                let now = *progress.borrow_and_update();
                if now != StopProgress::Stopped {
                    attempt.set_progress(now);
                }
            }
            _ = attempt.kill_token().cancelled(), if !process.kill_token().is_cancelled() => {
                process.kill_now();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_stops_time_runs_until_its_terminal_message_goes_out() {
        let mut stop = InBandStop::new(StopControl::new(), StopControl::new());
        let mut unstopped = AgentMessage::Cancelled {
            stop_stage: StopStage::Cancel,
            elapsed_ms: 7,
        };
        stop.stamp(&mut unstopped);
        assert_eq!(
            unstopped,
            AgentMessage::Cancelled {
                stop_stage: StopStage::Cancel,
                elapsed_ms: 7
            },
            "no stop began: nothing to count"
        );
        stop.sent(Duration::from_secs(2));
        tokio::time::advance(Duration::from_millis(30)).await;
        let (_, ended_by, keep) = stop.outcome(TurnEnd::Answered);
        assert!(keep);
        assert_eq!(
            ended_by,
            EndedBy::UserStop {
                stage: StopStage::Cancel,
                elapsed_ms: 30
            }
        );
        // Closing the process took another 500 ms before the terminal message went out.
        tokio::time::advance(Duration::from_millis(500)).await;
        let mut terminal = AgentMessage::Cancelled {
            stop_stage: StopStage::Cancel,
            elapsed_ms: 30,
        };
        stop.stamp(&mut terminal);
        assert_eq!(
            terminal,
            AgentMessage::Cancelled {
                stop_stage: StopStage::Cancel,
                elapsed_ms: 530
            }
        );
    }
}
