//! The chat's keys in one table: the chords `AppState::on_key` dispatches ([`BINDINGS`]), the
//! key hints of the menu and the `/` popup, every overlay's footer (a [`PaneKey`] table each,
//! drawn by [`pane_hint`], all of them listed in [`PANES`]), the help overlay (`help.rs` builds
//! F1 from these tables), the footer and the first-start screen all come from here, so a key
//! and its hints cannot drift apart.
//!
//! Editing keys are readline's (as in Codex and shells), so the action menu moved off Ctrl+K to
//! Ctrl+X; F2 still opens it.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Action;

/// The chord that opens the action menu (besides F2).
pub(crate) const MENU_KEY: &str = "Ctrl+X";
/// The key that opens the help.
pub(crate) const HELP_KEY: &str = "F1";
/// The key that stops the running turn.
pub(crate) const STOP_KEY: &str = "Esc";
/// The keys that open `/rewind` on an empty composer while no turn runs.
pub(crate) const REWIND_KEY: &str = "Esc Esc";
/// The key that expands or collapses all tool output.
pub(crate) const TOOLS_KEY: &str = "Ctrl+O";
/// The key that shows or folds the steps of the plan pinned above the input.
pub(crate) const PLAN_KEY: &str = "Ctrl+P";
/// The key that clears the prompt, stops the turn, or (twice) quits.
pub(crate) const QUIT_KEY: &str = "Ctrl+C";
/// The composer's keys its hints name: send (or queue, or steer) the prompt, a new line (or a
/// follow-up), the last queued prompt back into the editor.
pub(crate) const SEND_KEY: &str = "Enter";
pub(crate) const NEWLINE_KEY: &str = "Alt+Enter";
pub(crate) const UNQUEUE_KEY: &str = "Alt+Up";
/// How long "Ctrl+C again to quit" stays armed after a Ctrl+C on an idle chat.
pub(crate) const QUIT_CONFIRM: Duration = Duration::from_secs(2);
/// Two Ctrl+C this close together quit, whatever the first one did (cleared the prompt, stopped
/// the turn): the habit of Claude Code's users.
pub(crate) const DOUBLE_PRESS: Duration = Duration::from_secs(1);

/// What a chat-level key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyCommand {
    /// Ctrl+C: clear the prompt, else stop the turn, else (twice) quit.
    Interrupt,
    /// Ctrl+Z: suspend agentty and its agents.
    Suspend,
    OpenMenu,
    /// Ctrl+R: search earlier prompts.
    SearchHistory,
    /// Ctrl+G: edit the prompt in `$VISUAL` / `$EDITOR`.
    EditPrompt,
    Run(Action),
}

impl KeyCommand {
    /// Whether the command acts even while an overlay or the popup has the keys.
    pub(crate) fn acts_over_overlays(self) -> bool {
        matches!(self, Self::Interrupt | Self::Suspend)
    }
}

/// A key the chat binds, by the name its hints show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Binding {
    pub(crate) keys: &'static str,
    pub(crate) command: KeyCommand,
    /// The chord that runs `command` wherever the composer has the keys; `None` for keys whose
    /// meaning depends on the moment (Esc stops only a running turn; Esc Esc rewinds only on an
    /// empty, idle composer; Ctrl+C quits only when pressed twice, Ctrl+D only on an empty
    /// prompt), which are listed here for their hints.
    chord: Option<(KeyModifiers, KeyCode)>,
}

const fn bind(
    keys: &'static str,
    modifiers: KeyModifiers,
    code: KeyCode,
    command: KeyCommand,
) -> Binding {
    Binding {
        keys,
        command,
        chord: Some((modifiers, code)),
    }
}

const fn contextual(keys: &'static str, command: KeyCommand) -> Binding {
    Binding {
        keys,
        command,
        chord: None,
    }
}

const CTRL: KeyModifiers = KeyModifiers::CONTROL;
const ANY: KeyModifiers = KeyModifiers::NONE;

