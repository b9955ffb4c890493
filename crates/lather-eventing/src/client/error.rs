//! What can go wrong talking to a remote event source.

use std::fmt;

/// A failed eventing request, naming the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventingClientError {
    /// The URL is not an `http://` URL the client can use.
    BadUrl {
        /// The URL given.
        url: String,
        /// Why it is refused.
        why: String,
    },
    /// No connection to the source (refused, no route, DNS).
    Unreachable {
        /// The address tried.
        url: String,
        /// The transport's error.
        cause: String,
    },
    /// No answer in time.
    Timeout {
        /// The address tried.
        url: String,
        /// How long the client waited, in milliseconds.
        waited_ms: u64,
    },
    /// The source answered with a SOAP fault.
    Fault {
        /// The HTTP status of the answer.
        status: u16,
        /// The fault code (`Sender`, `Receiver`, `Client`, …).
        code: String,
        /// The most specific subcode, e.g. `wse:FilteringRequestedUnavailable` (eventing
        /// and addressing codes with their usual prefix, others as `{namespace}local`), if
        /// any.
        subcode: Option<String>,
        /// The fault's reason text.
        reason: String,
    },
    /// The source answered something that is not the expected response.
    BadAnswer {
        /// The HTTP status of the answer.
        status: u16,
        /// What is wrong with it.
        why: String,
    },
    /// The local sink could not listen.
    Sink(String),
}

impl fmt::Display for EventingClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventingClientError::BadUrl { url, why } => write!(f, "cannot use {url:?}: {why}"),
            EventingClientError::Unreachable { url, cause } => {
                write!(f, "event source {url} is unreachable: {cause}")
            }
            EventingClientError::Timeout { url, waited_ms } => {
                write!(f, "event source {url} did not answer within {waited_ms} ms")
            }
            EventingClientError::Fault {
                status,
                code,
                subcode,
                reason,
            } => {
                write!(
                    f,
                    "the event source answered a fault (HTTP {status}, {code}"
                )?;
                if let Some(sub) = subcode {
                    write!(f, " / {sub}")?;
                }
                write!(f, "): {reason}")
            }
            EventingClientError::BadAnswer { status, why } => {
                write!(
                    f,
                    "unexpected answer from the event source (HTTP {status}): {why}"
                )
            }
            EventingClientError::Sink(why) => write!(f, "notification sink: {why}"),
        }
    }
}

impl std::error::Error for EventingClientError {}
