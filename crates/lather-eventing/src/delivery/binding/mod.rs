//! Delivery bindings, chosen by the NotifyTo address scheme:
//!
//! - `http://…` — SOAP over HTTP/1.1 (the standard), one keep-alive connection per sink;
//!   `https://…` the same over TLS (verified against [`DeliveryPolicy::tls`]);
//! - `soap.tcp://host:port` — the same SOAP envelopes over one persistent TCP stream per
//!   subscription, each framed by a 4-byte big-endian length ([`tcp`]);
//! - `lather.bin://host:port` — compact binary frames over one persistent TCP stream per
//!   subscription ([`binary`]; layout in `docs/eventing-binary.md`).
//!
//! WS-BaseNotification subscriptions get the same notifications as over HTTP (the raw
//! event or a `wsnt:Notify`) on `soap.tcp`, and so do WS-Eventing 2011 subscriptions in
//! the Wrap format (`wse:Notify`); `lather.bin` frames carry the raw event.
//! gzip (`lev:Compression`) applies to every binding: HTTP's `Content-Encoding`, a flag in
//! the `soap.tcp` length prefix ([`tcp::GZIP_FLAG`]), a flag in the `lather.bin` frame
//! header ([`binary::FLAG_GZIP`]).
//!
//! Every binding retries with backoff and then gives the sink up (the source sends
//! SubscriptionEnd with DeliveryFailure). SubscriptionEnd goes in the binding of the EndTo
//! address (`end`).

pub mod binary;
pub(crate) mod end;
pub(crate) mod http;
mod http_request;
mod pipeline;
pub mod post;
pub(crate) mod soap;
pub mod tcp;
pub(crate) mod wire;

use crate::Subscription;
use crate::delivery::address_policy::DeliveryPolicy;
use crate::delivery::sink_queue::Queued;
use crate::delivery::{DeliveryError, RetryPolicy};
pub use crate::protocol::address::{Binding, SUPPORTED_SCHEMES};

/// A TCP connection to a sink's `authority` (`host:port`) within `timeout`, with Nagle off
/// (notifications are small and go out as soon as they are ready), to an address `guard`
/// allows (checked after resolving: [`DeliveryPolicy`]).
pub(crate) async fn connect(
    authority: &str,
    timeout: std::time::Duration,
    guard: &DeliveryPolicy,
    publish: bool,
) -> Result<tokio::net::TcpStream, DeliveryError> {
    guard.connect(authority, timeout, publish).await
}

/// A sink's connection in its binding.
#[derive(Debug)]
pub(crate) enum Connection {
    Http(Box<http::HttpSink>),
    Stream(Box<tcp::StreamSink>),
}

impl Connection {
    /// The connection for `sub`'s NotifyTo (not yet connected). Notifications of at least
    /// `gzip_from` bytes are sent gzip-compressed, in every binding.
    /// An HTTP sink has at most `window` notifications written and unanswered. Every
    /// connection goes to an address `guard` allows.
    pub(crate) fn open(
        sub: &Subscription,
        policy: RetryPolicy,
        gzip_from: Option<usize>,
        window: usize,
        guard: &DeliveryPolicy,
    ) -> Connection {
        let address = &sub.notify_to.address;
        match Binding::of(address) {
            Some(Binding::SoapTcp) => Connection::Stream(Box::new(tcp::StreamSink::new(
                sub,
                tcp::Encoding::SoapLengthPrefixed(soap::Template::new(sub)),
                policy,
                gzip_from,
                guard.clone(),
            ))),
            Some(Binding::Binary) => Connection::Stream(Box::new(tcp::StreamSink::new(
                sub,
                tcp::Encoding::Binary(binary::SubscriptionPart::new(sub)),
                policy,
                gzip_from,
                guard.clone(),
            ))),
            // Subscribe refuses other schemes; a stored one from before is tried as HTTP.
            _ => Connection::Http(Box::new(http::HttpSink::new(
                sub,
                policy,
                gzip_from,
                window,
                guard.clone(),
            ))),
        }
    }

    /// Hands `batch` over in order (leaving it empty), calling `ready` with the
    /// notifications whose bytes are about to go out (once each): written on a TCP
    /// binding's stream; written on an HTTP sink's connection, with the answers to come
    /// ([`Connection::answer`]). An error means every retry failed.
    pub(crate) async fn deliver(
        &mut self,
        batch: &mut Vec<Queued>,
        ready: &(dyn Fn(&[Queued]) + Send + Sync),
    ) -> Result<(), DeliveryError> {
        match self {
            Connection::Http(sink) => sink.send(batch, ready).await,
            Connection::Stream(sink) => {
                let written = sink.deliver(batch, ready).await;
                batch.clear();
                written
            }
        }
    }

    /// Whether notifications wait for their answers (HTTP).
    pub(crate) fn unsettled(&self) -> bool {
        match self {
            Connection::Http(sink) => sink.unsettled(),
            Connection::Stream(_) => false,
        }
    }

    /// The notifications handed over and not yet let go (written and unanswered, HTTP),
    /// and their bytes; none on a TCP binding once a batch is written.
    pub(crate) fn held(&self) -> (usize, u64) {
        match self {
            Connection::Http(sink) => sink.held(),
            Connection::Stream(_) => (0, 0),
        }
    }

    /// Whether so many notifications wait for answers that no more should be taken.
    pub(crate) fn window_full(&self) -> bool {
        match self {
            Connection::Http(sink) => sink.window_full(),
            Connection::Stream(_) => false,
        }
    }

    /// The next answers, or an error once one is overdue (HTTP; never on a TCP binding).
    /// Cancel-safe.
    pub(crate) async fn answer(&mut self) -> Result<http::Answered, DeliveryError> {
        match self {
            Connection::Http(sink) => sink.answer().await,
            Connection::Stream(_) => std::future::pending().await,
        }
    }

    /// Takes an answer or a failure (see `http::HttpSink::on_answer`), telling `held`
    /// what the sink still holds before it waits for a new connection.
    pub(crate) async fn on_answer(
        &mut self,
        answer: Result<http::Answered, DeliveryError>,
        ready: &(dyn Fn(&[Queued]) + Send + Sync),
        held: &(dyn Fn(usize, u64) + Send + Sync),
    ) -> Result<(), DeliveryError> {
        match self {
            Connection::Http(sink) => sink.on_answer(answer, ready, held).await,
            Connection::Stream(_) => Ok(()),
        }
    }

    /// Writes `bytes` (the subscription's SubscriptionEnd frame) as the last thing on a TCP
    /// binding's stream and closes it; an HTTP connection carries no such frame.
    pub(crate) async fn finish(&mut self, bytes: &[u8]) -> Result<(), DeliveryError> {
        match self {
            Connection::Http(_) => Err(DeliveryError::Refused(
                "SubscriptionEnd goes by HTTP POST, not on the sink's connection".into(),
            )),
            Connection::Stream(sink) => sink.write_last(bytes).await,
        }
    }
}
