//! A skeleton XML scanner: checks well-formedness and limits while reporting only the
//! structure (tags with byte ranges, text ranges). Nothing is copied or decoded.
//!
//! It accepts UTF-8 XML 1.0 without a document type declaration: elements, attributes,
//! text with predefined entities and character references, CDATA, comments and processing
//! instructions. A `<!DOCTYPE` anywhere is refused, so no entity is ever declared or expanded.

use crate::escape::references_valid;
use crate::find::find_byte;
use crate::{FaultKind, Limits};
use memchr::{memchr, memchr2, memmem};
use std::collections::HashSet;
use std::ops::Range;

/// What the scanner accepts at the top level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A whole document: optional XML declaration, exactly one root element.
    Document,
    /// Element content: any number of elements and text, no XML declaration.
    Fragment,
}

/// One structural event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// A start tag `<name attrs>` or an empty-element tag `<name attrs/>`.
    Start {
        /// Where it is.
        tag: StartTag,
        /// `<x/>`: no matching end event follows.
        empty: bool,
    },
    /// An end tag `</name>`.
    End {
        /// Offset of `<`.
        start: usize,
        /// Offset just past `>`.
        end: usize,
    },
    /// Character data (raw, escaped) or a CDATA section's content.
    Text {
        /// The raw bytes.
        range: Range<usize>,
        /// Whether this came from a CDATA section.
        cdata: bool,
    },
    /// End of input; all elements are closed.
    Eof,
}

/// Where a start tag is in the buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StartTag {
    /// Offset of `<`.
    pub(crate) start: usize,
    /// The element name (with prefix).
    pub(crate) name: Range<usize>,
    /// The bytes between the name and `>` or `/>`.
    pub(crate) attrs: Range<usize>,
    /// Offset just past `>`.
    pub(crate) end: usize,
}

/// A refusal with the catalogue kind and the specifics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScanError {
    pub(crate) kind: FaultKind,
    pub(crate) message: String,
}

impl ScanError {
    pub(crate) fn new(kind: FaultKind, message: impl Into<String>) -> Self {
        ScanError {
            kind,
            message: message.into(),
        }
    }

    fn malformed(at: usize, what: &str) -> Self {
        ScanError::new(FaultKind::MalformedXml, format!("{what} at byte {at}"))
    }
}

type Scan<T> = Result<T, ScanError>;

/// Checks the bytes as a whole before scanning: UTF-8, and no control characters XML
/// forbids. Returns them as text, for pieces to be sliced from without checking again.
pub(crate) fn check_characters(buf: &[u8]) -> Scan<&str> {
    // simdutf8 checks 32 or 64 bytes a step where the CPU allows; only on failure is the
    // standard library asked where the first bad byte is.
    let text = match simdutf8::basic::from_utf8(buf) {
        Ok(text) => text,
        Err(_) => {
            let at = std::str::from_utf8(buf).map_or_else(|e| e.valid_up_to(), |_| 0);
            return Err(ScanError::new(
                FaultKind::NotUtf8,
                format!("invalid UTF-8 at byte {at}"),
            ));
        }
    };
    let forbidden = |b: u8| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r');
    // 64-byte arrays, each checked without an early exit, so both checks vectorize. A
    // chunk with no byte below 0x20 at all needs no closer look; one with some (line
    // ends, tabs) is checked exactly. The bytes after the last whole chunk are checked as
    // one more chunk padded with spaces. The position is only searched for in a chunk
    // known to hold a forbidden byte.
    let dirty = |chunk: &[u8; 64]| {
        chunk.iter().fold(false, |low, &b| low | (b < 0x20))
            && chunk.iter().fold(false, |bad, &b| bad | forbidden(b))
    };
    let (chunks, rest) = buf.as_chunks::<64>();
    let mut last = [b' '; 64];
    last[..rest.len()].copy_from_slice(rest);
    let from = match chunks.iter().position(dirty) {
        Some(chunk) => Some(chunk * 64),
        None => dirty(&last).then_some(chunks.len() * 64),
    };
    if let Some(at) = from.and_then(|from| {
        buf[from..]
            .iter()
            .position(|&b| forbidden(b))
            .map(|i| from + i)
    }) {
        return Err(ScanError::malformed(
            at,
            "control character not allowed in XML",
        ));
    }
    Ok(text)
}

