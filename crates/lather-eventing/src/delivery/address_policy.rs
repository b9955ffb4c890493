//! Where notifications and SubscriptionEnd may go (the event source's delivery policy):
//! against server-side request forgery through NotifyTo and EndTo.
//!
//! By default every address is allowed except loopback (`127.0.0.0/8`, `::1`, the name
//! `localhost`), link-local (`169.254.0.0/16`, `fe80::/10`), unspecified (`0.0.0.0/8`,
//! `::`), multicast and broadcast addresses, and the server's own listen port on this
//! host; the service key `notify_allow` lifts these refusals for the host names, addresses
//! and CIDRs it lists (each with an optional `:port`). The server's own publish path
//! (`…/publish` on its own listen port) is never a delivery target. `notify_schemes`
//! names the bindings allowed (default all three).
//!
//! Hosts are read strictly: every IPv4 form a resolver accepts (`2130706433`, `0x7f.1`,
//! `0177.0.0.1`, `127.1`) is read as the address it is; other numeric-looking hosts are
//! refused. Addresses are checked at Subscribe and again at connect time against what the
//! name resolves to (every address; connections go to allowed ones only), so a name that
//! later resolves to a refused address (DNS rebinding) is not connected to.

use crate::delivery::DeliveryError;
use crate::protocol::address::Binding;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;

/// The path suffix of an event source's publish endpoint (lather-http's `{path}/publish`).
pub const PUBLISH_SUFFIX: &str = "/publish";

/// An entry of `notify_allow` or `notify_schemes` that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError(String);

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PolicyError {}

/// A delivery address the policy refuses, with the reason (which names the policy key,
/// not the resolved internal addresses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub(crate) String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// The delivery policy of an event source, and the CAs `https://` sinks are verified
/// against. Cheap to clone.
#[derive(Debug, Clone)]
pub struct DeliveryPolicy {
    rules: Arc<Rules>,
    tls: lather_client::OutboundTls,
}

#[derive(Debug, Default)]
struct Rules {
    allow: Vec<Allowed>,
    schemes: Vec<Binding>,
    /// Whether `https://` addresses are allowed (`notify_schemes` names `https`).
    https: bool,
    /// The server's own listen address, if known.
    listen: Option<SocketAddr>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    Name(String),
    Net(IpAddr, u8),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Allowed {
    pattern: Pattern,
    port: Option<u16>,
}

/// A host as written in an address, read strictly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Host {
    Ip(IpAddr),
    Name(String),
}

impl Default for DeliveryPolicy {
    /// The safe default: every binding, no exception to the refused ranges.
    fn default() -> Self {
        DeliveryPolicy::from_rules(Rules {
            allow: Vec::new(),
            schemes: vec![Binding::Http, Binding::SoapTcp, Binding::Binary],
            https: true,
            listen: None,
        })
    }
}

impl DeliveryPolicy {
    fn from_rules(rules: Rules) -> Self {
        DeliveryPolicy {
            rules: Arc::new(rules),
            tls: lather_client::OutboundTls::system(),
        }
    }

    /// The policy of the keys `notify_allow` (host names, IP addresses or CIDRs, each with
    /// an optional `:port`; IPv6 in brackets when a port follows) and `notify_schemes`
    /// (`http`, `https`, `soap.tcp`, `lather.bin`; `None` = all four).
    pub fn new(allow: &[String], schemes: Option<&[String]>) -> Result<Self, PolicyError> {
        let allow = allow
            .iter()
            .map(|e| allowed(e))
            .collect::<Result<Vec<_>, _>>()?;
        let (schemes, https) = match schemes {
            None => (DeliveryPolicy::default().rules.schemes.clone(), true),
            Some(list) => {
                let mut https = false;
                let mut bindings = Vec::new();
                for s in list {
                    match s.trim() {
                        "http" => bindings.push(Binding::Http),
                        "https" => https = true,
                        "soap.tcp" => bindings.push(Binding::SoapTcp),
                        "lather.bin" => bindings.push(Binding::Binary),
                        other => {
                            return Err(PolicyError(format!(
                                "notify_schemes: {other:?} is not one of \"http\", \"https\", \"soap.tcp\", \"lather.bin\""
                            )));
                        }
                    }
                }
                (bindings, https)
            }
        };
        Ok(DeliveryPolicy::from_rules(Rules {
            allow,
            schemes,
            https,
            listen: None,
        }))
    }

