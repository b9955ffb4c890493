//! The two WS-Eventing versions and the WS-Addressing version each request speaks.

use lather_envelope::{Envelope, WSA04_NS, WSA10_NS, WSE04_NS, WSE11_NS};
use serde::{Deserialize, Serialize};

/// lather's namespace for what the specifications leave open: the 2011 subscription
/// identifier, the publish topic header, the topic filter dialect.
pub const LATHER_EVENTING_NS: &str = "urn:lather:eventing";

/// The topic filter dialect lather supports (see docs/eventing.md).
pub const TOPIC_DIALECT: &str = "urn:lather:eventing:topic";

/// The 2004/08 push delivery mode (the default `Delivery@Mode`).
pub const PUSH_MODE: &str = "http://schemas.xmlsoap.org/ws/2004/08/eventing/DeliveryModes/Push";

/// The 2011 default (and only supported) delivery format.
pub const UNWRAP_FORMAT: &str = "http://www.w3.org/2011/03/ws-evt/DeliveryFormats/Unwrap";

/// A WS-Eventing version together with the WS-Addressing version of the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Version {
    /// WS-Eventing 2004/08 (W3C Submission) with WS-Addressing 2004/08.
    Submission04Wsa04,
    /// WS-Eventing 2004/08 with WS-Addressing 1.0 (DPWS, IEEE 11073 SDC).
    Submission04Wsa10,
    /// WS-Eventing W3C Recommendation 2011 (always WS-Addressing 1.0).
    Rec2011,
}

impl Version {
    /// The version of `envelope`: its Body's first child names the eventing namespace, its
    /// `wsa:Action` (or any addressing header) the addressing one. `None` if the Body is not
    /// in an eventing namespace.
    pub fn of(envelope: &Envelope) -> Option<Version> {
        let op = envelope.operation()?;
        let wsa04 = envelope
            .headers()
            .iter()
            .any(|h| h.name().namespace() == WSA04_NS);
        match op.namespace() {
            WSE04_NS if wsa04 => Some(Version::Submission04Wsa04),
            WSE04_NS => Some(Version::Submission04Wsa10),
            WSE11_NS => Some(Version::Rec2011),
            _ => None,
        }
    }

    /// The eventing namespace.
    pub fn eventing_ns(self) -> &'static str {
        match self {
            Version::Rec2011 => WSE11_NS,
            _ => WSE04_NS,
        }
    }

    /// The addressing namespace.
    pub fn addressing_ns(self) -> &'static str {
        match self {
            Version::Submission04Wsa04 => WSA04_NS,
            _ => WSA10_NS,
        }
    }

    /// The action `{eventing ns}/{name}`.
    pub fn action(self, name: &str) -> String {
        format!("{}/{name}", self.eventing_ns())
    }

    /// The `wsa:Action` of this version's faults.
    pub fn fault_action(self) -> String {
        match self {
            Version::Rec2011 => format!("{WSE11_NS}/fault"),
            other => format!("{}/fault", other.addressing_ns()),
        }
    }

    /// The anonymous address of the addressing version.
    pub fn anonymous(self) -> String {
        match self {
            Version::Submission04Wsa04 => format!("{WSA04_NS}/role/anonymous"),
            _ => format!("{WSA10_NS}/anonymous"),
        }
    }

    /// The subscription identifier's element `(namespace, local)` in the manager EPR.
    /// `wse:Identifier` only with WS-Addressing 2004/08: under WS-Addressing 1.0 an echoed
    /// reference parameter carries `wsa:IsReferenceParameter`, an attribute the 2004/08
    /// schema's `wse:Identifier` (a plain `xs:anyURI` element) does not allow, so
    /// schema-validating subscribers (the `sdc11073` SDC stack) cannot send it back.
    pub fn identifier(self) -> (&'static str, &'static str) {
        match self {
            Version::Submission04Wsa04 => (WSE04_NS, "Identifier"),
            _ => (LATHER_EVENTING_NS, "Identifier"),
        }
    }

    /// Whether the 2004/08 submission's shapes apply.
    pub fn is_2004(self) -> bool {
        self != Version::Rec2011
    }
}
