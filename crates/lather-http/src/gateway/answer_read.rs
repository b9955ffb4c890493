//! Reading one HTTP/1.1 answer off an upstream connection: the head (1xx interim answers
//! skipped), then the body as its framing says — `Content-Length`, chunked, or up to the
//! close — collected whole within a size bound.

use super::headers::{hop_by_hop, list_items};
use bytes::{Buf, Bytes, BytesMut};
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Method, StatusCode};
use std::io;
use std::mem::MaybeUninit;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Largest answer head read (status line and headers), in bytes.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Most headers in an answer.
const MAX_HEADERS: usize = 100;
/// Longest chunk-size line (with extensions) or trailer line, in bytes.
const MAX_LINE_BYTES: usize = 4096;
/// What one read asks for at least.
const READ_BYTES: usize = 8 * 1024;

/// An answer as read: status, end-to-end headers (the hop-by-hop and framing ones, and
/// those its `Connection` names, are read and left out), the whole body; `reusable` when
/// the connection may carry another request (HTTP/1.1 keep-alive, body delimited, nothing
/// after it).
#[derive(Debug)]
pub(crate) struct ReadAnswer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    pub(crate) reusable: bool,
}

/// Why an answer could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AnswerError {
    /// The connection failed while reading.
    #[error("reading the answer: {0}")]
    Io(#[from] io::Error),
    /// The connection closed before an answer began.
    #[error("connection closed before an answer")]
    ClosedBeforeAnswer,
    /// The connection closed in the middle of the answer.
    #[error("connection closed before the answer was complete")]
    Incomplete,
    /// The answer is not HTTP/1.x as RFC 9112 frames it.
    #[error("malformed answer: {0}")]
    Malformed(&'static str),
    /// The answer's body is larger than allowed.
    #[error("length limit exceeded (the answer is larger than {limit} bytes)")]
    TooLarge {
        /// The bound, in bytes.
        limit: usize,
    },
}

impl AnswerError {
    /// The io::Error kind behind it, as the gateway's failure texts name it.
    pub(crate) fn kind_text(&self) -> String {
        match self {
            AnswerError::Io(e) => e.kind().to_string(),
            other => other.to_string(),
        }
    }
}

/// How the body is delimited.
enum Framing {
    None,
    Length(u64),
    Chunked,
    Close,
}

/// Reads the answer to a `method` request from `io`, its body at most `limit` bytes; the
/// headers named in `leave_out` are read and left out, like the hop-by-hop ones.
pub(crate) async fn read_answer<R: AsyncRead + Unpin>(
    io: &mut R,
    method: &Method,
    limit: usize,
    leave_out: &[HeaderName],
) -> Result<ReadAnswer, AnswerError> {
    let mut buf = BytesMut::with_capacity(READ_BYTES);
    let head = loop {
        // Nothing to parse before the first read.
        let parsed = if buf.is_empty() {
            None
        } else {
            parse_head(&buf, leave_out)?
        };
        if let Some(head) = parsed {
            buf.advance(head.len);
            if head.status.is_informational() {
                if head.status == StatusCode::SWITCHING_PROTOCOLS {
                    return Err(AnswerError::Malformed("101 Switching Protocols to a POST"));
                }
                continue;
            }
            break head;
        }
        if buf.len() >= MAX_HEAD_BYTES {
            return Err(AnswerError::Malformed("answer head larger than 64 KiB"));
        }
        if fill(io, &mut buf).await? == 0 {
            return Err(if buf.is_empty() {
                AnswerError::ClosedBeforeAnswer
            } else {
                AnswerError::Incomplete
            });
        }
    };
    let framing = framing(method, &head)?;
    let keep_alive = head.version_11 && !head.close;
    let (body, delimited) = match framing {
        Framing::None => (Bytes::new(), true),
        Framing::Length(n) => (fixed(io, &mut buf, n, limit).await?, true),
        Framing::Chunked => (chunked(io, &mut buf, limit).await?, true),
        Framing::Close => (to_close(io, &mut buf, limit).await?, false),
    };
    Ok(ReadAnswer {
        status: head.status,
        headers: head.headers,
        body,
        reusable: keep_alive && delimited && buf.is_empty(),
    })
}

/// An answer's head as parsed.
struct Head {
    /// Its length in bytes.
    len: usize,
    status: StatusCode,
    /// Its end-to-end headers. Those that describe the connection to the backend (the
    /// hop-by-hop ones, the framing ones and those `Connection` names) are read into the
    /// fields below and left out, so the gateway's response policy finds nothing to take
    /// out of a usual answer.
    headers: HeaderMap,
    version_11: bool,
    /// `Connection` lists `close`.
    close: bool,
    /// `Transfer-Encoding` is present: whether its last coding is `chunked`.
    transfer: Option<bool>,
    /// `Content-Length`: its value if present, or what is wrong with it.
    length: Result<Option<u64>, &'static str>,
}

/// The head at the start of `buf`, if complete; the headers named in `leave_out` are not
/// kept.
fn parse_head(buf: &[u8], leave_out: &[HeaderName]) -> Result<Option<Head>, AnswerError> {
    // Left uninitialized: writing 100 empty headers cost more than parsing a short head.
    let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut answer = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut answer,
        buf,
        &mut slots,
    );
    let len = match parsed {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(AnswerError::Malformed("more than 100 headers"));
        }
        Err(_) => {
            return Err(AnswerError::Malformed(
                "not an HTTP/1.x status line and headers",
            ));
        }
    };
    let status = answer
        .code
        .and_then(|c| StatusCode::from_u16(c).ok())
        .ok_or(AnswerError::Malformed("status code out of range"))?;
    let mut close = false;
    let mut named: Vec<String> = Vec::new();
    for h in answer.headers.iter() {
        if h.name.eq_ignore_ascii_case("connection") {
            for token in list_items(h.value) {
                if token.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else {
                    named.push(String::from_utf8_lossy(token).to_ascii_lowercase());
                }
            }
        }
    }
    let mut head = Head {
        len,
        status,
        headers: HeaderMap::with_capacity(answer.headers.len()),
        version_11: answer.version == Some(1),
        close,
        transfer: None,
        length: Ok(None),
    };
    for h in answer.headers.iter() {
        // The framing headers are read as they are written: nearly every answer has a
        // `Content-Length`, and no header name needs making for it.
        if h.name.eq_ignore_ascii_case("content-length") {
            head.length = length_with(head.length, h.value);
            continue;
        }
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            let last = list_items(h.value).last();
            head.transfer = match last {
                Some(coding) => Some(coding.eq_ignore_ascii_case(b"chunked")),
                None => head.transfer.or(Some(false)),
            };
            continue;
        }
        let name = HeaderName::from_bytes(h.name.as_bytes())
            .map_err(|_| AnswerError::Malformed("invalid header name"))?;
        match name.as_str() {
            n if hop_by_hop(n) || named.iter().any(|c| c == n) || leave_out.contains(&name) => {}
            _ => {
                let value = HeaderValue::from_bytes(h.value)
                    .map_err(|_| AnswerError::Malformed("invalid header value"))?;
                head.headers.append(name, value);
            }
        }
    }
    Ok(Some(head))
}

