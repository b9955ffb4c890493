//! WS-BaseNotification operations on the event source: Subscribe, Renew, Unsubscribe,
//! Notify, and the optional operations lather does not offer.

use crate::Subscription;
use crate::protocol::expires::{self, Requested};
use crate::protocol::reply;
use crate::protocol::subscription::new_uuid;
use crate::protocol::version::LATHER_EVENTING_NS;
use crate::protocol::wsn::fault::{WsnFault, WsnRefusal, refuse};
use crate::protocol::wsn::reply::{self as wsn_reply, ADDRESSING};
use crate::protocol::wsn::{WSN_NS, action, request};
use crate::source::keeping::Change;
use crate::source::{Inner, millis, now_ms};
use bytes::Bytes;
use lather_envelope::datetime::format_utc_millis;
use lather_envelope::{Element, Envelope, Fault, QName, SoapVersion, WSA04_NS, WSA10_NS};
use std::sync::Arc;
use std::time::Duration;

/// Answers a WS-BaseNotification request: the response envelope, empty bytes for a Notify
/// (one-way), or the fault.
pub(crate) async fn handle(
    inner: &Arc<Inner>,
    envelope: &Envelope,
    manager: &str,
    identity: Option<&str>,
) -> Result<Bytes, Fault> {
    let message_id = message_id(envelope);
    match answer(inner, envelope, manager, identity).await {
        Ok(Some((action, body))) => {
            let headers = reply::addressing(
                ADDRESSING,
                &action,
                Some(&ADDRESSING.anonymous()),
                message_id.as_deref(),
            );
            Ok(reply::envelope(envelope.version(), &headers, &body))
        }
        Ok(None) => Ok(Bytes::new()),
        Err(refusal) => Err(refusal.into_fault(message_id.as_deref(), now_ms())),
    }
}

/// The response's action and body, `None` for a one-way message.
async fn answer(
    inner: &Arc<Inner>,
    envelope: &Envelope,
    manager: &str,
    identity: Option<&str>,
) -> Result<Option<(String, String)>, WsnRefusal> {
    let (payload, element) = match crate::protocol::request::body_element(envelope) {
        Ok(read) => read,
        Err(why) => return refuse(WsnFault::Malformed, why.to_string()),
    };
    let reply = |port: &str, name: &str, body: String| Ok(Some((action(port, name), body)));
    match element.name().local() {
        "Subscribe" => {
            let body = subscribe(inner, &element, &payload, envelope, manager, identity).await?;
            reply("NotificationProducer", "SubscribeResponse", body)
        }
        "Renew" => {
            let body = renew(inner, &element, envelope).await?;
            reply("SubscriptionManager", "RenewResponse", body)
        }
        "Unsubscribe" => {
            let id = known(inner, envelope)?;
            inner.lock().remove(&id);
            inner
                .keep(Change::Remove(id))
                .await
                .map_err(|r| WsnRefusal {
                    fault: WsnFault::ResourceUnknown,
                    reason: r.reason,
                    extra: String::new(),
                })?;
            reply(
                "SubscriptionManager",
                "UnsubscribeResponse",
                wsn_reply::unsubscribe_response(),
            )
        }
        "Notify" => {
            for message in request::notify(&element, &payload)? {
                let topics = message.topics.clone();
                match inner.deliver(crate::Event {
                    payload: message.event.into(),
                    action: None,
                    topics: message.topics,
                    headers: Vec::new(),
                }) {
                    Ok(queued) => tracing::debug!(queued, ?topics, "Notify published"),
                    // One-way: the refusal is logged and counted (refused_publishes).
                    Err(fault) => tracing::warn!(?topics, "Notify not published: {fault}"),
                }
            }
            Ok(None)
        }
        "PauseSubscription" => {
            known(inner, envelope)?;
            refuse(
                WsnFault::PauseFailed,
                "lather does not pause subscriptions; Unsubscribe and Subscribe again",
            )
        }
        "ResumeSubscription" => {
            known(inner, envelope)?;
            refuse(
                WsnFault::ResumeFailed,
                "lather does not pause subscriptions, so none can be resumed",
            )
        }
        "GetCurrentMessage" => refuse(
            WsnFault::NoCurrentMessage,
            "lather keeps no current message on any topic",
        ),
        other => refuse(
            WsnFault::Malformed,
            format!("wsnt:{other} is not a WS-BaseNotification request this producer answers"),
        ),
    }
}

