//! The `/rewind` picker (also Esc Esc on an empty, idle composer): the conversation's prompts,
//! newest first, each with when it was sent and the files its turn changed; then what to take
//! back — the conversation and the files, the conversation only, the files only — with a
//! preview, confirmed by Enter on a choice. The selection starts on Cancel: nothing is taken
//! back by a stray Enter.
//!
//! What a rewind took back stays recoverable: until the next prompt is sent, the picker's
//! first row undoes the last rewind (the prompts and the agent's conversation as they were
//! before it, the files it put back as they were), after `--resume` too.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent};

use crate::app::keymap::{PaneKey, REWIND_CHOICE_KEYS, REWIND_KEYS};
use crate::app::list::ListSelection;
use crate::app::pane::{OverlayPane, Step};
use crate::app::transcript::InertText;
use crate::orchestrator::TurnId;

/// A prompt the conversation sent (text sanitised): one record however many times it was
/// retried (a retry is a turn of its own, which takes the record over).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PromptRecord {
    /// The turn that sent it last (its latest retry).
    pub(crate) turn: TurnId,
    pub(crate) prompt: InertText,
    /// When it was first sent.
    pub(crate) sent: Instant,
    /// Its cells in the transcript, one per turn that sent it (marked when a rewind takes the
    /// prompt back).
    pub(crate) cells: Vec<crate::app::transcript::CellId>,
    /// Whether the agent's conversation can go back to before it, and why not.
    pub(crate) conversation_rewind: Result<(), InertText>,
}

/// One row of the picker.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RewindEntry {
    pub(crate) turn: TurnId,
    pub(crate) prompt: InertText,
    pub(crate) sent: Instant,
    /// The files this turn changed (not undone since).
    pub(crate) files: Vec<InertText>,
    /// The prompts a rewind to here takes back (this one and every later one).
    pub(crate) prompts_taken_back: usize,
    /// The files a rewind of the files to here puts back (this turn's and every later one's).
    pub(crate) files_put_back: Vec<InertText>,
    /// Whether the agent's conversation can go back to before this prompt, and why not
    /// (then only the files are offered).
    pub(crate) conversation_rewind: Result<(), InertText>,
}

/// The last rewind, while it can be undone (until the next prompt).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LastRewind {
    /// It went back to before this turn.
    pub(crate) turn: TurnId,
    /// Where that turn's prompt stood among the prompts, counted from 1 ("prompt 2").
    pub(crate) prompt_number: usize,
    /// The agent's conversation went back.
    pub(crate) conversation: bool,
    /// The files went back.
    pub(crate) files: bool,
    /// The prompts it took back, oldest first (their cells are marked).
    pub(crate) prompts: Vec<PromptRecord>,
    /// The turns whose changes it put back (their summaries are marked undone).
    pub(crate) changed_turns: Vec<TurnId>,
    /// The files it rewrote or removed: undoing it brings them back as it found them.
    pub(crate) files_back: Vec<InertText>,
    /// The files it recreated (the turns had deleted them): undoing it deletes them again.
    pub(crate) files_deleted_again: Vec<InertText>,
}

/// What to take back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RewindChoice {
    Both,
    ConversationOnly,
    /// The conversation, where the turns taken back changed no file.
    Conversation,
    FilesOnly,
    /// Bring back what the last rewind took (its own row).
    UndoRewind,
    Cancel,
}

impl RewindChoice {
    pub(crate) const ALL: [RewindChoice; 4] = [
        RewindChoice::Both,
        RewindChoice::ConversationOnly,
        RewindChoice::FilesOnly,
        RewindChoice::Cancel,
    ];

    /// The choices of the "undo the last rewind" row.
    pub(crate) const UNDO: [RewindChoice; 2] = [RewindChoice::UndoRewind, RewindChoice::Cancel];

    /// The choices where the agent's conversation cannot go back.
    pub(crate) const FILES_ONLY: [RewindChoice; 2] =
        [RewindChoice::FilesOnly, RewindChoice::Cancel];

    /// The choices where the turns taken back changed no file.
    pub(crate) const CONVERSATION: [RewindChoice; 2] =
        [RewindChoice::Conversation, RewindChoice::Cancel];

    /// Nothing can go back (no conversation checkpoint, no file change).
    pub(crate) const NOTHING: [RewindChoice; 1] = [RewindChoice::Cancel];

    pub(crate) fn label(self) -> &'static str {
        match self {
            RewindChoice::Both => "Conversation and files",
            RewindChoice::ConversationOnly => "Conversation only (files stay)",
            RewindChoice::Conversation => "Rewind the conversation",
            RewindChoice::FilesOnly => "Files only (the agent remembers)",
            RewindChoice::UndoRewind => "Undo the rewind",
            RewindChoice::Cancel => "Cancel",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RewindPicker {
    pub(crate) entries: Vec<RewindEntry>,
    /// The last rewind, offered first while it can be undone.
    pub(crate) undo: Option<LastRewind>,
    /// The row selected: the undo row first (if any), then `entries`.
    pub(crate) selected: usize,
    /// The choice being made for the selected row, once one was picked.
    pub(crate) choosing: Option<usize>,
}

/// What the picker asks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RewindRequest {
    /// Take back to before this turn.
    Rewind {
        turn: TurnId,
        prompt: String,
        conversation: bool,
        files: bool,
    },
    /// Undo the last rewind.
    UndoRewind(LastRewind),
}

impl RewindPicker {
    pub(crate) fn new(entries: Vec<RewindEntry>, undo: Option<LastRewind>) -> Self {
        Self {
            entries,
            undo,
            selected: 0,
            choosing: None,
        }
    }

