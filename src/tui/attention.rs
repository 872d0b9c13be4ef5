//! Writing the window title and the call backs that `crate::app::attention` decides on.
//!
//! A desktop notification has no common escape sequence and cannot be asked of the terminal,
//! so (like peers) agentty picks one by `$TERM_PROGRAM` / `$TERM`: OSC 9 where iTerm2's form
//! is known to be shown, OSC 777 for the rxvt family and foot, OSC 99 for kitty, and the bell
//! alone elsewhere (inside tmux too, which passes neither on without being asked to).

use std::fmt;
use std::io::{self, Write};

use crossterm::terminal::SetTitle;
use crossterm::{queue, Command};

use crate::app::attention::AttentionEffect;
use crate::config::NotifyMode;

/// A desktop notification escape sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DesktopNotification {
    /// `OSC 9 ; message BEL` (iTerm2, WezTerm, Ghostty).
    Osc9,
    /// `OSC 777 ; notify ; title ; message BEL` (rxvt-unicode, foot).
    Osc777,
    /// `OSC 99 ; ; message ST` (kitty).
    Osc99,
}

impl DesktopNotification {
    /// The sequence the terminal named by `term_program` / `term` shows, if any is known.
    pub(crate) fn for_terminal(
        term_program: Option<&str>,
        term: Option<&str>,
    ) -> Option<DesktopNotification> {
        match term_program.unwrap_or_default() {
            "iTerm.app" | "WezTerm" | "ghostty" => return Some(DesktopNotification::Osc9),
            // tmux names itself here and in TERM; what runs outside it is unknown.
            "tmux" => return None,
            _ => {}
        }
        let term = term.unwrap_or_default();
        if term == "xterm-kitty" {
            Some(DesktopNotification::Osc99)
        } else if term == "xterm-ghostty" || term == "wezterm" {
            Some(DesktopNotification::Osc9)
        } else if term.starts_with("rxvt-unicode") || term.starts_with("foot") {
            Some(DesktopNotification::Osc777)
        } else {
            None
        }
    }

    /// The one for the terminal agentty runs in.
    pub(crate) fn detect() -> Option<DesktopNotification> {
        let var = |name| std::env::var(name).ok();
        Self::for_terminal(var("TERM_PROGRAM").as_deref(), var("TERM").as_deref())
    }
}

/// The notification escape sequence carrying `message` (inert text, so it cannot end the
/// sequence early).
struct Notification<'a>(DesktopNotification, &'a str);

impl Command for Notification<'_> {
    fn write_ansi(&self, f: &mut impl fmt::Write) -> fmt::Result {
        let Notification(kind, message) = self;
        match kind {
            DesktopNotification::Osc9 => write!(f, "\x1b]9;{message}\x07"),
            DesktopNotification::Osc777 => write!(f, "\x1b]777;notify;agentty;{message}\x07"),
            DesktopNotification::Osc99 => write!(f, "\x1b]99;;{message}\x1b\\"),
        }
    }
}

/// Writes `effects` to `out` (the terminal), then flushes it.
pub(crate) fn write_effects(
    out: &mut impl Write,
    effects: &[AttentionEffect],
    desktop: Option<DesktopNotification>,
) -> io::Result<()> {
    for effect in effects {
        match effect {
            AttentionEffect::Title(title) => queue!(out, SetTitle(title))?,
            AttentionEffect::Notify(NotifyMode::Off, _) => {}
            AttentionEffect::Notify(NotifyMode::Bell, _) => out.write_all(b"\x07")?,
            AttentionEffect::Notify(NotifyMode::Osc, message) => {
                if let Some(kind) = desktop {
                    queue!(out, Notification(kind, message))?;
                }
                out.write_all(b"\x07")?;
            }
        }
    }
    out.flush()
}

/// Saves the terminal's own title on its title stack (xterm's `CSI 22 ; 0 t`), for
/// [`RestoreTitle`].
pub(crate) struct SaveTitle;

impl Command for SaveTitle {
    fn write_ansi(&self, f: &mut impl fmt::Write) -> fmt::Result {
        f.write_str("\x1b[22;0t")
    }
}

/// Gives the terminal its own title back: an empty title first (which a terminal without a
/// title stack takes as "show your default"), then the saved one (`CSI 23 ; 0 t`).
pub(crate) struct RestoreTitle;

impl Command for RestoreTitle {
    fn write_ansi(&self, f: &mut impl fmt::Write) -> fmt::Result {
        f.write_str("\x1b]0;\x07\x1b[23;0t")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_desktop_notification_is_picked_by_the_terminal() {
        let pick = DesktopNotification::for_terminal;
        assert_eq!(
            pick(Some("iTerm.app"), Some("xterm-256color")),
            Some(DesktopNotification::Osc9)
        );
        assert_eq!(
            pick(Some("WezTerm"), Some("xterm-256color")),
            Some(DesktopNotification::Osc9)
        );
        assert_eq!(
            pick(None, Some("rxvt-unicode-256color")),
            Some(DesktopNotification::Osc777)
        );
        assert_eq!(pick(None, Some("foot")), Some(DesktopNotification::Osc777));
        assert_eq!(
            pick(None, Some("xterm-kitty")),
            Some(DesktopNotification::Osc99)
        );
        // Unknown terminals and tmux (which hides the terminal outside it) get the bell only.
        assert_eq!(pick(Some("Apple_Terminal"), Some("xterm-256color")), None);
        assert_eq!(pick(Some("tmux"), Some("tmux-256color")), None);
        assert_eq!(pick(None, None), None);
    }

    #[test]
    fn each_mode_writes_its_sequences() {
        let written = |mode, desktop| {
            let mut out = Vec::new();
            let effects = [AttentionEffect::Notify(mode, "pi finished its turn".into())];
            write_effects(&mut out, &effects, desktop).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            written(NotifyMode::Off, Some(DesktopNotification::Osc9)),
            ""
        );
        assert_eq!(
            written(NotifyMode::Bell, Some(DesktopNotification::Osc9)),
            "\x07"
        );
        assert_eq!(
            written(NotifyMode::Osc, Some(DesktopNotification::Osc9)),
            "\x1b]9;pi finished its turn\x07\x07"
        );
        assert_eq!(
            written(NotifyMode::Osc, Some(DesktopNotification::Osc777)),
            "\x1b]777;notify;agentty;pi finished its turn\x07\x07"
        );
        assert_eq!(
            written(NotifyMode::Osc, Some(DesktopNotification::Osc99)),
            "\x1b]99;;pi finished its turn\x1b\\\x07"
        );
        // Where no desktop notification is known, the bell still rings.
        assert_eq!(written(NotifyMode::Osc, None), "\x07");
    }

    #[test]
    fn the_title_is_set_with_the_osc_title_sequence() {
        let mut out = Vec::new();
        let effects = [AttentionEffect::Title("agentty · pi · idle".into())];
        write_effects(&mut out, &effects, None).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\x1b]0;agentty · pi · idle\x07"
        );
    }
}