    /// The same policy, verifying `https://` sinks against `tls` (default: the system's
    /// trusted CAs).
    pub fn with_tls(&self, tls: lather_client::OutboundTls) -> Self {
        DeliveryPolicy {
            rules: Arc::clone(&self.rules),
            tls,
        }
    }

    /// The CAs `https://` addresses are verified against.
    pub fn tls(&self) -> &lather_client::OutboundTls {
        &self.tls
    }

    /// A policy that also allows loopback sinks (`127.0.0.0/8`, `::1`, `localhost`): for
    /// tests, benchmarks and interop runs whose sinks run on the same machine. The same as
    /// `notify_allow = ["127.0.0.0/8", "::1", "localhost"]`.
    pub fn allow_loopback() -> Self {
        let list = ["127.0.0.0/8", "::1", "localhost"].map(str::to_owned);
        DeliveryPolicy::new(&list, None).unwrap_or_default()
    }

    /// The same policy, knowing the server's own listen address (its port on this host is
    /// refused unless an entry names that port, its publish path always).
    pub fn with_listen(&self, listen: SocketAddr) -> Self {
        DeliveryPolicy {
            rules: Arc::new(Rules {
                allow: self.rules.allow.clone(),
                schemes: self.rules.schemes.clone(),
                https: self.rules.https,
                listen: Some(listen),
            }),
            tls: self.tls.clone(),
        }
    }

    /// Checks a NotifyTo or EndTo address at Subscribe: its binding is allowed, its host
    /// reads strictly, and a literal address (or `localhost`) is not refused. Names are
    /// checked again at connect time against what they resolve to.
    pub fn check_address(&self, address: &str) -> Result<(), Refused> {
        let binding = Binding::of(address)
            .ok_or_else(|| Refused(format!("{address:?} is not a delivery address")))?;
        let allowed = if is_https(address) {
            self.rules.https
        } else {
            self.rules.schemes.contains(&binding)
        };
        if !allowed {
            return Err(Refused(format!(
                "the binding of {address:?} is not allowed here (service key notify_schemes)"
            )));
        }
        let target = Target::of(address)?;
        let host = read_host(&target.host)?;
        match &host {
            Host::Ip(ip) => self.check_ip(None, *ip, target.port, target.publish, false),
            Host::Name(name) if is_localhost(name) => {
                let loopback = [
                    IpAddr::V4(Ipv4Addr::LOCALHOST),
                    IpAddr::V6(Ipv6Addr::LOCALHOST),
                ];
                if self.name_allowed(name, target.port)
                    || loopback.iter().any(|ip| {
                        self.check_ip(None, *ip, target.port, target.publish, false)
                            .is_ok()
                    })
                {
                    Ok(())
                } else {
                    Err(refused_range(address_kind(loopback[0])))
                }
            }
            Host::Name(_) => Ok(()),
        }
    }

    /// Whether `name` (lower case) is allowed by a name entry for `port`.
    fn name_allowed(&self, name: &str, port: u16) -> bool {
        self.rules.allow.iter().any(|a| {
            a.port.is_none_or(|p| p == port) && matches!(&a.pattern, Pattern::Name(n) if n == name)
        })
    }

    /// Whether `ip` is allowed by an address or CIDR entry for `port`; `explicit_port`
    /// asks for an entry that names the port.
    fn ip_allowed(&self, ip: IpAddr, port: u16, explicit_port: bool) -> bool {
        let ip = canonical(ip);
        self.rules.allow.iter().any(|a| {
            let port_ok = match a.port {
                Some(p) => p == port,
                None => !explicit_port,
            };
            port_ok && matches!(&a.pattern, Pattern::Net(net, bits) if contains(*net, *bits, ip))
        })
    }