/// Every chat-level key, the first of each command being the one its hints name.
pub(crate) const BINDINGS: &[Binding] = &[
    bind(QUIT_KEY, CTRL, KeyCode::Char('c'), KeyCommand::Interrupt),
    bind("Ctrl+Z", CTRL, KeyCode::Char('z'), KeyCommand::Suspend),
    bind(MENU_KEY, CTRL, KeyCode::Char('x'), KeyCommand::OpenMenu),
    bind("F2", ANY, KeyCode::F(2), KeyCommand::OpenMenu),
    bind(HELP_KEY, ANY, KeyCode::F(1), KeyCommand::Run(Action::Help)),
    bind(
        "Ctrl+R",
        CTRL,
        KeyCode::Char('r'),
        KeyCommand::SearchHistory,
    ),
    bind("Ctrl+G", CTRL, KeyCode::Char('g'), KeyCommand::EditPrompt),
    bind(
        "Ctrl+T",
        CTRL,
        KeyCode::Char('t'),
        KeyCommand::Run(Action::ToggleThinking),
    ),
    bind(
        TOOLS_KEY,
        CTRL,
        KeyCode::Char('o'),
        KeyCommand::Run(Action::ToggleToolOutput),
    ),
    bind(
        PLAN_KEY,
        CTRL,
        KeyCode::Char('p'),
        KeyCommand::Run(Action::TogglePlan),
    ),
    contextual(STOP_KEY, KeyCommand::Run(Action::Stop)),
    contextual(REWIND_KEY, KeyCommand::Run(Action::Rewind)),
    contextual("Ctrl+C ×2", KeyCommand::Run(Action::Quit)),
    contextual("Ctrl+D", KeyCommand::Run(Action::Quit)),
];

/// The command a key's chord is bound to (the chord's modifiers must be held; others may be).
pub(crate) fn command_for(key: KeyEvent) -> Option<KeyCommand> {
    BINDINGS.iter().find_map(|binding| {
        let (modifiers, code) = binding.chord?;
        (key.code == code && key.modifiers.contains(modifiers)).then_some(binding.command)
    })
}

/// The key that runs `action` directly, for the menu and the `/` popup; "" if none does.
pub(crate) fn key_hint(action: Action) -> &'static str {
    keys_of(KeyCommand::Run(action)).next().unwrap_or("")
}

/// The footer's hint.
pub(crate) fn footer_hint() -> String {
    format!("{MENU_KEY} actions · {HELP_KEY} help")
}

/// One key of a pane's footer (the `/` and `@` popup, the overlays, the permission prompt):
/// the key's name and what it does there; `what` may be empty for keys the footer only names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PaneKey {
    pub(crate) keys: &'static str,
    pub(crate) what: &'static str,
}

const fn pane_key(keys: &'static str, what: &'static str) -> PaneKey {
    PaneKey { keys, what }
}

/// The `/` command and `@` file popup's keys (`state/popup_keys.rs` answers them).
pub(crate) const POPUP_KEYS: &[PaneKey] = &[
    pane_key("Tab", "complete"),
    pane_key(SEND_KEY, "choose"),
    pane_key(STOP_KEY, "hide"),
];

/// Ctrl+R's search keys (`history_search.rs` answers them).
pub(crate) const HISTORY_SEARCH_KEYS: &[PaneKey] = &[
    pane_key("type", "to filter"),
    pane_key(SEND_KEY, "use"),
    pane_key(STOP_KEY, "close"),
];

