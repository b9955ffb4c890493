//! Delivery addresses: which binding a NotifyTo or EndTo address names, by its scheme
//! (the bindings themselves are in `crate::delivery::binding`).

/// How notifications reach a sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// SOAP over HTTP (`http://`), or over HTTP with TLS (`https://`).
    Http,
    /// SOAP envelopes over TCP, length-prefixed (`soap.tcp://host:port`).
    SoapTcp,
    /// lather's binary frame over TCP (`lather.bin://host:port`).
    Binary,
}

/// The schemes a NotifyTo address may use, for fault reasons.
pub const SUPPORTED_SCHEMES: &str =
    "http://, https://, soap.tcp://host:port, lather.bin://host:port";

impl Binding {
    /// The binding of a NotifyTo `address`, if its scheme is one lather delivers to and
    /// the rest is usable (a URL for HTTP, `host:port` for the TCP bindings).
    pub fn of(address: &str) -> Option<Binding> {
        if let Some(rest) = address
            .strip_prefix("http://")
            .or_else(|| address.strip_prefix("https://"))
        {
            return (!rest.is_empty() && address.parse::<http::Uri>().is_ok())
                .then_some(Binding::Http);
        }
        let (binding, rest) = if let Some(rest) = address.strip_prefix("soap.tcp://") {
            (Binding::SoapTcp, rest)
        } else if let Some(rest) = address.strip_prefix("lather.bin://") {
            (Binding::Binary, rest)
        } else {
            return None;
        };
        host_port(rest).map(|_| binding)
    }
}

/// `host:port` of a TCP binding's address rest (anything after a `/` is ignored).
pub(crate) fn host_port(rest: &str) -> Option<&str> {
    let authority = rest.split('/').next().unwrap_or("");
    let (host, port) = authority.rsplit_once(':')?;
    (!host.is_empty() && port.parse::<u16>().is_ok_and(|p| p != 0)).then_some(authority)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_choose_the_binding() {
        assert_eq!(Binding::of("http://127.0.0.1:9/n"), Some(Binding::Http));
        assert_eq!(
            Binding::of("soap.tcp://127.0.0.1:9"),
            Some(Binding::SoapTcp)
        );
        assert_eq!(
            Binding::of("lather.bin://sink.example:7000/x"),
            Some(Binding::Binary)
        );
        assert_eq!(Binding::of("lather.bin://sink.example"), None);
        assert_eq!(Binding::of("soap.tcp://:80"), None);
        assert_eq!(Binding::of("soap.tcp://h:0"), None);
        assert_eq!(Binding::of("https://h/x"), Some(Binding::Http));
        assert_eq!(Binding::of("mailto:x@y"), None);
        assert_eq!(Binding::of("http://"), None);
    }
}
