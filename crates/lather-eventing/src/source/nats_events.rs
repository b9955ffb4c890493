//! Events from a NATS subject: each message's payload is the event (what a publish request
//! carries in its Body), with optional headers `Lather-Action` (the notifications'
//! `wsa:Action`) and `Lather-Topic` (topics, space-separated). The subscription is in a
//! queue group shared by every node of the service, so exactly one node takes each event
//! and delivers it to every subscriber. A message with a reply subject is answered
//! `queued=N` or `error: …`.

use super::{EventSource, Inner};
use crate::LATHER_EVENTING_NS;
use bytes::Bytes;
use futures_util::StreamExt;
use lather_envelope::escape::escape_text;
use lather_envelope::{Envelope, Limits, SOAP12_NS};
use std::sync::Weak;

/// The header naming the notifications' `wsa:Action`.
pub(crate) const ACTION_HEADER: &str = "Lather-Action";
/// The header naming the event's topics.
pub(crate) const TOPIC_HEADER: &str = "Lather-Topic";

/// Why a message's payload is not an event.
#[derive(Debug, thiserror::Error)]
enum NotAnEvent {
    #[error("payload is not UTF-8: {0}")]
    Utf8(#[from] std::str::Utf8Error),
    #[error("unterminated XML declaration")]
    Declaration,
    #[error("payload is not one XML element: {0}")]
    Unreadable(String),
    #[error("payload is not one XML element")]
    NotOneElement,
}

/// The envelope a publish request would carry for `payload` and `topics`.
fn event_envelope(payload: &[u8], topics: Option<&str>) -> Result<Envelope, NotAnEvent> {
    let text = std::str::from_utf8(payload)?;
    let mut text = text.trim();
    if text.starts_with("<?xml") {
        let end = text.find("?>").ok_or(NotAnEvent::Declaration)?;
        text = text[end + 2..].trim_start();
    }
    let header = topics.map_or(String::new(), |t| {
        format!(
            "<lev:Topic xmlns:lev=\"{LATHER_EVENTING_NS}\">{}</lev:Topic>",
            escape_text(t)
        )
    });
    let xml = format!(
        "<s:Envelope xmlns:s=\"{SOAP12_NS}\"><s:Header>{header}</s:Header><s:Body>{text}</s:Body></s:Envelope>"
    );
    let envelope = Envelope::parse(Bytes::from(xml), &Limits::default())
        .map_err(|f| NotAnEvent::Unreadable(f.reason().to_owned()))?;
    if envelope.body_child_count() != 1 || envelope.headers().len() > usize::from(topics.is_some())
    {
        return Err(NotAnEvent::NotOneElement);
    }
    Ok(envelope)
}

/// Publishes one message's event; the answer for its reply subject.
fn take_one(source: &EventSource, message: &async_nats::Message) -> String {
    let header = |name: &str| {
        message
            .headers
            .as_ref()
            .and_then(|h| h.get(name))
            .map(|v| v.as_str().to_owned())
    };
    let action = header(ACTION_HEADER).filter(|a| !a.is_empty());
    let topics = header(TOPIC_HEADER);
    let published = event_envelope(&message.payload, topics.as_deref())
        .map_err(|e| e.to_string())
        .and_then(|env| {
            source
                .publish(&env, action.as_deref())
                .map_err(|f| f.reason().to_owned())
        });
    match published {
        Ok(queued) => format!("queued={queued}"),
        Err(e) => {
            tracing::warn!(subject = %message.subject, "event refused: {e}");
            format!("error: {e}")
        }
    }
}

/// Takes events from `subscriber` until the source is gone (then unsubscribes, so the
/// queue group's other members take the following events).
pub(crate) async fn take(
    source: Weak<Inner>,
    client: async_nats::Client,
    mut subscriber: async_nats::Subscriber,
) {
    let mut tick = tokio::time::interval(crate::store::jetstream::sync::CHECK_EVERY);
    loop {
        tokio::select! {
            message = subscriber.next() => {
                let Some(message) = message else { return };
                let Some(inner) = source.upgrade() else { break };
                let answer = take_one(&EventSource { inner }, &message);
                if let Some(reply) = message.reply.clone() {
                    let _ = client.publish(reply, Bytes::from(answer)).await;
                }
            }
            _ = tick.tick() => {
                if source.strong_count() == 0 {
                    break;
                }
            }
        }
    }
    let _ = subscriber.unsubscribe().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_becomes_the_body_and_topics_a_header() {
        let env = event_envelope(
            b"<?xml version=\"1.0\"?>\n<t:Temp xmlns:t=\"urn:t\">21</t:Temp>",
            Some("alarms <x>"),
        )
        .unwrap();
        let op = env.operation().unwrap();
        assert_eq!((op.namespace(), op.local()), ("urn:t", "Temp"));
        let block = env
            .header(&lather_envelope::QName::new(LATHER_EVENTING_NS, "Topic"))
            .unwrap();
        assert_eq!(env.header_text(block).as_deref(), Some("alarms <x>"));
    }

    #[test]
    fn a_payload_that_is_not_one_element_is_refused() {
        for bad in [
            &b""[..],
            b"just text",
            b"<a/><b/>",
            b"<a>",
            b"<a/></s:Body><s:Body><b/>",
            b"\xff\xfe",
        ] {
            assert!(event_envelope(bad, None).is_err(), "{bad:?}");
        }
    }
}