/// `Content-Length` so far (`seen`) with one more `value`: the length, or an error when it
/// is not a number or differs from one seen before.
fn length_with(
    seen: Result<Option<u64>, &'static str>,
    value: &[u8],
) -> Result<Option<u64>, &'static str> {
    let seen = seen?;
    let n = std::str::from_utf8(value)
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .ok_or("invalid Content-Length")?;
    if seen.is_some_and(|seen| seen != n) {
        return Err("conflicting Content-Length values");
    }
    Ok(Some(n))
}

/// How the body of an answer with `head` to `method` is delimited (RFC 9112 §6.3).
fn framing(method: &Method, head: &Head) -> Result<Framing, AnswerError> {
    if method == Method::HEAD
        || head.status == StatusCode::NO_CONTENT
        || head.status == StatusCode::NOT_MODIFIED
    {
        return Ok(Framing::None);
    }
    match head.transfer {
        Some(true) => return Ok(Framing::Chunked),
        Some(false) => return Ok(Framing::Close),
        None => {}
    }
    match head.length {
        Ok(Some(n)) => Ok(Framing::Length(n)),
        Ok(None) => Ok(Framing::Close),
        Err(what) => Err(AnswerError::Malformed(what)),
    }
}

/// Reads more into `buf`; the number of bytes read (0 at the end of the stream).
async fn fill<R: AsyncRead + Unpin>(io: &mut R, buf: &mut BytesMut) -> io::Result<usize> {
    if buf.capacity() - buf.len() < READ_BYTES / 2 {
        buf.reserve(READ_BYTES);
    }
    io.read_buf(buf).await
}

