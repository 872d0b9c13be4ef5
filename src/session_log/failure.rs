//! A log that cannot be written is said once, where the user sees it.
//!
//! A read-only state dir, a full disk (ENOSPC) or a file-size limit (EFBIG; agentty ignores
//! SIGXFSZ so that the limit is an error, not death) used to show nowhere but in agentty's own
//! log file, and the user found out only when `--resume` said there was nothing to resume.
//! Now the first failure of each part (the conversation's log, the agent's raw lines) goes to
//! a sink the caller gives (the chat shows a notice, `agentty run` a line on stderr), and that
//! part is given up: the chat goes on without it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Which part of a conversation's log could not be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogPart {
    /// The log itself: what `--resume` reads.
    Conversation,
    /// The sidecar of the agent's raw lines: what `agentty replay` reads.
    RawLines,
}

/// The first failure to write one part of a conversation's log.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WriteFailure {
    pub(crate) part: LogPart,
    pub(crate) conversation_id: String,
    pub(crate) path: PathBuf,
    pub(crate) error: String,
}

impl WriteFailure {
    /// What the user is told.
    pub(crate) fn message(&self) -> String {
        let id = self
            .conversation_id
            .get(..8)
            .unwrap_or(&self.conversation_id);
        let path = self.path.display();
        let error = &self.error;
        match self.part {
            LogPart::Conversation => format!(
                "Conversation {id} is not being saved: cannot write {path} ({error}). It goes \
                 on without its log: nothing from here on can be resumed."
            ),
            LogPart::RawLines => format!(
                "The agent's raw output in conversation {id} is not being saved: cannot write \
                 {path} ({error}); `agentty replay` will lack it."
            ),
        }
    }
}

/// Where write failures are told.
pub(crate) type FailureSink = Box<dyn Fn(WriteFailure) + Send + Sync>;

/// Tells each part's first failure to the sink (once one is set) and agentty's own log.
#[derive(Default)]
pub(crate) struct FailureReport {
    conversation_id: String,
    sink: OnceLock<FailureSink>,
    conversation_told: AtomicBool,
    raw_lines_told: AtomicBool,
}

impl FailureReport {
    pub(crate) fn new(conversation_id: &str) -> Self {
        Self {
            conversation_id: conversation_id.to_owned(),
            ..Self::default()
        }
    }

    pub(crate) fn set_sink(&self, sink: FailureSink) {
        let _ = self.sink.set(sink);
    }

    pub(crate) fn report(&self, part: LogPart, path: &Path, error: &std::io::Error) {
        let told = match part {
            LogPart::Conversation => &self.conversation_told,
            LogPart::RawLines => &self.raw_lines_told,
        };
        if told.swap(true, Ordering::SeqCst) {
            return;
        }
        tracing::error!(%error, path = %path.display(), ?part, "cannot write the session log; giving it up");
        // A conversation not saved at all has no raw lines saved either: one notice says it.
        let implied = part == LogPart::RawLines && self.conversation_told.load(Ordering::SeqCst);
        if implied {
            return;
        }
        if let Some(sink) = self.sink.get() {
            sink(WriteFailure {
                part,
                conversation_id: self.conversation_id.clone(),
                path: path.to_path_buf(),
                error: error.to_string(),
            });
        }
    }
}
