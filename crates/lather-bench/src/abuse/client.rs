//! A minimal HTTP/1.1 client for hostile and probe requests: one connection
//! per request (`Connection: close`), the answer read until the server
//! closes, bounded in time and in the bytes kept.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// Bytes of an answer kept for inspection; the rest is counted, not kept.
const KEPT: usize = 256 * 1024;

/// An answer as read.
#[derive(Debug, Clone)]
pub(crate) struct RawAnswer {
    /// The status code.
    pub(crate) status: u16,
    /// The first [`KEPT`] bytes of the body (as sent: possibly chunked).
    pub(crate) body: String,
    /// Every byte read after the head (the whole body, chunk framing included).
    pub(crate) body_len: u64,
    /// True when the read stopped at the byte limit before the server closed.
    pub(crate) truncated: bool,
}

impl RawAnswer {
    /// Whether the body holds a SOAP Fault element.
    pub(crate) fn is_fault(&self) -> bool {
        self.body.contains(":Fault") || self.body.contains("<Fault")
    }

    /// A status of 400 or more with a SOAP Fault in the body.
    pub(crate) fn is_soap_fault(&self) -> bool {
        self.status >= 400 && self.is_fault()
    }
}

/// One request: what to send and how long and how much to read.
#[derive(Debug, Clone)]
pub(crate) struct RawCall<'a> {
    /// `POST` or `GET`.
    pub(crate) method: &'a str,
    /// Request target.
    pub(crate) path: &'a str,
    /// Extra header lines, each `Name: value`.
    pub(crate) headers: &'a [String],
    /// Request body.
    pub(crate) body: &'a [u8],
    /// Bound on the whole exchange.
    pub(crate) timeout: Duration,
    /// Stop reading (and drop the connection) after this many body bytes.
    pub(crate) max_read: u64,
    /// Connect from this local address (any port) instead of the default.
    pub(crate) from: Option<IpAddr>,
}

impl<'a> RawCall<'a> {
    /// A POST of a SOAP 1.2 envelope.
    pub(crate) fn soap12(path: &'a str, body: &'a [u8], timeout: Duration) -> Self {
        RawCall {
            method: "POST",
            path,
            headers: &[],
            body,
            timeout,
            max_read: 16 * 1024 * 1024,
            from: None,
        }
    }

    /// A GET.
    pub(crate) fn get(path: &'a str, timeout: Duration) -> Self {
        RawCall {
            method: "GET",
            path,
            headers: &[],
            body: b"",
            timeout,
            max_read: 16 * 1024 * 1024,
            from: None,
        }
    }
}

/// Sends `call` to `addr`; an error names what failed (connect, write,
/// timeout, malformed answer).
pub(crate) async fn send(addr: SocketAddr, call: &RawCall<'_>) -> Result<RawAnswer, String> {
    match tokio::time::timeout(call.timeout, exchange(addr, call)).await {
        Ok(result) => result,
        Err(_) => Err(format!("no complete answer within {:?}", call.timeout)),
    }
}

async fn exchange(addr: SocketAddr, call: &RawCall<'_>) -> Result<RawAnswer, String> {
    let mut stream = connect(addr, call.from)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let mut head = format!(
        "{} {} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n",
        call.method, call.path
    );
    if call.method == "POST" {
        if !call
            .headers
            .iter()
            .any(|h| h.to_ascii_lowercase().starts_with("content-type:"))
        {
            head.push_str("Content-Type: application/soap+xml; charset=utf-8\r\n");
        }
        head.push_str(&format!("Content-Length: {}\r\n", call.body.len()));
    }
    for h in call.headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .await
        .map_err(|e| format!("write: {e}"))?;
    // A server may answer (a fault) and close before the body is all in.
    let wrote = stream.write_all(call.body).await;
    let mut kept = Vec::new();
    let mut total: u64 = 0;
    let mut buf = vec![0u8; 64 * 1024];
    let mut truncated = false;
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(n) => n,
            Err(e) if kept.is_empty() => return Err(format!("read: {e}")),
            Err(_) => break,
        };
        if n == 0 {
            break;
        }
        total += n as u64;
        if kept.len() < KEPT {
            let room = KEPT - kept.len();
            kept.extend_from_slice(&buf[..n.min(room)]);
        }
        if total > call.max_read {
            truncated = true;
            break;
        }
    }
    if kept.is_empty() {
        return Err(match wrote {
            Err(e) => format!("write: {e}"),
            Ok(()) => "closed without an answer".to_owned(),
        });
    }
    parse(&kept, total, truncated)
}

/// Connects to `addr`, from `from` when given.
async fn connect(addr: SocketAddr, from: Option<IpAddr>) -> std::io::Result<TcpStream> {
    let Some(from) = from else {
        return TcpStream::connect(addr).await;
    };
    let socket = if from.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.bind(SocketAddr::new(from, 0))?;
    socket.connect(addr).await
}

fn parse(raw: &[u8], total: u64, truncated: bool) -> Result<RawAnswer, String> {
    let text = String::from_utf8_lossy(raw);
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| text.strip_prefix("HTTP/1.0 "))
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("not an HTTP answer: {:?}", &text[..text.len().min(60)]))?;
    let head_len = text.find("\r\n\r\n").map_or(text.len(), |i| i + 4);
    Ok(RawAnswer {
        status,
        body: text[head_len..].to_owned(),
        body_len: total.saturating_sub(head_len as u64),
        truncated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_and_body_are_split() {
        let a = parse(
            b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 22\r\n\r\n<s:Fault>x</s:Fault>!!",
            80,
            false,
        )
        .unwrap();
        assert_eq!(a.status, 500);
        assert!(a.is_soap_fault());
        assert_eq!(a.body, "<s:Fault>x</s:Fault>!!");
        assert_eq!(a.body_len, 80 - 58);
        assert!(parse(b"garbage", 7, false).is_err());
    }
}
