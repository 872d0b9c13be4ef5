//! F1: the help, scrolled. Its rows are built from the tables the chat runs on, so nothing the
//! chat answers to can be left out of it (a test pins that): every `/` command the popup
//! offers (`Action::ALL`, each with the keys the keymap binds to it), every chord and
//! contextual key of the keymap (`BINDINGS`), the permission prompt's keys (its focus key and
//! its options' letters), and every pane's footer table (`PANES`); the composer's and the
//! transcript's own keys, which no table dispatches, are described here.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent};

use super::action::Action;
use super::keymap::{
    key_hint, keys_of, KeyCommand, NEWLINE_KEY, PANES, PERMISSION_DIFF_SCROLL_KEY,
    PERMISSION_FOCUS_KEY, PERMISSION_NOTE_KEY, PERMISSION_SELECT_KEY, SEND_KEY, STOP_KEY,
    THINKING_LEVEL_KEY, UNQUEUE_KEY,
};
use super::list::scroll_key;
use super::pane::{OverlayPane, Step};
use super::permission::mnemonic;
use crate::stream::PermissionOptionKind;

/// One part of the help: a title and its rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HelpSection {
    pub(crate) title: &'static str,
    pub(crate) rows: Vec<HelpRow>,
}

/// One row of the help: the keys (or the command) and what they do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HelpRow {
    pub(crate) keys: String,
    pub(crate) what: String,
}

