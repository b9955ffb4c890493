//! The client's settings and the builder that sets them.

use lather_envelope::{Limits, SoapVersion};
use std::time::Duration;

/// Settings for a [`Client`](crate::Client); [`build`](Self::build) makes the client.
///
/// ```
/// use lather_client::Client;
/// use lather_envelope::SoapVersion;
/// use std::time::Duration;
/// let client = Client::builder()
///     .connect_timeout(Duration::from_secs(2))
///     .request_timeout(Duration::from_secs(10))
///     .max_response_bytes(1024 * 1024)
///     .default_version(SoapVersion::V11)
///     .user_agent("quotes-app/1.0")
///     .build()
///     .expect("valid settings");
/// # drop(client);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientBuilder {
    pub(crate) connect_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) max_response_bytes: usize,
    pub(crate) pool_idle_timeout: Duration,
    pub(crate) pool_max_idle_per_host: usize,
    pub(crate) default_version: SoapVersion,
    pub(crate) user_agent: String,
    pub(crate) tls: crate::OutboundTls,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder::new()
    }
}

impl ClientBuilder {
    /// Default connect timeout: 10 s.
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
    /// Default timeout of a whole request: 30 s.
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default time an idle pooled connection is kept: 90 s.
    pub const DEFAULT_POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
    /// Default most idle connections kept per host: 32.
    pub const DEFAULT_POOL_MAX_IDLE_PER_HOST: usize = 32;

    /// The defaults: the timeouts and pool bounds above, answers up to lather's
    /// [`Limits::DEFAULT_MAX_MESSAGE_BYTES`] (4 MiB), SOAP 1.2, user agent
    /// `lather-client/<version>`, the system's trusted CAs for `https://`.
    pub fn new() -> ClientBuilder {
        ClientBuilder {
            connect_timeout: Self::DEFAULT_CONNECT_TIMEOUT,
            request_timeout: Self::DEFAULT_REQUEST_TIMEOUT,
            max_response_bytes: Limits::DEFAULT_MAX_MESSAGE_BYTES,
            pool_idle_timeout: Self::DEFAULT_POOL_IDLE_TIMEOUT,
            pool_max_idle_per_host: Self::DEFAULT_POOL_MAX_IDLE_PER_HOST,
            default_version: SoapVersion::V12,
            user_agent: concat!("lather-client/", env!("CARGO_PKG_VERSION")).to_owned(),
            tls: crate::OutboundTls::system(),
        }
    }

    /// How long to wait for a TCP connection.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long a whole request may take: connecting, sending and reading the answer.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The largest answer read, in bytes; a larger one is
    /// [`ClientError::TooLarge`](crate::ClientError::TooLarge).
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// How long an idle keep-alive connection stays in the pool.
    pub fn pool_idle_timeout(mut self, timeout: Duration) -> Self {
        self.pool_idle_timeout = timeout;
        self
    }

    /// The most idle connections kept per host (0: no keep-alive reuse).
    pub fn pool_max_idle_per_host(mut self, connections: usize) -> Self {
        self.pool_max_idle_per_host = connections;
        self
    }

    /// The SOAP version of [`Call`](crate::Call)s that do not set one.
    pub fn default_version(mut self, version: SoapVersion) -> Self {
        self.default_version = version;
        self
    }

    /// The `User-Agent` header sent (checked by [`build`](Self::build)).
    pub fn user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.user_agent = user_agent.into();
        self
    }

    /// The CAs `https://` servers' certificates are verified against (default: the
    /// system's trusted CAs). Verification cannot be turned off.
    pub fn tls(mut self, tls: crate::OutboundTls) -> Self {
        self.tls = tls;
        self
    }

    /// The limits answers are parsed with: the response size bound, lather's default depth
    /// and attribute bounds.
    pub(crate) fn parse_limits(&self) -> Limits {
        Limits {
            max_message_bytes: self.max_response_bytes,
            ..Limits::default()
        }
    }
}
