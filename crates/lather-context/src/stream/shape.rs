//! A message's shape: the document split into *literals* (markup, namespace declarations,
//! whitespace between elements) and *slots* (attribute values, text, CDATA content), so
//! that `L0 V1 L1 V2 … Vn Ln` gives the document back byte for byte. Two documents of one
//! shape have equal literals; only the values differ. The rules are in `docs/context.md`
//! ("The stream's wire format").

use std::ops::Range;

/// Why a document has no shape (it then goes as plain SOAP).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// Markup that does not end: `<a`, `<!-- …`, an attribute without its quote.
    #[error("markup not closed at byte {0}")]
    Unterminated(usize),
    /// An attribute written in a way the splitter does not take (no `=`, no quote).
    #[error("attribute not written as name=\"value\" at byte {0}")]
    Attribute(usize),
    /// A `<!DOCTYPE` (never accepted by lather).
    #[error("a DOCTYPE at byte {0}")]
    Doctype(usize),
    /// More slots than the stream allows.
    #[error("more than {0} values")]
    TooManySlots(usize),
}

/// A document split into literals and slots, as byte ranges of it;
/// `literals.len() == slots.len() + 1`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Split {
    /// The literal ranges, `L0 … Ln`.
    pub literals: Vec<Range<usize>>,
    /// The slot ranges, `V1 … Vn`.
    pub slots: Vec<Range<usize>>,
}

struct Splitter<'a> {
    doc: &'a [u8],
    at: usize,
    literal_start: usize,
    split: Split,
    max_slots: usize,
}

impl Splitter<'_> {
    fn slot(&mut self, range: Range<usize>) -> Result<(), ShapeError> {
        if self.split.slots.len() == self.max_slots {
            return Err(ShapeError::TooManySlots(self.max_slots));
        }
        self.split.literals.push(self.literal_start..range.start);
        self.literal_start = range.end;
        self.split.slots.push(range);
        Ok(())
    }

    fn starts(&self, at: usize, prefix: &[u8]) -> bool {
        self.doc[at..].starts_with(prefix)
    }

    /// The index just past `end`, searched from `from`.
    fn past(&self, from: usize, end: &[u8], open: usize) -> Result<usize, ShapeError> {
        memchr::memmem::find(&self.doc[from..], end)
            .map(|i| from + i + end.len())
            .ok_or(ShapeError::Unterminated(open))
    }

    fn skip_space(&self, mut at: usize) -> usize {
        while at < self.doc.len() && is_space(self.doc[at]) {
            at += 1;
        }
        at
    }

    fn byte(&self, at: usize, open: usize) -> Result<u8, ShapeError> {
        self.doc
            .get(at)
            .copied()
            .ok_or(ShapeError::Unterminated(open))
    }

    /// Reads a start tag from `<` at `open`; the index past it, and whether it was an
    /// empty-element tag.
    fn start_tag(&mut self, open: usize) -> Result<(usize, bool), ShapeError> {
        let mut at = open + 1;
        while at < self.doc.len() && !matches!(self.doc[at], b'>' | b'/') && !is_space(self.doc[at])
        {
            at += 1;
        }
        loop {
            at = self.skip_space(at);
            match self.byte(at, open)? {
                b'>' => return Ok((at + 1, false)),
                b'/' => {
                    return if self.byte(at + 1, open)? == b'>' {
                        Ok((at + 2, true))
                    } else {
                        Err(ShapeError::Attribute(at))
                    };
                }
                _ => {}
            }
            let name_start = at;
            while at < self.doc.len()
                && !matches!(self.doc[at], b'=' | b'>' | b'/')
                && !is_space(self.doc[at])
            {
                at += 1;
            }
            let name = &self.doc[name_start..at];
            at = self.skip_space(at);
            if self.byte(at, open)? != b'=' {
                return Err(ShapeError::Attribute(name_start));
            }
            at = self.skip_space(at + 1);
            let quote = self.byte(at, open)?;
            if quote != b'"' && quote != b'\'' {
                return Err(ShapeError::Attribute(at));
            }
            let value_start = at + 1;
            let value_end = memchr::memchr(quote, &self.doc[value_start..])
                .map(|i| value_start + i)
                .ok_or(ShapeError::Unterminated(open))?;
            if name != b"xmlns" && !name.starts_with(b"xmlns:") {
                self.slot(value_start..value_end)?;
            }
            at = value_end + 1;
        }
    }

    fn run(mut self) -> Result<Split, ShapeError> {
        let len = self.doc.len();
        // Set right after a start tag (not an empty-element one): text up to the next end
        // tag is then an element's value, a slot even when empty or blank.
        let mut after_start = false;
        while self.at < len {
            let at = self.at;
            if self.doc[at] != b'<' {
                let end = memchr::memchr(b'<', &self.doc[at..]).map_or(len, |i| at + i);
                let leaf = after_start && self.starts(end, b"</");
                if leaf || !self.doc[at..end].iter().all(|&b| is_space(b)) {
                    self.slot(at..end)?;
                }
                self.at = end;
                after_start = false;
                continue;
            }
            if after_start && self.starts(at, b"</") {
                self.slot(at..at)?;
            }
            after_start = false;
            self.at = if self.starts(at, b"<!--") {
                self.past(at + 4, b"-->", at)?
            } else if self.starts(at, b"<![CDATA[") {
                let end = self.past(at + 9, b"]]>", at)?;
                self.slot(at + 9..end - 3)?;
                end
            } else if self.starts(at, b"<?") {
                self.past(at + 2, b"?>", at)?
            } else if self.starts(at, b"<!") {
                return Err(ShapeError::Doctype(at));
            } else if self.starts(at, b"</") {
                self.past(at + 2, b">", at)?
            } else {
                let (end, empty) = self.start_tag(at)?;
                after_start = !empty;
                end
            };
        }
        self.split.literals.push(self.literal_start..len);
        Ok(self.split)
    }
}

