//! Syntax highlighting for fenced code, via syntect.
//!
//! The syntax and theme sets cost tens of milliseconds to load, so they are loaded once, lazily,
//! on the first code block. A [`CodeHighlighter`] keeps syntect's parse state between lines, so
//! a streaming code block is highlighted one new line at a time, never from the start again.

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::{SyntaxReference, SyntaxSet};

use crate::config::Background;

struct Assets {
    syntaxes: SyntaxSet,
    dark: Theme,
    light: Theme,
}

impl Assets {
    /// syntect's palette for the frame's background (see [`super::theme`]).
    fn theme(&self) -> &Theme {
        match super::theme::background() {
            Background::Dark => &self.dark,
            Background::Light => &self.light,
        }
    }
}

/// syntect's palette for a terminal background.
fn palette(background: Background) -> &'static str {
    match background {
        Background::Dark => "base16-ocean.dark",
        Background::Light => "InspiredGitHub",
    }
}

fn assets() -> &'static Assets {
    static ASSETS: OnceLock<Assets> = OnceLock::new();
    ASSETS.get_or_init(|| {
        let syntaxes = SyntaxSet::load_defaults_newlines();
        let mut themes = ThemeSet::load_defaults();
        let mut take = |background| {
            themes
                .themes
                .remove(palette(background))
                .or_else(|| themes.themes.values().next().cloned())
                .unwrap_or_default()
        };
        let dark = take(Background::Dark);
        let light = take(Background::Light);
        Assets {
            syntaxes,
            dark,
            light,
        }
    })
}

/// The style of code with no known language.
pub(crate) fn plain_code_style() -> Style {
    Style::default().fg(super::theme::palette().output)
}

/// Highlights one code block line by line.
pub(crate) struct CodeHighlighter {
    inner: Option<HighlightLines<'static>>,
}

impl CodeHighlighter {
    /// A highlighter for the fence's info string (`rust`, `py`, `sh`, ...); plain when unknown.
    pub(crate) fn new(language: &str) -> Self {
        let token = language.split_whitespace().next().unwrap_or("");
        if token.is_empty() {
            return Self { inner: None };
        }
        let assets = assets();
        let syntax: Option<&SyntaxReference> = assets
            .syntaxes
            .find_syntax_by_token(token)
            .or_else(|| assets.syntaxes.find_syntax_by_extension(token));
        Self {
            inner: syntax.map(|syntax| HighlightLines::new(syntax, assets.theme())),
        }
    }

    /// The spans of one line (without its newline). Text must already be sanitised.
    pub(crate) fn highlight_line(&mut self, line: &str) -> Vec<Span<'static>> {
        let Some(inner) = self.inner.as_mut() else {
            return vec![Span::styled(line.to_owned(), plain_code_style())];
        };
        // The "newlines" syntax set expects each line with its newline.
        let with_newline = format!("{line}\n");
        match inner.highlight_line(&with_newline, &assets().syntaxes) {
            Ok(regions) => regions
                .into_iter()
                .filter_map(|(style, text)| {
                    let text = text.trim_end_matches('\n');
                    (!text.is_empty()).then(|| Span::styled(text.to_owned(), convert(style)))
                })
                .collect(),
            Err(_) => vec![Span::styled(line.to_owned(), plain_code_style())],
        }
    }
}

fn convert(style: syntect::highlighting::Style) -> Style {
    let fg = style.foreground;
    let mut converted = Style::default().fg(Color::Rgb(fg.r, fg.g, fg.b));
    if style.font_style.contains(FontStyle::BOLD) {
        converted = converted.add_modifier(Modifier::BOLD);
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        converted = converted.add_modifier(Modifier::ITALIC);
    }
    converted
}

#[cfg(test)]
mod palette_tests {
    use super::*;

    #[test]
    fn each_theme_names_a_palette_syntect_ships() {
        let shipped = ThemeSet::load_defaults();
        for theme in [Background::Dark, Background::Light] {
            assert!(shipped.themes.contains_key(palette(theme)), "{theme:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_language_gets_several_colours() {
        let mut highlighter = CodeHighlighter::new("rust");
        let spans = highlighter.highlight_line("fn main() { let x = \"s\"; }");
        let text: String = spans.iter().map(|span| span.content.as_ref()).collect();
        assert_eq!(text, "fn main() { let x = \"s\"; }");
        let colours: std::collections::HashSet<_> =
            spans.iter().map(|span| span.style.fg).collect();
        assert!(colours.len() >= 3, "{spans:?}");
    }

    #[test]
    fn state_carries_across_lines() {
        // Line 2 is inside a block comment opened on line 1: same colour as the comment.
        let mut highlighter = CodeHighlighter::new("rust");
        let first = highlighter.highlight_line("/* start");
        let second = highlighter.highlight_line("still comment */");
        assert_eq!(first[0].style.fg, second[0].style.fg);
    }

    #[test]
    fn unknown_language_is_plain() {
        let mut highlighter = CodeHighlighter::new("no-such-language");
        assert_eq!(
            highlighter.highlight_line("x = 1"),
            vec![Span::styled("x = 1", plain_code_style())]
        );
    }
}
