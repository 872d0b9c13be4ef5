//! The transcript model: an ordered list of cells, each a user prompt, assistant text, a thinking
//! block, a tool call, a notice, a permission request with its outcome, or the agent's plan.
//!
//! Invariants: every string in a cell is already sanitised (see `crate::sanitize`), so the view can
//! turn it into spans as it is (the agent's text is held as [`InertText`], which only sanitising
//! makes); every change to a cell goes through [`Transcript::update`], which
//! bumps the cell's `revision` and the transcript's `version` (the view caches rendered lines per
//! revision and uses the version for its "new output" indicator). Cell ids never change, while
//! positions may shift when a thinking block is placed before its answer.

use std::time::{Duration, Instant};

pub use super::inert::InertText;
pub use super::plan_cell::PlanCell;
pub(crate) use super::plan_cell::{PlanItem, PlanStatus};

/// A cell's identity, stable for the life of the transcript.
pub(crate) type CellId = u64;

#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub id: CellId,
    pub(crate) revision: u64,
    pub body: CellBody,
}

/// The large kinds are boxed, so that a cell costs the size of the small ones (a prompt, an
/// answer: every turn has them) and a long conversation does not pay for the largest kind in
/// every cell (issue 37: 232 bytes a cell, 88 now).
#[derive(Debug, Clone, PartialEq)]
pub enum CellBody {
    User(UserCell),
    Assistant(AssistantCell),
    Thought(ThoughtCell),
    Tool(Box<ToolCell>),
    Notice(Box<NoticeCell>),
    Permission(Box<PermissionCell>),
    Plan(PlanCell),
    /// What a turn changed in the working tree (`turn.changes`).
    Changes(ChangesCell),
}

/// A turn's changed files, collapsed to its first few like a tool's output.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangesCell {
    pub(crate) files: Vec<ChangedFile>,
    pub(crate) expanded: bool,
    /// `/undo` put these files back.
    pub(crate) undone: bool,
}

/// A file a turn changed (a `stream::FileChange`), as the app keeps it: its path inert.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChangedFile {
    pub(crate) path: InertText,
    pub(crate) status: crate::stream::ChangeStatus,
    pub(crate) added: u64,
    pub(crate) removed: u64,
    /// Not kept (over the snapshot limits, unreadable, ...): seen, but it cannot be shown or
    /// undone.
    pub(crate) too_big: bool,
    /// Why it was not kept.
    pub(crate) not_kept: Option<InertText>,
    /// A change of mode or type (`mode 644 → 755`).
    pub(crate) detail: Option<InertText>,
}

impl From<crate::stream::FileChange> for ChangedFile {
    fn from(file: crate::stream::FileChange) -> Self {
        Self {
            path: file.path.into(),
            status: file.status,
            added: file.added,
            removed: file.removed,
            too_big: file.too_big,
            not_kept: file.not_kept.as_deref().map(InertText::new),
            detail: file.detail.as_deref().map(InertText::new),
        }
    }
}

/// Files a collapsed changes cell lists.
pub(crate) const COLLAPSED_CHANGED_FILES: usize = 4;

#[derive(Debug, Clone, PartialEq)]
pub struct UserCell {
    pub(crate) text: InertText,
    /// The prompt is sent again by a retry (the failed attempt was undone first, so the agent
    /// receives it once).
    pub(crate) retry: bool,
    /// A long prompt (a large paste) is shown folded until clicked.
    pub(crate) expanded: bool,
    /// `/rewind` took this turn back: the agent no longer has it (shown dimmed, labelled).
    pub(crate) rewound: bool,
}

/// Lines of a folded prompt that are shown.
pub(crate) const FOLDED_PROMPT_LINES: usize = 3;

impl UserCell {
    pub(crate) fn new(text: InertText, retry: bool) -> Self {
        Self {
            text,
            retry,
            expanded: false,
            rewound: false,
        }
    }

