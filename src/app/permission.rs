//! Permission requests: the prompt that asks the user (an overlay pane, [`OverlayPane`]: it
//! owns its keys, `view::permission` draws it) and its answers. What the transcript keeps of a
//! request is `permission_record`'s.
//!
//! Invariants: a prompt keeps the request's id and option ids exactly as the agent sent them (the
//! answer must carry them back unchanged), while everything shown (title, command, paths, diff,
//! option names) is sanitised into the cell when the request arrives.
//!
//! A prompt never takes a key meant for something else: it takes keys only from an input scope
//! bound to it, its focus, which only [`FOCUS_KEY`] gives (a key prose never produces: the
//! composer has no use for it while a prompt is open). Until then every key, whatever the pauses
//! between them, goes to the composer, and Enter sends (or queues) the draft. Focus belongs to
//! one prompt: the next request of a queue starts without it, so a key pressed twice never
//! answers two requests. A focused prompt gives the keys back to the composer on
//! [`FOCUS_KEY`] again, or on a key it has no use for (which is then typed).
//!
//! Keys of a focused prompt: `1`-`9` number the agent's once-only options in its order; `y` /
//! `n` the first allow-once / reject-once option; Enter the highlighted option, which starts on
//! the agent's allow-once option whatever its place in the list. An "always" answer is never one
//! keystroke: its capital letter (`A` allow always, `N` reject always) or ↑/↓ only highlight it,
//! and Enter then confirms it. `r` opens a line to reject and say what to do instead. Esc
//! rejects (reject once, else reject always, else cancelled).

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use unicode_segmentation::UnicodeSegmentation;

use super::pane::{OverlayPane, Step};
use super::scroll::ScrollAction;

use super::transcript::CellId;
use crate::orchestrator::TurnId;
use crate::sanitize::untrusted_owned;
use crate::stream::{PermissionOption, PermissionOptionKind};

/// The key that gives an open prompt the keys, and gives them back to the composer.
pub const FOCUS_KEY: KeyCode = KeyCode::Tab;

/// A request waiting for the user's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionPrompt {
    pub(crate) turn: TurnId,
    /// The request's id as the agent sent it.
    pub id: String,
    /// The options as the agent sent them (ids unchanged, for the answer).
    pub(crate) options: Vec<PermissionOption>,
    /// The transcript cell that shows the request and, later, its outcome.
    pub(crate) cell: CellId,
    /// The option Enter chooses (moved with ↑/↓); `None` when the agent offered nothing that
    /// may be chosen without a deliberate key (only "always" answers).
    pub selected: Option<usize>,
    /// Whether the prompt has the keys (given only by [`FOCUS_KEY`]; a new prompt has not).
    pub focused: bool,
    /// The line being written after [`FEEDBACK_KEY`]: what the agent should do instead, sent
    /// with the rejection.
    pub feedback: Option<String>,
    /// 0: the options; n > 0: the change being approved shown from its row n - 1 (PgDn/PgUp,
    /// when the prompt cannot show the whole change; the view clamps it to what there is).
    pub(crate) diff_scroll: usize,
}

impl PermissionPrompt {
    /// A prompt for these options, the safe answer selected.
    pub(crate) fn new(
        turn: TurnId,
        id: String,
        options: Vec<PermissionOption>,
        cell: CellId,
    ) -> Self {
        let kinds: Vec<PermissionOptionKind> = options.iter().map(|option| option.kind).collect();
        Self {
            turn,
            id,
            selected: default_selection(&kinds),
            options,
            cell,
            focused: false,
            feedback: None,
            diff_scroll: 0,
        }
    }

    pub(crate) fn kinds(&self) -> Vec<PermissionOptionKind> {
        self.options.iter().map(|option| option.kind).collect()
    }

    /// Whether the highlighted option is an "always" answer (Enter confirms it).
    pub(crate) fn always_selected(&self) -> bool {
        self.selected
            .and_then(|index| self.options.get(index))
            .is_some_and(|option| is_always(option.kind))
    }
}

/// What the prompt reads from the chat to answer a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PermissionInput {
    /// Rows of the change being approved (0: the request carries none).
    pub(crate) diff_rows: usize,
}

