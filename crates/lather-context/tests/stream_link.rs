//! A stream connection over loopback TCP: many requests in flight at once each get their
//! own reply, tokens are single-use, a far side that dies loses what was written, and a
//! connection that does not speak the format is closed.

use bytes::Bytes;
use lather_context::stream::{
    AcceptLimits, CodecLimits, Handoff, StreamLink, StreamLinkError, StreamLinkSettings,
    StreamMessage, StreamTokens, serve_connection,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Answers with the request's body reversed between `<r>` tags, after the number of
/// milliseconds the body names (`<n>` in `<w>n</w>`); a body of `<panic/>` panics.
struct Reverse;

impl Handoff for Reverse {
    fn handle(
        &self,
        target: Arc<str>,
        message: StreamMessage,
    ) -> Pin<Box<dyn Future<Output = (u16, StreamMessage)> + Send + 'static>> {
        Box::pin(async move {
            let text = String::from_utf8(message.body.to_vec()).unwrap();
            if text == "<panic/>" {
                panic!("asked to");
            }
            if let Some(ms) = text
                .strip_prefix("<w>")
                .and_then(|t| t.strip_suffix("</w>"))
                .and_then(|t| t.parse::<u64>().ok())
            {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            let reversed: String = text.chars().rev().collect();
            let body = format!(
                "<r t=\"{target}\">{}</r>",
                reversed.replace(['<', '>'], "_")
            );
            (
                200,
                StreamMessage {
                    headers: vec![("content-type".into(), Bytes::from_static(b"text/xml"))],
                    body: Bytes::from(body),
                },
            )
        })
    }
}

fn limits() -> AcceptLimits {
    AcceptLimits {
        codec: CodecLimits::default(),
        max_in_flight: 64,
        frame_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(30),
    }
}

fn settings() -> StreamLinkSettings {
    StreamLinkSettings {
        limits: CodecLimits::default(),
        max_in_flight: 64,
        handshake_timeout: Duration::from_secs(2),
    }
}

/// A far side accepting connections with `tokens`; its address.
async fn far(tokens: Arc<StreamTokens>) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let tokens = tokens.clone();
            tokio::spawn(async move {
                let never = std::future::pending();
                let _ = serve_connection(stream, &tokens, limits(), Arc::new(Reverse), never).await;
            });
        }
    });
    addr
}

fn request(body: &str) -> StreamMessage {
    StreamMessage {
        headers: vec![("soapaction".into(), Bytes::from_static(b"urn:x"))],
        body: Bytes::copy_from_slice(body.as_bytes()),
    }
}

#[tokio::test]
async fn requests_in_flight_together_each_get_their_own_reply() {
    let tokens = Arc::new(StreamTokens::new(Duration::from_secs(30), 16));
    let addr = far(tokens.clone()).await;
    let token = tokens.grant("/svc").unwrap();
    let link = Arc::new(
        StreamLink::open(TcpStream::connect(addr).await.unwrap(), &token, settings())
            .await
            .unwrap(),
    );
    // Later requests wait less, so replies come back out of order.
    let calls = (0..40).map(|i| {
        let link = link.clone();
        tokio::spawn(async move {
            let body = format!("<w>{}</w>", 40 - i);
            let (status, reply) = link.call(request(&body)).await.unwrap();
            (i, status, reply)
        })
    });
    for call in calls {
        let (i, status, reply) = call.await.unwrap();
        assert_eq!(status, 200);
        let want: String = format!("<w>{}</w>", 40 - i).chars().rev().collect();
        assert_eq!(
            reply.body,
            format!("<r t=\"/svc\">{}</r>", want.replace(['<', '>'], "_"))
        );
        assert_eq!(reply.headers[0].1, Bytes::from_static(b"text/xml"));
    }
}

