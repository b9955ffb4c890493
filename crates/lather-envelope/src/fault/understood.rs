//! The header blocks a MustUnderstand fault reports, bounded: at most
//! [`MAX_NOT_UNDERSTOOD`] blocks within [`MAX_NOT_UNDERSTOOD_BYTES`] of names, each distinct
//! namespace declared once on `env:Header`.

use super::bounds::{MAX_NOT_UNDERSTOOD, MAX_NOT_UNDERSTOOD_BYTES, MAX_REASON_BYTES};
use crate::QName;
use crate::escape::escape_attribute;
use std::fmt::Write as _;

/// The listed blocks and how many were left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct NotUnderstood {
    names: Vec<QName>,
    /// Bytes of names kept so far (distinct namespaces once, every local name).
    bytes: usize,
    /// Blocks not listed.
    more: usize,
}

impl NotUnderstood {
    /// The list for `names`, cloning only the names it keeps.
    pub(super) fn collect<'a>(names: impl IntoIterator<Item = &'a QName>) -> Self {
        let mut list = NotUnderstood::default();
        for name in names {
            list.push(name);
        }
        list
    }

    /// Lists `name` if it fits, else counts it as one more.
    fn push(&mut self, name: &QName) {
        let new_namespace = !self.names.iter().any(|n| n.namespace() == name.namespace());
        let cost = name.local().len()
            + if new_namespace {
                name.namespace().len()
            } else {
                0
            };
        if self.more > 0
            || self.names.len() >= MAX_NOT_UNDERSTOOD
            || self.bytes + cost > MAX_NOT_UNDERSTOOD_BYTES
        {
            self.more += 1;
            return;
        }
        self.bytes += cost;
        self.names.push(name.clone());
    }

    /// The listed names.
    pub(super) fn names(&self) -> &[QName] {
        &self.names
    }

    /// How many blocks were not listed.
    pub(super) fn more(&self) -> usize {
        self.more
    }

    /// The reason of a MustUnderstand fault for these blocks: the names in Clark notation
    /// (long parts shortened, see [`short_name`]) as long as they fit in the reason, then
    /// "and K more".
    pub(super) fn reason(&self) -> String {
        let total = self.names.len() + self.more;
        let mut reason = String::from("header blocks marked mustUnderstand were not understood: ");
        // Room for ", and 18446744073709551615 more".
        let room = MAX_REASON_BYTES - 40;
        let mut named = 0;
        for name in &self.names {
            let text = short_name(name);
            let sep = if named == 0 { 0 } else { 2 };
            if reason.len() + sep + text.len() > room {
                break;
            }
            if named > 0 {
                reason.push_str(", ");
            }
            reason.push_str(&text);
            named += 1;
        }
        match (named, total - named) {
            (_, 0) => {}
            (0, rest) => {
                let _ = write!(reason, "{rest} blocks");
            }
            (_, rest) => {
                let _ = write!(reason, " and {rest} more");
            }
        }
        reason
    }

    /// Writes the SOAP 1.2 `env:Header` with one `env:NotUnderstood` per listed block, the
    /// namespaces declared once each on the Header (`q0`, `q1`, … in order of appearance).
    pub(super) fn write_soap12_header(&self, out: &mut String) {
        let mut namespaces: Vec<&str> = Vec::new();
        for name in &self.names {
            if !name.namespace().is_empty() && !namespaces.contains(&name.namespace()) {
                namespaces.push(name.namespace());
            }
        }
        out.push_str("<env:Header");
        for (i, ns) in namespaces.iter().enumerate() {
            let _ = write!(out, r#" xmlns:q{i}="{}""#, escape_attribute(ns));
        }
        out.push('>');
        for name in &self.names {
            let local = escape_attribute(name.local());
            match namespaces.iter().position(|ns| *ns == name.namespace()) {
                Some(i) => {
                    let _ = write!(out, r#"<env:NotUnderstood qname="q{i}:{local}"/>"#);
                }
                None => {
                    let _ = write!(out, r#"<env:NotUnderstood qname="{local}"/>"#);
                }
            }
        }
        out.push_str("</env:Header>");
    }
}

/// Longest namespace or local name written whole into a reason.
const REASON_PART_BYTES: usize = 64;

/// `name` in Clark notation for a reason, each part longer than [`REASON_PART_BYTES`] cut
/// on a character boundary and marked with `…` (the `env:NotUnderstood` list keeps it
/// whole).
fn short_name(name: &QName) -> String {
    let short = |s: &str| {
        if s.len() <= REASON_PART_BYTES {
            s.to_owned()
        } else {
            format!("{}…", &s[..s.floor_char_boundary(REASON_PART_BYTES)])
        }
    };
    if name.namespace().is_empty() {
        short(name.local())
    } else {
        format!("{{{}}}{}", short(name.namespace()), short(name.local()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_stops_at_its_count_and_byte_budgets() {
        let ns = "urn:".to_owned() + &"n".repeat(1000);
        let names: Vec<QName> = (0..5000)
            .map(|i| QName::new(&ns, format!("h{i}")))
            .collect();
        let list = NotUnderstood::collect(&names);
        assert_eq!(list.names().len(), MAX_NOT_UNDERSTOOD);
        assert_eq!(list.more(), 5000 - MAX_NOT_UNDERSTOOD);
        let reason = list.reason();
        assert!(reason.len() <= MAX_REASON_BYTES, "{reason}");
        let named = reason.matches("…}h").count();
        assert!(named >= 4, "{reason}");
        assert!(
            reason.ends_with(&format!(" and {} more", 5000 - named)),
            "{reason}"
        );
        // Distinct long namespaces: the byte budget ends the list first.
        let names: Vec<QName> = (0..10)
            .map(|i| QName::new(format!("{ns}{i}"), "h"))
            .collect();
        let list = NotUnderstood::collect(&names);
        assert_eq!(list.names().len(), 4);
        assert_eq!(list.more(), 6);
        // A name too long for the budget is counted, not listed, and the rest follow it.
        let huge = QName::new(
            "urn:".to_owned() + &"x".repeat(MAX_NOT_UNDERSTOOD_BYTES),
            "h",
        );
        let list = NotUnderstood::collect([&huge, &names[0]]);
        assert!(list.names().is_empty());
        assert_eq!(list.more(), 2);
        assert!(list.reason().ends_with(": 2 blocks"), "{}", list.reason());
    }
}
