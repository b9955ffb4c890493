//! A pipelined HTTP/1.1 POST client for one sink: every notification taken from the queue
//! (up to [`MAX_WRITE`] bytes) is written as back-to-back requests in one write on one
//! keep-alive connection, then the answers are read in order (RFC 9112 §9.3.2). Order is
//! kept, one connection per sink; a connection that fails or closes mid-batch is replaced
//! and the requests not yet answered are sent again.

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Most request bytes gathered for one write.
pub(crate) const MAX_WRITE: usize = 256 * 1024;
/// Largest answer head accepted.
const MAX_HEAD: usize = 16 * 1024;
/// Largest answer body skipped (a sink's answer to a notification is normally empty).
const MAX_BODY: u64 = 1024 * 1024;

/// The connection and what was read ahead of the next answer.
#[derive(Debug)]
pub(crate) struct Pipeline {
    authority: String,
    stream: Option<TcpStream>,
    read: Vec<u8>,
}

/// One answer's fate.
enum Answer {
    /// A final status; whether the connection stays usable after it.
    Status(u16, bool),
}

impl Pipeline {
    pub(crate) fn new(authority: String) -> Pipeline {
        Pipeline {
            authority,
            stream: None,
            read: Vec::new(),
        }
    }

    /// Whether a connection is open (from an earlier exchange).
    pub(crate) fn connected(&self) -> bool {
        self.stream.is_some()
    }

    /// Writes `requests` (already serialised, `count` of them) and reads their answers.
    /// Returns how many were answered 2xx before the first failure, and the failure.
    pub(crate) async fn exchange(
        &mut self,
        requests: &[u8],
        count: usize,
        timeout: Duration,
    ) -> (usize, Option<String>) {
        if let Err(why) = self.connect(timeout).await {
            return (0, Some(why));
        }
        let Some(stream) = self.stream.as_mut() else {
            return (0, Some("no connection".into()));
        };
        match tokio::time::timeout(timeout, stream.write_all(requests)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return self.fail(0, format!("writing to {}: {e}", self.authority)),
            Err(_) => {
                return self.fail(
                    0,
                    format!("{} took no bytes within {timeout:?}", self.authority),
                );
            }
        }
        for done in 0..count {
            match tokio::time::timeout(timeout, self.answer()).await {
                Ok(Ok(Answer::Status(status, keep))) => {
                    if !(200..300).contains(&status) {
                        return self.fail(done, format!("the sink answered {status}"));
                    }
                    if !keep {
                        self.stream = None;
                        self.read.clear();
                        if done + 1 < count {
                            return (done + 1, Some("the sink closed the connection".into()));
                        }
                    }
                }
                Ok(Err(why)) => return self.fail(done, why),
                Err(_) => return self.fail(done, format!("no answer within {timeout:?}")),
            }
        }
        (count, None)
    }

    fn fail(&mut self, done: usize, why: String) -> (usize, Option<String>) {
        self.stream = None;
        self.read.clear();
        (done, Some(why))
    }

    async fn connect(&mut self, timeout: Duration) -> Result<(), String> {
        if self.stream.is_some() {
            return Ok(());
        }
        self.stream = Some(super::connect(&self.authority, timeout).await?);
        self.read.clear();
        Ok(())
    }

    /// Reads more bytes into `read`; an error at end of stream.
    async fn fill(&mut self) -> Result<(), String> {
        let Some(stream) = self.stream.as_mut() else {
            return Err("no connection".into());
        };
        let mut chunk = [0u8; 8192];
        match stream.read(&mut chunk).await {
            Ok(0) => Err(format!("{} closed the connection", self.authority)),
            Ok(n) => {
                self.read.extend_from_slice(&chunk[..n]);
                Ok(())
            }
            Err(e) => Err(format!("reading from {}: {e}", self.authority)),
        }
    }