/// What the prompt asks of the chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PermissionAsk {
    /// Answer with option `index` (`None`: cancelled) and the user's note.
    Answer {
        index: Option<usize>,
        note: Option<String>,
    },
    /// Scroll the transcript (PgUp/PgDn over a prompt with no change to show).
    Scroll(ScrollAction),
    /// Not the prompt's key: the chat handles it as typing (the prompt has no focus, or no use
    /// for the key, and gave the focus back).
    Pass,
}

impl OverlayPane for PermissionPrompt {
    type Input<'a> = PermissionInput;
    type Request = PermissionAsk;

    /// Without the focus, only [`FOCUS_KEY`] (which gives it) and PgUp/PgDn over a change
    /// (neither typing nor an answer) are the prompt's; every other key is `Pass`. With it, a
    /// number or a letter chooses one of the agent's once-only options, `A`/`N` and ↑/↓
    /// highlight an option and Enter chooses the highlighted one, Esc rejects, `r` opens the
    /// line of feedback (which then takes every key until Enter sends or Esc goes back), and
    /// [`FOCUS_KEY`] or a key the prompt has no use for gives the focus back (`Pass`: the key
    /// is typed).
    fn on_key(
        &mut self,
        key: KeyEvent,
        _now: Option<Instant>,
        input: PermissionInput,
    ) -> Step<PermissionAsk> {
        if self.feedback.is_some() {
            return self.on_feedback_key(key);
        }
        if let Some(step) = self.scroll_diff(key, input.diff_rows) {
            return step;
        }
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        if !self.focused {
            if key.code == FOCUS_KEY && plain && !key.modifiers.contains(KeyModifiers::SHIFT) {
                self.focused = true;
                return Step::Open;
            }
            return Step::Ask(PermissionAsk::Pass);
        }
        let count = self.options.len();
        let kinds = self.kinds();
        let answer = |index| Step::Done(PermissionAsk::Answer { index, note: None });
        match key.code {
            KeyCode::Esc => answer(reject_choice(&kinds)),
            code if code == FOCUS_KEY && plain => {
                self.focused = false;
                Step::Open
            }
            KeyCode::Up | KeyCode::BackTab if count > 0 => {
                let from = self.selected.unwrap_or(0);
                self.selected = Some((from + count - 1) % count);
                Step::Open
            }
            KeyCode::Down if count > 0 => {
                self.selected = Some(self.selected.map_or(0, |from| (from + 1) % count));
                Step::Open
            }
            KeyCode::PageUp => Step::Ask(PermissionAsk::Scroll(ScrollAction::PageUp)),
            KeyCode::PageDown => Step::Ask(PermissionAsk::Scroll(ScrollAction::PageDown)),
            KeyCode::Enter if plain && count > 0 => match self.selected {
                Some(index) => answer(Some(index.min(count - 1))),
                None => {
                    // Nothing safe to preselect (only "always" answers): Enter highlights the
                    // first option, and a second, deliberate Enter chooses it.
                    self.selected = Some(0);
                    Step::Open
                }
            },
            KeyCode::Char(FEEDBACK_KEY) if plain && reject_choice(&kinds).is_some() => {
                self.feedback = Some(String::new());
                Step::Open
            }
            KeyCode::Char(ch) if plain => match choice_for_char(&kinds, ch) {
                // An "always" answer is highlighted, never chosen by one key.
                Some(index) if is_always(kinds[index]) => {
                    self.selected = Some(index);
                    Step::Open
                }
                Some(index) => answer(Some(index)),
                None => self.give_back_focus(),
            },
            _ => self.give_back_focus(),
        }
    }
}

impl PermissionPrompt {
    /// A key the focused prompt has no use for: the composer has the keys again, and this one
    /// is typed there.
    fn give_back_focus(&mut self) -> Step<PermissionAsk> {
        self.focused = false;
        Step::Ask(PermissionAsk::Pass)
    }

    /// PgUp/PgDn over a request that carries a diff: PgDn shows the change in place of the
    /// options and scrolls it a row at a time (on a small screen only a few rows show, and none
    /// may be skipped); PgUp scrolls back, and at the top brings the options back.
    fn scroll_diff(&mut self, key: KeyEvent, rows: usize) -> Option<Step<PermissionAsk>> {
        if rows == 0 {
            return None;
        }
        match key.code {
            KeyCode::PageUp => self.diff_scroll = self.diff_scroll.saturating_sub(1),
            KeyCode::PageDown => self.diff_scroll = (self.diff_scroll + 1).min(rows + 1),
            _ => return None,
        }
        Some(Step::Open)
    }