    /// Whether the prompt is long enough to fold in the transcript (as a paste that long is
    /// folded in the composer).
    pub(crate) fn folds(&self) -> bool {
        self.text.lines().count() > crate::app::composer::FOLD_PASTE_LINES
            || self.text.chars().count() > crate::app::composer::FOLD_PASTE_CHARS
    }
}

/// The most text one cell keeps for display. An agent that prints without end (a flood) must
/// not make the app's memory, or the time to lay a cell out, grow with what it prints: past
/// this, a cell only counts what it leaves out and says so. The conversation's log keeps it
/// all.
pub(crate) const MAX_CELL_TEXT: usize = 512 * 1024;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct AssistantCell {
    /// Markdown source, sanitised for display; only ever appended to, up to
    /// [`MAX_CELL_TEXT`].
    pub(crate) text: InertText,
    /// The source as the agent wrote it (tabs kept, for copying), where it differs from `text`;
    /// kept only then, so plain answers are not held twice.
    pub(crate) source: Option<String>,
    /// The agent replaced this text (its own retry, or an authoritative final answer).
    pub(crate) superseded: bool,
    /// It was superseded because its attempt failed and agentty retried the turn.
    pub(crate) retried: bool,
    /// Bytes of the answer past [`MAX_CELL_TEXT`], not kept.
    pub(crate) folded: usize,
}

impl AssistantCell {
    /// Appends an agent delta (`shown`: its sanitised form). Once the text would pass
    /// [`MAX_CELL_TEXT`], deltas are only counted.
    pub(crate) fn append(&mut self, delta: &str, shown: &InertText) {
        if self.folded > 0 || self.text.len() + shown.len() > MAX_CELL_TEXT {
            self.folded += delta.len();
            return;
        }
        if self.source.is_none() && delta != shown.as_str() {
            self.source = Some(self.text.to_string());
        }
        if let Some(source) = self.source.as_mut() {
            source.push_str(delta);
        }
        self.text.push(shown);
    }