    fn undo_rows(&self) -> usize {
        usize::from(self.undo.is_some())
    }

    fn rows(&self) -> usize {
        self.undo_rows() + self.entries.len()
    }

    /// The undo row is selected.
    pub(crate) fn on_undo_row(&self) -> bool {
        self.undo.is_some() && self.selected == 0
    }

    pub(crate) fn selected_entry(&self) -> Option<&RewindEntry> {
        self.entries
            .get(self.selected.checked_sub(self.undo_rows())?)
    }

    /// The keys it answers now: a prompt being picked, or what to take back.
    pub(crate) fn keys(&self) -> &'static [PaneKey] {
        if self.choosing.is_some() {
            REWIND_CHOICE_KEYS
        } else {
            REWIND_KEYS
        }
    }

    /// The choices for the selected row: only what can go back (the files only where some
    /// changed, the conversation only where its checkpoint was kept).
    pub(crate) fn choices(&self) -> &'static [RewindChoice] {
        if self.on_undo_row() {
            return &RewindChoice::UNDO;
        }
        let Some(entry) = self.selected_entry() else {
            return &RewindChoice::NOTHING;
        };
        match (
            entry.conversation_rewind.is_ok(),
            entry.files_put_back.is_empty(),
        ) {
            (true, false) => &RewindChoice::ALL,
            (true, true) => &RewindChoice::CONVERSATION,
            (false, false) => &RewindChoice::FILES_ONLY,
            (false, true) => &RewindChoice::NOTHING,
        }
    }
}

impl OverlayPane for RewindPicker {
    type Input<'a> = ();
    type Request = RewindRequest;

    fn on_key(&mut self, key: KeyEvent, _now: Option<Instant>, _input: ()) -> Step<Self::Request> {
        match self.choosing {
            None => match key.code {
                KeyCode::Esc => Step::Close,
                KeyCode::Enter if self.rows() > 0 => {
                    self.choosing = Some(self.choices().len() - 1);
                    Step::Open
                }
                _ => {
                    let mut list = ListSelection::at(self.selected);
                    list.on_key(key, self.rows());
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
                    let picked = self.choices()[choice];
                    if picked == RewindChoice::UndoRewind {
                        return match self.undo.take() {
                            Some(last) => Step::Done(RewindRequest::UndoRewind(last)),
                            None => Step::Close,
                        };
                    }
                    let Some(entry) = self.selected_entry() else {
                        return Step::Close;
                    };
                    let (conversation, files) = match picked {
                        RewindChoice::Both => (true, true),
                        RewindChoice::ConversationOnly | RewindChoice::Conversation => {
                            (true, false)
                        }
                        RewindChoice::FilesOnly => (false, true),
                        RewindChoice::UndoRewind | RewindChoice::Cancel => return Step::Close,
                    };
                    Step::Done(RewindRequest::Rewind {
                        turn: entry.turn,
                        // Back into the composer, to be edited.
                        prompt: entry.prompt.to_string(),
                        conversation,
                        files,
                    })
                }
                _ => {
                    let mut list = ListSelection::at(choice);
                    list.on_key(key, self.choices().len());
                    self.choosing = Some(list.selected);
                    Step::Open
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn entry(files: &[&str], conversation: bool) -> RewindEntry {
        RewindEntry {
            turn: 1,
            prompt: InertText::new("a prompt"),
            sent: Instant::now(),
            files: files.iter().map(|file| InertText::new(file)).collect(),
            prompts_taken_back: 1,
            files_put_back: files.iter().map(|file| InertText::new(file)).collect(),
            conversation_rewind: if conversation {
                Ok(())
            } else {
                Err(InertText::new("no checkpoint"))
            },
        }
    }

    #[test]
    fn only_what_can_go_back_is_offered() {
        let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
        for (entry, offered) in [
            (entry(&["a.rs"], true), &RewindChoice::ALL[..]),
            (entry(&[], true), &RewindChoice::CONVERSATION[..]),
            (entry(&["a.rs"], false), &RewindChoice::FILES_ONLY[..]),
            (entry(&[], false), &RewindChoice::NOTHING[..]),
        ] {
            let mut picker = RewindPicker::new(vec![entry], None);
            assert_eq!(picker.on_key(enter, None, ()), Step::Open);
            assert_eq!(picker.choices(), offered);
            // Cancel is selected first.
            assert_eq!(picker.choosing, Some(offered.len() - 1));
        }
        let mut picker = RewindPicker::new(vec![entry(&[], true)], None);
        picker.on_key(enter, None, ());
        picker.choosing = Some(0);
        assert_eq!(
            picker.on_key(enter, None, ()),
            Step::Done(RewindRequest::Rewind {
                turn: 1,
                prompt: "a prompt".into(),
                conversation: true,
                files: false,
            })
        );
    }
}
