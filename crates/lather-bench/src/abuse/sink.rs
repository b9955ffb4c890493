//! A mute event sink on loopback: accepts every connection, reads and
//! discards what arrives, never answers.
//!
//! It listens on 127.0.0.2 (Linux routes all of 127.0.0.0/8 to loopback), so
//! that a delivery policy can allow it without allowing 127.0.0.1, the
//! server's own address, which the SSRF case expects refused.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

/// The sink; dropping it closes every connection it holds.
#[derive(Debug)]
pub(crate) struct MuteSink {
    addr: SocketAddr,
    accepted: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl MuteSink {
    /// Listens on 127.0.0.2:0.
    pub(crate) async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.2:0").await?;
        let addr = listener.local_addr()?;
        let accepted = Arc::new(AtomicU64::new(0));
        let count = Arc::clone(&accepted);
        let task = tokio::spawn(async move {
            // Dropped (and its connections aborted) with this task.
            let mut held = JoinSet::new();
            while let Ok((mut stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::Relaxed);
                held.spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
                });
                while held.try_join_next().is_some() {}
            }
        });
        Ok(MuteSink {
            addr,
            accepted,
            task,
        })
    }

    /// `http://addr/sink`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}/sink", self.addr)
    }

    /// Connections accepted so far.
    pub(crate) fn connections(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }
}

impl Drop for MuteSink {
    fn drop(&mut self) {
        self.task.abort();
    }
}
