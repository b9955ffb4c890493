//! gzip over the TCP bindings, on real loopback sockets: with `lev:Compression` gzip a
//! notification from the threshold on is sent compressed — the `soap.tcp` length prefix's
//! top bit, the `lather.bin` header's flag — and decodes to the same event; a smaller one
//! stays byte-for-byte plain; lather's sink inflates them (also over HTTP) and refuses a
//! zip bomb frame by closing the connection.

use crate::support;

use flate2::Compression;
use flate2::write::GzEncoder;
use lather_eventing::binding::binary::{self, FLAG_GZIP};
use lather_eventing::binding::tcp::{GZIP_FLAG, decode_soap_frame, split_length_prefixed};
use lather_eventing::client::{Sink, SinkMessage};
use lather_eventing::{Binding, EventSource, SourceSettings};
use std::io::Write;
use std::time::Duration;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const GZIP: &str = r#"<lev:Compression xmlns:lev="urn:lather:eventing">gzip</lev:Compression>"#;

/// The event's payload as the Body of `envelope`.
fn body_of(bytes: &[u8]) -> Vec<u8> {
    envelope(bytes).extract_payload().unwrap().to_vec()
}

#[tokio::test]
async fn soap_tcp_compresses_from_the_threshold_on_and_flags_the_length() {
    let source = EventSource::open(SourceSettings::allowing_loopback()).unwrap();
    let (addr, mut rx) = raw_sink().await;
    source
        .handle(
            &subscribe(WSE11, &format!("soap.tcp://{addr}"), None, GZIP, ""),
            "http://h/e",
        )
        .await
        .unwrap();
    assert_eq!(source.publish_event(event(1, 8000)), 1);
    assert_eq!(source.publish_event(event(2, 10)), 1);
    // Raw frames: the length prefix and what follows it.
    let raw: Vec<(u32, Vec<u8>)> = frames(&mut rx, 2, |buf| {
        let prefix = u32::from_be_bytes(buf.get(..4)?.try_into().ok()?);
        let len = (prefix & !GZIP_FLAG) as usize;
        let frame = buf.get(..4 + len)?;
        Some(((prefix, frame.to_vec()), 4 + len))
    })
    .await;
    let (big_prefix, big) = &raw[0];
    assert_ne!(big_prefix & GZIP_FLAG, 0, "the big one is flagged");
    assert!(big.len() < 8000 / 4, "and compressed: {} bytes", big.len());
    let (envelope_bytes, used) = decode_soap_frame(big).unwrap().unwrap();
    assert_eq!(used, big.len());
    assert!(is_event(&body_of(&envelope_bytes), 1, 8000));
    // The small one is exactly a frame from before compression existed.
    let (small_prefix, small) = &raw[1];
    assert_eq!(small_prefix & GZIP_FLAG, 0);
    let (plain, _) = split_length_prefixed(small).unwrap().unwrap();
    assert!(is_event(&body_of(plain), 2, 10));
}

#[tokio::test]
async fn lather_bin_compresses_from_the_threshold_on_and_flags_the_header() {
    let source = EventSource::open(SourceSettings::allowing_loopback()).unwrap();
    let (addr, mut rx) = raw_sink().await;
    source
        .handle(
            &subscribe(WSE04, &format!("lather.bin://{addr}"), None, GZIP, ""),
            "http://h/e",
        )
        .await
        .unwrap();
    assert_eq!(source.publish_event(event(1, 8000)), 1);
    assert_eq!(source.publish_event(event(2, 10)), 1);
    let raw: Vec<Vec<u8>> = frames(&mut rx, 2, |buf| {
        let len = u32::from_be_bytes(buf.get(4..8)?.try_into().ok()?) as usize;
        Some((buf.get(..8 + len)?.to_vec(), 8 + len))
    })
    .await;
    assert_eq!(raw[0][3], FLAG_GZIP);
    assert!(
        raw[0].len() < 8000 / 4,
        "compressed: {} bytes",
        raw[0].len()
    );
    let (big, _) = binary::decode(&raw[0]).unwrap().unwrap();
    assert!(big.payload == payload(1, 8000), "the same event");
    assert_eq!(big.action, "urn:q:Quote");
    assert_eq!(big.fields[0].value, "42");
    assert_eq!(raw[1][3], 0, "the small one is plain");
    let (small, _) = binary::decode(&raw[1]).unwrap().unwrap();
    assert_eq!(small.payload, payload(2, 10));
}

