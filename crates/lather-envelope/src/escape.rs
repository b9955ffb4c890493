//! XML character escaping, unescaping and reference checking.

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
    if memchr::memchr(b'&', s.as_bytes()).is_none() {
        return Some(Cow::Borrowed(s));
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let semi = after.find(';')?;
        out.push(resolve_reference(&after[..semi])?);
        rest = &after[semi + 1..];
    }
    out.push_str(rest);
    Some(Cow::Owned(out))
}

/// The character a reference body (the text between `&` and `;`) stands for.
fn resolve_reference(body: &str) -> Option<char> {
    match body {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => {
            let num = body.strip_prefix('#')?;
            let code = match num.strip_prefix('x') {
                Some(hex) if !hex.is_empty() && hex.len() <= 6 => {
                    u32::from_str_radix(hex, 16).ok()?
                }
                Some(_) => return None,
                None if !num.is_empty()
                    && num.len() <= 7
                    && num.bytes().all(|b| b.is_ascii_digit()) =>
                {
                    num.parse().ok()?
                }
                None => return None,
            };
            char::from_u32(code).filter(|&c| is_xml_char(c))
        }
    }
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
    while let Some(at) = memchr::memchr(b'&', &bytes[pos..]) {
        let start = pos + at + 1;
        let window = &bytes[start..bytes.len().min(start + 12)];
        let Some(len) = memchr::memchr(b';', window) else {
            return false;
        };
        let Ok(body) = std::str::from_utf8(&bytes[start..start + len]) else {
            return false;
        };
        if resolve_reference(body).is_none() {
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
}