/// The scanner over one buffer. Call [`Scanner::next`] until it yields [`Event::Eof`].
#[derive(Debug)]
pub(crate) struct Scanner<'a> {
    buf: &'a [u8],
    pos: usize,
    mode: Mode,
    limits: Limits,
    open: Vec<Range<usize>>,
    roots: usize,
    deepest: usize,
    most_attributes: usize,
    /// The attributes of the last start tag, as it was checked (see
    /// [`Scanner::tag_attributes`]).
    attrs: Vec<Attribute>,
}

impl<'a> Scanner<'a> {
    /// A scanner at the start of `buf`. Call [`check_characters`] on `buf` first.
    pub(crate) fn new(buf: &'a [u8], mode: Mode, limits: Limits) -> Self {
        let mut pos = 0;
        if mode == Mode::Document && buf.starts_with(b"\xEF\xBB\xBF") {
            pos = 3;
        }
        Scanner {
            buf,
            pos,
            mode,
            limits,
            open: Vec::with_capacity(16),
            roots: 0,
            deepest: 0,
            most_attributes: 0,
            attrs: Vec::with_capacity(8),
        }
    }

    /// The scanner moved to `pos`, the start of an element inside `buf` (one whose
    /// enclosing markup was scanned before): what follows is read as a fragment from there.
    pub(crate) fn starting_at(mut self, pos: usize) -> Self {
        self.pos = pos;
        self
    }

    /// How many top-level elements have started so far.
    pub(crate) fn top_level_elements(&self) -> usize {
        self.roots
    }

    /// How many elements are open.
    pub(crate) fn depth(&self) -> usize {
        self.open.len()
    }

    /// The deepest nesting seen so far (a top-level element is depth 1).
    pub(crate) fn deepest(&self) -> usize {
        self.deepest
    }

    /// The most attributes seen on one element so far.
    pub(crate) fn most_attributes(&self) -> usize {
        self.most_attributes
    }

    /// The attributes of the start tag [`Scanner::next`] returned last, in document order:
    /// they were read while the tag was checked, so callers need not read them again.
    pub(crate) fn tag_attributes(&self) -> &[Attribute] {
        &self.attrs
    }

    /// The next event.
    pub(crate) fn next(&mut self) -> Scan<Event> {
        loop {
            let Some(&b) = self.buf.get(self.pos) else {
                return self.finish();
            };
            if b != b'<' {
                return self.text();
            }
            match self.buf.get(self.pos + 1) {
                Some(b'/') => return self.end_tag(),
                Some(b'!') => {
                    if let Some(event) = self.markup_declaration()? {
                        return Ok(event);
                    }
                }
                Some(b'?') => self.processing_instruction()?,
                _ => return self.start_tag(),
            }
        }
    }

    fn finish(&mut self) -> Scan<Event> {
        if let Some(name) = self.open.last() {
            let name = String::from_utf8_lossy(&self.buf[name.clone()]).into_owned();
            return Err(ScanError::malformed(
                self.buf.len(),
                &format!("end of input inside element <{name}>"),
            ));
        }
        if self.mode == Mode::Document && self.roots == 0 {
            return Err(ScanError::malformed(self.buf.len(), "no root element"));
        }
        Ok(Event::Eof)
    }

    fn text(&mut self) -> Scan<Event> {
        let start = self.pos;
        let end = find_byte(b'<', &self.buf[start..]).map_or(self.buf.len(), |i| start + i);
        self.pos = end;
        let raw = &self.buf[start..end];
        if self.open.is_empty() && !is_whitespace(raw) && self.mode == Mode::Document {
            return Err(ScanError::malformed(start, "text outside the root element"));
        }
        if let Some(at) = find_byte(b'&', raw)
            && !references_valid(&raw[at..])
        {
            return Err(ScanError::malformed(
                start,
                "undefined entity or invalid character reference",
            ));
        }
        Ok(Event::Text {
            range: start..end,
            cdata: false,
        })
    }

