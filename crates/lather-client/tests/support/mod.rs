//! Test harness: lather's echo on `127.0.0.1:0`, and raw HTTP/1.1 peers that answer what a
//! test tells them (or never answer), counting their connections.

#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// The payload lather's echo answers unchanged.
pub const ECHO_PAYLOAD: &str =
    r#"<e:echo xmlns:e="urn:lather:echo"><text>hello &amp; bye</text></e:echo>"#;
/// The action sent to the echo.
pub const ECHO_ACTION: &str = "urn:lather:echo#echo";

/// A running lather server; stops when dropped.
pub struct Lather {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl Lather {
    /// A server with one echo service at `/echo`.
    pub async fn echo() -> Lather {
        let text = "[server]\nlisten = \"127.0.0.1:0\"\n\
                    [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n";
        let config = lather_config::Config::from_toml(text, "test.toml").expect("test config");
        let server = lather_http::Server::bind(&config).await.expect("bind");
        let addr = server.local_addr();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(server.serve(async {
            let _ = stopped.await;
        }));
        Lather {
            addr,
            stop: Some(stop),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }
}

impl Drop for Lather {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A raw HTTP/1.1 peer: reads each request (headers and a Content-Length body) and writes
/// the same canned answer bytes, keeping the connection open; or never answers at all.
pub struct RawPeer {
    pub addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    requests: Arc<std::sync::Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl RawPeer {
    /// Answers every request with `answer` (a whole HTTP response, head and body).
    pub async fn answering(answer: Vec<u8>) -> RawPeer {
        Self::start(Some(Arc::new(answer))).await
    }

    /// Accepts connections, reads, and never answers.
    pub async fn silent() -> RawPeer {
        Self::start(None).await
    }

    async fn start(answer: Option<Arc<Vec<u8>>>) -> RawPeer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (count, seen) = (connections.clone(), requests.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(stream, answer.clone(), seen.clone()));
            }
        });
        RawPeer {
            addr,
            connections,
            requests,
            task,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// How many connections were accepted.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// The heads (request line and headers) of the requests read so far.
    pub fn request_heads(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for RawPeer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Most bytes a raw peer reads of one request.
const MAX_REQUEST: usize = 1 << 20;

async fn serve(
    mut stream: TcpStream,
    answer: Option<Arc<Vec<u8>>>,
    seen: Arc<std::sync::Mutex<Vec<String>>>,
) {
    let mut buffer = Vec::new();
    loop {
        let head_end = loop {
            if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            if buffer.len() > MAX_REQUEST || !read_more(&mut stream, &mut buffer).await {
                return;
            }
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
        let length = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())
                    .flatten()
            })
            .unwrap_or(0);
        while buffer.len() < head_end + length {
            if buffer.len() > MAX_REQUEST || !read_more(&mut stream, &mut buffer).await {
                return;
            }
        }
        buffer.drain(..head_end + length);
        seen.lock().unwrap().push(head);
        match &answer {
            Some(bytes) => {
                if stream.write_all(bytes).await.is_err() {
                    return;
                }
            }
            // Hold the connection open and say nothing until the client gives up.
            None => {
                let _ = stream.read(&mut [0u8; 1]).await;
                return;
            }
        }
    }
}

async fn read_more(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 8192];
    match stream.read(&mut chunk).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buffer.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

/// A whole HTTP/1.1 response with a Content-Length.
pub fn http_answer(status: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// A whole HTTP/1.1 response sent chunked (no length known up front), in 64 KiB chunks.
pub fn chunked_answer(content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    for chunk in body.chunks(64 * 1024) {
        out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        out.extend_from_slice(chunk);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// An address nothing listens on (a port just bound and released).
pub async fn closed_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    listener.local_addr().expect("addr")
}
