//! DiffServ marking (WS-QoS traffic classes) seen by a client on another host: `lather
//! serve` runs in one network namespace, the client in a second, the two joined by a veth
//! pair, so answers cross a real (virtual) link and the rule by client address sees the
//! client's own address, not loopback's.
//!
//! ```text
//!   ns lather-qs-PID-N                          ns lather-qc-PID-N
//!   lather serve 10.203.0.1:8080                python3: client + AF_PACKET capture
//!   veth lqsPID_N 10.203.0.1/24  <──────────>  veth lqcPID_N 10.203.0.2/24
//! ```
//!
//! The server has one class, `gold` with DSCP 10 (AF11: TOS byte 0x28), given to requests
//! that state it in a `q:QoS` header and, by a `[[qos.client]]` rule, to this client's
//! address on `/ruled`; another rule gives it to a different network on `/elsewhere`. The
//! client side is a small Python program started with `ip netns exec` in the client
//! namespace: it waits for the server's `/health`, opens an `AF_PACKET` socket on its end
//! of the veth, and for each case sends one SOAP 1.2 echo on a fresh connection, reads the
//! answer and prints the TOS byte of every IPv4 TCP segment with data that came from the
//! server's port to that connection's port. The test asserts 0x28 for the marked answers
//! (stated class, address rule) and 0x00 for the unmarked ones (no header and no rule, a
//! rule for another address).
//!
//! Needs root (namespaces, veth, `CAP_NET_RAW`), `ip` (iproute2) and `python3`, as CI has:
//! without them the test fails saying what is missing. The namespaces (and with them the
//! veth pair) and every process started here are removed when the test ends, passes or
//! fails (drop guards); each step is bounded in time.

#[allow(
    unused_imports,
    reason = "the shared harness re-exports free_port; the server here listens in its own namespace"
)]
use crate::serving;

use lather_test_util::ScratchDir;
use serving::Running;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const SERVER_IP: &str = "10.203.0.1";
const CLIENT_IP: &str = "10.203.0.2";
const PORT: u16 = 8080;
/// The code point of class `gold`, and the TOS byte it gives (DSCP × 4).
const GOLD_DSCP: u8 = 10;
const GOLD_TOS: u8 = GOLD_DSCP << 2;

/// The client side, run inside the client namespace: argv is the interface, the server's
/// address and port, then one `PATH:CLASS` per case (`-`: no QoS header). Prints one line
/// `CASE PATH CLASS STATUS TOS,TOS,…` (TOS in hex, `-` when none was captured) per case,
/// or `ERROR …` and exits 2.
const CLIENT: &str = r#"
import socket, sys, time

iface, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])

def fail(msg):
    print("ERROR " + msg, flush=True)
    sys.exit(2)

# The server starts in the other namespace at the same time: wait for /health (20 s at most).
deadline = time.monotonic() + 20
while True:
    try:
        with socket.create_connection((host, port), timeout=2) as s:
            s.settimeout(2)
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            if s.recv(64).startswith(b"HTTP/1.1 200"):
                break
    except OSError:
        pass
    if time.monotonic() > deadline:
        fail("the server at %s:%d did not answer /health within 20 s" % (host, port))
    time.sleep(0.1)

try:
    cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    cap.bind((iface, 0))
except OSError as e:
    fail("cannot capture on %s with an AF_PACKET socket (needs CAP_NET_RAW): %s" % (iface, e))
cap.settimeout(0.2)
server = socket.inet_aton(host)

def captured(local_port):
    """TOS bytes of the IPv4 TCP segments with data from the server's port to local_port,
    read until the capture is quiet for 0.2 s (2 s at most)."""
    tos = []
    end = time.monotonic() + 2
    while time.monotonic() < end:
        try:
            frame = cap.recv(65536)
        except socket.timeout:
            break
        if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        total = int.from_bytes(ip[2:4], "big")
        if ip[9] != 6 or len(ip) < ihl + 20 or ip[12:16] != server:
            continue
        tcp = ip[ihl:]
        src = int.from_bytes(tcp[0:2], "big")
        dst = int.from_bytes(tcp[2:4], "big")
        data = total - ihl - (tcp[12] >> 4) * 4
        if src == port and dst == local_port and data > 0:
            tos.append(ip[1])
    return tos