    /// Checks one address: `name` is the host name it came from, if any; `this_host`
    /// says the connection was found to go to this machine.
    fn check_ip(
        &self,
        name: Option<&str>,
        ip: IpAddr,
        port: u16,
        publish: bool,
        this_host: bool,
    ) -> Result<(), Refused> {
        let ip = canonical(ip);
        if self.is_own(ip, port, this_host) {
            if publish {
                return Err(Refused(
                    "the address is this server's own publish path: events would loop".into(),
                ));
            }
            let by_name = name.is_some_and(|n| {
                self.rules.allow.iter().any(|a| {
                    a.port == Some(port) && matches!(&a.pattern, Pattern::Name(x) if x == n)
                })
            });
            if by_name || self.ip_allowed(ip, port, true) {
                return Ok(());
            }
            return Err(Refused(
                "the address is this server's own listen port; allow it with its port in the service key notify_allow".into(),
            ));
        }
        if let Some(kind) = refused_kind(ip)
            && !name.is_some_and(|n| self.name_allowed(n, port))
            && !self.ip_allowed(ip, port, false)
        {
            return Err(refused_range(kind));
        }
        Ok(())
    }

    /// Whether `ip:port` is the server's own listen address.
    fn is_own(&self, ip: IpAddr, port: u16, this_host: bool) -> bool {
        let Some(listen) = self.rules.listen else {
            return false;
        };
        if listen.port() != port {
            return false;
        }
        let listen_ip = canonical(listen.ip());
        this_host
            || ip == listen_ip
            || ip.is_loopback()
            || ip.is_unspecified()
            || (listen_ip.is_unspecified() && refused_kind(ip).is_some())
    }

    /// Connects to `authority` (`host:port`, IPv6 in brackets) within `timeout`, after
    /// checking every address the host resolves to; the connection goes to a checked
    /// address and is refused if it turns out to reach this server's own listen port
    /// (unless allowed). `publish`: the HTTP path is an event source's publish path.
    pub async fn connect(
        &self,
        authority: &str,
        timeout: Duration,
        publish: bool,
    ) -> Result<TcpStream, DeliveryError> {
        let (host, port) = split_authority(authority)
            .ok_or_else(|| DeliveryError::Refused(format!("{authority:?} has no host:port")))?;
        let addresses = self
            .resolve(host, port, publish, timeout)
            .await
            .map_err(|r| DeliveryError::Refused(format!("delivery to {authority} refused: {r}")))?;
        let mut last = DeliveryError::Refused(format!("{authority} resolves to no address"));
        for address in addresses {
            let connected = tokio::time::timeout(timeout, TcpStream::connect(address)).await;
            let stream = match connected {
                Err(_) => {
                    last = DeliveryError::Timeout(format!(
                        "no connection to {authority} within {timeout:?}"
                    ));
                    continue;
                }
                Ok(Err(e)) => {
                    last = DeliveryError::Connection(format!("cannot connect to {authority}: {e}"));
                    continue;
                }
                Ok(Ok(stream)) => stream,
            };
            let this_host = match (stream.local_addr(), stream.peer_addr()) {
                (Ok(local), Ok(peer)) => canonical(local.ip()) == canonical(peer.ip()),
                _ => false,
            };
            let name = match read_host(host) {
                Ok(Host::Name(n)) => Some(n),
                _ => None,
            };
            if this_host {
                self.check_ip(name.as_deref(), address.ip(), port, publish, true)
                    .map_err(|r| {
                        DeliveryError::Refused(format!("delivery to {authority} refused: {r}"))
                    })?;
            }
            let _ = stream.set_nodelay(true);
            return Ok(stream);
        }
        Err(last)
    }

