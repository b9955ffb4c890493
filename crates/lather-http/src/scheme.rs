//! The scheme clients reach lather by: the listener's, `https` with `[server.tls]`.

/// The scheme requests arrive by (one for the whole listener).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    /// The scheme of a listener with (`true`) or without TLS.
    pub(crate) fn of_listener(tls: bool) -> Scheme {
        if tls { Scheme::Https } else { Scheme::Http }
    }

    /// `"http"` or `"https"`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}
