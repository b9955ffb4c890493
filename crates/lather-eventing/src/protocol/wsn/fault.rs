//! WS-BaseNotification faults: the specification's fault elements as WS-BaseFaults
//! (`wsrf-bf:Timestamp`, `wsrf-bf:Description`) in the SOAP detail, with the WSN fault action.

use super::{WSN_FAULT_ACTION, WSN_NS};
use lather_envelope::datetime::format_utc_millis;
use lather_envelope::escape::escape_text;
use lather_envelope::{Fault, FaultKind, WSA10_NS};

/// The WS-BaseFaults namespace.
const BF_NS: &str = "http://docs.oasis-open.org/wsrf/bf-2";

/// The WS-Resource namespace, home of `ResourceUnknownFault`.
const RESOURCE_NS: &str = "http://docs.oasis-open.org/wsrf/r-2";

/// What is wrong, named after the specification's fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WsnFault {
    /// `wsnt:TopicExpressionDialectUnknownFault`.
    DialectUnknown,
    /// `wsnt:InvalidTopicExpressionFault`.
    InvalidTopic,
    /// `wsnt:TopicNotSupportedFault`.
    TopicNotSupported,
    /// `wsnt:InvalidFilterFault` (its `UnknownFilter`s in the refusal's extra detail).
    InvalidFilter,
    /// `wsnt:SubscribeCreationFailedFault`.
    CreationFailed,
    /// `wsnt:UnacceptableInitialTerminationTimeFault`.
    InitialTime,
    /// `wsnt:UnacceptableTerminationTimeFault`.
    TerminationTime,
    /// `wsnt:UnrecognizedPolicyRequestFault`.
    Policy,
    /// `wsnt:InvalidMessageContentExpressionFault`.
    MessageContent,
    /// `wsrf-r:ResourceUnknownFault`: no such subscription.
    ResourceUnknown,
    /// `wsnt:PauseFailedFault`.
    PauseFailed,
    /// `wsnt:ResumeFailedFault`.
    ResumeFailed,
    /// `wsnt:NoCurrentMessageOnTopicFault`.
    NoCurrentMessage,
    /// A message of no shape the specification defines (no fault element of its own).
    Malformed,
}

impl WsnFault {
    /// The catalogue kind.
    fn kind(self) -> FaultKind {
        use WsnFault as W;
        match self {
            W::DialectUnknown => FaultKind::TopicExpressionDialectUnknown,
            W::InvalidTopic => FaultKind::InvalidTopicExpression,
            W::TopicNotSupported => FaultKind::TopicNotSupported,
            W::InvalidFilter => FaultKind::InvalidFilter,
            W::CreationFailed => FaultKind::SubscribeCreationFailed,
            W::InitialTime => FaultKind::UnacceptableInitialTerminationTime,
            W::TerminationTime => FaultKind::UnacceptableTerminationTime,
            W::Policy => FaultKind::UnrecognizedPolicyRequest,
            W::MessageContent => FaultKind::InvalidMessageContentExpression,
            W::ResourceUnknown => FaultKind::ResourceUnknown,
            W::PauseFailed | W::ResumeFailed | W::NoCurrentMessage => {
                FaultKind::NotificationOperationUnavailable
            }
            W::Malformed => FaultKind::InvalidEventingRequest,
        }
    }

    /// The fault element `(namespace, prefix, local name)`, if the specification has one.
    fn element(self) -> Option<(&'static str, &'static str, &'static str)> {
        let wsnt = |local| Some((WSN_NS, "wsnt", local));
        match self {
            WsnFault::ResourceUnknown => Some((RESOURCE_NS, "wsrf-r", "ResourceUnknownFault")),
            WsnFault::PauseFailed => wsnt("PauseFailedFault"),
            WsnFault::ResumeFailed => wsnt("ResumeFailedFault"),
            WsnFault::NoCurrentMessage => wsnt("NoCurrentMessageOnTopicFault"),
            WsnFault::Malformed => None,
            other => {
                let (ns, prefix, local) = other.kind().subcode();
                Some((ns, prefix, local))
            }
        }
    }
}

/// A refusal in the making: the fault, what exactly was wrong, and the elements the fault
/// type adds after the BaseFault ones (already serialised, in the `wsnt` prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WsnRefusal {
    pub(crate) fault: WsnFault,
    pub(crate) reason: String,
    pub(crate) extra: String,
}