#[tokio::test]
async fn lathers_sink_inflates_compressed_notifications_in_every_binding() {
    for binding in [Binding::Http, Binding::SoapTcp, Binding::Binary] {
        let source = EventSource::open(SourceSettings::allowing_loopback()).unwrap();
        let mut sink = Sink::bind_in("127.0.0.1:0".parse().unwrap(), binding)
            .await
            .unwrap();
        source
            .handle(
                &subscribe(WSE11, &sink.notify_url(), None, GZIP, ""),
                "http://h/e",
            )
            .await
            .unwrap();
        for (n, filler) in [(1, 6000), (2, 10)] {
            assert_eq!(source.publish_event(event(n, filler)), 1);
            let got = tokio::time::timeout(Duration::from_secs(5), sink.next())
                .await
                .expect("in time")
                .unwrap();
            let SinkMessage::Notification(note) = got else {
                panic!("{got:?}")
            };
            assert!(is_event(note.body.as_bytes(), n, filler), "{binding:?}");
            assert_eq!(note.action.as_deref(), Some("urn:q:Quote"));
        }
    }
}

/// gzip of 20 MiB of zeros: about 20 KB that inflate beyond any frame's maximum (16 MiB).
fn bomb() -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    let zeros = vec![0u8; 1024 * 1024];
    for _ in 0..20 {
        gz.write_all(&zeros).unwrap();
    }
    let bomb = gz.finish().unwrap();
    assert!(bomb.len() < 64 * 1024);
    bomb
}

#[tokio::test]
async fn a_zip_bomb_frame_is_refused_by_the_sink() {
    let bomb = bomb();
    for binding in [Binding::SoapTcp, Binding::Binary] {
        let mut sink = Sink::bind_in("127.0.0.1:0".parse().unwrap(), binding)
            .await
            .unwrap();
        let mut frame = Vec::new();
        if binding == Binding::SoapTcp {
            frame.extend_from_slice(&(bomb.len() as u32 | GZIP_FLAG).to_be_bytes());
        } else {
            frame.extend_from_slice(&[b'L', b'B', 1, FLAG_GZIP]);
            frame.extend_from_slice(&(bomb.len() as u32).to_be_bytes());
        }
        frame.extend_from_slice(&bomb);
        let mut stream = TcpStream::connect(sink.local_addr()).await.unwrap();
        stream.write_all(&frame).await.unwrap();
        // The sink closes the connection without a message.
        let mut rest = [0u8; 16];
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut rest))
            .await
            .expect("the sink closes the connection");
        assert!(matches!(read, Ok(0) | Err(_)), "{binding:?}: {read:?}");
        // It still takes good notifications, and the bomb left nothing before them.
        let source = EventSource::open(SourceSettings::allowing_loopback()).unwrap();
        source
            .handle(
                &subscribe(WSE11, &sink.notify_url(), None, "", ""),
                "http://h/e",
            )
            .await
            .unwrap();
        assert_eq!(source.publish_event(event(9, 10)), 1);
        let got = tokio::time::timeout(Duration::from_secs(5), sink.next())
            .await
            .unwrap()
            .unwrap();
        let SinkMessage::Notification(note) = got else {
            panic!("{got:?}")
        };
        assert!(is_event(note.body.as_bytes(), 9, 10), "{}", note.body);
    }
}