/// A body of `n` bytes.
async fn fixed<R: AsyncRead + Unpin>(
    io: &mut R,
    buf: &mut BytesMut,
    n: u64,
    limit: usize,
) -> Result<Bytes, AnswerError> {
    let n = usize::try_from(n)
        .ok()
        .filter(|n| *n <= limit)
        .ok_or(AnswerError::TooLarge { limit })?;
    if buf.len() < n {
        buf.reserve(n - buf.len());
    }
    while buf.len() < n {
        if io.read_buf(buf).await? == 0 {
            return Err(AnswerError::Incomplete);
        }
    }
    Ok(buf.split_to(n).freeze())
}

/// A body up to the end of the stream.
async fn to_close<R: AsyncRead + Unpin>(
    io: &mut R,
    buf: &mut BytesMut,
    limit: usize,
) -> Result<Bytes, AnswerError> {
    loop {
        if buf.len() > limit {
            return Err(AnswerError::TooLarge { limit });
        }
        if fill(io, buf).await? == 0 {
            return Ok(buf.split().freeze());
        }
    }
}

/// A chunked body, its chunks joined; trailers are read and dropped.
async fn chunked<R: AsyncRead + Unpin>(
    io: &mut R,
    buf: &mut BytesMut,
    limit: usize,
) -> Result<Bytes, AnswerError> {
    let mut body = BytesMut::new();
    loop {
        let size_line = line(io, buf).await?;
        let size = size_line.split(|b| *b == b';').next().unwrap_or_default();
        let size = std::str::from_utf8(size)
            .ok()
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.len() <= 16)
            .and_then(|s| u64::from_str_radix(s, 16).ok())
            .ok_or(AnswerError::Malformed("invalid chunk size"))?;
        if size == 0 {
            // Trailer fields, up to the empty line.
            while !line(io, buf).await?.is_empty() {}
            return Ok(body.freeze());
        }
        let size = usize::try_from(size)
            .ok()
            .filter(|s| body.len().saturating_add(*s) <= limit)
            .ok_or(AnswerError::TooLarge { limit })?;
        while buf.len() < size + 2 {
            if fill(io, buf).await? == 0 {
                return Err(AnswerError::Incomplete);
            }
        }
        body.extend_from_slice(&buf[..size]);
        if &buf[size..size + 2] != b"\r\n" {
            return Err(AnswerError::Malformed("chunk not ended by CRLF"));
        }
        buf.advance(size + 2);
    }
}

