//! An edited envelope's skeleton made from the old one and the edits, without parsing again
//! the bytes that did not change.

use crate::edit::{EditKind, Role, Splice};
use crate::envelope::Section;
use crate::fragment::Fragment;
use crate::namespace::{NsDecl, collect_decls, push_decls, resolve_element};
use crate::parse::read_header_block;
use crate::scan::{Attribute, ScanError, StartTag, attributes};
use crate::source::Source;
use crate::{Edit, EditError, Envelope, Fault, FaultKind, HeaderBlock, Limits};
use std::ops::Range;

impl Envelope {
    /// The envelope with `edits` applied: the same envelope [`Envelope::write`] followed by
    /// [`Envelope::parse`] gives, and refused for the same reasons, but only the new parts
    /// are looked at. The bytes that did not change were checked when this envelope was
    /// parsed and keep their meaning (the declarations in scope around them do not change);
    /// the new parts were checked when their [`Edit`]s were made. What is left is checked
    /// here: the size against `limits`, the new parts' nesting and attributes against
    /// `limits`, the names of new header blocks and of the Body's new first child, and the
    /// SOAP attributes of new header blocks.
    ///
    /// ```
    /// use lather_envelope::{Bytes, Edit, Envelope, Limits};
    /// let msg = r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope">
    ///   <s:Body><m:Ping xmlns:m="urn:m"/></s:Body></s:Envelope>"#;
    /// let env = Envelope::parse(msg.into(), &Limits::default()).unwrap();
    /// let block = Bytes::from_static(br#"<t:Trace xmlns:t="urn:t">42</t:Trace>"#);
    /// let edited = env.edited(&[Edit::add_header(block).unwrap()], &Limits::default()).unwrap();
    /// assert_eq!(edited.headers()[0].name().local(), "Trace");
    /// assert_eq!(edited.operation().unwrap().local(), "Ping");
    /// ```
    pub fn edited(&self, edits: &[Edit], limits: &Limits) -> Result<Envelope, EditError> {
        if edits.is_empty() {
            return Ok(self.clone());
        }
        let mut splices = self.splices(edits)?;
        let bytes = self.assemble(&mut splices);
        if bytes.len() > limits.max_message_bytes {
            return Err(EditError::Invalid(Fault::with_reason(
                FaultKind::MessageTooLarge,
                format!(
                    "message of {} bytes exceeds the limit of {} bytes",
                    bytes.len(),
                    limits.max_message_bytes
                ),
            )));
        }
        let mut next = Envelope {
            bytes,
            version: self.version,
            prefix: self.prefix.clone(),
            envelope_decls: self.envelope_decls.clone(),
            header: None,
            blocks: Vec::with_capacity(self.blocks.len() + edits.len()),
            body: Section::default(),
            operation: None,
            payload: None,
            body_children: 0,
        };
        let shifts = Shifts(&splices);
        self.rebuild_header(&mut next, edits, &shifts, limits)
            .and_then(|()| self.rebuild_body(&mut next, edits, &shifts, limits))
            .map_err(|e| EditError::Invalid(Fault::with_reason(e.kind, e.message)))?;
        Ok(next)
    }

    /// The Header element and its blocks of `next`.
    fn rebuild_header(
        &self,
        next: &mut Envelope,
        edits: &[Edit],
        shifts: &Shifts<'_>,
        limits: &Limits,
    ) -> Result<(), ScanError> {
        let added = shifts.find(Role::Added);
        next.header = match added.filter(|s| s.tagged) {
            // A new Header, or a `<Header/>` rewritten with a start and an end tag.
            Some(splice) => {
                let outer = splice.at..splice.at + splice.len();
                let open = splice.parts[0].len();
                let close = splice.parts[splice.parts.len() - 1].len();
                let decls = match &self.header {
                    Some(h) => moved_decls(&h.decls, splice.at as isize - h.outer.start as isize),
                    None => Vec::new(),
                };
                Some(Section {
                    content: outer.start + open..outer.end - close,
                    outer,
                    decls,
                })
            }
            None => self.header.as_ref().map(|h| {
                let by = shifts.at(h.outer.start);
                Section {
                    outer: moved(&h.outer.start, by)..shifts.moved(h.outer.end),
                    content: moved(&h.content.start, by)..shifts.moved(h.content.end),
                    decls: moved_decls(&h.decls, by),
                }
            }),
        };
        for (i, block) in self.blocks.iter().enumerate() {
            match edits.iter().find_map(|e| match &e.0 {
                EditKind::ReplaceHeader(j, f) if *j == i => Some(Some(f)),
                EditKind::RemoveHeader(j) if *j == i => Some(None),
                _ => None,
            }) {
                None => next
                    .blocks
                    .push(moved_block(block, shifts.at(block.range.start))),
                Some(None) => {}
                Some(Some(fragment)) => {
                    let at = shifts.moved(block.range.start);
                    let block = self.new_block(next, fragment, at, limits)?;
                    next.blocks.push(block);
                }
            }
        }
        if let Some(splice) = added {
            let mut at = splice.at;
            let fragments = edits.iter().filter_map(|e| match &e.0 {
                EditKind::AddHeader(f) => Some(f),
                _ => None,
            });
            if splice.tagged {
                at += splice.parts[0].len();
            }
            for fragment in fragments {
                let block = self.new_block(next, fragment, at, limits)?;
                next.blocks.push(block);
                at += fragment.bytes.len();
            }
        }
        Ok(())
    }

