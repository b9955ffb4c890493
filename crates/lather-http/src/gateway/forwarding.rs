//! The headers of a request to a backend: the client's end-to-end headers, `Via`,
//! `Forwarded` and `X-Forwarded-*`, the service's request header rules and the identity.
//!
//! Never forwarded: the hop-by-hop headers (RFC 9110 §7.6.1) and those the client's
//! `Connection` names; `Proxy-Authorization` (credentials for a proxy, and lather is the
//! last one); `Host` (the backend's authority is used); `Content-Length`,
//! `Content-Encoding` and `Expect` (the body forwarded is read whole, decoded, and framed
//! anew); `Accept-Encoding` (lather reads the answer itself, for its response flow and
//! compresses it for the client by its own rules); lather's own `Lather-Priority` and
//! `Lather-Timing` (they ask this server, not the backend); the `identity_header`;
//! `Forwarded` and `X-Forwarded-*` from a peer that is not a trusted proxy.

use super::header_list::HeaderList;
use super::headers::{hop_by_hop, list_items};
use crate::arrival::Arrival;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use lather_pipeline::{Ipv4Text, ip_text, ipv4_text};
use std::borrow::Cow;
use std::net::IpAddr;

/// What this hop adds to `Via`.
const THIS_HOP: &str = "1.1 lather";

/// `X-Forwarded-For`, built once (a name given as text is parsed at every insert).
static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
/// `X-Forwarded-Proto`.
static X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
/// `X-Forwarded-Host`.
static X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");

/// Whether a client's request header is left out of the copy [`outgoing`] makes: the
/// headers that never reach a backend (the hop-by-hop ones and `Content-Length`,
/// `Proxy-Authorization`, `Host`, `Content-Encoding`, `Accept-Encoding`, `Expect`) and
/// those it writes itself (`Via` and the forwarding headers, kept from a trusted proxy and
/// replaced otherwise). `match`es, not a search of lists: this runs for every header of
/// every request.
fn not_copied(name: &str) -> bool {
    hop_by_hop(name)
        || matches!(
            name,
            "proxy-authorization"
                | "host"
                | "content-encoding"
                | "accept-encoding"
                | "expect"
                | "via"
                | "forwarded"
                | "x-forwarded-for"
                | "x-forwarded-proto"
                | "x-forwarded-host"
        )
}

/// A gateway service's request header rules: names removed, headers set (replacing),
/// headers added (beside those of that name), applied in that order.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestRules {
    remove: Vec<HeaderName>,
    set: Vec<(HeaderName, HeaderValue)>,
    add: Vec<(HeaderName, HeaderValue)>,
}

impl RequestRules {
    /// The rules from the configured names and values; entries that are not valid header
    /// names or values (refused by `lather check` already) are skipped.
    pub(crate) fn new(
        remove: &[String],
        set: &[(String, String)],
        add: &[(String, String)],
    ) -> Self {
        RequestRules {
            remove: remove
                .iter()
                .filter_map(|n| HeaderName::from_bytes(n.as_bytes()).ok())
                .collect(),
            set: super::headers::pairs(set),
            add: super::headers::pairs(add),
        }
    }

    /// Applies the rules to `headers`.
    pub(crate) fn apply(&self, headers: &mut HeaderList) {
        for name in &self.remove {
            headers.remove(name);
        }
        for (name, value) in &self.set {
            headers.insert(name, value);
        }
        for (name, value) in &self.add {
            headers.append(name, value);
        }
    }
}

/// Room for the lines of a usual request to a backend.
const USUAL_BYTES: usize = 512;

/// The headers of the request to the backend for a client request with `incoming`
/// headers that arrived as `arrival` (`None` for requests lather makes itself, which
/// carry only `Via` and the rules): its end-to-end headers, `Content-Type` in UTF-8 (the
/// envelope forwarded is UTF-8), `Via` extended, the forwarding headers, the `rules`,
/// and `identity` under the identity header.
pub(crate) fn outgoing(
    incoming: &HeaderMap,
    arrival: Option<&Arrival>,
    rules: &RequestRules,
    identity_header: Option<&HeaderName>,
    identity: Option<HeaderValue>,
) -> HeaderList {
    let mut out = HeaderList::with_capacity(USUAL_BYTES);
    // The client's `Via` values, each followed by ", ", gathered on the way.
    let mut via: Vec<u8> = Vec::new();
    // The names the client's `Connection` lists, gathered on the way too and taken out
    // after the copy (they may come before or after it; most requests have none, and a
    // lookup of `Connection` beforehand cost every request).
    let mut named: Vec<HeaderName> = Vec::new();
    for (name, value) in incoming {
        if *name == header::VIA {
            via.extend_from_slice(value.as_bytes());
            via.extend_from_slice(b", ");
            continue;
        }
        if *name == header::CONNECTION {
            named.extend(
                list_items(value.as_bytes()).filter_map(|t| HeaderName::from_bytes(t).ok()),
            );
            continue;
        }
        if not_copied(name.as_str())
            || crate::own_headers::OWN_HEADERS.contains(name)
            || identity_header == Some(name)
        {
            continue;
        }
        if *name == header::CONTENT_TYPE {
            out.append(name, &crate::negotiate::utf8_content_type(value));
        } else {
            out.append(name, value);
        }
    }
    for name in &named {
        out.remove(name);
    }
    // `Via` and the forwarding headers are appended, not set: the copy above left every
    // value of them out.
    out.append_with(&header::VIA, |text| {
        text.extend_from_slice(&via);
        text.extend_from_slice(THIS_HOP.as_bytes());
    });
    if let Some(arrival) = arrival {
        forwarding(&mut out, incoming, arrival);
    }
    rules.apply(&mut out);
    if let (Some(name), Some(value)) = (identity_header, identity) {
        out.insert(name, &value);
    }
    out
}