/// The permission prompt's keys besides its options' own numbers and letters
/// (`state/permission_keys.rs` answers them): the highlighted option, the line of feedback
/// with a rejection, and the change being approved when it does not fit.
pub(crate) const PERMISSION_SELECT_KEY: PaneKey = pane_key("↑↓ Enter", "");
/// The key that gives the prompt the keys (`permission::FOCUS_KEY`), and gives them back.
pub(crate) const PERMISSION_FOCUS_KEY: PaneKey = pane_key("Tab", "to answer");
pub(crate) const PERMISSION_UNFOCUS_KEY: PaneKey = pane_key("Tab", "back to typing");
pub(crate) const PERMISSION_NOTE_KEY: PaneKey = pane_key("r", "note");
pub(crate) const PERMISSION_DIFF_DOWN_KEY: PaneKey = pane_key("PgDn", "diff");
pub(crate) const PERMISSION_DIFF_SCROLL_KEY: PaneKey = pane_key("PgUp/PgDn", "");
/// While the feedback line is written: Enter sends it with the rejection, Esc goes back.
pub(crate) const PERMISSION_NOTE_KEYS: &[PaneKey] = &[
    pane_key(SEND_KEY, "rejects with this note"),
    pane_key(STOP_KEY, "back to the options"),
];
pub(crate) const PERMISSION_NOTE_KEYS_SHORT: &[PaneKey] =
    &[pane_key(SEND_KEY, "rejects"), pane_key(STOP_KEY, "back")];

/// F1's help keys (`help.rs` answers them).
pub(crate) const HELP_KEYS: &[PaneKey] = &[
    pane_key("↑↓ PgUp PgDn", "scroll"),
    pane_key(STOP_KEY, "close"),
];

/// The action menu's keys (`menu.rs` answers them).
pub(crate) const MENU_KEYS: &[PaneKey] = &[
    pane_key("↑↓", "choose"),
    pane_key(SEND_KEY, "run"),
    pane_key(STOP_KEY, "close"),
];

/// `/provider`'s keys (`provider_picker.rs` answers them).
pub(crate) const PROVIDER_PICKER_KEYS: &[PaneKey] =
    &[pane_key(SEND_KEY, "switch"), pane_key(STOP_KEY, "close")];

/// `/resume`'s keys (`conversation_picker.rs` answers them).
pub(crate) const CONVERSATION_PICKER_KEYS: &[PaneKey] = &[
    pane_key("type", "to filter"),
    pane_key("↑↓", "choose"),
    pane_key(SEND_KEY, "open"),
    pane_key(STOP_KEY, "close"),
];

/// The key that steps the model's thinking level in `/model`.
pub(crate) const THINKING_LEVEL_KEY: &str = "Shift+Tab";

/// `/model`'s keys (`model_picker.rs` answers them); the thinking level's key is named, with
/// the level, only where the model has levels to step through.
pub(crate) const MODEL_PICKER_KEYS: &[PaneKey] = &[
    pane_key("type", "to filter"),
    pane_key(SEND_KEY, "choose"),
    pane_key(THINKING_LEVEL_KEY, "thinking"),
    pane_key(STOP_KEY, "close"),
];

/// `/permissions`' keys over the agent's modes (`mode_picker.rs` answers them).
pub(crate) const MODE_PICKER_KEYS: &[PaneKey] = &[
    pane_key("↑↓", "choose"),
    pane_key(SEND_KEY, "switch"),
    pane_key(STOP_KEY, "close"),
];

/// The question before a most permissive mode (`mode_picker.rs` answers it).
pub(crate) const MODE_CONFIRM_KEYS: &[PaneKey] = &[
    pane_key("y", "switch"),
    pane_key("n", "keep the current mode (default)"),
];

/// `/model`'s keys where the agent lists no model (`model_picker.rs` answers them).
pub(crate) const MODEL_PICKER_EMPTY_KEYS: &[PaneKey] = &[pane_key(STOP_KEY, "close")];

/// `/settings`' keys on a field of choices (`settings.rs` answers them).
pub(crate) const SETTINGS_KEYS: &[PaneKey] = &[
    pane_key("↑↓", "field"),
    pane_key("←→", "change"),
    pane_key(SEND_KEY, "save"),
    pane_key(STOP_KEY, "cancel"),
];

/// `/settings`' keys on a number field, which also takes typed digits (`settings.rs` answers
/// them).
pub(crate) const SETTINGS_NUMBER_KEYS: &[PaneKey] = &[
    pane_key("↑↓", "field"),
    pane_key("←→", "or type a value"),
    pane_key(SEND_KEY, "save"),
    pane_key(STOP_KEY, "cancel"),
];

/// The key that shows the other turns' changes in `/diff`.
pub(crate) const DIFF_SCOPE_KEY: &str = "Tab";