    fn start_tag(&mut self) -> Scan<Event> {
        let start = self.pos;
        if self.mode == Mode::Document && self.open.is_empty() && self.roots > 0 {
            return Err(ScanError::malformed(start, "a second root element"));
        }
        let name = self.name(start + 1)?;
        let mut pos = name.end;
        let buf = self.buf;
        let attrs_start = pos;
        self.attrs.clear();
        // Past the first eight, names go into a hash set: the duplicate check stays linear
        // however far an operator raises `max_attributes`.
        let mut more_names: Option<HashSet<&[u8]>> = None;
        loop {
            let ws = skip_whitespace(buf, pos);
            let had_space = ws > pos;
            pos = ws;
            match buf.get(pos) {
                Some(b'>') => {
                    self.most_attributes = self.most_attributes.max(self.attrs.len());
                    return self.open_element(start, name, attrs_start..pos, pos + 1, false);
                }
                Some(b'/') if buf.get(pos + 1) == Some(&b'>') => {
                    self.most_attributes = self.most_attributes.max(self.attrs.len());
                    return self.open_element(start, name, attrs_start..pos, pos + 2, true);
                }
                Some(_) if had_space => {}
                Some(_) => {
                    return Err(ScanError::malformed(
                        pos,
                        "expected whitespace, '>' or '/>' in tag",
                    ));
                }
                None => return Err(ScanError::malformed(pos, "end of input inside a tag")),
            }
            let attr = self.name(pos)?;
            pos = skip_whitespace(buf, attr.end);
            if buf.get(pos) != Some(&b'=') {
                return Err(ScanError::malformed(
                    pos,
                    "expected '=' after attribute name",
                ));
            }
            pos = skip_whitespace(buf, pos + 1);
            let quote = match buf.get(pos) {
                Some(&q @ (b'"' | b'\'')) => q,
                _ => return Err(ScanError::malformed(pos, "attribute value must be quoted")),
            };
            let value_start = pos + 1;
            let Some(len) = memchr2(quote, b'<', &buf[value_start..]) else {
                return Err(ScanError::malformed(pos, "unterminated attribute value"));
            };
            let value_end = value_start + len;
            if buf[value_end] == b'<' {
                return Err(ScanError::malformed(value_end, "'<' in attribute value"));
            }
            let value = &buf[value_start..value_end];
            if let Some(at) = find_byte(b'&', value)
                && !references_valid(&value[at..])
            {
                return Err(ScanError::malformed(
                    value_start,
                    "undefined entity or invalid character reference",
                ));
            }
            if self.attrs.len() >= self.limits.max_attributes {
                return Err(ScanError::new(
                    FaultKind::TooManyAttributes,
                    format!(
                        "more than {} attributes on one element at byte {start}",
                        self.limits.max_attributes
                    ),
                ));
            }
            let this = &buf[attr.clone()];
            let seen = if self.attrs.len() < 8 {
                self.attrs.iter().any(|a| &buf[a.name.clone()] == this)
            } else {
                let names = more_names.get_or_insert_with(|| {
                    self.attrs.iter().map(|a| &buf[a.name.clone()]).collect()
                });
                !names.insert(this)
            };
            if seen {
                return Err(ScanError::malformed(attr.start, "duplicate attribute"));
            }
            pos = value_end + 1;
            self.attrs.push(Attribute {
                whole: attr.start..pos,
                name: attr,
                value: value_start..value_end,
            });
        }
    }

    fn open_element(
        &mut self,
        start: usize,
        name: Range<usize>,
        attrs: Range<usize>,
        end: usize,
        empty: bool,
    ) -> Scan<Event> {
        if self.open.is_empty() {
            self.roots += 1;
        }
        if !empty {
            if self.open.len() >= self.limits.max_depth {
                return Err(ScanError::new(
                    FaultKind::TooDeep,
                    format!(
                        "elements nest deeper than {} at byte {start}",
                        self.limits.max_depth
                    ),
                ));
            }
            self.open.push(name.clone());
        } else if self.open.len() >= self.limits.max_depth {
            return Err(ScanError::new(
                FaultKind::TooDeep,
                format!(
                    "elements nest deeper than {} at byte {start}",
                    self.limits.max_depth
                ),
            ));
        }
        self.deepest = self.deepest.max(self.open.len() + usize::from(empty));
        self.pos = end;
        Ok(Event::Start {
            tag: StartTag {
                start,
                name,
                attrs,
                end,
            },
            empty,
        })
    }

