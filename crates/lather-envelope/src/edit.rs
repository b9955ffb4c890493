//! Edits to an envelope, applied by copying unchanged byte ranges.

use crate::fragment::Fragment;
use crate::{Envelope, Fault, QName};
use bytes::{Bytes, BytesMut};
use std::fmt;
use std::ops::Range;

/// One change to an envelope. Build it with the constructors, which check that the new
/// bytes are well-formed; apply edits with [`Envelope::write`] or [`Envelope::edited`].
///
/// Header blocks are named by their index in [`Envelope::headers`] of the envelope the
/// edits are applied to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit(pub(crate) EditKind);

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EditKind {
    AddHeader(Fragment),
    ReplaceHeader(usize, Fragment),
    RemoveHeader(usize),
    ReplaceBody(Fragment),
}

impl Edit {
    /// Appends `block` (one element) to the Header, creating the Header if there is none.
    pub fn add_header(block: Bytes) -> Result<Edit, Fault> {
        Ok(Edit(EditKind::AddHeader(Fragment::check(block, true)?)))
    }

    /// Replaces header block `index` with `block` (one element).
    pub fn replace_header(index: usize, block: Bytes) -> Result<Edit, Fault> {
        Ok(Edit(EditKind::ReplaceHeader(
            index,
            Fragment::check(block, true)?,
        )))
    }

    /// Removes header block `index`.
    pub fn remove_header(index: usize) -> Edit {
        Edit(EditKind::RemoveHeader(index))
    }

    /// Replaces the Body's content with `content` (elements and whitespace).
    pub fn replace_body(content: Bytes) -> Result<Edit, Fault> {
        Ok(Edit(EditKind::ReplaceBody(Fragment::check(
            content, false,
        )?)))
    }

    /// Whether this edit appends a header block (made by [`Edit::add_header`]).
    pub fn adds_header(&self) -> bool {
        matches!(self.0, EditKind::AddHeader(_))
    }

    /// The bytes this edit puts into the envelope (`None` for a removal): the same
    /// [`Bytes`], not a copy.
    pub fn content(&self) -> Option<&Bytes> {
        match &self.0 {
            EditKind::AddHeader(f) | EditKind::ReplaceHeader(_, f) | EditKind::ReplaceBody(f) => {
                Some(&f.bytes)
            }
            EditKind::RemoveHeader(_) => None,
        }
    }

    /// For an edit that adds or replaces a header block, the block's name, resolved with
    /// the namespace declarations on the block itself; `None` for other edits, and for a
    /// block whose prefix is not declared on it.
    ///
    /// ```
    /// use lather_envelope::{Bytes, Edit, QName};
    /// let edit = Edit::add_header(Bytes::from_static(b"<t:Trace xmlns:t=\"urn:t\">1</t:Trace>")).unwrap();
    /// assert_eq!(edit.header_name(), Some(QName::new("urn:t", "Trace")));
    /// ```
    pub fn header_name(&self) -> Option<QName> {
        match &self.0 {
            EditKind::AddHeader(f) | EditKind::ReplaceHeader(_, f) => f.first_name(),
            EditKind::RemoveHeader(_) | EditKind::ReplaceBody(_) => None,
        }
    }
}

/// Why a set of edits could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditError {
    /// An edit names a header block index the envelope does not have.
    NoSuchHeader(usize),
    /// Two edits change the same part (the same block, or the Body twice).
    Conflict(String),
    /// The edited envelope breaks a rule [`Envelope::parse`] enforces (a limit, an unbound
    /// prefix, a block without a namespace); only [`Envelope::edited`] checks these.
    Invalid(Fault),
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::NoSuchHeader(i) => write!(f, "no header block at index {i}"),
            EditError::Conflict(what) => write!(f, "conflicting edits to {what}"),
            EditError::Invalid(fault) => {
                write!(f, "the edited envelope is not valid: {}", fault.reason())
            }
        }
    }
}

impl std::error::Error for EditError {}

/// What a splice puts into the envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Header block `i`, replaced or removed.
    Block(usize),
    /// The Body's content.
    Body,
    /// The added header blocks (with the Header's tags when it is created or was `<Header/>`).
    Added,
}

/// A range of the original bytes replaced by the concatenation of `parts`.
pub(crate) struct Splice {
    pub(crate) range: Range<usize>,
    pub(crate) parts: Vec<Bytes>,
    pub(crate) role: Role,
    /// Whether the first and last parts are a section's start and end tags.
    pub(crate) tagged: bool,
    /// Where the parts start in the written bytes (set by [`Envelope::assemble`]).
    pub(crate) at: usize,
}

impl Splice {
    /// How many bytes the parts hold.
    pub(crate) fn len(&self) -> usize {
        self.parts.iter().map(Bytes::len).sum()
    }

    /// How much longer the bytes get.
    pub(crate) fn growth(&self) -> isize {
        self.len() as isize - self.range.len() as isize
    }
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
        let mut splices = self.splices(edits)?;
        Ok(self.assemble(&mut splices))
    }

    /// The splices `edits` make, in byte order, checked not to touch one part twice.
    pub(crate) fn splices(&self, edits: &[Edit]) -> Result<Vec<Splice>, EditError> {
        let mut splices = Vec::with_capacity(edits.len() + 1);
        let mut touched = vec![false; self.blocks.len()];
        let mut body_done = false;
        let mut added = Vec::new();
        for edit in edits {
            match &edit.0 {
                EditKind::AddHeader(block) => added.push(block.bytes.clone()),
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
                        EditKind::ReplaceHeader(_, b) => vec![b.bytes.clone()],
                        _ => Vec::new(),
                    };
                    splices.push(Splice {
                        range: block.range.clone(),
                        parts,
                        role: Role::Block(i),
                        tagged: false,
                        at: 0,
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
                        vec![content.bytes.clone()],
                        Role::Body,
                    ));
                }
            }
        }
        if !added.is_empty() {
            splices.push(match &self.header {
                Some(h) => self.fill_section(
                    h.outer.clone(),
                    h.content.end..h.content.end,
                    added,
                    Role::Added,
                ),
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
        Ok(splices)
    }

    /// The bytes with `splices` (in byte order) applied; records where each one's parts start.
    pub(crate) fn assemble(&self, splices: &mut [Splice]) -> Bytes {
        let growth: usize = splices.iter().flat_map(|s| &s.parts).map(Bytes::len).sum();
        let mut out = BytesMut::with_capacity(self.bytes.len() + growth);
        let mut pos = 0;
        for splice in splices.iter_mut() {
            out.extend_from_slice(&self.bytes[pos..splice.range.start]);
            splice.at = out.len();
            for part in &splice.parts {
                out.extend_from_slice(part);
            }
            pos = splice.range.end;
        }
        out.extend_from_slice(&self.bytes[pos..]);
        out.freeze()
    }

    /// A splice putting `parts` at `at` inside the section `outer`; a self-closing section
    /// (`<Body/>`) is rewritten as a start tag, the parts and an end tag.
    fn fill_section(
        &self,
        outer: Range<usize>,
        at: Range<usize>,
        mut parts: Vec<Bytes>,
        role: Role,
    ) -> Splice {
        let buf = &self.bytes[..];
        let self_closing = outer.len() >= 2 && &buf[outer.end - 2..outer.end] == b"/>";
        if !self_closing {
            return Splice {
                range: at,
                parts,
                role,
                tagged: false,
                at: 0,
            };
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
            role,
            tagged: true,
            at: 0,
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
            role: Role::Added,
            tagged: true,
            at: 0,
        }
    }
}
