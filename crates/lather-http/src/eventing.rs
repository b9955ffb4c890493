//! The `event-source` builtin as a service: WS-Eventing and WS-BaseNotification requests at
//! the service's path (source and subscription manager in one), events published at
//! `{path}/publish` or as a `wsnt:Notify` to the path.

use bytes::Bytes;
use lather_envelope::{Envelope, Fault, QName, WSA04_NS, WSA10_NS};
use lather_eventing::{EventSource, LATHER_EVENTING_NS};
use lather_pipeline::{Identity, Reply, ServiceFuture, ServiceRequest, SoapService};

/// The path events are published at, below an event source's path.
pub(crate) const PUBLISH_SUFFIX: &str = "/publish";

/// Header blocks an event source processes beside echo's (`wsa:MessageID`): the addressing
/// headers it reads and the subscription identifiers and publish topic.
const UNDERSTOOD: [(&str, &str); 9] = [
    (WSA10_NS, "Action"),
    (WSA10_NS, "To"),
    (WSA10_NS, "ReplyTo"),
    (WSA04_NS, "Action"),
    (WSA04_NS, "To"),
    (WSA04_NS, "ReplyTo"),
    (lather_envelope::WSE04_NS, "Identifier"),
    (LATHER_EVENTING_NS, "Identifier"),
    (LATHER_EVENTING_NS, "Topic"),
];

/// An event source served at a path.
#[derive(Debug, Clone)]
pub struct EventSourceService {
    source: EventSource,
}

impl EventSourceService {
    /// Serves `source`.
    pub fn new(source: EventSource) -> Self {
        EventSourceService { source }
    }

    /// The event source.
    pub fn source(&self) -> &EventSource {
        &self.source
    }
}

impl SoapService for EventSourceService {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        Box::pin(respond(&self.source, request))
    }

    fn understood(&self) -> Vec<QName> {
        crate::echo::UNDERSTOOD
            .iter()
            .chain(UNDERSTOOD.iter())
            .map(|(ns, local)| QName::new(*ns, *local))
            .collect()
    }

    fn subpaths(&self) -> Vec<String> {
        vec![PUBLISH_SUFFIX.to_owned()]
    }
}

/// Answers one message to an event source: a publish (at `{path}/publish`) or an eventing
/// request.
async fn respond(source: &EventSource, request: ServiceRequest<'_>) -> Result<Reply, Fault> {
    let envelope = &request.envelope;
    let version = envelope.version();
    if request.subpath == Some(PUBLISH_SUFFIX) {
        let action = request
            .context
            .action
            .as_deref()
            .filter(|a| !a.is_empty())
            .map(str::to_owned)
            .or_else(|| wsa_action(envelope));
        // Queued in memory only (`durable="false"`): a crash loses what is queued and not
        // yet delivered (docs/eventing.md "Durability"). A publish beyond the source's
        // byte bound is refused (PublishQueueFull, 503 with Retry-After).
        let queued = source.publish(envelope, action.as_deref())?;
        let body = format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="{}"><s:Body><lev:Published xmlns:lev="{LATHER_EVENTING_NS}" queued="{queued}" durable="false"/></s:Body></s:Envelope>"#,
            version.namespace()
        );
        return Ok(Reply::Written(version, Bytes::from(body)));
    }
    // The subscriber identity for the per-identity quota: the authenticated identity a
    // handler set (e.g. wsse-username), else the client's address.
    let address;
    let identity = match request.context.properties.get::<Identity>() {
        Some(identity) => Some(identity.name()),
        None => {
            address = request.context.client.map(|ip| ip.to_string());
            address.as_deref()
        }
    };
    let manager = request.location.get();
    let answer = source.handle_for(envelope, &manager, identity).await?;
    if answer.is_empty() {
        // A one-way message (wsnt:Notify): accepted, nothing to answer.
        return Ok(Reply::Accepted);
    }
    Ok(Reply::Written(version, answer))
}

/// The request's `wsa:Action`, in either addressing version.
fn wsa_action(envelope: &Envelope) -> Option<String> {
    [WSA10_NS, WSA04_NS].into_iter().find_map(|block_ns| {
        let block = envelope.header(&QName::new(block_ns, "Action"))?;
        envelope.header_text(block)
    })
}
