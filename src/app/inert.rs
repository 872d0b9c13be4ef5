//! Text made inert once, where it enters the app: the transcript's cells hold [`InertText`],
//! and the only ways to make one sanitise (see [`crate::sanitize`]), so a new cell field cannot
//! forget to. The view turns it into spans as it is.

use std::fmt;
use std::ops::Deref;

use crate::sanitize::untrusted;

/// Text with no control character but `\n`, no bidirectional control: safe to hand to the
/// terminal.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InertText(String);

impl InertText {
    /// `text` made inert.
    pub(crate) fn new(text: &str) -> Self {
        Self(untrusted(text).into_owned())
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// Appends `text`, made inert (sanitising works a character at a time, so pieces can be
    /// sanitised as they arrive).
    pub(crate) fn push_str(&mut self, text: &str) {
        self.0.push_str(&untrusted(text));
    }

    /// Appends text already inert.
    pub(crate) fn push(&mut self, more: &InertText) {
        self.0.push_str(&more.0);
    }

    /// Takes its last character off.
    pub(crate) fn pop(&mut self) -> Option<char> {
        self.0.pop()
    }

    /// Keeps the first `len` bytes (`len` on a character boundary).
    pub(crate) fn truncate(&mut self, len: usize) {
        self.0.truncate(len);
    }

    /// Gives back the room kept for appending (once nothing more will be appended).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.0.shrink_to_fit();
    }

    pub(crate) fn into_string(self) -> String {
        self.0
    }

    /// Its lines, each inert already (a part of inert text is inert: nothing is sanitised
    /// again).
    pub(crate) fn inert_lines(&self) -> impl Iterator<Item = InertText> + '_ {
        self.0.lines().map(|line| Self(line.to_owned()))
    }
}

impl Deref for InertText {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

/// Its `Eq` and `Hash` are the text's, so it may stand for a `str` (`join`, lookups).
impl std::borrow::Borrow<str> for InertText {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for InertText {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for InertText {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl From<&str> for InertText {
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl From<String> for InertText {
    fn from(text: String) -> Self {
        match untrusted(&text) {
            std::borrow::Cow::Borrowed(_) => Self(text),
            std::borrow::Cow::Owned(clean) => Self(clean),
        }
    }
}

impl From<&String> for InertText {
    fn from(text: &String) -> Self {
        Self::new(text)
    }
}

/// Out of the type, for display (a span's text).
impl From<InertText> for String {
    fn from(text: InertText) -> Self {
        text.0
    }
}

impl From<InertText> for std::borrow::Cow<'_, str> {
    fn from(text: InertText) -> Self {
        std::borrow::Cow::Owned(text.0)
    }
}

impl PartialEq<str> for InertText {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for InertText {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for InertText {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_way_in_sanitises() {
        let hostile = "a\u{1b}]52;c;x\u{7}\r\tb\u{202e}";
        let made = [
            InertText::new(hostile),
            InertText::from(hostile),
            InertText::from(hostile.to_owned()),
            {
                let mut pushed = InertText::default();
                for piece in ["a\u{1b}]52;c;", "x\u{7}\r", "\tb\u{202e}"] {
                    pushed.push_str(piece);
                }
                pushed
            },
        ];
        for text in made {
            assert!(crate::sanitize::is_inert(&text), "{text:?}");
            assert_eq!(text, "a␛]52;c;x␇    b");
        }
        let clean = InertText::from("plain\ntext".to_owned());
        assert_eq!(clean.as_str(), "plain\ntext");
    }

    proptest::proptest! {
        /// What `inert_lines` relies on: every line of inert text needs no sanitising.
        #[test]
        fn the_lines_of_inert_text_are_inert(text in "(\\PC|[\\x00-\\x1f\\x7f-\\x9f\\u{202a}-\\u{202e}\\u{2066}-\\u{2069}\\r\\n])*") {
            let inert = InertText::new(&text);
            let lines: Vec<InertText> = inert.inert_lines().collect();
            proptest::prop_assert_eq!(lines.len(), inert.lines().count());
            for line in lines {
                proptest::prop_assert!(crate::sanitize::is_inert(&line), "{:?}", line);
                proptest::prop_assert!(matches!(untrusted(&line), std::borrow::Cow::Borrowed(_)));
            }
        }
    }
}
