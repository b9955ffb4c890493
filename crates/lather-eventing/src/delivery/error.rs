//! Why a notification or a SubscriptionEnd did not reach its sink.

/// A delivery failure, by what failed; each variant carries the reason as logged and as
/// given in the SubscriptionEnd it may cause (its `Display` is that reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeliveryError {
    /// The delivery policy refuses the sink's address, or the address is not usable.
    #[error("{0}")]
    Refused(String),
    /// No connection could be made, or it broke or was closed.
    #[error("{0}")]
    Connection(String),
    /// The TLS handshake with an `https://` sink failed (an untrusted, expired or
    /// misnamed certificate, an alert); counted like a failed connection.
    #[error("{0}")]
    Tls(String),
    /// The sink took no bytes, or gave no answer, in time.
    #[error("{0}")]
    Timeout(String),
    /// The sink answered with an HTTP status other than success.
    #[error("the sink answered {0}")]
    Status(u16),
    /// The sink's answer could not be read.
    #[error("{0}")]
    Answer(String),
    /// The message could not be written in its binding (too long, bad header value).
    #[error("{0}")]
    Encode(String),
    /// The subscription's delivery task ended before it took the last message.
    #[error("{0}")]
    TaskEnded(String),
}
