//! Every colour the chat draws with, for a dark and a light terminal background.
//!
//! The view's widgets name a role (`accent`, `warning`, `added`, ...), never a colour, so a
//! theme is one [`Palette`] value here. Which palette a frame uses is the state's
//! ([`crate::app::state::AppState::background`]); [`super::render_to_buffer`] selects it for the
//! frame's thread before drawing anything, so the widgets need no palette parameter threaded
//! through every call and a frame stays a function of (state, now, size). Code outside a frame
//! (a unit test drawing one cell) gets the dark palette.
//!
//! The light palette uses the 256-colour cube's darker shades (which every current terminal
//! has) rather than the 16 ANSI colours, whose yellow, cyan and light grey are unreadable on a
//! white background in most terminals' default palettes.

use std::cell::Cell;

use ratatui::style::{Color, Modifier, Style};

use crate::config::Background;

/// The colours of one theme, by what they mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Palette {
    /// Secondary text: hints, notes, labels, frames of quiet boxes.
    pub(crate) dim: Style,
    /// Keys in hints and help, frames of popups and overlays, tool names, headings.
    pub(crate) accent: Color,
    /// Links in answers.
    pub(crate) link: Color,
    /// Done, allowed, the quote bar.
    pub(crate) success: Color,
    /// Warnings, stops, list markers, the permission prompt's frame.
    pub(crate) warning: Color,
    /// Errors, rejections.
    pub(crate) error: Color,
    /// Retries and other agentty-side bookkeeping.
    pub(crate) retry: Color,
    /// Rules, fences, table separators and a link's address: present, but quiet.
    pub(crate) muted: Color,
    /// Tool output and code with no known language.
    pub(crate) output: Color,
    /// Lines a diff adds.
    pub(crate) added: Color,
    /// Lines a diff removes.
    pub(crate) removed: Color,
    /// A match of the transcript search.
    pub(crate) search_match: Style,
    pub(crate) status: StatusPalette,
}

/// The status bar's colours: its own background, so its text has its own shades.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StatusPalette {
    pub(crate) background: Color,
    pub(crate) text: Color,
    /// Something that wants attention soon (a retry countdown, a context window filling up).
    pub(crate) caution: Color,
    /// Something that wants attention now (a context window nearly full).
    pub(crate) alarm: Color,
    /// The agent working or writing.
    pub(crate) working: Color,
    pub(crate) thinking: Color,
    pub(crate) tool: Color,
    /// The agent's own retry.
    pub(crate) retry: Color,
}

/// For a dark terminal background: the 16 ANSI colours, as agentty always drew.
pub(crate) const DARK: Palette = Palette {
    dim: Style::new().add_modifier(Modifier::DIM),
    accent: Color::Cyan,
    link: Color::Blue,
    success: Color::Green,
    warning: Color::Yellow,
    error: Color::Red,
    retry: Color::Magenta,
    muted: Color::DarkGray,
    output: Color::Gray,
    added: Color::Green,
    removed: Color::Red,
    search_match: Style::new()
        .fg(Color::Black)
        .bg(Color::Yellow)
        .add_modifier(Modifier::BOLD),
    status: StatusPalette {
        background: Color::DarkGray,
        text: Color::White,
        caution: Color::Yellow,
        alarm: Color::LightRed,
        working: Color::LightGreen,
        thinking: Color::LightBlue,
        tool: Color::LightCyan,
        retry: Color::LightMagenta,
    },
};

/// For a light terminal background: dark shades that keep at least 4.5:1 contrast on white
/// (WCAG AA), and a light status bar with dark text.
pub(crate) const LIGHT: Palette = Palette {
    // Terminals dim by blending towards the background, which on white leaves text too faint.
    dim: Style::new().fg(Color::Indexed(242)), // #6c6c6c
    accent: Color::Indexed(25),                // #005faf
    link: Color::Indexed(19),                  // #0000af
    success: Color::Indexed(28),               // #008700
    warning: Color::Indexed(130),              // #af5f00
    error: Color::Indexed(124),                // #af0000
    retry: Color::Indexed(90),                 // #870087
    muted: Color::Indexed(243),                // #767676
    output: Color::Indexed(238),               // #444444
    added: Color::Indexed(28),
    removed: Color::Indexed(124),
    search_match: Style::new()
        .fg(Color::Black)
        .bg(Color::Indexed(220)) // #ffd700
        .add_modifier(Modifier::BOLD),
    status: StatusPalette {
        background: Color::Indexed(254), // #e4e4e4
        text: Color::Indexed(16),        // #000000
        caution: Color::Indexed(94),     // #875f00
        alarm: Color::Indexed(124),
        working: Color::Indexed(22), // #005f00
        thinking: Color::Indexed(19),
        tool: Color::Indexed(23), // #005f5f
        retry: Color::Indexed(90),
    },
};

