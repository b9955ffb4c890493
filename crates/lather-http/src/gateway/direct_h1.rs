//! HTTP/1.1 to plain `http://` upstreams, driven by the task that serves the client: it
//! writes the request and reads the answer itself, over a connection from its I/O
//! thread's own idle list. Against hyper's pooled client this takes away the connection
//! task, the channels between it and the request, and the pool lock that threads share
//! (the profile of a gateway request put hyper's client at as much CPU as lather's whole
//! echo path). `https://` upstreams and HTTP/2 keep hyper's client.
//!
//! A connection goes back to its thread's idle list only after a whole, delimited answer
//! on HTTP/1.1 keep-alive; an exchange that is abandoned (timed out) drops it. An idle
//! connection is checked before it is reused: one the upstream closed (or that has bytes
//! nobody asked for) is dropped, as is one idle longer than [`IDLE_FOR`]. A sweeper task
//! (started with the first connection kept, ended with the client) closes such
//! connections every [`SWEEP_EVERY`] even when no request comes.

use super::answer_read::{AnswerError, ReadAnswer, read_answer};
use super::header_list::HeaderList;
use super::upstream_client::UpstreamRequest;
use http::HeaderName;
use http::header::HOST;
use http::uri::Authority;
use http::{Method, Uri};
use std::io::{self, IoSlice};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// How long a connection may stay idle before it is dropped rather than reused (as
/// hyper's pool did for the gateway).
pub(crate) const IDLE_FOR: Duration = Duration::from_secs(90);

/// How often idle connections that are closed or too old are swept out.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// Connections idle on one I/O thread, by upstream authority. A gateway has a few
/// upstreams, so they are found by comparing authorities (hashing one, with the
/// case folding `Authority`'s hash does byte by byte, cost more than the rest of taking
/// a connection).
#[derive(Debug, Default)]
struct IdleList {
    by_authority: Vec<(Authority, Vec<Idle>)>,
}

impl IdleList {
    /// The connections idle to `authority`, if any were kept.
    fn get_mut(&mut self, authority: &Authority) -> Option<&mut Vec<Idle>> {
        self.by_authority
            .iter_mut()
            .find(|(a, _)| same(a, authority))
            .map(|(_, list)| list)
    }

    /// The list of `authority`, made empty when it has none.
    fn entry(&mut self, authority: Authority) -> &mut Vec<Idle> {
        let at = match self
            .by_authority
            .iter()
            .position(|(a, _)| same(a, &authority))
        {
            Some(at) => at,
            None => {
                self.by_authority.push((authority, Vec::new()));
                self.by_authority.len() - 1
            }
        };
        &mut self.by_authority[at].1
    }
}

/// Whether `a` and `b` name the same authority. They usually come from the same
/// configured URL, so their bytes are compared first: `Authority`'s own comparison folds
/// case byte by byte, which cost more than the rest of taking a connection.
fn same(a: &Authority, b: &Authority) -> bool {
    a.as_str() == b.as_str() || a == b
}

/// An idle connection and since when.
#[derive(Debug)]
struct Idle {
    stream: TcpStream,
    since: Instant,
}

impl Idle {
    /// Whether it may carry a request: idle no longer than [`IDLE_FOR`], open, and with
    /// nothing to read. Without readiness recorded this makes no system call; an upstream
    /// that closed the connection (or sent what no request asked for) has made it readable.
    fn usable(&self) -> bool {
        self.since.elapsed() <= IDLE_FOR
            && matches!(
                self.stream.try_read(&mut [0u8; 1]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock
            )
    }
}

/// Why an exchange with an upstream failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DirectError {
    /// No connection could be opened.
    #[error("tcp connect error: {0}")]
    Connect(io::Error),
    /// No connection opened within the connect timeout.
    #[error("tcp connect error: timed out after {0} ms")]
    ConnectTimeout(u128),
    /// Writing the request failed.
    #[error("writing the request: {0}")]
    Write(io::Error),
    /// The answer could not be read.
    #[error(transparent)]
    Answer(#[from] AnswerError),
}

/// The HTTP/1.1 client of plain-HTTP upstreams: an idle list per I/O thread.
#[derive(Debug)]
pub(crate) struct DirectClient {
    idle: Arc<[Mutex<IdleList>]>,
    keep: usize,
    sweeping: AtomicBool,
    connect_timeout: Duration,
}

impl DirectClient {
    /// A client with `threads` idle lists, keeping up to `keep` idle connections to each
    /// upstream on each, connecting within `connect_timeout`.
    pub(crate) fn new(threads: usize, keep: usize, connect_timeout: Duration) -> Self {
        DirectClient {
            idle: (0..threads.max(1)).map(|_| Mutex::default()).collect(),
            keep,
            sweeping: AtomicBool::new(false),
            connect_timeout,
        }
    }