/// Keys in a row: a command's bound keys, or keys described here.
#[derive(Clone, Copy)]
enum Keys {
    Bound(KeyCommand),
    Text(&'static str),
    /// The composer's new-line keys.
    Newline,
}
use Keys::{Bound, Newline, Text};

/// The keys bound to running `action`.
const fn run(action: Action) -> Keys {
    Bound(KeyCommand::Run(action))
}

fn row(keys: Keys, what: &str) -> HelpRow {
    let keys = match keys {
        Bound(command) => keys_of(command).collect::<Vec<_>>().join(" / "),
        Text(keys) => keys.to_owned(),
        Newline => format!("{NEWLINE_KEY} / Shift+Enter / Ctrl+J"),
    };
    HelpRow {
        keys,
        what: what.to_owned(),
    }
}

/// The chat's keys, in the order the help shows them.
fn chat_keys() -> Vec<HelpRow> {
    CHAT_KEYS
        .iter()
        .map(|(keys, what)| row(*keys, what))
        .collect()
}

/// The chat's keys and what they do: the composer's and the transcript's own keys, which no
/// table dispatches, are described here; the others name the command the keymap binds. A row a
/// line (long ones go on below), so the table reads as one.
#[rustfmt::skip]
const CHAT_KEYS: &[(Keys, &str)] = &[
    (Text(SEND_KEY),
        "send the prompt (queue it while a turn runs; with pi or Claude Code, steer it)"),
    (Newline,
        "new line in the prompt (with pi, while a turn runs, Alt+Enter queues a follow-up)"),
    (Text("Tab"), "complete the / command or @ file shown above the prompt"),
    (Text("@"),
        "mention a file or folder (fuzzy search here, hidden files too); @file:10-20 adds \
         lines (Tab adds no space, so :10-20 can follow)"),
    (Text("Up / Down"), "earlier prompts (on an empty prompt)"),
    (Bound(KeyCommand::SearchHistory), "search earlier prompts (also from earlier launches)"),
    (Bound(KeyCommand::EditPrompt), "edit the prompt in $VISUAL / $EDITOR"),
    (Text("!cmd / !!cmd"),
        "run a shell command here (30 s at most): output in the transcript / in the prompt, \
         to send; no output reaches the agent unless you send it (a message starting with ! : \
         type a space first)"),
    (Text("/word Enter Enter"),
        "not a command: the first Enter warns, the second sends it as a message"),
    (run(Action::Stop), "stop the turn, queued prompts back to the editor; again: kill"),
    (run(Action::Rewind), "on an empty prompt with no turn running: /rewind"),
    (Text(UNQUEUE_KEY), "pull the last queued prompt back into the editor"),
    (Text(THINKING_LEVEL_KEY),
        "the agent's next mode where it has modes (never a most permissive one: /permissions \
         asks first), else its next thinking level"),
    (Bound(KeyCommand::Interrupt),
        "clear the prompt (Up brings it back), else stop the turn; twice within a second \
         quits, whatever the first did"),
    (run(Action::Quit),
        "quit (Ctrl+D on an empty prompt; on text it deletes the character under the cursor)"),
    (Bound(KeyCommand::OpenMenu), "actions menu"),
    (run(Action::Help), "this help"),
    (Bound(KeyCommand::Suspend), "suspend agentty and the agent (fg resumes)"),
    (run(Action::ToggleThinking), "expand/collapse all thinking"),
    (run(Action::ToggleToolOutput), "expand/collapse all tool output and command output"),
    (run(Action::TogglePlan), "show / fold the steps of the plan pinned above the input"),
    (Text("Ctrl+A / Ctrl+E"), "start / end of the line"),
    (Text("Ctrl+B / Ctrl+F"), "back / forward one character"),
    (Text("Alt+B / Alt+F"), "back one word / to the end of the word"),
    (Text("Ctrl+K / Ctrl+U"), "delete to the end / start of the line"),
    (Text("Ctrl+W / Alt+D"), "delete the word before / after the cursor"),
    (Text("Ctrl+Y"), "paste what was deleted last"),
    (Text("Ctrl+_"), "undo the last edit"),
    (Text("Ctrl+V"), "attach the typed image path, else the clipboard's image"),
    (Text("Click"), "expand/collapse one thinking block, tool, notice or pasted text"),
    (Text("PgUp / PgDn"), "scroll the transcript a page"),
    (Text("Mouse wheel"), "scroll the transcript"),
    (Text("Home / End"), "top / bottom (when the prompt is empty)"),
    (Text("Ctrl+Home / Ctrl+End"), "top / bottom (always)"),
    (Text("Shift+drag"), "select text with the mouse (the terminal's selection)"),
];

/// The permission prompt's keys: its focus key, its options' numbers and letters, the
/// highlighted option, the note, Esc and the change's scrolling.
fn permission_keys() -> Vec<HelpRow> {
    use PermissionOptionKind::*;
    let letter = |kind| mnemonic(kind).to_string();
    let focus = PERMISSION_FOCUS_KEY.keys;
    vec![
        HelpRow {
            keys: focus.to_owned(),
            what: format!(
                "give the prompt the keys: until then every key, whatever the pauses, goes to \
                 the composer below ({SEND_KEY} sends what was typed); {focus} again gives them back"
            ),
        },
        HelpRow {
            keys: format!("1-9 / {} / {}", letter(AllowOnce), letter(RejectOnce)),
            what: "a once-only option by number / allow once / reject once".to_owned(),
        },
        HelpRow {
            keys: format!("{} / {}", letter(AllowAlways), letter(RejectAlways)),
            what: format!(
                "highlight allow always / reject always; {SEND_KEY} then confirms it (never one \
                 key)"
            ),
        },
        HelpRow {
            keys: PERMISSION_SELECT_KEY.keys.to_owned(),
            what: "the highlighted option (at first the agent's allow-once)".to_owned(),
        },
        HelpRow {
            keys: PERMISSION_NOTE_KEY.keys.to_owned(),
            what: "reject and say what to do instead: a line to write, Enter sends, Esc goes \
                   back"
                .to_owned(),
        },
        HelpRow {
            keys: STOP_KEY.to_owned(),
            what: "reject the request (the turn goes on; Esc again stops it)".to_owned(),
        },
        HelpRow {
            keys: PERMISSION_DIFF_SCROLL_KEY.keys.to_owned(),
            what: "scroll the change being approved when it does not fit (never an answer)"
                .to_owned(),
        },
    ]
}

/// Every `/` command the popup offers, with its argument and the keys that run it.
fn commands() -> Vec<HelpRow> {
    Action::ALL
        .iter()
        .map(|action| {
            let keys = key_hint(*action);
            HelpRow {
                keys: action.usage().to_owned(),
                what: if keys.is_empty() {
                    action.label().to_owned()
                } else {
                    format!("{} ({keys})", action.label())
                },
            }
        })
        .collect()
}

/// Every pane's keys, as its footer names them.
fn pane_keys() -> Vec<HelpRow> {
    PANES
        .iter()
        .map(|(pane, keys)| HelpRow {
            keys: (*pane).to_owned(),
            what: keys
                .iter()
                .map(|key| key.hint())
                .collect::<Vec<_>>()
                .join(" · "),
        })
        .collect()
}

/// The help, in order.
pub(crate) fn help_sections() -> Vec<HelpSection> {
    vec![
        HelpSection {
            title: "Commands (type / for the list; Ctrl+X lists them too)",
            rows: commands(),
        },
        HelpSection {
            title: "Keys",
            rows: chat_keys(),
        },
        HelpSection {
            title: "Permission prompt",
            rows: permission_keys(),
        },
        HelpSection {
            title: "In lists and views",
            rows: pane_keys(),
        },
    ]
}

/// The help and how far it is scrolled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyHelp {
    /// The first row shown.
    pub(crate) scroll: usize,
    /// The largest useful `scroll` at the size last drawn (only the view knows how the help
    /// wraps; the chat passes it in after each frame, see `AppState::on_drawn`), so End and Up
    /// stay in step with what is shown.
    limit: usize,
}

