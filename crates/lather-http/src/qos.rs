//! A request's QoS requirements applied where the HTTP exchange is: its traffic class's
//! marking on the connection, and its compression preference for the answer.

use crate::state::State;
use http::request::Parts;
use lather_envelope::{Envelope, Fault};
use lather_qos::{CompressionPreference, Requirements};
use std::sync::Arc;

/// Reads `envelope`'s QoS header (a bad one is an `InvalidQosRequirements` fault), marks
/// the connection with its traffic class's code point when one applies, and returns the
/// compression preference that holds (the header's, else a `[[qos.client]]` rule's).
pub(crate) fn read(
    state: &State,
    parts: &Parts,
    envelope: &Envelope,
    client: Option<&str>,
) -> Result<Option<CompressionPreference>, Fault> {
    let stated = Requirements::of(envelope, &state.limits)?.unwrap_or_default();
    let client = client.and_then(|c| c.parse().ok());
    let policy = &state.compression.policy;
    let path = parts.uri.path();
    if policy.marks()
        && let Some(dscp) = policy.dscp(stated.traffic_class.as_deref(), path, client)
        && let Some(marking) = parts.extensions.get::<Arc<crate::marking::Marking>>()
    {
        marking.want(dscp);
    }
    Ok(policy.preference(stated.compression, path, client))
}
