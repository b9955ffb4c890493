//! A stream's schemas: one per message shape — the HTTP header names the message carries
//! and the literals of its document — numbered from 0 in the order each side first sends
//! them, and the values last sent in each, which the next message is written against.

use bytes::Bytes;
use std::hash::{Hash, Hasher};

/// One shape, and the values of the last message of that shape.
#[derive(Debug, Clone)]
pub(crate) struct Schema {
    /// The header names (lower case), in the order their values come.
    pub(crate) headers: Vec<Box<str>>,
    /// The document's literals, `L0 … Ln`.
    pub(crate) literals: Vec<Bytes>,
    /// The last message's values, one after another, and where each is in `last_bytes`;
    /// empty before the first.
    pub(crate) last: Vec<(u32, u32)>,
    pub(crate) last_bytes: Vec<u8>,
}

impl Schema {
    pub(crate) fn new(headers: Vec<Box<str>>, literals: Vec<Bytes>) -> Self {
        Schema {
            headers,
            literals,
            last: Vec::new(),
            last_bytes: Vec::new(),
        }
    }

    /// How many values a message of this shape has: its headers, then its slots.
    pub(crate) fn values(&self) -> usize {
        self.headers.len() + self.literals.len() - 1
    }

    /// The last message's value `i`, if there was a last message.
    pub(crate) fn last_value(&self, i: usize) -> Option<&[u8]> {
        self.last
            .get(i)
            .map(|&(start, end)| &self.last_bytes[start as usize..end as usize])
    }

    /// Whether this schema is the shape of `headers` and `literals`.
    pub(crate) fn is(&self, headers: &[&str], literals: &[&[u8]]) -> bool {
        self.headers.len() == headers.len()
            && self.literals.len() == literals.len()
            && self.headers.iter().zip(headers).all(|(a, b)| **a == **b)
            && self
                .literals
                .iter()
                .zip(literals)
                .all(|(a, b)| a[..] == **b)
    }

    /// Bytes the schema holds, literals and names, for the stream's memory bound.
    pub(crate) fn weight(&self) -> usize {
        self.literals.iter().map(Bytes::len).sum::<usize>()
            + self.headers.iter().map(|h| h.len()).sum::<usize>()
    }
}

/// A hash of a shape, to find its schema without comparing every one.
pub(crate) fn shape_hash(headers: &[&str], literals: &[&[u8]]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    headers.hash(&mut hasher);
    literals.hash(&mut hasher);
    hasher.finish()
}
