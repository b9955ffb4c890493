//! SubscriptionEnd in the binding of the EndTo address:
//!
//! - `http://…` and `https://…` — a SOAP POST on a connection of its own;
//! - `soap.tcp://host:port` — the SubscriptionEnd envelope framed like a notification (a
//!   4-byte length, never compressed);
//! - `lather.bin://host:port` — a SubscriptionEnd frame ([`super::binary::EndFrame`]).
//!
//! On a TCP binding, when EndTo names the same binding and `host:port` as NotifyTo, the
//! SubscriptionEnd goes on the subscription's own stream: its delivery task writes every
//! notification still queued, then the SubscriptionEnd, then closes the stream (so a
//! subscriber reading one stream sees it last, after every notification). Otherwise —
//! another address, or DeliveryFailure (the stream has just failed) — a new connection is
//! opened to EndTo, the frame written once, and the connection closed. Best effort, once,
//! like the HTTP SubscriptionEnd.

use super::Binding;
use super::binary::{self, EndFrame};
use crate::delivery::address_policy::DeliveryPolicy;
use crate::delivery::sink_queue::SinkQueue;
use crate::delivery::{self, DeliveryError, Outgoing, Stop};
use crate::protocol::address::host_port;
use crate::protocol::reply::{self, EndStatus};
use crate::{Endpoint, Subscription};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::oneshot;

/// A subscription's last frame, handed to its delivery task to write after the queue.
#[derive(Debug)]
pub(crate) struct Farewell {
    pub(crate) bytes: Vec<u8>,
    pub(crate) done: oneshot::Sender<Result<(), DeliveryError>>,
}

/// How the delivery task is told its last frame.
pub(crate) type FarewellSender = oneshot::Sender<Farewell>;

/// What an ended subscription still holds of its delivery task.
pub(crate) struct Parts {
    /// Its queue (the task drains it once every sender is dropped).
    pub(crate) queue: SinkQueue,
    /// Hands the task a last frame.
    pub(crate) farewell: FarewellSender,
    /// Stops the task when dropped.
    pub(crate) stop: Stop,
}

/// Sends `sub`'s SubscriptionEnd with `status` and `reason` to `end_to`, in its binding;
/// `parts` are the subscription's: its delivery task is stopped at once, except when the
/// SubscriptionEnd goes last on the task's own stream (then it writes what is queued
/// first, and is stopped once that is done or `timeout` × 4 passed). Waits at most
/// `timeout` for the bytes to go out; connections go only where `guard` allows.
pub(crate) async fn send(
    sub: &Subscription,
    end_to: &Endpoint,
    status: EndStatus,
    reason: &str,
    parts: Parts,
    (timeout, guard): (Duration, &DeliveryPolicy),
) -> Result<(), DeliveryError> {
    let Parts {
        queue,
        farewell,
        stop,
    } = parts;
    let binding = Binding::of(&end_to.address);
    if binding == Some(Binding::Http) || binding.is_none() {
        drop((queue, stop));
        let out = Outgoing {
            action: sub.version.action("SubscriptionEnd"),
            envelope: reply::subscription_end(sub, end_to, status, reason),
            content_encoding: None,
        };
        return delivery::send_once(&end_to.address, reply::soap_of(sub), &out, timeout, guard)
            .await;
    }
    let bytes = frame(sub, end_to, status, reason)?;
    if status != EndStatus::DeliveryFailure && same_stream(&sub.notify_to.address, &end_to.address)
    {
        let (done, written) = oneshot::channel();
        farewell.send(Farewell { bytes, done }).map_err(|_| {
            DeliveryError::TaskEnded("the subscription's delivery task has ended".into())
        })?;
        drop(queue);
        // The task first writes what is still queued (each write bounded by the retry
        // policy's timeout), so allow it some writes' worth.
        let result = match tokio::time::timeout(timeout.saturating_mul(4), written).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(DeliveryError::TaskEnded(
                "the subscription's delivery task ended first".into(),
            )),
            Err(_) => Err(DeliveryError::Timeout(format!(
                "not written within {:?}",
                timeout.saturating_mul(4)
            ))),
        };
        drop(stop);
        return result;
    }
    drop((queue, stop));
    let authority = authority(&end_to.address)
        .ok_or_else(|| DeliveryError::Refused("EndTo has no host:port".into()))?;
    let mut stream = super::connect(authority, timeout, guard, false).await?;
    tokio::time::timeout(timeout, async {
        stream.write_all(&bytes).await?;
        stream.shutdown().await
    })
    .await
    .map_err(|_| DeliveryError::Timeout(format!("{authority} took no bytes within {timeout:?}")))?
    .map_err(|e| DeliveryError::Connection(format!("writing to {authority}: {e}")))
}