/// Splits `doc` into literals and slots, allowing at most `max_slots` slots.
pub fn split(doc: &[u8], max_slots: usize) -> Result<Split, ShapeError> {
    Splitter {
        doc,
        at: 0,
        literal_start: 0,
        split: Split::default(),
        max_slots,
    }
    .run()
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(doc: &str) -> (Vec<&str>, Vec<&str>) {
        let s = split(doc.as_bytes(), 1000).unwrap();
        (
            s.literals.iter().map(|r| &doc[r.clone()]).collect(),
            s.slots.iter().map(|r| &doc[r.clone()]).collect(),
        )
    }

    #[test]
    fn values_are_text_and_attribute_values_but_not_namespace_declarations() {
        let (lit, val) = parts(
            "<?xml version=\"1.0\"?>\n<a:E xmlns:a=\"urn:a\" k='v'>\n  <a:x>1</a:x>\n  <a:y></a:y><a:z/>  <a:w> </a:w><!-- c --><![CDATA[<raw>]]></a:E>\n",
        );
        assert_eq!(val, ["v", "1", "", " ", "<raw>"]);
        assert_eq!(
            lit,
            [
                "<?xml version=\"1.0\"?>\n<a:E xmlns:a=\"urn:a\" k='",
                "'>\n  <a:x>",
                "</a:x>\n  <a:y>",
                "</a:y><a:z/>  <a:w>",
                "</a:w><!-- c --><![CDATA[",
                "]]></a:E>\n",
            ]
        );
    }

    #[test]
    fn mixed_content_text_is_a_value_and_blank_runs_between_elements_are_not() {
        let (_, val) = parts("<p>one <b>two</b> three</p>");
        assert_eq!(val, ["one ", "two", " three"]);
        let (_, val) = parts("<p>\n <b>two</b>\n</p>");
        assert_eq!(val, ["two"]);
    }

    #[test]
    fn unclosed_markup_and_doctype_have_no_shape() {
        assert_eq!(split(b"<a", 10), Err(ShapeError::Unterminated(0)));
        assert_eq!(split(b"<a k=\"v>", 10), Err(ShapeError::Unterminated(0)));
        assert_eq!(split(b"<a k>", 10), Err(ShapeError::Attribute(3)));
        assert_eq!(split(b"<!-- x", 10), Err(ShapeError::Unterminated(0)));
        assert_eq!(split(b"<!DOCTYPE a><a/>", 10), Err(ShapeError::Doctype(0)));
        assert_eq!(
            split(b"<a>1</a><b>2</b>", 1),
            Err(ShapeError::TooManySlots(1))
        );
    }
}