/// `/diff`'s keys (`review.rs` answers them); the scope's key says which changes it shows next.
pub(crate) const DIFF_KEYS: &[PaneKey] = &[
    pane_key("↑↓ PgUp/PgDn", "scroll"),
    pane_key("n/p", "file"),
    pane_key(DIFF_SCOPE_KEY, "other turns"),
    pane_key(STOP_KEY, "close"),
];

/// The `/undo` question's keys (`review.rs`'s `UndoConfirm` answers them).
pub(crate) const UNDO_CONFIRM_KEYS: &[PaneKey] = &[
    pane_key("y", "overwrite"),
    pane_key("n", "keep them and undo nothing (default)"),
];

/// `/rewind`'s keys while a prompt is picked (`rewind.rs` answers them).
pub(crate) const REWIND_KEYS: &[PaneKey] = &[
    pane_key("↑↓", "choose a prompt"),
    pane_key(SEND_KEY, ""),
    pane_key(STOP_KEY, "close"),
];

/// `/rewind`'s keys while what to take back is chosen (`rewind.rs` answers them).
pub(crate) const REWIND_CHOICE_KEYS: &[PaneKey] = &[
    pane_key("↑↓", "choose"),
    pane_key(SEND_KEY, "confirm"),
    pane_key(STOP_KEY, "back"),
];

/// Every pane's keys, by the pane they belong to (F1 lists them all; `help.rs` pins that none
/// is left out).
pub(crate) const PANES: &[(&str, &[PaneKey])] = &[
    ("/ and @ popup", POPUP_KEYS),
    ("Ctrl+R search", HISTORY_SEARCH_KEYS),
    ("Ctrl+X menu", MENU_KEYS),
    ("F1 help", HELP_KEYS),
    ("/provider", PROVIDER_PICKER_KEYS),
    ("/resume", CONVERSATION_PICKER_KEYS),
    ("/model", MODEL_PICKER_KEYS),
    ("/permissions", MODE_PICKER_KEYS),
    ("/permissions question", MODE_CONFIRM_KEYS),
    ("/settings", SETTINGS_KEYS),
    ("/settings number", SETTINGS_NUMBER_KEYS),
    ("/diff", DIFF_KEYS),
    ("/undo question", UNDO_CONFIRM_KEYS),
    ("/rewind", REWIND_KEYS),
    ("/rewind choice", REWIND_CHOICE_KEYS),
    ("permission note", PERMISSION_NOTE_KEYS),
];

impl PaneKey {
    /// "Enter use", or the bare name when nothing is said of it.
    pub(crate) fn hint(&self) -> String {
        if self.what.is_empty() {
            self.keys.to_owned()
        } else {
            format!("{} {}", self.keys, self.what)
        }
    }
}

/// A footer naming `keys` in at most `room` columns, with a space either side: each key with
/// what it does, else the first keys by name only, one more at a time (the last, what closes
/// the pane, always keeps its meaning); "" when not even that fits.
pub(crate) fn pane_hint(keys: &[PaneKey], room: usize) -> String {
    pane_hint_now(keys, room, |key| Some(key.what.to_owned()))
}

/// [`pane_hint`] for a pane whose keys say something of the moment: `now(key)` is what `key`
/// does now (its `what`, or more: "thinking: high", "last turn"), `None` to leave the key out
/// (it has nothing to act on).
pub(crate) fn pane_hint_now(
    keys: &[PaneKey],
    room: usize,
    now: impl Fn(&PaneKey) -> Option<String>,
) -> String {
    let shown: Vec<(&str, String)> = keys
        .iter()
        .filter_map(|key| Some((key.keys, now(key)?)))
        .collect();
    (0..shown.len().max(1))
        .map(|bare| {
            let parts: Vec<String> = shown
                .iter()
                .enumerate()
                .map(|(index, (keys, what))| {
                    if index < bare || what.is_empty() {
                        (*keys).to_owned()
                    } else {
                        format!("{keys} {what}")
                    }
                })
                .collect();
            format!(" {} ", parts.join(" · "))
        })
        .find(|footer| footer.chars().count() <= room)
        .unwrap_or_default()
}

