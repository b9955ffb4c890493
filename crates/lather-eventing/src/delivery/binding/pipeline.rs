//! A pipelined HTTP/1.1 POST client for one sink (RFC 9112 §9.3.2): requests are written
//! back to back on one keep-alive connection as they come, without waiting for the answers
//! to earlier ones, and a reader task reads the answers in order and hands them over a
//! channel ([`Pipeline::next`], which is cancel-safe), counted: one message for all the
//! answers one read brought, not one each. So a sink far away gets a steady stream instead
//! of one batch per round trip. Order is kept, one connection per sink; the caller replaces
//! a connection that fails and sends the unanswered requests again.
//!
//! The same code runs over plain TCP (`http://`) and over TLS (`https://`): the reader is
//! generic over the stream's reading half, the writer is the stream's writing half.

use super::wire::Wire;
use crate::delivery::DeliveryError;
use crate::delivery::address_policy::DeliveryPolicy;
use bytes::{Buf, BytesMut};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Most request bytes gathered for one write.
pub(crate) const MAX_WRITE: usize = 256 * 1024;
/// Largest answer head accepted.
const MAX_HEAD: usize = 16 * 1024;
/// Largest answer head remembered as the last one ([`KnownHead`]): a sink's usual answer
/// head is well under it, and thousands of readers each keep one.
const MAX_KNOWN_HEAD: usize = 512;
/// Largest answer body skipped (a sink's answer to a notification is normally empty).
const MAX_BODY: u64 = 1024 * 1024;

/// The connection: its writing half here, its reading half in a reader task.
#[derive(Debug)]
pub(crate) struct Pipeline {
    authority: String,
    /// Where connections may go, and whether the path is a publish path.
    guard: DeliveryPolicy,
    publish: bool,
    /// Whether connections speak TLS (`https://`), verified for the authority's host.
    tls: bool,
    writer: Option<Writer>,
    answers: Option<mpsc::UnboundedReceiver<Answers>>,
    reader: Option<JoinHandle<()>>,
}

/// What the reader hands over, in request order.
#[derive(Debug)]
enum Answers {
    /// This many 2xx answers after which the connection stays usable.
    Kept(usize),
    /// A 2xx answer after which the sink closes the connection (the reader's last).
    Closing,
    /// An answer that is not a 2xx, an unreadable one, or the end of the connection (the
    /// reader's last).
    Failed(DeliveryError),
}

/// 2xx answers taken by one [`Pipeline::next`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Answered {
    /// How many (at least one; a sink that answers more than it was sent is failed by
    /// `HttpSink::on_answer`).
    pub(crate) count: usize,
    /// Whether the connection stays usable after them (else it was closed here).
    pub(crate) open: bool,
}

/// The writing half of a connection, plain or TLS.
struct Writer(Box<dyn AsyncWrite + Send + Unpin>);

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Writer")
    }
}

/// One answer's fate.
enum Answer {
    /// A final status; whether the connection stays usable after it.
    Status(u16, bool),
}

impl Pipeline {
    /// A pipeline to `authority`, connecting only where `guard` allows (`publish`: the
    /// requests' path is an event source's publish path), over TLS when `tls`.
    pub(crate) fn new(
        authority: String,
        guard: DeliveryPolicy,
        publish: bool,
        tls: bool,
    ) -> Pipeline {
        Pipeline {
            authority,
            guard,
            publish,
            tls,
            writer: None,
            answers: None,
            reader: None,
        }
    }

    /// Whether a connection is open (from an earlier exchange).
    pub(crate) fn connected(&self) -> bool {
        self.writer.is_some()
    }

