//! Metrics read at scrape time from message streams: how each gateway's messages went
//! (on a stream, or plain SOAP/HTTP and why), its negotiations, and the receiving side's
//! connections.

use crate::service::Service;
use crate::stream_acceptor::StreamAcceptor;
use lather_context::stream::SenderStats;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A label value and the counter it reads.
type Way = (&'static str, fn(&SenderStats) -> &AtomicU64);

/// How a gateway's messages went, by label value.
const WAYS: [Way; 5] = [
    ("stream", |s| &s.streamed),
    ("plain_no_stream", |s| &s.plain_no_stream),
    ("plain_shape", |s| &s.plain_shape),
    ("plain_closed", |s| &s.plain_closed),
    ("lost", |s| &s.lost),
];

/// Reads the streams' counters.
#[derive(Debug)]
pub(crate) struct StreamCollector {
    services: Vec<Arc<Service>>,
    acceptor: Option<Arc<StreamAcceptor>>,
}

impl StreamCollector {
    pub(crate) fn new(services: Vec<Arc<Service>>, acceptor: Option<Arc<StreamAcceptor>>) -> Self {
        StreamCollector { services, acceptor }
    }
}

impl Collector for StreamCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let senders: Vec<_> = self
            .services
            .iter()
            .filter_map(|s| Some((s.name.as_str(), s.stream_sender.as_ref()?.stats())))
            .collect();
        if !senders.is_empty() {
            let mut metric = encoder.encode_descriptor(
                "stream_messages",
                "Gateway messages by the way they went: on a message stream, or plain SOAP/HTTP because no stream was open, the message did not fit, or the stream closed; lost: written to a stream lost before the answer",
                None,
                MetricType::Counter,
            )?;
            for (service, stats) in &senders {
                for (way, field) in WAYS {
                    let value = field(stats).load(Ordering::Relaxed);
                    ConstCounter::new(value)
                        .encode(metric.encode_family(&[("service", *service), ("way", way)])?)?;
                }
            }
            let mut metric = encoder.encode_descriptor(
                "stream_negotiations",
                "Message stream negotiations by outcome (opened, or refused: the peer refused, is not lather, or could not be reached)",
                None,
                MetricType::Counter,
            )?;
            for (service, stats) in &senders {
                for (outcome, value) in [("opened", &stats.opened), ("refused", &stats.refused)] {
                    ConstCounter::new(value.load(Ordering::Relaxed)).encode(
                        metric.encode_family(&[("service", *service), ("outcome", outcome)])?,
                    )?;
                }
            }
        }
        if let Some(acceptor) = &self.acceptor {
            let mut metric = encoder.encode_descriptor(
                "stream_connections",
                "Message stream connections accepted here, by how they ended (served: cleanly; failed: refused or ended by an error)",
                None,
                MetricType::Counter,
            )?;
            for (outcome, value) in [("served", &acceptor.served), ("failed", &acceptor.failed)] {
                ConstCounter::new(value.load(Ordering::Relaxed))
                    .encode(metric.encode_family(&[("outcome", outcome)])?)?;
            }
            let mut metric = encoder.encode_descriptor(
                "stream_bytes",
                "Bytes of message stream connections accepted here, by direction (in: read, out: written), frames and prefaces included",
                None,
                MetricType::Counter,
            )?;
            let bytes = &acceptor.bytes;
            for (direction, value) in [("in", &bytes.read), ("out", &bytes.written)] {
                ConstCounter::new(value.load(Ordering::Relaxed))
                    .encode(metric.encode_family(&[("direction", direction)])?)?;
            }
        }
        Ok(())
    }
}
