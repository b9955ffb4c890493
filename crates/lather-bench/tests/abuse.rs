//! The CI form of `lather-bench abuse`: a lather server for `bench/abuse.toml` on a free
//! port (in this test's process, so `--server-pid` is the test's own PID), then
//! `lather-bench abuse --quick` against it. Correctness only: every case's expectation (a
//! SOAP Fault, a status, the probe answered, the admission gauges back to 0), no timing or
//! RSS threshold — those are for the full run (bench/abuse.sh, with `lather serve`).

use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Bound on the whole quick run (the cases bound themselves well below it).
const RUN_WITHIN: Duration = Duration::from_secs(900);

/// A child process killed (by its own handle) when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `bench/abuse.toml` with its listen line on port 0 and its users file made absolute.
fn config() -> lather_config::Config {
    let root = repo_root();
    let text = std::fs::read_to_string(root.join("bench/abuse.toml")).unwrap();
    let mut listen = 0;
    let mut users = 0;
    let text: String = text
        .lines()
        .map(|line| {
            if line.starts_with("listen = ") {
                listen += 1;
                "listen = \"127.0.0.1:0\"\n".to_owned()
            } else if let Some(relative) = line.strip_prefix("users_file = \"") {
                users += 1;
                let relative = relative.trim_end_matches('"');
                format!("users_file = \"{}\"\n", root.join(relative).display())
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    assert_eq!(listen, 1, "bench/abuse.toml has one listen line");
    assert_eq!(users, 1, "bench/abuse.toml has one users file");
    lather_config::Config::from_toml(&text, "bench/abuse.toml").expect("valid abuse.toml")
}

/// The server of `bench/abuse.toml`, on a runtime and thread of its own; stopped and
/// joined when dropped.
struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start() -> Server {
        let config = config();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let server = runtime
            .block_on(lather_http::Server::bind(&config))
            .expect("bind the abuse server");
        let addr = server.local_addr();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let _ = runtime.block_on(server.serve(async {
                let _ = stopped.await;
            }));
        });
        Server {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Runs `lather-bench abuse` with `args`; returns its exit code, stdout and stderr.
fn bench_abuse(args: &[String]) -> (Option<i32>, String, String) {
    let mut child = Running(
        Command::new(env!("CARGO_BIN_EXE_lather-bench"))
            .arg("abuse")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start lather-bench abuse"),
    );
    let mut stdout = child.0.stdout.take().unwrap();
    let mut stderr = child.0.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + RUN_WITHIN;
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "lather-bench abuse did not end within {RUN_WITHIN:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    (status.code(), out.join().unwrap(), err.join().unwrap())
}

/// The table rows of the bench's output: (case, expectation met).
fn rows(stdout: &str) -> Vec<(String, bool)> {
    stdout
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| case"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].to_owned(), cells[2] == "yes")
        })
        .collect()
}

#[test]
fn the_quick_abuse_bench_meets_every_expectation() {
    let server = Server::start();
    let (code, stdout, stderr) = bench_abuse(&[
        "--quick".into(),
        "--target".into(),
        format!("http://{}", server.addr),
        "--server-pid".into(),
        std::process::id().to_string(),
    ]);
    eprintln!("{stderr}");
    println!("{stdout}");
    let rows = rows(&stdout);
    assert_eq!(rows.len(), 8, "one row per case a–h:\n{stdout}\n{stderr}");
    let missed: Vec<&str> = rows
        .iter()
        .filter(|(_, met)| !met)
        .map(|(case, _)| case.as_str())
        .collect();
    assert!(
        missed.is_empty(),
        "expectations not met: {missed:?}\n{stdout}\n{stderr}"
    );
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn a_target_off_loopback_is_refused() {
    let (code, _, stderr) = bench_abuse(&[
        "--quick".into(),
        "--target".into(),
        "http://192.0.2.1:80".into(),
        "--server-pid".into(),
        std::process::id().to_string(),
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("loopback"), "{stderr}");
}

#[test]
fn an_unknown_server_pid_is_refused() {
    let (code, _, stderr) = bench_abuse(&[
        "--target".into(),
        "http://127.0.0.1:9".into(),
        "--server-pid".into(),
        "4294967295".into(),
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("/proc/4294967295"), "{stderr}");
}
