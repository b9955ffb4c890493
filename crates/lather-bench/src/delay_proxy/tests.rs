//! The proxy's forwarding: every byte, in order, both ways, ends of stream passed on.
//! (Not its timing, beyond never forwarding early.)

use super::DelayProxy;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Starts a proxy with `delay` in front of `target` on its own thread; its address.
fn proxy_to(target: SocketAddr, delay: Duration) -> SocketAddr {
    let proxy = DelayProxy::bind(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        target.to_string(),
        delay,
    )
    .unwrap();
    let addr = proxy.local_addr();
    std::thread::spawn(move || proxy.serve(false));
    addr
}

/// A server that, per connection, runs `handle` on its own thread.
fn server(handle: fn(TcpStream)) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let conn = conn.unwrap();
            std::thread::spawn(move || handle(conn));
        }
    });
    addr
}

/// Echoes every byte until the client's end of stream, then closes.
fn echo(mut conn: TcpStream) {
    let mut buf = [0u8; 4096];
    loop {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => conn.write_all(&buf[..n]).unwrap(),
        }
    }
    let _ = conn.shutdown(Shutdown::Write);
}

/// Numbered records, written in many small writes: order shows in the bytes.
fn records(count: usize) -> Vec<u8> {
    (0..count)
        .flat_map(|i| format!("record {i:06};").into_bytes())
        .collect()
}

#[test]
fn forwards_every_byte_in_order_both_ways() {
    let proxy = proxy_to(server(echo), Duration::from_micros(100));
    let mut client = TcpStream::connect(proxy).unwrap();
    let sent = records(20_000);
    let mut writer = client.try_clone().unwrap();
    let to_send = sent.clone();
    let writing = std::thread::spawn(move || {
        for piece in to_send.chunks(997) {
            writer.write_all(piece).unwrap();
        }
        writer.shutdown(Shutdown::Write).unwrap();
    });
    let mut received = Vec::new();
    client.read_to_end(&mut received).unwrap();
    writing.join().unwrap();
    assert_eq!(received.len(), sent.len());
    assert!(received == sent, "bytes reordered or altered");
}

#[test]
fn passes_the_servers_first_words_and_its_close() {
    fn greet_then_close(mut conn: TcpStream) {
        conn.write_all(b"INFO {}\r\n").unwrap();
        let mut line = [0u8; 6];
        conn.read_exact(&mut line).unwrap();
        assert_eq!(&line, b"PING\r\n");
        conn.write_all(b"PONG\r\n").unwrap();
    }
    let proxy = proxy_to(server(greet_then_close), Duration::from_micros(50));
    let mut client = TcpStream::connect(proxy).unwrap();
    let mut info = [0u8; 9];
    client.read_exact(&mut info).unwrap();
    assert_eq!(&info, b"INFO {}\r\n");
    client.write_all(b"PING\r\n").unwrap();
    let mut rest = Vec::new();
    client.read_to_end(&mut rest).unwrap();
    assert_eq!(rest, b"PONG\r\n", "the answer, then the end of stream");
}

#[test]
fn a_round_trip_takes_at_least_twice_the_delay() {
    let delay = Duration::from_millis(20);
    let proxy = proxy_to(server(echo), delay);
    let mut client = TcpStream::connect(proxy).unwrap();
    for _ in 0..3 {
        let started = Instant::now();
        client.write_all(b"x").unwrap();
        let mut one = [0u8; 1];
        client.read_exact(&mut one).unwrap();
        assert!(started.elapsed() >= 2 * delay, "{:?}", started.elapsed());
    }
}

#[test]
fn a_refused_target_closes_the_client() {
    let unused = TcpListener::bind("127.0.0.1:0").unwrap();
    let target = unused.local_addr().unwrap();
    drop(unused);
    let proxy = proxy_to(target, Duration::from_micros(10));
    let mut client = TcpStream::connect(proxy).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut rest = Vec::new();
    assert_eq!(client.read_to_end(&mut rest).unwrap(), 0);
}

#[test]
fn a_rate_limited_link_is_never_faster_than_its_rate() {
    // 80 kbit/s is 10 000 bytes a second: 4 000 bytes need 0.4 s on the way up alone.
    let proxy = DelayProxy::bind(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        server(echo).to_string(),
        Duration::from_micros(10),
    )
    .unwrap()
    .rate_bps(80_000);
    let addr = proxy.local_addr();
    std::thread::spawn(move || proxy.serve(false));
    let mut client = TcpStream::connect(addr).unwrap();
    let sent = vec![7u8; 4_000];
    let started = Instant::now();
    client.write_all(&sent).unwrap();
    let mut back = vec![0u8; sent.len()];
    client.read_exact(&mut back).unwrap();
    assert_eq!(back, sent, "every byte, in order");
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
}
