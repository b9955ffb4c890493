//! The client against a gSOAP 2.8 echo server — the peer lather's benchmarks run
//! (`bench/gsoap`): both SOAP versions, WS-Addressing headers it ignores, and its faults.
//!
//! The server is built with `bench/gsoap/build.sh` into this crate's test scratch directory.
//! It needs gSOAP's `soapcpp2`, its headers and library (Debian: `apt-get install -y gsoap
//! libgsoap-dev`, which `.ci/run` does) and a C compiler; without them the tests fail
//! saying so.

use crate::support;

use lather_client::{Call, Client, ClientError, Wsa};
use lather_envelope::{Element, Limits, QName, SOAP11_NS, SOAP12_NS, SoapVersion};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
const ACTION: &str = "urn:lather:echo#echo";

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// The gSOAP echo binary, built once per test run.
fn gsoap_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let missing: Vec<&str> = [
            ("soapcpp2", on_path("soapcpp2")),
            (
                "/usr/include/stdsoap2.h",
                Path::new("/usr/include/stdsoap2.h").is_file(),
            ),
            (
                "cc",
                on_path(&std::env::var("CC").unwrap_or_else(|_| "cc".into())),
            ),
        ]
        .into_iter()
        .filter_map(|(what, there)| (!there).then_some(what))
        .collect();
        assert!(
            missing.is_empty(),
            "the gSOAP peer cannot be built: missing {missing:?}. Install gSOAP and a C \
             compiler (Debian: apt-get install -y gsoap libgsoap-dev gcc) — .ci/run does."
        );
        let output = Command::new("bash")
            .arg(format!("{REPO}/bench/gsoap/build.sh"))
            .env("TARGET_DIR", env!("CARGO_TARGET_TMPDIR"))
            .stdin(Stdio::null())
            .output()
            .expect("run bench/gsoap/build.sh");
        assert!(
            output.status.success(),
            "bench/gsoap/build.sh failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "build.sh printed no binary: {}",
            path.display()
        );
        path
    })
}

/// A running gSOAP echo server; killed (by its own handle) when dropped.
struct Gsoap {
    child: Child,
    addr: SocketAddr,
}

impl Gsoap {
    fn start() -> Gsoap {
        let binary = gsoap_binary();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(binary)
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the gSOAP echo server");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut gsoap = Gsoap { child, addr };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(addr).is_err() {
            if let Ok(Some(status)) = gsoap.child.try_wait() {
                panic!("the gSOAP echo server exited: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "gSOAP did not listen on {addr} within 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        gsoap
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for Gsoap {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `result` text of gSOAP's `echoResponse`.
fn result_text(answer: &lather_envelope::Envelope) -> String {
    assert_eq!(
        answer.operation(),
        Some(&QName::new("urn:lather:echo", "echoResponse"))
    );
    let payload = answer.extract_payload().expect("a payload");
    let element = Element::parse(&payload, &Limits::default()).unwrap();
    element
        .child(&QName::new("", "result"))
        .expect("result")
        .text()
}

#[tokio::test]
async fn calls_gsoap_in_both_versions_with_and_without_addressing() {
    let gsoap = Gsoap::start();
    let client = Client::new();
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let call = Call::new(support::ECHO_PAYLOAD)
            .version(version)
            .action(ACTION);
        let answer = client.call(&gsoap.url(), &call).await.unwrap();
        assert_eq!(answer.version(), version);
        assert_eq!(result_text(&answer), "hello & bye");
        // Addressing headers are not mustUnderstand: a peer without WS-Addressing ignores them.
        let answer = client
            .call(&gsoap.url(), &call.clone().addressing(Wsa::V10))
            .await
            .unwrap();
        assert_eq!(result_text(&answer), "hello & bye");
        assert_eq!(Wsa::V10.relates_to(&answer), None);
    }
}

#[tokio::test]
async fn gsoaps_faults_arrive_typed_in_both_versions() {
    let gsoap = Gsoap::start();
    let client = Client::new();
    for (version, status, code) in [
        (SoapVersion::V11, 500, QName::new(SOAP11_NS, "Client")),
        (SoapVersion::V12, 400, QName::new(SOAP12_NS, "Sender")),
    ] {
        let call = Call::new(r#"<ns:nope xmlns:ns="urn:lather:echo"/>"#).version(version);
        let err = client.call(&gsoap.url(), &call).await.unwrap_err();
        let ClientError::Fault { status: got, fault } = &err else {
            panic!("{version:?}: {err:?}")
        };
        assert_eq!(*got, status, "{err}");
        assert_eq!(fault.version(), version);
        assert_eq!(fault.code(), &code);
        assert!(fault.reason().contains("ns:nope"), "{err}");
        assert_eq!(fault.lather_fault_name(), None);
    }
}
