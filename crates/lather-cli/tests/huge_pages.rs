//! `lather serve` runs without transparent huge pages, whatever the host's setting: the
//! kernel reports the process's `THP_enabled` as 0 in `/proc/PID/status`.

use crate::serving;

use lather_test_util::ScratchDir;
use serving::{Running, free_port, lather, wait_healthy};

/// The `THP_enabled` field of a process's status, if the kernel reports it.
fn thp_enabled(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("THP_enabled:"))
        .map(|v| v.trim().to_owned())
}

#[test]
fn a_serving_process_refuses_transparent_huge_pages() {
    let own = thp_enabled(std::process::id())
        .expect("this kernel does not report THP_enabled in /proc/PID/status");
    assert_eq!(own, "1", "the test process itself should still allow them");
    let port = free_port();
    let dir = ScratchDir::new("huge-pages");
    let config = dir.write(
        "serve.toml",
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n"
        ),
    );
    let child = lather()
        .args([
            "serve",
            "--config",
            config.to_str().unwrap(),
            "--log-level",
            "warn",
        ])
        .spawn()
        .unwrap();
    let mut running = Running(child);
    wait_healthy(port, &mut running.0);
    assert_eq!(thp_enabled(running.0.id()).as_deref(), Some("0"));
}