    /// Connects to `authority` as [`DeliveryPolicy::connect`] does (every resolved address
    /// checked first), then makes a TLS handshake within `timeout`, verifying the server's
    /// certificate for the authority's host (the URL's host, also sent in SNI) against
    /// [`DeliveryPolicy::tls`].
    pub async fn connect_tls(
        &self,
        authority: &str,
        timeout: Duration,
        publish: bool,
    ) -> Result<lather_client::tls::TlsStream, DeliveryError> {
        let stream = self.connect(authority, timeout, publish).await?;
        let (host, _) = split_authority(authority)
            .ok_or_else(|| DeliveryError::Refused(format!("{authority:?} has no host:port")))?;
        self.tls
            .handshake(host, stream, timeout)
            .await
            .map_err(|e| DeliveryError::Tls(e.to_string()))
    }

    /// The addresses of `host` (a literal or a name resolved within `timeout`) the policy
    /// allows — only these are connected to; a name with none is refused.
    pub(crate) async fn resolve(
        &self,
        host: &str,
        port: u16,
        publish: bool,
        timeout: Duration,
    ) -> Result<Vec<SocketAddr>, Refused> {
        match read_host(host)? {
            Host::Ip(ip) => {
                self.check_ip(None, ip, port, publish, false)?;
                Ok(vec![SocketAddr::new(ip, port)])
            }
            Host::Name(name) => {
                let found =
                    tokio::time::timeout(timeout, tokio::net::lookup_host((name.as_str(), port)))
                        .await
                        .map_err(|_| {
                            Refused(format!("{name} was not resolved within {timeout:?}"))
                        })?
                        .map_err(|e| Refused(format!("{name} cannot be resolved: {e}")))?;
                let mut allowed = Vec::new();
                let mut refused = None;
                for address in found {
                    match self.check_ip(Some(&name), address.ip(), port, publish, false) {
                        Ok(()) => allowed.push(address),
                        Err(r) => refused = refused.or(Some(r)),
                    }
                }
                match (allowed.is_empty(), refused) {
                    (true, Some(r)) => Err(Refused(format!(
                        "{name} resolves to refused addresses only: {r}"
                    ))),
                    (true, None) => Err(Refused(format!("{name} resolves to no address"))),
                    _ => Ok(allowed),
                }
            }
        }
    }
}

/// A delivery address's host, port and whether its path is a publish path.
#[derive(Debug)]
pub(crate) struct Target {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) publish: bool,
}

impl Target {
    /// The target of a delivery address in any binding.
    pub(crate) fn of(address: &str) -> Result<Target, Refused> {
        let unreadable = || Refused(format!("{address:?} has no usable host and port"));
        if address.starts_with("http://") || is_https(address) {
            let uri: ::http::Uri = address.parse().map_err(|_| unreadable())?;
            let authority = uri.authority().ok_or_else(unreadable)?;
            if authority.as_str().contains('@') {
                return Err(Refused(format!("{address:?} carries user information")));
            }
            let default_port = if is_https(address) { 443 } else { 80 };
            return Ok(Target {
                host: authority.host().to_owned(),
                port: authority.port_u16().unwrap_or(default_port),
                publish: is_publish_path(uri.path()),
            });
        }
        let rest = address.split_once("://").map_or("", |(_, rest)| rest);
        let authority = crate::protocol::address::host_port(rest).ok_or_else(unreadable)?;
        let (host, port) = split_authority(authority).ok_or_else(unreadable)?;
        Ok(Target {
            host: host.to_owned(),
            port,
            publish: false,
        })
    }
}

/// Whether `address` is an `https://` URL (SOAP over HTTP over TLS).
pub(crate) fn is_https(address: &str) -> bool {
    address.starts_with("https://")
}

/// Whether an HTTP path is an event source's publish path.
pub(crate) fn is_publish_path(path: &str) -> bool {
    path.trim_end_matches('/').ends_with(PUBLISH_SUFFIX)
}

/// `host` and `port` of `host:port` (`[v6]:port`).
fn split_authority(authority: &str) -> Option<(&str, u16)> {
    let (host, port) = authority.rsplit_once(':')?;
    let port = port.parse::<u16>().ok()?;
    (!host.is_empty()).then_some((host, port))
}

fn refused_range(kind: &str) -> Refused {
    Refused(format!(
        "{kind} addresses are not delivered to unless the service key notify_allow lists them"
    ))
}