    fn end_tag(&mut self) -> Scan<Event> {
        let start = self.pos;
        let name = match self.closing_open_name(start + 2) {
            Some(name) => name,
            None => self.name(start + 2)?,
        };
        let pos = skip_whitespace(self.buf, name.end);
        if self.buf.get(pos) != Some(&b'>') {
            return Err(ScanError::malformed(
                pos,
                "expected '>' to close the end tag",
            ));
        }
        match self.open.pop() {
            Some(open) if self.buf[open.clone()] == self.buf[name.clone()] => {}
            Some(open) => {
                return Err(ScanError::malformed(
                    start,
                    &format!(
                        "end tag </{}> does not match <{}>",
                        String::from_utf8_lossy(&self.buf[name]),
                        String::from_utf8_lossy(&self.buf[open])
                    ),
                ));
            }
            None => return Err(ScanError::malformed(start, "end tag without a start tag")),
        }
        self.pos = pos + 1;
        Ok(Event::End {
            start,
            end: pos + 1,
        })
    }

    /// `<!--`, `<![CDATA[` or `<!DOCTYPE`. Comments yield no event.
    fn markup_declaration(&mut self) -> Scan<Option<Event>> {
        let start = self.pos;
        let rest = &self.buf[start..];
        if rest.starts_with(b"<!--") {
            let Some(len) = memmem::find(&rest[4..], b"-->") else {
                return Err(ScanError::malformed(start, "unterminated comment"));
            };
            self.pos = start + 4 + len + 3;
            return Ok(None);
        }
        if rest.starts_with(b"<![CDATA[") {
            if self.open.is_empty() {
                return Err(ScanError::malformed(
                    start,
                    "CDATA section outside the root element",
                ));
            }
            let content = start + 9;
            let Some(len) = memmem::find(&self.buf[content..], b"]]>") else {
                return Err(ScanError::malformed(start, "unterminated CDATA section"));
            };
            self.pos = content + len + 3;
            return Ok(Some(Event::Text {
                range: content..content + len,
                cdata: true,
            }));
        }
        if rest.len() >= 9 && rest[2..9].eq_ignore_ascii_case(b"DOCTYPE") {
            return Err(ScanError::new(
                FaultKind::DoctypeForbidden,
                format!("document type declaration at byte {start}"),
            ));
        }
        Err(ScanError::malformed(start, "unknown markup declaration"))
    }

    fn processing_instruction(&mut self) -> Scan<()> {
        let start = self.pos;
        let target = self.name(start + 2)?;
        let Some(len) = find_pair(&self.buf[target.end..], b'?', b'>') else {
            return Err(ScanError::malformed(
                start,
                "unterminated processing instruction",
            ));
        };
        let end = target.end + len + 2;
        if self.buf[target.clone()].eq_ignore_ascii_case(b"xml") {
            let at_start = start == 0 || (start == 3 && self.buf.starts_with(b"\xEF\xBB\xBF"));
            if self.mode != Mode::Document || !at_start {
                return Err(ScanError::malformed(
                    start,
                    "XML declaration not at the start",
                ));
            }
            check_declared_encoding(&self.buf[target.end..end - 2])?;
        }
        self.pos = end;
        Ok(())
    }

    /// The name of the innermost open element when the bytes at `at` are that name, whole:
    /// an end tag that matches, read without going through it byte by byte.
    fn closing_open_name(&self, at: usize) -> Option<Range<usize>> {
        let open = self.open.last()?;
        let end = at + open.len();
        let same = self.buf.get(at..end)? == &self.buf[open.clone()];
        let whole = !self.buf.get(end).is_some_and(|&b| is_name_char(b));
        (same && whole).then_some(at..end)
    }