captured(-1)  # whatever the health checks left
for case in sys.argv[4:]:
    path, cls = case.split(":", 1)
    header = "" if cls == "-" else (
        '<s:Header><q:QoS xmlns:q="urn:lather:qos"><q:TrafficClass>%s</q:TrafficClass></q:QoS></s:Header>' % cls)
    body = ('<?xml version="1.0" encoding="UTF-8"?>'
            '<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope">%s<s:Body>'
            '<ns:echo xmlns:ns="urn:lather:echo"><text>across the veth</text></ns:echo>'
            '</s:Body></s:Envelope>' % header).encode()
    head = ("POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/soap+xml; charset=utf-8\r\n"
            "Content-Length: %d\r\n\r\n" % (path, host, port, len(body))).encode()
    try:
        s = socket.create_connection((host, port), timeout=5)
        s.settimeout(5)
        local_port = s.getsockname()[1]
        s.sendall(head + body)
        got = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                fail("%s: the connection closed before the whole answer: %r" % (case, got))
            got += chunk
            end = got.find(b"\r\n\r\n")
            if end < 0:
                continue
            length = 0
            for line in got[:end].split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(got) >= end + 4 + length:
                break
    except OSError as e:
        fail("%s: %s" % (case, e))
    status = got.split(b" ", 2)[1].decode()
    tos = captured(local_port)
    s.close()
    print("CASE %s %s %s %s" % (path, cls, status, ",".join("%02x" % t for t in tos) or "-"), flush=True)
"#;

/// Runs `program args…` to completion; its stdout, or a panic naming the command and
/// what it printed.
fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "`{program} {}` failed ({}): {}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Fails, saying what is missing, unless the test runs as root with `ip` and `python3`.
fn require_root_ip_and_python() {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    // "Uid: real effective saved fs": the effective one decides.
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().nth(1))
        .unwrap_or("?")
        .to_owned();
    assert!(
        euid == "0",
        "this test creates network namespaces and captures packets: run it as root \
         (as CI does); effective uid is {euid}"
    );
    match Command::new("ip").arg("-V").output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!("`ip -V` failed ({}): is iproute2 installed?", out.status),
        Err(e) => panic!("`ip` (iproute2) not found ({e}): apt-get install -y iproute2"),
    }
    match Command::new("python3")
        .args(["-c", "import socket; socket.AF_PACKET"])
        .output()
    {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "python3 cannot open AF_PACKET sockets ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => {
            panic!("python3 not found ({e}): the client side of this test is a Python program")
        }
    }
}

/// A network namespace made here, deleted on drop after what still runs in it is killed
/// (the veth end inside goes with it, and its peer with that).
struct Netns(String);

impl Netns {
    fn add(name: String) -> Self {
        run("ip", &["netns", "add", &name]);
        Self(name)
    }

