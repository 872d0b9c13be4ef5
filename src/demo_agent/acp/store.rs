//! An ACP session: its stored record, kept the way the agent's flavour keeps it, plus what only
//! lives in the process.
//!
//! The default flavour keeps the demo's own session file (`state::Session`, the file the pi
//! modes use), `$AGENTTY_DEMO_STATE_DIR/sessions/<sessionId>.jsonl`: line 1 the header
//! `{"type":"session","version":3,"id","timestamp","cwd"}`, then per prompt a JSON string line
//! written when the prompt arrives (so a failed or cancelled prompt stays in it, as with a real
//! agent that appends as it goes) and, when the prompt ends with `end_turn`, a line
//! `{"type":"answer","text":...}` with the whole answer text. `session/load` reads the file as it
//! is then, so a client that restores a checkpointed copy continues from what the copy holds.
//!
//! The Gemini flavour keeps Gemini CLI's chat files instead (`gemini_store`).
//!
//! Either way each prompt appends `{"session_id","messages"}` to
//! `$AGENTTY_DEMO_STATE_DIR/requests.jsonl` (`state::DemoRequest`, as in the pi modes): the user
//! messages the model receives, the session's earlier prompts and then the new one.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::super::state::{Entry, Session, SessionChoice};
use super::gemini_store::GeminiSession;
use super::turn::Played;
use super::{wire, Flavour};

enum Record {
    Demo(Session),
    Gemini(GeminiSession),
}

pub(crate) struct AcpSession {
    record: Record,
    /// Where its tools run (`session/new`'s or `session/load`'s `cwd`).
    pub(crate) cwd: PathBuf,
    /// The `lag-after-cancel` bug once it struck: `Some(owed)`, the answer text the next prompt
    /// streams (`None`: nothing, it ends at once).
    pub(crate) lag: Option<Option<String>>,
}

impl AcpSession {
    pub(crate) fn create(flavour: Flavour, cwd: &Path) -> Self {
        let record = match flavour {
            Flavour::Default | Flavour::ConfigOptions => {
                match Session::open(&SessionChoice::New, &cwd.display().to_string()) {
                    Ok(record) => Record::Demo(record),
                    Err(message) => unreachable!("a new session always opens: {message}"),
                }
            }
            Flavour::Gemini => Record::Gemini(GeminiSession::create(cwd)),
        };
        Self::with(record, cwd)
    }

    /// The stored session `id`, with the `session/update`s that replay its conversation;
    /// `None` when there is no such session.
    pub(crate) fn load(flavour: Flavour, id: &str, cwd: &Path) -> Option<(Self, Vec<Value>)> {
        let (record, history) = match flavour {
            Flavour::Default | Flavour::ConfigOptions => {
                let (record, entries) = Session::load(id)?;
                let history = entries
                    .into_iter()
                    .map(|entry| match entry {
                        Entry::Prompt(text) => wire::chunk("user_message_chunk", &text),
                        Entry::Answer(text) => wire::chunk("agent_message_chunk", &text),
                    })
                    .collect();
                (Record::Demo(record), history)
            }
            Flavour::Gemini => {
                let record = GeminiSession::load(id, cwd)?;
                let history = record.history();
                (Record::Gemini(record), history)
            }
        };
        Some((Self::with(record, cwd), history))
    }

    fn with(record: Record, cwd: &Path) -> Self {
        Self {
            record,
            cwd: cwd.to_owned(),
            lag: None,
        }
    }

    pub(crate) fn id(&self) -> &str {
        match &self.record {
            Record::Demo(record) => &record.header.id,
            Record::Gemini(record) => record.id(),
        }
    }

    /// Stores the prompt and logs its request to `model`; returns the request's messages.
    pub(crate) fn record_prompt(&mut self, prompt: &str, model: &str) -> Vec<String> {
        match &mut self.record {
            Record::Demo(record) => {
                record.model = Some(model.to_owned());
                record.record_prompt(prompt);
                record.history.clone()
            }
            Record::Gemini(record) => record.record_prompt(prompt),
        }
    }

    /// Stores the answer the last prompt got, with its token counts.
    pub(crate) fn record_answer(&mut self, played: &Played, input_tokens: u64, output_tokens: u64) {
        match &mut self.record {
            Record::Demo(record) => record.record_answer(&played.answer),
            Record::Gemini(record) => record.record_answer(played, input_tokens, output_tokens),
        }
    }

    /// The model failed the last prompt: the Gemini flavour forgets it, the default flavour
    /// keeps it (as it was stored when it arrived).
    pub(crate) fn record_failure(&mut self) {
        if let Record::Gemini(record) = &mut self.record {
            record.forget_prompt();
        }
    }
}