    /// Writes `requests` (already serialised) on the connection, opening one if there is
    /// none; their answers come later from [`Pipeline::next`]. A failure drops the
    /// connection.
    pub(crate) async fn send(
        &mut self,
        requests: &mut Wire,
        timeout: Duration,
    ) -> Result<(), DeliveryError> {
        if self.writer.is_none() {
            if self.tls {
                let stream = self
                    .guard
                    .connect_tls(&self.authority, timeout, self.publish)
                    .await?;
                let (read, write) = tokio::io::split(stream);
                self.start(read, write);
            } else {
                let stream =
                    super::connect(&self.authority, timeout, &self.guard, self.publish).await?;
                let (read, write) = stream.into_split();
                self.start(read, write);
            }
        }
        let Some(Writer(writer)) = self.writer.as_mut() else {
            return Err(DeliveryError::Connection("no connection".into()));
        };
        match tokio::time::timeout(timeout, requests.write_to(writer)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(self.fail(DeliveryError::Connection(format!(
                "writing to {}: {e}",
                self.authority
            )))),
            Err(_) => Err(self.fail(DeliveryError::Timeout(format!(
                "{} took no bytes within {timeout:?}",
                self.authority
            )))),
        }
    }

    /// Starts using a new connection: its answers are read by a task of their own.
    fn start<R, W>(&mut self, read: R, write: W)
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let (tx, rx) = mpsc::unbounded_channel();
        let reader = Reader {
            authority: self.authority.clone(),
            half: read,
            read: BytesMut::new(),
            answers: tx,
            kept: 0,
            known: None,
            parsed: 0,
        };
        self.reader = Some(tokio::spawn(reader.run()));
        self.answers = Some(rx);
        self.writer = Some(Writer(Box::new(write)));
    }

    /// The next answers, in request order: 2xx answers after which the connection stays
    /// usable (as many as came together), or one after which the sink closes it (dropped
    /// here). Any other status, an unreadable answer or the end of the connection is an
    /// error and drops it. Cancel-safe: answers not yet taken stay for the next call.
    pub(crate) async fn next(&mut self) -> Result<Answered, DeliveryError> {
        let answer = match self.answers.as_mut() {
            Some(answers) => answers.recv().await,
            None => return Err(DeliveryError::Connection("no connection".into())),
        };
        match answer {
            Some(Answers::Kept(count)) => Ok(Answered { count, open: true }),
            Some(Answers::Closing) => {
                self.close();
                Ok(Answered {
                    count: 1,
                    open: false,
                })
            }
            Some(Answers::Failed(why)) => Err(self.fail(why)),
            None => Err(self.fail(DeliveryError::Connection(format!(
                "{} closed the connection",
                self.authority
            )))),
        }
    }

    /// Closes the connection (the next [`Pipeline::send`] opens a new one).
    pub(crate) fn close(&mut self) {
        if let Some(reader) = self.reader.take() {
            reader.abort();
        }
        self.writer = None;
        self.answers = None;
    }

    /// Closes the connection after a failure; returns `why`.
    fn fail(&mut self, why: DeliveryError) -> DeliveryError {
        self.close();
        why
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.close();
    }
}

/// The reading half of a connection and what was read ahead of the next answer.
/// How much room a read makes in the answer buffer at least.
const READ_CHUNK: usize = 1024;

struct Reader<R> {
    authority: String,
    half: R,
    /// Bytes read and not yet taken; taking from the front is O(1) ([`Buf::advance`]).
    read: BytesMut,
    answers: mpsc::UnboundedSender<Answers>,
    /// 2xx answers read (the connection kept) and not yet handed over: they go together
    /// before the reader waits for more bytes, or before its last message.
    kept: usize,
    /// The last final answer head read whole and its meaning, for the next answer that
    /// begins with the same bytes (a sink's answers are mostly alike byte for byte).
    known: Option<KnownHead>,
    /// Answer heads parsed in full so far (the others were the known head again).
    parsed: u64,
}

/// An answer head's bytes (up to and with its empty line) and what they say: the same
/// bytes parse the same way, so they need not be parsed again.
struct KnownHead {
    bytes: Vec<u8>,
    status: u16,
    length: u64,
    keep: bool,
}

impl<R: AsyncRead + Unpin> Reader<R> {
    /// Reads answers and hands them over until the connection ends, fails, or is closed
    /// after an answer; the last thing sent is then the failure (or [`Answers::Closing`]).
    async fn run(mut self) {
        let last = loop {
            match self.answer().await {
                Ok(Answer::Status(status, true)) if (200..300).contains(&status) => {
                    self.kept += 1;
                }
                Ok(Answer::Status(status, false)) if (200..300).contains(&status) => {
                    break Answers::Closing;
                }
                Ok(Answer::Status(status, _)) => {
                    break Answers::Failed(DeliveryError::Status(status));
                }
                Err(why) => break Answers::Failed(why),
            }
        };
        if self.hand_over() {
            let _ = self.answers.send(last);
        }
    }

