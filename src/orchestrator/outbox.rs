//! The driver's events on their way out: recorded in the session log, then sent to the UI (or
//! headless runner); while the channel is full they wait in a backlog, and the agent is not
//! read meanwhile. A receiver that is gone means nobody watches: the driver shuts down.

use tokio::sync::mpsc;

use super::Driver;
use crate::orchestrator::OrchestratorEvent;
use crate::provider::SessionRef;

impl Driver {
    pub(super) fn emit(&mut self, event: OrchestratorEvent) {
        if let OrchestratorEvent::TurnEnded { turn, outcome } = &event {
            tracing::info!(turn, ?outcome, "turn ended");
        }
        if let OrchestratorEvent::SessionChanged { session_id } = &event {
            self.agent_session = session_id
                .clone()
                .map_or(SessionRef::New, SessionRef::Resume);
        }
        if let Some(log) = &self.options.session_log {
            log.record_event(&event);
        }
        if self.receiver_gone {
            return;
        }
        if !self.backlog.is_empty() {
            self.backlog.push_back(event);
            return;
        }
        match self.events.try_send(event) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(event)) => self.backlog.push_back(event),
            Err(mpsc::error::TrySendError::Closed(_)) => self.receiver_left(),
        }
    }

    /// Sends the waiting events, the first with `permit`, the rest while there is room.
    pub(super) fn send_backlog(&mut self, permit: mpsc::Permit<'_, OrchestratorEvent>) {
        let Some(first) = self.backlog.pop_front() else {
            return;
        };
        permit.send(first);
        while let Some(event) = self.backlog.pop_front() {
            match self.events.try_send(event) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(event)) => {
                    self.backlog.push_front(event);
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    self.receiver_left();
                    return;
                }
            }
        }
    }

    pub(super) fn receiver_left(&mut self) {
        if !self.receiver_gone {
            tracing::info!("orchestrator events are no longer read; shutting down");
            self.receiver_gone = true;
            self.backlog.clear();
        }
    }
}
