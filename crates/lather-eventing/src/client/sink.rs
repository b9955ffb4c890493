//! A notification sink: a listener in one delivery binding (HTTP, `soap.tcp`, `lather.bin`)
//! that takes notifications and SubscriptionEnd messages, gzip-compressed or not (inflated
//! within a bound), and hands them out in arrival order.

use super::EventingClientError;
use crate::Binding;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use lather_envelope::{Element, Envelope, Limits, QName, WSA04_NS, WSA10_NS, WSE04_NS, WSE11_NS};
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Most bytes of one message taken.
const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// Messages waiting to be taken; beyond it the sink holds senders back.
const QUEUE: usize = 1024;

/// One notification as it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// Its `wsa:Action` (either addressing version), if any.
    pub action: Option<String>,
    /// The event: the Body's content as sent or, for a 2011 notification in the Wrap
    /// format, the event inside `wse:Notify` (and `action` is then its `actionURI`).
    pub body: String,
    /// Whether it came in the 2011 Wrap format (inside `wse:Notify`), unwrapped here.
    pub wrapped: bool,
    /// The header blocks outside WS-Addressing — the NotifyTo EPR's reference parameters
    /// echoed by the source — each standalone (lather's own `lev:EventStamp` left out).
    pub reference_parameters: Vec<String>,
}

/// A SubscriptionEnd as it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionEnded {
    /// The `Status` URI (e.g. `…/SourceShuttingDown`).
    pub status: String,
    /// The first `Reason` text.
    pub reason: String,
}

/// What the sink received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkMessage {
    /// An event.
    Notification(Notification),
    /// The source ended the subscription.
    End(SubscriptionEnded),
}

/// A listener for notifications and SubscriptionEnd: over HTTP at `/notify` and `/end`
/// (both paths take both kinds), or on one TCP port in a TCP binding (EndTo may then be
/// the NotifyTo address itself). It stops when dropped.
#[derive(Debug)]
pub struct Sink {
    address: SocketAddr,
    binding: Binding,
    messages: mpsc::Receiver<SinkMessage>,
    task: JoinHandle<()>,
}

impl Sink {
    /// Listens for HTTP on `address` (port 0 = any free port). Call within a tokio runtime.
    pub async fn bind(address: SocketAddr) -> Result<Sink, EventingClientError> {
        Sink::bind_in(address, Binding::Http).await
    }

    /// Listens on `address` in `binding`. Call within a tokio runtime.
    pub async fn bind_in(
        address: SocketAddr,
        binding: Binding,
    ) -> Result<Sink, EventingClientError> {
        let listener = TcpListener::bind(address)
            .await
            .map_err(|e| EventingClientError::Sink(format!("cannot listen on {address}: {e}")))?;
        let address = listener
            .local_addr()
            .map_err(|e| EventingClientError::Sink(e.to_string()))?;
        let (tx, messages) = mpsc::channel(QUEUE);
        let task = match binding {
            Binding::Http => tokio::spawn(accept(listener, tx)),
            _ => tokio::spawn(super::stream_sink::accept(listener, binding, tx)),
        };
        Ok(Sink {
            address,
            binding,
            messages,
            task,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// The address to give as NotifyTo (`http://…/notify`, `soap.tcp://host:port` or
    /// `lather.bin://host:port`).
    pub fn notify_url(&self) -> String {
        match self.binding {
            Binding::Http => format!("http://{}/notify", self.address),
            Binding::SoapTcp => format!("soap.tcp://{}", self.address),
            Binding::Binary => format!("lather.bin://{}", self.address),
        }
    }

    /// The address to give as EndTo (on a TCP binding the NotifyTo address: the
    /// SubscriptionEnd then comes last on the notifications' stream).
    pub fn end_url(&self) -> String {
        match self.binding {
            Binding::Http => format!("http://{}/end", self.address),
            _ => self.notify_url(),
        }
    }

    /// The next message, waiting for it; `None` once the listener has stopped.
    pub async fn next(&mut self) -> Option<SinkMessage> {
        self.messages.recv().await
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept(listener: TcpListener, tx: mpsc::Sender<SinkMessage>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let tx = tx.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| take(request, tx.clone()));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn answer(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_owned())));
    *response.status_mut() = status;
    response
}

async fn take(
    request: Request<Incoming>,
    tx: mpsc::Sender<SinkMessage>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let gzip = request
        .headers()
        .get(http::header::CONTENT_ENCODING)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
    let body = match Limited::new(request.into_body(), MAX_MESSAGE_BYTES)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) => return Ok(answer(StatusCode::BAD_REQUEST, &e.to_string())),
    };
    let body = if gzip {
        match crate::protocol::compression::gunzip(&body, MAX_MESSAGE_BYTES) {
            Ok(inflated) => Bytes::from(inflated),
            Err(why) => return Ok(answer(StatusCode::BAD_REQUEST, &why.to_string())),
        }
    } else {
        body
    };
    match read(body) {
        Ok(message) => {
            if tx.send(message).await.is_err() {
                return Ok(answer(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the sink is closed",
                ));
            }
            Ok(answer(StatusCode::ACCEPTED, ""))
        }
        Err(why) => Ok(answer(StatusCode::BAD_REQUEST, &why)),
    }
}