/// Writes `Forwarded`, `X-Forwarded-For`, `X-Forwarded-Proto` and `X-Forwarded-Host`:
/// a trusted peer's are kept and this hop added (its proto and host stay: they tell the
/// original request's); an untrusted peer's are replaced.
fn forwarding(out: &mut HeaderList, incoming: &HeaderMap, arrival: &Arrival) {
    let kept = |name: &str| {
        arrival
            .peer_trusted
            .then(|| incoming.get_all(name))
            .filter(|values| values.iter().next().is_some())
    };
    let Some(peer) = arrival.peer.map(|p| p.ip()) else {
        return;
    };
    let proto = arrival.scheme.as_str();
    // `Forwarded` names a host written in visible ASCII only.
    let host = arrival.host.as_ref().filter(|h| h.to_str().is_ok());
    // An IPv4 address is written on the stack; an IPv6 one (rare) allocates.
    let (v4_text, v6_text);
    let address = match peer {
        IpAddr::V4(v4) => {
            v4_text = Ipv4Text::new(v4);
            v4_text.as_str()
        }
        IpAddr::V6(_) => {
            v6_text = ip_text(peer);
            v6_text.as_str()
        }
    };
    out.append_with(&header::FORWARDED, |text| {
        if let Some(values) = kept("forwarded") {
            joined(text, values);
        }
        text.extend_from_slice(b"for=");
        text.extend_from_slice(forwarded_node(peer, address).as_bytes());
        text.extend_from_slice(b";proto=");
        text.extend_from_slice(proto.as_bytes());
        if let Some(host) = host {
            text.extend_from_slice(b";host=");
            token_or_quoted(text, host.as_bytes());
        }
    });
    out.append_with(&X_FORWARDED_FOR, |text| {
        if let Some(values) = kept("x-forwarded-for") {
            joined(text, values);
        }
        text.extend_from_slice(address.as_bytes());
    });
    match kept("x-forwarded-proto") {
        Some(values) => copy(out, &X_FORWARDED_PROTO, values),
        None => out.append_with(&X_FORWARDED_PROTO, |text| {
            text.extend_from_slice(proto.as_bytes());
        }),
    }
    match (kept("x-forwarded-host"), &arrival.host) {
        (Some(values), _) => copy(out, &X_FORWARDED_HOST, values),
        (None, Some(host)) => out.append(&X_FORWARDED_HOST, host),
        (None, None) => {}
    }
}

/// Copies every value of `values` to `out` under `name`.
fn copy(out: &mut HeaderList, name: &HeaderName, values: http::header::GetAll<'_, HeaderValue>) {
    for value in values {
        out.append(name, value);
    }
}

/// Writes the values of a list header to `text`, each followed by `", "`.
fn joined(text: &mut Vec<u8>, values: http::header::GetAll<'_, HeaderValue>) {
    for value in values {
        text.extend_from_slice(value.as_bytes());
        text.extend_from_slice(b", ");
    }
}

/// A node as `Forwarded: for=` writes it (RFC 7239 §6): an IPv4 address bare (`text`, the
/// address as [`ip_text`] writes it), an IPv6 address bracketed and quoted.
fn forwarded_node(ip: IpAddr, text: &str) -> Cow<'_, str> {
    match ip {
        IpAddr::V4(_) => Cow::Borrowed(text),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => Cow::Owned(ipv4_text(v4)),
            None => Cow::Owned(format!("\"[{text}]\"")),
        },
    }
}