    /// An XML name starting at `at`.
    fn name(&self, at: usize) -> Scan<Range<usize>> {
        let buf = self.buf;
        match buf.get(at) {
            Some(&b) if is_name_start(b) => {}
            _ => return Err(ScanError::malformed(at, "expected a name")),
        }
        let mut end = at + 1;
        while end < buf.len() && is_name_char(buf[end]) {
            end += 1;
        }
        Ok(at..end)
    }
}

/// Where the two bytes `first`, `second` first occur together in `hay`.
fn find_pair(hay: &[u8], first: u8, second: u8) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = memchr(first, &hay[from..]) {
        let at = from + at;
        if hay.get(at + 1) == Some(&second) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Refuses an XML declaration that names an encoding other than UTF-8.
fn check_declared_encoding(decl: &[u8]) -> Scan<()> {
    // A declaration is a few dozen bytes: a look at each `e` beats building a searcher.
    let Some(at) = memchr::memchr_iter(b'e', decl).find(|&at| decl[at..].starts_with(b"encoding"))
    else {
        return Ok(());
    };
    let rest = &decl[at + 8..];
    let rest = &rest[skip_whitespace(rest, 0)..];
    let Some(rest) = rest.strip_prefix(b"=") else {
        return Err(ScanError::malformed(0, "malformed XML declaration"));
    };
    let rest = &rest[skip_whitespace(rest, 0)..];
    let (Some(&q @ (b'"' | b'\'')), Some(value)) = (rest.first(), rest.get(1..)) else {
        return Err(ScanError::malformed(0, "malformed XML declaration"));
    };
    let Some(len) = memchr(q, value) else {
        return Err(ScanError::malformed(0, "malformed XML declaration"));
    };
    let encoding = &value[..len];
    if encoding.eq_ignore_ascii_case(b"utf-8") || encoding.eq_ignore_ascii_case(b"utf8") {
        Ok(())
    } else {
        Err(ScanError::new(
            FaultKind::NotUtf8,
            format!(
                "declared encoding {:?} is not supported; send UTF-8",
                String::from_utf8_lossy(encoding)
            ),
        ))
    }
}

/// Byte classes for names: bit 0 = may start a name, bit 1 = may continue one. Bytes of
/// multi-byte UTF-8 characters (>= 0x80) are accepted in both places.
const NAME_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let start = c.is_ascii_alphabetic() || c == b'_' || c == b':' || c >= 0x80;
        let more = start || c.is_ascii_digit() || c == b'-' || c == b'.';
        table[b] = (start as u8) | ((more as u8) << 1);
        b += 1;
    }
    table
};

fn is_name_start(b: u8) -> bool {
    NAME_CLASS[b as usize] & 1 != 0
}

fn is_name_char(b: u8) -> bool {
    NAME_CLASS[b as usize] & 2 != 0
}

pub(crate) fn is_whitespace(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

fn skip_whitespace(buf: &[u8], mut pos: usize) -> usize {
    while pos < buf.len() && matches!(buf[pos], b' ' | b'\t' | b'\n' | b'\r') {
        pos += 1;
    }
    pos
}

/// One attribute of a tag already accepted by the scanner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Attribute {
    /// The whole `name="value"` text.
    pub(crate) whole: Range<usize>,
    /// The name, with prefix.
    pub(crate) name: Range<usize>,
    /// The raw (escaped) value, without quotes.
    pub(crate) value: Range<usize>,
}

