//! The original client of a request that came through trusted proxies: the chain of
//! `Forwarded: for=` (RFC 7239) or `X-Forwarded-For` addresses, read right to left past
//! the `[server] trusted_proxies`.

use http::HeaderMap;
use lather_config::IpNet;
use std::net::IpAddr;

/// The request's original client: `peer` itself unless it is a trusted proxy; then the
/// addresses the proxies reported (`Forwarded` when the request has one, else
/// `X-Forwarded-For`), read from the right, skipping trusted ones: the first untrusted
/// address is the client. An entry that is no address (`unknown`, an obfuscated
/// `_name`) ends the walk at the trusted hop that wrote it; when every hop is trusted,
/// the leftmost is the client.
pub(crate) fn client_address(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let chain = if headers.contains_key(http::header::FORWARDED) {
        forwarded_for(headers)
    } else {
        x_forwarded_for(headers)
    };
    let mut client = peer;
    for hop in chain.iter().rev() {
        let Some(ip) = *hop else { return client };
        client = ip;
        if !is_trusted(ip) {
            return ip;
        }
    }
    client
}

/// The `for=` addresses of every `Forwarded` element, left to right (`None` for a value
/// that is no IP address, and for an element without `for`).
pub(crate) fn forwarded_for(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let mut out = Vec::new();
    for value in headers.get_all(http::header::FORWARDED) {
        let Ok(text) = value.to_str() else {
            out.push(None);
            continue;
        };
        for element in split_outside_quotes(text, ',') {
            let node = split_outside_quotes(element, ';')
                .into_iter()
                .find_map(|pair| {
                    let (name, value) = pair.split_once('=')?;
                    name.trim()
                        .eq_ignore_ascii_case("for")
                        .then(|| value.trim())
                });
            out.push(node.and_then(node_address));
        }
    }
    out
}

/// The addresses of every `X-Forwarded-For` list, left to right (`None` for an entry that
/// is no IP address).
pub(crate) fn x_forwarded_for(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    headers
        .get_all("x-forwarded-for")
        .iter()
        .flat_map(|value| {
            value
                .to_str()
                .unwrap_or("?")
                .split(',')
                .map(|entry| node_address(entry.trim()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The IP address of a node as proxies write it: `192.0.2.1`, `192.0.2.1:4711`,
/// `"[2001:db8::1]:4711"`, `[2001:db8::1]` or bare `2001:db8::1`.
fn node_address(node: &str) -> Option<IpAddr> {
    let node = node.trim();
    let node = node
        .strip_prefix('"')
        .and_then(|n| n.strip_suffix('"'))
        .unwrap_or(node);
    if let Some(rest) = node.strip_prefix('[') {
        let (ip, _port) = rest.split_once(']')?;
        return ip.parse().ok();
    }
    if let Ok(ip) = node.parse() {
        return Some(ip);
    }
    let (ip, port) = node.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    ip.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

/// `text` split at `separator`s that are not inside a quoted string.
fn split_outside_quotes(text: &str, separator: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == separator && !quoted => {
                parts.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(n.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|n| n.parse().unwrap()).collect()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn nodes_in_every_written_form_give_their_address() {
        assert_eq!(node_address("192.0.2.1"), Some(ip("192.0.2.1")));
        assert_eq!(node_address("192.0.2.1:4711"), Some(ip("192.0.2.1")));
        assert_eq!(
            node_address("\"[2001:db8::1]:4711\""),
            Some(ip("2001:db8::1"))
        );
        assert_eq!(node_address("[2001:db8::1]"), Some(ip("2001:db8::1")));
        assert_eq!(node_address("2001:db8::1"), Some(ip("2001:db8::1")));
        assert_eq!(node_address("unknown"), None);
        assert_eq!(node_address("_hidden"), None);
        assert_eq!(node_address("1.2.3.4:x"), None);
    }

    #[test]
    fn forwarded_elements_are_read_across_values_and_quotes() {
        let h = headers(&[
            (
                "forwarded",
                "for=192.0.2.60;proto=http;by=203.0.113.43, for=\"[2001:db8:cafe::17]:4711\"",
            ),
            ("forwarded", "proto=https;host=\"a,b\";For=198.51.100.17"),
            ("forwarded", "by=10.0.0.1"),
        ]);
        assert_eq!(
            forwarded_for(&h),
            [
                Some(ip("192.0.2.60")),
                Some(ip("2001:db8:cafe::17")),
                Some(ip("198.51.100.17")),
                None
            ]
        );
        let h = headers(&[
            ("x-forwarded-for", "203.0.113.7, 10.0.0.2"),
            ("x-forwarded-for", "bogus"),
        ]);
        assert_eq!(
            x_forwarded_for(&h),
            [Some(ip("203.0.113.7")), Some(ip("10.0.0.2")), None]
        );
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_claims() {
        let h = headers(&[("x-forwarded-for", "1.1.1.1"), ("forwarded", "for=2.2.2.2")]);
        assert_eq!(
            client_address(ip("203.0.113.9"), &h, &nets(&["10.0.0.0/8"])),
            ip("203.0.113.9")
        );
        assert_eq!(client_address(ip("10.0.0.1"), &h, &[]), ip("10.0.0.1"));
    }

    #[test]
    fn the_walk_skips_trusted_hops_from_the_right() {
        let trusted = nets(&["10.0.0.0/8", "2001:db8::/32"]);
        // A client's forged first entry is left of the real client: never reached.
        let h = headers(&[("x-forwarded-for", "6.6.6.6, 198.51.100.4, 10.1.1.1")]);
        assert_eq!(
            client_address(ip("10.0.0.1"), &h, &trusted),
            ip("198.51.100.4")
        );
        // Forwarded wins over X-Forwarded-For.
        let h = headers(&[
            ("forwarded", "for=192.0.2.5, for=\"[2001:db8::9]\""),
            ("x-forwarded-for", "6.6.6.6"),
        ]);
        assert_eq!(
            client_address(ip("10.0.0.1"), &h, &trusted),
            ip("192.0.2.5")
        );
        // Every hop trusted: the leftmost.
        let h = headers(&[("x-forwarded-for", "10.9.9.9, 10.8.8.8")]);
        assert_eq!(client_address(ip("10.0.0.1"), &h, &trusted), ip("10.9.9.9"));
        // An unknown entry stops at the trusted hop that wrote it.
        let h = headers(&[("x-forwarded-for", "6.6.6.6, unknown, 10.3.3.3")]);
        assert_eq!(client_address(ip("10.0.0.1"), &h, &trusted), ip("10.3.3.3"));
        // No header: the peer.
        assert_eq!(
            client_address(ip("10.0.0.1"), &HeaderMap::new(), &trusted),
            ip("10.0.0.1")
        );
    }
}
