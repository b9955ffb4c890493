//! The headers of a request to a backend, as a list in the order they are written. A
//! request is built once, changed by a few rules and written out: a list does that
//! without the hashing, index table and growth of a `HeaderMap` (about 2 000 instructions
//! of a gateway request). hyper's client, for `https://` and HTTP/2 upstreams, gets a map
//! made from it.

use http::header::{HeaderMap, HeaderName, HeaderValue};

/// Header names and values, repeats allowed, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct HeaderList(Vec<(HeaderName, HeaderValue)>);

impl HeaderList {
    /// An empty list with room for `n` headers.
    pub(crate) fn with_capacity(n: usize) -> Self {
        HeaderList(Vec::with_capacity(n))
    }

    /// Adds `value` under `name`, beside any values it has.
    pub(crate) fn append(&mut self, name: HeaderName, value: HeaderValue) {
        self.0.push((name, value));
    }

    /// Sets `name` to `value` alone, replacing any values it had.
    pub(crate) fn insert(&mut self, name: HeaderName, value: HeaderValue) {
        self.remove(&name);
        self.0.push((name, value));
    }

    /// Takes out every value of `name`.
    pub(crate) fn remove(&mut self, name: &HeaderName) {
        self.0.retain(|(n, _)| n != name);
    }

    /// Whether `name` has a value.
    pub(crate) fn contains(&self, name: &HeaderName) -> bool {
        self.0.iter().any(|(n, _)| n == name)
    }

    /// Every header, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&HeaderName, &HeaderValue)> {
        self.0.iter().map(|(n, v)| (n, v))
    }

    /// How many headers (values) it holds.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The same headers as a map, for hyper's client.
    pub(crate) fn into_map(self) -> HeaderMap {
        let mut map = HeaderMap::with_capacity(self.0.len());
        for (name, value) in self.0 {
            map.append(name, value);
        }
        map
    }
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
        list.append(x.clone(), value("1"));
        list.append(CONTENT_TYPE, value("text/xml"));
        list.append(x.clone(), value("2"));
        let written: Vec<(&str, &HeaderValue)> =
            list.iter().map(|(n, v)| (n.as_str(), v)).collect();
        assert_eq!(
            written,
            [
                ("x-a", &value("1")),
                ("content-type", &value("text/xml")),
                ("x-a", &value("2"))
            ]
        );
        list.insert(x.clone(), value("3"));
        assert_eq!(list.len(), 2);
        assert!(list.contains(&CONTENT_TYPE));
        assert!(!list.contains(&VIA));
        list.remove(&CONTENT_TYPE);
        assert_eq!(list.len(), 1);
        list.append(VIA, value("1.1 a"));
        list.append(VIA, value("1.1 b"));
        let map = list.into_map();
        assert_eq!(map.get_all(VIA).iter().count(), 2);
        assert_eq!(map["x-a"], "3");
    }
}
