//! An ACP session: the demo's stored session (`state::Session`, the file the pi modes use) plus
//! what only lives in the process.
//!
//! The file is `$AGENTTY_DEMO_STATE_DIR/sessions/<sessionId>.jsonl`: line 1 the header
//! `{"type":"session","version":3,"id","timestamp","cwd"}`, then per prompt a JSON string line
//! written when the prompt arrives (so a failed or cancelled prompt stays in it, as with a real
//! agent that appends as it goes) and, when the prompt ends with `end_turn`, a line
//! `{"type":"answer","text":...}` with the whole answer text. `session/load` reads the file as it
//! is then, so a client that restores a checkpointed copy continues from what the copy holds.
//!
//! Each prompt appends `{"session_id","messages"}` to `$AGENTTY_DEMO_STATE_DIR/requests.jsonl`
//! (`state::DemoRequest`, as in the pi modes): the user messages the model receives, the
//! session's earlier prompts and then the new one.

use std::path::{Path, PathBuf};

use super::super::state::{Entry, Session, SessionChoice};

pub(crate) struct AcpSession {
    record: Session,
    /// Where its tools run (`session/new`'s or `session/load`'s `cwd`).
    pub cwd: PathBuf,
    /// The `lag-after-cancel` bug once it struck: `Some(owed)`, the answer text the next prompt
    /// streams (`None`: nothing, it ends at once).
    pub lag: Option<Option<String>>,
}

impl AcpSession {
    pub(crate) fn create(cwd: &Path) -> Self {
        let record = match Session::open(&SessionChoice::New, &cwd.display().to_string()) {
            Ok(record) => record,
            Err(message) => unreachable!("a new session always opens: {message}"),
        };
        Self {
            record,
            cwd: cwd.to_owned(),
            lag: None,
        }
    }

    /// The stored session `id`, with its entries; `None` when there is no such session.
    pub(crate) fn load(id: &str, cwd: &Path) -> Option<(Self, Vec<Entry>)> {
        let (record, entries) = Session::load(id)?;
        let session = Self {
            record,
            cwd: cwd.to_owned(),
            lag: None,
        };
        Some((session, entries))
    }

    pub(crate) fn id(&self) -> &str {
        &self.record.header.id
    }

    /// Stores the prompt and logs its request; returns the request's messages.
    pub(crate) fn record_prompt(&mut self, prompt: &str) -> Vec<String> {
        self.record.record_prompt(prompt);
        self.record.history.clone()
    }

    pub(crate) fn record_answer(&self, text: &str) {
        self.record.record_answer(text);
    }
}
