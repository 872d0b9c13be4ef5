//! Gemini events -> shared messages. (Being built: see the backend issue.)

use crate::provider::{AgentOutcome, ExitFacts, LineVerdict, Mapper};
use crate::stream::AgentMessage;

#[derive(Default)]
pub struct GeminiMapper;

impl Mapper for GeminiMapper {
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
