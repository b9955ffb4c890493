//! Edits to an envelope, applied by copying unchanged byte ranges.

use crate::scan::{Event, Mode, Scanner, check_characters, is_whitespace};
use crate::{Envelope, Fault, FaultKind, Limits};
use bytes::{Bytes, BytesMut};
use std::fmt;
use std::ops::Range;

/// One change to an envelope. Build it with the constructors, which check that the new
/// bytes are well-formed; apply edits with [`Envelope::write`].
///
/// Header blocks are named by their index in [`Envelope::headers`] of the envelope the
/// edits are applied to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit(EditKind);

#[derive(Debug, Clone, PartialEq, Eq)]
enum EditKind {
    AddHeader(Bytes),
    ReplaceHeader(usize, Bytes),
    RemoveHeader(usize),
    ReplaceBody(Bytes),
}

impl Edit {
    /// Appends `block` (one element) to the Header, creating the Header if there is none.
    pub fn add_header(block: Bytes) -> Result<Edit, Fault> {
        check_fragment(&block, true)?;
        Ok(Edit(EditKind::AddHeader(block)))
    }

    /// Replaces header block `index` with `block` (one element).
    pub fn replace_header(index: usize, block: Bytes) -> Result<Edit, Fault> {
        check_fragment(&block, true)?;
        Ok(Edit(EditKind::ReplaceHeader(index, block)))
    }

    /// Removes header block `index`.
    pub fn remove_header(index: usize) -> Edit {
        Edit(EditKind::RemoveHeader(index))
    }

    /// Replaces the Body's content with `content` (elements and whitespace).
    pub fn replace_body(content: Bytes) -> Result<Edit, Fault> {
        check_fragment(&content, false)?;
        Ok(Edit(EditKind::ReplaceBody(content)))
    }
}

/// Checks that `bytes` is well-formed element content; `single`: exactly one element.
fn check_fragment(bytes: &[u8], single: bool) -> Result<(), Fault> {
    let fault = |e: crate::scan::ScanError| Fault::with_reason(e.kind, e.message);
    check_characters(bytes).map_err(fault)?;
    let limits = Limits {
        max_message_bytes: usize::MAX,
        ..Limits::default()
    };
    let mut scanner = Scanner::new(bytes, Mode::Fragment, limits);
    loop {
        match scanner.next().map_err(fault)? {
            Event::Eof => break,
            Event::Text { range, .. }
                if scanner.depth() == 0 && !is_whitespace(&bytes[range.clone()]) =>
            {
                return Err(Fault::with_reason(
                    FaultKind::InvalidEnvelope,
                    "text outside an element in edited content",
                ));
            }
            _ => {}
        }
    }
    if single && scanner.top_level_elements() != 1 {
        return Err(Fault::with_reason(
            FaultKind::InvalidEnvelope,
            "a header block must be exactly one element",
        ));
    }
    Ok(())
}

/// Why a set of edits could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditError {
    /// An edit names a header block index the envelope does not have.
    NoSuchHeader(usize),
    /// Two edits change the same part (the same block, or the Body twice).
    Conflict(String),
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::NoSuchHeader(i) => write!(f, "no header block at index {i}"),
            EditError::Conflict(what) => write!(f, "conflicting edits to {what}"),
        }
    }
}

impl std::error::Error for EditError {}

/// A range of the original bytes replaced by the concatenation of `parts`.
struct Splice {
    range: Range<usize>,
    parts: Vec<Bytes>,
}

impl Envelope {
    /// Writes the envelope with `edits` applied, copying every unchanged byte range verbatim.
    /// Without edits this returns the original bytes (no copy).
    ///
    /// Added header blocks keep their order; a missing Header element is created before the
    /// Body with the Envelope's prefix.
    pub fn write(&self, edits: &[Edit]) -> Result<Bytes, EditError> {
        if edits.is_empty() {
            return Ok(self.bytes.clone());
        }
        let mut splices = Vec::with_capacity(edits.len() + 1);
        let mut touched = vec![false; self.blocks.len()];
        let mut body_done = false;
        let mut added = Vec::new();
        for edit in edits {
            match &edit.0 {
                EditKind::AddHeader(block) => added.push(block.clone()),
                EditKind::ReplaceHeader(i, _) | EditKind::RemoveHeader(i) => {
                    let i = *i;
                    let block = self.blocks.get(i).ok_or(EditError::NoSuchHeader(i))?;
                    if std::mem::replace(&mut touched[i], true) {
                        return Err(EditError::Conflict(format!(
                            "header block {i} ({})",
                            block.name
                        )));
                    }
                    let parts = match &edit.0 {
                        EditKind::ReplaceHeader(_, b) => vec![b.clone()],
                        _ => Vec::new(),
                    };
                    splices.push(Splice {
                        range: block.range.clone(),
                        parts,
                    });
                }
                EditKind::ReplaceBody(content) => {
                    if std::mem::replace(&mut body_done, true) {
                        return Err(EditError::Conflict("the Body".into()));
                    }
                    let body = &self.body;
                    splices.push(self.fill_section(
                        body.outer.clone(),
                        body.content.clone(),
                        vec![content.clone()],
                    ));
                }
            }
        }
        if !added.is_empty() {
            splices.push(match &self.header {
                Some(h) => self.fill_section(h.outer.clone(), h.content.end..h.content.end, added),
                None => self.new_header(added),
            });
        }
        splices.sort_by_key(|s| (s.range.start, s.range.end));
        if splices
            .windows(2)
            .any(|w| w[1].range.start < w[0].range.end)
        {
            return Err(EditError::Conflict("overlapping parts".into()));
        }
        let growth: usize = splices.iter().flat_map(|s| &s.parts).map(Bytes::len).sum();
        let mut out = BytesMut::with_capacity(self.bytes.len() + growth);
        let mut pos = 0;
        for splice in &splices {
            out.extend_from_slice(&self.bytes[pos..splice.range.start]);
            for part in &splice.parts {
                out.extend_from_slice(part);
            }
            pos = splice.range.end;
        }
        out.extend_from_slice(&self.bytes[pos..]);
        Ok(out.freeze())
    }

    /// A splice putting `parts` at `at` inside the section `outer`; a self-closing section
    /// (`<Body/>`) is rewritten as a start tag, the parts and an end tag.
    fn fill_section(&self, outer: Range<usize>, at: Range<usize>, mut parts: Vec<Bytes>) -> Splice {
        let buf = &self.bytes[..];
        let self_closing = outer.len() >= 2 && &buf[outer.end - 2..outer.end] == b"/>";
        if !self_closing {
            return Splice { range: at, parts };
        }
        let (name_end, _) = crate::envelope::start_tag_parts(buf, outer.start);
        let name = &buf[outer.start + 1..name_end];
        let mut open = buf[outer.start..outer.end - 2].to_vec();
        open.push(b'>');
        parts.insert(0, Bytes::from(open));
        parts.push(Bytes::from([b"</", name, b">"].concat()));
        Splice {
            range: outer,
            parts,
        }
    }

    fn new_header(&self, mut parts: Vec<Bytes>) -> Splice {
        let prefix = &self.bytes[self.prefix.clone()];
        let tag = |close: &str| {
            let mut t = format!("<{close}").into_bytes();
            if !prefix.is_empty() {
                t.extend_from_slice(prefix);
                t.push(b':');
            }
            t.extend_from_slice(b"Header>");
            Bytes::from(t)
        };
        parts.insert(0, tag(""));
        parts.push(tag("/"));
        let at = self.body.outer.start;
        Splice {
            range: at..at,
            parts,
        }
    }
}
