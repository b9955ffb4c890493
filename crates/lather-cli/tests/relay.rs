//! `lather relay` as a user runs it: SOAP requests pass through it unchanged both ways, each
//! exchange is shown with its operation, a recording holds the requests byte for byte, and
//! `--replay` sends them again byte-identical to another server. Bad arguments and
//! recordings are errors that name the problem.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use lather_test_util::ScratchDir;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

const ANSWER: &str = r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><m:done xmlns:m="urn:m">ok</m:done></s:Body></s:Envelope>"#;

/// A backend keeping (path, soapaction, body) of every request; answers `ANSWER`.
async fn backend() -> (SocketAddr, Arc<Mutex<Vec<(String, String, Bytes)>>>) {
    let seen: Arc<Mutex<Vec<(String, String, Bytes)>>> = Arc::default();
    let kept = seen.clone();
    let addr = lather_test_util::http::serve(move |req: http::Request<hyper::body::Incoming>| {
        let kept = kept.clone();
        async move {
            let path = req.uri().path().to_owned();
            let action = req
                .headers()
                .get("soapaction")
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_default();
            let body = req.into_body().collect().await.unwrap().to_bytes();
            kept.lock().unwrap().push((path, action, body));
            let mut r = http::Response::new(Full::new(Bytes::from_static(ANSWER.as_bytes())));
            r.headers_mut()
                .insert("content-type", "application/soap+xml".parse().unwrap());
            r
        }
    })
    .await;
    (addr, seen)
}

/// `lather relay` started with `args`; its child and the address it listens on.
fn start_relay(args: &[&str]) -> (Child, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lather"))
        .arg("relay")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .strip_prefix("relaying ")
        .and_then(|l| l.split(' ').next())
        .unwrap_or_else(|| panic!("unexpected first line: {line}"))
        .parse()
        .unwrap();
    (child, addr)
}

fn request(i: usize) -> String {
    format!(
        r#"<?xml version="1.0"?><s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><m:order xmlns:m="urn:shop"><item>{i} &amp; more</item></m:order></s:Body></s:Envelope>"#
    )
}

async fn post(addr: SocketAddr, path: &str, body: String) -> (u16, Bytes) {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = http::Request::post(path)
        .header("host", addr.to_string())
        .header("content-type", "text/xml; charset=utf-8")
        .header("soapaction", "\"urn:shop#order\"")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let response = send.send_request(req).await.unwrap();
    let status = response.status().as_u16();
    (
        status,
        response.into_body().collect().await.unwrap().to_bytes(),
    )
}

#[tokio::test]
async fn requests_pass_unchanged_are_shown_recorded_and_replayed_byte_for_byte() {
    let (first, seen) = backend().await;
    let dir = ScratchDir::new("relay");
    let recording = dir.join("session.jsonl");
    let (mut relay, addr) = start_relay(&[
        "--listen",
        "127.0.0.1:0",
        "--to",
        &format!("http://{first}"),
        "--record",
        recording.to_str().unwrap(),
        "--print",
    ]);
    let sent: Vec<String> = (0..3).map(request).collect();
    for body in &sent {
        let (status, answer) = post(addr, "/shop?x=1", body.clone()).await;
        assert_eq!(status, 200);
        assert_eq!(answer, ANSWER.as_bytes());
    }
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 3);
        for ((path, action, body), want) in seen.iter().zip(&sent) {
            assert_eq!(path, "/shop");
            assert_eq!(action, "\"urn:shop#order\"");
            assert_eq!(body, want.as_bytes(), "the relay changed a request");
        }
    }
    relay.kill().unwrap();
    let output = relay.wait_with_output().unwrap();
    let shown = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        shown.matches("POST /shop?x=1 {urn:shop}order").count(),
        3,
        "{shown}"
    );
    assert!(shown.contains("-> 200"), "{shown}");
    assert!(
        shown.contains("--- request\n<?xml version=\"1.0\"?>\n<s:Envelope"),
        "{shown}"
    );
    assert!(shown.contains("      <item>0 &amp; more</item>"), "{shown}");

    let (second, replayed) = backend().await;
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_lather"))
            .args([
                "relay",
                "--replay",
                recording.to_str().unwrap(),
                &format!("http://{second}"),
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("replayed 3 requests: 3 × 200; 0 answered with another status"),
        "{stdout}"
    );
    let replayed = replayed.lock().unwrap();
    assert_eq!(replayed.len(), 3);
    for ((path, action, body), want) in replayed.iter().zip(&sent) {
        assert_eq!(path, "/shop");
        assert_eq!(action, "\"urn:shop#order\"");
        assert_eq!(body, want.as_bytes(), "the replay is not byte-identical");
    }
}

