//! The two WS-Addressing versions `wsa` speaks and what differs between them.

use lather_envelope::{FaultKind, QName, WSA04_NS, WSA10_NS};

/// A WS-Addressing version, told apart by the namespace of the headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WsaVersion {
    /// WS-Addressing 1.0 (W3C Recommendation, 2006).
    V10,
    /// The 2004/08 member submission (WinRM, WS-Eventing 2004/08 peers).
    V200408,
}

impl WsaVersion {
    /// Both versions.
    pub(crate) const ALL: [WsaVersion; 2] = [WsaVersion::V10, WsaVersion::V200408];

    /// The version whose namespace is `ns`.
    pub(crate) fn from_namespace(ns: &str) -> Option<WsaVersion> {
        WsaVersion::ALL.into_iter().find(|v| v.namespace() == ns)
    }

    /// The headers' namespace.
    pub(crate) fn namespace(self) -> &'static str {
        match self {
            WsaVersion::V10 => WSA10_NS,
            WsaVersion::V200408 => WSA04_NS,
        }
    }

    /// The header (or EPR child) `local` in this version's namespace.
    pub(crate) fn name(self, local: &str) -> QName {
        QName::new(self.namespace(), local)
    }

    /// Whether `address` means "answer on the back-channel" or "do not answer": 1.0's
    /// `…/anonymous` and `…/none`, 2004/08's `…/role/anonymous`.
    pub(crate) fn is_anonymous_or_none(self, address: &str) -> bool {
        let Some(rest) = address
            .strip_prefix(self.namespace())
            .and_then(|r| r.strip_prefix('/'))
        else {
            return false;
        };
        match self {
            WsaVersion::V10 => rest == "anonymous" || rest == "none",
            WsaVersion::V200408 => rest == "role/anonymous",
        }
    }

    /// The anonymous address (the reply goes back on the connection of the request).
    pub(crate) fn anonymous(self) -> String {
        match self {
            WsaVersion::V10 => format!("{}/anonymous", self.namespace()),
            WsaVersion::V200408 => format!("{}/role/anonymous", self.namespace()),
        }
    }

    /// The action of a fault message: `{ns}/fault`.
    pub(crate) fn fault_action(self) -> String {
        format!("{}/fault", self.namespace())
    }

    /// The fault for a missing required header.
    pub(crate) fn header_required(self) -> FaultKind {
        match self {
            WsaVersion::V10 => FaultKind::MessageAddressingHeaderRequired,
            WsaVersion::V200408 => FaultKind::MessageInformationHeaderRequired,
        }
    }

    /// The fault for an invalid header; `refined` is the 1.0 second-level code to use,
    /// which the 2004/08 submission does not have.
    pub(crate) fn invalid(self, refined: FaultKind) -> FaultKind {
        match self {
            WsaVersion::V10 => refined,
            WsaVersion::V200408 => FaultKind::InvalidMessageInformationHeader,
        }
    }
}