    /// A key for the line after `r`: it is text, Enter rejects with it, Esc goes back to the
    /// options (nothing sent).
    fn on_feedback_key(&mut self, key: KeyEvent) -> Step<PermissionAsk> {
        let reject = reject_choice(&self.kinds());
        let Some(note) = self.feedback.as_mut() else {
            return Step::Open;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Esc => self.feedback = None,
            KeyCode::Enter => {
                let note = note.trim().to_owned();
                return Step::Done(PermissionAsk::Answer {
                    index: reject,
                    note: (!note.is_empty()).then_some(note),
                });
            }
            KeyCode::Backspace => {
                if let Some((last, _)) = note.grapheme_indices(true).next_back() {
                    note.truncate(last);
                }
            }
            KeyCode::Char('u') if ctrl => note.clear(),
            KeyCode::Char(ch) if !ctrl && !alt => note.push(ch),
            // The line has no cursor to move: other keys do nothing to it.
            _ => {}
        }
        Step::Open
    }

    /// A paste into the line after `r`, if it is open (on one line, made inert); whether it
    /// took it.
    pub(crate) fn paste(&mut self, text: &str) -> bool {
        let Some(note) = self.feedback.as_mut() else {
            return false;
        };
        note.push_str(&untrusted_owned(&text.replace(['\r', '\n'], " ")));
        true
    }
}

/// Whether an answer holds beyond this request.
pub(crate) fn is_always(kind: PermissionOptionKind) -> bool {
    matches!(
        kind,
        PermissionOptionKind::AllowAlways | PermissionOptionKind::RejectAlways
    )
}

/// The option a fresh prompt selects: the agent's allow-once option, else its first answer
/// that holds for this request only; never an "always" answer.
pub(crate) fn default_selection(kinds: &[PermissionOptionKind]) -> Option<usize> {
    kinds
        .iter()
        .position(|kind| *kind == PermissionOptionKind::AllowOnce)
        .or_else(|| kinds.iter().position(|kind| !is_always(*kind)))
}

/// The letter that chooses the first option of `kind`: lower case for once, a capital for
/// always (a key of its own, never typed by chance at the start of a word).
pub(crate) fn mnemonic(kind: PermissionOptionKind) -> char {
    match kind {
        PermissionOptionKind::AllowOnce => 'y',
        PermissionOptionKind::AllowAlways => 'A',
        PermissionOptionKind::RejectOnce => 'n',
        PermissionOptionKind::RejectAlways => 'N',
    }
}

/// The key that opens the line to reject and say what to do instead.
pub(crate) const FEEDBACK_KEY: char = 'r';

/// The options that digits number: the once-only ones, in the agent's order (at most nine).
fn numbered(kinds: &[PermissionOptionKind]) -> impl Iterator<Item = usize> + '_ {
    kinds
        .iter()
        .enumerate()
        .filter(|(_, kind)| !is_always(**kind))
        .map(|(index, _)| index)
        .take(9)
}

/// The keys of option `index`: its number (once-only options) and its letter (when it is the
/// first option of its kind).
pub(crate) fn option_keys(
    kinds: &[PermissionOptionKind],
    index: usize,
) -> (Option<char>, Option<char>) {
    let number = numbered(kinds)
        .position(|numbered| numbered == index)
        .map(|position| char::from(b'1' + position as u8));
    let letter = kinds
        .get(index)
        .filter(|kind| kinds.iter().position(|other| other == *kind) == Some(index))
        .map(|kind| mnemonic(*kind));
    (number, letter)
}

/// The option a typed character chooses.
pub(crate) fn choice_for_char(kinds: &[PermissionOptionKind], ch: char) -> Option<usize> {
    if let Some(digit) = ch.to_digit(10).filter(|digit| (1..=9).contains(digit)) {
        return numbered(kinds).nth(digit as usize - 1);
    }
    kinds.iter().position(|kind| mnemonic(*kind) == ch)
}