    /// `ip netns exec NAME program args…`, not yet spawned.
    fn exec(&self, program: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.0, program]).args(args);
        cmd
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Ok(out) = Command::new("ip").args(["netns", "pids", &self.0]).output() {
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                let _ = Command::new("kill").args(["-KILL", pid]).status();
            }
        }
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// Waits up to `limit` for `child` to exit, killing it if it does not; panics (with
/// `context`) if it ran out of time. Also panics, showing the server's log, if `server`
/// exits meanwhile.
fn wait_bounded(child: &mut Child, server: &mut Child, server_log: &Path, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        if let Some(status) = server.try_wait().unwrap() {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "lather serve exited ({status}) in the server namespace; its log:\n{}",
                std::fs::read_to_string(server_log).unwrap_or_default()
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the client in the client namespace did not finish within {limit:?}; the server's log:\n{}",
                std::fs::read_to_string(server_log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn answers_carry_their_class_code_point_across_a_veth_between_namespaces() {
    require_root_ip_and_python();
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let tag = format!(
        "{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    // Interface names have at most 15 bytes.
    let (server_if, client_if) = (
        format!("lqs{}", tag.replace('-', "_")),
        format!("lqc{}", tag.replace('-', "_")),
    );
    // Dropped last (declared first): after the client and the server are gone.
    let server_ns = Netns::add(format!("lather-qs-{tag}"));
    let client_ns = Netns::add(format!("lather-qc-{tag}"));
    // Both ends are made inside their namespaces: nothing appears in the host's.
    run(
        "ip",
        &[
            "link",
            "add",
            &server_if,
            "netns",
            &server_ns.0,
            "type",
            "veth",
            "peer",
            "name",
            &client_if,
            "netns",
            &client_ns.0,
        ],
    );
    for (ns, ifname, ip) in [
        (&server_ns, &server_if, SERVER_IP),
        (&client_ns, &client_if, CLIENT_IP),
    ] {
        run("ip", &["-n", &ns.0, "link", "set", "lo", "up"]);
        run(
            "ip",
            &[
                "-n",
                &ns.0,
                "addr",
                "add",
                &format!("{ip}/24"),
                "dev",
                ifname,
            ],
        );
        run("ip", &["-n", &ns.0, "link", "set", ifname, "up"]);
    }

    // Dropped after the server and the client, which are declared after it.
    let dir = ScratchDir::new("qos-netns");
    let config = dir.write(
        "server.toml",
        format!(
            "[server]\nlisten = \"{SERVER_IP}:{PORT}\"\n\
             [qos.class.gold]\ndscp = {GOLD_DSCP}\n\
             [[qos.client]]\naddress = \"{CLIENT_IP}/32\"\npath = \"/ruled\"\nclass = \"gold\"\n\
             [[qos.client]]\naddress = \"10.99.0.0/16\"\npath = \"/elsewhere\"\nclass = \"gold\"\n\
             [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n\
             [[service]]\nname = \"ruled\"\npath = \"/ruled\"\nbuiltin = \"echo\"\n\
             [[service]]\nname = \"elsewhere\"\npath = \"/elsewhere\"\nbuiltin = \"echo\"\n"
        ),
    );
    let server_log = config.with_file_name("server.log");
    let log_file = std::fs::File::create(&server_log).unwrap();
    // `ip netns exec` execs lather in place: the child is lather itself.
    let mut server = Running(
        server_ns
            .exec(
                env!("CARGO_BIN_EXE_lather"),
                &[
                    "--log-level",
                    "warn",
                    "serve",
                    "--config",
                    config.to_str().unwrap(),
                ],
            )
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .expect("ip netns exec … lather serve"),
    );

    // (path, stated class or "-", expected TOS byte of the answer)
    let cases = [
        ("/echo", "gold", GOLD_TOS), // the class the request states
        ("/echo", "-", 0),           // no header, no rule: unmarked
        ("/ruled", "-", GOLD_TOS),   // no header, the rule for the client's address
        ("/elsewhere", "-", 0),      // no header, a rule for another network only
    ];
    let port = PORT.to_string();
    let mut args = vec!["-c", CLIENT, client_if.as_str(), SERVER_IP, port.as_str()];
    let specs: Vec<String> = cases.iter().map(|(p, c, _)| format!("{p}:{c}")).collect();
    args.extend(specs.iter().map(String::as_str));
    let mut client = Running(
        client_ns
            .exec("python3", &args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ip netns exec … python3"),
    );
    wait_bounded(
        &mut client.0,
        &mut server.0,
        &server_log,
        Duration::from_secs(60),
    );
    let status = client.0.wait().unwrap();
    let (mut out, mut err) = (String::new(), String::new());
    client
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    client
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        status.success(),
        "the client in {} failed ({status}):\n{out}{err}\nthe server's log:\n{}",
        client_ns.0,
        std::fs::read_to_string(&server_log).unwrap_or_default()
    );

    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("CASE ")).collect();
    assert_eq!(
        lines.len(),
        cases.len(),
        "one line per case expected:\n{out}{err}"
    );
    for (line, (path, class, want)) in lines.iter().zip(cases) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields.len(), 5, "{line}");
        assert_eq!((fields[1], fields[2]), (path, class), "{line}");
        assert_eq!(
            fields[3], "200",
            "{path} with class {class}: not a 200: {line}"
        );
        assert_ne!(
            fields[4], "-",
            "{path} with class {class}: no answer segment captured on {client_if}"
        );
        let tos: Vec<u8> = fields[4]
            .split(',')
            .map(|t| u8::from_str_radix(t, 16).unwrap())
            .collect();
        assert!(
            tos.iter().all(|t| *t == want),
            "{path} with class {class}: answer segments carried TOS {tos:02x?}, expected {want:#04x} \
             (DSCP {})",
            want >> 2
        );
    }
}
