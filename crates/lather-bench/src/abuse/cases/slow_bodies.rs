//! f. Slow bodies: connections that send one body byte every 2 s while the
//! probe runs on the same service.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::{CaseVerdict, Ctx};

/// Pause between two body bytes.
const BYTE_EVERY: Duration = Duration::from_secs(2);

/// The expectation: nothing beyond the probe answering (checked for every
/// case); the slow senders' fate is reported.
pub(crate) fn expected() -> bool {
    true
}

/// What happened to one slow sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Still open at the end.
    Open,
    /// The server answered (e.g. 408) or closed it.
    Ended,
    /// It could not connect.
    NoConnect,
}

/// Runs the case.
pub(crate) async fn run(ctx: &Ctx) -> CaseVerdict {
    let senders = ctx.pick(10, 40);
    let sending_for = Duration::from_secs(ctx.pick(5, 10));
    let end = Instant::now() + sending_for;
    let mut set = JoinSet::new();
    for _ in 0..senders {
        let (addr, path) = (ctx.addr, ctx.echo.clone());
        set.spawn(async move {
            let Ok(mut stream) = TcpStream::connect(addr).await else {
                return Fate::NoConnect;
            };
            let head = format!(
                "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/soap+xml; charset=utf-8\r\nContent-Length: 4096\r\n\r\n"
            );
            if stream.write_all(head.as_bytes()).await.is_err() {
                return Fate::Ended;
            }
            let mut buf = [0u8; 1024];
            while Instant::now() < end {
                if stream.write_all(b" ").await.is_err() {
                    return Fate::Ended;
                }
                // Wait for the next byte, or see the server end it.
                match tokio::time::timeout(BYTE_EVERY, stream.read(&mut buf)).await {
                    Err(_) => {}
                    Ok(_) => return Fate::Ended,
                }
            }
            Fate::Open
        });
    }
    let mut fates = Vec::new();
    while let Some(joined) = set.join_next().await {
        fates.push(joined.unwrap_or(Fate::NoConnect));
    }
    let count = |f: Fate| fates.iter().filter(|&&x| x == f).count();
    CaseVerdict::new(
        expected(),
        format!(
            "{senders} slow senders for {} s: {} ended by the server, {} still open, {} not connected",
            sending_for.as_secs(),
            count(Fate::Ended),
            count(Fate::Open),
            count(Fate::NoConnect)
        ),
    )
}
