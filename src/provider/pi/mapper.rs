//! pi `--mode json` events -> shared messages. (Being built: see the pi backend issue.)

use crate::provider::{AgentOutcome, ExitFacts, LineVerdict, Mapper};
use crate::stream::AgentMessage;

pub struct PiMapper {
    provider: &'static str,
    resumed: bool,
}

impl PiMapper {
    /// `provider` names the provider in `session.*` messages (`pi`, or `demo` for the demo
    /// agent); `resumed` makes the session header a `session.resumed`.
    pub fn new(provider: &'static str, resumed: bool) -> Self {
        Self { provider, resumed }
    }
}

impl Mapper for PiMapper {
    fn map_line(&mut self, _line: &str, _out: &mut Vec<AgentMessage>) -> LineVerdict {
        let _ = (self.provider, self.resumed);
        LineVerdict::Ignored
    }

    fn outcome_reported(&self) -> bool {
        false
    }

    fn finish(&mut self, _exit: ExitFacts, _out: &mut Vec<AgentMessage>) -> AgentOutcome {
        AgentOutcome::Unfinished
    }
}
