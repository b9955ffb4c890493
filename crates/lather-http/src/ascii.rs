//! Splitting header values (ASCII text) at a byte, without the generic `char` searcher
//! the per-request path cannot afford.

/// `text` before the first `byte` (an ASCII byte), and what follows it if it occurs.
pub(crate) fn split_at_byte(text: &str, byte: u8) -> (&str, Option<&str>) {
    debug_assert!(byte.is_ascii());
    match text.bytes().position(|b| b == byte) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_the_first_occurrence_only() {
        assert_eq!(split_at_byte("a:b:c", b':'), ("a", Some("b:c")));
        assert_eq!(split_at_byte("é:", b':'), ("é", Some("")));
        assert_eq!(split_at_byte("abc", b':'), ("abc", None));
        assert_eq!(split_at_byte("", b':'), ("", None));
    }
}
