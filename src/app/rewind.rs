//! The `/rewind` picker (also Esc Esc on an empty, idle composer): the conversation's prompts,
//! newest first, each with when it was sent and the files its turn changed; then what to take
//! back — the conversation and the files, the conversation only, the files only — with a
//! preview, confirmed by Enter on a choice. The selection starts on Cancel: nothing is taken
//! back by a stray Enter.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent};

use crate::app::list::ListSelection;
use crate::app::pane::{OverlayPane, Step};
use crate::orchestrator::TurnId;

/// A prompt the conversation sent (text sanitised).
#[derive(Debug, Clone, PartialEq)]
pub struct PromptRecord {
    pub turn: TurnId,
    pub prompt: String,
    pub sent: Instant,
}

/// One row of the picker.
#[derive(Debug, Clone, PartialEq)]
pub struct RewindEntry {
    pub turn: TurnId,
    pub prompt: String,
    pub sent: Instant,
    /// The files this turn changed (not undone since), sanitised.
    pub files: Vec<String>,
    /// The prompts a rewind to here takes back (this one and every later one).
    pub prompts_taken_back: usize,
    /// The files a rewind of the files to here puts back (this turn's and every later one's).
    pub files_put_back: Vec<String>,
}

/// What to take back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewindChoice {
    Both,
    ConversationOnly,
    FilesOnly,
    Cancel,
}

impl RewindChoice {
    pub const ALL: [RewindChoice; 4] = [
        RewindChoice::Both,
        RewindChoice::ConversationOnly,
        RewindChoice::FilesOnly,
        RewindChoice::Cancel,
    ];

    pub fn label(self) -> &'static str {
        match self {
            RewindChoice::Both => "Conversation and files",
            RewindChoice::ConversationOnly => "Conversation only (files stay)",
            RewindChoice::FilesOnly => "Files only (the agent remembers)",
            RewindChoice::Cancel => "Cancel",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RewindPicker {
    pub entries: Vec<RewindEntry>,
    pub selected: usize,
    /// The choice being made for the selected prompt, once one was picked.
    pub choosing: Option<usize>,
}

/// What the picker asks: take back to before this turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RewindRequest {
    pub(crate) turn: TurnId,
    pub(crate) prompt: String,
    pub(crate) conversation: bool,
    pub(crate) files: bool,
}

impl RewindPicker {
    /// The hints of its keys (beside them, so they cannot drift apart), wide and narrow.
    pub(crate) const KEYS_HINT: &'static str = "↑↓ choose a prompt · Enter · Esc close";
    pub(crate) const KEYS_HINT_NARROW: &'static str = "↑↓ Enter Esc";

    pub fn new(entries: Vec<RewindEntry>) -> Self {
        Self {
            entries,
            selected: 0,
            choosing: None,
        }
    }

    pub fn selected_entry(&self) -> Option<&RewindEntry> {
        self.entries.get(self.selected)
    }
}

impl OverlayPane for RewindPicker {
    type Input<'a> = ();
    type Request = RewindRequest;

    fn on_key(
        &mut self,
        key: KeyEvent,
        _now: Option<Instant>,
        _input: Self::Input<'_>,
    ) -> Step<Self::Request> {
        match self.choosing {
            None => match key.code {
                KeyCode::Esc => Step::Close,
                KeyCode::Enter if !self.entries.is_empty() => {
                    self.choosing = Some(RewindChoice::ALL.len() - 1);
                    Step::Open
                }
                _ => {
                    let mut list = ListSelection::at(self.selected);
                    list.on_key(key, self.entries.len());
                    self.selected = list.selected;
                    Step::Open
                }
            },
            Some(choice) => match key.code {
                KeyCode::Esc => {
                    self.choosing = None;
                    Step::Open
                }
                KeyCode::Enter => {
                    let Some(entry) = self.selected_entry() else {
                        return Step::Close;
                    };
                    let (conversation, files) = match RewindChoice::ALL[choice] {
                        RewindChoice::Both => (true, true),
                        RewindChoice::ConversationOnly => (true, false),
                        RewindChoice::FilesOnly => (false, true),
                        RewindChoice::Cancel => return Step::Close,
                    };
                    Step::Done(RewindRequest {
                        turn: entry.turn,
                        prompt: entry.prompt.clone(),
                        conversation,
                        files,
                    })
                }
                _ => {
                    let mut list = ListSelection::at(choice);
                    list.on_key(key, RewindChoice::ALL.len());
                    self.choosing = Some(list.selected);
                    Step::Open
                }
            },
        }
    }
}