/// Writes `value` to `text` as an RFC 7239 parameter value: a token as it is, else a
/// quoted string.
fn token_or_quoted(text: &mut Vec<u8>, value: &[u8]) {
    let tchar = |b: u8| {
        b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            )
    };
    if !value.is_empty() && value.iter().all(|&b| tchar(b)) {
        text.extend_from_slice(value);
        return;
    }
    text.push(b'"');
    for &b in value {
        if b == b'"' || b == b'\\' {
            text.push(b'\\');
        }
        text.push(b);
    }
    text.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheme::Scheme;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(
                HeaderName::from_bytes(n.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn arrival(peer: &str, trusted: bool) -> Arrival {
        Arrival {
            peer: Some(peer.parse().unwrap()),
            peer_trusted: trusted,
            scheme: Scheme::Http,
            host: Some(HeaderValue::from_static("gw.example:8080")),
            below_prefix: None,
        }
    }

    fn all(h: &HeaderMap, name: &str) -> Vec<String> {
        h.get_all(name)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn nodes_and_values_are_written_as_rfc_7239_says() {
        let node = |text: &str| {
            let ip: IpAddr = text.parse().unwrap();
            forwarded_node(ip, &ip_text(ip)).into_owned()
        };
        assert_eq!(node("192.0.2.1"), "192.0.2.1");
        assert_eq!(node("2001:db8::1"), "\"[2001:db8::1]\"");
        assert_eq!(node("::ffff:10.0.0.1"), "10.0.0.1");
        let param = |value: &str| {
            let mut text = Vec::new();
            token_or_quoted(&mut text, value.as_bytes());
            String::from_utf8(text).unwrap()
        };
        assert_eq!(param("example.com"), "example.com");
        assert_eq!(param("gw:8080"), "\"gw:8080\"");
        assert_eq!(param("a\"b"), "\"a\\\"b\"");
    }

    #[test]
    fn end_to_end_headers_pass_and_the_others_do_not() {
        let incoming = headers(&[
            ("connection", "keep-alive, X-Hop"),
            ("x-hop", "1"),
            ("keep-alive", "timeout=5"),
            ("te", "trailers"),
            ("proxy-authorization", "Basic cHJveHk="),
            ("host", "gw.example:8080"),
            ("content-length", "10"),
            ("content-encoding", "gzip"),
            ("accept-encoding", "gzip"),
            ("expect", "100-continue"),
            ("lather-priority", "high"),
            ("x-user", "forged"),
            ("content-type", "application/soap+xml; charset=utf-16"),
            ("authorization", "Bearer t"),
            ("cookie", "a=1"),
            ("x-custom", "c"),
            (
                "traceparent",
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            ),
            ("via", "1.0 front"),
        ]);
        let rules = RequestRules::default();
        let user: HeaderName = "x-user".parse().unwrap();
        let out = outgoing(
            &incoming,
            None,
            &rules,
            Some(&user),
            Some(HeaderValue::from_static("alice")),
        )
        .into_map();
        let mut names: Vec<&str> = out.keys().map(HeaderName::as_str).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "authorization",
                "content-type",
                "cookie",
                "traceparent",
                "via",
                "x-custom",
                "x-user"
            ]
        );
        assert_eq!(out["content-type"], "application/soap+xml; charset=utf-8");
        assert_eq!(out["via"], "1.0 front, 1.1 lather");
        assert_eq!(all(&out, "x-user"), ["alice"]);
    }

    #[test]
    fn forwarding_headers_are_replaced_from_strangers_and_extended_from_proxies() {
        let incoming = headers(&[
            ("forwarded", "for=6.6.6.6"),
            ("x-forwarded-for", "6.6.6.6"),
            ("x-forwarded-proto", "https"),
            ("x-forwarded-host", "evil.example"),
        ]);
        let rules = RequestRules::default();
        let out = outgoing(
            &incoming,
            Some(&arrival("203.0.113.5:4000", false)),
            &rules,
            None,
            None,
        )
        .into_map();
        assert_eq!(
            all(&out, "forwarded"),
            ["for=203.0.113.5;proto=http;host=\"gw.example:8080\""]
        );
        assert_eq!(all(&out, "x-forwarded-for"), ["203.0.113.5"]);
        assert_eq!(all(&out, "x-forwarded-proto"), ["http"]);
        assert_eq!(all(&out, "x-forwarded-host"), ["gw.example:8080"]);
        let out = outgoing(
            &incoming,
            Some(&arrival("[2001:db8::7]:4000", true)),
            &rules,
            None,
            None,
        )
        .into_map();
        assert_eq!(
            all(&out, "forwarded"),
            ["for=6.6.6.6, for=\"[2001:db8::7]\";proto=http;host=\"gw.example:8080\""]
        );
        assert_eq!(all(&out, "x-forwarded-for"), ["6.6.6.6, 2001:db8::7"]);
        assert_eq!(all(&out, "x-forwarded-proto"), ["https"]);
        assert_eq!(all(&out, "x-forwarded-host"), ["evil.example"]);
    }

    #[test]
    fn rules_remove_then_set_then_add() {
        let incoming = headers(&[("cookie", "a=1"), ("x-env", "dev"), ("x-tag", "client")]);
        let rules = RequestRules::new(
            &["cookie".into(), "x-forwarded-for".into()],
            &[("X-Env".into(), "prod".into())],
            &[("X-Tag".into(), "gw".into())],
        );
        let out = outgoing(
            &incoming,
            Some(&arrival("192.0.2.9:1", false)),
            &rules,
            None,
            None,
        )
        .into_map();
        assert!(!out.contains_key("cookie"));
        assert!(!out.contains_key("x-forwarded-for"));
        assert!(out.contains_key("forwarded"));
        assert_eq!(all(&out, "x-env"), ["prod"]);
        assert_eq!(all(&out, "x-tag"), ["client", "gw"]);
    }
}