fn address_kind(ip: IpAddr) -> &'static str {
    refused_kind(ip).unwrap_or("these")
}

/// Why `ip` is refused by default, if it is.
fn refused_kind(ip: IpAddr) -> Option<&'static str> {
    match canonical(ip) {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            if v4.is_loopback() {
                Some("loopback")
            } else if v4.is_link_local() {
                Some("link-local")
            } else if o[0] == 0 {
                Some("unspecified")
            } else if v4.is_multicast() || v4.is_broadcast() || o[0] >= 240 {
                Some("multicast and broadcast")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if v6.is_multicast() {
                Some("multicast and broadcast")
            } else if v6.segments()[0] & 0xffc0 == 0xfe80 {
                Some("link-local")
            } else {
                None
            }
        }
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn contains(net: IpAddr, bits: u8, ip: IpAddr) -> bool {
    match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(i)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(n) & mask == u32::from(i) & mask
        }
        (IpAddr::V6(n), IpAddr::V6(i)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(n) & mask == u128::from(i) & mask
        }
        _ => false,
    }
}

fn is_localhost(name: &str) -> bool {
    name == "localhost" || name.ends_with(".localhost")
}

/// Reads a host strictly: a bracketed IPv6 address, any IPv4 form (`inet_aton`'s), or a
/// host name of letters, digits, `-`, `_` and dots (lower-cased, a final dot dropped).
/// Anything else — a numeric-looking host that is no IPv4 address, `%`, spaces — is refused.
pub(crate) fn read_host(host: &str) -> Result<Host, Refused> {
    let bad = || {
        Refused(format!(
            "the host {host:?} is not a usable host name or address"
        ))
    };
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner
            .parse::<Ipv6Addr>()
            .map(|v6| Host::Ip(IpAddr::V6(v6)))
            .map_err(|_| bad());
    }
    if let Ok(v6) = host.parse::<Ipv6Addr>() {
        return Ok(Host::Ip(IpAddr::V6(v6)));
    }
    let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    if name.is_empty() || name.len() > 253 {
        return Err(bad());
    }
    if let Some(v4) = inet_aton(&name) {
        return Ok(Host::Ip(IpAddr::V4(v4)));
    }
    // No top-level domain starts with a digit: such a host is a malformed number.
    let last_label_numeric = name
        .rsplit('.')
        .next()
        .is_some_and(|l| l.starts_with(|c: char| c.is_ascii_digit()));
    if last_label_numeric {
        return Err(bad());
    }
    let valid = name.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    });
    if !valid {
        return Err(bad());
    }
    Ok(Host::Name(name))
}

/// An IPv4 address in any form `inet_aton` takes: one to four parts, each decimal, octal
/// (leading `0`) or hexadecimal (`0x`); the last part fills the remaining bytes.
pub(crate) fn inet_aton(text: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = text.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut values = Vec::with_capacity(4);
    for part in &parts {
        let value = if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            if hex.is_empty() {
                0
            } else {
                u64::from_str_radix(hex, 16).ok()?
            }
        } else if part.len() > 1 && part.starts_with('0') {
            u64::from_str_radix(&part[1..], 8).ok()?
        } else if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
            part.parse::<u64>().ok()?
        } else {
            return None;
        };
        if part.len() > 12 {
            return None;
        }
        values.push(value);
    }
    let last = values.pop()?;
    if values.iter().any(|v| *v > 255) {
        return None;
    }
    let rest_bits = 8 * (4 - values.len() as u32);
    if rest_bits < 64 && last >= 1u64 << rest_bits {
        return None;
    }
    let mut address: u32 = 0;
    for (i, v) in values.iter().enumerate() {
        address |= (*v as u32) << (24 - 8 * i as u32);
    }
    address |= last as u32;
    Some(Ipv4Addr::from(address))
}

