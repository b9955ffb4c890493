//! A client's IP address as text, written without the formatting machinery: its
//! `Display` cost more than the rest of a gateway's forwarding headers together, and as
//! much as framing the rest of a remote call's request.

use std::net::{IpAddr, Ipv4Addr};

/// `ip` as its `Display` writes it: an IPv4 address octet by octet, an IPv6 address
/// through `Display`.
pub fn ip_text(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => ipv4_text(v4),
        IpAddr::V6(v6) => v6.to_string(),
    }
}

/// `v4` in dotted decimal, as its `Display` writes it.
pub fn ipv4_text(v4: Ipv4Addr) -> String {
    Ipv4Text::new(v4).as_str().to_owned()
}

/// An IPv4 address in dotted decimal, as its `Display` writes it, held on the stack: for
/// a buffer that holds more than the address.
#[derive(Debug, Clone, Copy)]
pub struct Ipv4Text {
    bytes: [u8; 15],
    len: usize,
}

impl Ipv4Text {
    /// The text of `v4`.
    pub fn new(v4: Ipv4Addr) -> Self {
        let mut text = Ipv4Text {
            bytes: [0; 15],
            len: 0,
        };
        for (i, octet) in v4.octets().into_iter().enumerate() {
            if i > 0 {
                text.push(b'.');
            }
            if octet >= 100 {
                text.push(b'0' + octet / 100);
            }
            if octet >= 10 {
                text.push(b'0' + octet / 10 % 10);
            }
            text.push(b'0' + octet % 10);
        }
        text
    }

    fn push(&mut self, byte: u8) {
        self.bytes[self.len] = byte;
        self.len += 1;
    }

    /// The text as bytes (ASCII digits and dots).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        // Digits and dots only.
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_written_as_their_display_writes_them() {
        for text in [
            "0.0.0.0",
            "255.255.255.255",
            "10.0.100.7",
            "192.168.1.20",
            "::1",
            "::ffff:10.0.0.1",
            "2001:db8::7",
        ] {
            let ip: IpAddr = text.parse().unwrap();
            assert_eq!(ip_text(ip), ip.to_string());
        }
        for a in [0u8, 1, 9, 10, 99, 100, 199, 200, 255] {
            let v4 = Ipv4Addr::new(a, 255 - a, a / 2, 7);
            assert_eq!(ipv4_text(v4), v4.to_string());
        }
    }
}