    /// Hands over the 2xx answers read and not yet handed over; false when nobody takes
    /// them any more.
    fn hand_over(&mut self) -> bool {
        let kept = std::mem::take(&mut self.kept);
        if kept == 0 {
            return !self.answers.is_closed();
        }
        self.answers.send(Answers::Kept(kept)).is_ok()
    }

    /// Reads more bytes into `read`, after handing over the answers read so far; an
    /// error at end of stream. Reads straight into the buffer's spare room (no stack
    /// chunk in the task's state: a sink's answers are a few hundred bytes, and thousands
    /// of sinks each keep a reader waiting here).
    async fn fill(&mut self) -> Result<(), DeliveryError> {
        if !self.hand_over() {
            return Err(DeliveryError::Connection(
                "the sink's delivery ended".into(),
            ));
        }
        self.read.reserve(READ_CHUNK);
        match self.half.read_buf(&mut self.read).await {
            Ok(0) => Err(DeliveryError::Connection(format!(
                "{} closed the connection",
                self.authority
            ))),
            Ok(_) => Ok(()),
            Err(e) => Err(DeliveryError::Connection(format!(
                "reading from {}: {e}",
                self.authority
            ))),
        }
    }

    /// Reads one final answer (skipping 1xx) and its body.
    async fn answer(&mut self) -> Result<Answer, DeliveryError> {
        // While what is read may still be the last head again (nothing read yet, or the
        // start of it), read on; once it is, take it as that one.
        while let Some(known) = &self.known {
            if self.read.starts_with(&known.bytes) {
                let (status, length, keep) = (known.status, known.length, known.keep);
                self.read.advance(known.bytes.len());
                self.skip(length).await?;
                return Ok(Answer::Status(status, keep));
            }
            if !known.bytes.starts_with(&self.read) {
                break;
            }
            self.fill().await?;
        }
        loop {
            let (status, head_len, body, keep) = loop {
                let mut headers = [httparse::EMPTY_HEADER; 32];
                let mut response = httparse::Response::new(&mut headers);
                match response.parse(&self.read) {
                    Ok(httparse::Status::Complete(len)) if len > MAX_HEAD => {
                        return Err(DeliveryError::Answer("answer head too long".into()));
                    }
                    Ok(httparse::Status::Complete(len)) => {
                        self.parsed += 1;
                        let status = response.code.unwrap_or(0);
                        let (body, keep) = framing(&response, status)?;
                        break (status, len, body, keep);
                    }
                    Ok(httparse::Status::Partial) if self.read.len() < MAX_HEAD => {
                        self.fill().await?;
                    }
                    Ok(httparse::Status::Partial) => {
                        return Err(DeliveryError::Answer("answer head too long".into()));
                    }
                    Err(e) => return Err(DeliveryError::Answer(format!("unreadable answer: {e}"))),
                }
            };
            if let Body::Length(length) = body
                && status >= 200
                && head_len <= MAX_KNOWN_HEAD
            {
                // The last head's buffer is reused.
                let mut bytes = self.known.take().map(|k| k.bytes).unwrap_or_default();
                bytes.clear();
                bytes.extend_from_slice(&self.read[..head_len]);
                self.known = Some(KnownHead {
                    bytes,
                    status,
                    length,
                    keep,
                });
            }
            self.read.advance(head_len);
            match body {
                Body::Length(n) => self.skip(n).await?,
                Body::Chunked => self.skip_chunked().await?,
                Body::UntilClose => {
                    while self.fill().await.is_ok() && (self.read.len() as u64) < MAX_BODY {
                        self.read.clear();
                    }
                    return Ok(Answer::Status(status, false));
                }
            }
            if status >= 200 {
                return Ok(Answer::Status(status, keep));
            }
        }
    }

