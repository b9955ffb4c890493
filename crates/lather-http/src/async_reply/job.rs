//! One request accepted for an asynchronous reply, as it is kept until its answer is
//! delivered (or fetched).

use lather_envelope::SoapVersion;
use serde::{Deserialize, Serialize};

/// The `ReplyTo` address of a client that fetches its answer instead of taking a POST.
pub(crate) const POLL_ADDRESS: &str = "urn:lather:async:poll";

/// A request waiting for its answer to be made and delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Job {
    /// The request's `wsa:MessageID`: the job's key, and the answer's `RelatesTo`.
    pub(crate) id: String,
    /// Where the answer goes: an `http://` URL, or [`POLL_ADDRESS`].
    pub(crate) reply_to: String,
    /// The request's WS-Addressing namespace (the answer's headers are in it).
    pub(crate) wsa_ns: String,
    /// `11` or `12`.
    pub(crate) soap: u8,
    /// The request's action (SOAPAction or the `action` parameter), if any.
    pub(crate) action: Option<String>,
    /// The request envelope as received (UTF-8).
    pub(crate) request: String,
    /// The answer once made: its HTTP status and envelope.
    pub(crate) answer: Option<Answer>,
    /// When the answer was made (seconds since the epoch), for polled answers' expiry.
    pub(crate) answered_at: Option<u64>,
}

/// An answer as made by the service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Answer {
    /// The HTTP status the answer had (200, or a fault's).
    pub(crate) status: u16,
    /// The answer envelope (UTF-8; empty for a one-way operation's 202).
    pub(crate) body: String,
}

impl Job {
    /// The SOAP version of the request.
    pub(crate) fn version(&self) -> SoapVersion {
        if self.soap == 11 {
            SoapVersion::V11
        } else {
            SoapVersion::V12
        }
    }

    /// Whether the client fetches the answer itself.
    pub(crate) fn is_polled(&self) -> bool {
        self.reply_to == POLL_ADDRESS
    }
}
