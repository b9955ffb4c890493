//! DiffServ marking of answers by traffic class (WS-QoS), checked on the packets
//! themselves: an `AF_PACKET` socket captures the server's TCP segments on loopback and the
//! test reads the TOS byte of each answer's segments. A connection's answers carry the code
//! point of their class (`q:TrafficClass`, or a `[[qos.client]]` rule), are re-marked when
//! the class changes, and keep the last marking for an answer without a class.
//!
//! Capturing needs `CAP_NET_RAW`: the tests run as root (as CI runs them).

use crate::support;

use lather_config::Config;
use lather_envelope::SoapVersion;
use lather_qos::CpuGauge;
use socket2::{Domain, Protocol, Socket, Type};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::*;

/// `ETH_P_ALL`, every protocol, in network byte order as `socket(2)` wants it.
const ETH_P_ALL: u16 = 0x0003;

fn capture() -> Socket {
    let socket = Socket::new(
        Domain::PACKET,
        Type::RAW,
        Some(Protocol::from(i32::from(ETH_P_ALL.to_be()))),
    )
    .expect("an AF_PACKET socket (needs CAP_NET_RAW: run the tests as root, as CI does)");
    socket
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    socket
}

/// The TOS bytes of the captured IPv4 TCP segments from `from_port` to `to_port` that
/// carry data, read until the capture is quiet.
fn tos_of_answers(capture: &Socket, from_port: u16, to_port: u16) -> Vec<u8> {
    let mut out = Vec::new();
    let mut frame = [0u8; 65_536];
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        let Ok(n) = (&*capture).read(&mut frame) else {
            break;
        };
        let frame = &frame[..n];
        // Ethernet header (loopback gives one of zeros), then IPv4.
        if n < 14 + 20 || frame[12..14] != [0x08, 0x00] {
            continue;
        }
        let ip = &frame[14..];
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        if ip[9] != 6 || ip.len() < ihl + 20 {
            continue;
        }
        let tcp = &ip[ihl..];
        let (src, dst) = (
            u16::from_be_bytes([tcp[0], tcp[1]]),
            u16::from_be_bytes([tcp[2], tcp[3]]),
        );
        let data = total.saturating_sub(ihl + usize::from(tcp[12] >> 4) * 4);
        if src == from_port && dst == to_port && data > 0 {
            out.push(ip[1]);
        }
    }
    out
}

/// Sends one request with traffic class `class` (none: no QoS header) on `stream` and
/// reads its answer.
fn exchange(stream: &mut TcpStream, class: Option<&str>) {
    let header = class.map_or_else(String::new, |c| {
        format!(r#"<q:QoS xmlns:q="urn:lather:qos"><q:TrafficClass>{c}</q:TrafficClass></q:QoS>"#)
    });
    let body = envelope(
        SoapVersion::V12,
        &header,
        r#"<ns:echo xmlns:ns="urn:lather:echo"><text>marked</text></ns:echo>"#,
    );
    write!(
        stream,
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/soap+xml; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the connection closed");
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got);
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap())
                })
                .expect("a Content-Length");
            if got.len() >= end + 4 + length {
                assert!(text.starts_with("HTTP/1.1 200"), "{text}");
                return;
            }
        }
    }
}

/// On one connection to `port`, one request per entry of `classes` in turn; the TOS bytes
/// of each answer's captured segments.
async fn marked_answers(port: u16, classes: Vec<Option<&'static str>>) -> Vec<Vec<u8>> {
    tokio::task::spawn_blocking(move || {
        let capture = capture();
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let client = stream.local_addr().unwrap().port();
        tos_of_answers(&capture, port, client);
        classes
            .into_iter()
            .map(|class| {
                exchange(&mut stream, class);
                tos_of_answers(&capture, port, client)
            })
            .collect()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_carry_their_class_code_point_and_are_re_marked_when_it_changes() {
    let config = Config::from_toml(
        "[server]\nlisten = \"127.0.0.1:0\"\n\
         [qos.class.gold]\ndscp = 46\n[qos.class.bulk]\ndscp = 10\n[qos.class.rule]\ndscp = 18\n\
         [[qos.client]]\npath = \"/echo\"\nclass = \"rule\"\n\
         [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n",
        "dscp.toml",
    )
    .unwrap();
    let server = TestServer::start_with_gauge(&config, CpuGauge::manual(0)).await;
    let classes = vec![Some("gold"), Some("bulk"), None, Some("unknown")];
    let result = marked_answers(server.addr.port(), classes.clone()).await;
    let expected = [
        (Some("gold"), 46u8 << 2),
        (Some("bulk"), 10 << 2),
        // No class stated: the [[qos.client]] rule's class.
        (None, 18 << 2),
        // A class not configured: the rule's too.
        (Some("unknown"), 18 << 2),
    ];
    for ((tos, class), (want_class, want)) in result.iter().zip(classes).zip(expected) {
        assert_eq!(class, want_class);
        assert!(!tos.is_empty(), "no answer segment captured for {class:?}");
        assert!(
            tos.iter().all(|t| *t == want),
            "{class:?}: TOS {tos:?}, expected {want:#x}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_classes_answers_are_not_marked() {
    let config = Config::from_toml(
        "[server]\nlisten = \"127.0.0.1:0\"\n[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n",
        "plain.toml",
    )
    .unwrap();
    let server = TestServer::start_with_gauge(&config, CpuGauge::manual(0)).await;
    let tos = marked_answers(server.addr.port(), vec![Some("gold")])
        .await
        .remove(0);
    assert!(!tos.is_empty());
    assert!(tos.iter().all(|t| *t == 0), "{tos:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_over_tls_are_marked_on_the_tcp_socket_under_it() {
    use support::pki::{TestCa, TlsClient, exchange, scratch, tls_server_toml, to_localhost};
    let dir = scratch("dscp");
    let ca = TestCa::new("test CA");
    let text = tls_server_toml(
        &dir,
        &ca.server("server", &[]),
        "",
        "[qos.class.gold]\ndscp = 46\n[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n",
    );
    let config = Config::from_toml(&text, "dscp-tls.toml").unwrap();
    let server = TestServer::start_with_gauge(&config, CpuGauge::manual(0)).await;
    let capture = capture();
    let client = TlsClient::new(&ca, None, &[b"http/1.1"]);
    let tls = client.connect(server.addr).await.unwrap();
    let local = tls.get_ref().0.local_addr().unwrap().port();
    let header = r#"<q:QoS xmlns:q="urn:lather:qos"><q:TrafficClass>gold</q:TrafficClass></q:QoS>"#;
    let request = to_localhost(
        soap_request(
            server.addr,
            "/echo",
            SoapVersion::V12,
            envelope(SoapVersion::V12, header, ECHO_PAYLOAD),
        ),
        server.addr.port(),
    );
    let got = exchange(tls, request).await.unwrap();
    assert_eq!(got.answer.status, 200, "{}", got.answer.text());
    let port = server.addr.port();
    let tos = tokio::task::spawn_blocking(move || tos_of_answers(&capture, port, local))
        .await
        .unwrap();
    // The handshake went out before any class was asked for; the answer carries gold's.
    assert!(tos.len() >= 2, "{tos:?}");
    assert_eq!(tos.first(), Some(&0), "{tos:?}");
    assert_eq!(tos.last(), Some(&(46u8 << 2)), "{tos:?}");
}