/// The next line of `buf` (reading more as needed), without its CRLF.
async fn line<R: AsyncRead + Unpin>(io: &mut R, buf: &mut BytesMut) -> Result<Bytes, AnswerError> {
    loop {
        if let Some(at) = memchr::memchr(b'\n', buf) {
            let mut line = buf.split_to(at + 1);
            line.truncate(at);
            if line.last() == Some(&b'\r') {
                line.truncate(at - 1);
            }
            return Ok(line.freeze());
        }
        if buf.len() > MAX_LINE_BYTES {
            return Err(AnswerError::Malformed(
                "chunk-size or trailer line too long",
            ));
        }
        if fill(io, buf).await? == 0 {
            return Err(AnswerError::Incomplete);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read(wire: &[u8], limit: usize) -> Result<ReadAnswer, AnswerError> {
        let mut io = wire;
        read_answer(&mut io, &Method::POST, limit, &[]).await
    }

    #[tokio::test]
    async fn a_content_length_answer_is_read_and_the_connection_kept() {
        let a = read(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: 5\r\n\r\nhello",
            100,
        )
        .await
        .unwrap();
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.headers["content-type"], "text/xml");
        assert_eq!(&a.body[..], b"hello");
        assert!(a.reusable);
    }

    #[tokio::test]
    async fn only_end_to_end_headers_are_kept() {
        let a = read(
            b"HTTP/1.1 200 OK\r\nConnection: X-Hop, keep-alive\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nContent-Type: text/xml\r\nContent-Length: 2\r\nX-End: 2\r\nX-End: 3\r\n\r\nok",
            100,
        )
        .await
        .unwrap();
        let names: Vec<&str> = a.headers.keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["content-type", "x-end"]);
        assert_eq!(a.headers.get_all("x-end").iter().count(), 2);
        assert_eq!(&a.body[..], b"ok");
        assert!(a.reusable);
        let a = read(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nTransfer-Encoding: \r\n\r\n2\r\nok\r\n0\r\n\r\n",
            100,
        )
        .await
        .unwrap();
        assert_eq!(&a.body[..], b"ok");
        assert!(a.headers.is_empty());
        let a = read(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nraw",
            100,
        )
        .await
        .unwrap();
        assert_eq!(&a.body[..], b"raw");
        assert!(!a.reusable);
    }

    #[tokio::test]
    async fn the_names_left_out_are_not_kept() {
        let mut io = &b"HTTP/1.1 200 OK\r\nServer: Apache/2.4.1\r\nX-Powered-By: PHP\r\nVary: accept\r\nContent-Length: 0\r\n\r\n"[..];
        let leave_out = [
            http::header::SERVER,
            HeaderName::from_static("x-powered-by"),
        ];
        let a = read_answer(&mut io, &Method::POST, 100, &leave_out)
            .await
            .unwrap();
        let names: Vec<&str> = a.headers.keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["vary"]);
    }

    #[tokio::test]
    async fn interim_answers_are_skipped() {
        let a = read(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 500 Internal\r\nContent-Length: 2\r\n\r\nno",
            100,
        )
        .await
        .unwrap();
        assert_eq!(a.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(&a.body[..], b"no");
    }

    #[tokio::test]
    async fn chunks_are_joined_and_trailers_dropped() {
        let a = read(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n",
            100,
        )
        .await
        .unwrap();
        assert_eq!(&a.body[..], b"hello world");
        assert!(a.reusable);
    }

    #[tokio::test]
    async fn a_close_delimited_answer_ends_the_connection() {
        let a = read(b"HTTP/1.1 200 OK\r\n\r\nuntil the end", 100)
            .await
            .unwrap();
        assert_eq!(&a.body[..], b"until the end");
        assert!(!a.reusable);
        let a = read(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            100,
        )
        .await
        .unwrap();
        assert!(!a.reusable);
        let a = read(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 100)
            .await
            .unwrap();
        assert!(!a.reusable);
    }

    #[tokio::test]
    async fn bodies_over_the_limit_are_refused_in_every_framing() {
        for wire in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world"[..],
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n\r\nhello world",
        ] {
            let e = read(wire, 10).await.unwrap_err();
            assert!(matches!(e, AnswerError::TooLarge { limit: 10 }), "{e}");
        }
    }

    #[tokio::test]
    async fn broken_answers_are_named() {
        assert!(matches!(
            read(b"", 10).await,
            Err(AnswerError::ClosedBeforeAnswer)
        ));
        assert!(matches!(
            read(b"HTTP/1.1 200 OK\r\n", 10).await,
            Err(AnswerError::Incomplete)
        ));
        assert!(matches!(
            read(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhalf", 10).await,
            Err(AnswerError::Incomplete)
        ));
        assert!(matches!(
            read(b"SMTP ready\r\n\r\n", 10).await,
            Err(AnswerError::Malformed(_))
        ));
        assert!(matches!(
            read(
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
                10
            )
            .await,
            Err(AnswerError::Malformed(_))
        ));
        assert!(matches!(
            read(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                10
            )
            .await,
            Err(AnswerError::Malformed(_))
        ));
    }

    #[tokio::test]
    async fn bytes_after_the_answer_make_the_connection_unusable() {
        let a = read(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n",
            10,
        )
        .await
        .unwrap();
        assert!(!a.reusable);
    }
}