#[test]
fn bad_arguments_and_recordings_name_the_problem() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_lather"))
            .arg("relay")
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = run(&["--listen", "127.0.0.1:0", "--to", "http://127.0.0.1:9/echo"]);
    assert!(e.contains("give the base URL"), "{e}");
    let e = run(&["--listen", "127.0.0.1:0", "--to", "ftp://127.0.0.1:9"]);
    assert!(e.contains("only http:// and https://"), "{e}");
    let e = run(&[
        "--listen",
        "127.0.0.1:0",
        "--to",
        "https://127.0.0.1:9",
        "--ca-file",
        "/nonexistent/ca.pem",
    ]);
    assert!(
        e.contains("--ca-file") && e.contains("cannot be read"),
        "{e}"
    );
    let dir = ScratchDir::new("relay-bad");
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"method\":\"POST\"}\n").unwrap();
    let e = run(&["--replay", bad.to_str().unwrap(), "http://127.0.0.1:9"]);
    assert!(e.contains("line 1 is not a recorded exchange"), "{e}");
    let e = run(&["--replay", "/nonexistent/x.jsonl", "http://127.0.0.1:9"]);
    assert!(e.contains("cannot read the recording"), "{e}");
}

/// A lather echo over TLS with a self-signed certificate for localhost; its port and the
/// certificate's path (to trust it).
async fn tls_echo(dir: &std::path::Path) -> (u16, String) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert = dir.join("server.pem");
    let key = dir.join("server.key");
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[server.tls]\ncert_file = {:?}\nkey_file = {:?}\n[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n",
        cert.display().to_string(),
        key.display().to_string()
    );
    let config = lather_config::Config::from_toml(&text, "tls.toml").unwrap();
    let server = lather_http::Server::builder()
        .config(&config)
        .bind()
        .await
        .unwrap();
    let port = server.local_addr().port();
    tokio::spawn(server.serve(std::future::pending()));
    (port, cert.display().to_string())
}

#[tokio::test]
async fn an_https_server_is_relayed_to_and_replayed_against_trusting_ca_file() {
    let dir = ScratchDir::new("relay-tls");
    let (port, ca) = tls_echo(&dir).await;
    let to = format!("https://localhost:{port}");
    let recording = dir.join("tls.jsonl");
    let (mut relay, addr) = start_relay(&[
        "--listen",
        "127.0.0.1:0",
        "--to",
        &to,
        "--ca-file",
        &ca,
        "--record",
        recording.to_str().unwrap(),
    ]);
    // The echo takes it as SOAP 1.1, the version text/xml says.
    let soap11 = |i| {
        request(i).replace(
            "http://www.w3.org/2003/05/soap-envelope",
            "http://schemas.xmlsoap.org/soap/envelope/",
        )
    };
    let (status, answer) = post(addr, "/echo", soap11(7)).await;
    relay.kill().unwrap();
    let _ = relay.wait();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    assert!(
        String::from_utf8_lossy(&answer).contains("7 &amp; more"),
        "{}",
        String::from_utf8_lossy(&answer)
    );

    // Without the CA, the certificate is not trusted: a 502 naming the failure.
    let (mut relay, addr) = start_relay(&["--listen", "127.0.0.1:0", "--to", &to]);
    let (status, answer) = post(addr, "/echo", soap11(8)).await;
    relay.kill().unwrap();
    let _ = relay.wait();
    assert_eq!(status, 502, "{}", String::from_utf8_lossy(&answer));

    let replay = {
        let (recording, to, ca) = (recording.clone(), to.clone(), ca.clone());
        tokio::task::spawn_blocking(move || {
            Command::new(env!("CARGO_BIN_EXE_lather"))
                .args([
                    "relay",
                    "--ca-file",
                    &ca,
                    "--replay",
                    recording.to_str().unwrap(),
                    &to,
                ])
                .output()
                .unwrap()
        })
    };
    let out = replay.await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("replayed 1 requests: 1 × 200"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
