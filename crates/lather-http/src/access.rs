//! The access log: one event per answered request, on target `lather::access` at info
//! (`[server] access_log`, default on). `/health`, `/ready` and `/metrics` are not logged:
//! probes would drown the requests.
//!
//! Fields: `service`, `operation` (the Body's first child's local name, `-` when not
//! known), `method`, `path` (without the query), `status`, `fault` (the lather fault's
//! name, only when the answer is one), `bytes_in`, `bytes_out`, `duration_ms`, `upstream`
//! (the backend that answered, when the service says: [`UpstreamUsed`]), `client` (the
//! peer's address) and `trace_id` (from a valid W3C `traceparent` request header). The
//! entry borrows what the request already holds; nothing of the body is copied.

use crate::arriving::Arriving;
use http::{Method, Uri};
use lather_envelope::FaultKind;
use std::net::SocketAddr;
use std::time::Duration;

/// The target access-log events are emitted on.
pub(crate) const TARGET: &str = "lather::access";

/// A response extension a service sets on its answer to name the backend that answered
/// (its label or URL); the access log shows it as `upstream`. A gateway sets it only
/// while the access log is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamUsed(pub String);

/// What the access log needs of a request, kept from its head (only when the log is on).
#[derive(Debug)]
pub(crate) struct AccessEntry {
    method: Method,
    uri: Uri,
    client: SocketAddr,
    trace_id: Option<TraceId>,
    /// The operation's local name, once the envelope is parsed.
    pub(crate) operation: Option<String>,
}

/// The facts of an answer the access log shows.
#[derive(Debug)]
pub(crate) struct Answered<'a> {
    pub(crate) service: &'a str,
    pub(crate) status: u16,
    pub(crate) fault: Option<FaultKind>,
    pub(crate) bytes_in: u64,
    pub(crate) bytes_out: u64,
    pub(crate) elapsed: Duration,
    pub(crate) upstream: Option<&'a str>,
}

impl AccessEntry {
    /// The entry of a request as it arrived (its method, URI, peer and trace id).
    pub(crate) fn of<B>(arriving: &Arriving<B>) -> AccessEntry {
        let Arriving { request: req, peer } = arriving;
        AccessEntry {
            method: req.method().clone(),
            uri: req.uri().clone(),
            client: peer.addr,
            trace_id: req
                .headers()
                .get("traceparent")
                .and_then(|v| trace_id(v.as_bytes())),
            operation: None,
        }
    }

    /// Emits the entry's one event.
    pub(crate) fn emit(&self, answered: &Answered<'_>) {
        let trace_id = self
            .trace_id
            .as_ref()
            .and_then(|id| std::str::from_utf8(&id.0).ok());
        tracing::info!(
            target: TARGET,
            service = answered.service,
            operation = self.operation.as_deref().unwrap_or("-"),
            method = self.method.as_str(),
            path = self.uri.path(),
            status = answered.status,
            fault = answered.fault.map(|k| k.spec().name),
            bytes_in = answered.bytes_in,
            bytes_out = answered.bytes_out,
            duration_ms = answered.elapsed.as_secs_f64() * 1000.0,
            upstream = answered.upstream,
            client = %self.client,
            trace_id,
            "answered"
        );
    }
}

/// A W3C trace id: 32 lowercase hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TraceId([u8; 32]);

/// The trace id of a `traceparent` header (W3C Trace Context §3.2:
/// `version-traceid-parentid-flags`), when it is valid: version `ff` is not, nor an id of
/// zeros, nor upper-case hex; a version above `00` may carry more after the flags.
fn trace_id(value: &[u8]) -> Option<TraceId> {
    let lower_hex = |s: &[u8]| {
        s.iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    };
    let zeros = |s: &[u8]| s.iter().all(|&b| b == b'0');
    if value.len() < 55 {
        return None;
    }
    let (version, trace, parent, flags) =
        (&value[0..2], &value[3..35], &value[36..52], &value[53..55]);
    let dashes = value[2] == b'-' && value[35] == b'-' && value[52] == b'-';
    let rest_ok = match version {
        b"00" => value.len() == 55,
        _ => value.len() == 55 || value[55] == b'-',
    };
    let valid = dashes
        && rest_ok
        && lower_hex(version)
        && version != b"ff"
        && lower_hex(trace)
        && !zeros(trace)
        && lower_hex(parent)
        && !zeros(parent)
        && lower_hex(flags);
    valid.then(|| {
        let mut id = [0; 32];
        id.copy_from_slice(trace);
        TraceId(id)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_gives_the_trace_id_only_when_valid() {
        let good = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(
            trace_id(good).map(|t| t.0),
            Some(*b"4bf92f3577b34da6a3ce929d0e0e4736")
        );
        let future = b"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra";
        assert!(trace_id(future).is_some());
        for bad in [
            &b"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"[..],
            b"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            b"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            b"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            b"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            b"",
        ] {
            assert!(trace_id(bad).is_none(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
