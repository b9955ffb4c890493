//! What a handler reads and writes, and when two handlers may share a stage.

use lather_envelope::QName;
use std::fmt;

/// A set of message parts: named header blocks, optionally every header, optionally the Body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parts {
    headers: Vec<QName>,
    all_headers: bool,
    body: bool,
}

impl Parts {
    /// No part.
    pub fn none() -> Self {
        Parts::default()
    }

    /// Adds the header blocks named `name`.
    pub fn header(mut self, name: QName) -> Self {
        if !self.headers.contains(&name) {
            self.headers.push(name);
        }
        self
    }

    /// Adds every header block.
    pub fn all_headers(mut self) -> Self {
        self.all_headers = true;
        self
    }

    /// Adds the Body.
    pub fn body(mut self) -> Self {
        self.body = true;
        self
    }

    /// Every header block and the Body.
    pub fn everything() -> Self {
        Parts::none().all_headers().body()
    }

    /// The header blocks named one by one.
    pub fn named_headers(&self) -> &[QName] {
        &self.headers
    }

    /// Whether the set holds nothing.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty() && !self.all_headers && !self.body
    }

    /// Whether the set holds the header blocks named `name`.
    pub fn has_header(&self, name: &QName) -> bool {
        self.all_headers || self.headers.contains(name)
    }

    /// Whether the set holds every header block (not only named ones).
    pub fn has_all_headers(&self) -> bool {
        self.all_headers
    }

    /// Whether the set holds the Body.
    pub fn has_body(&self) -> bool {
        self.body
    }

    /// One part both sets hold, if any.
    pub fn overlap(&self, other: &Parts) -> Option<Part> {
        if self.body && other.body {
            return Some(Part::Body);
        }
        if self.all_headers && other.all_headers {
            return Some(Part::AllHeaders);
        }
        let named = self.headers.iter().find(|h| other.has_header(h));
        let named = named.or_else(|| other.headers.iter().find(|h| self.has_header(h)));
        named.cloned().map(Part::Header)
    }
}

/// One part of a message, as named in conflicts and access violations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Header blocks with this name.
    Header(QName),
    /// Every header block.
    AllHeaders,
    /// The Body.
    Body,
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Part::Header(name) => write!(f, "header {name}"),
            Part::AllHeaders => f.write_str("every header"),
            Part::Body => f.write_str("the Body"),
        }
    }
}

/// A handler's declared access: what it reads and what its patches write.
///
/// Two handlers may run in one stage only if neither writes what the other reads or
/// writes. The executor refuses a patch that writes a part the handler did not declare.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Access {
    /// Parts the handler reads.
    pub reads: Parts,
    /// Parts the handler's patches change.
    pub writes: Parts,
}

/// Why two handlers cannot share a stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Clash {
    /// Both write `Part`.
    BothWrite(Part),
    /// The first reads `Part`, which the second writes.
    ReadsWhatOtherWrites(Part),
    /// The second reads `Part`, which the first writes.
    WritesWhatOtherReads(Part),
}

impl Access {
    /// Read-only access to `reads`.
    pub fn read_only(reads: Parts) -> Self {
        Access {
            reads,
            writes: Parts::none(),
        }
    }

    /// Reads and writes the same `parts` (a handler that rewrites what it reads, e.g. the
    /// Body of a decompressor).
    pub fn read_write(parts: Parts) -> Self {
        Access {
            reads: parts.clone(),
            writes: parts,
        }
    }

    /// Why `self` and `other` cannot run concurrently, if they cannot.
    pub fn clash(&self, other: &Access) -> Option<Clash> {
        if let Some(p) = self.writes.overlap(&other.writes) {
            return Some(Clash::BothWrite(p));
        }
        if let Some(p) = self.reads.overlap(&other.writes) {
            return Some(Clash::ReadsWhatOtherWrites(p));
        }
        self.writes
            .overlap(&other.reads)
            .map(Clash::WritesWhatOtherReads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(local: &str) -> QName {
        QName::new("urn:t", local)
    }

    #[test]
    fn disjoint_accesses_do_not_clash() {
        let a = Access {
            reads: Parts::none().header(q("A")),
            writes: Parts::none().header(q("A")),
        };
        let b = Access {
            reads: Parts::none().body(),
            writes: Parts::none().header(q("B")),
        };
        assert_eq!(a.clash(&b), None);
        assert_eq!(b.clash(&a), None);
    }

    #[test]
    fn shared_writes_and_read_write_overlaps_clash() {
        let writes_body = Access {
            reads: Parts::none(),
            writes: Parts::none().body(),
        };
        let reads_body = Access::read_only(Parts::none().body());
        let reads_all = Access::read_only(Parts::everything());
        let writes_x = Access {
            reads: Parts::none(),
            writes: Parts::none().header(q("X")),
        };
        assert_eq!(
            writes_body.clash(&writes_body),
            Some(Clash::BothWrite(Part::Body))
        );
        assert_eq!(
            reads_body.clash(&writes_body),
            Some(Clash::ReadsWhatOtherWrites(Part::Body))
        );
        assert_eq!(
            writes_body.clash(&reads_body),
            Some(Clash::WritesWhatOtherReads(Part::Body))
        );
        assert_eq!(
            reads_all.clash(&writes_x),
            Some(Clash::ReadsWhatOtherWrites(Part::Header(q("X"))))
        );
        assert_eq!(reads_all.clash(&reads_body), None);
    }
}
