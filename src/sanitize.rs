//! Neutralises agent output before it reaches the terminal.
//!
//! ratatui writes cell symbols raw, so an escape sequence inside a `Span` would be executed by the
//! terminal: an agent could clear the screen, retitle the window or write the clipboard (OSC 52).
//! Every untrusted string passes through [`untrusted`] before it is stored for display. The
//! result contains no C0/C1 control character except `\n`: ESC and the other C0 controls become
//! their visible Control Pictures (`␛[2J`), DEL becomes `␡`, C1 controls (which some terminals
//! treat like ESC sequences) become `�`, tabs become spaces, carriage returns are dropped (a bare
//! `\r` would let text overwrite itself), and bidirectional controls are removed: the overrides,
//! embeddings and isolates, and the marks (U+200E, U+200F, U+061C), which reorder what is shown
//! as much.

use std::borrow::Cow;

/// Spaces a tab becomes (column-independent: text arrives in pieces).
const TAB_SPACES: &str = "    ";

/// The visible, inert form of `text`; borrows when nothing needs changing.
pub(crate) fn untrusted(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_replacing) {
        return Cow::Borrowed(text);
    }
    let mut clean = String::with_capacity(text.len() + 8);
    for ch in text.chars() {
        if !needs_replacing(ch) {
            clean.push(ch);
            continue;
        }
        match ch {
            '\t' => clean.push_str(TAB_SPACES),
            '\r' => {}
            '\u{7f}' => clean.push('\u{2421}'),
            // C0 controls map onto the Control Pictures block: ESC (0x1b) becomes U+241B "␛".
            '\u{0}'..='\u{1f}' => {
                clean.push(char::from_u32(0x2400 + ch as u32).unwrap_or('\u{fffd}'))
            }
            '\u{80}'..='\u{9f}' => clean.push('\u{fffd}'),
            // Bidirectional controls: reorder what the user sees, carry no text.
            _ => {}
        }
    }
    Cow::Owned(clean)
}

/// Text for the clipboard: the agent's source as written (tabs and line breaks kept), without
/// the controls that could act on whatever it is pasted into.
pub(crate) fn for_clipboard(text: &str) -> Cow<'_, str> {
    let keep = |ch: char| matches!(ch, '\t' | '\n') || !needs_replacing(ch);
    if text.chars().all(keep) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().filter(|ch| keep(*ch)).collect())
}

/// The sanitised text, owned.
pub(crate) fn untrusted_owned(text: &str) -> String {
    untrusted(text).into_owned()
}

fn needs_replacing(ch: char) -> bool {
    match ch {
        '\n' => false,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        // Bidi marks: left-to-right, right-to-left, Arabic letter mark.
        '\u{200e}' | '\u{200f}' | '\u{061c}' => true,
        _ => false,
    }
}

/// `value` as one line of JSON in which no character that acts on a terminal stands raw.
/// serde_json escapes the C0 controls already; DEL, the C1 controls (U+009B is a CSI to many
/// terminals) and the bidirectional controls are escaped here too (`\u009b`, `\u202e`), so the
/// line is the same JSON to any reader, and inert wherever it is shown: `agentty run`'s stdout,
/// a session log on a terminal or in a log viewer.
pub(crate) fn inert_json<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut line = Vec::with_capacity(128);
    let mut serializer = serde_json::Serializer::with_formatter(&mut line, InertJson);
    value.serialize(&mut serializer)?;
    // serde_json writes UTF-8, and the escapes added here are ASCII.
    Ok(String::from_utf8(line).unwrap_or_default())
}

/// serde_json's compact form, with the escapes of [`inert_json`].
struct InertJson;

impl serde_json::ser::Formatter for InertJson {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        // Plain ASCII, by far the most text, goes out as it is.
        if fragment.bytes().all(|byte| byte < 0x7f) {
            return writer.write_all(fragment.as_bytes());
        }
        let mut start = 0;
        for (index, ch) in fragment.char_indices() {
            if needs_replacing(ch) {
                writer.write_all(&fragment.as_bytes()[start..index])?;
                write!(writer, "\\u{:04x}", ch as u32)?;
                start = index + ch.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
}

/// Whether `text` is safe to hand to the terminal as it is (used to guard the render path).
pub(crate) fn is_inert(text: &str) -> bool {
    !text.chars().any(|ch| ch != '\n' && needs_replacing(ch))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_carry_no_raw_control_and_read_back_the_same() {
        let text = "a\u{1b}[2Jb\u{9b}31mc\u{202e}d\u{2066}e\u{7f}f\u{200f}g é ✓\n";
        let value = serde_json::json!({"type": "assistant", "delta": text, text: [text]});
        let line = inert_json(&value).unwrap();
        assert!(
            line.chars()
                .all(|ch| (' '..='~').contains(&ch) || !needs_replacing(ch) && ch != '\n'),
            "{line:?}"
        );
        for escaped in [
            "\\u001b", "\\u009b", "\\u202e", "\\u2066", "\\u007f", "\\u200f",
        ] {
            assert!(line.contains(escaped), "{escaped} in {line}");
        }
        assert!(line.contains("é ✓"), "other text stays as it is: {line}");
        let back: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn escape_sequences_become_visible() {
        assert_eq!(untrusted("a\x1b[2Jb"), "a\u{241b}[2Jb");
        assert_eq!(
            untrusted("\x1b]0;pwned\x07title"),
            "\u{241b}]0;pwned\u{2407}title"
        );
        assert_eq!(untrusted("\x1b]52;c;aGk=\x1b\\"), "␛]52;c;aGk=␛\\");
    }

    #[test]
    fn c1_del_tab_cr_and_bidi_are_neutralised() {
        assert_eq!(untrusted("x\u{9b}2Jy"), "x\u{fffd}2Jy");
        assert_eq!(untrusted("a\u{7f}"), "a\u{2421}");
        assert_eq!(untrusted("\tx"), "    x");
        assert_eq!(untrusted("line\r\nnext\rover"), "line\nnextover");
        assert_eq!(untrusted("abc\u{202e}def"), "abcdef");
        assert!(is_inert(&untrusted("\x00\x01\x1b\u{85}\u{2067}\t")));
    }

    #[test]
    fn bidi_marks_are_removed_like_the_other_bidi_controls() {
        assert_eq!(
            untrusted("rm -rf\u{200f} /tmp\u{200e}x\u{61c}y"),
            "rm -rf /tmpxy"
        );
        for mark in ['\u{200e}', '\u{200f}', '\u{061c}', '\u{202e}', '\u{2067}'] {
            assert!(!is_inert(&format!("a{mark}b")), "{mark:?}");
            assert!(is_inert(&untrusted(&format!("a{mark}b"))), "{mark:?}");
            assert_eq!(for_clipboard(&format!("a{mark}b")), "ab", "{mark:?}");
        }
        // Zero-width joiners carry meaning in text (emoji, scripts) and stay.
        assert_eq!(untrusted("a\u{200d}b"), "a\u{200d}b");
    }

    #[test]
    fn clean_text_is_borrowed() {
        assert!(matches!(
            untrusted("plain text\nwith ünïcode 漢字"),
            Cow::Borrowed(_)
        ));
    }
}
