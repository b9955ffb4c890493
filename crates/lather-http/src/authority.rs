//! Whether a client-supplied `Host` (or absolute-form authority) may be used to build the
//! address lather hands out (WSDL `soap:address`, subscription manager EPR): only a plain
//! `host[:port]` — a DNS name or IPv4 address, or a bracketed IPv6 address — with no user
//! part, path, spaces or markup.

/// Longest authority accepted (a DNS name is at most 253 bytes, plus a port).
const MAX_AUTHORITY_BYTES: usize = 260;

/// An authority split as RFC 3986 writes it, `host [":" port]`, with nothing checked but
/// the shape: the host is a name or address (`literal` false) or an IPv6 literal in
/// brackets (`literal` true, `host` empty).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Parts<'a> {
    /// The name or address; empty for a bracketed literal.
    pub(crate) host: &'a str,
    /// Whether the host was a bracketed IPv6 literal (checked to parse).
    pub(crate) literal: bool,
    /// The text after the colon, if there was one.
    pub(crate) port: Option<&'a str>,
}

/// Splits `text` into host and port; `None` when a bracketed literal is not closed, is not
/// an IPv6 address, or is followed by anything but `:port`.
pub(crate) fn split(text: &str) -> Option<Parts<'_>> {
    if let Some(rest) = text.strip_prefix('[') {
        let (literal, after) = rest.split_once(']')?;
        literal.parse::<std::net::Ipv6Addr>().ok()?;
        let port = match after.strip_prefix(':') {
            Some(port) => Some(port),
            None if after.is_empty() => None,
            None => return None,
        };
        return Some(Parts {
            host: "",
            literal: true,
            port,
        });
    }
    let (host, port) = crate::ascii::split_at_byte(text, b':');
    Some(Parts {
        host,
        literal: false,
        port,
    })
}

/// Whether `authority` is a valid `host[:port]`.
pub(crate) fn is_valid(authority: &str) -> bool {
    if authority.is_empty() || authority.len() > MAX_AUTHORITY_BYTES {
        return false;
    }
    let Some(parts) = split(authority) else {
        return false;
    };
    let host_ok = parts.literal
        || (!parts.host.is_empty()
            && parts
                .host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
            && !parts.host.starts_with(['.', '-']));
    let port_ok = parts.port.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 5
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u16>().is_ok()
    });
    host_ok && port_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_hosts_and_ports_pass_and_anything_else_does_not() {
        for good in [
            "example.com",
            "gw.example.com:8080",
            "127.0.0.1:9000",
            "localhost",
            "[::1]",
            "[2001:db8::1]:443",
            "host_1",
        ] {
            assert!(is_valid(good), "{good}");
        }
        for bad in [
            "",
            "evil.example/x\"<",
            "a b",
            "user@host",
            "host:port",
            "host:99999",
            "host:",
            "[::1",
            "[zz]:1",
            "[::1]x",
            "host/path",
            "host?q",
            "<script>",
            ".leading",
            &"a".repeat(300),
        ] {
            assert!(!is_valid(bad), "{bad}");
        }
    }
}
