//! The `lather-bench` binary as a user runs it: its help names each experiment by what it
//! measures, a bad argument is refused with exit code 2, and the bare echo server answers.

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lather-bench"))
        .args(args)
        .output()
        .expect("run lather-bench")
}

#[test]
fn help_lists_the_experiments_by_descriptive_names() {
    let out = run(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for word in [
        "http",
        "abuse",
        "stage-layouts",
        "resource-notify",
        "rate-knee",
        "digest-bound",
        "eventing",
        "remote-call",
        "--log-level",
    ] {
        assert!(help.contains(word), "{help}");
    }
    for word in ["figure", "Figure", "table1", "Table 1", "seed"] {
        assert!(!help.contains(word), "{help}");
    }
}

#[test]
fn each_experiment_has_help_without_research_names() {
    for experiment in [
        "stage-layouts",
        "resource-notify",
        "rate-knee",
        "eventing",
        "remote-call",
    ] {
        let out = run(&[experiment, "--help"]);
        assert!(out.status.success(), "{experiment}");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains("--out"), "{experiment}: {help}");
        for word in ["figure", "Figure", "table1", "Table 1", "seed"] {
            assert!(!help.contains(word), "{experiment}: {help}");
        }
    }
}

#[test]
fn a_bad_rate_is_refused() {
    let out = run(&[
        "rate-knee",
        "--rates",
        "0",
        "--out",
        "/nonexistent-lather-dir",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// Kills the child when dropped (a test that fails midway leaves no server behind).
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn bare_echo_answers_each_request_with_its_body() {
    use std::io::{BufRead, Read, Write};
    // Port 0 and the address read back: no port picked here that another process could
    // take before the server binds it.
    let mut child = Command::new(env!("CARGO_BIN_EXE_lather-bench"))
        .args(["bare-echo", "--listen", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start bare-echo");
    let stdout = child.stdout.take().expect("bare-echo's stdout");
    let _server = Child(child);
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("bare-echo's first line");
    let listen = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("bare-echo printed {line:?}"))
        .to_owned();
    let mut stream = std::net::TcpStream::connect(&listen).expect("connect to bare-echo");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let body = "<m:Ping xmlns:m=\"urn:m\"/>";
    write!(
        stream,
        "POST /any HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with(body), "{answer}");
}

#[test]
fn bare_echo_names_an_address_it_cannot_listen_on() {
    let out = run(&["bare-echo", "--listen", "not-an-address"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not-an-address"), "{err}");
}
