//! The benchmark sink's HTTP/1.1 side: a small receiver of pipelined POSTs. Every request
//! complete in what one read brought is consumed in order, and their `202 Accepted`
//! answers go back in one write — the way a sink built for throughput answers a publisher
//! that pipelines (RFC 9112 §9.3.2). Bodies need a `Content-Length` (lather's delivery and
//! its SubscriptionEnd both send one); anything else is answered `411` or `400` and the
//! connection closed. Heads are bounded to [`MAX_HEAD`] bytes, bodies to [`MAX_BODY`].

use bytes::{Bytes, BytesMut};
use std::future::Future;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest request head accepted.
pub(crate) const MAX_HEAD: usize = 16 * 1024;
/// Largest request body accepted.
pub(crate) const MAX_BODY: usize = 16 * 1024 * 1024;
/// Bytes asked for per read.
const READ_SIZE: usize = 64 * 1024;

const ACCEPTED: &[u8] = b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n";
const LENGTH_REQUIRED: &[u8] =
    b"HTTP/1.1 411 Length Required\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
const BAD_REQUEST: &[u8] =
    b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
const TOO_LARGE: &[u8] =
    b"HTTP/1.1 413 Content Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

/// One complete request found at the start of a buffer.
#[derive(Debug, PartialEq, Eq)]
enum Parsed {
    /// A request whose body is `body` (a range of the buffer); `used` bytes in all; whether
    /// the client asked to close after it.
    Request {
        body: std::ops::Range<usize>,
        used: usize,
        close: bool,
    },
    /// More bytes are needed.
    Partial,
    /// The connection must be answered with this and closed.
    Refuse(&'static [u8]),
}

/// Reads the request at the start of `buf`.
fn parse(buf: &[u8]) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut request = httparse::Request::new(&mut headers);
    let head = match request.parse(buf) {
        Ok(httparse::Status::Complete(head)) => head,
        Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => return Parsed::Partial,
        Ok(httparse::Status::Partial) | Err(_) => return Parsed::Refuse(BAD_REQUEST),
    };
    let mut length = None;
    let mut close = false;
    for header in request.headers.iter() {
        if header.name.eq_ignore_ascii_case("content-length") {
            let parsed = std::str::from_utf8(header.value)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok());
            match parsed {
                Some(n) if length.is_none_or(|l| l == n) => length = Some(n),
                _ => return Parsed::Refuse(BAD_REQUEST),
            }
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            return Parsed::Refuse(LENGTH_REQUIRED);
        } else if header.name.eq_ignore_ascii_case("connection") {
            close |= header.value.eq_ignore_ascii_case(b"close");
        }
    }
    let Some(length) = length else {
        return Parsed::Refuse(LENGTH_REQUIRED);
    };
    if length > MAX_BODY {
        return Parsed::Refuse(TOO_LARGE);
    }
    if buf.len() < head + length {
        return Parsed::Partial;
    }
    Parsed::Request {
        body: head..head + length,
        used: head + length,
        close,
    }
}

