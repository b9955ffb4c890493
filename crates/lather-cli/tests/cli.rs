//! The `lather` binary as a user runs it: help, version, check, serve and its shutdown.

use crate::serving;

use lather_test_util::ScratchDir;
use serving::{free_port, lather, wait_healthy};

use std::net::TcpListener;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn run(args: &[&str]) -> Output {
    lather().args(args).output().expect("run lather")
}

#[test]
fn version_and_help() {
    let out = run(&["--version"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(env!("CARGO_PKG_VERSION")));
    let out = run(&["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for word in ["serve", "check", "worker", "subscribe", "--log-level"] {
        assert!(help.contains(word), "{help}");
    }
    // The benchmark experiments are the `lather-bench` binary: the server's help names none
    // of them; `lather bench` holds only the measuring a user points at an endpoint.
    for word in ["figure", "table1", "seed"] {
        assert!(!help.contains(word), "{help}");
    }
    bench_subcommand(&help);
}

/// With the `bench` feature, `lather bench` holds only `timing`.
#[cfg(feature = "bench")]
fn bench_subcommand(_help: &str) {
    let out = run(&["bench", "--help"]);
    let bench = String::from_utf8_lossy(&out.stdout);
    assert!(bench.contains("timing"), "{bench}");
    for word in ["stage-layouts", "rate-knee", "abuse", "eventing"] {
        assert!(!bench.contains(word), "{bench}");
    }
}

/// Without it (the default), the server binary has no `bench` subcommand at all.
#[cfg(not(feature = "bench"))]
fn bench_subcommand(help: &str) {
    assert!(
        !help.lines().any(|l| l.trim_start().starts_with("bench ")),
        "{help}"
    );
    let out = run(&["bench", "timing", "http://127.0.0.1:1/echo"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unrecognized subcommand 'bench'"),
        "{stderr}"
    );
}

#[test]
fn check_prints_the_services_of_the_quickstart() {
    let quickstart = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/quickstart.toml"
    );
    let out = run(&["check", "--config", quickstart]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("/echo") && stdout.contains("builtin echo"),
        "{stdout}"
    );
    assert!(
        stdout.contains("/gateway") && stdout.contains("gateway to http://127.0.0.1:8080/echo"),
        "{stdout}"
    );
    assert!(
        stdout.contains("answers gzip-compressed from 1024 bytes: always when the client requires it (QoS header), for server-decides and Accept-Encoding while lather's CPU is below 80%"),
        "{stdout}"
    );
}

#[test]
fn check_names_the_key_and_line_of_an_error() {
    let dir = ScratchDir::new("cli");
    let path = dir.write(
        "bad.toml",
        "[server]\nlisten = \"127.0.0.1:0\"\n\n[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\ntimeout = 5\n",
    );
    let out = run(&["check", "--config", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(78));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.toml:8:") && stderr.contains("timeout"),
        "{stderr}"
    );
    let out = run(&["check", "--config", "/nonexistent/lather.toml"]);
    assert_eq!(out.status.code(), Some(78));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read"));
}

fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "lather did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn serve_answers_and_exits_zero_on_sigterm_and_sigint() {
    for signal in ["-TERM", "-INT"] {
        let port = free_port();
        let dir = ScratchDir::new("cli");
        let path = dir.write(
            &format!("serve{signal}.toml"),
            format!(
                "[server]\nlisten = \"127.0.0.1:{port}\"\n[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n"
            ),
        );
        let mut child = lather()
            .args([
                "serve",
                "--config",
                path.to_str().unwrap(),
                "--log-level",
                "warn",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_healthy(port, &mut child);
        let status = Command::new("kill")
            .arg(signal)
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
        let exit = wait_exit(&mut child);
        assert_eq!(exit.code(), Some(0), "{signal}");
    }
}

#[test]
fn serve_reports_a_port_in_use() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = ScratchDir::new("cli");
    let path = dir.write(
        "taken.toml",
        format!("[server]\nlisten = \"127.0.0.1:{port}\"\n"),
    );
    let out = run(&["serve", "--config", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(69));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{stderr}"
    );
}

#[test]
fn check_prints_handlers_and_stages() {
    let dir = ScratchDir::new("cli");
    let path = dir.write(
        "stages.toml",
        "[handlers.log]\nkind = \"logging\"\noneway = true\n[handlers.burn]\nkind = \"cpu-burn\"\nmicros = 10\n[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\nrequest = [[\"log\", \"burn\"], [\"burn\"]]\n",
    );
    let out = run(&["check", "--config", path.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("log              logging, oneway"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  request stages:\n    1: log (oneway) ‖ burn\n    2: burn\n"),
        "{stdout}"
    );
}

#[test]
fn check_prints_an_automatic_plan() {
    let handlers = "[handlers.hash]\nkind = \"digest\"\nrounds = 1\n[handlers.squeeze]\nkind = \"compress\"\n[handlers.burn]\nkind = \"cpu-burn\"\nmicros = 1\n";
    let service = "[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\nrequest = { auto = [\"hash\", \"squeeze\", \"burn\"] }\n";
    // hash reads everything and squeeze writes the Body: they are ordered as listed; burn
    // touches nothing and joins the first stage.
    let dir = ScratchDir::new("cli");
    let path = dir.write("auto.toml", format!("{handlers}{service}"));
    let out = run(&["check", "--config", path.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("  request stages:\n    1: hash ‖ burn\n    2: squeeze\n"),
        "{stdout}"
    );
    // An explicit order moves burn behind squeeze.
    let handlers = handlers.replace("micros = 1\n", "micros = 1\nafter = [\"squeeze\"]\n");
    let path = dir.write("auto-after.toml", format!("{handlers}{service}"));
    let out = run(&["check", "--config", path.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("  request stages:\n    1: hash\n    2: squeeze\n    3: burn\n"),
        "{stdout}"
    );
}

#[test]
fn subscribe_names_an_unreachable_source_and_a_bad_url() {
    let url = format!("http://127.0.0.1:{}/events", free_port());
    let out = run(&[
        "subscribe",
        "--source",
        &url,
        "--count",
        "1",
        "--timeout-s",
        "2",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(69), "{stderr}");
    assert!(
        stderr.contains(&format!("event source {url} is unreachable")),
        "{stderr}"
    );
    let out = run(&["subscribe", "--source", "ftp://example.org/events"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{stderr}");
    assert!(
        stderr.contains("only http:// URLs are supported"),
        "{stderr}"
    );
    // 2004/08 has no delivery formats: asking it for Wrap is refused before anything is sent.
    let out = run(&["subscribe", "--source", &url, "--wrap"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{stderr}");
    assert!(stderr.contains("--wrap needs --version 2011"), "{stderr}");
}
