//! What can go wrong calling a SOAP service.

use bytes::Bytes;
use lather_envelope::{Fault, ReceivedFault, SoapVersion};
use std::error::Error as StdError;
use std::time::Duration;

/// A boxed transport error (hyper's, the connector's).
pub type BoxError = Box<dyn StdError + Send + Sync>;

/// A failed call. Branch on the variant or on the predicates ([`is_fault`](Self::is_fault),
/// [`is_timeout`](Self::is_timeout), [`is_connect`](Self::is_connect), …); the `Display`
/// text is for people and may change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The URL cannot be called: not a URL, no host, or a scheme the client does not speak
    /// (only `http://` for now).
    #[error("cannot call {url:?}: {reason}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The request cannot be sent as asked (an action that cannot go in an HTTP header,
    /// WS-Addressing without an action, a client setting that is not valid, …).
    #[error("the request cannot be sent: {reason}")]
    InvalidRequest {
        /// What is wrong.
        reason: String,
    },
    /// No connection could be made (refused, unreachable, name not resolved, or the
    /// connect timeout elapsed).
    #[error("cannot connect to {url}: {}", chain(source.as_ref()))]
    Connect {
        /// The URL called.
        url: String,
        /// The connector's error.
        #[source]
        source: BoxError,
    },
    /// The whole request (connect, send, answer read) took longer than the request timeout.
    #[error("{url} did not answer within {after:?}")]
    Timeout {
        /// The URL called.
        url: String,
        /// The timeout that elapsed.
        after: Duration,
    },
    /// The connection failed after it was made (reset, closed early, not HTTP).
    #[error("the exchange with {url} failed: {}", chain(source.as_ref()))]
    Transport {
        /// The URL called.
        url: String,
        /// hyper's error.
        #[source]
        source: BoxError,
    },
    /// The answer is larger than the client's `max_response_bytes`.
    #[error("the answer is larger than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// An HTTP error status whose body is not a SOAP envelope (or an empty one).
    #[error("HTTP {status} without a SOAP envelope{}", content_type.as_deref().map(|c| format!(" ({c})")).unwrap_or_default())]
    Status {
        /// The HTTP status.
        status: u16,
        /// The answer's `Content-Type`, if any.
        content_type: Option<String>,
        /// The start of the body (at most [`STATUS_BODY_BYTES`] bytes).
        body: Bytes,
    },
    /// The answer should have been an envelope and is not a readable one (not XML, not an
    /// Envelope, over the parse limits, an unreadable Fault, or empty where an answer was
    /// due).
    #[error("the answer (HTTP {status}) is not a readable SOAP envelope: {source}")]
    Malformed {
        /// The HTTP status.
        status: u16,
        /// What the parser found wrong.
        #[source]
        source: Fault,
    },
    /// A request that expects an answer got a 2xx status with an empty body.
    #[error("HTTP {status} with an empty body where an answer was due")]
    EmptyAnswer {
        /// The HTTP status.
        status: u16,
    },
    /// The answer is an envelope of the other SOAP version than the request's.
    #[error("asked in SOAP {sent}, answered in SOAP {received} (HTTP {status})")]
    VersionMismatch {
        /// The HTTP status.
        status: u16,
        /// The request's version.
        sent: SoapVersion,
        /// The answer's version.
        received: SoapVersion,
    },
    /// The service answered with a SOAP fault.
    #[error("the service answered a fault (HTTP {status}): {fault}")]
    Fault {
        /// The HTTP status (usually 500 or 400).
        status: u16,
        /// The fault: code, subcodes, reason, detail.
        fault: Box<ReceivedFault>,
    },
}

/// How many bytes of a non-SOAP error body [`ClientError::Status`] keeps.
pub const STATUS_BODY_BYTES: usize = 4096;

impl ClientError {
    /// Whether the service answered a SOAP fault.
    pub fn is_fault(&self) -> bool {
        matches!(self, ClientError::Fault { .. })
    }

    /// The fault the service answered, if it did.
    pub fn fault(&self) -> Option<&ReceivedFault> {
        match self {
            ClientError::Fault { fault, .. } => Some(fault),
            _ => None,
        }
    }

    /// Whether a timeout elapsed: the request timeout, or the connect timeout.
    pub fn is_timeout(&self) -> bool {
        match self {
            ClientError::Timeout { .. } => true,
            ClientError::Connect { source, .. } => has_timed_out(source.as_ref()),
            _ => false,
        }
    }

    /// Whether no connection could be made (refused, unreachable, connect timeout).
    pub fn is_connect(&self) -> bool {
        matches!(self, ClientError::Connect { .. })
    }

    /// Whether the answer was too large.
    pub fn is_too_large(&self) -> bool {
        matches!(self, ClientError::TooLarge { .. })
    }

    /// The HTTP status of the answer, when there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Status { status, .. }
            | ClientError::Malformed { status, .. }
            | ClientError::EmptyAnswer { status }
            | ClientError::VersionMismatch { status, .. }
            | ClientError::Fault { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// Whether `error` or one of its causes is an I/O timeout.
fn has_timed_out(error: &(dyn StdError + 'static)) -> bool {
    let mut at = Some(error);
    while let Some(e) = at {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::TimedOut
        {
            return true;
        }
        at = e.source();
    }
    false
}

/// The error and its causes, joined with `": "` (hyper's errors say little on their own).
fn chain(error: &(dyn StdError + 'static)) -> String {
    let mut out = error.to_string();
    let mut at = error.source();
    while let Some(cause) = at {
        let text = cause.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        at = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connect_error_caused_by_a_timeout_is_both_connect_and_timeout() {
        let timed_out = ClientError::Connect {
            url: "http://h/".into(),
            source: Box::new(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "connect timeout",
            )),
        };
        assert!(timed_out.is_connect() && timed_out.is_timeout());
        let refused = ClientError::Connect {
            url: "http://h/".into(),
            source: Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)),
        };
        assert!(refused.is_connect() && !refused.is_timeout());
        assert_eq!(refused.status(), None);
    }
}