/// The attributes in `range` (an [`Event::Start`]'s `attrs`), which the scanner has validated.
pub(crate) fn attributes(buf: &[u8], range: Range<usize>) -> impl Iterator<Item = Attribute> + '_ {
    let end = range.end;
    let mut pos = range.start;
    std::iter::from_fn(move || {
        pos = skip_whitespace(buf, pos);
        if pos >= end {
            return None;
        }
        let name_start = pos;
        while pos < end && is_name_char(buf[pos]) {
            pos += 1;
        }
        let name = name_start..pos;
        while pos < end && buf[pos] != b'"' && buf[pos] != b'\'' {
            pos += 1;
        }
        let quote = *buf.get(pos)?;
        let value_start = pos + 1;
        let value_end = value_start + find_byte(quote, &buf[value_start..end])?;
        pos = value_end + 1;
        Some(Attribute {
            whole: name_start..pos,
            name,
            value: value_start..value_end,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_all(input: &str) -> Scan<Vec<Event>> {
        check_characters(input.as_bytes())?;
        let mut s = Scanner::new(input.as_bytes(), Mode::Document, Limits::default());
        let mut events = Vec::new();
        loop {
            let e = s.next()?;
            if e == Event::Eof {
                return Ok(events);
            }
            events.push(e);
        }
    }

    fn kind_of(input: &str) -> FaultKind {
        scan_all(input).expect_err(input).kind
    }

    #[test]
    fn accepts_well_formed_documents() {
        let ok = [
            "<a/>",
            "<?xml version='1.0' encoding='UTF-8'?><a x='1' y=\"2\">t&amp;&#65;<b/><![CDATA[<x>]]><!-- c --><?pi x?></a>",
            "\u{feff}<a></a>",
            "<a:b xmlns:a='u'>\n</a:b >\n<!-- tail -->\n",
        ];
        for input in ok {
            scan_all(input).unwrap_or_else(|e| panic!("{input}: {e:?}"));
        }
    }

    #[test]
    fn refuses_malformed_documents() {
        let bad = [
            "",
            "<a>",
            "<a></b>",
            "<ab></a>",
            "<a></ab>",
            "<a:b xmlns:a='u'></a:bc>",
            "</a>",
            "<a/><b/>",
            "text<a/>",
            "<a x=1/>",
            "<a x='1'y='2'/>",
            "<a x='1' x='2'/>",
            "<a x='<'/>",
            "<a>&nbsp;</a>",
            "<a><!-- open</a>",
            "<a/><?xml version='1.0'?>",
            "<a>\u{1}</a>",
            "<1a/>",
            "<![CDATA[x]]><a/>",
        ];
        for input in bad {
            assert_eq!(kind_of(input), FaultKind::MalformedXml, "{input:?}");
        }
    }

    #[test]
    fn every_forbidden_control_character_is_found_where_it_is_with_line_ends_around() {
        // Text with tabs, line ends and non-ASCII beside it, in chunks with and without them.
        let clean: Vec<u8> = "<a>\tline\r\nnext é€\n".repeat(12).into_bytes();
        assert!(check_characters(&clean).is_ok());
        let plain = vec![b'x'; 200];
        assert!(check_characters(&plain).is_ok());
        for base in [&clean, &plain] {
            for at in (0..base.len()).step_by(7) {
                for bad in [0x00_u8, 0x01, 0x08, 0x0b, 0x0c, 0x0e, 0x1f] {
                    let mut buf = base.to_vec();
                    buf[at] = bad;
                    // Replacing a byte of a multi-byte character breaks UTF-8 first.
                    if std::str::from_utf8(&buf[..at]).is_err() || (base[at] & 0xc0) == 0x80 {
                        continue;
                    }
                    if std::str::from_utf8(&buf).is_err() {
                        continue;
                    }
                    let e = check_characters(&buf).unwrap_err();
                    assert_eq!(e.kind, FaultKind::MalformedXml);
                    assert!(
                        e.message.ends_with(&format!("at byte {at}")),
                        "{}",
                        e.message
                    );
                }
            }
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_are_refused_at_the_first_bad_byte() {
        let base: Vec<u8> = "<a>ascii é € 𝄞 text</a>".repeat(10).into_bytes();
        assert!(check_characters(&base).is_ok());
        for at in 0..base.len() {
            // A lone continuation byte, a lead byte without its continuation, and 0xFF.
            for bad in [0x80_u8, 0xC3, 0xFF] {
                let mut buf = base.clone();
                buf[at] = bad;
                let Err(want) = std::str::from_utf8(&buf) else {
                    continue;
                };
                let e = check_characters(&buf).unwrap_err();
                assert_eq!(e.kind, FaultKind::NotUtf8);
                assert!(
                    e.message
                        .ends_with(&format!("at byte {}", want.valid_up_to())),
                    "{at}: {}",
                    e.message
                );
            }
        }
    }

    #[test]
    fn refuses_doctype_without_expanding_anything() {
        let bomb = r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]><a>&lol2;</a>"#;
        assert_eq!(kind_of(bomb), FaultKind::DoctypeForbidden);
        assert_eq!(kind_of("<a><!doctype x></a>"), FaultKind::DoctypeForbidden);
    }

    #[test]
    fn processing_instructions_end_at_the_first_question_mark_before_gt() {
        assert_eq!(find_pair(b"a?b??>c?>", b'?', b'>'), Some(4));
        assert_eq!(find_pair(b"a?b?", b'?', b'>'), None);
        assert_eq!(find_pair(b"", b'?', b'>'), None);
        scan_all("<a><?pi what? where? ?></a>").unwrap();
        assert_eq!(kind_of("<a><?pi what? </a>"), FaultKind::MalformedXml);
        // The declaration's encoding is found past other words holding an `e`.
        scan_all("<?xml version='1.0' encoding='utf8' standalone='yes'?><a/>").unwrap();
        assert_eq!(
            kind_of("<?xml version='1.0' standalone='yes' encoding = 'latin1'?><a/>"),
            FaultKind::NotUtf8
        );
    }

    #[test]
    fn refuses_other_encodings() {
        assert_eq!(
            kind_of("<?xml version='1.0' encoding='ISO-8859-1'?><a/>"),
            FaultKind::NotUtf8
        );
        let latin1 = b"<a>\xe9</a>";
        assert_eq!(
            check_characters(latin1).unwrap_err().kind,
            FaultKind::NotUtf8
        );
    }

    #[test]
    fn enforces_depth_and_attribute_limits() {
        let limits = Limits {
            max_depth: 3,
            max_attributes: 2,
            ..Limits::default()
        };
        let run = |input: &str| {
            let mut s = Scanner::new(input.as_bytes(), Mode::Document, limits);
            loop {
                match s.next() {
                    Ok(Event::Eof) => return Ok(()),
                    Ok(_) => {}
                    Err(e) => return Err(e.kind),
                }
            }
        };
        assert_eq!(run("<a><b><c/></b></a>"), Ok(()));
        assert_eq!(run("<a><b><c><d/></c></b></a>"), Err(FaultKind::TooDeep));
        assert_eq!(run("<a><b><c><d></d></c></b></a>"), Err(FaultKind::TooDeep));
        assert_eq!(run("<a x='1' y='2'/>"), Ok(()));
        assert_eq!(
            run("<a x='1' y='2' z='3'/>"),
            Err(FaultKind::TooManyAttributes)
        );
    }

    #[test]
    fn fragments_allow_several_top_level_elements() {
        let input = b"<a/> <b>x</b>";
        let mut s = Scanner::new(input, Mode::Fragment, Limits::default());
        while s.next().unwrap() != Event::Eof {}
        assert_eq!(s.top_level_elements(), 2);
    }

    #[test]
    fn a_tags_attributes_are_kept_as_read() {
        let input = b"<a x='1'  y = \"two\" p:z='&amp;'><b/><c k='v'>t</c><d  /></a>";
        let mut s = Scanner::new(input, Mode::Document, Limits::default());
        let mut tags = 0;
        loop {
            match s.next().unwrap() {
                Event::Eof => break,
                Event::Start { tag, .. } => {
                    tags += 1;
                    let again: Vec<Attribute> = attributes(input, tag.attrs).collect();
                    assert_eq!(s.tag_attributes(), again.as_slice());
                }
                _ => {}
            }
        }
        assert_eq!(tags, 4);
    }

    #[test]
    fn attributes_iterate_in_order() {
        let input = b"<a x='1'  y = \"two\"/>";
        let mut s = Scanner::new(input, Mode::Document, Limits::default());
        let Event::Start { tag, .. } = s.next().unwrap() else {
            panic!()
        };
        let found: Vec<(String, String)> = attributes(input, tag.attrs)
            .map(|a| {
                (
                    String::from_utf8_lossy(&input[a.name]).into_owned(),
                    String::from_utf8_lossy(&input[a.value]).into_owned(),
                )
            })
            .collect();
        assert_eq!(
            found,
            [("x".into(), "1".into()), ("y".into(), "two".into())]
        );
    }
}
