//! Draining a runtime's connections: tell each to finish what it serves, then wait for
//! them all to end.

use crate::when_woken::WhenWoken;
use hyper_util::server::graceful::GracefulConnection;
use std::pin::pin;
use tokio::sync::watch;

/// The connections one runtime serves, to be drained together at shutdown.
#[derive(Debug)]
pub(crate) struct Drain {
    asked: watch::Sender<()>,
}

impl Drain {
    /// No connection yet.
    pub(crate) fn new() -> Self {
        Drain {
            asked: watch::channel(()).0,
        }
    }

    /// What a new connection watches for the drain.
    pub(crate) fn watch(&self) -> DrainWatch {
        // Subscribed now: only a drain asked from here on counts.
        DrainWatch {
            asked: self.asked.subscribe(),
        }
    }

    /// Asks every watched connection to finish gracefully and completes when all have
    /// ended (each drops its watch when it ends).
    pub(crate) async fn shutdown(self) {
        let _ = self.asked.send(());
        self.asked.closed().await;
    }
}

/// One connection's part of a [`Drain`].
#[derive(Debug)]
pub(crate) struct DrainWatch {
    asked: watch::Receiver<()>,
}

impl DrainWatch {
    /// Serves `connection` to its end. Once a drain is asked (or the [`Drain`] is gone),
    /// the connection is told to shut down gracefully — answer what it has begun, take no
    /// new request — and is still served until it ends. The signal is looked at only when
    /// it has changed, not at each of the connection's wake-ups.
    pub(crate) async fn serve<C: GracefulConnection>(self, connection: C) -> C::Output {
        let mut asked = self.asked;
        let mut connection = pin!(connection);
        let mut drain = WhenWoken::new(async move {
            let _ = asked.changed().await;
            asked
        });
        let held = tokio::select! {
            biased;
            ended = connection.as_mut() => return ended,
            held = &mut drain => held,
        };
        connection.as_mut().graceful_shutdown();
        let ended = connection.await;
        // Dropped last: the drain completes only when the connection has ended.
        drop(held);
        ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http_body_util::Full;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;
    use std::convert::Infallible;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nhost: t\r\n\r\n";

    /// Serves one connection on a loopback port under `watch`, each request answered
    /// after `pause`; returns the client's end.
    async fn served(watch: DrainWatch, pause: Duration) -> TcpStream {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let service = service_fn(move |_req| async move {
                tokio::time::sleep(pause).await;
                Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from_static(b"ok"))))
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            let _ = watch.serve(connection).await;
        });
        TcpStream::connect(addr).await.unwrap()
    }

    /// Reads one whole answer (its body is `ok`) from `client`.
    async fn answer(client: &mut TcpStream) -> String {
        let mut got = Vec::new();
        let mut buf = [0u8; 512];
        while !got.ends_with(b"ok") {
            let n = client.read(&mut buf).await.unwrap();
            assert!(
                n > 0,
                "closed before the answer: {:?}",
                String::from_utf8_lossy(&got)
            );
            got.extend_from_slice(&buf[..n]);
        }
        String::from_utf8(got).unwrap()
    }

    #[tokio::test]
    async fn an_idle_connection_is_closed_and_the_drain_completes() {
        let drain = Drain::new();
        let mut client = served(drain.watch(), Duration::ZERO).await;
        // Kept alive across requests until the drain is asked.
        for _ in 0..2 {
            client.write_all(REQUEST).await.unwrap();
            assert!(answer(&mut client).await.starts_with("HTTP/1.1 200"));
        }
        tokio::time::timeout(Duration::from_secs(5), drain.shutdown())
            .await
            .expect("the drain completes once the idle connection has closed");
        let mut rest = Vec::new();
        let n = client.read_to_end(&mut rest).await.unwrap_or(0);
        assert_eq!(
            n,
            0,
            "the connection ends: {:?}",
            String::from_utf8_lossy(&rest)
        );
    }

    #[tokio::test]
    async fn a_request_in_flight_is_answered_before_the_drain_completes() {
        let drain = Drain::new();
        let mut client = served(drain.watch(), Duration::from_millis(300)).await;
        client.write_all(REQUEST).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let drained = tokio::spawn(drain.shutdown());
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !drained.is_finished(),
            "the drain waits for the request in flight"
        );
        let got = answer(&mut client).await;
        assert!(got.starts_with("HTTP/1.1 200"), "{got}");
        // Told to finish: it says so to the client, then ends.
        assert!(
            got.to_ascii_lowercase().contains("connection: close"),
            "{got}"
        );
        tokio::time::timeout(Duration::from_secs(5), drained)
            .await
            .expect("the drain completes after the answer")
            .unwrap();
    }
}
