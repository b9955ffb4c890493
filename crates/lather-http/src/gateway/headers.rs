//! Which of a backend's response headers reach the client: never the hop-by-hop ones
//! (RFC 9110 §7.6.1) nor those the backend's `Connection` header names; then the service's
//! policy removes, sets and adds headers.

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

/// Whether `name` (lower case) is a hop-by-hop header, never passed through (RFC 9110
/// §7.6.1), or `Content-Length`, which belongs to the framing of the answer lather writes
/// itself.
pub(super) fn hop_by_hop(name: &str) -> bool {
    matches!(
        name,
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "transfer-encoding"
            | "te"
            | "trailer"
            | "upgrade"
            | "content-length"
    )
}

/// A service's response header policy.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResponsePolicy {
    /// Header names never passed on.
    pub(crate) remove: Vec<HeaderName>,
    /// Headers set on every answer, replacing the backend's.
    pub(crate) set: Vec<(HeaderName, HeaderValue)>,
    /// Headers added to every answer beside the backend's of that name.
    pub(crate) add: Vec<(HeaderName, HeaderValue)>,
}

impl ResponsePolicy {
    /// The policy from the configured names and values; entries that are not valid header
    /// names or values (refused by `lather check` already) are skipped.
    pub(crate) fn new(
        remove: &[String],
        set: &[(String, String)],
        add: &[(String, String)],
    ) -> Self {
        ResponsePolicy {
            remove: remove
                .iter()
                .filter_map(|n| HeaderName::from_bytes(n.as_bytes()).ok())
                .collect(),
            set: pairs(set),
            add: pairs(add),
        }
    }

    /// The headers of the backend's answer `from` that go to the client: its end-to-end
    /// headers ([`end_to_end`]) with the policy applied ([`Self::apply`]).
    pub(crate) fn filter(&self, from: HeaderMap) -> HeaderMap {
        self.apply(end_to_end(from))
    }

    /// The policy applied to an answer's end-to-end headers: names removed, headers set,
    /// headers added. An empty policy returns them as they are.
    pub(crate) fn apply(&self, mut headers: HeaderMap) -> HeaderMap {
        for name in &self.remove {
            headers.remove(name);
        }
        self.set_and_add(headers)
    }

    /// The policy's sets and adds applied to headers its removals were left out of
    /// already.
    pub(crate) fn set_and_add(&self, mut headers: HeaderMap) -> HeaderMap {
        for (name, value) in &self.set {
            headers.insert(name.clone(), value.clone());
        }
        for (name, value) in &self.add {
            headers.append(name.clone(), value.clone());
        }
        headers
    }
}

/// The end-to-end headers of `from`: the hop-by-hop ones and those its `Connection` names
/// are taken out in place (an answer usually loses one or two, and building a second map
/// cost more than the rest of passing the answer on).
pub(crate) fn end_to_end(mut from: HeaderMap) -> HeaderMap {
    let named = connection_named(&from);
    let doomed: Vec<HeaderName> = from
        .keys()
        .filter(|name| {
            let n = name.as_str();
            hop_by_hop(n) || named.iter().any(|c| c == n)
        })
        .cloned()
        .collect();
    for name in &doomed {
        from.remove(name);
    }
    from
}

/// The header names `headers`' `Connection` lists (lower case).
pub(super) fn connection_named(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .flat_map(|v| list_items(v.as_bytes()))
        .map(|t| String::from_utf8_lossy(t).to_ascii_lowercase())
        .collect()
}

/// The non-empty items of a comma-separated header value (RFC 9110 §5.6.1), trimmed.
pub(super) fn list_items(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|t| !t.is_empty())
}

/// Configured `(name, value)` pairs as headers; pairs that are not valid (refused by
/// `lather check` already) are skipped.
pub(super) fn pairs(pairs: &[(String, String)]) -> Vec<(HeaderName, HeaderValue)> {
    pairs
        .iter()
        .filter_map(|(n, v)| {
            Some((
                HeaderName::from_bytes(n.as_bytes()).ok()?,
                HeaderValue::from_str(v).ok()?,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_connection_named_and_removed_headers_are_dropped() {
        let mut from = HeaderMap::new();
        for (n, v) in [
            ("connection", "keep-alive, X-Secret-Hop"),
            ("connection", "x-other"),
            ("keep-alive", "timeout=5"),
            ("x-secret-hop", "1"),
            ("x-other", "2"),
            ("server", "Apache/2.4.1"),
            ("set-cookie", "a=1"),
            ("set-cookie", "b=2"),
            ("content-type", "text/xml"),
            ("x-frame-options", "ALLOW"),
            ("upgrade", "h2c"),
            ("vary", "accept"),
        ] {
            from.append(n, HeaderValue::from_static(v));
        }
        let policy = ResponsePolicy::new(
            &["server".into()],
            &[("X-Frame-Options".into(), "DENY".into())],
            &[("Vary".into(), "Origin".into())],
        );
        let out = policy.filter(from);
        let mut names: Vec<&str> = out.keys().map(HeaderName::as_str).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            ["content-type", "set-cookie", "vary", "x-frame-options"]
        );
        let vary: Vec<_> = out.get_all("vary").iter().collect();
        assert_eq!(vary, ["accept", "Origin"]);
        assert_eq!(out.get_all("set-cookie").iter().count(), 2);
        assert_eq!(out["x-frame-options"], "DENY");
    }
}
