//! The headers of a request to a backend, kept as the text they are written as:
//! `name: value\r\n` lines, in order. A request's headers are built once, changed by a
//! few rules and written out: held as text, they are copied into the request head in one
//! piece, with no header name or value cloned, checked or dropped one by one (a list of
//! name and value pairs cost about 1 700 instructions more per gateway request, a
//! `HeaderMap` more again). hyper's client, for `https://` and HTTP/2 upstreams, gets a map
//! made from it.
//!
//! The framing headers (`Content-Length`, `Transfer-Encoding`) are never held: the head is
//! framed by whoever writes the body.

use http::header::{CONTENT_LENGTH, HOST, HeaderMap, HeaderName, HeaderValue, TRANSFER_ENCODING};

/// Header lines, repeats allowed, in order; names in lower case (as `HeaderName` spells
/// them), values valid field values (no CR, LF or NUL), so each line ends at its CRLF.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct HeaderList {
    text: Vec<u8>,
    /// Whether a `host` line is among them.
    host: bool,
}

impl HeaderList {
    /// An empty list with room for `bytes` bytes of lines.
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        HeaderList {
            text: Vec::with_capacity(bytes),
            host: false,
        }
    }

    /// Adds `value` under `name`, beside any values it has (a framing header is left out).
    pub(crate) fn append(&mut self, name: &HeaderName, value: &HeaderValue) {
        self.append_with(name, |text| text.extend_from_slice(value.as_bytes()));
    }

    /// Adds a line for `name` whose value `write` appends to the text it is given. What
    /// it writes must be a valid field value: bytes of a `HeaderValue`, or printable ASCII
    /// (checked in debug builds). A framing header is left out.
    pub(crate) fn append_with(&mut self, name: &HeaderName, write: impl FnOnce(&mut Vec<u8>)) {
        if *name == CONTENT_LENGTH || *name == TRANSFER_ENCODING {
            return;
        }
        self.host |= *name == HOST;
        self.text.extend_from_slice(name.as_str().as_bytes());
        self.text.extend_from_slice(b": ");
        let start = self.text.len();
        write(&mut self.text);
        debug_assert!(HeaderValue::from_bytes(&self.text[start..]).is_ok());
        self.text.extend_from_slice(b"\r\n");
    }

    /// Sets `name` to `value` alone, replacing any values it had.
    pub(crate) fn insert(&mut self, name: &HeaderName, value: &HeaderValue) {
        self.remove(name);
        self.append(name, value);
    }

    /// Takes out every value of `name`.
    pub(crate) fn remove(&mut self, name: &HeaderName) {
        if !self.contains(name) {
            return;
        }
        let mut kept = Vec::with_capacity(self.text.len());
        for line in lines(&self.text) {
            if !names(line, name) {
                kept.extend_from_slice(line);
            }
        }
        self.text = kept;
        if *name == HOST {
            self.host = false;
        }
    }

    /// Whether `name` has a value.
    pub(crate) fn contains(&self, name: &HeaderName) -> bool {
        if *name == HOST {
            return self.host;
        }
        lines(&self.text).any(|line| names(line, name))
    }

    /// Every header as name and value, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> {
        lines(&self.text).filter_map(|line| {
            let line = line.strip_suffix(b"\r\n")?;
            let colon = line.iter().position(|&b| b == b':')?;
            let name = std::str::from_utf8(&line[..colon]).ok()?;
            let value = &line[colon + 1..];
            Some((name, value.strip_prefix(b" ").unwrap_or(value)))
        })
    }

    /// How many headers (values) it holds.
    pub(crate) fn len(&self) -> usize {
        lines(&self.text).count()
    }

    /// The lines as written: `name: value\r\n` each.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.text
    }

    /// The same headers as a map, for hyper's client.
    pub(crate) fn into_map(self) -> HeaderMap {
        let mut map = HeaderMap::with_capacity(self.len());
        for (name, value) in self.iter() {
            // Written from names and values that were valid.
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_bytes(value),
            ) {
                map.append(name, value);
            }
        }
        map
    }
}

/// The lines of `text`, each with its CRLF.
fn lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    text.split_inclusive(|&b| b == b'\n')
}

/// Whether `line` is a line of `name`.
fn names(line: &[u8], name: &HeaderName) -> bool {
    line.strip_prefix(name.as_str().as_bytes())
        .is_some_and(|rest| rest.starts_with(b":"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::{CONTENT_TYPE, VIA};

    fn value(text: &'static str) -> HeaderValue {
        HeaderValue::from_static(text)
    }

    #[test]
    fn insert_replaces_append_adds_and_order_is_kept() {
        let x = HeaderName::from_static("x-a");
        let mut list = HeaderList::with_capacity(4);
        list.append(&x, &value("1"));
        list.append(&CONTENT_TYPE, &value("text/xml"));
        list.append(&x, &value("2"));
        let written: Vec<(&str, &[u8])> = list.iter().collect();
        assert_eq!(
            written,
            [
                ("x-a", &b"1"[..]),
                ("content-type", b"text/xml"),
                ("x-a", b"2")
            ]
        );
        assert_eq!(
            list.as_bytes(),
            b"x-a: 1\r\ncontent-type: text/xml\r\nx-a: 2\r\n"
        );
        list.insert(&x, &value("3"));
        assert_eq!(list.len(), 2);
        assert!(list.contains(&CONTENT_TYPE));
        assert!(!list.contains(&VIA));
        list.remove(&CONTENT_TYPE);
        assert_eq!(list.len(), 1);
        list.append(&VIA, &value("1.1 a"));
        list.append(&VIA, &value("1.1 b"));
        let map = list.into_map();
        assert_eq!(map.get_all(VIA).iter().count(), 2);
        assert_eq!(map["x-a"], "3");
    }

    #[test]
    fn a_name_that_starts_another_is_not_taken_for_it() {
        let short = HeaderName::from_static("x-a");
        let long = HeaderName::from_static("x-ab");
        let mut list = HeaderList::default();
        list.append(&long, &value("long"));
        assert!(!list.contains(&short));
        list.remove(&short);
        assert_eq!(list.len(), 1);
        list.append(&short, &value(""));
        list.remove(&long);
        assert_eq!(list.iter().collect::<Vec<_>>(), [("x-a", &b""[..])]);
    }

    #[test]
    fn framing_headers_are_never_held_and_host_is_known() {
        let mut list = HeaderList::default();
        list.append(&CONTENT_LENGTH, &value("99"));
        list.append(&TRANSFER_ENCODING, &value("chunked"));
        assert_eq!(list.len(), 0);
        assert!(!list.contains(&HOST));
        list.append(&HOST, &value("backend"));
        assert!(list.contains(&HOST));
        list.remove(&HOST);
        assert!(!list.contains(&HOST));
        assert!(list.as_bytes().is_empty());
    }
}