/// A received envelope as a sink message.
pub(crate) fn read(bytes: Bytes) -> Result<SinkMessage, String> {
    let limits = Limits {
        max_message_bytes: MAX_MESSAGE_BYTES,
        max_depth: 256,
        max_attributes: 256,
    };
    let envelope = Envelope::parse(bytes, &limits).map_err(|f| f.reason().to_owned())?;
    let action = [WSA10_NS, WSA04_NS].into_iter().find_map(|ns| {
        let block = envelope.header(&QName::new(ns, "Action"))?;
        envelope.header_text(block)
    });
    if let Some(ns) = end_namespace(&envelope, action.as_deref()) {
        let payload = envelope.extract_payload().unwrap_or_default();
        let element = Element::parse(&payload, &limits).map_err(|f| f.reason().to_owned())?;
        let text = |local: &str| {
            element
                .child(&QName::new(ns, local))
                .map(|e| e.text().trim().to_owned())
                .unwrap_or_default()
        };
        return Ok(SinkMessage::End(SubscriptionEnded {
            status: text("Status"),
            reason: text("Reason"),
        }));
    }
    let reference_parameters = envelope
        .headers()
        .iter()
        .filter(|h| !matches!(h.name().namespace(), WSA10_NS | WSA04_NS))
        .filter(|h| {
            !(h.name().namespace() == crate::LATHER_EVENTING_NS && h.name().local() == "EventStamp")
        })
        .map(|h| String::from_utf8_lossy(&envelope.extract_header(h)).into_owned())
        .collect();
    let body = envelope.extract_payload().unwrap_or_default();
    // Only a Body whose element is a wse:Notify is parsed to be unwrapped.
    let notify = envelope.operation() == Some(&QName::new(WSE11_NS, "Notify"));
    let (action, body, wrapped) = match notify.then(|| unwrap(&body)).flatten() {
        Some((inner_action, event)) => (inner_action.or(action), event, true),
        None => (action, body, false),
    };
    Ok(SinkMessage::Notification(Notification {
        action,
        body: String::from_utf8_lossy(&body).into_owned(),
        wrapped,
        reference_parameters,
    }))
}

/// A 2011 wrapped notification's event and the action it names: `payload` is
/// `<wse:Notify actionURI="…">event</wse:Notify>` (the Wrap format). `None` for anything
/// else, which is the event itself.
fn unwrap(payload: &[u8]) -> Option<(Option<String>, Bytes)> {
    let notify = Element::parse(payload, &Limits::default()).ok()?;
    if notify.name() != &QName::new(WSE11_NS, "Notify") {
        return None;
    }
    let action = notify
        .attribute(&QName::new("", "actionURI"))
        .map(|a| a.trim().to_owned());
    let event = notify
        .elements()
        .next()
        .and_then(|e| e.standalone(payload))
        .unwrap_or_default();
    Some((action, event))
}

/// The eventing namespace of a SubscriptionEnd, or `None` if `envelope` is not one: its
/// Body element is `wse:SubscriptionEnd`, or its `wsa:Action` is the SubscriptionEnd action
/// (Apache CXF 4.1 sends the right action around a Body element JAX-WS named after its
/// Java method, `{http://client.eventing.ws.cxf.apache.org/}subscriptionEnd`, whose
/// `Status` and `Reason` are still in the eventing namespace).
fn end_namespace(envelope: &Envelope, action: Option<&str>) -> Option<&'static str> {
    let by_body = envelope.operation().and_then(|op| {
        (op.local() == "SubscriptionEnd")
            .then(|| {
                [WSE04_NS, WSE11_NS]
                    .into_iter()
                    .find(|ns| op.namespace() == *ns)
            })
            .flatten()
    });
    by_body.or_else(|| {
        let action = action?.trim();
        [WSE04_NS, WSE11_NS].into_iter().find(|ns| {
            action
                .strip_prefix(ns)
                .is_some_and(|rest| rest == "/SubscriptionEnd")
        })
    })
}