impl Palette {
    pub(crate) fn of(background: Background) -> &'static Palette {
        match background {
            Background::Dark => &DARK,
            Background::Light => &LIGHT,
        }
    }
}

thread_local! {
    /// The background the frame being drawn on this thread is for.
    static FRAME_BACKGROUND: Cell<Background> = const { Cell::new(Background::Dark) };
}

/// Draws this thread's next frames for `background`.
pub(crate) fn use_for_frame(background: Background) {
    FRAME_BACKGROUND.with(|current| current.set(background));
}

/// The background of the frame being drawn.
pub(crate) fn background() -> Background {
    FRAME_BACKGROUND.with(Cell::get)
}

/// The palette of the frame being drawn.
pub(crate) fn palette() -> &'static Palette {
    Palette::of(background())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sRGB value of a 256-colour index from the colour cube or the grey ramp.
    fn rgb(color: Color) -> (f64, f64, f64) {
        let Color::Indexed(index) = color else {
            panic!("the light palette uses indexed colours: {color:?}");
        };
        let channel = |level: u8| -> f64 {
            if level == 0 {
                0.0
            } else {
                f64::from(55 + 40 * u16::from(level))
            }
        };
        match index {
            16..=231 => {
                let cube = index - 16;
                (channel(cube / 36), channel(cube / 6 % 6), channel(cube % 6))
            }
            232..=255 => {
                let grey = f64::from(8 + 10 * u16::from(index - 232));
                (grey, grey, grey)
            }
            _ => panic!("not from the cube or the ramp: {index}"),
        }
    }

    fn luminance((r, g, b): (f64, f64, f64)) -> f64 {
        let linear = |c: f64| {
            let c = c / 255.0;
            if c <= 0.03928 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)
    }

    fn contrast(a: (f64, f64, f64), b: (f64, f64, f64)) -> f64 {
        let (a, b) = (luminance(a), luminance(b));
        (a.max(b) + 0.05) / (a.min(b) + 0.05)
    }

    #[test]
    fn light_text_colours_are_readable_on_white() {
        let white = (255.0, 255.0, 255.0);
        let text = [
            ("dim", LIGHT.dim.fg.unwrap()),
            ("accent", LIGHT.accent),
            ("link", LIGHT.link),
            ("success", LIGHT.success),
            ("warning", LIGHT.warning),
            ("error", LIGHT.error),
            ("retry", LIGHT.retry),
            ("muted", LIGHT.muted),
            ("output", LIGHT.output),
            ("added", LIGHT.added),
            ("removed", LIGHT.removed),
        ];
        for (role, color) in text {
            let ratio = contrast(rgb(color), white);
            assert!(ratio >= 4.5, "{role} {color:?}: {ratio:.2}:1 on white");
        }
    }

    #[test]
    fn light_status_bar_text_is_readable_on_its_background() {
        let status = LIGHT.status;
        let background = rgb(status.background);
        for (role, color) in [
            ("text", status.text),
            ("caution", status.caution),
            ("alarm", status.alarm),
            ("working", status.working),
            ("thinking", status.thinking),
            ("tool", status.tool),
            ("retry", status.retry),
        ] {
            let ratio = contrast(rgb(color), background);
            assert!(ratio >= 4.5, "status {role} {color:?}: {ratio:.2}:1");
        }
    }

    #[test]
    fn the_frame_background_picks_the_palette_per_thread() {
        use_for_frame(Background::Light);
        assert_eq!(palette(), &LIGHT);
        let other = std::thread::spawn(|| *palette()).join().unwrap();
        assert_eq!(other, DARK, "another thread's frames are not affected");
        use_for_frame(Background::Dark);
        assert_eq!(palette(), &DARK);
    }
}
