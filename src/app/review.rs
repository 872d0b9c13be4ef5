//! Reviewing what the agent changed in the tree: the turns that changed files, the `/diff`
//! overlay's state and keys, and the `/undo` confirmation. Pure state; the snapshots are read
//! by the event loop (`snapshot::load_diffs`) and written back by the orchestrator (`UndoTurn`).

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent};

use crate::app::list::PAGE;
use crate::app::pane::{OverlayPane, Step};
use crate::app::transcript::{ChangedFile, InertText};
use crate::orchestrator::TurnId;
use crate::snapshot::{DiffLineKind, FileDiffView};
use crate::stream::ChangeStatus;

/// A turn that changed files, as `turn.changes` reported it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChangedTurn {
    pub(crate) turn: TurnId,
    pub(crate) files: Vec<ChangedFile>,
    /// `/undo` put its files back.
    pub(crate) undone: bool,
    /// The transcript cell that shows it.
    pub(crate) cell: crate::app::transcript::CellId,
}

/// What `/diff` asks the event loop to read.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffRequest {
    /// The conversation's turns that changed files and were not undone, oldest first.
    pub(crate) turns: Vec<TurnId>,
    /// The last of them.
    pub(crate) last: TurnId,
}

/// What the event loop read for `/diff`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LoadedDiff {
    pub(crate) conversation: Vec<FileDiffView>,
    pub(crate) last_turn: Vec<FileDiffView>,
    pub(crate) turns: usize,
    /// The turn `last_turn` is of.
    pub(crate) last: TurnId,
}

/// The turn the "last turn" scope shows, where it is not the conversation's last prompt (that
/// one changed no file, or is still running): the scope names it instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EarlierTurn {
    /// Its prompt's number among the prompts ("prompt 2").
    pub(crate) number: usize,
    /// "prompt 2 “fix the bug”".
    pub(crate) named: String,
}

/// Which changes `/diff` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DiffScope {
    Conversation,
    LastTurn,
}

/// One row of the diff overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DiffRow {
    /// A file's header: its path, status and line counts.
    File {
        path: InertText,
        status: ChangeStatus,
        added: u64,
        removed: u64,
    },
    /// A line of that file's diff; `path` names the file (for highlighting), shared by all its
    /// lines.
    Line {
        kind: DiffLineKind,
        text: InertText,
        path: std::sync::Arc<InertText>,
    },
}

/// The `/diff` overlay: the two diffs (sanitised) and how far it is scrolled.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffView {
    pub(crate) scope: DiffScope,
    conversation: Vec<DiffRow>,
    last_turn: Vec<DiffRow>,
    pub(crate) turns: usize,
    /// The "last turn" scope shows an earlier prompt's turn (`None`: the last prompt's).
    pub(crate) earlier: Option<EarlierTurn>,
    pub(crate) scroll: usize,
    /// The rows the last frame showed, which a page key moves (the view passes it in after
    /// each frame, see `AppState::on_drawn`).
    page: usize,
}

impl DiffView {
    pub(crate) fn new(loaded: LoadedDiff) -> Self {
        Self {
            // With one turn the two are the same; the conversation's is the useful default.
            scope: DiffScope::Conversation,
            conversation: rows(&loaded.conversation),
            last_turn: rows(&loaded.last_turn),
            turns: loaded.turns,
            earlier: None,
            scroll: 0,
            page: PAGE,
        }
    }

    /// What the scope's key (`keymap::DIFF_SCOPE_KEY`) shows next.
    pub(crate) fn other_scope(&self) -> String {
        match (self.scope, &self.earlier) {
            (DiffScope::Conversation, None) => "last turn".to_owned(),
            (DiffScope::Conversation, Some(earlier)) => format!("prompt {}", earlier.number),
            (DiffScope::LastTurn, _) => "all turns".to_owned(),
        }
    }

    /// The frame just drawn showed `rows` of the diff.
    pub(crate) fn laid_out(&mut self, rows: usize) {
        self.page = rows.max(1);
    }

    pub(crate) fn rows(&self) -> &[DiffRow] {
        match self.scope {
            DiffScope::Conversation => &self.conversation,
            DiffScope::LastTurn => &self.last_turn,
        }
    }

    /// How many files the shown diff has.
    pub(crate) fn file_count(&self) -> usize {
        self.rows()
            .iter()
            .filter(|row| matches!(row, DiffRow::File { .. }))
            .count()
    }

    fn file_rows(&self) -> impl Iterator<Item = usize> + '_ {
        self.rows()
            .iter()
            .enumerate()
            .filter(|(_, row)| matches!(row, DiffRow::File { .. }))
            .map(|(index, _)| index)
    }
}

impl OverlayPane for DiffView {
    type Input<'a> = ();
    type Request = std::convert::Infallible;

