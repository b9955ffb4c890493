//! What can be wrong with an eventing request, and the fault each version gives it.

use crate::Version;
use lather_envelope::{Fault, FaultKind};

/// A reason to refuse a request, independent of the version that states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Problem {
    /// The request does not have the shape its version defines.
    Malformed,
    /// 2004/08: a delivery mode other than push.
    DeliveryMode,
    /// No NotifyTo.
    NoNotifyTo,
    /// 2011: a delivery format other than Unwrap and Wrap.
    Format,
    /// NotifyTo or EndTo cannot be reached (not an address of a delivery binding).
    UnusableEpr,
    /// Expires is neither a duration nor a dateTime, is negative or lies in the past.
    BadExpires,
    /// 2011: Expires beyond the source's maximum without `BestEffort`.
    ExpiresTooLong,
    /// A filter dialect other than the supported ones (topic, XPath 1.0).
    Dialect,
    /// A topic filter with no topic.
    EmptyFilter,
    /// A topic filter whose prefix is not declared.
    BadFilter,
    /// An XPath filter over its work budget on the worst-case event.
    CostlyFilter,
    /// GetStatus or Unsubscribe of no known subscription.
    Unknown,
    /// Renew of no known subscription.
    UnknownRenew,
    /// The source cannot take the subscription (store failure, full).
    Unable,
    /// A notification compression lather does not offer.
    Compression,
    /// The subscriptions live in NATS JetStream KV and NATS cannot be reached now.
    SharedUnavailable,
}

impl Problem {
    /// The catalogue kind `version` gives this problem.
    pub(crate) fn kind(self, version: Version) -> FaultKind {
        use Problem as P;
        if self == P::SharedUnavailable {
            return FaultKind::SubscriptionsUnavailable;
        }
        if version.is_2004() {
            match self {
                P::DeliveryMode => FaultKind::DeliveryModeRequestedUnavailable,
                P::BadExpires | P::ExpiresTooLong => FaultKind::InvalidExpirationTime,
                P::Dialect | P::CostlyFilter => FaultKind::FilteringRequestedUnavailable,
                P::UnknownRenew => FaultKind::UnableToRenew,
                P::Unable | P::SharedUnavailable => FaultKind::EventSourceUnableToProcess,
                P::Compression => FaultKind::UnsupportedCompression,
                P::Malformed
                | P::NoNotifyTo
                | P::Format
                | P::UnusableEpr
                | P::EmptyFilter
                | P::BadFilter
                | P::Unknown => FaultKind::InvalidEventingMessage,
            }
        } else {
            match self {
                P::Malformed | P::DeliveryMode => FaultKind::InvalidEventingRequest,
                P::NoNotifyTo => FaultKind::NoDeliveryMechanismEstablished,
                P::Format => FaultKind::DeliveryFormatRequestedUnavailable,
                P::UnusableEpr => FaultKind::UnusableEpr,
                P::BadExpires | P::ExpiresTooLong => FaultKind::UnsupportedExpirationValue,
                P::Dialect => FaultKind::FilteringRequestedUnavailable2011,
                P::EmptyFilter => FaultKind::EmptyFilter,
                P::BadFilter | P::CostlyFilter => FaultKind::CannotProcessFilter,
                P::Unknown | P::UnknownRenew => FaultKind::UnknownSubscription,
                P::Unable | P::SharedUnavailable => FaultKind::Internal,
                P::Compression => FaultKind::UnsupportedCompression,
            }
        }
    }

    /// The fault in `version`'s binding: its kind, `reason`, the version's fault action,
    /// `wsa:RelatesTo` = `message_id`, and the detail the problem lists (the supported
    /// filter dialects, compressions or delivery formats).
    pub(crate) fn fault(
        self,
        version: Version,
        reason: impl Into<String>,
        message_id: Option<&str>,
    ) -> Fault {
        let mut fault = Fault::with_reason(self.kind(version), reason.into())
            .addressed(version.addressing_ns(), version.fault_action());
        match self {
            Problem::Dialect => {
                fault = fault.with_detail(crate::protocol::filter::supported_dialects(version))
            }
            Problem::Compression => {
                fault = fault.with_detail(crate::protocol::compression::supported())
            }
            Problem::Format => {
                fault = fault.with_detail(crate::protocol::format::supported(version))
            }
            _ => {}
        }
        match message_id {
            Some(id) => fault.relates_to(id),
            None => fault,
        }
    }
}

/// A refusal in the making: the problem and what exactly was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) problem: Problem,
    pub(crate) reason: String,
}

/// A refusal of `problem` because of `reason`.
pub(crate) fn refuse<T>(problem: Problem, reason: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal {
        problem,
        reason: reason.into(),
    })
}