impl Default for KeyHelp {
    fn default() -> Self {
        Self {
            scroll: 0,
            limit: usize::MAX,
        }
    }
}

impl KeyHelp {
    /// The frame just drawn could scroll the help down to `limit`.
    pub(crate) fn laid_out(&mut self, limit: usize) {
        self.limit = limit;
    }
}

impl OverlayPane for KeyHelp {
    type Input<'a> = ();
    type Request = ();

    /// Scrolling keys scroll it; Esc, Enter, F1 and q close it.
    fn on_key(&mut self, key: KeyEvent, _now: Option<Instant>, _input: ()) -> Step<()> {
        if matches!(
            key.code,
            KeyCode::Esc | KeyCode::Enter | KeyCode::F(1) | KeyCode::Char('q')
        ) {
            return Step::Close;
        }
        // Before the first frame the limit is unknown: a help row wraps to a few at most.
        let rows: usize = help_sections()
            .iter()
            .map(|section| section.rows.len() + 2)
            .sum();
        let limit = self.limit.min(rows * 4);
        let scroll = self.scroll.min(limit);
        self.scroll = scroll_key(key, scroll, limit + 1).unwrap_or(scroll);
        Step::Open
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::keymap::BINDINGS;
    use crossterm::event::KeyModifiers;

    fn press(help: &mut KeyHelp, code: KeyCode) -> Step<()> {
        help.on_key(KeyEvent::new(code, KeyModifiers::NONE), None, ())
    }

    #[test]
    fn scrolls_within_the_limit_last_drawn_and_closes() {
        let mut help = KeyHelp::default();
        help.laid_out(7);
        assert_eq!(press(&mut help, KeyCode::End), Step::Open);
        assert_eq!(help.scroll, 7);
        // A larger screen: the old offset is past the new limit; one Up moves at once.
        help.laid_out(3);
        press(&mut help, KeyCode::Up);
        assert_eq!(help.scroll, 2);
        assert_eq!(press(&mut help, KeyCode::Char('q')), Step::Close);
        assert_eq!(press(&mut help, KeyCode::F(1)), Step::Close);
    }

    /// The keys column of the help's rows in a section.
    fn keys_in(title_start: &str) -> Vec<String> {
        help_sections()
            .into_iter()
            .find(|section| section.title.starts_with(title_start))
            .map(|section| section.rows.into_iter().map(|row| row.keys).collect())
            .unwrap_or_default()
    }

    #[test]
    fn every_command_of_the_popup_and_every_key_the_chat_answers_is_in_f1() {
        let commands = keys_in("Commands");
        let whole: String = help_sections()
            .iter()
            .flat_map(|section| &section.rows)
            .map(|row| format!("{}\n{}\n", row.keys, row.what))
            .collect();
        // Every command the `/` popup offers, in its order, each once.
        let offered: Vec<String> = crate::app::completion::slash_items("/")
            .into_iter()
            .map(|item| item.label)
            .collect();
        let listed: Vec<&str> = commands
            .iter()
            .map(|keys| keys.split_whitespace().next().unwrap_or(""))
            .collect();
        assert_eq!(listed, offered);
        // Every key the keymap binds, chords and contextual keys alike (Esc Esc among them).
        for binding in BINDINGS {
            assert!(
                whole.contains(binding.keys),
                "{} is not in F1",
                binding.keys
            );
        }
        for action in Action::ALL {
            let keys = key_hint(action);
            if !keys.is_empty() {
                assert!(
                    whole.contains(&format!("{} ({keys})", action.label())),
                    "{} does not name {keys}",
                    action.slash()
                );
            }
        }
        // Every pane's keys, as its footer names them.
        for (pane, keys) in PANES {
            for key in *keys {
                assert!(
                    whole.contains(&key.hint()),
                    "{pane}: {} missing",
                    key.hint()
                );
            }
        }
        // The permission prompt's focus key and every option letter.
        use PermissionOptionKind::*;
        let permission = keys_in("Permission").join("\n");
        for kind in [AllowOnce, AllowAlways, RejectOnce, RejectAlways] {
            assert!(permission.contains(mnemonic(kind)), "{kind:?}");
        }
        assert!(permission.contains(PERMISSION_FOCUS_KEY.keys));
        assert!(whole.contains("Esc Esc") && whole.contains("/rewind"));
    }
}
