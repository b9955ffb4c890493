//! XML character escaping, unescaping and reference checking.

use crate::find::find_byte;
use std::borrow::Cow;

/// Escapes `&`, `<` and `>` for use as element text.
pub fn escape_text(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// Escapes `&`, `<`, `>`, `"` and `'` for use inside a quoted attribute value.
pub fn escape_attribute(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

fn escape(s: &str, quotes: bool) -> Cow<'_, str> {
    let needs = |b: u8| matches!(b, b'&' | b'<' | b'>') || (quotes && matches!(b, b'"' | b'\''));
    if !s.bytes().any(needs) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if quotes => out.push_str("&quot;"),
            '\'' if quotes => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Replaces the five predefined entities and character references in `s`.
///
/// Returns `None` when `s` holds a reference that is not one of those (no other entity can
/// exist: lather refuses document type declarations) or names an invalid character.
pub fn unescape(s: &str) -> Option<Cow<'_, str>> {
    if find_byte(b'&', s.as_bytes()).is_none() {
        return Some(Cow::Borrowed(s));
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let semi = after.find(';')?;
        out.push(resolve_reference(&after.as_bytes()[..semi])?);
        rest = &after[semi + 1..];
    }
    out.push_str(rest);
    Some(Cow::Owned(out))
}

/// The character a reference body (the bytes between `&` and `;`) stands for: one of the
/// five predefined entities, `#` and decimal digits, or `#x` and hexadecimal digits
/// (XML 1.0 §4.1), naming a character XML allows. Read as bytes: every valid body is ASCII.
fn resolve_reference(body: &[u8]) -> Option<char> {
    let code = match body {
        b"amp" => return Some('&'),
        b"lt" => return Some('<'),
        b"gt" => return Some('>'),
        b"quot" => return Some('"'),
        b"apos" => return Some('\''),
        [b'#', b'x', hex @ ..] if !hex.is_empty() && hex.len() <= 6 => {
            hex.iter().try_fold(0u32, |code, &b| {
                Some(code * 16 + char::from(b).to_digit(16)?)
            })?
        }
        [b'#', decimal @ ..] if !decimal.is_empty() && decimal.len() <= 7 => {
            decimal.iter().try_fold(0u32, |code, &b| {
                b.is_ascii_digit().then(|| code * 10 + u32::from(b - b'0'))
            })?
        }
        _ => return None,
    };
    char::from_u32(code).filter(|&c| is_xml_char(c))
}

/// Whether `c` is allowed in an XML 1.0 document.
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// `s` without leading and trailing XML whitespace (space, tab, CR, LF); unlike
/// [`str::trim`], other Unicode spaces such as U+00A0 are content and stay.
pub(crate) fn trim_xml(s: &str) -> &str {
    s.trim_matches([' ', '\t', '\r', '\n'])
}

/// Checks every `&…;` reference in `bytes`; `false` if one is not predefined or numeric.
pub(crate) fn references_valid(bytes: &[u8]) -> bool {
    let mut pos = 0;
    while let Some(at) = find_byte(b'&', &bytes[pos..]) {
        let start = pos + at + 1;
        // A valid body is at most 8 bytes (`#x10FFFF`): look no further for its `;`, and
        // look without a search call, which costs more than these few bytes.
        let window = &bytes[start..bytes.len().min(start + 12)];
        let Some(len) = window.iter().position(|&b| b == b';') else {
            return false;
        };
        if resolve_reference(&window[..len]).is_none() {
            return false;
        }
        pos = start + len + 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_unescapes_round_trip() {
        let raw = "a<b & \"c\" 'd'>";
        let escaped = escape_attribute(raw);
        assert_eq!(escaped, "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;");
        assert_eq!(unescape(&escaped).unwrap(), raw);
        assert_eq!(escape_text(raw), "a&lt;b &amp; \"c\" 'd'&gt;");
    }

    #[test]
    fn character_references_resolve() {
        assert_eq!(unescape("&#65;&#x42;&#x1F600;").unwrap(), "AB\u{1F600}");
    }

    #[test]
    fn unknown_and_invalid_references_are_refused() {
        assert!(unescape("&nbsp;").is_none());
        assert!(unescape("&#0;").is_none());
        assert!(unescape("&#xD800;").is_none());
        assert!(unescape("&amp").is_none());
        assert!(!references_valid(b"x &lol; y"));
        assert!(!references_valid(b"x & y"));
        assert!(references_valid(b"x &amp; &#10; y"));
    }

    #[test]
    fn references_take_only_the_digits_xml_allows() {
        // Hexadecimal after a lower-case `x` only, no sign, at most six digits.
        for good in ["&#x41;", "&#x10FFFF;", "&#xfffd;", "&#1114111;", "&#0065;"] {
            assert!(references_valid(good.as_bytes()), "{good}");
            assert!(unescape(good).is_some(), "{good}");
        }
        for bad in [
            "&#x+41;",
            "&#X41;",
            "&#x;",
            "&#;",
            "&#-65;",
            "&#+65;",
            "&#x110000;",
            "&#1114112;",
            "&#12345678;",
            "&#x0000041;",
            "&#x4G;",
            "&#6 5;",
            "&am\u{e9};",
            "&AMP;",
        ] {
            assert!(!references_valid(bad.as_bytes()), "{bad}");
            assert!(unescape(bad).is_none(), "{bad}");
        }
        // The `;` is looked for within twelve bytes of the `&`.
        assert!(!references_valid(b"&#00000000065;"));
        assert_eq!(resolve_reference(b"#x20AC"), Some('\u{20AC}'));
    }
}
