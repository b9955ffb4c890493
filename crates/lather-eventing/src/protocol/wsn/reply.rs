//! The messages WS-BaseNotification answers and sends: responses and notifications.

use super::terms::WsnTerms;
use super::{WSN_NS, notify_action, topic};
use crate::protocol::reply::Outgoing;
use crate::protocol::reply::{envelope, notification, outbound_headers, soap_of};
use crate::protocol::version::LATHER_EVENTING_NS;
use crate::{Subscription, Version};
use lather_envelope::WSA10_NS;
use lather_envelope::datetime::format_utc_millis;
use lather_envelope::escape::escape_text;

/// The version whose addressing (WS-Addressing 1.0) WS-BaseNotification messages use.
pub(crate) const ADDRESSING: Version = Version::Submission04Wsa10;

/// An EPR element `wsnt:{element}` with `manager` as its address and, if given, the
/// subscription identifier `id` as its reference parameter.
fn epr(element: &str, manager: &str, id: Option<&str>) -> String {
    let params = id.map_or(String::new(), |id| {
        format!(
            r#"<wsa:ReferenceParameters><lev:Identifier xmlns:lev="{LATHER_EVENTING_NS}">{}</lev:Identifier></wsa:ReferenceParameters>"#,
            escape_text(id)
        )
    });
    format!(
        r#"<wsnt:{element}><wsa:Address>{}</wsa:Address>{params}</wsnt:{element}>"#,
        escape_text(manager)
    )
}

/// The SubscribeResponse body.
pub(crate) fn subscribe_response(sub: &Subscription, now_ms: u64) -> String {
    format!(
        r#"<wsnt:SubscribeResponse xmlns:wsnt="{WSN_NS}" xmlns:wsa="{WSA10_NS}">{}<wsnt:CurrentTime>{}</wsnt:CurrentTime><wsnt:TerminationTime>{}</wsnt:TerminationTime></wsnt:SubscribeResponse>"#,
        epr("SubscriptionReference", &sub.manager, Some(&sub.id)),
        format_utc_millis(now_ms),
        format_utc_millis(sub.expires_ms)
    )
}

/// The RenewResponse body.
pub(crate) fn renew_response(expires_ms: u64, now_ms: u64) -> String {
    format!(
        r#"<wsnt:RenewResponse xmlns:wsnt="{WSN_NS}"><wsnt:TerminationTime>{}</wsnt:TerminationTime><wsnt:CurrentTime>{}</wsnt:CurrentTime></wsnt:RenewResponse>"#,
        format_utc_millis(expires_ms),
        format_utc_millis(now_ms)
    )
}

/// The UnsubscribeResponse body.
pub(crate) fn unsubscribe_response() -> String {
    format!(r#"<wsnt:UnsubscribeResponse xmlns:wsnt="{WSN_NS}"/>"#)
}

/// The notification of `event` (a standalone element with `topics`, root name first) for
/// `sub`: the event itself with `action` when `terms.raw`, else a `wsnt:Notify` whose
/// NotificationMessage names the subscription, the topic, the producer and the message.
pub(crate) fn outgoing(
    sub: &Subscription,
    terms: &WsnTerms,
    action: &str,
    event: &[u8],
    topics: &[String],
) -> Outgoing {
    if terms.raw {
        return Outgoing {
            action: action.to_owned(),
            envelope: notification(sub, action, event),
            content_encoding: None,
        };
    }
    // The topic shown: the subscription's own, else the first one the publisher named,
    // else the event's root name.
    let shown = terms
        .topics
        .first()
        .map(|f| f.topic.as_str())
        .or_else(|| topics.get(1).or(topics.first()).map(String::as_str))
        .and_then(topic::element)
        .unwrap_or_default();
    let body = format!(
        r#"<wsnt:Notify xmlns:wsnt="{WSN_NS}" xmlns:wsa="{WSA10_NS}"><wsnt:NotificationMessage>{}{shown}{}<wsnt:Message>{}</wsnt:Message></wsnt:NotificationMessage></wsnt:Notify>"#,
        epr("SubscriptionReference", &sub.manager, Some(&sub.id)),
        epr("ProducerReference", &sub.manager, None),
        std::str::from_utf8(event).unwrap_or("")
    );
    let action = notify_action();
    let headers = outbound_headers(
        sub.version,
        &sub.notify_to,
        &action,
        &crate::protocol::subscription::new_uuid(),
    );
    Outgoing {
        envelope: envelope(soap_of(sub), &headers, &body),
        action,
        content_encoding: None,
    }
}
