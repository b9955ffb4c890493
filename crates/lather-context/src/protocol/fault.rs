//! The store's faults: application faults with a subcode in lather's context namespace.

use super::NS;
use crate::ContextError;
use lather_envelope::escape::escape_text;
use lather_envelope::{Fault, FaultCode, FaultKind, QName};

/// The fault subcodes the store raises (local names in [`NS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultName {
    /// No context has the URI.
    UnknownContext,
    /// The context has expired.
    ContextExpired,
    /// The contents are larger than the store takes.
    ContextTooLarge,
    /// The store is full.
    StoreFull,
    /// The caller is not the owner.
    NotContextOwner,
    /// The write's expected version is not the stored one.
    VersionConflict,
    /// The URI is not one the store takes.
    InvalidContextUri,
    /// The request does not have the shape the operation needs.
    InvalidContextRequest,
    /// A message's context reference cannot be expanded (unknown, unreachable, or its
    /// contents do not match its digest).
    UnresolvedContext,
}

impl FaultName {
    /// The local name.
    pub fn local(self) -> &'static str {
        match self {
            FaultName::UnknownContext => "UnknownContext",
            FaultName::ContextExpired => "ContextExpired",
            FaultName::ContextTooLarge => "ContextTooLarge",
            FaultName::StoreFull => "StoreFull",
            FaultName::NotContextOwner => "NotContextOwner",
            FaultName::VersionConflict => "VersionConflict",
            FaultName::InvalidContextUri => "InvalidContextUri",
            FaultName::InvalidContextRequest => "InvalidContextRequest",
            FaultName::UnresolvedContext => "UnresolvedContext",
        }
    }

    /// As a QName.
    pub fn qname(self) -> QName {
        QName::new(NS, self.local())
    }
}

/// The SOAP fault for `error`: Sender faults with their subcode and the URI as detail;
/// a store failure is lather's internal fault (the file's path is not sent).
pub fn context_fault(error: &ContextError) -> Fault {
    let (name, status, uri) = match error {
        ContextError::Unknown { uri } => (FaultName::UnknownContext, 404, Some(uri)),
        ContextError::Expired { uri } => (FaultName::ContextExpired, 404, Some(uri)),
        ContextError::TooLarge { .. } => (FaultName::ContextTooLarge, 413, None),
        ContextError::Full { .. } => (FaultName::StoreFull, 503, None),
        ContextError::NotOwner { uri } => (FaultName::NotContextOwner, 403, Some(uri)),
        ContextError::VersionConflict { uri, .. } => (FaultName::VersionConflict, 409, Some(uri)),
        ContextError::InvalidUri { .. } => (FaultName::InvalidContextUri, 400, None),
        ContextError::Store(e) => {
            tracing::warn!("context store failed: {e}");
            return Fault::with_reason(FaultKind::Internal, "the context store failed");
        }
    };
    let code = if name == FaultName::StoreFull {
        FaultCode::Receiver
    } else {
        FaultCode::Sender
    };
    let fault = Fault::application(code, [name.qname()], error.to_string()).with_status(status);
    match uri {
        Some(uri) => fault.with_detail(format!(
            "<lc:Uri xmlns:lc=\"{NS}\">{}</lc:Uri>",
            escape_text(uri)
        )),
        None => fault,
    }
}

/// A request that does not have the operation's shape.
pub(crate) fn invalid_request(why: impl Into<String>) -> Fault {
    Fault::application(
        FaultCode::Sender,
        [FaultName::InvalidContextRequest.qname()],
        why.into(),
    )
}

/// A reference header that cannot be expanded: a Sender fault naming `uri` (when known).
pub(crate) fn unresolved(uri: Option<&str>, why: impl Into<String>) -> Fault {
    let fault = Fault::application(
        FaultCode::Sender,
        [FaultName::UnresolvedContext.qname()],
        why.into(),
    );
    match uri {
        Some(uri) => fault.with_detail(format!(
            "<lc:Uri xmlns:lc=\"{NS}\">{}</lc:Uri>",
            escape_text(uri)
        )),
        None => fault,
    }
}
