//! Running `lather` in production: exit codes by cause, every configuration problem at
//! once, `${ENV}` in the configuration, JSON log lines with the access log, and `/ready`.

use crate::serving;

use lather_test_util::ScratchDir;
use serving::{Running, free_port, http_get, lather, wait_healthy};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn run(args: &[&str]) -> Output {
    lather().args(args).output().expect("run lather")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const ECHO: &str = "[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n";

#[test]
fn exit_codes_tell_usage_configuration_and_unavailable_apart() {
    // 0: help and version.
    assert_eq!(run(&["--help"]).status.code(), Some(0));
    assert_eq!(run(&["--version"]).status.code(), Some(0));
    assert_eq!(run(&["check", "--help"]).status.code(), Some(0));
    // 64: the command line.
    for args in [
        &["--no-such-flag"][..],
        &["frobnicate"],
        &[],
        &["check"],
        &["--log-format", "xml", "check", "--config", "x.toml"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {}", stderr(&out));
    }
    let out = lather()
        .env("LATHER_LOG_FORMAT", "yaml")
        .args(["check", "--config", "x.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
    // 78: the configuration, or an environment override of it.
    let dir = ScratchDir::new("ops");
    let good = dir.write(
        "good.toml",
        format!("[server]\nlisten = \"127.0.0.1:0\"\n{ECHO}"),
    );
    let out = lather()
        .env("LATHER_CPU_THREADS", "many")
        .args(["serve", "--config", good.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(78), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("LATHER_CPU_THREADS=\"many\" is not a number of threads"),
        "{}",
        stderr(&out)
    );
    let out = run(&["worker", "--config", good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(78), "{}", stderr(&out));
    let syntax = dir.write("syntax.toml", "[server\nlisten = 1\n");
    let out = run(&["serve", "--config", syntax.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(78), "{}", stderr(&out));
    assert!(stderr(&out).contains("syntax.toml:1:"), "{}", stderr(&out));
    // 69: a dependency unavailable at start (here the listen address).
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = dir.write(
        "busy.toml",
        format!(
            "[server]\nlisten = \"{}\"\n{ECHO}",
            taken.local_addr().unwrap()
        ),
    );
    let out = run(&["serve", "--config", busy.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
}

#[test]
fn check_reports_every_problem_with_its_line() {
    let dir = ScratchDir::new("ops");
    let path = dir.write(
        "three.toml",
        "[server]\nlisten = \"127.0.0.1:0\"\n\n[[service]]\nname = \"a\"\npath = \"a\"\nbuiltin = \"echo\"\n\n[[service]]\nname = \"a\"\npath = \"/b\"\nbuiltin = \"echo\"\n\n[[service]]\nname = \"c\"\npath = \"/c\"\nbuiltin = \"echo\"\nrequest = [[\"missing\"]]\n",
    );
    let out = run(&["check", "--config", path.to_str().unwrap()]);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(78), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains("three.toml:6: service[0].path"),
        "{text}"
    );
    assert!(
        lines[1].contains("three.toml:10: service[1].name: name \"a\" is already used"),
        "{text}"
    );
    assert!(
        lines[2].contains("three.toml:18: service[2].request: no handler named \"missing\""),
        "{text}"
    );
}

#[test]
fn environment_variables_fill_the_configuration() {
    let dir = ScratchDir::new("ops");
    let path = dir.write(
        "env.toml",
        "[server]\nlisten = \"127.0.0.1:${LATHER_TEST_PORT}\"\nmax_in_flight = ${LATHER_TEST_UNSET:-7}\n[[service]]\nname = \"echo\"\npath = \"${LATHER_TEST_PATH}\"\nbuiltin = \"echo\"\n",
    );
    let out = lather()
        .env("LATHER_TEST_PORT", "18181")
        .env("LATHER_TEST_PATH", "/from-env")
        .env_remove("LATHER_TEST_UNSET")
        .args(["check", "--config", path.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout.contains("listen 127.0.0.1:18181"), "{stdout}");
    assert!(stdout.contains("/from-env"), "{stdout}");
    let out = lather()
        .env_remove("LATHER_TEST_PORT")
        .env("LATHER_TEST_PATH", "/x")
        .args(["check", "--config", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(78), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("env.toml:2: environment variable LATHER_TEST_PORT is not set"),
        "{}",
        stderr(&out)
    );
}

/// Posts a SOAP 1.2 echo with a `traceparent`; the status line.
fn post_echo(port: u16) -> String {
    let body = r#"<e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope"><e:Body><m:ping xmlns:m="urn:m"/></e:Body></e:Envelope>"#;
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/soap+xml\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.lines().next().unwrap_or_default().to_owned()
}

fn stop(child: &mut Child) -> String {
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "lather did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut log = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    log
}

#[test]
fn json_logs_carry_one_access_line_per_request_and_faults_by_kind() {
    let port = free_port();
    let dir = ScratchDir::new("ops");
    let path = dir.write(
        "json.toml",
        format!("[server]\nlisten = \"127.0.0.1:{port}\"\n{ECHO}"),
    );
    let child = lather()
        .args(["--log-format", "json", "serve", "--config"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Running(child);
    wait_healthy(port, &mut child.0);
    assert!(post_echo(port).starts_with("HTTP/1.1 200"));
    // A client fault: no service there.
    assert!(http_get(port, "/nowhere").is_some_and(|t| t.starts_with("HTTP/1.1 404")));
    let log = stop(&mut child.0);
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    for line in &lines {
        let ts = line["timestamp"].as_str().unwrap();
        // RFC 3339 in UTC: 2025-05-01T09:30:00.123456Z
        assert!(
            ts.len() >= 20 && &ts[10..11] == "T" && ts.ends_with('Z'),
            "{ts}"
        );
    }
    let access: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["target"] == "lather::access")
        .collect();
    // The /health polls of wait_healthy are not logged.
    assert_eq!(access.len(), 2, "{log}");
    let echo = access[0];
    assert_eq!(echo["level"], "INFO");
    assert_eq!(echo["service"], "echo");
    assert_eq!(echo["operation"], "ping");
    assert_eq!(echo["method"], "POST");
    assert_eq!(echo["path"], "/echo");
    assert_eq!(echo["status"], 200);
    assert!(echo.get("fault").is_none(), "{echo}");
    assert!(echo["bytes_in"].as_u64().unwrap() > 100, "{echo}");
    assert!(echo["bytes_out"].as_u64().unwrap() > 100, "{echo}");
    assert!(echo["duration_ms"].is_f64(), "{echo}");
    assert!(
        echo["client"].as_str().unwrap().starts_with("127.0.0.1:"),
        "{echo}"
    );
    assert_eq!(echo["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    let missing = access[1];
    assert_eq!(missing["status"], 404);
    assert_eq!(missing["fault"], "NoSuchService");
    assert_eq!(missing["operation"], "-");
    assert_eq!(missing["method"], "GET");
    assert!(missing.get("trace_id").is_none(), "{missing}");
    let faults: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["target"] == "lather::fault")
        .collect();
    assert_eq!(faults.len(), 1, "{log}");
    assert_eq!(faults[0]["level"], "INFO");
    assert_eq!(faults[0]["fault"], "NoSuchService");
    assert_eq!(faults[0]["message"], "client fault");
}

#[test]
fn access_log_off_and_text_format() {
    let port = free_port();
    let dir = ScratchDir::new("ops");
    let path = dir.write(
        "quiet.toml",
        format!("[server]\nlisten = \"127.0.0.1:{port}\"\naccess_log = false\n{ECHO}"),
    );
    let child = lather()
        .env("LATHER_LOG_FORMAT", "text")
        .args(["serve", "--config"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Running(child);
    wait_healthy(port, &mut child.0);
    assert!(post_echo(port).starts_with("HTTP/1.1 200"));
    let log = stop(&mut child.0);
    assert!(log.contains("lather listening on"), "{log}");
    assert!(!log.contains("lather::access"), "{log}");
    // Text lines start with an RFC 3339 UTC timestamp.
    let first = log.lines().next().unwrap();
    assert!(first.len() > 27 && first.as_bytes()[10] == b'T', "{first}");
    assert!(
        first.split_whitespace().next().unwrap().ends_with('Z'),
        "{first}"
    );
}