#[tokio::test]
async fn a_token_opens_one_connection_only() {
    let tokens = Arc::new(StreamTokens::new(Duration::from_secs(30), 16));
    let addr = far(tokens.clone()).await;
    let token = tokens.grant("/svc").unwrap();
    StreamLink::open(TcpStream::connect(addr).await.unwrap(), &token, settings())
        .await
        .unwrap();
    let again = StreamLink::open(TcpStream::connect(addr).await.unwrap(), &token, settings()).await;
    assert!(again.unwrap_err().to_string().contains("refused"));
    let made_up =
        StreamLink::open(TcpStream::connect(addr).await.unwrap(), "0123", settings()).await;
    assert!(made_up.is_err());
}

#[tokio::test]
async fn an_expired_token_is_refused() {
    let tokens = Arc::new(StreamTokens::new(Duration::from_millis(50), 16));
    let addr = far(tokens.clone()).await;
    let token = tokens.grant("/svc").unwrap();
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert!(
        StreamLink::open(TcpStream::connect(addr).await.unwrap(), &token, settings())
            .await
            .is_err()
    );
}

#[test]
fn tokens_are_bounded() {
    let tokens = StreamTokens::new(Duration::from_secs(30), 2);
    assert!(tokens.grant("/a").is_some());
    assert!(tokens.grant("/a").is_some());
    assert!(tokens.grant("/a").is_none());
}

#[tokio::test]
async fn a_request_whose_handling_panics_is_refused_and_the_stream_lives_on() {
    let tokens = Arc::new(StreamTokens::new(Duration::from_secs(30), 16));
    let addr = far(tokens.clone()).await;
    let token = tokens.grant("/svc").unwrap();
    let link = StreamLink::open(TcpStream::connect(addr).await.unwrap(), &token, settings())
        .await
        .unwrap();
    let e = link.call(request("<panic/>")).await.unwrap_err();
    assert!(matches!(e, StreamLinkError::Refused(_)), "{e}");
    let (status, _) = link.call(request("<w>1</w>")).await.unwrap();
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_far_side_that_dies_loses_what_was_written_and_closes_the_link() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // A far side that accepts the preface, reads the first frame, and dies.
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut preface = [0u8; 64];
        let _ = s.read(&mut preface).await.unwrap();
        s.write_all(b"LSTR\x01\x00").await.unwrap();
        let mut frame = [0u8; 256];
        let _ = s.read(&mut frame).await;
        drop(s);
    });
    let link = StreamLink::open(TcpStream::connect(addr).await.unwrap(), "t", settings())
        .await
        .unwrap();
    let e = link.call(request("<a>1</a>")).await.unwrap_err();
    assert!(matches!(e, StreamLinkError::Lost), "{e}");
    assert!(link.is_closed());
    let e = link.call(request("<a>2</a>")).await.unwrap_err();
    assert!(matches!(e, StreamLinkError::Closed), "{e}");
}

#[tokio::test]
async fn a_connection_that_does_not_speak_the_format_is_closed() {
    let tokens = Arc::new(StreamTokens::new(Duration::from_secs(30), 16));
    let addr = far(tokens.clone()).await;
    let mut raw = TcpStream::connect(addr).await.unwrap();
    raw.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), raw.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the far side kept the connection open");
    assert!(answer.is_empty(), "{answer:?}");
    // A good preface, then a frame of an unknown kind: an ERROR frame, then the end.
    let token = tokens.grant("/svc").unwrap();
    let mut raw = TcpStream::connect(addr).await.unwrap();
    raw.write_all(&lather_context::stream::frame::preface(&token))
        .await
        .unwrap();
    raw.write_all(&[9, 0]).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), raw.read_to_end(&mut answer))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&answer[..6], b"LSTR\x01\x00");
    assert_eq!(answer[6], 5, "an ERROR frame: {answer:?}");
    assert!(String::from_utf8_lossy(&answer).contains("unknown frame kind"));
}

#[tokio::test]
async fn a_silent_connection_is_closed_after_the_frame_timeout() {
    let tokens = Arc::new(StreamTokens::new(Duration::from_secs(30), 16));
    let addr = far(tokens.clone()).await;
    let mut raw = TcpStream::connect(addr).await.unwrap();
    let mut answer = Vec::new();
    // limits(): frame_timeout 2 s.
    let read = tokio::time::timeout(Duration::from_secs(6), raw.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "a connection without a preface was kept open");
}