    /// The text to copy.
    pub(crate) fn source(&self) -> &str {
        self.source.as_deref().unwrap_or(self.text.as_str())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ThoughtCell {
    pub(crate) text: InertText,
    pub(crate) words: usize,
    pub(crate) expanded: bool,
    /// Still streaming (`assistant.thinking`); the complete `assistant.thought` ends it.
    pub(crate) live: bool,
}

impl ThoughtCell {
    /// A thought of `text`; past [`MAX_CELL_TEXT`] only its words are counted.
    pub(crate) fn new(mut text: InertText, expanded: bool) -> Self {
        let words = text.split_whitespace().count();
        if text.len() > MAX_CELL_TEXT {
            let mut end = MAX_CELL_TEXT;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
        }
        Self {
            text,
            words,
            expanded,
            live: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCell {
    pub(crate) call_id: InertText,
    pub(crate) name: InertText,
    /// One line describing the arguments.
    pub(crate) summary: InertText,
    pub status: ToolStatus,
    pub output: InertText,
    pub(crate) expanded: bool,
    /// The call changes files: its output is a diff.
    pub(crate) patch: bool,
    /// The calls of the sub-agent this call runs, in the order they started (shown nested).
    pub children: Vec<ToolCell>,
}

impl ToolCell {
    /// Whether the call, or a call of its sub-agent, still runs or waits.
    pub(crate) fn is_live(&self) -> bool {
        matches!(
            self.status,
            ToolStatus::Running { .. } | ToolStatus::WaitingForYou { .. }
        ) || self.children.iter().any(ToolCell::is_live)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ToolStatus {
    Running {
        since: Instant,
    },
    /// The agent asked the user before running it, and waits for the answer; it had run `ran`
    /// before (the wait is not running time).
    WaitingForYou {
        ran: Duration,
    },
    Done {
        elapsed: Duration,
    },
    Failed {
        elapsed: Duration,
    },
    /// The attempt ended before the tool reported a result.
    Interrupted {
        elapsed: Duration,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoticeLevel {
    Info,
    Warning,
    Error,
    Stopped,
    Retry,
}

/// A titled block of diagnostic lines (stderr tail, invalid output lines, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct DetailSection {
    pub(crate) title: InertText,
    pub lines: Vec<InertText>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NoticeCell {
    pub(crate) level: NoticeLevel,
    pub message: InertText,
    /// A one-line summary of the details, shown while collapsed.
    pub details_summary: InertText,
    /// What the details are, heading the summary ("diagnostics" of a failure, a shell
    /// command's "output").
    pub(crate) details_label: &'static str,
    pub details: Vec<DetailSection>,
    pub(crate) expanded: bool,
    /// A countdown shown live while the retry waits.
    pub(crate) countdown: Option<RetryCountdown>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RetryCountdown {
    pub(crate) deadline: Instant,
    pub(crate) attempt: u32,
    pub(crate) max_attempts: u32,
    pub(crate) reason: InertText,
}

impl NoticeCell {
    pub(crate) fn new(level: NoticeLevel, message: impl Into<InertText>) -> Self {
        Self {
            level,
            message: message.into(),
            details_summary: InertText::default(),
            details_label: "diagnostics",
            details: Vec::new(),
            expanded: false,
            countdown: None,
        }
    }
}

/// A permission request the agent made and how it was answered (the prompt that asks it is
/// `crate::app::permission::PermissionPrompt`; this cell is what stays in the transcript).
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionCell {
    /// The tool's kind as the agent names it (`execute`, `edit`, ...); may be empty.
    pub(crate) kind: InertText,
    pub(crate) title: InertText,
    pub(crate) command: Option<InertText>,
    pub(crate) paths: Vec<InertText>,
    /// The edits, as diff lines (bounded; `diff_hidden` more were left out).
    pub(crate) diff: Vec<DiffLine>,
    pub(crate) diff_hidden: usize,
    /// The answers the agent offered, in its order (names as the agent wrote them).
    pub(crate) options: Vec<ShownOption>,
    pub outcome: PermissionOutcome,
    /// What the user said to do instead, with a rejection.
    pub feedback: Option<InertText>,
    pub(crate) expanded: bool,
}

/// One answer the agent offers, as shown.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ShownOption {
    pub(crate) kind: crate::stream::PermissionOptionKind,
    pub(crate) name: InertText,
}

/// How a permission request ended, as far as the chat knows.
#[derive(Debug, Clone, PartialEq)]
pub enum PermissionOutcome {
    /// The prompt is open (or queued behind another).
    Waiting,
    /// An option was chosen; `kind` is `None` when it is not one the request offered (`name` is
    /// then the option's id).
    Chosen {
        kind: Option<crate::stream::PermissionOptionKind>,
        name: InertText,
        by: crate::stream::PermissionResolver,
    },
    /// Answered `cancelled` (the turn was stopped, or the prompt dismissed with no reject
    /// option).
    Cancelled {
        by: crate::stream::PermissionResolver,
    },
    /// The attempt ended before any answer was reported.
    Unanswered,
}

/// One row of a diff: a file's header, an unchanged line, a removed or an added one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DiffLine {
    File(InertText),
    Context(InertText),
    Removed(InertText),
    Added(InertText),
    /// "… n unchanged lines" between two changes.
    Gap(usize),
}

impl PermissionCell {
    /// "Allow execute: touch x" (what the agent asked).
    pub(crate) fn question(&self) -> String {
        match (self.kind.is_empty(), self.title.is_empty()) {
            (true, true) => "Permission request".to_owned(),
            (false, true) => format!("Allow {}", self.kind),
            (true, false) => format!("Allow: {}", self.title),
            (false, false) => format!("Allow {}: {}", self.kind, self.title),
        }
    }

    /// Whether there is more to show than the one-line summary.
    pub(crate) fn has_details(&self) -> bool {
        !self.diff.is_empty()
            || !self.paths.is_empty()
            || self
                .command
                .as_ref()
                .is_some_and(|command| command.trim() != self.title.trim())
    }
}

impl CellBody {
    /// Gives back the room its streamed texts keep for appending (see [`Transcript::push`]).
    fn shrink_to_fit(&mut self) {
        match self {
            CellBody::Assistant(answer) => {
                answer.text.shrink_to_fit();
                if let Some(source) = answer.source.as_mut() {
                    source.shrink_to_fit();
                }
            }
            CellBody::Thought(thought) => thought.text.shrink_to_fit(),
            CellBody::Tool(tool) => tool.output.shrink_to_fit(),
            CellBody::User(_)
            | CellBody::Notice(_)
            | CellBody::Permission(_)
            | CellBody::Plan(_)
            | CellBody::Changes(_) => {}
        }
    }

    /// Whether the cell shows something that changes with time (elapsed, countdown).
    pub(crate) fn is_live(&self) -> bool {
        match self {
            CellBody::Tool(tool) => tool.is_live(),
            CellBody::Notice(notice) => notice.countdown.is_some(),
            CellBody::User(_)
            | CellBody::Assistant(_)
            | CellBody::Thought(_)
            | CellBody::Permission(_)
            | CellBody::Plan(_)
            | CellBody::Changes(_) => false,
        }
    }

    /// Whether the cell has a collapsed and an expanded form.
    pub(crate) fn is_expandable(&self) -> bool {
        match self {
            CellBody::Thought(_) => true,
            CellBody::Tool(tool) => !tool.output.is_empty() || !tool.children.is_empty(),
            CellBody::Notice(notice) => !notice.details.is_empty(),
            CellBody::Permission(permission) => permission.has_details(),
            // The current plan is always shown whole; an earlier one collapses.
            CellBody::Plan(plan) => plan.superseded,
            CellBody::Changes(changes) => changes.files.len() > COLLAPSED_CHANGED_FILES,
            CellBody::User(user) => user.folds(),
            CellBody::Assistant(_) => false,
        }
    }
}

#[derive(Debug, Default)]
pub struct Transcript {
    cells: Vec<Cell>,
    /// Each cell's index in `cells`, by id (ids are given out from 0, one per cell).
    positions: Vec<usize>,
    next_id: CellId,
    version: u64,
    output_version: u64,
}

impl Transcript {
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    pub(crate) fn len(&self) -> usize {
        self.cells.len()
    }

    /// The cells' bodies, first to last.
    pub(crate) fn bodies(&self) -> impl DoubleEndedIterator<Item = &CellBody> {
        self.cells.iter().map(|cell| &cell.body)
    }

    /// What `pick` finds in each cell, first to last: a test's view of one kind of cell.
    #[cfg(test)]
    pub(crate) fn pick_all<'a, T>(&'a self, pick: impl FnMut(&'a CellBody) -> Option<T>) -> Vec<T> {
        self.bodies().filter_map(pick).collect()
    }

    /// Bumped on every change; only the tests read it.
    #[cfg(test)]
    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    /// Bumped when output arrives (not when the user expands or collapses a cell).
    pub(crate) fn output_version(&self) -> u64 {
        self.output_version
    }

    pub(crate) fn position(&self, id: CellId) -> Option<usize> {
        usize::try_from(id)
            .ok()
            .and_then(|id| self.positions.get(id).copied())
    }

    pub(crate) fn get(&self, id: CellId) -> Option<&Cell> {
        self.position(id).map(|index| &self.cells[index])
    }

    pub(crate) fn push(&mut self, body: CellBody) -> CellId {
        // The cell before is most likely done growing: its text gives back the room a string
        // keeps for appending (up to half of it, for an answer streamed in deltas). Were more
        // appended to it, it would only grow again.
        if let Some(last) = self.cells.last_mut() {
            last.body.shrink_to_fit();
        }
        let id = self.allocate_id();
        self.positions.push(self.cells.len());
        self.cells.push(Cell {
            id,
            revision: 0,
            body,
        });
        self.version += 1;
        self.output_version += 1;
        id
    }

    /// Inserts a cell just before `before` (at the end when `before` is unknown).
    pub(crate) fn insert_before(&mut self, before: CellId, body: CellBody) -> CellId {
        let Some(index) = self.position(before) else {
            return self.push(body);
        };
        let id = self.allocate_id();
        self.cells.insert(
            index,
            Cell {
                id,
                revision: 0,
                body,
            },
        );
        self.positions.push(index);
        for (position, cell) in self.cells.iter().enumerate().skip(index + 1) {
            if let Some(slot) = usize::try_from(cell.id)
                .ok()
                .and_then(|id| self.positions.get_mut(id))
            {
                *slot = position;
            }
        }
        self.version += 1;
        self.output_version += 1;
        id
    }

    /// Changes one cell's content; returns `None` when it does not exist.
    pub(crate) fn update<R>(
        &mut self,
        id: CellId,
        change: impl FnOnce(&mut CellBody) -> R,
    ) -> Option<R> {
        let result = self.restyle(id, change)?;
        self.output_version += 1;
        Some(result)
    }

    /// Changes how one cell is shown (expanded or not), not what it says.
    pub(crate) fn restyle<R>(
        &mut self,
        id: CellId,
        change: impl FnOnce(&mut CellBody) -> R,
    ) -> Option<R> {
        let index = self.position(id)?;
        let cell = &mut self.cells[index];
        let result = change(&mut cell.body);
        cell.revision += 1;
        self.version += 1;
        Some(result)
    }

    /// Changes how every cell `change` picks (returns true for) is shown.
    /// Applies `change` to every cell; how many it changed (it says so by returning true).
    pub(crate) fn update_all(&mut self, mut change: impl FnMut(&mut CellBody) -> bool) -> usize {
        let mut changed = 0;
        for cell in &mut self.cells {
            if change(&mut cell.body) {
                cell.revision += 1;
                changed += 1;
            }
        }
        if changed > 0 {
            self.version += 1;
        }
        changed
    }

    fn allocate_id(&mut self) -> CellId {
        let id = self.next_id;
        self.next_id += 1;
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_keeps_text_up_to_its_limit_and_counts_the_rest() {
        let mut answer = AssistantCell::default();
        let delta = "x".repeat(4096);
        let shown = InertText::new(&delta);
        for _ in 0..200 {
            answer.append(&delta, &shown);
        }
        assert_eq!(answer.text.len(), MAX_CELL_TEXT);
        assert_eq!(answer.folded, 200 * 4096 - MAX_CELL_TEXT);
        // Once folding, even a small delta that would fit is counted, so nothing has a gap.
        answer.append("y", &InertText::new("y"));
        assert_eq!(answer.folded, 200 * 4096 - MAX_CELL_TEXT + 1);
        assert!(!answer.text.contains('y'));

        let thought = ThoughtCell::new("é ".repeat(MAX_CELL_TEXT).into(), false);
        assert!(thought.text.len() <= MAX_CELL_TEXT);
        assert_eq!(thought.words, MAX_CELL_TEXT, "every word counted");
    }

    fn user(text: &str) -> CellBody {
        CellBody::User(UserCell::new(text.into(), false))
    }

    #[test]
    fn insertion_keeps_positions_and_ids() {
        let mut transcript = Transcript::default();
        let a = transcript.push(user("a"));
        let b = transcript.push(user("b"));
        let inserted = transcript.insert_before(b, user("x"));
        assert_eq!(transcript.position(a), Some(0));
        assert_eq!(transcript.position(inserted), Some(1));
        assert_eq!(transcript.position(b), Some(2));
        let version = transcript.version();
        transcript.update(b, |_| ());
        assert_eq!(transcript.get(b).unwrap().revision, 1);
        assert!(transcript.version() > version);
    }

    #[test]
    fn thought_counts_words() {
        assert_eq!(ThoughtCell::new("one two\nthree".into(), false).words, 3);
    }
}
