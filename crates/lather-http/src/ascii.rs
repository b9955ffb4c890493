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

/// The pieces of `text` between occurrences of `byte` (an ASCII byte), as `str::split`
/// gives them but by byte.
pub(crate) fn split_by_byte(text: &str, byte: u8) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let (piece, next) = split_at_byte(rest?, byte);
        rest = next;
        Some(piece)
    })
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

    #[test]
    fn splits_at_every_occurrence_as_str_split_does() {
        for text in ["a;b;;c", ";", "", "abc", "é;x;"] {
            let by_byte: Vec<&str> = split_by_byte(text, b';').collect();
            let by_char: Vec<&str> = text.split(';').collect();
            assert_eq!(by_byte, by_char, "{text:?}");
        }
    }
}