/// A refusal with `fault` because of `reason`.
pub(crate) fn refuse<T>(fault: WsnFault, reason: impl Into<String>) -> Result<T, WsnRefusal> {
    Err(WsnRefusal {
        fault,
        reason: reason.into(),
        extra: String::new(),
    })
}

impl WsnRefusal {
    /// Adds the fault type's own elements (e.g. `wsnt:UnknownFilter`).
    pub(crate) fn with_extra(mut self, extra: String) -> Self {
        self.extra = extra;
        self
    }

    /// The SOAP fault: the catalogue kind with the reason, the BaseFault element stamped
    /// `now_ms` in the detail, `wsa:Action` = the WSN fault action and `wsa:RelatesTo`.
    pub(crate) fn into_fault(self, relates_to: Option<&str>, now_ms: u64) -> Fault {
        let mut fault = Fault::with_reason(self.fault.kind(), self.reason.clone())
            .addressed(WSA10_NS, WSN_FAULT_ACTION);
        if let Some((ns, prefix, local)) = self.fault.element() {
            let wsnt = if ns == WSN_NS {
                String::new()
            } else {
                format!(r#" xmlns:wsnt="{WSN_NS}""#)
            };
            // The fault's reason, bounded by the catalogue, not the raw one.
            let description = escape_text(fault.reason()).into_owned();
            fault = fault.with_detail(format!(
                r#"<{prefix}:{local} xmlns:{prefix}="{ns}"{wsnt} xmlns:wsrf-bf="{BF_NS}"><wsrf-bf:Timestamp>{}</wsrf-bf:Timestamp><wsrf-bf:Description xml:lang="en">{}</wsrf-bf:Description>{}</{prefix}:{local}>"#,
                format_utc_millis(now_ms),
                description,
                self.extra
            ));
        }
        match relates_to {
            Some(id) => fault.relates_to(id),
            None => fault,
        }
    }
}

/// `wsnt:{element}` elements naming each QName `(namespace, local)` of `names`.
pub(crate) fn qname_list(element: &str, names: &[(String, String)]) -> String {
    names
        .iter()
        .enumerate()
        .map(|(i, (ns, local))| {
            format!(
                r#"<wsnt:{element} xmlns:q{i}="{}">q{i}:{}</wsnt:{element}>"#,
                escape_text(ns),
                escape_text(local)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_envelope::SoapVersion;

    #[test]
    fn the_detail_is_a_base_fault_with_the_specification_element() {
        let fault = WsnRefusal {
            fault: WsnFault::InvalidFilter,
            reason: "no <ProducerProperties>".into(),
            extra: qname_list(
                "UnknownFilter",
                &[(WSN_NS.into(), "ProducerProperties".into())],
            ),
        }
        .into_fault(Some("urn:uuid:r"), 0);
        let text = String::from_utf8(fault.to_envelope(SoapVersion::V12).to_vec()).unwrap();
        assert!(
            text.contains(&format!(
                r#"<wsnt:InvalidFilterFault xmlns:wsnt="{WSN_NS}" xmlns:wsrf-bf="{BF_NS}"><wsrf-bf:Timestamp>1970-01-01T00:00:00.000Z</wsrf-bf:Timestamp><wsrf-bf:Description xml:lang="en">no &lt;ProducerProperties&gt;</wsrf-bf:Description><wsnt:UnknownFilter xmlns:q0="{WSN_NS}">q0:ProducerProperties</wsnt:UnknownFilter></wsnt:InvalidFilterFault>"#
            )),
            "{text}"
        );
        assert!(text.contains(WSN_FAULT_ACTION), "{text}");
        assert!(text.contains("urn:uuid:r"), "{text}");
    }

    #[test]
    fn an_unknown_subscription_is_a_wsrf_resource_fault() {
        let fault = WsnRefusal {
            fault: WsnFault::ResourceUnknown,
            reason: "gone".into(),
            extra: String::new(),
        }
        .into_fault(None, 0);
        assert_eq!(fault.kind(), FaultKind::ResourceUnknown);
        let detail = fault.extra_detail().unwrap();
        assert!(
            detail.starts_with(&format!(
                r#"<wsrf-r:ResourceUnknownFault xmlns:wsrf-r="{RESOURCE_NS}" xmlns:wsnt="{WSN_NS}""#
            )),
            "{detail}"
        );
    }
}