    /// Scrolling (↑↓, PgUp/PgDn a page of the rows shown, Home/End, Space), `n`/`p` the next
    /// or previous file, Tab the other scope, Esc or `q` closes.
    fn on_key(&mut self, key: KeyEvent, _now: Option<Instant>, _input: ()) -> Step<Self::Request> {
        let last = self.rows().len().saturating_sub(1);
        let page = self.page;
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return Step::Close,
            KeyCode::Up | KeyCode::Char('k') => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.scroll = (self.scroll + 1).min(last),
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(page),
            KeyCode::PageDown | KeyCode::Char(' ') => self.scroll = (self.scroll + page).min(last),
            KeyCode::Home | KeyCode::Char('g') => self.scroll = 0,
            KeyCode::End | KeyCode::Char('G') => self.scroll = last,
            KeyCode::Char('n') => {
                let scroll = self.scroll;
                let next = self.file_rows().find(|row| *row > scroll);
                if let Some(next) = next {
                    self.scroll = next;
                }
            }
            KeyCode::Char('p') => {
                let scroll = self.scroll;
                let previous = self.file_rows().filter(|row| *row < scroll).last();
                if let Some(previous) = previous {
                    self.scroll = previous;
                }
            }
            KeyCode::Tab | KeyCode::BackTab => {
                self.scope = match self.scope {
                    DiffScope::Conversation => DiffScope::LastTurn,
                    DiffScope::LastTurn => DiffScope::Conversation,
                };
                self.scroll = 0;
            }
            _ => {}
        }
        Step::Open
    }
}

/// The files' rows, their text made inert (it is whatever the agent wrote).
fn rows(files: &[FileDiffView]) -> Vec<DiffRow> {
    let mut rows = Vec::new();
    for file in files {
        let path = std::sync::Arc::new(InertText::new(&file.path));
        rows.push(DiffRow::File {
            path: InertText::clone(&path),
            status: file.status,
            added: file.added,
            removed: file.removed,
        });
        for (kind, text) in &file.lines {
            rows.push(DiffRow::Line {
                kind: *kind,
                text: InertText::new(text),
                path: path.clone(),
            });
        }
    }
    rows
}

/// The `/undo` (or `/rewind`) question: these files changed since the turn; overwrite them?
#[derive(Debug, Clone, PartialEq)]
pub struct UndoConfirm {
    pub(crate) turn: TurnId,
    pub(crate) conflicts: Vec<InertText>,
    pub(crate) asked_by: ConfirmFor,
    /// Other agentty processes ran a turn in the tree meanwhile: the list is every file the
    /// turn seems to have changed, which may be theirs.
    pub(crate) shared_with: Vec<u32>,
}

/// What asked the overwrite question (and, for a rewind or its undo, whether the conversation
/// goes too once the files may be written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConfirmFor {
    Undo,
    Rewind { conversation: bool },
    UndoRewind { conversation: bool },
}

/// The answer to the question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UndoAnswer {
    /// `y`: overwrite the files changed since the turn.
    Overwrite,
    /// `n`, Esc or Enter: keep them (nothing is undone).
    Keep,
}

impl OverlayPane for UndoConfirm {
    type Input<'a> = ();
    type Request = UndoAnswer;

    /// `y` overwrites; `n`, Esc and Enter keep the files; other keys wait for one of those.
    fn on_key(&mut self, key: KeyEvent, _now: Option<Instant>, _input: ()) -> Step<UndoAnswer> {
        match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => Step::Done(UndoAnswer::Overwrite),
            KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc | KeyCode::Enter => {
                Step::Done(UndoAnswer::Keep)
            }
            _ => Step::Open,
        }
    }
}

/// One line summing up a turn's changes: "3 files changed · +4 −2".
pub(crate) fn changes_summary(files: &[ChangedFile]) -> String {
    let added: u64 = files.iter().map(|file| file.added).sum();
    let removed: u64 = files.iter().map(|file| file.removed).sum();
    let count = if files.len() == 1 {
        "1 file changed".to_owned()
    } else {
        format!("{} files changed", files.len())
    };
    format!("{count} · +{added} −{removed}")
}

/// A restore (`/undo`, `/rewind`) a crash interrupted, found as the chat opened: finish it, roll
/// it back, or leave it (asked again at the next launch).
#[derive(Debug, Clone, PartialEq)]
pub struct RestorePrompt {
    pub(crate) restore: crate::snapshot::InterruptedRestore,
    /// Others found, asked about after this one.
    pub(crate) more: Vec<crate::snapshot::InterruptedRestore>,
}

/// The answer to a [`RestorePrompt`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RestoreAnswer {
    /// `f`: put the rest back.
    Finish,
    /// `r`: return what it put back as the turn left it.
    RollBack,
    /// Esc: decide at the next launch.
    Later,
}

impl OverlayPane for RestorePrompt {
    type Input<'a> = ();
    type Request = RestoreAnswer;

    fn on_key(&mut self, key: KeyEvent, _now: Option<Instant>, _input: ()) -> Step<RestoreAnswer> {
        match key.code {
            KeyCode::Char('f') | KeyCode::Char('F') => Step::Done(RestoreAnswer::Finish),
            KeyCode::Char('r') | KeyCode::Char('R') => Step::Done(RestoreAnswer::RollBack),
            KeyCode::Esc => Step::Done(RestoreAnswer::Later),
            _ => Step::Open,
        }
    }
}