async fn subscribe(
    inner: &Arc<Inner>,
    element: &Element,
    payload: &[u8],
    envelope: &Envelope,
    manager: &str,
    identity: Option<&str>,
) -> Result<String, WsnRefusal> {
    let request = request::subscribe(element, payload)?;
    if let Err(why) = inner
        .settings
        .notify_policy
        .check_address(&request.consumer.address)
    {
        return refuse(
            WsnFault::CreationFailed,
            format!("ConsumerReference refused: {why}"),
        );
    }
    inner.check_shared().map_err(|r| WsnRefusal {
        fault: WsnFault::CreationFailed,
        reason: r.reason,
        extra: String::new(),
    })?;
    let granted = grant(inner, request.initial.as_deref(), WsnFault::InitialTime)?;
    if let Some(content) = &request.terms.message_content
        && let Ok(xpath) =
            crate::protocol::xpath::XPathFilter::compile(&content.expression, &content.namespaces)
        && let Err(why) = xpath.check_cost(inner.settings.filter_budget)
    {
        return refuse(
            WsnFault::MessageContent,
            format!("MessageContent {:?}: {why}", content.expression),
        );
    }
    let slot = match inner.reserve(identity) {
        Ok(slot) => slot,
        Err(full) => return refuse(WsnFault::CreationFailed, full.to_string()),
    };
    let now = now_ms();
    let sub = Subscription {
        id: new_uuid(),
        version: ADDRESSING,
        soap12: envelope.version() == SoapVersion::V12,
        notify_to: request.consumer,
        end_to: None,
        manager: manager.to_owned(),
        expires_ms: now.saturating_add(millis(granted)),
        topics: Vec::new(),
        actions: Vec::new(),
        xpath: None,
        xpath_namespaces: Vec::new(),
        gzip: false,
        wsn: Some(request.terms),
        wrapped: false,
        owner: identity.map(str::to_owned),
    };
    inner
        .keep(Change::Put(Box::new(sub.clone())))
        .await
        .map_err(|r| WsnRefusal {
            fault: WsnFault::CreationFailed,
            reason: r.reason,
            extra: String::new(),
        })?;
    let body = wsn_reply::subscribe_response(&sub, now);
    inner.activate_reserved(sub, slot);
    Ok(body)
}

async fn renew(
    inner: &Arc<Inner>,
    element: &Element,
    envelope: &Envelope,
) -> Result<String, WsnRefusal> {
    let id = known(inner, envelope)?;
    let Some(wanted) = element.child(&QName::new(WSN_NS, "TerminationTime")) else {
        return refuse(WsnFault::TerminationTime, "Renew has no TerminationTime");
    };
    let granted = grant(inner, Some(wanted.text().trim()), WsnFault::TerminationTime)?;
    let now = now_ms();
    let sub = {
        let mut active = inner.lock();
        let Some(a) = active.get_mut(&id) else {
            return refuse(WsnFault::ResourceUnknown, format!("no subscription {id}"));
        };
        a.sub.expires_ms = now.saturating_add(millis(granted));
        a.sub.clone()
    };
    let expires_ms = sub.expires_ms;
    let unable = |r: crate::protocol::problem::Refusal| WsnRefusal {
        fault: WsnFault::TerminationTime,
        reason: r.reason,
        extra: String::new(),
    };
    inner
        .keep(Change::Put(Box::new(sub)))
        .await
        .map_err(unable)?;
    // An Unsubscribe or expiry that came in meanwhile must not be undone.
    if !inner.lock().contains_key(&id) {
        inner.keep(Change::Remove(id)).await.map_err(unable)?;
    }
    Ok(wsn_reply::renew_response(expires_ms, now))
}

/// The span to grant for a requested (initial) termination time: the source's maximum when
/// none is asked for; `fault` when it is not a duration or dateTime, is not in the future,
/// or lies beyond the maximum (the producer may not grant less than asked).
fn grant(inner: &Inner, wanted: Option<&str>, fault: WsnFault) -> Result<Duration, WsnRefusal> {
    let max = inner.settings.max_expires;
    let Some(text) = wanted else {
        return Ok(max);
    };
    let now = now_ms();
    let bounds = || {
        format!(
            "<wsnt:MinimumTime>{}</wsnt:MinimumTime><wsnt:MaximumTime>{}</wsnt:MaximumTime>",
            format_utc_millis(now),
            format_utc_millis(now.saturating_add(millis(max)))
        )
    };
    let refusal = |reason: String| {
        Err(WsnRefusal {
            fault,
            reason,
            extra: bounds(),
        })
    };
    match expires::parse(text, now) {
        None => refusal(format!(
            "termination time {text:?} is neither an xs:duration nor an xs:dateTime"
        )),
        Some(Requested::Past) => refusal(format!("termination time {text:?} is not in the future")),
        Some(Requested::In(d)) if d.is_zero() => {
            refusal(format!("termination time {text:?} is not in the future"))
        }
        Some(Requested::In(d)) if d > max => refusal(format!(
            "termination time {text:?} is beyond the producer's maximum {}",
            expires::format_duration(max)
        )),
        Some(Requested::In(d)) => Ok(d),
    }
}

/// The identifier of a held WS-BaseNotification subscription the request names in its
/// `lev:Identifier` header (the SubscriptionReference's reference parameter).
fn known(inner: &Inner, envelope: &Envelope) -> Result<String, WsnRefusal> {
    let id = envelope
        .header(&QName::new(LATHER_EVENTING_NS, "Identifier"))
        .and_then(|b| envelope.header_text(b));
    let Some(id) = id else {
        return refuse(
            WsnFault::ResourceUnknown,
            "the request names no subscription (no lev:Identifier header)",
        );
    };
    let id = id.trim().to_owned();
    let held = inner
        .lock()
        .get(&id)
        .is_some_and(|a| a.sub.wsn.is_some() && a.sub.expires_ms > now_ms());
    if held {
        Ok(id)
    } else {
        refuse(WsnFault::ResourceUnknown, format!("no subscription {id}"))
    }
}

/// The request's `wsa:MessageID` (WS-Addressing 1.0, or 2004/08 from older peers).
fn message_id(envelope: &Envelope) -> Option<String> {
    [WSA10_NS, WSA04_NS].into_iter().find_map(|ns| {
        let block = envelope.header(&QName::new(ns, "MessageID"))?;
        envelope.header_text(block)
    })
}
