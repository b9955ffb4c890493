//! The scheme clients reach lather by, the one place it is decided: the request's
//! [`Scheme`] extension when the listener set one, else `http`.

/// The scheme a request arrived by, carried in its extensions by listeners that know it;
/// a request without one came over plain HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Scheme {
    /// Plain HTTP.
    #[default]
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    /// The scheme of the request with `extensions`.
    pub(crate) fn of(extensions: &http::Extensions) -> Scheme {
        extensions.get::<Scheme>().copied().unwrap_or_default()
    }

    /// `"http"` or `"https"`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}
