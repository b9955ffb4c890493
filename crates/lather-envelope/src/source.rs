//! A message's bytes as name resolution reads them: each piece read is checked as UTF-8,
//! unless the whole message was checked already, when pieces are only sliced.

use std::borrow::Cow;
use std::ops::Range;

/// A message's bytes, with their text when the whole was checked as UTF-8.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source<'a> {
    bytes: &'a [u8],
    text: Option<&'a str>,
}

impl<'a> Source<'a> {
    /// Bytes not known to be UTF-8: each piece read is checked.
    pub(crate) fn raw(bytes: &'a [u8]) -> Self {
        Source { bytes, text: None }
    }

    /// A whole message checked as UTF-8 ([`crate::scan::check_characters`]'s answer):
    /// pieces are sliced, not checked again.
    pub(crate) fn checked(text: &'a str) -> Self {
        Source {
            bytes: text.as_bytes(),
            text: Some(text),
        }
    }

    /// The bytes.
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The piece at `range` as text; `None` when it is not UTF-8 (or not on character
    /// boundaries).
    pub(crate) fn text(&self, range: Range<usize>) -> Option<&'a str> {
        match self.text {
            Some(text) => text.get(range),
            None => std::str::from_utf8(self.bytes.get(range)?).ok(),
        }
    }

    /// The piece at `range` as text, invalid sequences (if any) replaced by U+FFFD.
    pub(crate) fn lossy(&self, range: Range<usize>) -> Cow<'a, str> {
        match self.text(range.clone()) {
            Some(text) => Cow::Borrowed(text),
            None => String::from_utf8_lossy(&self.bytes[range]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_text_is_sliced_and_raw_bytes_are_checked() {
        let checked = Source::checked("aé:b");
        assert_eq!(checked.text(0..3), Some("aé"));
        assert_eq!(checked.text(0..2), None, "inside é");
        let raw = Source::raw(b"a\xFF:b");
        assert_eq!(raw.text(3..4), Some("b"));
        assert_eq!(raw.text(0..2), None);
        assert_eq!(raw.lossy(0..2), "a\u{FFFD}");
        assert_eq!(raw.text(3..9), None, "past the end");
    }
}