    /// Reads one final answer (skipping 1xx) and its body.
    async fn answer(&mut self) -> Result<Answer, String> {
        loop {
            let (status, head_len, body, keep) = loop {
                let mut headers = [httparse::EMPTY_HEADER; 32];
                let mut response = httparse::Response::new(&mut headers);
                match response.parse(&self.read) {
                    Ok(httparse::Status::Complete(len)) => {
                        let status = response.code.unwrap_or(0);
                        let (body, keep) = framing(&response, status)?;
                        break (status, len, body, keep);
                    }
                    Ok(httparse::Status::Partial) if self.read.len() < MAX_HEAD => {
                        self.fill().await?;
                    }
                    Ok(httparse::Status::Partial) => return Err("answer head too long".into()),
                    Err(e) => return Err(format!("unreadable answer: {e}")),
                }
            };
            self.read.drain(..head_len);
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

    async fn skip(&mut self, mut n: u64) -> Result<(), String> {
        loop {
            let here = (self.read.len() as u64).min(n);
            self.read.drain(..here as usize);
            n -= here;
            if n == 0 {
                return Ok(());
            }
            self.fill().await?;
        }
    }

    async fn skip_chunked(&mut self) -> Result<(), String> {
        let mut total = 0u64;
        loop {
            let line_end = loop {
                if let Some(i) = self.read.windows(2).position(|w| w == b"\r\n") {
                    break i;
                }
                if self.read.len() > 1024 {
                    return Err("bad chunk size line".into());
                }
                self.fill().await?;
            };
            let line = String::from_utf8_lossy(&self.read[..line_end]).into_owned();
            let size = u64::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| format!("bad chunk size {line:?}"))?;
            self.read.drain(..line_end + 2);
            total = total.saturating_add(size);
            if total > MAX_BODY {
                return Err("answer body too long".into());
            }
            if size == 0 {
                // Trailers (normally none) end with an empty line.
                loop {
                    if let Some(i) = self.read.windows(2).position(|w| w == b"\r\n") {
                        self.read.drain(..i + 2);
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
fn framing(response: &httparse::Response<'_, '_>, status: u16) -> Result<(Body, bool), String> {
    let mut length = None;
    let mut chunked = false;
    let mut keep = response.version == Some(1);
    for h in response.headers.iter() {
        let value = std::str::from_utf8(h.value).unwrap_or("").trim();
        if h.name.eq_ignore_ascii_case("content-length") {
            length = Some(
                value
                    .parse::<u64>()
                    .map_err(|_| "bad Content-Length".to_owned())?,
            );
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().ends_with("chunked");
        } else if h.name.eq_ignore_ascii_case("connection") {
            let v = value.to_ascii_lowercase();
            if v.contains("close") {
                keep = false;
            } else if v.contains("keep-alive") {
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
            return Err("answer body too long".into());
        }
        Body::Length(n)
    } else {
        Body::UntilClose
    };
    Ok((body, keep))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// A sink that answers the pipelined requests with `answers` (raw bytes), then closes.
    async fn scripted(answers: &'static [u8]) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf).await;
            s.write_all(answers).await.unwrap();
        });
        addr
    }

    #[tokio::test]
    async fn answers_in_every_framing_are_read_in_order() {
        let addr = scripted(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\nHTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n",
        )
        .await;
        let mut p = Pipeline::new(addr);
        let (done, why) = p.exchange(b"x", 5, Duration::from_secs(2)).await;
        assert_eq!(done, 3);
        assert_eq!(why.as_deref(), Some("the sink answered 500"));
    }

    #[tokio::test]
    async fn a_close_mid_batch_reports_what_was_answered() {
        let addr = scripted(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").await;
        let mut p = Pipeline::new(addr);
        let (done, why) = p.exchange(b"x", 3, Duration::from_secs(2)).await;
        assert_eq!(done, 1);
        assert!(why.unwrap().contains("closed"));
        let addr =
            scripted(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").await;
        let mut p = Pipeline::new(addr);
        assert_eq!(
            p.exchange(b"x", 2, Duration::from_secs(2)).await,
            (1, Some("the sink closed the connection".into()))
        );
    }
}
