//! Bytes of a checked message read back as text.

use std::borrow::Cow;

/// `bytes` as text, borrowed when they are UTF-8 (as every piece of a parsed message is);
/// invalid sequences, if any, become U+FFFD. Much cheaper than
/// [`String::from_utf8_lossy`] on the short ASCII names and URIs of a message.
pub(crate) fn text(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_is_borrowed_and_invalid_bytes_are_replaced() {
        assert!(matches!(text("ns:é".as_bytes()), Cow::Borrowed("ns:é")));
        assert_eq!(text(b"a\xFFb"), "a\u{FFFD}b");
    }
}