/// One `notify_allow` entry: `name`, `name:port`, `ip`, `ip:port`, `[v6]:port`, `cidr`,
/// `cidr:port` (IPv6 CIDRs with a port in brackets: `[fd00::/8]:80`).
fn allowed(entry: &str) -> Result<Allowed, PolicyError> {
    let bad = |why: &str| PolicyError(format!("notify_allow entry {entry:?}: {why}"));
    let text = entry.trim();
    if text.is_empty() {
        return Err(bad("empty"));
    }
    // A bare IPv6 address or CIDR (several colons, no brackets) has no port.
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']').ok_or_else(|| bad("unclosed '['"))?;
        let port = match after {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .and_then(|p| p.parse::<u16>().ok())
                    .ok_or_else(|| bad("the port is not a number from 0 to 65535"))?,
            ),
        };
        (inside, port)
    } else if text.matches(':').count() == 1 {
        let (h, p) = text.split_once(':').unwrap_or((text, ""));
        let port = p
            .parse::<u16>()
            .map_err(|_| bad("the port is not a number from 0 to 65535"))?;
        (h, Some(port))
    } else {
        (text, None)
    };
    let pattern = if let Some((net, bits)) = host.split_once('/') {
        let net: IpAddr = match net.parse::<IpAddr>() {
            Ok(ip) => ip,
            Err(_) => IpAddr::V4(inet_aton(net).ok_or_else(|| bad("not an address/prefix"))?),
        };
        let max = if net.is_ipv4() { 32 } else { 128 };
        let bits = bits
            .parse::<u8>()
            .ok()
            .filter(|b| *b <= max)
            .ok_or_else(|| bad("the prefix length is out of range"))?;
        Pattern::Net(canonical(net), bits)
    } else {
        match read_host(host).map_err(|_| bad("not a host name, address or CIDR"))? {
            Host::Ip(ip) => {
                let ip = canonical(ip);
                Pattern::Net(ip, if ip.is_ipv4() { 32 } else { 128 })
            }
            Host::Name(n) => Pattern::Name(n),
        }
    };
    Ok(Allowed { pattern, port })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Host {
        Host::Ip(s.parse().unwrap())
    }

    #[test]
    fn every_ipv4_form_reads_as_its_address() {
        for (text, want) in [
            ("2130706433", "127.0.0.1"),
            ("0x7f.1", "127.0.0.1"),
            ("0177.0.0.1", "127.0.0.1"),
            ("127.1", "127.0.0.1"),
            ("0x7f000001", "127.0.0.1"),
            ("169.254.169.254", "169.254.169.254"),
            ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
            ("10.0.0.1.", "10.0.0.1"),
            ("[::1]", "::1"),
            ("[::ffff:127.0.0.1]", "::ffff:127.0.0.1"),
        ] {
            assert_eq!(read_host(text).unwrap(), ip(want), "{text}");
        }
        for bad in [
            "1.2.3.4.5",
            "256.1.1.1",
            "08.1.1.1",
            "4294967296",
            "a b",
            "h%41",
            "1.2.3.0y",
            "cafe.1",
        ] {
            assert!(read_host(bad).is_err(), "{bad}");
        }
        assert_eq!(
            read_host("Sink.Example.").unwrap(),
            Host::Name("sink.example".into())
        );
    }

    #[test]
    fn default_refuses_internal_addresses_and_allow_lifts_it() {
        let policy = DeliveryPolicy::default();
        for address in [
            "http://127.0.0.1:9/n",
            "http://169.254.169.254/latest",
            "http://2130706433:80/",
            "http://[::1]:8080/x",
            "http://[::ffff:127.0.0.1]/x",
            "http://0.0.0.0:80/",
            "http://localhost:9/x",
            "http://[fe80::1]/x",
            "http://224.0.0.1/x",
            "soap.tcp://127.0.0.1:9",
            "lather.bin://0x7f.1:9",
        ] {
            let why = policy.check_address(address).unwrap_err();
            assert!(why.to_string().contains("notify_allow"), "{address}: {why}");
        }
        for address in [
            "http://10.0.0.5:80/x",
            "http://sink.example/x",
            "soap.tcp://192.168.1.2:9",
        ] {
            assert!(policy.check_address(address).is_ok(), "{address}");
        }
        let allowed = DeliveryPolicy::new(&["127.0.0.1".into()], None).unwrap();
        assert!(allowed.check_address("http://127.0.0.1:9/n").is_ok());
        assert!(allowed.check_address("http://2130706433:9/n").is_ok());
        assert!(allowed.check_address("http://localhost:9/n").is_ok());
        assert!(allowed.check_address("http://127.0.0.2:9/n").is_err());
        let port = DeliveryPolicy::new(&["127.0.0.0/8:9".into()], None).unwrap();
        assert!(port.check_address("http://127.0.0.2:9/n").is_ok());
        assert!(port.check_address("http://127.0.0.2:10/n").is_err());
        let metadata =
            DeliveryPolicy::new(&["[fe80::/10]:80".into(), "169.254.0.0/16".into()], None).unwrap();
        assert!(metadata.check_address("http://169.254.169.254/x").is_ok());
        assert!(metadata.check_address("http://[fe80::1]/x").is_ok());
    }

    #[test]
    fn the_servers_own_port_and_publish_path() {
        let listen: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let policy = DeliveryPolicy::allow_loopback().with_listen(listen);
        assert!(
            policy
                .check_address("http://127.0.0.1:8080/events/publish")
                .is_err()
        );
        assert!(
            policy
                .check_address("http://127.0.0.1:8080/events")
                .is_err()
        );
        assert!(policy.check_address("http://127.0.0.1:9/sink").is_ok());
        let explicit = DeliveryPolicy::new(&["127.0.0.1:8080".into()], None)
            .unwrap()
            .with_listen(listen);
        assert!(
            explicit
                .check_address("http://127.0.0.1:8080/events")
                .is_ok()
        );
        let why = explicit
            .check_address("http://127.0.0.1:8080/events/publish")
            .unwrap_err();
        assert!(why.to_string().contains("publish"), "{why}");
    }

    #[test]
    fn schemes_and_bad_entries() {
        let http_only = DeliveryPolicy::new(&[], Some(&["http".into()])).unwrap();
        assert!(http_only.check_address("http://10.0.0.1/x").is_ok());
        assert!(
            http_only
                .check_address("soap.tcp://10.0.0.1:9")
                .unwrap_err()
                .to_string()
                .contains("notify_schemes")
        );
        for bad in ["", "1.2.3.4:99999", "10.0.0.0/40", "[::1", "bad host"] {
            assert!(DeliveryPolicy::new(&[bad.into()], None).is_err(), "{bad}");
        }
        assert!(DeliveryPolicy::new(&[], Some(&["ftp".into()])).is_err());
    }

    #[tokio::test]
    async fn names_are_checked_by_what_they_resolve_to_at_connect() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let timeout = Duration::from_secs(5);
        let refused = DeliveryPolicy::default()
            .connect(&format!("localhost:{port}"), timeout, false)
            .await
            .unwrap_err()
            .to_string();
        assert!(refused.contains("refused"), "{refused}");
        let refused = DeliveryPolicy::default()
            .connect(&format!("127.0.0.1:{port}"), timeout, false)
            .await
            .unwrap_err()
            .to_string();
        assert!(refused.contains("notify_allow"), "{refused}");
        let ok = DeliveryPolicy::new(&["127.0.0.1".into()], None).unwrap();
        assert!(
            ok.connect(&format!("127.0.0.1:{port}"), timeout, false)
                .await
                .is_ok()
        );
        // `localhost` may resolve to ::1 too: only the allowed 127.0.0.1 is connected to.
        assert!(
            ok.connect(&format!("localhost:{port}"), timeout, false)
                .await
                .is_ok()
        );
        // The server's own port, found at connect time.
        let own = ok.with_listen(SocketAddr::from(([0, 0, 0, 0], port)));
        let why = own
            .connect(&format!("127.0.0.1:{port}"), timeout, true)
            .await
            .unwrap_err()
            .to_string();
        assert!(why.contains("publish"), "{why}");
    }
}