    async fn skip(&mut self, mut n: u64) -> Result<(), DeliveryError> {
        loop {
            let here = (self.read.len() as u64).min(n);
            self.read.advance(here as usize);
            n -= here;
            if n == 0 {
                return Ok(());
            }
            self.fill().await?;
        }
    }

    async fn skip_chunked(&mut self) -> Result<(), DeliveryError> {
        let mut total = 0u64;
        loop {
            let line_end = loop {
                if let Some(i) = self.read.windows(2).position(|w| w == b"\r\n") {
                    break i;
                }
                if self.read.len() > 1024 {
                    return Err(DeliveryError::Answer("bad chunk size line".into()));
                }
                self.fill().await?;
            };
            let line = String::from_utf8_lossy(&self.read[..line_end]).into_owned();
            let size = u64::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| DeliveryError::Answer(format!("bad chunk size {line:?}")))?;
            self.read.advance(line_end + 2);
            total = total.saturating_add(size);
            if total > MAX_BODY {
                return Err(DeliveryError::Answer("answer body too long".into()));
            }
            if size == 0 {
                // Trailers (normally none) end with an empty line.
                loop {
                    if let Some(i) = self.read.windows(2).position(|w| w == b"\r\n") {
                        self.read.advance(i + 2);
                        if i == 0 {
                            return Ok(());
                        }
                        continue;
                    }
                    self.fill().await?;
                }
            }
            self.skip(size + 2).await?;
        }
    }
}

/// How an answer's body is delimited.
enum Body {
    Length(u64),
    Chunked,
    UntilClose,
}

/// The body framing and whether the connection stays open, from the answer's head.
fn framing(
    response: &httparse::Response<'_, '_>,
    status: u16,
) -> Result<(Body, bool), DeliveryError> {
    let mut length = None;
    let mut chunked = false;
    let mut keep = response.version == Some(1);
    for h in response.headers.iter() {
        let value = std::str::from_utf8(h.value).unwrap_or("").trim();
        if h.name.eq_ignore_ascii_case("content-length") {
            length = Some(
                value
                    .parse::<u64>()
                    .map_err(|_| DeliveryError::Answer("bad Content-Length".into()))?,
            );
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value
                .len()
                .checked_sub("chunked".len())
                .and_then(|at| value.get(at..))
                .is_some_and(|last| last.eq_ignore_ascii_case("chunked"));
        } else if h.name.eq_ignore_ascii_case("connection") {
            if contains_ignoring_case(value, "close") {
                keep = false;
            } else if contains_ignoring_case(value, "keep-alive") {
                keep = true;
            }
        }
    }
    let body = if status < 200 || status == 204 || status == 304 {
        Body::Length(0)
    } else if chunked {
        Body::Chunked
    } else if let Some(n) = length {
        if n > MAX_BODY {
            return Err(DeliveryError::Answer("answer body too long".into()));
        }
        Body::Length(n)
    } else {
        Body::UntilClose
    };
    Ok((body, keep))
}