/// The SubscriptionEnd for `end_to`'s TCP binding: a length-prefixed envelope
/// (`soap.tcp`) or an end frame (`lather.bin`).
pub(crate) fn frame(
    sub: &Subscription,
    end_to: &Endpoint,
    status: EndStatus,
    reason: &str,
) -> Result<Vec<u8>, DeliveryError> {
    let mut out = Vec::new();
    if Binding::of(&end_to.address) == Some(Binding::Binary) {
        let end = EndFrame {
            subscription: sub.id.clone(),
            status: format!("{}/{}", sub.version.eventing_ns(), status.name()),
            reason: reason[..reason.floor_char_boundary(usize::from(u16::MAX))].to_owned(),
        };
        binary::encode_end(&end, &mut out).map_err(|e| DeliveryError::Encode(e.to_string()))?;
        return Ok(out);
    }
    let envelope = reply::subscription_end(sub, end_to, status, reason);
    let len = u32::try_from(envelope.len())
        .ok()
        .filter(|n| *n as usize <= super::tcp::MAX_SOAP_FRAME)
        .ok_or_else(|| DeliveryError::Encode("SubscriptionEnd too long".into()))?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&envelope);
    Ok(out)
}

/// Whether two TCP binding addresses name the same binding and `host:port`.
fn same_stream(notify_to: &str, end_to: &str) -> bool {
    matches!(
        Binding::of(end_to),
        Some(Binding::SoapTcp | Binding::Binary)
    ) && Binding::of(notify_to) == Binding::of(end_to)
        && authority(notify_to).is_some()
        && authority(notify_to) == authority(end_to)
}

/// `host:port` of a TCP binding address.
fn authority(address: &str) -> Option<&str> {
    address
        .split_once("://")
        .and_then(|(_, rest)| host_port(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_stream_is_the_same_binding_and_authority() {
        assert!(same_stream("soap.tcp://h:1", "soap.tcp://h:1/x"));
        assert!(!same_stream("soap.tcp://h:1", "lather.bin://h:1"));
        assert!(!same_stream("soap.tcp://h:1", "soap.tcp://h:2"));
        assert!(!same_stream("http://h:1/", "http://h:1/"));
    }

    #[test]
    fn an_end_frame_reason_is_cut_to_its_16_bit_length_on_a_character_boundary() {
        let sub: Subscription = serde_json::from_str(
            r#"{"id":"urn:uuid:00000000-0000-4000-8000-000000000001","version":"Rec2011",
            "soap12":true,"notify_to":{"address":"lather.bin://127.0.0.1:9","params":[]},
            "end_to":null,"manager":"http://127.0.0.1:8/events","expires_ms":4102444800000,
            "topics":[]}"#,
        )
        .unwrap();
        let end_to = Endpoint {
            address: "lather.bin://127.0.0.1:9".into(),
            params: Vec::new(),
        };
        // 40 000 two-byte characters: 80 000 bytes, more than a 16-bit length holds.
        let reason = "é".repeat(40_000);
        let bytes = frame(&sub, &end_to, EndStatus::DeliveryFailure, &reason).unwrap();
        let Some((binary::BinaryMessage::End(end), _)) = binary::decode_message(&bytes).unwrap()
        else {
            panic!("not an end frame");
        };
        assert_eq!(end.reason, "é".repeat(32_767));
    }
}
