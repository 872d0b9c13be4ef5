//! The popups above the input while typing: `/` commands (filtered as you type, with each
//! command's key and description) and `@` file mentions. Tab completes the selected item;
//! Enter runs the command or completes the mention; Esc hides the popup until the text changes.
//!
//! The popup is recomputed after every edit (not every frame), so a streaming transcript does
//! not re-rank files 60 times a second.

use super::action::Action;
use super::list::ListSelection;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PopupKind {
    Slash,
    Mention,
}

/// One suggestion: what it inserts, and how it is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PopupItem {
    pub(crate) completion: String,
    pub label: String,
    pub(crate) key: String,
    pub(crate) detail: String,
    pub(crate) action: Option<Action>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Popup {
    pub(crate) kind: PopupKind,
    pub items: Vec<PopupItem>,
    pub(crate) selection: ListSelection,
    /// Characters before the cursor that a completion replaces.
    pub(crate) replaces: usize,
    /// Shown when there is no item (still listing files, nothing matches).
    pub(crate) empty_note: &'static str,
}

/// The `/` commands matching what was typed (a prefix of the command).
pub(crate) fn slash_items(typed: &str) -> Vec<PopupItem> {
    Action::ALL
        .iter()
        .filter(|action| action.slash().starts_with(typed))
        .map(|action| PopupItem {
            completion: match action {
                Action::SwitchProvider => format!("{} ", action.slash()),
                _ => action.slash().to_owned(),
            },
            label: action.slash().to_owned(),
            key: super::keymap::key_hint(*action).to_owned(),
            detail: action.label().to_owned(),
            action: Some(*action),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_items_filter_by_prefix() {
        let items = slash_items("/re");
        let labels: Vec<&str> = items.iter().map(|item| item.label.as_str()).collect();
        assert_eq!(labels, ["/retry", "/resume", "/rewind"]);
        assert_eq!(slash_items("/").len(), Action::ALL.len());
        assert!(slash_items("/zz").is_empty());
    }
}
