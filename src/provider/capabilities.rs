//! What a backend and its transports let agentty do, declared as data: a backend names the
//! long-lived transports it speaks ([`LiveTransport`]) and how its agent departs from them
//! ([`Quirks`]); a provider says what its transport does ([`Capabilities`]). The registry, the
//! orchestrator, the chat and `agentty run` read these; none of them names a transport to
//! know what it can do.

use crate::config::Transport;

/// A message for the agent while its turn runs (long-lived transports only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interjection {
    /// Delivered after the current tool call (pi `steer`).
    Steer,
    /// Delivered after the turn (pi `follow_up`).
    FollowUp,
}

/// Which messages reach a running turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interjections {
    None,
    /// Steering only (a follow-up waits in agentty's queue).
    Steer,
    /// Steering and follow-ups.
    SteerAndFollowUp,
}

impl Interjections {
    pub fn allows(self, kind: Interjection) -> bool {
        match self {
            Interjections::None => false,
            Interjections::Steer => kind == Interjection::Steer,
            Interjections::SteerAndFollowUp => true,
        }
    }
}

/// Whether images go with a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Images {
    Taken,
    /// Never: why, for the user.
    TextOnly(&'static str),
    /// As the agent announces once it runs (an ACP agent's `promptCapabilities.image`, in
    /// its status): why, for the user, when it says no.
    AgentSays(&'static str),
}

impl Images {
    /// Whether images are sent before the agent says anything.
    pub fn taken(self) -> bool {
        self == Images::Taken
    }

    /// Why a prompt's images are not sent.
    pub fn why_not(self) -> &'static str {
        match self {
            Images::Taken => "this transport takes text only",
            Images::TextOnly(why) | Images::AgentSays(why) => why,
        }
    }
}

/// What a provider's transport lets agentty do with the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    pub transport: Transport,
    pub images: Images,
    pub interjections: Interjections,
    /// The agent asks agentty before acting, so a permission policy applies.
    pub asks_permission: bool,
    /// The user's note with a rejection reaches the agent with it (else it goes as the next
    /// prompt).
    pub permission_feedback: bool,
    /// How an answer given "always" can be taken back, for the user.
    pub revoking_always: &'static str,
}

/// For transports over which the agent never asks agentty.
pub(crate) const NOT_ASKED: &str = "Over this transport the agent does not ask agentty for \
     permission: its own settings decide what it may do.";

impl Capabilities {
    /// A one-shot JSON mode: text in, the agent's events out, nothing more.
    pub const ONE_SHOT: Capabilities = Capabilities {
        transport: Transport::Json,
        images: Images::TextOnly(
            "the one-shot JSON mode takes text only (pi rpc, claude stream and codex \
             app-server take images)",
        ),
        interjections: Interjections::None,
        asks_permission: false,
        permission_feedback: false,
        revoking_always: NOT_ASKED,
    };

    /// Whether any message reaches a running turn (Enter steers).
    pub fn steers(&self) -> bool {
        self.interjections != Interjections::None
    }
}

impl Default for Capabilities {
    fn default() -> Self {
        Capabilities::ONE_SHOT
    }
}

/// A long-lived transport as a backend declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveTransport {
    pub transport: Transport,
    /// `Err`: the backend has it but cannot run it now (its ACP adapter is not installed):
    /// why, and the way out.
    pub ready: Result<(), String>,
}

impl LiveTransport {
    pub fn ready(transport: Transport) -> Self {
        Self {
            transport,
            ready: Ok(()),
        }
    }
}

/// How a particular agent departs from its protocol (each measured on the real agent).
#[derive(Debug, Clone, Copy, Default)]
pub struct Quirks {
    /// After a cancel the agent answers the next prompt one turn late: start it again
    /// (loading the session) after every stopped turn.
    pub(crate) restart_after_cancel: bool,
    /// How the agent's error messages name an HTTP status they do not state as a number
    /// (the Codex ACP adapter passes on Codex's wording of a 5xx).
    pub(crate) http_status_of: Option<fn(&str) -> Option<u16>>,
    /// A prompt the agent answers with an error (its model request failed) is dropped from
    /// its session, in memory and on disk: the process can serve the retry.
    pub(crate) forgets_failed_prompt: bool,
    /// Loading the session the process holds re-reads it from its stored file: a rollback
    /// needs no new process.
    pub(crate) reloads_in_process: bool,
}
