//! A request's QoS requirements applied where the HTTP exchange is: its traffic class's
//! admission priority and response-time bound before it is admitted, its class's marking
//! on the connection, and its compression preference for the answer.

use crate::state::State;
use bytes::Bytes;
use http::request::Parts;
use lather_envelope::{Envelope, Fault};
use lather_pipeline::Priority;
use lather_qos::{CompressionPreference, QOS_NS, Requester, Requirements};
use std::net::IpAddr;
use std::sync::LazyLock;

/// The searcher for the QoS namespace, built once: building one costs more than a scan
/// of a small message.
static QOS_NS_FINDER: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(QOS_NS.as_bytes()));

/// A request's QoS header as far as it has been read.
#[derive(Debug)]
pub(crate) enum Stated {
    /// Not looked at yet: the body was encoded, or it does not name the QoS namespace.
    Unread,
    /// Read before admission (the default when the header holds nothing), with the
    /// envelope parsed to read it, which the exchange goes on with.
    Read {
        /// What the header states.
        requirements: Requirements,
        /// The request's envelope.
        envelope: Box<Envelope>,
    },
}

/// The QoS header of a request whose body has been read, before it is admitted: read only
/// when the body came as it is (no `Content-Encoding`) and names the QoS namespace — a
/// memchr scan otherwise. A header lather cannot read is an `InvalidQosRequirements` fault;
/// a message that does not parse is left for its fault after admission.
pub(crate) fn early(state: &State, parts: &Parts, raw: &Bytes) -> Result<Stated, Fault> {
    let encoded = parts
        .headers
        .get(http::header::CONTENT_ENCODING)
        .is_some_and(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"));
    if encoded || QOS_NS_FINDER.find(raw).is_none() {
        return Ok(Stated::Unread);
    }
    let Ok(envelope) = Envelope::parse(raw.clone(), &state.limits) else {
        return Ok(Stated::Unread);
    };
    Ok(Stated::Read {
        requirements: Requirements::of(&envelope, &state.limits)?.unwrap_or_default(),
        envelope: Box::new(envelope),
    })
}

/// The admission priority a request's traffic class gives it, if its class sets one.
pub(crate) fn priority(
    state: &State,
    parts: &Parts,
    stated: &Stated,
    client: Option<IpAddr>,
) -> Option<Priority> {
    let policy = &state.compression.policy;
    if !policy.ranks() {
        return None;
    }
    let class = match stated {
        Stated::Read { requirements, .. } => requirements.traffic_class.as_deref(),
        Stated::Unread => None,
    };
    let who = Requester {
        path: parts.uri.path(),
        address: client,
        identity: None,
    };
    policy.priority(class, &who)
}

/// `envelope`'s QoS requirements: those read before admission, else its header's (a bad
/// one is an `InvalidQosRequirements` fault), else none.
pub(crate) fn requirements(
    state: &State,
    envelope: &Envelope,
    read: Option<Requirements>,
) -> Result<Requirements, Fault> {
    Ok(match read {
        Some(r) => r,
        None => Requirements::of(envelope, &state.limits)?.unwrap_or_default(),
    })
}

/// Applies what was `stated` once the request flow has run (so a rule may match the
/// identity a handler authenticated): marks the connection with the traffic class's code
/// point when one applies, and returns the compression preference that holds (the
/// header's, else a `[[qos.client]]` rule's).
pub(crate) fn apply(
    state: &State,
    parts: &Parts,
    peer: &crate::peer::Peer,
    stated: &Requirements,
    identity: Option<&str>,
) -> Option<CompressionPreference> {
    let who = Requester {
        path: parts.uri.path(),
        address: Some(peer.addr.ip()),
        identity,
    };
    let policy = &state.compression.policy;
    if policy.marks()
        && let Some(dscp) = policy.dscp(stated.traffic_class.as_deref(), &who)
        && let Some(marking) = peer.marking.as_ref()
    {
        marking.want(dscp);
    }
    policy.preference(stated.compression, &who)
}
