//! Splitting a start tag that a parser has already accepted into its parts, by byte range.

use std::ops::Range;

/// A start tag `<name a="v" …>` or `<name …/>`, as ranges into its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StartTag {
    /// The element name, with prefix.
    pub(crate) name: Range<usize>,
    /// The attributes in document order.
    pub(crate) attributes: Vec<Attribute>,
}

/// One attribute of a [`StartTag`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Attribute {
    /// The name, with prefix.
    pub(crate) name: Range<usize>,
    /// The raw (escaped) value, without its quotes.
    pub(crate) value: Range<usize>,
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

impl StartTag {
    /// The parts of `tag`, the bytes from `<` to `>` of a well-formed start tag; `None` if
    /// they are not one.
    pub(crate) fn parse(tag: &[u8]) -> Option<StartTag> {
        if tag.first() != Some(&b'<') {
            return None;
        }
        let end = tag.len().checked_sub(1).filter(|&e| tag[e] == b'>')?;
        let mut pos = 1;
        while pos < end && !is_space(tag[pos]) && tag[pos] != b'/' {
            pos += 1;
        }
        let name = 1..pos;
        let mut attributes = Vec::new();
        loop {
            while pos < end && is_space(tag[pos]) {
                pos += 1;
            }
            if pos >= end || tag[pos] == b'/' {
                break;
            }
            let name_start = pos;
            while pos < end && !is_space(tag[pos]) && tag[pos] != b'=' {
                pos += 1;
            }
            let name = name_start..pos;
            while pos < end && tag[pos] != b'"' && tag[pos] != b'\'' {
                pos += 1;
            }
            let quote = *tag.get(pos).filter(|_| pos < end)?;
            let value_start = pos + 1;
            let value_end = value_start + tag[value_start..end].iter().position(|&b| b == quote)?;
            attributes.push(Attribute {
                name,
                value: value_start..value_end,
            });
            pos = value_end + 1;
        }
        (!name.is_empty()).then_some(StartTag { name, attributes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_name_and_attribute_ranges() {
        let tag = b"<p:a  x = \"1\"\n\tq:y='a\"b' z=\"\"/>";
        let t = StartTag::parse(tag).unwrap();
        let s = |r: &Range<usize>| std::str::from_utf8(&tag[r.clone()]).unwrap();
        assert_eq!(s(&t.name), "p:a");
        let got: Vec<(&str, &str)> = t
            .attributes
            .iter()
            .map(|a| (s(&a.name), s(&a.value)))
            .collect();
        assert_eq!(got, [("x", "1"), ("q:y", "a\"b"), ("z", "")]);
        assert_eq!(StartTag::parse(b"<b>").unwrap().attributes, []);
        assert_eq!(StartTag::parse(b"<b x=\"1>"), None);
        assert_eq!(StartTag::parse(b"b>"), None);
    }
}