/// Every key bound to `command`, the one its hints name first.
pub(crate) fn keys_of(command: KeyCommand) -> impl Iterator<Item = &'static str> {
    BINDINGS
        .iter()
        .filter(move |binding| binding.command == command)
        .map(|binding| binding.keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_chord_dispatches_its_command_and_contextual_keys_are_left_to_the_router() {
        for binding in BINDINGS {
            match binding.chord {
                Some((modifiers, code)) => assert_eq!(
                    command_for(KeyEvent::new(code, modifiers)),
                    Some(binding.command),
                    "{}",
                    binding.keys
                ),
                None => assert!(
                    matches!(
                        binding.command,
                        KeyCommand::Run(Action::Stop | Action::Rewind | Action::Quit)
                    ),
                    "{}",
                    binding.keys
                ),
            }
        }
        assert_eq!(
            command_for(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)),
            None
        );
        assert_eq!(
            command_for(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::NONE)),
            None,
            "a plain t is typed"
        );
    }

    #[test]
    fn hints_name_the_bound_keys() {
        assert_eq!(key_hint(Action::ToggleThinking), "Ctrl+T");
        assert_eq!(key_hint(Action::Stop), STOP_KEY);
        assert_eq!(key_hint(Action::Rewind), REWIND_KEY);
        assert_eq!(key_hint(Action::Settings), "");
        assert_eq!(footer_hint(), "Ctrl+X actions · F1 help");
        assert_eq!(key_hint(Action::Quit), "Ctrl+C ×2");
        assert_eq!(
            keys_of(KeyCommand::OpenMenu).collect::<Vec<_>>(),
            [MENU_KEY, "F2"]
        );
        assert_eq!(
            command_for(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(KeyCommand::Interrupt)
        );
    }

    #[test]
    fn pane_footers_drop_what_keys_do_from_the_first_one_at_a_time() {
        assert_eq!(
            pane_hint(POPUP_KEYS, 80),
            " Tab complete · Enter choose · Esc hide "
        );
        assert_eq!(
            pane_hint(HISTORY_SEARCH_KEYS, 36),
            " type · Enter use · Esc close "
        );
        assert_eq!(pane_hint(POPUP_KEYS, 24), " Tab · Enter · Esc hide ");
        assert_eq!(pane_hint(POPUP_KEYS, 10), "");
        // The names are the keys the chat answers to.
        assert_eq!(POPUP_KEYS[1].keys, SEND_KEY);
        assert_eq!(HISTORY_SEARCH_KEYS[2].keys, STOP_KEY);
        assert_eq!(
            PERMISSION_NOTE_KEY.keys,
            crate::app::permission::FEEDBACK_KEY.to_string()
        );
    }

    #[test]
    fn overlay_footers_narrow_from_their_own_tables() {
        assert_eq!(
            pane_hint(MENU_KEYS, 58),
            " ↑↓ choose · Enter run · Esc close "
        );
        assert_eq!(pane_hint(REWIND_KEYS, 34), " ↑↓ · Enter · Esc close ");
        // What a key does now replaces what the table says; a key with nothing to act on now
        // is left out.
        let diff = |room| {
            pane_hint_now(DIFF_KEYS, room, |key| {
                Some(if key.keys == DIFF_SCOPE_KEY {
                    "last turn".to_owned()
                } else {
                    key.what.to_owned()
                })
            })
        };
        assert_eq!(
            diff(80),
            " ↑↓ PgUp/PgDn scroll · n/p file · Tab last turn · Esc close "
        );
        assert_eq!(diff(38), " ↑↓ PgUp/PgDn · n/p · Tab · Esc close ");
        assert_eq!(
            pane_hint_now(MODEL_PICKER_KEYS, 80, |key| {
                (key.keys != THINKING_LEVEL_KEY).then(|| key.what.to_owned())
            }),
            " type to filter · Enter choose · Esc close "
        );
    }
}

#[cfg(test)]
#[path = "keymap_overlay_tests.rs"]
mod overlay_tests;