    /// Sends `request` (its URI absolute, `http://`) and reads its answer, the body at
    /// most `limit` bytes, without the headers named in `leave_out`.
    pub(crate) async fn exchange(
        &self,
        request: UpstreamRequest,
        limit: usize,
        leave_out: &[HeaderName],
    ) -> Result<ReadAnswer, DirectError> {
        let UpstreamRequest {
            method,
            uri,
            headers,
            body,
        } = request;
        let Some(authority) = uri.authority().cloned() else {
            return Err(DirectError::Connect(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the upstream URI names no host",
            )));
        };
        let head = head(&method, &uri, &authority, &headers, body.len());
        let slot = &self.idle[crate::io_thread::current() % self.idle.len()];
        let mut stream = match take(slot, &authority) {
            Some(stream) => stream,
            None => self.connect(&authority).await?,
        };
        write_all(&mut stream, &head, &body)
            .await
            .map_err(DirectError::Write)?;
        let answer = read_answer(&mut stream, &method, limit, leave_out).await?;
        if answer.reusable {
            let mut idle = slot
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let list = idle.entry(authority);
            if list.len() < self.keep {
                list.push(Idle {
                    stream,
                    since: Instant::now(),
                });
            }
            drop(idle);
            if !self.sweeping.load(Ordering::Relaxed)
                && !self.sweeping.swap(true, Ordering::Relaxed)
            {
                tokio::spawn(sweeper(Arc::downgrade(&self.idle)));
            }
        }
        Ok(answer)
    }

    /// A new connection to `authority` (port 80 when it names none), each of its
    /// addresses tried in turn within the connect timeout.
    async fn connect(&self, authority: &Authority) -> Result<TcpStream, DirectError> {
        let port = authority.port_u16().unwrap_or(80);
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let attempt = async {
            let addresses: Vec<SocketAddr> = match host.parse::<IpAddr>() {
                Ok(ip) => vec![SocketAddr::new(ip, port)],
                Err(_) => tokio::net::lookup_host((host, port)).await?.collect(),
            };
            let mut last = io::Error::new(io::ErrorKind::NotFound, "the host has no address");
            for address in addresses {
                match TcpStream::connect(address).await {
                    Ok(stream) => return Ok(stream),
                    Err(e) => last = e,
                }
            }
            Err(last)
        };
        let stream = tokio::time::timeout(self.connect_timeout, attempt)
            .await
            .map_err(|_| DirectError::ConnectTimeout(self.connect_timeout.as_millis()))?
            .map_err(DirectError::Connect)?;
        stream.set_nodelay(true).map_err(DirectError::Connect)?;
        Ok(stream)
    }
}