/// Whether `text` contains `word`, ASCII case ignored (no copy made).
fn contains_ignoring_case(text: &str, word: &str) -> bool {
    text.as_bytes()
        .windows(word.len())
        .any(|w| w.eq_ignore_ascii_case(word.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    /// A sink that answers the pipelined requests with `answers` (raw bytes), then closes.
    async fn scripted(answers: &'static [u8]) -> String {
        scripted_in_pieces(vec![answers]).await
    }

    /// A sink that reads, then writes `pieces` with a pause between them (so that they
    /// come in separate reads), then closes.
    async fn scripted_in_pieces(pieces: Vec<&'static [u8]>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf).await;
            for (i, piece) in pieces.iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                s.write_all(piece).await.unwrap();
            }
        });
        addr
    }

    /// A pipeline to `addr` (loopback allowed, plain HTTP).
    fn pipeline_to(addr: String) -> Pipeline {
        Pipeline::new(
            addr,
            crate::delivery::address_policy::DeliveryPolicy::allow_loopback(),
            false,
            false,
        )
    }

    /// A pipeline to `addr`, one request written.
    async fn sent(addr: String) -> Pipeline {
        let mut p = pipeline_to(addr);
        p.send(&mut Wire::of(b"x"), Duration::from_secs(2))
            .await
            .unwrap();
        p
    }

    /// Takes 2xx answers (the connection kept) until `n` came, however the reads split
    /// them; fails on anything else.
    async fn kept_answers(p: &mut Pipeline, n: usize) {
        let mut taken = 0;
        while taken < n {
            let answered = p.next().await.expect("a 2xx answer");
            assert!(answered.open, "the connection stays usable");
            taken += answered.count;
        }
        assert_eq!(taken, n);
    }

    #[tokio::test]
    async fn answers_in_every_framing_are_read_in_order() {
        let addr = scripted(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\nHTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n",
        )
        .await;
        let mut p = sent(addr).await;
        kept_answers(&mut p, 3).await;
        assert_eq!(
            p.next().await.map_err(|e| e.to_string()),
            Err("the sink answered 500".into())
        );
        assert!(!p.connected());
    }

    #[tokio::test]
    async fn a_close_after_an_answer_ends_the_connection() {
        let addr = scripted(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").await;
        let mut p = sent(addr).await;
        kept_answers(&mut p, 1).await;
        assert!(p.next().await.unwrap_err().to_string().contains("closed"));
        assert!(!p.connected());
        let addr =
            scripted(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").await;
        let mut p = sent(addr).await;
        assert_eq!(
            p.next().await,
            Ok(Answered {
                count: 1,
                open: false
            })
        );
        assert!(!p.connected());
    }

    #[tokio::test]
    async fn an_answer_head_seen_before_is_taken_with_its_body_and_a_new_one_parsed() {
        // The same head twice (its body skipped each time), a head that begins like it
        // but says more, the first head again, then a failure: each is read for what its
        // bytes say.
        let addr = scripted(
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nxyzHTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-More: 1\r\n\r\n123HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nHTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n",
        )
        .await;
        let mut p = sent(addr).await;
        // The fourth answer's body is the first bytes of the fifth: taken as its body,
        // what is left is no answer head.
        kept_answers(&mut p, 4).await;
        let err = p.next().await.unwrap_err().to_string();
        assert!(err.contains("unreadable answer"), "{err}");
    }

    #[tokio::test]
    async fn answers_split_across_reads_are_read_whole_like_or_unlike_the_last() {
        // Written in pieces with pauses, so that they come in separate reads: the second
        // answer arrives in two parts, the first of them the start of the head read
        // before; the third starts the same way and then differs.
        let addr = scripted_in_pieces(vec![
            b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.1 202 Acc",
            b"epted\r\nContent-Length: 0\r\n\r\nHTTP/1.1 202 Acc",
            b"epted\r\nContent-Length: 2\r\n\r\nok",
            b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n",
        ])
        .await;
        let mut p = sent(addr).await;
        kept_answers(&mut p, 3).await;
        assert_eq!(
            p.next().await.map_err(|e| e.to_string()),
            Err("the sink answered 500".into())
        );
    }

    /// A connection's reading half that brings `chunks` one per read, then its end.
    struct Chunks(std::collections::VecDeque<Vec<u8>>);

    impl AsyncRead for Chunks {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            if let Some(chunk) = self.0.pop_front() {
                buf.put_slice(&chunk);
            }
            std::task::Poll::Ready(Ok(()))
        }
    }

    /// A reader of `chunks`, and where it hands its answers over.
    fn reader_of(chunks: &[&[u8]]) -> (Reader<Chunks>, mpsc::UnboundedReceiver<Answers>) {
        let (answers, handed) = mpsc::unbounded_channel();
        let reader = Reader {
            authority: "sink".into(),
            half: Chunks(chunks.iter().map(|c| c.to_vec()).collect()),
            read: BytesMut::new(),
            answers,
            kept: 0,
            known: None,
            parsed: 0,
        };
        (reader, handed)
    }

    const ACCEPTED: &[u8] = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";

    #[tokio::test]
    async fn a_read_s_answers_go_over_as_one_count_and_a_closing_one_last() {
        let closing = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        let (reader, mut handed) = reader_of(&[
            &[ACCEPTED, ACCEPTED, ACCEPTED].concat(),
            &[ACCEPTED, ACCEPTED, &closing[..]].concat(),
        ]);
        reader.run().await;
        let mut got = Vec::new();
        while let Ok(answers) = handed.try_recv() {
            got.push(format!("{answers:?}"));
        }
        assert_eq!(got, ["Kept(3)", "Kept(2)", "Closing"]);
    }

    #[tokio::test]
    async fn a_known_head_is_not_parsed_again_even_in_pieces_and_a_long_one_is_not_kept() {
        let (mut reader, _handed) = reader_of(&[
            ACCEPTED,
            &ACCEPTED[..10],
            &ACCEPTED[10..30],
            &ACCEPTED[30..],
            ACCEPTED,
        ]);
        for _ in 0..3 {
            assert!(matches!(
                reader.answer().await,
                Ok(Answer::Status(202, true))
            ));
        }
        assert_eq!(reader.parsed, 1, "the same head again is taken as known");
        // A different head is parsed (and becomes the known one).
        let (mut reader, _handed) = reader_of(&[
            ACCEPTED,
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
            b"HTTP/1.1 204 No Content\r\n\r\n",
        ]);
        assert!(matches!(
            reader.answer().await,
            Ok(Answer::Status(202, true))
        ));
        assert!(matches!(
            reader.answer().await,
            Ok(Answer::Status(204, true))
        ));
        assert!(matches!(
            reader.answer().await,
            Ok(Answer::Status(204, true))
        ));
        assert_eq!(
            reader.parsed, 3,
            "202, 100 and 204 parsed; the second 204 known"
        );
        // A head beyond MAX_KNOWN_HEAD is parsed every time.
        let long = format!(
            "HTTP/1.1 202 Accepted\r\nX-Pad: {}\r\nContent-Length: 0\r\n\r\n",
            "p".repeat(MAX_KNOWN_HEAD)
        );
        let (mut reader, _handed) = reader_of(&[long.as_bytes(), long.as_bytes()]);
        for _ in 0..2 {
            assert!(matches!(
                reader.answer().await,
                Ok(Answer::Status(202, true))
            ));
        }
        assert_eq!(reader.parsed, 2);
        assert!(reader.known.is_none());
    }

    #[tokio::test]
    async fn later_requests_go_out_before_earlier_answers_come() {
        // The sink answers nothing until it has both requests: a client that waited for
        // the first answer before writing the second would never get one.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !got.ends_with(b"second") {
                let n = s.read(&mut buf).await.unwrap();
                assert!(n > 0, "closed before the second request");
                got.extend_from_slice(&buf[..n]);
            }
            let ok = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
            s.write_all(&[&ok[..], &ok[..]].concat()).await.unwrap();
            let _ = s.read(&mut buf).await;
        });
        let mut p = pipeline_to(addr);
        let t = Duration::from_secs(2);
        p.send(&mut Wire::of(b"first"), t).await.unwrap();
        p.send(&mut Wire::of(b"second"), t).await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), kept_answers(&mut p, 2))
            .await
            .expect("both answered");
    }

    /// The framing of `head` (a complete answer head).
    fn framing_of(head: &[u8]) -> (bool, bool, bool) {
        let mut headers = [httparse::EMPTY_HEADER; 8];
        let mut response = httparse::Response::new(&mut headers);
        assert!(response.parse(head).unwrap().is_complete());
        let (body, keep) = framing(&response, 200).unwrap();
        (
            matches!(body, Body::Chunked),
            matches!(body, Body::UntilClose),
            keep,
        )
    }

    #[test]
    fn framing_headers_are_read_in_any_case() {
        // (chunked, until close, keep-alive)
        assert_eq!(
            framing_of(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, CHUNKED\r\n\r\n"),
            (true, false, true)
        );
        assert_eq!(
            framing_of(b"HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n"),
            (false, false, false)
        );
        assert_eq!(
            framing_of(b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n"),
            (false, false, true)
        );
        assert_eq!(
            framing_of(b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunkedish\r\n\r\n"),
            (false, true, false)
        );
    }
}