/// Serves one connection: calls `consume` with each request's body (and the time its
/// bytes were read, Unix ns) in order, answers 202 to each. Returns when the peer closes,
/// on an I/O error, or after a refused request.
pub(crate) async fn serve<F, Fut>(mut stream: TcpStream, mut consume: F)
where
    F: FnMut(Bytes, u64) -> Fut,
    Fut: Future<Output = ()>,
{
    // Read straight into `buf`; each body is split off it without a copy.
    let mut buf = BytesMut::with_capacity(READ_SIZE);
    let mut answers: Vec<u8> = Vec::with_capacity(4 * 1024);
    loop {
        if buf.capacity() - buf.len() < READ_SIZE / 4 {
            buf.reserve(READ_SIZE);
        }
        match stream.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let arrival = lather_eventing::unix_ns();
        let mut closing = None;
        loop {
            match parse(&buf) {
                Parsed::Request { body, used, close } => {
                    let request = buf.split_to(used).freeze();
                    consume(request.slice(body), arrival).await;
                    answers.extend_from_slice(ACCEPTED);
                    if close {
                        closing = Some(&[][..]);
                        break;
                    }
                }
                Parsed::Partial => break,
                Parsed::Refuse(answer) => {
                    closing = Some(answer);
                    break;
                }
            }
        }
        if let Some(last) = closing {
            answers.extend_from_slice(last);
        }
        if !answers.is_empty() {
            if stream.write_all(&answers).await.is_err() {
                return;
            }
            answers.clear();
        }
        if closing.is_some() {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(body: &str, extra: &str) -> String {
        format!(
            "POST /n HTTP/1.1\r\nHost: h\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
    }

    #[test]
    fn pipelined_requests_are_read_one_after_the_other() {
        let two = format!("{}{}", post("<a/>", ""), post("<bb/>", ""));
        let Parsed::Request { body, used, close } = parse(two.as_bytes()) else {
            panic!("first request not read");
        };
        assert_eq!(&two[body], "<a/>");
        assert!(!close);
        let rest = &two.as_bytes()[used..];
        let Parsed::Request { body, .. } = parse(rest) else {
            panic!("second request not read");
        };
        assert_eq!(&rest[body], b"<bb/>");
    }

    #[test]
    fn a_request_cut_short_waits_for_more_bytes() {
        let one = post("<event/>", "");
        assert_eq!(parse(&one.as_bytes()[..one.len() - 3]), Parsed::Partial);
        assert_eq!(parse(&one.as_bytes()[..10]), Parsed::Partial);
    }

    #[test]
    fn framing_it_cannot_use_is_refused_not_guessed() {
        let chunked = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n<a/>\r\n0\r\n\r\n";
        assert_eq!(parse(chunked.as_bytes()), Parsed::Refuse(LENGTH_REQUIRED));
        let none = "POST / HTTP/1.1\r\nHost: h\r\n\r\n";
        assert_eq!(parse(none.as_bytes()), Parsed::Refuse(LENGTH_REQUIRED));
        let two = "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab";
        assert_eq!(parse(two.as_bytes()), Parsed::Refuse(BAD_REQUEST));
        let huge = format!(
            "POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY + 1
        );
        assert_eq!(parse(huge.as_bytes()), Parsed::Refuse(TOO_LARGE));
        let endless_head = format!("POST / HTTP/1.1\r\nX: {}", "a".repeat(MAX_HEAD));
        assert_eq!(parse(endless_head.as_bytes()), Parsed::Refuse(BAD_REQUEST));
        assert_eq!(
            parse(b"\x00\x01garbage\r\n\r\n"),
            Parsed::Refuse(BAD_REQUEST)
        );
    }

    #[test]
    fn connection_close_is_honoured() {
        let one = post("<a/>", "Connection: close\r\n");
        assert!(matches!(
            parse(one.as_bytes()),
            Parsed::Request { close: true, .. }
        ));
    }

    #[tokio::test]
    async fn answers_every_pipelined_request_in_one_go_and_hands_bodies_in_order() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let mut got = Vec::new();
            serve(stream, |body, _| {
                got.push(body);
                async {}
            })
            .await;
            got
        });
        let mut client = TcpStream::connect(addr).await.unwrap();
        let requests = format!(
            "{}{}{}",
            post("<one/>", ""),
            post("<two/>", ""),
            post("<three/>", "Connection: close\r\n")
        );
        client.write_all(requests.as_bytes()).await.unwrap();
        let mut answers = Vec::new();
        client.read_to_end(&mut answers).await.unwrap();
        assert_eq!(answers, ACCEPTED.repeat(3));
        let got = server.await.unwrap();
        assert_eq!(got, vec!["<one/>", "<two/>", "<three/>"]);
    }
}
