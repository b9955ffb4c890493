//! `lather-bench eventing-sink`: one subscriber process. It listens on loopback in one
//! binding, prints `LISTEN <addr>`, and for each notification records when it arrived
//! (arrival − publish time = publisher-to-sink latency) and how long consuming it took:
//! parsing (the envelope or frame and the event's fields), verifying the authentication
//! header and fetching the reference data, as configured. It stops once it has
//! `--expect` notifications, or its stdin is closed and nothing arrived for 300 ms, or
//! after `--max-secs`; then prints its record as one JSON line.

use super::BindingArg;
use super::epe::{self, AUTH, NS, REF};
use crate::BenchError;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use lather_envelope::{Element, Envelope, Limits, QName};
use lather_eventing::binding::{binary, tcp};
use lather_eventing::{LATHER_EVENTING_NS, unix_ns};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

/// Arguments of the hidden `lather-bench eventing-sink`.
#[derive(Debug, Clone, clap::Args)]
pub struct EventingSinkArgs {
    /// The binding to receive in
    #[arg(long, value_enum)]
    pub binding: BindingArg,
    /// Address to listen on
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: String,
    /// Stop after this many notifications (0: no count)
    #[arg(long, default_value_t = 0)]
    pub expect: u64,
    /// Verify the authentication header with this key
    #[arg(long)]
    pub auth_key: Option<String>,
    /// Fetch each notification's reference-data URL
    #[arg(long)]
    pub fetch_refs: bool,
    /// Longest run, seconds
    #[arg(long, default_value_t = 120)]
    pub max_secs: u64,
}

/// What a sink reports.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct SinkRecord {
    /// Publisher-to-sink latency per notification, µs.
    pub(crate) to_sink_us: Vec<u32>,
    /// Consuming time per notification, µs.
    pub(crate) client_us: Vec<u32>,
    /// Notifications whose authentication header was missing or wrong.
    pub(crate) auth_failed: u64,
    /// Notifications whose reference data could not be fetched (or was short).
    pub(crate) ref_failed: u64,
    /// Notifications that could not be read at all.
    pub(crate) unreadable: u64,
    /// Last arrival, Unix ns.
    pub(crate) last_arrival_ns: u64,
}

impl SinkRecord {
    /// A record with room for `expect` notifications (bounded), so that it does not grow
    /// (and copy itself into freshly faulted pages) while notifications arrive.
    fn expecting(expect: u64) -> SinkRecord {
        let room = usize::try_from(expect).unwrap_or(usize::MAX).min(1 << 22);
        SinkRecord {
            to_sink_us: Vec::with_capacity(room),
            client_us: Vec::with_capacity(room),
            ..SinkRecord::default()
        }
    }
}

/// The header names a sink reads from every notification, made once.
struct Names {
    stamp: QName,
    published: QName,
    auth: QName,
    reference: QName,
}

impl Names {
    fn new() -> Names {
        Names {
            stamp: QName::new(LATHER_EVENTING_NS, "EventStamp"),
            published: QName::new("", "published"),
            auth: QName::new(NS, AUTH),
            reference: QName::new(NS, REF),
        }
    }
}

struct Shared {
    record: Mutex<SinkRecord>,
    names: Names,
    key: Option<Vec<u8>>,
    fetch: Option<Client<HttpConnector, Empty<Bytes>>>,
    last: Mutex<Instant>,
}

/// Runs the sink (on a single-threaded runtime: many sinks share the cores).
pub fn run(args: &EventingSinkArgs) -> Result<(), BenchError> {
    let fail = |e: std::io::Error| BenchError::Experiment(format!("sink: {e}"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(fail)?;
    runtime.block_on(async {
        let listener = TcpListener::bind(&args.listen).await.map_err(fail)?;
        println!("LISTEN {}", listener.local_addr().map_err(fail)?);
        let shared = Arc::new(Shared {
            record: Mutex::new(SinkRecord::expecting(args.expect)),
            names: Names::new(),
            key: args.auth_key.as_ref().map(|k| k.as_bytes().to_vec()),
            fetch: args.fetch_refs.then(|| {
                let mut c = HttpConnector::new();
                c.set_nodelay(true);
                Client::builder(TokioExecutor::new()).build(c)
            }),
            last: Mutex::new(Instant::now()),
        });
        let binding = args.binding;
        let accepting = shared.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                let shared = accepting.clone();
                tokio::spawn(async move {
                    match binding {
                        BindingArg::Http => serve_http(stream, shared).await,
                        BindingArg::SoapTcp | BindingArg::Binary => {
                            read_stream(stream, binding, shared).await
                        }
                    }
                });
            }
        });
        let closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = closed.clone();
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let started = Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let count = lock(&shared.record).to_sink_us.len() as u64;
            let idle = lock(&shared.last).elapsed();
            if (args.expect > 0 && count >= args.expect)
                || (closed.load(std::sync::atomic::Ordering::SeqCst)
                    && idle > Duration::from_millis(300))
                || started.elapsed() > Duration::from_secs(args.max_secs)
            {
                break;
            }
        }
        let record = std::mem::take(&mut *lock(&shared.record));
        let line = serde_json::to_string(&record)
            .map_err(|e| BenchError::Experiment(format!("sink record: {e}")))?;
        println!("{line}");
        Ok(())
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn serve_http(stream: tokio::net::TcpStream, shared: Arc<Shared>) {
    super::http_receiver::serve(stream, |bytes, arrival| {
        let shared = shared.clone();
        async move { consume_soap(&shared, bytes, arrival).await }
    })
    .await;
}

async fn read_stream(mut stream: tokio::net::TcpStream, binding: BindingArg, shared: Arc<Shared>) {
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let arrival = unix_ns();
        buf.extend_from_slice(&chunk[..n]);
        let mut at = 0;
        loop {
            let rest = &buf[at..];
            let used = match binding {
                BindingArg::Binary => match binary::decode_message(rest) {
                    Ok(Some((binary::BinaryMessage::Notification(frame), used))) => {
                        consume_frame(&shared, frame, arrival).await;
                        used
                    }
                    // A SubscriptionEnd frame: nothing to measure.
                    Ok(Some((binary::BinaryMessage::End(_), used))) => used,
                    Ok(None) => break,
                    Err(_) => {
                        lock(&shared.record).unreadable += 1;
                        return;
                    }
                },
                // Plain or gzip-compressed envelopes (inflated within the frame maximum).
                _ => match tcp::decode_soap_frame(rest) {
                    Ok(Some((envelope, used))) => {
                        let bytes = Bytes::copy_from_slice(&envelope);
                        consume_soap(&shared, bytes, arrival).await;
                        used
                    }
                    Ok(None) => break,
                    Err(_) => {
                        lock(&shared.record).unreadable += 1;
                        return;
                    }
                },
            };
            at += used;
        }
        buf.drain(..at);
    }
}

