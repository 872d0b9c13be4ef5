//! A long-lived transport behind the single-attempt [`Provider`] contract: every attempt (a
//! prompt, a compaction) is played by the driver on the protocol's live process; what the
//! user hands a running turn goes through the driver's inbox; the rest is the protocol's.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::driver::{self, Attempt, Inbox, UserInput};
use super::protocol::{Compaction, Protocol, Work};
use super::slot::LiveSlot;
use crate::config::PermissionPolicy;
use crate::process::StopControl;
use crate::provider::checkpoint::UnwrittenTurn;
use crate::provider::runner::spawn_attempt;
use crate::provider::{
    compaction, AgentQueue, AgentSetting, AgentStatus, AgentStream, AttemptRequest, BranchPoint,
    Capabilities, Interjection, Provider, SessionCheckpoint,
};

pub(crate) struct LiveProvider<P: Protocol> {
    protocol: Arc<P>,
    policy: PermissionPolicy,
    slot: LiveSlot<P::Session>,
    inbox: Inbox,
    unwritten: Arc<Mutex<Option<UnwrittenTurn>>>,
}

impl<P: Protocol> LiveProvider<P> {
    /// `policy`: how the agent's questions are answered (where the transport has any).
    pub(crate) fn new(protocol: P, policy: PermissionPolicy) -> Self {
        Self {
            protocol: Arc::new(protocol),
            policy,
            slot: LiveSlot::new(),
            inbox: Inbox::default(),
            unwritten: Arc::new(Mutex::new(None)),
        }
    }

    fn attempt(&self, request: AttemptRequest, work: Work, stop: StopControl) -> AgentStream {
        let (protocol, slot, inbox, unwritten, policy) = (
            self.protocol.clone(),
            self.slot.clone(),
            self.inbox.clone(),
            self.unwritten.clone(),
            self.policy,
        );
        spawn_attempt(stop.clone(), move |sink| {
            let attempt = Attempt {
                protocol,
                slot,
                inbox,
                unwritten,
                policy,
                sink,
                stop,
            };
            attempt.run(request, work)
        })
    }
}

impl<P: Protocol> Provider for LiveProvider<P> {
    fn name(&self) -> &str {
        self.protocol.backend().name()
    }

    fn execute(&self, request: AttemptRequest, stop: StopControl) -> AgentStream {
        self.attempt(request, Work::Prompt, stop)
    }

    /// The stored session, once the agent has written the last turn's end (Claude Code writes
    /// it after reporting the turn over, and a checkpoint without it would lose that answer on
    /// a rollback).
    fn checkpoint(&self, request: &AttemptRequest) -> Option<SessionCheckpoint> {
        let unwritten = self.unwritten.lock().ok().and_then(|mut u| u.take());
        if let Some(unwritten) = unwritten {
            unwritten.wait();
        }
        self.protocol.checkpoint(request)
    }

    fn capabilities(&self) -> Capabilities {
        self.protocol.capabilities()
    }

    fn interject(&self, kind: Interjection, text: &str) -> bool {
        self.capabilities().interjections.allows(kind)
            && self
                .inbox
                .hand_over(UserInput::Interject(kind, text.to_owned()))
    }

    fn answer_permission(&self, id: &str, option: Option<String>, message: Option<String>) -> bool {
        self.inbox.hand_over(UserInput::Answer {
            id: id.to_owned(),
            option,
            note: message,
        })
    }

    fn change_setting(&self, setting: AgentSetting) -> bool {
        self.protocol.change_setting(setting)
    }

    fn session_restored(&self) {
        if self.protocol.restored() {
            self.slot.mark_stale();
        }
    }

    fn branch_session(&self, point: Option<&BranchPoint>) -> bool {
        self.protocol.branch_session(point)
    }

    fn warm_up(&self, request: AttemptRequest) {
        self.protocol.prepare(&request);
        let protocol = self.protocol.clone();
        self.slot.warm_up(
            move |stop| async move { driver::start(protocol.as_ref(), &request, &stop).await },
            self.protocol.agent(),
        );
    }

    fn agent_queue(&self) -> Option<watch::Receiver<AgentQueue>> {
        self.protocol.queue()
    }

    fn agent_status(&self) -> Option<watch::Receiver<AgentStatus>> {
        self.protocol.status()
    }

    fn can_compact(&self) -> bool {
        !matches!(self.protocol.compaction(), Compaction::Unavailable)
    }

    fn compact(
        &self,
        request: AttemptRequest,
        instructions: Option<String>,
        stop: StopControl,
    ) -> AgentStream {
        match self.protocol.compaction() {
            Compaction::Native => self.attempt(request, Work::Compact(instructions), stop),
            Compaction::SlashCommand(agent) => {
                let prompt = compaction::slash_command(instructions.as_deref());
                let stream = self.execute(AttemptRequest { prompt, ..request }, stop);
                compaction::by_slash_command(stream, agent)
            }
            Compaction::AgentCommand(name) => {
                let prompt = compaction::agent_command(&name, instructions.as_deref());
                let stream = self.execute(AttemptRequest { prompt, ..request }, stop);
                compaction::by_agent_command(stream, name)
            }
            Compaction::Unavailable => {
                compaction::unavailable_stream(self.name(), self.capabilities().transport)
            }
        }
    }
}

impl<P: Protocol> Drop for LiveProvider<P> {
    fn drop(&mut self) {
        // With no attempt running, end the process now; a running attempt holds the slot, and
        // the process ends when that attempt lets go of it.
        self.slot.release_if_idle();
    }
}