    /// A header block of `next` made from `fragment`, put at `at`.
    fn new_block(
        &self,
        next: &Envelope,
        fragment: &Fragment,
        at: usize,
        limits: &Limits,
    ) -> Result<HeaderBlock, ScanError> {
        fragment.within(limits)?;
        let Some(top) = &fragment.first else {
            return Err(ScanError::new(
                FaultKind::InvalidEnvelope,
                "a header block must be exactly one element",
            ));
        };
        let attrs = moved(&top.attrs, at as isize);
        let mut scope = next.envelope_decls.clone();
        if let Some(h) = &next.header {
            scope.extend_from_slice(&h.decls);
        }
        // Read once: for the block's own declarations and for its SOAP attributes.
        let read: Vec<Attribute> = attributes(&next.bytes, attrs.clone()).collect();
        push_decls(&next.bytes, &read, &mut scope);
        let tag = StartTag {
            start: at + top.outer.start,
            name: moved(&top.name, at as isize),
            attrs,
            end: at + top.content.start,
        };
        let mut block =
            read_header_block(Source::raw(&next.bytes), &scope, next.version, &tag, &read)?;
        block.range = moved(&top.outer, at as isize);
        block.content = moved(&top.content, at as isize);
        // Share a namespace with a block already there, as a parse would.
        if let Some(same) = next
            .blocks
            .iter()
            .chain(&self.blocks)
            .find(|b| b.name.namespace() == block.name.namespace())
        {
            block.name = block.name.share_namespace(same.name.namespace_shared());
        }
        Ok(block)
    }

    /// The Body of `next`: moved, or made from the new content.
    fn rebuild_body(
        &self,
        next: &mut Envelope,
        edits: &[Edit],
        shifts: &Shifts<'_>,
        limits: &Limits,
    ) -> Result<(), ScanError> {
        let old = &self.body;
        let fragment = edits.iter().find_map(|e| match &e.0 {
            EditKind::ReplaceBody(f) => Some(f),
            _ => None,
        });
        let (Some(fragment), Some(splice)) = (fragment, shifts.find(Role::Body)) else {
            let by = shifts.at(old.outer.start);
            next.body = Section {
                outer: moved(&old.outer, by),
                content: moved(&old.content, by),
                decls: moved_decls(&old.decls, by),
            };
            next.operation.clone_from(&self.operation);
            next.payload = self.payload.as_ref().map(|p| moved(p, by));
            next.body_children = self.body_children;
            return Ok(());
        };
        fragment.within(limits)?;
        let (outer, content_start, by) = if splice.tagged {
            let outer = splice.at..splice.at + splice.len();
            let by = splice.at as isize - old.outer.start as isize;
            (outer, splice.at + splice.parts[0].len(), by)
        } else {
            let by = shifts.at(old.outer.start);
            let outer = moved(&old.outer.start, by)..shifts.moved(old.outer.end);
            (outer, splice.at, by)
        };
        next.body = Section {
            outer,
            content: content_start..content_start + fragment.bytes.len(),
            decls: moved_decls(&old.decls, by),
        };
        next.body_children = fragment.elements;
        if let Some(top) = &fragment.first {
            let at = content_start as isize;
            let attrs = moved(&top.attrs, at);
            let mut scope = next.envelope_decls.clone();
            scope.extend_from_slice(&next.body.decls);
            collect_decls(&next.bytes, attrs, &mut scope);
            next.operation = Some(resolve_element(
                Source::raw(&next.bytes),
                &scope,
                moved(&top.name, at),
            )?);
            next.payload = Some(moved(&top.outer, at));
        }
        Ok(())
    }
}

/// The splices of one edit, for moving positions of the old bytes into the new.
struct Shifts<'s>(&'s [Splice]);

impl Shifts<'_> {
    /// How far a position of the old bytes outside every splice moves: the growth of every
    /// splice that ends at or before it (an insertion at the position goes before it).
    fn at(&self, position: usize) -> isize {
        self.0
            .iter()
            .take_while(|s| s.range.start <= position)
            .filter(|s| s.range.end <= position)
            .map(Splice::growth)
            .sum()
    }

    /// Where a position of the old bytes outside every splice is in the new bytes.
    fn moved(&self, position: usize) -> usize {
        moved(&position, self.at(position))
    }

    fn find(&self, role: Role) -> Option<&Splice> {
        self.0.iter().find(|s| s.role == role)
    }
}

/// `position` moved by `by` (which never takes it below zero: it is a growth before it).
fn moved<R: Movable>(position: &R, by: isize) -> R {
    position.moved(by)
}

trait Movable {
    fn moved(&self, by: isize) -> Self;
}

impl Movable for usize {
    fn moved(&self, by: isize) -> usize {
        self.saturating_add_signed(by)
    }
}

impl Movable for Range<usize> {
    fn moved(&self, by: isize) -> Range<usize> {
        self.start.moved(by)..self.end.moved(by)
    }
}

fn moved_decls(decls: &[NsDecl], by: isize) -> Vec<NsDecl> {
    decls
        .iter()
        .map(|d| NsDecl {
            prefix: moved(&d.prefix, by),
            uri: moved(&d.uri, by),
            attribute: moved(&d.attribute, by),
        })
        .collect()
}

fn moved_block(block: &HeaderBlock, by: isize) -> HeaderBlock {
    HeaderBlock {
        range: moved(&block.range, by),
        name_end: moved(&block.name_end, by),
        attrs: moved(&block.attrs, by),
        content: moved(&block.content, by),
        ..block.clone()
    }
}
