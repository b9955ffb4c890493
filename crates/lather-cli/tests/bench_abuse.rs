//! The CI form of `lather bench abuse`: `lather serve --config bench/abuse.toml` on a
//! free port, then `lather bench abuse --quick` against it. Correctness only: every
//! case's expectation (a SOAP Fault, a status, the probe answered, the admission gauges
//! back to 0), no timing or RSS threshold — those are for the full run (bench/abuse.sh).

mod serving;

use serving::free_port;

use std::io::Read;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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

/// `bench/abuse.toml` with its listen line on `port`, in a file of this test's.
fn config_on(port: u16) -> PathBuf {
    let text = std::fs::read_to_string(repo_root().join("bench/abuse.toml")).unwrap();
    let mut replaced = 0;
    let text: String = text
        .lines()
        .map(|line| {
            if line.starts_with("listen = ") {
                replaced += 1;
                format!("listen = \"127.0.0.1:{port}\"\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    assert_eq!(replaced, 1, "bench/abuse.toml has one listen line");
    let dir = std::env::temp_dir().join(format!("lather-bench-abuse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("abuse-{port}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn serve(config: &Path, port: u16) -> Running {
    let child = Command::new(env!("CARGO_BIN_EXE_lather"))
        .args(["serve", "--config"])
        .arg(config)
        .current_dir(repo_root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start lather serve");
    let running = Running(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return running;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("lather serve did not listen on {port}");
}

/// Runs `lather bench abuse` with `args`; returns its exit code, stdout and stderr.
fn bench_abuse(args: &[String]) -> (Option<i32>, String, String) {
    let mut child = Running(
        Command::new(env!("CARGO_BIN_EXE_lather"))
            .args(["bench", "abuse"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start lather bench abuse"),
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
            "lather bench abuse did not end within {RUN_WITHIN:?}"
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
    let port = free_port();
    let config = config_on(port);
    let server = serve(&config, port);
    let (code, stdout, stderr) = bench_abuse(&[
        "--quick".into(),
        "--target".into(),
        format!("http://127.0.0.1:{port}"),
        "--server-pid".into(),
        server.0.id().to_string(),
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