/// The option Esc answers with: reject once, else reject always; `None` (cancelled) without
/// either.
pub(crate) fn reject_choice(kinds: &[PermissionOptionKind]) -> Option<usize> {
    [
        PermissionOptionKind::RejectOnce,
        PermissionOptionKind::RejectAlways,
    ]
    .iter()
    .find_map(|wanted| kinds.iter().position(|kind| kind == wanted))
}

/// What Esc does to a prompt with these options.
pub(crate) fn esc_action(kinds: &[PermissionOptionKind]) -> &'static str {
    if reject_choice(kinds).is_some() {
        "rejects"
    } else {
        "cancels"
    }
}

/// The keys of a prompt in a few characters: "1-2 or y/A/n/N".
pub(crate) fn key_summary(kinds: &[PermissionOptionKind]) -> String {
    let numbers = match numbered(kinds).count() {
        0 => String::new(),
        1 => "1".to_owned(),
        count => format!("1-{count}"),
    };
    let letters: Vec<String> = (0..kinds.len())
        .filter_map(|index| option_keys(kinds, index).1)
        .map(String::from)
        .collect();
    match (numbers.is_empty(), letters.is_empty()) {
        (true, true) => String::new(),
        (true, false) => letters.join("/"),
        (false, true) => numbers,
        (false, false) => format!("{numbers} or {}", letters.join("/")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PermissionOptionKind::*;

    #[test]
    fn keys_number_the_once_options_and_letter_the_first_of_each_kind() {
        let kinds = [AllowOnce, AllowAlways, RejectOnce, AllowOnce, RejectAlways];
        assert_eq!(option_keys(&kinds, 0), (Some('1'), Some('y')));
        // An "always" answer has its capital letter and no number.
        assert_eq!(option_keys(&kinds, 1), (None, Some('A')));
        assert_eq!(option_keys(&kinds, 2), (Some('2'), Some('n')));
        assert_eq!(option_keys(&kinds, 3), (Some('3'), None));
        assert_eq!(option_keys(&kinds, 4), (None, Some('N')));
        assert_eq!(choice_for_char(&kinds, '1'), Some(0));
        assert_eq!(choice_for_char(&kinds, '2'), Some(2));
        assert_eq!(choice_for_char(&kinds, '3'), Some(3));
        assert_eq!(choice_for_char(&kinds, '4'), None);
        assert_eq!(choice_for_char(&kinds, '0'), None);
        assert_eq!(choice_for_char(&kinds, 'A'), Some(1));
        assert_eq!(choice_for_char(&kinds, 'a'), None);
        assert_eq!(choice_for_char(&kinds, 'N'), Some(4));
        assert_eq!(key_summary(&kinds), "1-3 or y/A/n/N");
        assert_eq!(key_summary(&[AllowAlways]), "A");
        assert_eq!(reject_choice(&kinds), Some(2));
        assert_eq!(reject_choice(&[AllowOnce, RejectAlways]), Some(1));
        assert_eq!(reject_choice(&[AllowOnce]), None);
    }

    #[test]
    fn the_default_selection_is_never_an_always_answer() {
        // Claude's adapter and gemini list "always" first.
        assert_eq!(
            default_selection(&[AllowAlways, AllowOnce, RejectOnce]),
            Some(1)
        );
        assert_eq!(
            default_selection(&[RejectOnce, AllowAlways, AllowOnce]),
            Some(2)
        );
        assert_eq!(default_selection(&[AllowAlways, RejectOnce]), Some(1));
        assert_eq!(default_selection(&[AllowAlways, RejectAlways]), None);
        assert_eq!(default_selection(&[]), None);
    }

    fn prompt_of(kinds: &[PermissionOptionKind]) -> PermissionPrompt {
        let options = kinds
            .iter()
            .enumerate()
            .map(|(index, kind)| PermissionOption {
                id: format!("option-{index}"),
                kind: *kind,
                name: format!("{kind:?}"),
            })
            .collect();
        PermissionPrompt::new(1, "req".into(), options, 0)
    }

    fn press(prompt: &mut PermissionPrompt, code: KeyCode) -> Step<PermissionAsk> {
        let modifiers = match code {
            KeyCode::Char(ch) if ch.is_uppercase() => KeyModifiers::SHIFT,
            _ => KeyModifiers::NONE,
        };
        prompt.on_key(
            KeyEvent::new(code, modifiers),
            None,
            PermissionInput { diff_rows: 0 },
        )
    }

    fn chose(index: usize) -> Step<PermissionAsk> {
        Step::Done(PermissionAsk::Answer {
            index: Some(index),
            note: None,
        })
    }

    const PASS: Step<PermissionAsk> = Step::Ask(PermissionAsk::Pass);

    #[test]
    fn without_the_focus_every_key_is_typing_whatever_the_pauses() {
        let mut prompt = prompt_of(&[AllowOnce, AllowAlways, RejectOnce, RejectAlways]);
        // Every key prose can produce, the answer letters and Enter included, is the composer's.
        for ch in "Also fix the bug. Now run the tests yes 1 2 ANr".chars() {
            assert_eq!(press(&mut prompt, KeyCode::Char(ch)), PASS, "{ch:?}");
        }
        for code in [
            KeyCode::Enter,
            KeyCode::Esc,
            KeyCode::Backspace,
            KeyCode::Up,
            KeyCode::Down,
            KeyCode::BackTab,
        ] {
            assert_eq!(press(&mut prompt, code), PASS, "{code:?}");
        }
        assert!(!prompt.focused);
        // Only the focus key gives it the keys.
        assert_eq!(press(&mut prompt, FOCUS_KEY), Step::Open);
        assert!(prompt.focused);
        assert_eq!(press(&mut prompt, KeyCode::Char('y')), chose(0));
    }

    #[test]
    fn an_always_answer_takes_two_keys_and_enter_confirms_it() {
        let mut prompt = prompt_of(&[AllowOnce, AllowAlways, RejectOnce, RejectAlways]);
        press(&mut prompt, FOCUS_KEY);
        // `A` highlights "allow always"; only Enter then chooses it.
        assert_eq!(press(&mut prompt, KeyCode::Char('A')), Step::Open);
        assert_eq!(prompt.selected, Some(1));
        assert!(prompt.always_selected());
        assert_eq!(press(&mut prompt, KeyCode::Enter), chose(1));
        // `N` likewise, and a once-only answer takes one key.
        let mut prompt = prompt_of(&[AllowOnce, AllowAlways, RejectOnce, RejectAlways]);
        press(&mut prompt, FOCUS_KEY);
        assert_eq!(press(&mut prompt, KeyCode::Char('N')), Step::Open);
        assert_eq!(prompt.selected, Some(3));
        assert_eq!(press(&mut prompt, KeyCode::Char('2')), chose(2));
    }

    #[test]
    fn the_focus_goes_back_on_its_key_or_on_a_key_the_prompt_has_no_use_for() {
        let mut prompt = prompt_of(&[AllowOnce, RejectOnce]);
        press(&mut prompt, FOCUS_KEY);
        assert_eq!(press(&mut prompt, FOCUS_KEY), Step::Open);
        assert!(!prompt.focused);
        press(&mut prompt, FOCUS_KEY);
        // `q` is typed, and the prompt waits for its focus key again.
        assert_eq!(press(&mut prompt, KeyCode::Char('q')), PASS);
        assert!(!prompt.focused);
        assert_eq!(press(&mut prompt, KeyCode::Char('y')), PASS);
        // Esc with the focus rejects.
        press(&mut prompt, FOCUS_KEY);
        assert_eq!(press(&mut prompt, KeyCode::Esc), chose(1));
    }

    #[test]
    fn r_opens_a_note_that_takes_every_key_until_enter_rejects_with_it() {
        let mut prompt = prompt_of(&[AllowOnce, AllowAlways, RejectOnce]);
        press(&mut prompt, FOCUS_KEY);
        assert_eq!(press(&mut prompt, KeyCode::Char(FEEDBACK_KEY)), Step::Open);
        for ch in "use git".chars() {
            assert_eq!(press(&mut prompt, KeyCode::Char(ch)), Step::Open);
        }
        assert!(prompt.paste(" mv\n"));
        assert_eq!(
            press(&mut prompt, KeyCode::Enter),
            Step::Done(PermissionAsk::Answer {
                index: Some(2),
                note: Some("use git mv".into())
            })
        );
    }
}
