//! An IP address or CIDR block, as written in address lists like `[server] admin_allow`.

use serde::Deserialize;
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// An address block: `10.0.0.0/8`, `::1/128`, or a single address (`127.0.0.1`, `::1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

/// Why a string is not an [`IpNet`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpNetError(String);

impl fmt::Display for IpNetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for IpNetError {}

impl IpNet {
    /// Whether `ip` lies in the block. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`)
    /// matches the IPv4 block it maps.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for IpNet {
    type Err = IpNetError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| {
            IpNetError(format!(
                "{text:?} is not an IP address or CIDR block: {why}"
            ))
        };
        let (addr, prefix) = match text.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (text, None),
        };
        let addr: IpAddr = addr.trim().parse().map_err(|_| bad("bad address"))?;
        let max: u8 = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| bad(&format!("the prefix length must be 0 to {max}")))?,
        };
        Ok(IpNet { addr, prefix })
    }
}

impl TryFrom<String> for IpNet {
    type Error = IpNetError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl fmt::Display for IpNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::IpNet;
    use std::net::IpAddr;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn blocks_and_single_addresses_match() {
        let net: IpNet = "10.1.0.0/16".parse().unwrap();
        assert!(net.contains(ip("10.1.200.3")));
        assert!(!net.contains(ip("10.2.0.1")));
        assert!(net.contains(ip("::ffff:10.1.0.9")));
        let one: IpNet = "127.0.0.1".parse().unwrap();
        assert!(one.contains(ip("127.0.0.1")) && !one.contains(ip("127.0.0.2")));
        let all: IpNet = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("192.0.2.1")) && !all.contains(ip("::1")));
        let v6: IpNet = "fd00::/8".parse().unwrap();
        assert!(v6.contains(ip("fd12::1")) && !v6.contains(ip("fe80::1")));
        assert_eq!(one.to_string(), "127.0.0.1/32");
    }

    #[test]
    fn bad_text_is_refused() {
        for text in ["", "10.0.0.0/33", "::/129", "host.example", "1.2.3.4/x"] {
            assert!(text.parse::<IpNet>().is_err(), "{text}");
        }
    }
}
