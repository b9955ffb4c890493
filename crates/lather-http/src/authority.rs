//! Whether a client-supplied `Host` (or absolute-form authority) may be used to build the
//! address lather hands out (WSDL `soap:address`, subscription manager EPR): only a plain
//! `host[:port]` — a DNS name or IPv4 address, or a bracketed IPv6 address — with no user
//! part, path, spaces or markup.

/// Longest authority accepted (a DNS name is at most 253 bytes, plus a port).
const MAX_AUTHORITY_BYTES: usize = 260;

/// Whether `authority` is a valid `host[:port]`.
pub(crate) fn is_valid(authority: &str) -> bool {
    if authority.is_empty() || authority.len() > MAX_AUTHORITY_BYTES {
        return false;
    }
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return false;
        };
        if v6.parse::<std::net::Ipv6Addr>().is_err() {
            return false;
        }
        match after {
            "" => return true,
            _ => match after.strip_prefix(':') {
                Some(port) => ("v6", Some(port)),
                None => return false,
            },
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let host_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
        && !host.starts_with(['.', '-']);
    let port_ok = port.is_none_or(|p| {
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
