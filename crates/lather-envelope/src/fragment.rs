//! Element content checked once, when an edit is made: its bytes and what putting it into an
//! envelope needs to know, so applying the edit does not scan the bytes again.

use crate::namespace::{collect_decls, resolve_element};
use crate::scan::{Event, Mode, ScanError, Scanner, check_characters, is_whitespace};
use crate::source::Source;
use crate::{Fault, FaultKind, Limits, QName};
use bytes::Bytes;
use std::ops::Range;

/// Where a fragment's first top-level element is, relative to the fragment's start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TopElement {
    /// Start tag to end tag.
    pub(crate) outer: Range<usize>,
    /// The element's name, prefix included.
    pub(crate) name: Range<usize>,
    /// The bytes between the name and `>` or `/>`.
    pub(crate) attrs: Range<usize>,
    /// Between the tags (empty for `<x/>`).
    pub(crate) content: Range<usize>,
}

/// Well-formed element content (elements, whitespace, comments) and its shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fragment {
    pub(crate) bytes: Bytes,
    /// The first top-level element, if there is one.
    pub(crate) first: Option<TopElement>,
    /// How many top-level elements there are.
    pub(crate) elements: usize,
    /// The deepest nesting in the fragment (a top-level element is depth 1).
    pub(crate) deepest: usize,
    /// The most attributes on one element.
    pub(crate) most_attributes: usize,
}

/// A SOAP element's content sits at depth 2: a fragment's top-level elements are depth 3.
const DEPTH_OF_CONTENT: usize = 2;

impl Fragment {
    /// Checks `bytes` as element content under the default [`Limits`]: UTF-8, well-formed, no
    /// character data outside an element; `single`: exactly one element.
    pub(crate) fn check(bytes: Bytes, single: bool) -> Result<Fragment, Fault> {
        Self::scan(bytes, single).map_err(|e| Fault::with_reason(e.kind, e.message))
    }

    fn scan(bytes: Bytes, single: bool) -> Result<Fragment, ScanError> {
        check_characters(&bytes)?;
        let limits = Limits {
            max_message_bytes: usize::MAX,
            ..Limits::default()
        };
        let mut scanner = Scanner::new(&bytes, Mode::Fragment, limits);
        let mut first: Option<TopElement> = None;
        let mut first_open = false;
        loop {
            let top_level = scanner.depth() == 0;
            match scanner.next()? {
                Event::Eof => break,
                Event::Start { tag, empty } if top_level && first.is_none() => {
                    first = Some(TopElement {
                        outer: tag.start..tag.end,
                        name: tag.name,
                        attrs: tag.attrs,
                        content: tag.end..tag.end,
                    });
                    first_open = !empty;
                }
                Event::End { start, end } if first_open && scanner.depth() == 0 => {
                    if let Some(first) = first.as_mut() {
                        first.outer.end = end;
                        first.content.end = start;
                    }
                    first_open = false;
                }
                Event::Text { range, cdata }
                    if top_level && (cdata || !is_whitespace(&bytes[range.clone()])) =>
                {
                    return Err(ScanError::new(
                        FaultKind::InvalidEnvelope,
                        "text outside an element in edited content",
                    ));
                }
                _ => {}
            }
        }
        let elements = scanner.top_level_elements();
        if single && elements != 1 {
            return Err(ScanError::new(
                FaultKind::InvalidEnvelope,
                "a header block must be exactly one element",
            ));
        }
        Ok(Fragment {
            first,
            elements,
            deepest: scanner.deepest(),
            most_attributes: scanner.most_attributes(),
            bytes,
        })
    }

    /// The name of the first top-level element, resolved with the namespace declarations
    /// on that element alone; `None` if there is no element or its prefix is declared
    /// outside it.
    pub(crate) fn first_name(&self) -> Option<QName> {
        let first = self.first.as_ref()?;
        let mut scope = Vec::new();
        collect_decls(&self.bytes, first.attrs.clone(), &mut scope);
        resolve_element(Source::raw(&self.bytes), &scope, first.name.clone()).ok()
    }

    /// Whether the fragment, put into a Header or Body, keeps within `limits`' nesting and
    /// attribute bounds.
    pub(crate) fn within(&self, limits: &Limits) -> Result<(), ScanError> {
        if self.deepest + DEPTH_OF_CONTENT > limits.max_depth {
            return Err(ScanError::new(
                FaultKind::TooDeep,
                format!(
                    "elements nest deeper than {} in edited content",
                    limits.max_depth
                ),
            ));
        }
        if self.most_attributes > limits.max_attributes {
            return Err(ScanError::new(
                FaultKind::TooManyAttributes,
                format!(
                    "more than {} attributes on one element in edited content",
                    limits.max_attributes
                ),
            ));
        }
        Ok(())
    }
}