/// Every [`SWEEP_EVERY`], closes the idle connections of `lists` that are closed or
/// too old; ends when the client is gone.
async fn sweeper(lists: Weak<[Mutex<IdleList>]>) {
    let mut every = tokio::time::interval(SWEEP_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    every.tick().await;
    loop {
        every.tick().await;
        let Some(lists) = lists.upgrade() else {
            return;
        };
        for slot in lists.iter() {
            sweep(slot);
        }
    }
}

/// Drops the connections of `slot` that the upstream closed, that hold bytes nobody asked
/// for, or that were idle longer than [`IDLE_FOR`].
fn sweep(slot: &Mutex<IdleList>) {
    let mut idle = slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for (_, list) in &mut idle.by_authority {
        list.retain(Idle::usable);
    }
    idle.by_authority.retain(|(_, list)| !list.is_empty());
}

/// The most recently idled live connection to `authority` in `slot`; closed, talkative
/// and stale ones met on the way are dropped.
fn take(slot: &Mutex<IdleList>, authority: &Authority) -> Option<TcpStream> {
    let mut idle = slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let list = idle.get_mut(authority)?;
    while let Some(idle) = list.pop() {
        if idle.usable() {
            return Some(idle.stream);
        }
    }
    None
}

/// The request line and headers: `Host` unless the headers carry one, the headers (which
/// hold no framing header), `Content-Length` for a body or a POST.
fn head(
    method: &Method,
    uri: &Uri,
    authority: &Authority,
    headers: &HeaderList,
    body_len: usize,
) -> Vec<u8> {
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let lines = headers.as_bytes();
    let mut out = Vec::with_capacity(96 + path.len() + authority.as_str().len() + lines.len());
    out.extend_from_slice(method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    if !headers.contains(&HOST) {
        out.extend_from_slice(b"host: ");
        out.extend_from_slice(authority.as_str().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(lines);
    if body_len > 0 || method == Method::POST {
        out.extend_from_slice(b"content-length: ");
        out.extend_from_slice(itoa::Buffer::new().format(body_len).as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// Writes `head` then `body`, together where the socket takes them.
async fn write_all(stream: &mut TcpStream, head: &[u8], body: &[u8]) -> io::Result<()> {
    let mut done = 0;
    while done < head.len() {
        let slices = [IoSlice::new(&head[done..]), IoSlice::new(body)];
        let n = stream.write_vectored(&slices).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        done += n;
    }
    let sent = done - head.len();
    stream.write_all(&body[sent..]).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use http::header::{CONTENT_LENGTH, CONTENT_TYPE, TRANSFER_ENCODING};

    #[test]
    fn the_head_carries_host_the_headers_and_the_length() {
        let uri: Uri = "http://backend:8080/svc?x=1".parse().unwrap();
        let mut headers = HeaderList::default();
        headers.append(&CONTENT_TYPE, &HeaderValue::from_static("text/xml"));
        headers.append(&CONTENT_LENGTH, &HeaderValue::from_static("999"));
        headers.append(&TRANSFER_ENCODING, &HeaderValue::from_static("chunked"));
        let text = head(
            &Method::POST,
            &uri,
            uri.authority().unwrap(),
            &headers,
            1234,
        );
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "POST /svc?x=1 HTTP/1.1\r\nhost: backend:8080\r\ncontent-type: text/xml\r\ncontent-length: 1234\r\n\r\n"
        );
        let text = head(
            &Method::GET,
            &uri,
            uri.authority().unwrap(),
            &HeaderList::default(),
            0,
        );
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "GET /svc?x=1 HTTP/1.1\r\nhost: backend:8080\r\n\r\n"
        );
        // A host set by the service's rules is the only one.
        let mut headers = HeaderList::default();
        headers.append(&HOST, &HeaderValue::from_static("virtual.example"));
        let text = head(&Method::GET, &uri, uri.authority().unwrap(), &headers, 0);
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "GET /svc?x=1 HTTP/1.1\r\nhost: virtual.example\r\n\r\n"
        );
    }

    #[test]
    fn authorities_are_the_same_by_bytes_or_ignoring_case() {
        let a: Authority = "Backend.example:8080".parse().unwrap();
        assert!(same(&a, &"Backend.example:8080".parse().unwrap()));
        assert!(same(&a, &"backend.EXAMPLE:8080".parse().unwrap()));
        assert!(!same(&a, &"backend.example:8081".parse().unwrap()));
    }

    #[tokio::test]
    async fn a_sweep_closes_connections_the_upstream_closed_and_keeps_live_ones() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let at = listener.local_addr().unwrap();
        let authority: Authority = at.to_string().parse().unwrap();
        let kept = TcpStream::connect(at).await.unwrap();
        let (_served_kept, _) = listener.accept().await.unwrap();
        let closed = TcpStream::connect(at).await.unwrap();
        let (served_closed, _) = listener.accept().await.unwrap();
        drop(served_closed);
        let slot = Mutex::new(IdleList::default());
        let now = Instant::now();
        let entries = vec![
            Idle {
                stream: kept,
                since: now,
            },
            Idle {
                stream: closed,
                since: now,
            },
        ];
        *slot.lock().unwrap().entry(authority.clone()) = entries;
        // The closed one becomes readable (its end of stream) once the reactor has seen it.
        let mut left = usize::MAX;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(10)).await;
            sweep(&slot);
            left = slot
                .lock()
                .unwrap()
                .get_mut(&authority)
                .map_or(0, |l| l.len());
            if left == 1 {
                break;
            }
        }
        assert_eq!(left, 1, "the closed connection is swept, the live one kept");
    }

    #[tokio::test]
    async fn idle_connections_are_kept_apart_by_authority_in_any_case() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let at = listener.local_addr().unwrap();
        let mut idle = IdleList::default();
        let one: Authority = "Backend-One:8080".parse().unwrap();
        let two: Authority = "backend-two:8080".parse().unwrap();
        for authority in [&one, &two, &one] {
            idle.entry(authority.clone()).push(Idle {
                stream: TcpStream::connect(at).await.unwrap(),
                since: Instant::now(),
            });
        }
        let lower: Authority = "backend-one:8080".parse().unwrap();
        assert_eq!(idle.get_mut(&lower).map(|l| l.len()), Some(2));
        assert_eq!(idle.get_mut(&two).map(|l| l.len()), Some(1));
        let other: Authority = "backend-one:8081".parse().unwrap();
        assert!(idle.get_mut(&other).is_none());
        assert_eq!(idle.by_authority.len(), 2);
    }

    #[test]
    fn decimals_are_written_whole() {
        let uri: Uri = "http://up.example/ws".parse().unwrap();
        let authority = uri.authority().unwrap().clone();
        for n in [0usize, 7, 10, 65_535, usize::MAX] {
            let out = head(&Method::POST, &uri, &authority, &HeaderList::default(), n);
            let field = format!("content-length: {n}\r\n");
            assert!(
                String::from_utf8_lossy(&out).contains(&field),
                "{}",
                String::from_utf8_lossy(&out)
            );
        }
    }
}