fn limits() -> Limits {
    Limits {
        max_message_bytes: 16 * 1024 * 1024,
        max_depth: 64,
        max_attributes: 64,
    }
}

/// Reads a SOAP notification: the stamp, the event's fields, the EPE headers.
async fn consume_soap(shared: &Shared, bytes: Bytes, arrival: u64) {
    let start = Instant::now();
    let Ok(envelope) = Envelope::parse(bytes, &limits()) else {
        lock(&shared.record).unreadable += 1;
        return;
    };
    let names = &shared.names;
    let published = envelope
        .header(&names.stamp)
        .and_then(|block| envelope.header_attribute(block, &names.published))
        .and_then(|p| p.parse::<u64>().ok());
    let text = |name: &QName| envelope.header(name).and_then(|b| envelope.header_text(b));
    let auth = text(&names.auth);
    let reference = text(&names.reference);
    let payload = envelope.body();
    finish(shared, published, &payload, auth, reference, arrival, start).await;
}

/// Reads a binary frame: its fields, the event's fields.
async fn consume_frame(shared: &Shared, frame: binary::Frame, arrival: u64) {
    let start = Instant::now();
    let field = |local: &str| {
        let name = format!("{{{NS}}}{local}");
        frame
            .fields
            .iter()
            .find(|f| f.kind == binary::FieldKind::Header && f.name == name)
            .map(|f| f.value.clone())
    };
    let auth = field(AUTH);
    let reference = field(REF);
    finish(
        shared,
        Some(frame.published_ns),
        &frame.payload,
        auth,
        reference,
        arrival,
        start,
    )
    .await;
}

/// The common consumption: the event's fields, then the EPEs; records the notification.
async fn finish(
    shared: &Shared,
    published: Option<u64>,
    payload: &[u8],
    auth: Option<String>,
    reference: Option<String>,
    arrival: u64,
    start: Instant,
) {
    let fields = Element::parse(payload, &limits())
        .map(|quote| quote.elements().map(|f| f.text().len()).sum::<usize>())
        .ok();
    let auth_ok = match &shared.key {
        Some(key) => auth.is_some_and(|h| epe::verify(key, payload, &h)),
        None => true,
    };
    let ref_ok = match (&shared.fetch, reference) {
        (Some(client), Some(url)) => fetch(client, &url).await,
        (Some(_), None) => false,
        (None, _) => true,
    };
    let client_us = start.elapsed().as_micros();
    let mut record = lock(&shared.record);
    let (Some(published), Some(_)) = (published, fields) else {
        record.unreadable += 1;
        return;
    };
    record.auth_failed += u64::from(!auth_ok);
    record.ref_failed += u64::from(!ref_ok);
    let to_sink = arrival.saturating_sub(published) / 1000;
    record
        .to_sink_us
        .push(u32::try_from(to_sink).unwrap_or(u32::MAX));
    record
        .client_us
        .push(u32::try_from(client_us).unwrap_or(u32::MAX));
    record.last_arrival_ns = record.last_arrival_ns.max(arrival);
    drop(record);
    *lock(&shared.last) = Instant::now();
}

/// GETs `url`; true if 4 or more bytes came back.
async fn fetch(client: &Client<HttpConnector, Empty<Bytes>>, url: &str) -> bool {
    let Ok(uri) = url.parse::<http::Uri>() else {
        return false;
    };
    let Ok(Ok(response)) = tokio::time::timeout(Duration::from_secs(5), client.get(uri)).await
    else {
        return false;
    };
    response
        .into_body()
        .collect()
        .await
        .is_ok_and(|b| b.to_bytes().len() >= 4)
}
